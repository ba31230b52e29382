"""The per-depth statistics of chapters 1–4 as mergeable accumulators (:mod:`.accumulators`):
``update(acts, units)`` a batch at a time, ``merge(other)`` a shard, ``result()`` the metrics under
the keys and with the values of the chapters' study functions on the same texts.

**Text statistics** (:class:`TextStatistics`, units are single texts: chapters 1 and 3). For text
s with word-token states h_i (i = 1..n_s), û = h / ‖h‖, its all-token mean pool m_s and its
[CLS] state c⁰_s, per depth:

====================================  ================================================================
σ_s = Σ_i û_i,  ū_s = σ_s / n_s       within_s = (‖σ_s‖² − n_s) / (n_s (n_s − 1)), the mean cosine
                                      of two of its tokens; the cross-sentence baseline is the mean of
                                      ū_s · ū_t over s ≠ t = (‖Σ_s ū_s‖² − Σ_s ‖ū_s‖²) / (N (N − 1))
c_s = mean_i h_i                      separability B / W: B = Σ‖c_s‖² / N − ‖Σ c_s / N‖²,
                                      W = mean_s W_s, W_s = mean_i ‖h_i − c_s‖²
p_s = m_s / ‖m_s‖                     anisotropy (‖Σ_s p_s‖² − N) / (N (N − 1)); token-level
                                      anisotropy (‖Σ_s σ_s‖² − Σ_s ‖σ_s‖²) / ((Σ n_s)² − Σ n_s²)
Σ_s |m_s(l) − m_s(l − 1)|  [L, D]     each dimension's block of largest write (its argmax over l), and
                                      the share of dimensions whose block is in the last 2/24
Moments of m_s(0), m_s(L)  [D]        Pearson r of each dimension between depth 0 and depth L
rows                                  within_s, cos(c⁰_s, c_s), |cos(PC1 of s's centred tokens, c_s)|,
                                      mean_i ‖h_i‖ and its largest ÷ smallest over depths, the mean
                                      cosine of two tokens' updates h_i(l) − h_i(l − 1), |cos(m_s(0),
                                      m_s(L))| and W_s
====================================  ================================================================

**Tuple statistics** (:class:`TupleStatistics`, units are tuples of texts: a document and its
negation and role reversal, or two unrelated sentences: chapters 1 and 2): per unit, the
mean-pool cosine and the [CLS] cosine of its first text with each other, and the mean MaxSim of
the first text's word tokens against the second's (all, shared, discriminative tokens).

**Head statistics** (:class:`HeadStatistics`, units are T-token windows: chapter 4) are chapter
4's :class:`~embedding_geometry.studies.context_stats.ContextStats`, which add already.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..core import geometry
from ..core.activations import Activations
from ..core.relative_depth import in_tail
from ..core.text_sources import TextSource
from .accumulators import SAMPLE_SIZE, Accumulator, Metrics, Moments, Rows, Sample, Sums
from .context_stats import Settings
from .context_similarity import metrics
from .context_batch import TextBatch, batch_statistics
from .pool_dimensions import TAIL
from .similarity_attractor import maxsim_rows


# --------------------------------------------------------------------------- texts (chapters 1 and 3)

def text_rows(words: np.ndarray, pool: np.ndarray, cls: np.ndarray | None) -> dict[str, np.ndarray]:
    """One text's per-unit values (module docstring), from its word-token states ``words``
    [L + 1, n, D], its all-token mean pool ``pool`` [L + 1, D] and its [CLS] states [L + 1, D]
    (None without one). n < 2 word tokens: ValueError. Each row is computed by the function that
    computes it in memory (``core.geometry``, ``studies.layer_by_layer``)."""
    h = np.asarray(words, np.float64)
    n = h.shape[1]
    within = geometry.within_cosine(h)  # first: n < 2 tokens raises here
    norms, pool = geometry.token_norms(h).mean(axis=1), np.asarray(pool, np.float64)
    rows = {"within": within, "norm": norms, "norm_range": norms.max() / norms.min(),
            "coherence": geometry.within_cosine(np.diff(h, axis=0)), "within_scatter": geometry.within_scatter(h),
            "pc1": geometry.pc1_alignment(h), "first_last": abs(geometry.cosine(pool[0], pool[-1]))}
    summed, centroid = geometry.unit_rows(h, "word-token states").sum(axis=1), h.mean(axis=1)
    if cls is not None:
        rows["cls"] = geometry.pair_cosine(np.asarray(cls, np.float64), centroid)
    payload = {"mean_unit": summed / n, "unit_sum": summed, "centroid": centroid, "n": float(n),
               "pool_unit": geometry.unit_rows(pool, "a mean pool"), "pool": pool}
    return {**rows, **payload}


PAYLOAD = ("mean_unit", "unit_sum", "centroid", "n", "pool_unit", "pool")
"""What :func:`text_rows` gives beyond the per-unit rows: vectors the sums and the sample keep."""
SAMPLED = ("mean_unit", "unit_sum", "centroid", "n", "pool_unit", "first", "last", "within", "within_scatter")
"""What the sample keeps of each of its texts."""


@dataclass
class TextStatistics(Accumulator):
    """Chapters 1 and 3's per-depth statistics of a set of single texts (module docstring)."""

    sample_size: int = SAMPLE_SIZE
    seed: int = 0
    rows: Rows = field(default_factory=Rows)
    sums: Sums = field(default_factory=Sums)
    moments: Moments = field(default_factory=Moments)
    sample: Sample | None = None

    def __post_init__(self) -> None:
        self.sample = self.sample or Sample(self.sample_size, self.seed)

    def update(self, acts: Activations, units: Sequence[int]) -> None:
        units = np.asarray(units, np.int64)
        if len(units) != acts.n_texts:
            raise ValueError(f"{len(units)} unit indices for {acts.n_texts} texts")
        pools = acts.mean_pool("all")
        cls = acts.cls() if acts.has_cls else None
        found = [text_rows(stack, pools[:, i], None if cls is None else cls[:, i])
                 for i, stack in enumerate(acts.word_states())]
        stacked = {name: np.stack([f[name] for f in found]) for name in found[0]}
        self._add(units, stacked)

    def _add(self, units: np.ndarray, s: dict[str, np.ndarray]) -> None:
        self.rows.add(units, **{k: v for k, v in s.items() if k not in PAYLOAD})
        self.sums.add(mean_unit=s["mean_unit"].sum(0), mean_unit_sq=(s["mean_unit"] ** 2).sum((0, -1)),
                      centroid=s["centroid"].sum(0), centroid_sq=(s["centroid"] ** 2).sum((0, -1)),
                      unit_sum=s["unit_sum"].sum(0), unit_sum_sq=(s["unit_sum"] ** 2).sum((0, -1)),
                      tokens=s["n"].sum(), tokens_sq=(s["n"] ** 2).sum(), pool_unit=s["pool_unit"].sum(0),
                      writes=np.abs(np.diff(s["pool"], axis=1)).sum(0), count=float(len(units)))
        first, last = s["pool"][:, 0], s["pool"][:, -1]
        self.moments.merge(Moments.of(first, last))
        kept = {k: s[k] for k in SAMPLED if k in s and k not in ("first", "last")}
        self.sample.add(units, first=first, last=last, **kept)

    def merge(self, other: TextStatistics) -> TextStatistics:
        self.rows.merge(other.rows)
        self.sums.merge(other.sums)
        self.moments.merge(other.moments)
        self.sample.merge(other.sample)
        return self

    def result(self) -> Metrics:
        """The metrics (:func:`text_metrics`) of every text seen."""
        return text_metrics(self.rows, self.sums, self.moments, self.sample)


def text_metrics(rows: Rows, sums: Sums, moments: Moments, sample: Sample, threshold: float = 0.7) -> Metrics:
    """Chapter 1's and chapter 3's metrics (the keys of ``studies.layer_by_layer`` and
    ``studies.anisotropy``) from a :class:`TextStatistics`' parts; ``per_unit`` holds the rows of
    every text and, under ``sampled.``, the kernels of the sample (:func:`sample_metrics`)."""
    units, r = rows.arrays()
    n = float(sums["count"])
    within = r["within"].mean(0)
    baseline = geometry.mean_pair_dot(sums["mean_unit"], n, sums["mean_unit_sq"])
    centre = sums["centroid"] / n
    between = sums["centroid_sq"] / n - (centre ** 2).sum(-1)
    tokens = sums["tokens"] ** 2 - sums["tokens_sq"]
    token_anisotropy = ((sums["unit_sum"] ** 2).sum(-1) - sums["unit_sum_sq"]) / tokens
    anisotropy = geometry.mean_pair_dot(sums["pool_unit"], n)
    peaks = np.argmax(sums["writes"], axis=0) + 1
    layers = sums["writes"].shape[0]
    hist = geometry.depth_histogram(peaks, layers)
    r_dims = moments.correlation()
    metrics = {
        "n_units": int(n), "intra_sentence_cosine": within, "cross_sentence_baseline": baseline,
        "collapse_gap": within - baseline, "separability_ratio": between / r["within_scatter"].mean(0),
        "cls_mean_alignment": r["cls"].mean(0) if "cls" in r else None, "pc1_mean_alignment": r["pc1"].mean(0),
        "token_norm": r["norm"].mean(0), "token_norm_range": float(r["norm_range"].mean()),
        "update_coherence": r["coherence"].mean(0), "meanpool_first_last_abs": float(r["first_last"].mean()),
        "peak_write_depth": peaks, "peak_write_hist": hist, "peak_write_share": hist / len(peaks),
        "peak_write_uniform": np.full(layers, 1 / layers),
        "peak_write_last_two": hist[in_tail(TAIL, layers, "blocks")].sum() / len(peaks),
        "dim_corr_first_last": {"r": r_dims, **geometry.correlation_summary(r_dims, threshold)},
        "anisotropy": anisotropy, "anisotropy_rise": anisotropy - anisotropy[0],
        "anisotropy_peak_depth": int(np.argmax(anisotropy)),
        "token_anisotropy": token_anisotropy, "anisotropy_gap": anisotropy - token_anisotropy,
        "pooling_share": (anisotropy - token_anisotropy) / anisotropy,
    }
    per_unit = {key: r[name] for key, name in UNIT_ROWS.items() if name in r}
    found = sample_metrics(*sample.arrays(), of=int(n), seed=sample.seed)
    return {**metrics, "sampled": found.pop("sampled"), "per_unit": {**per_unit, **found["per_unit"]}}


UNIT_ROWS = {"intra_sentence_cosine": "within", "cls_mean_alignment": "cls", "pc1_mean_alignment": "pc1",
             "token_norm": "norm", "token_norm_range": "norm_range", "update_coherence": "coherence",
             "meanpool_first_last_abs": "first_last", "separability_ratio.within": "within_scatter"}
"""Each metric whose per-unit values are rows of every text, and the row's name."""


def sample_metrics(units: np.ndarray, s: Mapping[str, np.ndarray], of: int, seed: int) -> Metrics:
    """The pairwise statistics on the K sampled texts, and their kernels [K, K, L + 1] (U-statistics:
    the mean over pairs s ≠ t): ū_s · ū_t (the baseline), (K − 1)/K · ‖c_s − c_t‖² / 2 (B, whose
    U-statistic is mean_s ‖c_s − C‖²), p_s · p_t (anisotropy), σ_s · σ_t and n_s n_t (token-level
    anisotropy, a ratio of two kernels); with the sample's rows of within_s and W_s, and the
    correlation moments x = m_s(0), y = m_s(L) [K, D]."""
    k = len(units)
    baseline, anisotropy, token_pairs = (geometry.pair_kernel(s[key]) for key in ("mean_unit", "pool_unit", "unit_sum"))
    between = geometry.between_kernel(s["centroid"])
    token_counts = np.outer(s["n"], s["n"])[:, :, None]
    token_counts[np.arange(k), np.arange(k)] = 0
    a, b = geometry.pair_mean(anisotropy), geometry.pair_mean(token_pairs) / geometry.pair_mean(token_counts)
    x, y = s["first"], s["last"]
    r = Moments.of(x, y).correlation()
    within, base = s["within"].mean(0), geometry.pair_mean(baseline)
    sampled = {"n_units": k, "of": of, "seed": seed, "units": units, "intra_sentence_cosine": within,
               "cross_sentence_baseline": base, "collapse_gap": within - base,
               "separability_ratio": geometry.pair_mean(between) / s["within_scatter"].mean(0),
               "anisotropy": a, "anisotropy_rise": a - a[0], "anisotropy_gap": a - b, "pooling_share": (a - b) / a,
               "dim_corr_first_last": {"mean": float(r.mean())}}
    kernels = {"cross_sentence_baseline.pairs": baseline, "separability_ratio.between_pairs": between,
               "anisotropy.pairs": anisotropy, "anisotropy_rise.pairs": anisotropy - anisotropy[:, :, :1],
               "token_anisotropy.pairs": token_pairs, "token_anisotropy.counts": token_counts,
               "intra_sentence_cosine": s["within"], "separability_ratio.within": s["within_scatter"],
               **{f"dim_corr_first_last.{name}": value for name, value in
                  {"x": x, "y": y, "xx": x * x, "yy": y * y, "xy": x * y}.items()}}
    for name in ("anisotropy_rise.pairs",):
        kernels[name][np.arange(k), np.arange(k)] = 0.0
    return {"sampled": sampled, "per_unit": {f"sampled.{key}": value for key, value in kernels.items()}}


# --------------------------------------------------------------------------- tuples of texts (chapters 1 and 2)

@dataclass
class TupleStatistics(Accumulator):
    """Per unit of ``len(names) + 1`` texts (its first text, then one per name): the mean-pool
    and [CLS] cosines of the first text with each other text, per depth; with ``maxsim``, the
    mean MaxSim of the first text's word tokens against the second's: all of them, those the
    second text also has (shared) and those it lacks (discriminative) (module docstring)."""

    names: tuple[str, ...] = ("other",)
    maxsim: bool = False
    rows: Rows = field(default_factory=Rows)

    @property
    def arity(self) -> int:
        return len(self.names) + 1

    def update(self, acts: Activations, units: Sequence[int]) -> None:
        units = np.asarray(units, np.int64)
        if acts.n_texts != self.arity * len(units):
            raise ValueError(f"{len(units)} units of {self.arity} texts need {self.arity * len(units)} texts; "
                             f"got {acts.n_texts}")
        pools, k = acts.mean_pool("all"), self.arity
        found = {name: geometry.pair_cosine(pools[:, 0::k], pools[:, j::k]).T for j, name in enumerate(self.names, 1)}
        if acts.has_cls:
            cls = acts.cls()
            found |= {f"cls.{name}": geometry.pair_cosine(cls[:, 0::k], cls[:, j::k]).T
                      for j, name in enumerate(self.names, 1)}
        if self.maxsim:
            found |= maxsim_rows(acts, k)
        self.rows.add(units, **found)

    def merge(self, other: TupleStatistics) -> TupleStatistics:
        self.rows.merge(other.rows)
        return self

    def result(self) -> Metrics:
        """{name: [L + 1]} means over units, ``n_units``, and ``per_unit`` {name: [n, L + 1]}."""
        _, rows = self.rows.arrays()
        n = len(next(iter(rows.values())))
        return {"n_units": n, **{name: value.mean(0) for name, value in rows.items()}, "per_unit": rows}


# --------------------------------------------------------------------------- windows (chapter 4)

@dataclass
class HeadStatistics(Accumulator):
    """Chapter 4's running totals of the head pass (``studies.context_stats.ContextStats``, which
    add), with the chapter's thresholds; a batch is a
    :class:`~embedding_geometry.core.streaming.Captured`. Consecutive batches fold into one total
    (a shard's memory does not grow with its texts); totals of other shards are kept apart by
    their first window and added in window order at the end, so that the per-text rows come out
    in the single pass's order whatever order the shards merge in."""

    settings: Any = None
    parts: dict[int, list] = field(default_factory=dict)  # first window → [totals, window after the last]

    def __post_init__(self) -> None:
        self.settings = self.settings or Settings()

    def update(self, captured: Any, units: Sequence[int]) -> None:

        units = list(units)
        self.add(batch_statistics(captured.head_out, captured.pattern, TextBatch.of(captured.windows), self.settings,
                                  first=units[0] if units else 0), units)

    def add(self, stats: Any, units: Sequence[int]) -> None:
        """Fold one batch's statistics (``ContextStats`` of windows ``units``, consecutive), as
        :meth:`update` computes them or the head cache (``studies.head_cache``) gives them back."""
        units = list(units)
        if not units or len(units) != stats.texts or units != list(range(units[0], units[0] + len(units))):
            raise ValueError(f"statistics of {stats.texts} windows need as many consecutive unit indices; got {units}")
        before = next((start for start, (_, end) in self.parts.items() if end == units[0]), None)
        if before is None:
            self._check_new(units[0], units[-1] + 1)
            self.parts[units[0]] = [stats, units[-1] + 1]
        else:
            self.parts[before][0] += stats
            self.parts[before][1] = units[-1] + 1

    def _check_new(self, start: int, end: int) -> None:
        for first, (_, last) in self.parts.items():
            if start < last and first < end:
                raise ValueError(f"windows {max(start, first)}…{min(end, last) - 1} were counted twice: "
                                 "a shard was merged more than once")

    def merge(self, other: HeadStatistics) -> HeadStatistics:
        for start, (stats, end) in other.parts.items():
            self._check_new(start, end)
            self.parts[start] = [stats, end]
        return self

    def result(self) -> Metrics:
        """``context_similarity.metrics`` of the totals, added in window order."""
        ordered = [self.parts[start][0] for start in sorted(self.parts)]
        total = ordered[0]
        for part in ordered[1:]:
            total = total + part
        return metrics(total, self.settings)


# --------------------------------------------------------------------------- text sets

KINDS = ("texts", "tuples", "windows")


@dataclass(frozen=True)
class TextSet:
    """A set of units and the accumulator that measures them:

    ``texts``    one text per unit: ``texts``, or a ``corpus`` read a run at a time (:class:`TextStatistics`)
    ``tuples``   ``len(names) + 1`` texts per unit, ``texts`` flattened unit by unit (:class:`TupleStatistics`)
    ``windows``  ``n_units`` windows of ``length`` tokens cut from the sentences of ``source`` with
                 ``seed`` (``core.windows.from_source``), or from ``corpus`` cycled; the texts depend
                 on the model's tokenizer, so they are cut where the model is (:class:`HeadStatistics`)
    """

    name: str
    kind: str
    texts: tuple[str, ...] = ()
    names: tuple[str, ...] = ()
    maxsim: bool = False
    source: str = "corpus"
    windows: int = 0
    length: int = 128
    seed: int = 0
    sample_size: int = SAMPLE_SIZE
    corpus: TextSource | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"a text set's kind must be one of {KINDS}; got {self.kind!r}")
        if self.kind == "tuples" and (not self.names or len(self.texts) % (len(self.names) + 1)):
            raise ValueError(f"text set {self.name!r}: {len(self.texts)} texts do not make units of "
                             f"{len(self.names) + 1}")

    @property
    def arity(self) -> int:
        """Texts per unit."""
        return len(self.names) + 1 if self.kind == "tuples" else 1

    @property
    def n_units(self) -> int:
        if self.kind == "windows":
            return self.windows
        return self.corpus.n_texts if self.corpus is not None else len(self.texts) // self.arity

    def unit_texts(self, start: int, stop: int) -> list[str]:
        """The texts of units start … stop − 1, in order (not for ``windows``)."""
        if self.corpus is not None:
            return self.corpus.texts(start, stop)
        return list(self.texts[start * self.arity:stop * self.arity])

    def accumulator(self) -> Accumulator:
        """An empty accumulator for this set."""
        if self.kind == "texts":
            return TextStatistics(sample_size=self.sample_size, seed=self.seed)
        if self.kind == "tuples":
            return TupleStatistics(names=self.names, maxsim=self.maxsim)
        return HeadStatistics(Settings(seed=self.seed))
