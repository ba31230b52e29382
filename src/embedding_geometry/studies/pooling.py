"""Pooling token states into one vector, the last layer's attention, length bias and dilution
(book/methods.md, "methods-practice"), and what sentence-transformers does for you.

For one text of T tokens with final-depth states H ([T, D]), word ids w_t (−1 for [CLS]/[SEP]),
and a_t, the attention [CLS] pays to token t in the last layer averaged over heads ([T], Σ a_t = 1):

    mean(H)        = (1/T) Σ_t h_t                                  all tokens ("methods-conventions")
    cls(H)         = h_0
    attention(H)   = Σ_t a_t h_t / Σ_t a_t                          the article's ``weighted_pooling``
    word_vectors   = v_w = mean of the pieces t with w_t = w          [W, D], words in order
    subword(H)     = (1/W) Σ_w v_w                                  the article's ``subword_aware_pooling``
                     (special tokens skipped, every word weighs 1 however many pieces it has)
    entropy        = mean over heads h and query rows i of  −Σ_j A_hij log A_hij / log T
                     (A: the last layer's attention maps [H, T, T]; 1 = every row uniform)

a_t and A are read from an :class:`~embedding_geometry.core.activations.Activations` record
extracted with ``attentions=True`` (the last layer's maps are enough: ``attention_layers=(-1,)``),
in float64.

Length bias: Spearman's ρ between ‖m‖ (unnormalised sentence vector) and its token count n,
and the R² = r² of the averaging law ‖m‖² = a + b / n (r: Pearson's, of ‖m‖² and 1/n);
dilution: cos(pool(key), pool(key + k others)).

Per-unit values (``per_unit``): a correlation is resampled from its per-sentence moments x, y,
x², y², xy (``correlation_moments``: r is recomputed from the weighted means of each resample;
ranks for Spearman's ρ, with x times sign ρ for |ρ|); dilution values are per key, the mean over
the key positions (and, for the entropy, over k); retrieval differences are per query (paired).

Metrics (the chapter's results JSON, one function per key):

    library_metrics     → model_facts {hidden, layers, max_seq_length};
                          library {modules, pooling_mode, pooling_is_mean (1.0 / 0.0),
                          max_norm_deviation, padding_max_abs_diff (None without a
                          sentence-transformers config), meanpool_vs_model {max_abs_diff,
                          min_cosine}, special_token_cosine = mean_s cos(m(s), w(s)) with w the
                          mean of the word tokens only}
    length_norm_relation → length_bias {spearman, p_value, abs_spearman, averaging_law_r2,
                          averaging_law_r, averaging_law_slope}; per_unit the moments
                          "length_bias.abs_spearman.<x|y|xx|yy|xy>" and
                          "length_bias.averaging_law_r.<…>" [N, 1] (``correlation_moments``)
    dilution_study      → length_dilution {k: [0..K], key_first / key_last: {mean, cls,
                          attention: curve [K + 1]}, attention_gain = mean over key positions of
                          (attention − mean) at k = K, mean_drop {key_first / key_last: the mean
                          pooling's cosine at k = 0 minus at k = K}, attention_entropy = mean
                          entropy of the texts,
                          k_max = K, final {key_first / key_last: {mean, cls, attention}} at k = K};
                          per_unit {length_dilution.mean_drop.<position>: [keys],
                          length_dilution.attention_gain, length_dilution.attention_entropy: [keys]}
    pooling_retrieval   → pooling_retrieval {mean, cls, subword: retrieval.summary,
                          cls_minus_mean, subword_minus_mean (nDCG@10 differences)}; per_unit
                          {pooling_retrieval.cls_minus_mean, .subword_minus_mean: [Q]}
    cls_by_depth        → cls_by_depth {cls, mean: nDCG@10 at every depth [L + 1], cls_minus_mean
                          [L + 1], alignment [L + 1]: mean over documents of cos(c_l(s), m_l(s)),
                          chapter 1's CLS-alignment curve on this corpus}; per_unit
                          {cls_by_depth.cls_minus_mean: [Q, L + 1]}
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np
from scipy import stats

from ..core.activations import Activations
from ..core.geometry import cosine_matrix, pair_cosine
from ..core.models import ModelInfo
from . import retrieval
from ..core import clock

Pooling = Literal["mean", "cls", "attention", "subword"]
POOLINGS = ("mean", "cls", "attention", "subword")


# --------------------------------------------------------------------------- pooling one text


def attention_weighted_pool(states: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Σ_t a_t h_t / Σ_t a_t for states [T, D] and non-negative weights [T] → [D]."""
    states, weights = np.asarray(states, dtype=np.float64), np.asarray(weights, dtype=np.float64)
    if len(states) != len(weights):
        raise ValueError(f"{len(states)} token states but {len(weights)} attention weights")
    total = weights.sum()
    if total <= 0:
        raise ValueError("the attention weights sum to zero; the weighted mean is undefined")
    return weights @ states / total


def word_vectors(states: np.ndarray, word_ids: np.ndarray) -> np.ndarray:
    """v_w: the mean of each word's pieces, words in order of appearance, special tokens
    (word id −1) skipped. states [T, D], word_ids [T] → [W, D]."""
    states, word_ids = np.asarray(states, dtype=np.float64), np.asarray(word_ids)
    words = list(dict.fromkeys(int(w) for w in word_ids if w >= 0))
    if not words:
        raise ValueError("the text has no word tokens: subword-aware pooling is undefined")
    return np.stack([states[word_ids == w].mean(axis=0) for w in words])


def subword_aware_pool(states: np.ndarray, word_ids: np.ndarray) -> np.ndarray:
    """The article's ``subword_aware_pooling``: the mean over words of the mean of each word's
    pieces, special tokens skipped. states [T, D], word_ids [T] → [D]."""
    return word_vectors(states, word_ids).mean(axis=0)


# --------------------------------------------------------------------------- the last layer's attention


def _last_layer_maps(acts: Activations, i: int) -> np.ndarray:
    """A of text i: the last layer's attention maps [H, T_i, T_i] in float64."""
    if acts.attentions is None:
        raise ValueError("these activations hold no attention maps: extract them with attentions=True")
    return acts.attentions[i][-1].astype(np.float64)


def cls_attention(acts: Activations) -> list[np.ndarray]:
    """a_t for every text: the last layer's attention from [CLS] (query row 0) to each token,
    averaged over heads → N arrays [T_i], each summing to 1."""
    return [_last_layer_maps(acts, i)[:, 0, :].mean(axis=0) for i in range(acts.n_texts)]


def attention_entropy(acts: Activations) -> np.ndarray:
    """The normalised entropy of the last layer's attention rows of every text (mean over heads
    and query positions; 1 = every row uniform) → [N]. Texts need at least two tokens."""
    if acts.lengths.min() < 2:
        raise ValueError("the entropy of an attention row needs texts of at least two tokens")
    values = []
    for i in range(acts.n_texts):
        maps = _last_layer_maps(acts, i)
        values.append(-(maps * np.log(np.clip(maps, 1e-30, None))).sum(-1).mean() / np.log(maps.shape[-1]))
    return np.array(values)


# --------------------------------------------------------------------------- pooling a record


def pool(acts: Activations, method: Pooling, depth: int = -1) -> np.ndarray:
    """One vector per text of ``acts`` at ``depth`` (default: the final one) → [N, D].
    ``attention`` needs a record extracted with ``attentions=True`` (it weighs the final depth)."""
    if method not in POOLINGS:
        raise ValueError(f"pooling must be one of {POOLINGS}; got {method!r}")
    if method == "mean":
        return acts.mean_pool("all")[depth]
    if method == "cls":
        return acts.cls()[depth].astype(np.float64)
    if method == "attention":
        return np.stack(
            [
                attention_weighted_pool(acts.token_states(depth, i, "all"), weights)
                for i, weights in enumerate(cls_attention(acts))
            ]
        )
    return np.stack(
        [
            subword_aware_pool(acts.token_states(depth, i, "all"), acts.word_ids[acts.rows(i)])
            for i in range(acts.n_texts)
        ]
    )


def model_pooling(acts: Activations, mode: str) -> np.ndarray:
    """The final-depth sentence vectors a model itself makes: CLS for a "cls" pooling mode,
    else the mean of all tokens (mean-pooling models, and models without a pooling config)."""
    return pool(acts, "cls" if mode == "cls" else "mean")


RETRIEVAL_POOLINGS = ("mean", "cls", "subword")
"""The poolings the retrieval comparison ranks with: those that need no attention maps, so that the
corpus is read by the same forward pass as chapter 3's (the activation cache)."""


def pooling_retrieval(docs: Activations, queries: Activations, relevant: retrieval.Relevant) -> dict[str, object]:
    """Rank ``docs`` for ``queries`` by cosine under every pooling of RETRIEVAL_POOLINGS →
    {pooling_retrieval, per_unit} (see the module docstring)."""
    scores = {m: cosine_matrix(pool(queries, m), pool(docs, m)) for m in RETRIEVAL_POOLINGS}
    found = {m: retrieval.summary(s, relevant) for m, s in scores.items()}
    ndcg = {m: r["ndcg_at_10"] for m, r in found.items()}
    per_unit = {
        f"pooling_retrieval.{m}_minus_mean": retrieval.paired_ndcg(scores[m], scores["mean"], relevant)
        for m in ("cls", "subword")
    }
    return {
        "pooling_retrieval": {
            **found,
            "cls_minus_mean": ndcg["cls"] - ndcg["mean"],
            "subword_minus_mean": ndcg["subword"] - ndcg["mean"],
        },
        "per_unit": per_unit,
    }


def cls_by_depth(docs: Activations, queries: Activations, relevant: retrieval.Relevant) -> dict[str, object]:
    """Rank ``docs`` for ``queries`` at every depth l by the cosine of their [CLS] states c_l and of
    their mean pools m_l, beside how closely [CLS] tracks the mean pool there, mean_s cos(c_l(s),
    m_l(s)) over the documents → {cls_by_depth, per_unit} (see the module docstring)."""
    pools = {"cls": (queries.cls().astype(np.float64), docs.cls().astype(np.float64)),
             "mean": (queries.mean_pool("all"), docs.mean_pool("all"))}  # [L + 1, N, D] each
    scores = {name: [cosine_matrix(q, d) for q, d in zip(*pair)] for name, pair in pools.items()}
    paired = np.stack([retrieval.paired_ndcg(c, m, relevant) for c, m in zip(scores["cls"], scores["mean"])], axis=1)
    c, m = pools["cls"][1], pools["mean"][1]
    cosines = np.sum(c * m, axis=-1) / (np.linalg.norm(c, axis=-1) * np.linalg.norm(m, axis=-1))
    found = {name: [retrieval.ndcg_at_k(s, relevant, 10) for s in by_depth] for name, by_depth in scores.items()}
    return {"cls_by_depth": {**found, "cls_minus_mean": paired.mean(axis=0).tolist(),
                             "alignment": cosines.mean(axis=1).tolist()},
            "per_unit": {"cls_by_depth.cls_minus_mean": paired}}


# --------------------------------------------------------------------------- length bias and dilution


def length_norm_relation(vectors: np.ndarray, n_tokens: np.ndarray) -> dict[str, dict]:
    """How the norm of unnormalised sentence vectors ([N, D]) depends on their token counts
    ([N]): Spearman's ρ (and p) between ‖m‖ and n, and the R² of the averaging law
    ‖m‖² = a + b / n (what a mean of n independent token vectors would follow) →
    {length_bias, per_unit}."""
    norms = np.linalg.norm(np.asarray(vectors, dtype=np.float64), axis=1)
    n_tokens = np.asarray(n_tokens, dtype=np.float64)
    if len(norms) != len(n_tokens) or len(norms) < 3 or np.ptp(n_tokens) == 0:
        raise ValueError("the length relation needs ≥ 3 vectors with token counts that are not all equal")
    rho = stats.spearmanr(norms, n_tokens)
    fit = stats.linregress(1.0 / n_tokens, norms**2)
    found = {
        "spearman": float(rho.statistic),
        "p_value": float(rho.pvalue),
        "abs_spearman": abs(float(rho.statistic)),
        "averaging_law_r2": float(fit.rvalue**2),
        "averaging_law_r": float(fit.rvalue),
        "averaging_law_slope": float(fit.slope),
    }
    ranks = (np.sign(rho.statistic) * stats.rankdata(norms), stats.rankdata(n_tokens))
    per_unit = {
        **correlation_moments("length_bias.abs_spearman", *ranks),
        **correlation_moments("length_bias.averaging_law_r", 1.0 / n_tokens, norms**2),
    }
    return {"length_bias": found, "per_unit": per_unit}


def correlation_moments(key: str, x: np.ndarray, y: np.ndarray) -> dict[str, np.ndarray]:
    """The per-unit moments of one correlation, ``<key>.x``, ``.y``, ``.xx``, ``.yy``, ``.xy``
    ([n, 1] each, centred and scaled for numerical safety: r is unchanged): Pearson's
    r = (E[xy] − E[x]E[y]) / √((E[x²] − E[x]²)(E[y²] − E[y]²)) of any weighting of the units is a
    function of their weighted means, which is how a resample recomputes it."""
    x, y = (np.asarray(v, dtype=np.float64) for v in (x, y))
    x, y = (x - x.mean()) / x.std(), (y - y.mean()) / y.std()
    return {
        f"{key}.{name}": value[:, None]
        for name, value in (("x", x), ("y", y), ("xx", x * x), ("yy", y * y), ("xy", x * y))
    }


def dilution_curves(key_vectors: np.ndarray, text_vectors: np.ndarray) -> np.ndarray:
    """cos(key alone, key + k unrelated sentences) for each key and k.
    key_vectors [M, D], text_vectors [M, K + 1, D] → [M, K + 1]."""
    key_vectors, text_vectors = np.asarray(key_vectors), np.asarray(text_vectors)
    return pair_cosine(key_vectors[:, None, :], text_vectors)


def dilution_study(acts: Activations, positions: Sequence[str], k_max: int) -> dict[str, object]:
    """{length_dilution, per_unit} (see the module docstring) from the dilution texts of every key position
    in order (``long_texts.dilution_texts``: per position, per key, k = 0..k_max), extracted
    with attentions. Position names become keys with "_" for " "."""
    per_position = acts.n_texts // len(positions)
    if acts.n_texts != per_position * len(positions) or per_position % (k_max + 1):
        raise ValueError(f"{acts.n_texts} texts are not {len(positions)} positions × keys × {k_max + 1} lengths")
    grid = (len(positions), per_position // (k_max + 1), k_max + 1, -1)
    vectors = {m: pool(acts, m).reshape(grid) for m in ("mean", "cls", "attention")}
    per_key = {
        pos.replace(" ", "_"): {m: dilution_curves(v[p][:, 0], v[p]) for m, v in vectors.items()}
        for p, pos in enumerate(positions)
    }
    curves = {pos: {m: c.mean(axis=0) for m, c in by.items()} for pos, by in per_key.items()}
    gain = float(np.mean([c["attention"][-1] - c["mean"][-1] for c in curves.values()]))
    entropy = attention_entropy(acts)
    per_unit = {
        **{f"length_dilution.mean_drop.{pos}": by["mean"][:, 0] - by["mean"][:, -1] for pos, by in per_key.items()},
        "length_dilution.attention_gain": np.mean(
            [c["attention"][:, -1] - c["mean"][:, -1] for c in per_key.values()], axis=0
        ),
        "length_dilution.attention_entropy": entropy.reshape(grid[:3]).mean(axis=(0, 2)),
    }
    return {
        "length_dilution": {
            "k": list(range(k_max + 1)),
            **curves,
            "attention_gain": gain,
            "attention_entropy": float(entropy.mean()),
            "k_max": k_max,
            "mean_drop": {pos: float(c["mean"][0] - c["mean"][-1]) for pos, c in curves.items()},
            "final": {pos: {m: float(c[-1]) for m, c in by.items()} for pos, by in curves.items()},
        },
        "per_unit": per_unit,
    }


# --------------------------------------------------------------------------- what the library does


def library_checks(pipeline, texts: Sequence[str]) -> dict[str, object] | None:
    """What a sentence-transformers ``pipeline`` (``models.sentence_transformer``; None when the
    model has no configuration) does: its module names, the largest |‖e‖ − 1| of the embeddings
    it returns (0 when a Normalize module L2-normalises them), and the largest |difference|
    between each text encoded alone and inside one padded batch of all ``texts`` (0 when padding
    is excluded from the pooling)."""
    if pipeline is None:
        return None
    texts = list(texts)
    if len(texts) < 2 or len({len(t) for t in texts}) < 2:
        raise ValueError("the padding check needs at least two texts of different lengths")

    def encode(batch: list[str]) -> np.ndarray:
        found = pipeline.encode(batch, batch_size=len(texts), convert_to_numpy=True, show_progress_bar=False)
        return np.asarray(found, dtype=np.float64)

    together = encode(texts)
    alone = np.vstack([encode([text]) for text in texts])
    return {
        "modules": [type(module).__name__ for module in pipeline],
        "max_norm_deviation": float(np.max(np.abs(np.linalg.norm(together, axis=1) - 1.0))),
        "padding_max_abs_diff": float(np.max(np.abs(together - alone))),
    }


def encoding_speed(pipeline, texts: Sequence[str], batch_size: int = 32) -> float | None:
    """Texts per second of the sentence-transformers ``pipeline``'s own ``encode`` over ``texts``
    (after one warm-up batch), timed in this run on this machine: the "speed" of the article's
    benchmark. None when the model has no sentence-transformers configuration (``pipeline`` None)."""
    import time


    if pipeline is None:
        return None
    texts = list(texts)
    if not texts:
        raise ValueError("encoding speed needs at least one text")
    with clock.model_call():
        pipeline.encode(texts[:batch_size], batch_size=batch_size, show_progress_bar=False)
        start = time.perf_counter()
        pipeline.encode(texts, batch_size=batch_size, show_progress_bar=False)
        seconds = time.perf_counter() - start
    return len(texts) / seconds


def library_metrics(
    info: ModelInfo, checks: dict | None, against_model: dict | None, acts: Activations
) -> dict[str, dict]:
    """model_facts and library (see the module docstring) from the model's description, its
    ``library_checks``, ``activations.check_against_model`` (None without a configuration) and
    the record of the texts the chapter pools."""
    checks = checks or {}
    special = float(pair_cosine(acts.mean_pool("all")[-1], acts.mean_pool("word")[-1]).mean())
    return {
        "model_facts": {"hidden": info.hidden, "layers": info.layers, "max_seq_length": info.max_seq_length},
        "library": {
            "modules": checks.get("modules"),
            "pooling_mode": info.pooling,
            "pooling_is_mean": float(info.pooling == "mean"),
            "max_norm_deviation": checks.get("max_norm_deviation"),
            "padding_max_abs_diff": checks.get("padding_max_abs_diff"),
            "meanpool_vs_model": against_model or {"max_abs_diff": None},
            "special_token_cosine": special,
        },
    }
