"""Chapter 4's exercise answers, each for its changed parameter value, on the main model: from
the streamed totals where they suffice (another attention threshold among the sensitivity
thresholds; head classes at another repeat bar), else by streaming the first few texts again
(another quantile q)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace

from ...core import streaming
from ...core.models import LoadedModel
from ...core.streaming import Captured
from ...studies.context_heads import class_counts
from ...studies.context_similarity import Measurement, measure, pair_metrics, texts_of
from ...studies.context_stats import ContextStats, Settings


def at_quantiles(batches: Sequence[Captured], settings: Settings, qs: Iterable[float]) -> dict[float, dict]:
    """The high pairs' metrics (:func:`~embedding_geometry.studies.context_similarity.pair_metrics`)
    of the same batches with each q of ``qs`` as the high-pair quantile."""
    chosen = {q: replace(settings, q=q, sensitivity_thresholds=(settings.attention_threshold,)) for q in qs}
    return {q: pair_metrics(measure(batches, s).stats) for q, s in chosen.items()}


def at_attention_threshold(m: dict, stats: ContextStats, t: float) -> dict:
    """``m`` with ``separator_attention`` (and its per-text values) at a_j ≥ t instead of τ, from
    the sensitivity check's counts; its separator_attention is None when t is not one of its
    thresholds."""
    thresholds = m["sensitivity"]["thresholds"]
    if t not in thresholds:
        return {**m, "separator_attention": None}
    rows, k = stats.text_rows(), thresholds.index(t)
    separators, attended = rows["sensitivity_attended_separators"][:, k], rows["sensitivity_attended"][:, k]
    return {**m, "separator_attention": separators.sum(axis=0) / attended.sum(axis=0),
            "per_unit": {**m["per_unit"], "separator_attention.separators": separators,
                         "separator_attention.attended": attended}}


def answers(loaded: LoadedModel, measured: Measurement, m: dict, params: Mapping) -> dict:
    """The chapter's exercise answers on the main model (``measured``, and ``m`` its metrics): the
    last block's separator share at τ = 0.1 (from the sensitivity counts; None unless 0.1 is a
    sensitivity threshold), the head classes with repeat_share_threshold 0.5 (from the totals),
    and, on the first min(8, n_texts) texts streamed again, the mean distance (first and last
    block) and the last block's same-sentence lift at the chapter's q and at 0.95."""
    settings = Settings.from_parameters(params)
    low = at_attention_threshold(m, measured.stats, 0.1)["separator_attention"]
    strict = class_counts(measured.stats, replace(settings, repeat_share_threshold=0.5))
    few = list(texts_of(loaded, {**params, "n_texts": min(8, params["n_texts"])}))
    at_q = at_quantiles(list(streaming.stream(loaded, few, params["batch_size"])), settings, (settings.q, 0.95))
    return {"exercises": {
        "attention_threshold_0.1": {"separator_attention_last": None if low is None else float(low[-1]),
                                    "separator_share": m["separator_share"]},
        "repeat_share_threshold_0.5": strict,
        "q_first_texts": {"texts": len(few), "q": settings.q, **{name: {
            "mean_pair_distance_first": float(mq["mean_pair_distance"][0]),
            "mean_pair_distance_last": float(mq["mean_pair_distance"][-1]),
            "same_sentence_lift_last":
                None if mq["same_sentence_lift"] is None else float(mq["same_sentence_lift"][-1])}
            for name, mq in (("at_q", at_q[settings.q]), ("at_0.95", at_q[0.95]))}},
        "texts": [w.text for w in few]}}
