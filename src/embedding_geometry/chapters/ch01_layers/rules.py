"""Chapter 1's parameters: the rule each must satisfy alone (:data:`RULES`; the registry adds the rules
every measuring chapter shares, ``book.rules.MODEL``) and what the chapter's computations need of
them together (:data:`NEEDS`). The book's registry, :mod:`embedding_geometry.book.rules`, takes both.
"""

from __future__ import annotations

from ...book import parameters as p
from ...book.rules import CONTROLS, distinct, words

CHAPTER = "01_layer_by_layer"
"""The chapter these rules are for (its notebook's name)."""

RULES: dict[str, p.Rule] = {
    "models": p.model_list, **CONTROLS,
    "sentences": p.optional(p.text_list(3)),
    "easy_set": p.optional(p.retrieval_set), "hard_set": p.optional(p.retrieval_set),
    "easy_k": p.integer(1), "hard_k": p.integer(1),
}
"""Each of the chapter's own parameters and its rule (the book's registry adds ``MODEL``'s)."""

NEEDS: tuple[p.Need, ...] = (
    words("sentences", 2, "within-sentence cosines pair two tokens of a text"),
    distinct("sentences", "a correlation over texts needs texts that differ"),
    words("easy_set", 1, "a word token to measure"), words("hard_set", 1, "a word token to measure"),
)
"""What the chapter's computations need of its values together."""
