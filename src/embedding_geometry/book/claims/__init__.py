"""Published claims and their verdicts: one package, one front door.

    ledger = claims.load("01_layer_by_layer")            # the claims as data (claims.ledger)
    verdicts = claims.evaluate(ledger, metrics, model)    # each claim once through its stages
    claims.records(verdicts)                              # plain dicts for the results JSON

A claim passes through its stages once — ledger → reduce → resample → test → words — in the
modules named for them:

``ledger``       the claims as data, checked when read; the multiplicity family
``reduce``       how a metric becomes the number a claim is about, on relative depth
``samples``      a claim's statistic as a function of weighted per-unit values (means, ratios, pairs, seeds)
``resample``     bootstrap resamples over the sampling unit, and the interval that fits the statistic and n
``shape_tests``  the model-agnostic tests, how an interval is judged by one, and margins
``nulls``        a null as a distribution: the difference statistic − null and its intervals
``judge``        ``evaluate``: every stage, in order, for each claim
``words``        every word a verdict is shown with, defined once
"""

from .judge import Verdict, evaluate, records
from .ledger import Claim, Ledger, LedgerError, family_size, load, lookup

__all__ = ["Claim", "Ledger", "LedgerError", "Verdict", "evaluate", "family_size", "load", "lookup", "records"]
