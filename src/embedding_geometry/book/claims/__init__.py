"""Published claims and their verdicts: one package, one front door.

    ledger = claims.load("01_layer_by_layer")      # the claims as data (claims.ledger)
    m = claims.family_size()                       # the multiplicity family: every ledger's counted claims
    verdicts = claims.evaluate(ledger, metrics, model, family=m)  # each claim once through its stages
    claims.records(verdicts)                       # plain dicts for the results JSON

A claim passes through its stages once — ledger → statistic → test → adjustment → words — in the
modules named for them:

``ledger``       the claims as data, checked when read; the multiplicity family
``reduce``       how a metric becomes the number a claim is about, on relative depth; the
                 model-agnostic shape tests and the statistic each one tests
``samples``      a claim's statistic as a function of weighted per-unit values (means, ratios, pairs, seeds),
                 and its resampling: the bootstrap, the jackknife, BCa
``pvalues``      the test each design calls for (exact, or the bootstrap over the sampling unit), the shape
                 test and the null as p-values, the adjustment for the number of claims, power
``judge``        ``evaluate``: every stage, in order, for each claim; ``decide``: the adjustment
``words``        every word a verdict is shown with, defined once
"""

from .judge import Verdict, decide, evaluate, judge_claim, records
from .ledger import Claim, Ledger, LedgerError, family_size, load, lookup

__all__ = ["Claim", "Ledger", "LedgerError", "Verdict", "decide", "evaluate", "family_size", "judge_claim", "load",
           "lookup", "records"]
