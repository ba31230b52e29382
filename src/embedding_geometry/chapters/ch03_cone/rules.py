"""Chapter 3's parameters: the rule each must satisfy alone (:data:`RULES`; the registry adds the rules
every measuring chapter shares, ``book.rules.MODEL``) and what the chapter's computations need of
them together (:data:`NEEDS`). The book's registry, :mod:`embedding_geometry.book.rules`, takes both.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...book import parameters as p
from ...book.rules import COMPARED
from ...core import corpora
from ...studies.cone import chapter_corpus

CHAPTER = "03_inside_the_cone"
"""The chapter these rules are for (its notebook's name)."""

RULES: dict[str, p.Rule] = {
    **COMPARED,
    "corpus": p.one_of(*corpora.CORPORA), "n_texts": p.optional(p.integer(3)),
    "token_set": p.one_of("word", "all"), "k_extremes": p.integer(1), "k_vocab": p.integer(1),
}
"""Each of the chapter's own parameters and its rule (the book's registry adds ``MODEL``'s)."""


def _corpus_size(values: Mapping[str, Any]) -> int | None:
    """How many texts chapter 3 reads: ``n_texts``, or the whole corpus (None when it is SNLI, whose size
    is known only once loaded)."""
    whole, asked = corpora.CORPUS_SIZE if values["corpus"] == "project" else None, values["n_texts"]
    return asked if asked is not None and (whole is None or asked < whole) else whole


@p.need("k_extremes", "at most as many sentences as the chapter reads (n_texts)")
def _extremes_within_corpus(values):
    n, k = _corpus_size(values), values["k_extremes"]
    return None if n is None or k <= n else (k, f"the chapter reads {n} sentences")


@p.need("n_texts", "a sample whose sentences differ in word-token count (Spearman's ρ of the cone axis "
        "with length needs lengths that vary)", model=True)
def _lengths_vary(values, view):
    sample = chapter_corpus(values["corpus"], values["n_texts"], values["seed"])["sentence"].tolist()
    counts = view.word_counts(sample)
    if len(set(counts)) > 1:
        return None
    return values["n_texts"], f"its {len(counts)} sentences all have {counts[0]} word tokens"


@p.need("k_vocab", "at most as many tokens as the model's vocabulary has", model=True)
def _vocab_within_model(values, view):
    k, size = values["k_vocab"], view.vocabulary
    return None if k <= size else (k, f"the vocabulary has {size}")


NEEDS: tuple[p.Need, ...] = (_extremes_within_corpus, _lengths_vary, _vocab_within_model)
"""What the chapter's computations need of its values together."""
