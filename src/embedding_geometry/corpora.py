"""Sentence sets: the reference sentences of METHODS.md §0 and the project's own data files.

Data files live in ``embedding_geometry/data/`` and are read with ``load_lines`` (one sentence
per line, ``#`` comments and blank lines ignored) or ``load_yaml``.
"""

from __future__ import annotations

from importlib import resources
from typing import Any

import yaml

REFERENCE_SENTENCES: dict[str, str] = {
    "surged": "The stock market surged after the central bank cut interest rates",
    "plunged": "The stock market plunged after the central bank raised interest rates",
    "fox": "The quick brown fox jumps over the lazy dog",
    "rag": "Retrieval augmented generation improves factual accuracy in language models",
    "acquirer": "The tech giant acquired its rival",
    "acquired": "Its rival acquired the tech giant",
}
"""The posts' reference sentences (METHODS.md §0). The role-reversal pair is the posts'
fragments completed by us."""


def _data(name: str):
    return resources.files("embedding_geometry") / "data" / name


def load_lines(name: str) -> list[str]:
    """Non-blank, non-comment lines of ``data/<name>``."""
    lines = (line.strip() for line in _data(name).read_text(encoding="utf-8").splitlines())
    return [line for line in lines if line and not line.startswith("#")]


def load_yaml(name: str) -> Any:
    """The parsed contents of ``data/<name>``."""
    return yaml.safe_load(_data(name).read_text(encoding="utf-8"))
