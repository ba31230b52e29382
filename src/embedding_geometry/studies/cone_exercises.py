"""The answers of chapter 3's exercises, each computed for its changed parameter value, reusing the
chapter's activations wherever it can (the measurements are ``studies.anisotropy``'s).

The keys join the chapter's ``metrics["exercises"]``; "new" marks keys added with the verdict
intervals. A ``per_unit`` mapping inside an answer holds the per-unit values its claim resamples
(``book.intervals``: an array whose mean over axis 0, or a ratio of two such means, is the value).

    sample_size_check(pools, full)                 Exercise 1 (n_texts 300)
      n_texts_300_anisotropy [L + 1]; n_texts_300 {n, peak, peak_depth, final, max_difference}
    token_set_check(hidden, rows, owners, special, measured, depth)   Exercise 2 (token_set all)
      token_set_all_token_anisotropy [L + 1]; token_set_all {at_depth, this_build_at_depth,
        max_difference, special_share, special_anisotropy, change_share = |change| / |gap|;
        new: signed_change_share = (A_all − A_word) / gap at ``depth``, per_unit {change, gap} [N]:
        per sentence, the two token sets' shares (anisotropy.text_shares) and the pooling gap}
    end_topics at k_extremes and 20 (anisotropy.end_topics)    Exercise 3 (k_extremes 20)
    second_control(finals, other)                  Exercise 4 (seed 1)
      seed_1_control {final_anisotropy, axis_cos_with_model, axis_cos_with_this_control,
        anisotropy_difference (|A_1 − A_0|), axis_cos_over_chance; new: anisotropy_change
        (A_1 − A_0), per_unit {anisotropy_change [N] (per sentence), axis_cos_over_chance [D]
        (anisotropy.axis_products over chance)}}, the None values without a first control
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np

from ..core.geometry import cosine, principal_axis, row_mean_cosine
from ..core.models import ModelInfo
from .anisotropy import anisotropy, anisotropy_per_depth, axis_products, chance_axis_cosine, text_shares


def sample_pools(sample: Sequence[str], sentences: Sequence[str], pools: np.ndarray,
                 extract: Callable[[list[str]], object]) -> np.ndarray:
    """Mean pools [L + 1, n, D] of the texts ``sample``: columns of ``pools`` (the mean pools of
    ``sentences``) when every text of the sample is among them, else ``extract(sample)``'s."""
    where = {s: i for i, s in enumerate(sentences)}
    if all(s in where for s in sample):
        return np.asarray(pools)[:, [where[s] for s in sample]]
    return extract(list(sample)).mean_pool("all")


def sample_size_check(pools: np.ndarray, full: np.ndarray) -> dict:
    """Exercise 1: anisotropy per depth of a sample's mean ``pools``, its peak, depth of the peak
    and final value, and the largest |difference| from the full corpus's series ``full``."""
    series = anisotropy_per_depth(pools)
    return {"n_texts_300_anisotropy": series,
            "n_texts_300": {"n": int(np.asarray(pools).shape[1]), "peak": float(series.max()),
                            "peak_depth": int(np.argmax(series)), "final": float(series[-1]),
                            "max_difference": float(np.abs(series - np.asarray(full)).max())}}


def token_set_check(hidden: np.ndarray, rows: np.ndarray, owners: np.ndarray, special: np.ndarray,
                    measured: Mapping, depth: int) -> dict:
    """Exercise 2: token-level anisotropy of the token ``rows`` of ``hidden`` ([L + 1, n_tok, D],
    the post's set, [CLS] and [SEP] included; token i belongs to text ``owners[i]``) against this
    build's (``measured``: the chapter's metrics, with Experiment 2's ``token_anisotropy``,
    ``anisotropy_gap`` and their per-unit values); the special tokens' share and their own
    anisotropy at ``depth``; and the change there as a share of the pooling gap, with its
    per-sentence parts."""
    hidden, special = np.asarray(hidden), np.asarray(special, dtype=bool)
    token, gap = np.asarray(measured["token_anisotropy"]), np.asarray(measured["anisotropy_gap"])
    units = measured["per_unit"]
    series = anisotropy_per_depth(hidden[:, rows])
    change, gap_at = series[depth] - token[depth], float(gap[depth])
    n_texts = len(units["anisotropy_gap"])
    shares = text_shares(row_mean_cosine(hidden[depth, rows]), np.asarray(owners)[rows], n_texts)
    per_unit = {"change": shares - units["token_anisotropy.by_sentence"][:, depth], "gap": units["anisotropy_gap"][:, depth]}
    return {"token_set_all_token_anisotropy": series,
            "token_set_all": {"at_depth": float(series[depth]), "this_build_at_depth": float(token[depth]),
                              "max_difference": float(np.abs(series - token).max()),
                              "special_share": float(special.mean()),
                              "special_anisotropy": anisotropy(hidden[depth, special]),
                              "change_share": float(abs(change) / abs(gap_at)) if gap_at != 0 else None,
                              "signed_change_share": float(change / gap_at) if gap_at != 0 else None,
                              "per_unit": per_unit}}


def second_control(finals: Mapping[ModelInfo, np.ndarray], other: np.ndarray) -> dict:
    """Exercise 4: a second random-init control's final embeddings ``other`` ([N, D]) against the
    chapter's model (first in ``finals``) and its control: final anisotropy, |cos| of the cone
    axes, the anisotropy difference between the two controls and their axis |cos| over chance."""
    control = next((final for info, final in finals.items() if info.source == "control"), None)
    value, axis = anisotropy(other), principal_axis(other)
    result = {"final_anisotropy": value, "axis_cos_with_model": abs(cosine(axis, principal_axis(next(iter(finals.values()))))),
              **dict.fromkeys(("axis_cos_with_this_control", "anisotropy_difference", "axis_cos_over_chance",
                               "anisotropy_change", "per_unit"))}
    if control is not None:
        control_axis, chance = principal_axis(control), chance_axis_cosine(len(axis))
        with_control = abs(cosine(axis, control_axis))
        result.update(axis_cos_with_this_control=with_control, anisotropy_difference=abs(value - anisotropy(control)),
                      axis_cos_over_chance=with_control / chance, anisotropy_change=value - anisotropy(control),
                      per_unit={"anisotropy_change": row_mean_cosine(other) - row_mean_cosine(control),
                                "axis_cos_over_chance": axis_products(axis, control_axis) / chance})
    return result
