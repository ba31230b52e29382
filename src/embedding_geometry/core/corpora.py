"""Sentence sets: the reference sentences of book/methods.md, Conventions and the project's own data files.

Data files live in ``embedding_geometry/data/`` and are read with ``load_lines`` (one sentence
per line, ``#`` comments and blank lines ignored) or ``load_yaml``.

``corpus()`` is the project's own corpus (``data/corpus.tsv``: sentences written for this book,
each with a topic label); ``snli()`` loads SNLI through the ``datasets`` library when online, or
from local data files; ``load_corpus(name, n, seed)`` picks one of them by name, as a chapter's
``corpus`` parameter does.
"""

from __future__ import annotations

import csv
import functools
from importlib import resources
from typing import Any, Literal

import numpy as np
import pandas as pd
import yaml

from .errors import ParameterError

REFERENCE_SENTENCES: dict[str, str] = {
    "surged": "The stock market surged after the central bank cut interest rates",
    "plunged": "The stock market plunged after the central bank raised interest rates",
    "fox": "The quick brown fox jumps over the lazy dog",
    "rag": "Retrieval augmented generation improves factual accuracy in language models",
    "acquirer": "The tech giant acquired its rival",
    "acquired": "Its rival acquired the tech giant",
}
"""The posts' reference sentences (book/methods.md, Conventions). The role-reversal pair is the posts'
fragments completed by us."""


def _data(name: str):
    return resources.files("embedding_geometry") / "data" / name


def load_lines(name: str) -> list[str]:
    """Non-blank, non-comment lines of ``data/<name>``."""
    lines = (line.strip() for line in _data(name).read_text(encoding="utf-8").splitlines())
    return [line for line in lines if line and not line.startswith("#")]


def load_yaml(name: str) -> Any:
    """The parsed contents of ``data/<name>``, read by libyaml's safe loader where PyYAML has it
    (the same objects, about ten times faster: chapter 7's pairs take 0.02 s instead of 0.25 s)."""
    return yaml.load(_data(name).read_text(encoding="utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


# --------------------------------------------------------------------------- corpora

CORPUS_FILE = "corpus.tsv"
CORPORA = ("project", "snli")
CORPUS_SIZE = 675  # sentences in data/corpus.tsv (a test checks it)
SNLI_ID = "stanfordnlp/snli"


def corpus() -> pd.DataFrame:
    """The project's corpus: columns ``sentence`` and ``topic``, in file order.

    ``data/corpus.tsv`` is UTF-8 with a ``topic<TAB>sentence`` header and one sentence per line:
    natural English sentences written for this book (captions of everyday scenes like SNLI's,
    news, science, sport, cooking, law, medicine, software, …), 4–40 words each, no duplicates.
    Sentences within a topic come in small groups about the same event or subject, so that
    retrieval queries can be written against them.
    """
    frame = pd.read_csv(_data(CORPUS_FILE), sep="\t", quoting=csv.QUOTE_NONE, dtype=str,
                        keep_default_na=False, encoding="utf-8")
    return frame[["sentence", "topic"]]


@functools.cache
def topics() -> tuple[str, ...]:
    """The corpus's topics, in the order they first appear."""
    return tuple(corpus()["topic"].unique())


@functools.cache
def _sentence_topics() -> tuple[tuple[str, int], ...]:
    frame = corpus()
    return tuple((sentence, topics().index(topic)) for sentence, topic in zip(frame["sentence"], frame["topic"]))


def topic_of(text: str) -> int:
    """The index into :func:`topics` of the topic of the corpus sentence that ``text`` starts with
    (a window's first sentence is whole), −1 when none does (a text of another source)."""
    return next((k for sentence, k in _sentence_topics() if text.startswith(sentence)), -1)


def snli(split: str = "validation", n: int | None = None, data_files: str | list[str] | None = None) -> pd.DataFrame:
    """SNLI premises (the Flickr image captions) as columns ``sentence`` and ``topic``.

    Without ``data_files`` the dataset ``stanfordnlp/snli`` is loaded through
    ``datasets.load_dataset`` (needs internet access the first time); with ``data_files`` (JSON
    lines or CSV with a ``premise`` column, and optionally ``label``) those local files are read
    instead. Premises repeat, once per hypothesis: each is kept once, in order of first
    appearance, and the first ``n`` are returned (all when ``n`` is None). SNLI has no topics,
    so every row's topic is ``"snli"``.
    """
    import datasets

    if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 1):
        raise ParameterError("n", "None or an integer ≥ 1", n)
    try:
        if data_files is None:
            rows = datasets.load_dataset(SNLI_ID, split=split)
        else:
            files = [data_files] if isinstance(data_files, str) else list(data_files)
            builder = "csv" if all(str(f).endswith(".csv") for f in files) else "json"
            rows = datasets.load_dataset(builder, data_files={split: files}, split=split)
    except (ConnectionError, OSError, ValueError) as error:
        raise ParameterError("corpus", f"SNLI ({SNLI_ID}, split {split!r}) reachable online or as local "
                             "data_files; it could not be loaded", f"{type(error).__name__}: {error}") from error
    if "premise" not in rows.column_names:
        raise ParameterError("data_files", "SNLI rows with a 'premise' column", rows.column_names)
    premises = pd.unique(pd.Series([p.strip() for p in rows["premise"] if p and p.strip()], dtype=object))
    premises = premises if n is None else premises[:n]
    return pd.DataFrame({"sentence": list(premises), "topic": "snli"})


def load_corpus(name: Literal["project", "snli"] = "project", n: int | None = None, seed: int = 0,
                split: str = "validation") -> pd.DataFrame:
    """The corpus a chapter's ``corpus`` parameter names. With ``n`` smaller than the corpus, a
    seeded uniform sample of ``n`` rows, kept in corpus order; otherwise all of it."""
    if name not in CORPORA:
        raise ParameterError("corpus", "one of " + ", ".join(repr(c) for c in CORPORA), name)
    frame = corpus() if name == "project" else snli(split=split)
    if n is None or n >= len(frame):
        return frame.reset_index(drop=True)
    keep = np.sort(np.random.default_rng(seed).choice(len(frame), size=n, replace=False))
    return frame.iloc[keep].reset_index(drop=True)


# --------------------------------------------------------------------------- chapters 1 and 2

RETRIEVAL_SETS = ("easy", "hard")


def layer_by_layer_sentences() -> list[str]:
    """Chapter 1's set of varied sentences (``data/layer_by_layer_sentences.txt``)."""
    return load_lines("layer_by_layer_sentences.txt")


def retrieval_set(name: str) -> dict[str, list]:
    """Chapter 1's easy or hard retrieval set as ``{"queries", "pool", "relevant"}``, where
    ``relevant[q]`` indexes the pool. Easy: the relevant documents in order, then the
    distractors. Hard: per item its relevant document, negation and role reversal."""
    if name not in RETRIEVAL_SETS:
        raise ValueError(f"retrieval set must be one of {RETRIEVAL_SETS}; got {name!r}")
    data = load_yaml(f"retrieval_{name}.yaml")
    items = data["items"]
    if name == "easy":
        pool = [item["relevant"] for item in items] + list(data["distractors"])
        relevant = list(range(len(items)))
    else:
        pool = [item[key] for item in items for key in ("relevant", "negation", "role_reversal")]
        relevant = [3 * q for q in range(len(items))]
    return {"queries": [item["query"] for item in items], "pool": pool, "relevant": relevant}


def attractor_pairs() -> dict[str, list[str]]:
    """Chapter 2's hard, medium and easy pairs (``data/attractor_pairs.yaml``) as sentences."""
    return {name: [REFERENCE_SENTENCES[key] for key in keys]
            for name, keys in load_yaml("attractor_pairs.yaml").items()}


def published(chapter: str) -> dict[str, Any]:
    """The published curves a chapter overlays (``data/published/<chapter>.yaml``)."""
    return load_yaml(f"published/{chapter}.yaml")
