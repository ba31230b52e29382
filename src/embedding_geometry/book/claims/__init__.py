"""Published claims and their verdicts: one package, one front door.

    ledger = claims.load("01_layer_by_layer")      # the claims as data (claims.ledger)
    m = claims.family_size()                       # the multiplicity family: every ledger's counted claims
    verdicts = claims.evaluate(ledger, metrics, model, family=m)  # each claim once through its stages
    claims.records(verdicts)                       # plain dicts for the results JSON

A claim passes through its stages once, each in the module named for it: ``ledger`` (the claims
as data, checked when read; the multiplicity family) → ``reduce`` and ``samples`` (the statistic:
a metric on relative depth, the shape tests; weighted per-unit values and their resampling) →
``pvalues`` (the test each design calls for, the adjustment for the number of claims, power) →
``judge`` (``evaluate``: every stage for each claim; ``decide``: the adjustment) → ``words`` (every
word a verdict is shown with, defined once).
"""

from .judge import Verdict, decide, evaluate, judge_claim, records
from .ledger import Claim, Ledger, LedgerError, family_size, load, lookup

__all__ = ["Claim", "Ledger", "LedgerError", "Verdict", "decide", "evaluate", "family_size", "judge_claim", "load",
           "lookup", "records"]
