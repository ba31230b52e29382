"""How many texts chapter 4's head pass reads, and why: each model's pass timed
(``context_similarity.Measurement.seconds``), projected to the 1,000 texts the book aims for, and
set against the chapter's share of the book's time budget.

With n texts read by every model and s_m the seconds of model m's pass (forward passes and
statistics), the cost of a text is c = Σ_m s_m / n, every model together (the pass's time grows
linearly with its texts: every text is T tokens, in batches of the same size). The chapter's
share of the budget, S = :data:`BUDGET_SHARE` × ``clock.BUILD_BUDGET_S``, affords ⌊S / c⌋ texts,
and 1,000 texts take 1,000 · c.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ...core import clock

if TYPE_CHECKING:
    import pandas as pd

    from ...studies.context_similarity import Measurement

PROJECTED_TEXTS = 1_000
"""The number of texts each model's pass is projected to (issue 30's target)."""
BUDGET_SHARE = 0.1
"""Chapter 4's share of the book's time budget (``clock.BUILD_BUDGET_S``), for every model's pass
together: the head pass is the chapter's cost, and nine other chapters and the site share the rest."""


def pass_table(runs: Mapping[str, Measurement]) -> pd.DataFrame:
    """One row per model (id → its :class:`Measurement`): its blocks and heads, texts, whole
    sentences per text, the pass's seconds, and those seconds projected to :data:`PROJECTED_TEXTS`
    texts at the same throughput."""
    import pandas as pd

    rows = [{"model": name.rsplit("/", 1)[-1], "blocks L": r.stats.shape[0], "heads H": r.stats.shape[1],
             "texts": r.texts.count, "whole sentences per text": r.texts.to_dict()["whole_sentences_per_text"],
             "seconds": r.seconds,
             f"seconds for {PROJECTED_TEXTS:,} texts": r.seconds / r.texts.count * PROJECTED_TEXTS}
            for name, r in runs.items()]
    return pd.DataFrame(rows).set_index("model")


def text_budget(runs: Mapping[str, Measurement], budget_s: float | None = None) -> dict[str, Any]:
    """The module docstring's numbers from the timed passes (id → :class:`Measurement`):
    ``n_texts`` (the fewest any model read), ``seconds`` (Σ_m s_m), ``seconds_per_text`` c
    (Σ_m s_m / n_m), ``projected_seconds`` (1,000 · c), ``share_seconds`` S (of ``budget_s``,
    default ``clock.BUILD_BUDGET_S``), ``affordable_texts`` ⌊S / c⌋ and ``within`` (n ≤ ⌊S / c⌋)."""
    budget_s = clock.BUILD_BUDGET_S if budget_s is None else budget_s
    per_text = sum(r.seconds / r.texts.count for r in runs.values())
    share = BUDGET_SHARE * budget_s
    n = min(r.texts.count for r in runs.values())
    affordable = int(share // per_text) if per_text > 0 else None
    return {"models": len(runs), "n_texts": n, "seconds": sum(r.seconds for r in runs.values()),
            "seconds_per_text": per_text, "projected_texts": PROJECTED_TEXTS,
            "projected_seconds": per_text * PROJECTED_TEXTS, "budget_seconds": budget_s, "share_seconds": share,
            "affordable_texts": affordable, "within": affordable is None or n <= affordable}


def sentence(found: Mapping[str, Any]) -> str:
    """:func:`text_budget` in words: what the pass cost, what 1,000 texts would cost, and what
    the chapter's share of the budget affords against the texts read."""
    n, share, affordable = found["n_texts"], found["share_seconds"], found["affordable_texts"]
    every = "every model together" if found["models"] > 1 else "one model"
    cost = (f"This build read {n:,} texts of each model in {found['seconds']:.0f} s, "
            f"{found['seconds_per_text']:.2f} s a text for {every}; {found['projected_texts']:,} texts would take "
            f"{found['projected_seconds']:.0f} s.")
    if affordable is None:
        return cost + " The pass took no measurable time, so no number of texts is ruled out by the budget."
    verdict = ("within it" if found["within"] else "more than it affords: the chapter runs over its share")
    reach = (f"so the book's {found['projected_texts']:,} fit" if affordable >= found["projected_texts"]
             else f"fewer than the book's {found['projected_texts']:,}")
    return (cost + f" The chapter's share of the book's {found['budget_seconds'] / 60:.0f}-minute budget is "
            f"{share:.0f} s ({BUDGET_SHARE:.0%}), which affords about {affordable:,} texts at that rate, {reach}; "
            f"the {n:,} read here are {verdict}.")
