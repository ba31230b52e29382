"""Chapter 6's parameters: the rule each must satisfy alone (:data:`RULES`; the registry adds the rules
every measuring chapter shares, ``book.rules.MODEL``) and what the chapter's computations need of
them together (:data:`NEEDS`). The book's registry, :mod:`embedding_geometry.book.rules`, takes both.
"""

from __future__ import annotations

from ...book import parameters as p
from ...core import corpora
from ...studies.long_texts import document_count

CHAPTER = "06_search_in_practice"
"""The chapter these rules are for (its notebook's name)."""

RULES: dict[str, p.Rule] = {
    "models": p.text_list(0), "pair_sample": p.optional(p.integer(2)),
    "n_long_docs": p.integer(2), "long_words": p.integer(2), "window_words": p.integer(1),
    "stride_words": p.integer(1), "reranker": p.optional(p.text), "rerank_depth": p.integer(1),
    "finetune": p.boolean, "finetune_model": p.optional(p.text), "finetune_seeds": p.integer(1, 64),
    "finetune_epochs": p.integer(1, 10_000),
}
"""Each of the chapter's own parameters and its rule (the book's registry adds ``MODEL``'s)."""

EXERCISE_LONG_WORDS = 300
"""Chapter 6's exercise cuts documents of this many words too (``long_words_300``)."""


@p.need("n_long_docs", f"at most as many documents as the shuffled corpus gives of long_words words, and of "
        f"{EXERCISE_LONG_WORDS} (the exercise's)")
def _documents_within_corpus(values):
    sentences = corpora.corpus()["sentence"].tolist()
    for words in (values["long_words"], EXERCISE_LONG_WORDS):
        n = document_count(sentences, words, values["seed"])
        if values["n_long_docs"] > n:
            return values["n_long_docs"], f"the corpus gives {n} documents of ≥ {words} words"
    return None


NEEDS: tuple[p.Need, ...] = (_documents_within_corpus,)
"""What the chapter's computations need of its values together."""
