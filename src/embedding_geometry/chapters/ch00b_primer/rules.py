"""The primer's parameters: the rule each must satisfy alone (:data:`RULES`; the registry adds the rules
every measuring chapter shares, ``book.rules.MODEL``) and what its computations need of them together
(:data:`NEEDS`). The book's registry, :mod:`embedding_geometry.book.rules`, takes both.
"""

from __future__ import annotations

from ...book import parameters as p
from ...book.rules import unit, words
from ...core import corpora

CHAPTER = "00b_primer"
"""The chapter these rules are for (its notebook's name)."""

RULES: dict[str, p.Rule] = {
    "pair": p.sentence_pair, "n_texts": p.integer(2, corpora.CORPUS_SIZE),
    "centering": unit, "toy_offset": p.number(0.0, 10.0),
    "toy_elongation": p.number(0.001, 1.0), "toy_stretch": p.number(0.0, 0.5),
}
"""Each of the primer's own parameters and its rule (the book's registry adds ``MODEL``'s)."""

NEEDS: tuple[p.Need, ...] = (words("pair", 1, "MaxSim matches word tokens"),)
"""What the primer's computations need of its values together."""
