"""Chapter 4's parameters: the rule each must satisfy alone (:data:`RULES`; the registry adds the rules
every measuring chapter shares, ``book.rules.MODEL``) and what the chapter's computations need of
them together (:data:`NEEDS`). The book's registry, :mod:`embedding_geometry.book.rules`, takes both.
"""

from __future__ import annotations

from ...book import parameters as p
from ...book.rules import positions, unit
from ...core import windows

CHAPTER = "04_attention_context_similarity"
"""The chapter these rules are for (its notebook's name)."""

RULES: dict[str, p.Rule] = {
    "models": p.text_list(0),
    "texts": p.one_of(*windows.SOURCES), "n_texts": p.integer(1),
    "text_length": p.integer(4, 8192), "q": unit, "attention_threshold": unit,
    "sensitivity_thresholds": p.number_list(0.0, 1.0), "common_min_count": p.integer(2),
    "repeat_share_threshold": unit, "common_focus_threshold": unit,
    "matrix_size": p.integer(2, 512),
}
"""Each of the chapter's own parameters and its rule (the book's registry adds ``MODEL``'s)."""

NEEDS: tuple[p.Need, ...] = (positions("text_length"),)
"""What the chapter's computations need of its values together: texts the model reads whole."""
