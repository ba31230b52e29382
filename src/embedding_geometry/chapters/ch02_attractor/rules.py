"""Chapter 2's parameters: the rule each must satisfy alone (:data:`RULES`; the registry adds the rules
every measuring chapter shares, ``book.rules.MODEL``) and what the chapter's computations need of
them together (:data:`NEEDS`). The book's registry, :mod:`embedding_geometry.book.rules`, takes both.
"""

from __future__ import annotations

from ...book import parameters as p
from ...book.rules import COMPARED, words

CHAPTER = "02_similarity_attractor"
"""The chapter these rules are for (its notebook's name)."""

RULES: dict[str, p.Rule] = {"pairs": p.sentence_pairs, **COMPARED}
"""Each of the chapter's own parameters and its rule (the book's registry adds ``MODEL``'s)."""

NEEDS: tuple[p.Need, ...] = (words("pairs", 1, "MaxSim matches word tokens"),)
"""What the chapter's computations need of its values together."""
