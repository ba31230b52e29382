"""Texts of exactly T tokens, made of consecutive whole sentences, and the sentence sources they
are cut from (the book's corpus, cycled; WikiText-103).

A :class:`Window` is what chapter 4's streaming pass reads: T tokenizer pieces, [CLS] and [SEP]
included, with no padding, each piece labelled with its sentence (−1 for special tokens) and
marked when it is a *separator*: the closing [SEP], or the final ``.``, ``!`` or ``?`` of a
whole sentence. :class:`TextRecord` is what the results JSON records about the texts read.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from . import corpora
from .errors import ParameterError

SENTENCE_END = (".", "!", "?")
SOURCES = ("corpus", "wikitext")
"""What a chapter's ``texts`` parameter may name (see :func:`sentence_stream`)."""
FIRST_TEXTS = 20
"""How many texts a :class:`TextRecord` keeps verbatim (all are hashed)."""


@dataclass(frozen=True)
class Window:
    """One text of exactly T tokens made of consecutive sentences.

    text            what the model reads (the last sentence possibly cut, see :func:`windows`)
    input_ids       int64 [T]  [CLS] … [SEP], no padding
    tokens          T tokenizer pieces
    sentence_ids    int64 [T]  sentence index of each token, −1 for special tokens
    separators      bool  [T]  [SEP] and the sentence-final . ! ? of whole sentences
    whole_sentences how many of its sentences are complete
    """

    text: str
    input_ids: np.ndarray
    tokens: list[str]
    sentence_ids: np.ndarray
    separators: np.ndarray
    whole_sentences: int


def windows(tokenizer, sentences: Iterable[str], n_texts: int, length: int = 128) -> Iterator[Window]:
    """``n_texts`` texts of exactly ``length`` tokens (T, [CLS] and [SEP] included).

    Sentences are taken in order and joined with a space until the text reaches T tokens. All
    of a text's sentences are whole except, usually, the last one, which is cut at the T-th token
    (no padding, so every position is a real token); the next text starts with the next sentence.
    Blank sentences are skipped. Raises ParameterError when ``sentences`` run out.
    """
    if isinstance(length, bool) or not isinstance(length, int) or length < 4:
        raise ParameterError("text_length", "an integer ≥ 4", length)
    stream = (s.strip() for s in sentences if s.strip())
    for made in range(n_texts):
        chosen: list[str] = []
        while True:
            sentence = next(stream, None)
            if sentence is None:
                raise ParameterError("n_texts", f"at most {made} texts of {length} tokens from these sentences",
                                     n_texts)
            chosen.append(sentence)
            encoding = tokenizer(" ".join(chosen), truncation=True, max_length=length,
                                 return_offsets_mapping=True, return_special_tokens_mask=True)
            if len(encoding["input_ids"]) == length:
                break
        yield _window(tokenizer, chosen, encoding)


def _window(tokenizer, chosen: list[str], encoding) -> Window:
    joined = " ".join(chosen)
    starts = np.cumsum([0] + [len(s) + 1 for s in chosen[:-1]])
    special = np.asarray(encoding["special_tokens_mask"], bool)
    offsets = np.asarray(encoding["offset_mapping"])
    sentence_ids = np.where(special, -1, np.searchsorted(starts, offsets[:, 0], side="right") - 1)
    end = int(offsets[~special][-1, 1])
    whole = len(chosen) - (end < len(joined))
    ids = np.asarray(encoding["input_ids"], np.int64)
    last_of_sentence = np.append(sentence_ids[1:] != sentence_ids[:-1], True) & (sentence_ids >= 0)
    pieces = np.array([joined[a:b] for a, b in offsets], dtype=object)
    final_stop = last_of_sentence & (sentence_ids < whole) & np.isin(pieces, SENTENCE_END)
    return Window(text=joined[:end], input_ids=ids, tokens=tokenizer.convert_ids_to_tokens(ids.tolist()),
                  sentence_ids=sentence_ids.astype(np.int64),
                  separators=final_stop | (ids == tokenizer.sep_token_id), whole_sentences=whole)


def from_source(tokenizer, source: str, n_texts: int, length: int = 128, seed: int = 0) -> Iterator[Window]:
    """The first ``n_texts`` :func:`windows` of the sentences ``source`` names
    (:func:`sentence_stream`): every call gives the same texts, from the start."""
    return windows(tokenizer, sentence_stream(source, seed), n_texts, length)


# --------------------------------------------------------------------------- sentence sources

def cycled(sentences: Sequence[str], seed: int = 0) -> Iterator[str]:
    """The sentences in their order, then again in a new seeded random order, and so on: a
    source for more texts than one pass over a small corpus gives."""
    sentences = list(sentences)
    if not sentences:
        raise ParameterError("sentences", "a non-empty list of sentences", sentences)
    yield from sentences
    rng = np.random.default_rng(seed)
    while True:
        yield from (sentences[i] for i in rng.permutation(len(sentences)))


def sentence_stream(source: str, seed: int = 0) -> Iterator[str]:
    """The sentences a chapter's ``texts`` parameter names, from the start: ``"corpus"``, the
    book's corpus :func:`cycled` with ``seed``; ``"wikitext"``, :func:`wikitext_sentences`.
    Every call starts a new stream, so two calls give the same texts through :func:`windows`."""
    if source not in SOURCES:
        raise ParameterError("texts", "one of " + ", ".join(map(repr, SOURCES)), source)
    if source == "corpus":
        return cycled(corpora.corpus()["sentence"], seed)
    return wikitext_sentences()


def wikitext_sentences(data_files: str | Path | None = None,
                       name: str = "Salesforce/wikitext", config: str = "wikitext-103-raw-v1") -> Iterator[str]:
    """Sentences of WikiText-103 (raw), streamed with ``datasets`` (needs the Hugging Face hub),
    or of a local text file in the same one-paragraph-per-line format (``data_files``).
    Headings (`` = Title = ``) and blank lines are skipped; paragraphs are split after a
    space-separated ``.``, ``!`` or ``?`` (WikiText's tokenisation keeps "U.S." whole)."""
    from datasets import load_dataset

    try:
        rows = (load_dataset(name, config, split="train", streaming=True) if data_files is None
                else load_dataset("text", data_files=str(data_files), split="train", streaming=True))
        for row in rows:
            yield from split_wikitext(row["text"])
    except (ConnectionError, OSError) as error:
        raise ParameterError("texts", f"'corpus' offline ({name} could not be read: {type(error).__name__})",
                             "wikitext") from error


def split_wikitext(line: str) -> list[str]:
    """The sentences of one WikiText line, with its ``@-@``-style number joiners undone."""
    line = line.strip()
    if not line or line.startswith("="):
        return []
    line = re.sub(r" @([-,.])@ ", r"\1", line)
    return [s for s in re.split(r"(?<= [.!?]) +", line) if s.strip()]


# --------------------------------------------------------------------------- what the results record

@dataclass
class TextRecord:
    """What the results record about the texts: the first ones verbatim, a SHA-256 of all
    (each text's UTF-8 bytes followed by a newline, in order), and counts."""

    first: list[str] = field(default_factory=list)
    count: int = 0
    whole_sentences: int = 0
    digest: object = field(default_factory=hashlib.sha256, repr=False)

    def add(self, window: Window) -> None:
        if len(self.first) < FIRST_TEXTS:
            self.first.append(window.text)
        self.count += 1
        self.whole_sentences += window.whole_sentences
        self.digest.update(window.text.encode() + b"\n")

    def to_dict(self) -> dict:
        return {"first": self.first, "count": self.count, "sha256": self.digest.hexdigest(),
                "whole_sentences_per_text": self.whole_sentences / max(self.count, 1)}
