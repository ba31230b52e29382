"""Chapter 0: the model's token norms, the mean-pool check and the exercises' answers.

    token_norms(acts)                  token_norm_mean {kind: [L + 1]}: mean ‖h_l,t‖ over the tokens t
                                       of each kind ("[CLS]", "[SEP]", "word tokens") at each depth l
    meanpool_check(loaded, acts)       meanpool_vs_model: m_L(s) = (1/T) Σ_t h_L,t(s) against the model's
                                       own unnormalised embedding e(s) (core.activations.check_against_model);
                                       tokens_per_sentence, word_tokens_per_sentence [N]
    exercises(loaded, acts, …)         exercises: repeated_word_cosine [2] (the mean pairwise cosine of a
                                       repeated word's tokens at depth 0 and L), long_word_pieces (str),
                                       long_word_word_tokens, batch_size_1_max_abs_diff (max |Δh| between one
                                       sentence at a time and the chapter's batches: float noise)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...core import activations, geometry
from ...core.activations import Activations
from ...core.models import LoadedModel

EXERCISE_SENTENCES = ("the the the the the", "Pneumonoultramicroscopicsilicovolcanoconiosis")
"""Exercise 1 repeats one word; exercise 2 is one word that WordPiece splits into many pieces."""


def token_norms(acts: Activations) -> dict[str, Any]:
    """Mean token norm per depth, by kind of token."""
    return {"token_norm_mean": geometry.group_mean(geometry.token_norms(acts.hidden), activations.token_kinds(acts))}


def meanpool_check(loaded: LoadedModel, acts: Activations) -> dict[str, Any]:
    """Our final-depth mean pool against the model's own embedding, and each text's length."""
    return {"meanpool_vs_model": activations.check_against_model(loaded, acts), "tokens_per_sentence": acts.lengths,
            "word_tokens_per_sentence": [int(acts.word_mask[acts.rows(i)].sum()) for i in range(acts.n_texts)]}


def exercises(loaded: LoadedModel, acts: Activations, repeated: Activations, long_word: Activations) -> dict[str, Any]:
    """The exercises' answers: ``repeated`` and ``long_word`` hold :data:`EXERCISE_SENTENCES`;
    ``acts`` is re-extracted one sentence at a time (no cache) and compared with itself."""
    L = acts.n_layers
    pieces = activations.tokenization_table(long_word).iloc[0]
    one_by_one = activations.extract(loaded, acts.texts, batch_size=1, cache=False, progress=False)
    return {"exercises": {
        "repeated_word_cosine": [geometry.mean_pairwise_cosine(repeated.token_states(l, 0)) for l in (0, L)],
        "long_word_pieces": pieces["pieces"], "long_word_word_tokens": int(pieces["word tokens"]),
        "batch_size_1_max_abs_diff": float(np.abs(one_by_one.hidden - acts.hidden).max())}}
