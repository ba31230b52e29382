"""Where [CLS] looks: its last-layer attention by position, against the article's table
(book/methods.md, "methods-practice").

Over N texts of exactly T tokens, with a^{(i)} ([T]) the attention [CLS] pays to each position
in the last layer, averaged over heads (``pooling.cls_attention``):

    bucket_shares  = Σ_{t ∈ B} a_t for the buckets 0–10, 11–50, 51–100, 101+ (positions 0-based)
    shares         = mean over texts of bucket_shares(a^{(i)})             [4]
    uniform        = bucket_shares of a_t = 1/T                            what no preference gives
    profile[t]     = (1/N) Σ_i a^{(i)}_t                                   [T]
    power law      w_t(α) = (1 + α t)^{-1} / Σ_s (1 + α s)^{-1}            the article's curve has
                     α = 0.1 and 512 positions; α is fitted to a profile by least squares, R² reported

Uniform attention, a_t = 1/T, is the null: it gives each bucket its length's share
(``uniform_shares``) and an early ratio of exactly 1. The sampling unit is the text: per text,
its bucket shares, its early ratio and the R² of the power law fitted to its own profile
(``per_unit``; their means over texts are the metrics).

Metrics: ``position_study`` → cls_attention_by_position {n_positions T, n_texts N, buckets
(labels), shares {b0_10, b11_50, b51_100, b101_plus}, uniform [4], article_table [4] (the
published shares), article_code_512 and article_code_T [4] (the article's power law over 512 and
T positions), closest_length and closest_rms (the length whose power law comes nearest the
table), to_cls = profile[0], early_ratio = shares[0] / uniform[0], early_excess = shares[0] −
uniform[0] (what positions 0–10 get beyond uniform attention), power_law {alpha, r2,
spearman}, profile [T] (rounded to 6 decimals), entropy (``pooling.attention_entropy``, mean),
uniform_shares {b0_10, …} and uniform_early_ratio (the uniform-attention null), power_law_by_text
{mean_r2: the mean over texts of each text's own fit's R²}}; per_unit {"cls_attention_by_position.
shares.<bucket>", ".early_ratio", ".early_excess", ".power_law_by_text.mean_r2": [N]}.
``short_summary`` keeps {n_positions, shares [4], uniform, power_law}.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy import optimize, stats

from ...core.activations import Activations
from ...core.errors import ParameterError
from ...studies.long_texts import topic_runs
from ...studies.pooling import attention_entropy, cls_attention

BUCKETS = ((0, 10), (11, 50), (51, 100), (101, None))
"""The article's position ranges 0–10, 11–50, 51–100 and 100+ (inclusive; 100 goes to 51–100)."""
BUCKET_LABELS = ("0–10", "11–50", "51–100", ">100")
SHARE_KEYS = ("b0_10", "b11_50", "b51_100", "b101_plus")
MIN_POSITIONS = BUCKETS[-1][0] + 1
"""The shortest text that reaches every bucket."""

ARTICLE_TABLE = (0.31, 0.42, 0.18, 0.09)
"""The article's "Total Attention" column for those ranges."""
ARTICLE_ALPHA, ARTICLE_POSITIONS = 0.1, 512
"""The article's code: ``attention_weight = 1 / (1 + 0.1 * position)`` for ``np.arange(512)``."""


def n_positions(value: int | None, max_seq_length: int) -> int:
    """T: ``value`` (the ``n_positions`` parameter), or the model's limit when None; a one-line
    ParameterError unless MIN_POSITIONS ≤ T ≤ max_seq_length."""
    chosen = max_seq_length if value is None else value
    if isinstance(chosen, bool) or not isinstance(chosen, int) or not MIN_POSITIONS <= chosen <= max_seq_length:
        raise ParameterError(
            "n_positions", f"an integer in [{MIN_POSITIONS}, {max_seq_length}] (the model's limit)", value
        )
    return chosen


def position_runs(extract, sentences: Sequence[str], topics: Sequence[str], tokenizer,
                  n_tokens: int) -> tuple[dict[str, str], Activations]:
    """The texts of ``n_tokens`` tokens, one per topic, made of its sentences (``long_texts.topic_runs``),
    and their forward pass with the last block's attention maps, cut at ``n_tokens``: what
    :func:`position_study` reads. ``extract`` is ``Chapter.extract``."""
    texts = topic_runs(sentences, topics, tokenizer, n_tokens)
    return texts, extract(list(texts.values()), source="n_positions", attentions=True, attention_layers=(-1,),
                          max_length=n_tokens)


# --------------------------------------------------------------------------- buckets and the power law


def bucket_shares(weights: np.ndarray, buckets: Sequence[tuple[int, int | None]] = BUCKETS) -> np.ndarray:
    """Σ of ``weights`` ([T], indexed by position) inside each inclusive (first, last) bucket
    (last None: to the end) → [len(buckets)]; positions a text does not reach add nothing."""
    weights = np.asarray(weights, dtype=np.float64)
    return np.array([weights[first : None if last is None else last + 1].sum() for first, last in buckets])


def uniform_shares(n_positions: int, buckets: Sequence[tuple[int, int | None]] = BUCKETS) -> np.ndarray:
    """What each bucket would get if [CLS] attended uniformly to ``n_positions`` tokens."""
    return bucket_shares(np.full(n_positions, 1.0 / n_positions), buckets)


def power_law(n_positions: int, alpha: float) -> np.ndarray:
    """w_t = (1 + α t)^{-1} normalised to sum 1, t = 0..n_positions − 1 (the article's curve
    for α = 0.1, 512 positions)."""
    if n_positions < 1 or alpha < 0:
        raise ValueError(f"power law needs n_positions ≥ 1 and α ≥ 0; got {n_positions}, {alpha}")
    weights = 1.0 / (1.0 + alpha * np.arange(n_positions))
    return weights / weights.sum()


def article_code_table(n_positions: int = ARTICLE_POSITIONS, alpha: float = ARTICLE_ALPHA) -> np.ndarray:
    """The bucket shares the article's own power-law code gives → [4]."""
    return bucket_shares(power_law(n_positions, alpha))


def closest_length(
    table: Sequence[float] = ARTICLE_TABLE, alpha: float = ARTICLE_ALPHA, lengths: Sequence[int] = range(102, 2049)
) -> tuple[int, float]:
    """The sequence length whose power-law bucket shares come closest to ``table`` (least
    squares), and the root-mean-square difference there."""
    table = np.asarray(table, dtype=np.float64)
    errors = {n: float(np.sqrt(np.mean((article_code_table(n, alpha) - table) ** 2))) for n in lengths}
    best = min(errors, key=errors.get)
    return best, errors[best]


def position_profile(rows: Sequence[np.ndarray]) -> np.ndarray:
    """The mean of equal-length attention rows [T] over texts → [T]."""
    lengths = {len(r) for r in rows}
    if len(lengths) != 1:
        raise ValueError(f"position profiles need texts of one length; got lengths {sorted(lengths)}")
    return np.mean(np.stack(rows), axis=0)


def fit_power_law(profile: np.ndarray) -> dict[str, float]:
    """Least-squares α of w_t(α) for a position profile ([T], summing to 1), the R² of that fit
    (1 − SSE / SST) and Spearman's ρ between position and weight (< 0: attention decays)."""
    profile = np.asarray(profile, dtype=np.float64)
    n = len(profile)
    if n < 3 or np.ptp(profile) == 0:
        raise ValueError("fitting a decay needs a non-constant profile of at least 3 positions")
    result = optimize.minimize_scalar(
        lambda log_a: np.sum((power_law(n, np.exp(log_a)) - profile) ** 2),
        bounds=(np.log(1e-6), np.log(1e3)),
        method="bounded",
    )
    sse = float(result.fun)
    sst = float(np.sum((profile - profile.mean()) ** 2))
    return {
        "alpha": float(np.exp(result.x)),
        "r2": 1.0 - sse / sst,
        "spearman": float(stats.spearmanr(np.arange(n), profile).statistic),
    }


# --------------------------------------------------------------------------- the study


def position_study(acts: Activations, article_table: Sequence[float] = ARTICLE_TABLE) -> dict[str, object]:
    """{cls_attention_by_position, per_unit} (see the module docstring) from texts of one length
    T, extracted with attentions; ``article_table`` is the published bucket shares."""
    rows = cls_attention(acts)
    profile = position_profile(rows)
    T = len(profile)
    by_text = np.stack([bucket_shares(r) for r in rows])
    shares, uniform = by_text.mean(axis=0), uniform_shares(T)
    closest, closest_rms = closest_length(article_table)
    text_r2 = np.array([fit_power_law(r)["r2"] for r in rows])
    found = {
        "n_positions": T,
        "n_texts": acts.n_texts,
        "buckets": list(BUCKET_LABELS),
        "shares": dict(zip(SHARE_KEYS, shares.tolist())),
        "uniform": uniform.tolist(),
        "article_table": list(article_table),
        "article_code_512": article_code_table().tolist(),
        "article_code_T": article_code_table(T).tolist(),
        "closest_length": closest,
        "closest_rms": closest_rms,
        "to_cls": float(profile[0]),
        "early_ratio": float(shares[0] / uniform[0]),
        "early_excess": float(shares[0] - uniform[0]),
        "power_law": fit_power_law(profile),
        "profile": profile.tolist(),
        "entropy": float(attention_entropy(acts).mean()),
        "uniform_shares": dict(zip(SHARE_KEYS, uniform.tolist())),
        "uniform_early_ratio": 1.0,
        "power_law_by_text": {"mean_r2": float(text_r2.mean())},
    }
    key = "cls_attention_by_position"
    per_unit = {
        **{f"{key}.shares.{name}": by_text[:, b] for b, name in enumerate(SHARE_KEYS)},
        f"{key}.early_ratio": by_text[:, 0] / uniform[0],
        f"{key}.early_excess": by_text[:, 0] - uniform[0],
        f"{key}.power_law_by_text.mean_r2": text_r2,
    }
    return {key: found, "per_unit": per_unit}


def exercise(acts: Activations, key: str = "exercise_n_positions") -> dict[str, object]:
    """{key: ``short_summary``} of ``position_study`` on another set of texts (an exercise's
    length T)."""
    return {key: short_summary(position_study(acts)["cls_attention_by_position"])}


def short_summary(study: dict[str, object]) -> dict[str, object]:
    """The part of a ``position_study`` an exercise compares: n_positions, shares as a list
    [4] in bucket order, uniform and power_law."""
    return {
        "n_positions": study["n_positions"],
        "shares": [study["shares"][k] for k in SHARE_KEYS],
        "uniform": study["uniform"],
        "power_law": study["power_law"],
    }
