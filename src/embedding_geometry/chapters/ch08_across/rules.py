"""Chapter 8's parameters: the rule each must satisfy alone (:data:`RULES`; the registry adds the rules
every measuring chapter shares, ``book.rules.MODEL``) and what the chapter's computations need of
them together (:data:`NEEDS`: the head pass's length, and what its corpus and another run's results
must hold, ``atlas_needs``). The book's registry, :mod:`embedding_geometry.book.rules`, takes both.
"""

from __future__ import annotations

from . import atlas_needs
from ...book import parameters as p
from ...book.rules import COMPARED, positions

CHAPTER = "08_across_models"
"""The chapter these rules are for (its notebook's name)."""

RULES: dict[str, p.Rule] = {
    **COMPARED, "corpus": p.optional(p.text), "corpus_column": p.text,
    "corpus_texts": p.optional(p.integer(2)),
    "head_texts": p.integer(1), "head_length": p.integer(4, 8192),
    "sample_size": p.integer(2, 4096), "shard_texts": p.optional(p.integer(1)),
    "atlas_results": p.optional(p.text),
}
"""Each of the chapter's own parameters and its rule (the book's registry adds ``MODEL``'s)."""

NEEDS: tuple[p.Need, ...] = (positions("head_length"), *atlas_needs.NEEDS)
"""What the chapter's computations need of its values together."""
