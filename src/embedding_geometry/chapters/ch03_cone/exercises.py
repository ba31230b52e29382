"""The answers of chapter 3's exercises, each computed for its changed parameter value, reusing the
chapter's activations wherever it can (the measurements are ``studies.anisotropy``'s and ``studies.cone_axis``'s).

The keys join the chapter's ``metrics["exercises"]``:

    n_texts_64: sample_size_check(pools, full)          Exercise 1 (n_texts 64), the main model
      {sample_anisotropy [L + 1], sample {n, peak, peak_depth, final, max_difference}}
    Exercise 2 (token_set all) reads ``token_set_effect`` of Experiment 2 (studies.anisotropy)
    k_extremes_20: {model: cone_axis.end_topics at 20}   Exercise 3 (k_extremes 20)
    k_vocab_100: {model: listed_in_top(vocab, 100)}       Exercise 4 (k_vocab 100)
      {k, in_top (how many of the post's L0 tokens rank in the top k), of (how many are in the
       vocabulary), best_rank}
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np

from ...studies.anisotropy import anisotropy_per_depth
from ...studies.cone_axis import end_topics


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
    and final value, and the largest |difference| from the full set's series ``full``."""
    series = anisotropy_per_depth(pools)
    return {"sample_anisotropy": series,
            "sample": {"n": int(np.asarray(pools).shape[1]), "peak": float(series.max()),
                       "peak_depth": int(np.argmax(series)), "final": float(series[-1]),
                       "max_difference": float(np.abs(series - np.asarray(full)).max())}}


def listed_in_top(vocab: Mapping, k: int) -> dict:
    """Exercise 4: how many of the post's L0 tokens (``vocab["post_tokens"]``, from
    ``cone_axis.vocabulary_on_axis``) rank among the top ``k`` of the vocabulary on the cone axis,
    of those in the vocabulary, and the best rank of any."""
    ranks = [t["rank"] for t in vocab["post_tokens"] if t["in_vocabulary"]]
    return {"k": k, "in_top": sum(r <= k for r in ranks), "of": len(ranks), "best_rank": min(ranks) if ranks else None}


N_TEXTS, K_EXTREMES, K_VOCAB = 64, 20, 100
"""The changed parameter values of Exercises 1, 3 and 4."""


def answers(found: Mapping[str, Mapping], topics: Sequence[str], sample: np.ndarray, main: str) -> dict:
    """``{"exercises": …}``: Exercise 1 on the main model's mean pools of the :data:`N_TEXTS`
    sample (``sample``), Exercises 3 and 4 on every trained model of ``found`` (metrics by model
    id) at :data:`K_EXTREMES` and :data:`K_VOCAB`. Exercise 2's answer is Experiment 2's
    ``token_set_effect``."""
    return {"exercises": {
        f"n_texts_{N_TEXTS}": sample_size_check(sample, found[main]["anisotropy"]),
        f"k_extremes_{K_EXTREMES}": {model: end_topics(m["cone_axis_scores"], topics, K_EXTREMES)
                                     for model, m in found.items()},
        f"k_vocab_{K_VOCAB}": {model: listed_in_top(m["vocab_on_cone_axis"], K_VOCAB) for model, m in found.items()},
    }}
