"""Chapter 1's open question, measured: what makes a sentence's tokens more or less alike inside a
block. A block of a post-norm encoder (BERT, MPNet) is split at its attention sublayer,
a_l = LN₁(h_{l−1} + O(heads_l)), h_l = LN₂(a_l + FFN(a_l)): a_l is captured in the same cached
forward pass as the hidden states (``activations.extract`` with ``after_attention``, the capture
site ``blocks.{l}.resid_mid``), and the tokens are split into content and function words
(:func:`word_classes`).

dip(acts)
    dip                        {attention_change [L], feed_forward_change [L]: the change in within-sentence
                                cosine across each block's attention and feed-forward sublayers (None
                                for a model not split); by_word_class {content, function, mixed: [L + 1]}:
                                within-sentence cosine among content words, among function words, and
                                between the two; word_class_counts; steepest_fall_block: the block whose
                                within-sentence cosine falls most, or rises least}
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

from ..core import geometry
from ..core.activations import Activations

Metrics = dict[str, Any]


def word_classes(acts: Activations) -> np.ndarray:
    """For every token: "function" for a piece of an alphabetic stop word (scikit-learn's English
    list: the, of, after, …), "content" for a piece of any other alphabetic word, "other" for
    punctuation, numbers and special tokens."""
    kinds = np.full(len(acts.tokens), "other", dtype=object)
    for i in range(acts.n_texts):
        rows = np.arange(acts.offsets[i], acts.offsets[i + 1])
        for word in np.unique(acts.word_ids[rows][acts.word_ids[rows] >= 0]):
            mine = rows[acts.word_ids[rows] == word]
            text = "".join(acts.tokens[j].removeprefix("##") for j in mine).lower()
            if text.isalpha():
                kinds[mine] = "function" if text in ENGLISH_STOP_WORDS else "content"
    return kinds


def _class_cosine(stack: np.ndarray, kinds: np.ndarray, a: str, b: str) -> np.ndarray | None:
    """Mean cosine over pairs (i of kind a, j of kind b, i ≠ j) of one text's tokens per depth, or
    None when the text has no such pair."""
    x, y = np.flatnonzero(kinds == a), np.flatnonzero(kinds == b)
    if len(x) == 0 or len(y) == 0 or (a == b and len(x) < 2):
        return None
    unit = geometry.unit_rows(stack)
    cos = np.einsum("lid,ljd->lij", unit[:, x], unit[:, y])
    if a == b:
        return (cos.sum(axis=(1, 2)) - len(x)) / (len(x) * (len(x) - 1))
    return cos.mean(axis=(1, 2))


def dip(acts: Activations) -> Metrics:
    """The dip's mechanism: the change in within-sentence cosine across each block's attention
    sublayer (h_{l−1} → a_l) and feed-forward sublayer (a_l → h_l), means over sentences; the
    within-sentence cosine among content words, among function words and between the two
    (:func:`word_classes`), per depth; and the block where the within-sentence cosine falls most.
    The sublayer split reads ``acts.after_attention`` (None: a model not split, e.g. a control)."""
    kinds = word_classes(acts)
    by_class = {}
    for name, (a, b) in {"content": ("content", "content"), "function": ("function", "function"),
                         "mixed": ("content", "function")}.items():
        found = [c for i in range(acts.n_texts)
                 if (c := _class_cosine(acts.hidden[:, acts.rows(i)].astype(np.float64), kinds[acts.rows(i)], a, b))
                 is not None]
        by_class[name] = np.mean(found, axis=0) if found else None
    within = geometry.intra_sentence_cosine(acts.word_states())
    found = {"by_word_class": by_class, "steepest_fall_block": int(np.argmin(np.diff(within))) + 1,
             "word_class_counts": {kind: int(np.sum((kinds == kind) & acts.word_mask))
                                   for kind in ("content", "function")}}
    if acts.after_attention is None:
        return {"dip": {**found, "attention_change": None, "feed_forward_change": None}}
    hidden, after = acts.hidden, acts.after_attention
    stacks = [np.concatenate([hidden[:-1, acts.rows(i)], after[:, acts.rows(i)], hidden[1:, acts.rows(i)]])
              [:, acts.word_mask[acts.rows(i)]] for i in range(acts.n_texts)]
    L = acts.n_layers
    start, middle, end = (np.mean([geometry.intra_sentence_cosine([s[part * L:(part + 1) * L]]) for s in stacks],
                                  axis=0) for part in range(3))
    return {"dip": {**found, "attention_change": middle - start, "feed_forward_change": end - middle}}
