"""A corpus of any size, read a run of texts at a time: a text file, JSON lines or tab-separated
values with a column of texts, or a dataset on the Hugging Face hub.

    source = open_source("passages.jsonl", column="text")   # checked, counted and hashed, once
    source.n_texts, source.digest
    source.texts(1000, 2000)                                  # texts 1000 … 1999, in corpus order

A *spec* names the corpus (a path is read relative to the folder the command runs in):

========================================  =================================================================
``<path>.jsonl``                          one JSON object a line, its text under ``column``
``<path>.tsv``                            a header line naming the tab-separated columns, then one row a
                                          line, its text under ``column``
``<path>`` (any other name)               one text a line
``hub:<id>``, ``hub:<id>:<split>``,       the dataset ``id`` (split ``train`` unless named) through
``hub:<id>:<config>:<split>``             ``datasets.load_dataset``, its text under ``column``: online, or
                                          from the hub cache (``HF_HOME``) offline
========================================  =================================================================

Blank texts are skipped; the corpus is its other texts in order, the first ``limit`` of them
when ``limit`` is set. Opening a corpus reads it once: every line must decode as UTF-8 and hold
a text of valid Unicode, and there must be at least :data:`MIN_TEXTS` texts. The same pass keeps
each text's place (a file's byte offset, a dataset's row: 8 bytes a text), so that reading texts
``start`` … ``stop`` − 1 costs those texts, not the file before them; the place index is kept per
process (a worker builds it once, on its first shard). A file's ``digest`` is the SHA-256 of the
bytes read; a dataset's, of its texts (each one's UTF-8 bytes and a newline). Every fault is one
:class:`~embedding_geometry.core.errors.ParameterError` naming ``corpus`` (or ``corpus_column``).
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .errors import ParameterError

HUB = "hub:"
MIN_TEXTS = 2
"""The fewest texts a corpus may hold: its statistics are means over pairs of texts."""
EXPECTS = ("None (chapter 3's corpus), a UTF-8 file of at least 2 texts (one a line; .jsonl and .tsv: under "
           "corpus_column) or a hub dataset: hub:ID, hub:ID:SPLIT or hub:ID:CONFIG:SPLIT")
"""What parameter ``corpus`` expects, in words (its rule and every error say it)."""
BATCH = 10_000
"""Rows of a hub dataset read at a time while it is opened."""


@dataclass(frozen=True)
class TextSource:
    """An opened corpus (module docstring): its spec, its column, the cap on its texts, how many
    texts it holds and the digest of what was read. Small and hashable: a shard of a Ray task
    carries it, and each process finds its place index by it."""

    spec: str
    column: str = "text"
    limit: int | None = None
    n_texts: int = 0
    digest: str = ""

    def texts(self, start: int, stop: int) -> list[str]:
        """Texts ``start`` … ``stop`` − 1 (cut at the corpus's end), in corpus order."""
        places = _places(self.spec, self.column, self.limit, _stamp(self.spec))
        if places.digest != self.digest:
            raise ParameterError("corpus", EXPECTS, self.spec, "it changed since the run began; rerun the atlas")
        chosen = places.index[start:min(stop, self.n_texts)]
        if self.spec.startswith(HUB):
            picked = _hub_dataset(self.spec)[[int(i) for i in chosen]] if len(chosen) else {self.column: []}
            return [text.strip() for text in picked[self.column]]
        return _file_texts(Path(self.spec), self.column, chosen)

    def cycled(self, batch: int = 256) -> Iterator[str]:
        """Every text in order, then again from the first, without end (what the head pass cuts
        its windows from, as it cycles chapter 4's corpus)."""
        for start in itertools.cycle(range(0, self.n_texts, batch)):
            yield from self.texts(start, start + batch)


def open_source(spec: str, column: str = "text", limit: int | None = None) -> TextSource:
    """The corpus ``spec`` names (module docstring), read once and checked: a one-line
    ParameterError for a missing, empty or undecodable file, a missing column, a hub dataset
    that cannot be loaded. A file is kept by its absolute path: a worker reads the same file
    whatever its working folder."""
    if not spec.startswith(HUB):
        _stamp(spec)  # a missing file or a folder, named as given
        spec = str(Path(spec).resolve())
    places = _places(spec, column, limit, _stamp(spec))
    return TextSource(spec, column, limit, len(places.index), places.digest)


def of_parameters(params: Mapping[str, Any]) -> TextSource | None:
    """The corpus a chapter's parameters name, opened: ``corpus`` (None: the chapter's own, and
    None here), ``corpus_column``, and ``corpus_texts`` (None: every text; else the first so many)."""
    if params.get("corpus") is None:
        return None
    return open_source(params["corpus"], params.get("corpus_column", "text"), params.get("corpus_texts"))


def _fault(spec: str, detail: str, name: str = "corpus", got: object = None) -> ParameterError:
    return ParameterError(name, EXPECTS if name == "corpus" else f"a column of every text of {spec!r}",
                          spec if got is None else got, detail)


def _stamp(spec: str) -> tuple[int, int] | None:
    """A file's (size, modification time in ns), so that a changed file is read again; a missing
    one or a folder: the one-line fault."""
    if spec.startswith(HUB):
        return None
    path = Path(spec)
    if not path.exists():
        raise _fault(spec, "no such file")
    if not path.is_file():
        raise _fault(spec, "it is a folder, not a file")
    found = path.stat()
    return found.st_size, found.st_mtime_ns


@dataclass(frozen=True)
class Places:
    """Where each text of a corpus is (a file's byte offsets, a dataset's rows) and the digest."""

    index: np.ndarray
    digest: str


@functools.lru_cache(maxsize=2)
def _places(spec: str, column: str, limit: int | None, stamp: tuple[int, int] | None) -> Places:
    """The place of every text of ``spec`` (``stamp``: the file's size and time, so a changed file
    is read again), checked as it is read."""
    places, digest = _hub_places(spec, column, limit) if spec.startswith(HUB) else _file_places(spec, column, limit)
    if len(places) < MIN_TEXTS:
        raise _fault(spec, f"it holds {len(places)} text{'' if len(places) == 1 else 's'}")
    return Places(np.asarray(places, np.int64), digest)


# --------------------------------------------------------------------------- files

def _format(path: Path) -> str:
    return {".jsonl": "jsonl", ".tsv": "tsv"}.get(path.suffix.lower(), "lines")


def _file_places(spec: str, column: str, limit: int | None) -> tuple[list[int], str]:
    """Byte offsets of the texts of a file, checked line by line, and the SHA-256 of the bytes read."""
    path, digest, offsets = Path(spec), hashlib.sha256(), []
    kind, header = _format(path), None
    with path.open("rb") as handle:
        offset = 0
        for number, raw in enumerate(handle, 1):
            if limit is not None and len(offsets) >= limit:
                break
            digest.update(raw)
            here, offset = offset, offset + len(raw)
            line = _decoded(spec, raw, number)
            if kind == "tsv" and header is None:
                header = _header(spec, line, column)
                continue
            if _parsed(spec, kind, line, column, header, number):
                offsets.append(here)
    return offsets, digest.hexdigest()


def _decoded(spec: str, raw: bytes, number: int) -> str:
    try:
        return raw.decode("utf-8").rstrip("\r\n")
    except UnicodeDecodeError:
        raise _fault(spec, f"line {number} is not UTF-8") from None


def _header(spec: str, line: str, column: str) -> list[str]:
    names = line.split("\t")
    if column not in names:
        raise _fault(spec, f"its header names {names[:8]}", "corpus_column", column)
    return names


def _parsed(spec: str, kind: str, line: str, column: str, header: list[str] | None, number: int) -> str:
    """Line ``number``'s text (stripped; "" for a blank one), checked."""
    if not line.strip():
        return ""
    if kind == "lines":
        text = line
    elif kind == "tsv":
        fields = line.split("\t")
        if len(fields) != len(header):
            raise _fault(spec, f"line {number} has {len(fields)} tab-separated fields, the header {len(header)}")
        text = fields[header.index(column)]
    else:
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            raise _fault(spec, f"line {number} is not JSON") from None
        if not isinstance(row, dict) or not isinstance(row.get(column), str):
            raise _fault(spec, f"line {number} has no text under {column!r}", "corpus_column", column)
        text = row[column]
    return _unicode(spec, text, f"line {number}").strip()


def _unicode(spec: str, text: str, where: str) -> str:
    """``text``, which JSON or a dataset may give with a lone surrogate (no tokenizer reads one)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise _fault(spec, f"{where} holds a lone surrogate, not valid Unicode") from None
    return text


def _file_texts(path: Path, column: str, offsets: np.ndarray) -> list[str]:
    """The texts that start at ``offsets`` (checked when the file was opened)."""
    kind, found = _format(path), []
    with path.open("rb") as handle:
        header = handle.readline().decode("utf-8").rstrip("\r\n").split("\t") if kind == "tsv" else None
        for offset in offsets:
            handle.seek(int(offset))
            line = handle.readline().decode("utf-8").rstrip("\r\n")
            found.append(_parsed(str(path), kind, line, column, header, 0))
    return found


# --------------------------------------------------------------------------- the hub

def hub_parts(spec: str) -> tuple[str, str | None, str]:
    """(dataset id, config or None, split) of ``hub:<id>[:<config>]:<split>`` or ``hub:<id>``."""
    parts = spec[len(HUB):].split(":")
    if not parts[0] or len(parts) > 3 or not all(parts):
        raise _fault(spec, "a hub spec is hub:<dataset id>, hub:<id>:<split> or hub:<id>:<config>:<split>")
    if len(parts) == 1:
        return parts[0], None, "train"
    return parts[0], parts[1] if len(parts) == 3 else None, parts[-1]


@functools.lru_cache(maxsize=2)
def _hub_dataset(spec: str):
    """The dataset ``spec`` names, loaded once per process (memory-mapped by ``datasets``)."""
    import datasets

    name, config, split = hub_parts(spec)
    try:
        return datasets.load_dataset(name, config, split=split)
    except Exception as error:  # offline, unknown id or split: which one, in one line
        first = (str(error).strip().splitlines() or [""])[0][:120]
        raise _fault(spec, f"it could not be loaded (online, or from the hub cache offline): "
                           f"{type(error).__name__}: {first}") from error


def _hub_places(spec: str, column: str, limit: int | None) -> tuple[list[int], str]:
    """The rows of a hub dataset whose ``column`` holds a text, checked batch by batch."""
    rows = _hub_dataset(spec)
    if column not in rows.column_names:
        raise _fault(spec, f"the dataset's columns are {rows.column_names[:8]}", "corpus_column", column)
    places, digest = [], hashlib.sha256()
    for start in range(0, len(rows), BATCH):
        for i, text in enumerate(rows[start:start + BATCH][column], start):
            if limit is not None and len(places) >= limit:
                return places, digest.hexdigest()
            if not isinstance(text, str):
                raise _fault(spec, f"row {i} has no text under {column!r}", "corpus_column", column)
            if _unicode(spec, text, f"row {i}").strip():
                places.append(i)
                digest.update(text.encode("utf-8") + b"\n")
    return places, digest.hexdigest()
