"""The article's isotropy score, its anisotropy warning and its cone "proof" (book/methods.md,
"methods-practice"; chapter 3 measures the cone itself).

For n vectors X = [x_1 … x_n] of width d (X: [n, d], n ≥ 2) with unit rows x̂_i = x_i / ‖x_i‖
and off-diagonal cosines c = {x̂_i · x̂_j : i ≠ j} (n(n − 1) values):

    mean_iso        = 1 − |mean c|
    var_iso         = min(var c / (1/d), 1)                 1/d: var of cos for random directions
    isotropy_score  = (mean_iso + var_iso) / 2              the article's ``measure_anisotropy``
    avg_sim         = (1/n²) Σ_{i,j} x̂_i · x̂_j              sklearn's cosine_similarity(X).mean():
                                                            the diagonal (n ones) is included
    warns           = avg_sim > 0.6                         the article's "Monitor anisotropy" rule

The score's two ends are not where its docstring puts them: identical vectors score 0, but an
orthonormal set (every cosine exactly 0) scores 0.5, because its cosines have no variance; a
sample of isotropic random directions scores about 1. Once var c ≥ 1/d the variance term is
capped at 1 and the score is 1 − |mean c| / 2, never below 0.5.

Cone arithmetic. With m̂ the direction of Σ_i x̂_i and κ = mean_i x̂_i · m̂ (the mean cosine to the
cone's axis), Σ_{i≠j} x̂_i · x̂_j = ‖Σ_i x̂_i‖² − n = n²κ² − n, so exactly

    mean c = (n κ² − 1) / (n − 1)  ≈ κ²                   (the article says E[cos θ] = cos α = κ)

**Pairwise kernels** (the sampling unit of these claims is the sentence, and every statistic
above is a mean over *pairs* of sentences: a U-statistic, resampled by recomputing it over the
pairs of distinct resampled sentences, ``pair_kernels``): K_ij = x̂_i · x̂_j (its U-statistic is
mean c); A_ij = ((n − 1)/n) K_ij + 1/n (its U-statistic is avg_sim, the diagonal's n ones
included); S_ij = (1 − sign(mean c) K_ij + var_iso)/2 (its U-statistic is the score, with the
variance term held at its value on all n rows: exact whenever var c · d ≥ 1 caps it at 1). The
cone's κ = mean_i x̂_i · m̂ is a plain mean over sentences (k_i = x̂_i · m̂, the axis m̂ fixed).
Pairwise statistics are measured on a seeded sample of the corpus (``pair_sample``), the same
sentences for every model and control, so that a kernel [n, n] stays small.

Metrics (the chapter's results JSON):

    reference_study  → isotropy_reference {identical, orthonormal, isotropic} (``reference_scores``),
                       isotropic_mean_cos (mean c of the isotropic sample: the chance null of a
                       cone); per_unit "isotropy_reference.orthonormal": the score kernel of the d
                       basis vectors
    model_row        one model's embeddings of the pair sample: isotropy_components,
                     anisotropy_warning, and with its corpus and query embeddings retrieval.summary
                     (recall@10, nDCG@10); its ``kernels`` (``isotropy_study`` moves them to per_unit)
    isotropy_study   → isotropy_score, isotropy (the main model's row), isotropy_by_model {model
                     id: row}, isotropy_article_models {article name: score, None when not run},
                     isotropy_reference, isotropy_control {mean_cos, avg_sim, score, seeds} of the
                     main model's random-init controls (means over their seeds; None values without
                     them); per_unit kernels "isotropy.mean_cos" and ".avg_sim",
                     "isotropy_article_models.<name>" (the score's) [n, n], and the controls'
                     "isotropy_control.mean_cos" and ".avg_sim" [S, n, n], each ``stored``
    cone_study       → cone {cone_concentration, article_abs_error = |mean c − κ|, article_error =
                     mean c − κ, simulated {alpha_degrees, mean_pairwise_cosine} of a cone of
                     angle arccos κ, trained_minus_control (mean c of the model − the controls',
                     the same pairs; None without controls)}; per_unit "cone.to_axis" (k_i), so that
                     article_error is the U-statistic of K minus the mean of k
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ..core import models as encoders
from ..core.geometry import cosine_matrix, mean_pairwise_cosine, unit_rows, vector_set
from . import pooling, retrieval

WARNING_THRESHOLD = 0.6
"""The article's rule: "If average similarity > 0.6, you have a problem"."""


# --------------------------------------------------------------------------- the article's score


def offdiagonal_cosines(x: np.ndarray) -> np.ndarray:
    """The n(n − 1) cosines x̂_i · x̂_j, i ≠ j, of the rows of ``x`` ([n, d], n ≥ 2)."""
    unit = unit_rows(vector_set(x))
    sims = unit @ unit.T
    return sims[~np.eye(len(unit), dtype=bool)]


def isotropy_components(x: np.ndarray) -> dict[str, float]:
    """Every term of the article's isotropy score for the rows of ``x`` ([n, d]): the mean and
    variance of the off-diagonal cosines, the expected variance 1/d, var c · d (``var_ratio``),
    mean_iso, var_iso and the score itself."""
    cosines = offdiagonal_cosines(x)
    d = np.asarray(x).shape[1]
    mean, var = mean_pairwise_cosine(x), float(np.var(cosines))
    mean_iso, var_iso = 1.0 - abs(mean), min(var * d, 1.0)
    return {
        "mean_cos": mean,
        "var_cos": var,
        "expected_var": 1.0 / d,
        "var_ratio": var * d,
        "mean_iso": mean_iso,
        "var_iso": var_iso,
        "score": (mean_iso + var_iso) / 2,
    }


def isotropy_score(x: np.ndarray) -> float:
    """(1 − |mean c| + min(var c · d, 1)) / 2: 0 = highly anisotropic, 1 = "perfectly isotropic"
    in the article's words (see the module docstring for what it really rewards)."""
    return isotropy_components(x)["score"]


def avg_sim(x: np.ndarray) -> float:
    """The article's check: the mean of the full cosine matrix, its diagonal of ones included."""
    unit = unit_rows(vector_set(x))
    total = unit.sum(axis=0)
    return float(total @ total / len(unit) ** 2)


def anisotropy_warning(x: np.ndarray, threshold: float = WARNING_THRESHOLD) -> dict[str, float | bool]:
    """``avg_sim`` of the rows of ``x``, the mean over distinct pairs only, and whether the
    article's rule (avg_sim > threshold) fires."""
    value = avg_sim(x)
    return {
        "avg_sim": value,
        "mean_offdiagonal": mean_pairwise_cosine(x),
        "threshold": threshold,
        "warns": bool(value > threshold),
    }


def pair_kernels(x: np.ndarray) -> dict[str, np.ndarray]:
    """The kernels [n, n] of the rows of ``x`` ([n, d]) whose U-statistics (the mean over pairs
    i ≠ j) are mean c (``mean_cos``: K), avg_sim (``avg_sim``: A) and the score (``score``: S),
    as the module docstring defines them."""
    unit = unit_rows(vector_set(x))
    n, parts = len(unit), isotropy_components(x)
    k = unit @ unit.T
    return {
        "mean_cos": k,
        "avg_sim": (n - 1) / n * k + 1 / n,
        "score": (1.0 - np.sign(parts["mean_cos"]) * k + parts["var_iso"]) / 2,
    }


KERNEL_DIGITS = 7
"""Decimals (relative to a kernel's largest |entry|) a kernel keeps in the results JSON."""


def stored(kernel: np.ndarray) -> np.ndarray:
    """``kernel`` as the results JSON keeps it: rounded to KERNEL_DIGITS decimals of its largest
    |entry| (its U-statistic moves by under 10⁻⁷ of that scale, far inside the 10⁻⁴ to which a
    claim's samples must rebuild its metric), so that [n, n] numbers stay a few MB of text."""
    kernel = np.asarray(kernel, dtype=np.float64)
    scale = float(np.max(np.abs(kernel))) if kernel.size else 0.0
    return kernel if scale == 0 else np.round(kernel, KERNEL_DIGITS - int(np.ceil(np.log10(scale))))


def pair_sample(n: int, size: int | None, seed: int = 0) -> np.ndarray:
    """The sorted indices of a seeded sample of ``size`` of range(n) (all of them when ``size``
    is None or at least n): the sentences whose pairs a chapter's pairwise statistics measure."""
    if size is None or size >= n:
        return np.arange(n)
    if size < 2:
        raise ValueError(f"a pair sample needs at least 2 sentences; got {size}")
    return np.sort(np.random.default_rng(seed).choice(n, size=size, replace=False))


def isotropic_sample(n: int, d: int, seed: int = 0) -> np.ndarray:
    """n directions drawn uniformly on the unit sphere of R^d (normalised Gaussian rows)."""
    return unit_rows(np.random.default_rng(seed).standard_normal((n, d)))


def reference_scores(d: int, n: int, seed: int = 0) -> dict[str, float]:
    """The article's score on three sets of known geometry in R^d: n ``identical`` vectors (0),
    an ``orthonormal`` set of min(n, d) vectors (0.5: no variance), n ``isotropic`` random
    directions (≈ 1)."""
    identical = np.tile(np.eye(d)[:1], (n, 1))
    return {
        "identical": isotropy_score(identical),
        "orthonormal": isotropy_score(np.eye(d)[: min(n, d)]),
        "isotropic": isotropy_score(isotropic_sample(n, d, seed)),
    }


def reference_study(d: int, n: int, seed: int = 0) -> dict[str, object]:
    """isotropy_reference (``reference_scores``) and isotropic_mean_cos, the mean pairwise
    cosine of n isotropic directions in R^d (see the module docstring)."""
    return {
        "isotropy_reference": reference_scores(d, n, seed),
        "isotropic_mean_cos": mean_pairwise_cosine(isotropic_sample(n, d, seed)),
    }


# --------------------------------------------------------------------------- cone arithmetic


def cone_concentration(x: np.ndarray) -> dict[str, float]:
    """κ, the mean cosine of the rows of ``x`` with the direction of their summed unit vectors;
    the mean pairwise cosine; the exact value (nκ² − 1)/(n − 1); and the article's E[cos θ] = κ."""
    unit = unit_rows(vector_set(x))
    n = len(unit)
    kappa = float(np.linalg.norm(unit.sum(axis=0)) / n)
    return {
        "kappa": kappa,
        "mean_pairwise_cosine": mean_pairwise_cosine(unit),
        "identity": (n * kappa**2 - 1) / (n - 1),
        "kappa_squared": kappa**2,
        "article": kappa,
    }


def cap_boundary_sample(n: int, d: int, alpha: float, seed: int = 0) -> np.ndarray:
    """n unit vectors at exactly angle ``alpha`` (radians) from the first axis of R^d, their
    other components uniform in direction: x = cos α e_1 + sin α u, u ⊥ e_1, ‖u‖ = 1.
    Their expected pairwise cosine is cos²α (the cross terms average to 0)."""
    if d < 2:
        raise ValueError(f"a cone needs d ≥ 2 dimensions; got {d}")
    u = isotropic_sample(n, d - 1, seed)
    return np.hstack([np.full((n, 1), np.cos(alpha)), np.sin(alpha) * u])


# --------------------------------------------------------------------------- the chapter's metrics


def model_row(
    pairs: np.ndarray,
    docs: np.ndarray | None = None,
    queries: np.ndarray | None = None,
    relevant: retrieval.Relevant | None = None,
    texts_per_second: float | None = None,
) -> dict[str, object]:
    """One model's row of the isotropy table: the score's terms and the article's warning on the
    embeddings of the pair sample ``pairs`` ([n, d]) with their ``kernels`` (``pair_kernels``);
    with its corpus embeddings ``docs`` ([N, d]) and ``queries``, recall@10 and nDCG@10 of ranking
    the corpus for them (None for a control, which the table does not search with); and the
    encoding speed measured in the run (``pooling.encoding_speed``; None for a control)."""
    ranking = {"recall_at_10": None, "ndcg_at_10": None}
    if docs is not None:
        ranking = retrieval.summary(cosine_matrix(queries, docs), relevant, ks=(10,))
    return {
        **isotropy_components(pairs),
        **anisotropy_warning(pairs),
        **ranking,
        "texts_per_second": texts_per_second,
        "kernels": pair_kernels(pairs),
    }


def compared_rows(compared, extract, sentences: list[str], queries: list[str], relevant: retrieval.Relevant,
                  sample: np.ndarray) -> tuple[dict[str, dict], dict[str, dict]]:
    """The isotropy table's rows (:func:`model_row`) of the models ``compared`` with the chapter's
    own, and each trained one's corpus and query embeddings and text lengths ({"docs", "queries",
    "lengths"}), by model id. A random-init control is measured on the ``sample`` of ``sentences``
    only (its architecture, untrained: nothing to search with); a trained model on the whole
    corpus, with recall for ``queries`` and its encoding speed. ``extract(texts, model, source=…)``
    runs a forward pass or reads it back (``Chapter.extract``)."""
    rows, runs = {}, {}
    for m in compared:
        if m.info.source == "control":
            pairs = pooling.model_pooling(extract([sentences[i] for i in sample], m, source="pair_sample"),
                                          m.info.pooling)
            rows[m.info.id] = model_row(pairs)
            continue
        corpus = extract(sentences, m, source="models")
        docs = pooling.model_pooling(corpus, m.info.pooling)
        asks = pooling.model_pooling(extract(queries, m, source="models"), m.info.pooling)
        runs[m.info.id] = {"docs": docs, "queries": asks, "lengths": corpus.lengths}
        rows[m.info.id] = model_row(docs[sample], docs, asks, relevant,
                                    pooling.encoding_speed(encoders.sentence_transformer(m), queries))
    return rows, runs


def controls_of(model: str, by_model: Mapping[str, object]) -> list[str]:
    """The ids among ``by_model`` of the random-init controls of ``model`` (``models.random_control``
    names them), in seed order."""
    seeds = {m: control[1] for m in by_model if (control := encoders.control_of(m)) and control[0] == model}
    return sorted(seeds, key=seeds.get)


def isotropy_study(
    by_model: Mapping[str, Mapping], main: str, article_rows: list[dict], references: dict[str, float]
) -> dict[str, object]:
    """isotropy_score, isotropy, isotropy_by_model, isotropy_article_models, isotropy_reference,
    isotropy_control and per_unit (see the module docstring) from ``model_row`` per model id (the
    random-init controls of ``main`` among them), the id of the model whose claims these are, the
    article's table rows ({name, model, score}) and ``reference_scores``."""
    rows = {m: {k: v for k, v in row.items() if k != "kernels"} for m, row in by_model.items()}
    kernels = {m: row["kernels"] for m, row in by_model.items()}
    controls = controls_of(main, by_model)
    per_unit = {
        "isotropy.mean_cos": stored(kernels[main]["mean_cos"]),
        "isotropy.avg_sim": stored(kernels[main]["avg_sim"]),
    }
    if controls:
        per_unit.update(
            {
                f"isotropy_control.{k}": np.stack([stored(kernels[c][k]) for c in controls])
                for k in ("mean_cos", "avg_sim")
            }
        )
    per_unit.update(
        {
            f"isotropy_article_models.{r['name']}": stored(kernels[r["model"]]["score"])
            for r in article_rows
            if r["model"] in kernels
        }
    )
    control = {
        k: float(np.mean([rows[c][k] for c in controls])) if controls else None
        for k in ("mean_cos", "avg_sim", "score")
    }
    return {
        "isotropy_score": rows[main]["score"],
        "isotropy": dict(rows[main]),
        "isotropy_by_model": rows,
        "isotropy_article_models": {
            r["name"]: rows[r["model"]]["score"] if r["model"] in rows else None for r in article_rows
        },
        "isotropy_reference": dict(references),
        "isotropy_control": {**control, "seeds": len(controls)},
        "per_unit": per_unit,
    }


def cone_study(x: np.ndarray, by_model: Mapping[str, Mapping], model: str, seed: int = 0) -> dict[str, object]:
    """{cone, per_unit} (see the module docstring) of the rows of ``x`` ([n, d], ``model``'s
    embeddings of the pair sample), with a simulated cone of n vectors in R^d at the same angle
    (seeded), and the mean over seeds of the mean c of ``model``'s random-init controls among the
    ``model_row``s of ``by_model`` (None without controls)."""
    controls = controls_of(model, by_model)
    control_mean_cos = float(np.mean([by_model[c]["mean_cos"] for c in controls])) if controls else None
    cone = cone_concentration(x)
    n, d = np.shape(x)
    alpha = float(np.arccos(cone["kappa"]))
    simulated = mean_pairwise_cosine(cap_boundary_sample(n, d, alpha, seed))
    unit = unit_rows(vector_set(x))
    to_axis = unit @ (unit.sum(axis=0) / np.linalg.norm(unit.sum(axis=0)))
    return {
        "cone": {
            **cone,
            "article_abs_error": abs(cone["mean_pairwise_cosine"] - cone["kappa"]),
            "article_error": cone["mean_pairwise_cosine"] - cone["kappa"],
            "simulated": {"alpha_degrees": float(np.degrees(alpha)), "mean_pairwise_cosine": simulated},
            "trained_minus_control": None
            if control_mean_cos is None
            else cone["mean_pairwise_cosine"] - control_mean_cos,
        },
        "per_unit": {"cone.to_axis": to_axis},
    }
