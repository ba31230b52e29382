"""Texts longer than one sentence, built from corpus sentences, and the article's sliding windows.

All texts are corpus sentences joined by single spaces, so a text's tokens are its sentences'
tokens in order (WordPiece splits on whitespace first):

    dilution texts   key + f_1 + … + f_k, k = 0..K: one key sentence followed by k unrelated
                     sentences (other topics, seeded); or f_1 + … + f_k + key (key last)
    topic runs       consecutive sentences of one topic, in corpus order, until the text has at
                     least T tokens; the tokenizer then truncates it to exactly T
    documents        a seeded shuffle of the corpus cut into consecutive runs of ≥ n words

The article's ``_encode_long`` splits ``text.split()`` (W words) into windows of ``window`` words
every ``stride`` words,

    windows = [words[i : i + window] for i in range(0, W − window + 1, stride)]

(a text of ≤ ``window`` words is not split), encodes each window and max-pools the window
embeddings dimension by dimension. The model reads at most B = max_length − (special tokens)
tokens of each window, so

    coverage = |⋃ tokens read| / (tokens of the text)              ∈ (0, 1]

with truncation (one window: the first B tokens) or with the windows. Words after the last full
window are never read, and a window of ``window`` words holds more than ``window`` tokens.

The long-document test: each document's sentences are queries (their own sentence vectors);
a query is answered when the nearest document (cosine) is its own, recall@1, split by whether
truncation reads the whole sentence.

Metrics: ``coverage_study`` → long_text {n_docs, words_per_doc, windows_per_doc, token_budget B,
coverage {truncation, windows}, windows_over_limit_fraction (windows of more than B tokens)} and
per_unit "long_text.coverage.windows": what the tokenizer alone decides. ``long_text_study`` →
long_text {those and sentences_beyond_truncation, recall_at_1 {truncation, windows_max, windows_mean: {all,
read_by_truncation, beyond_truncation (None when no sentence is)}}, tokens_per_word (of the
corpus), words_in_budget = B / tokens_per_word, windows_minus_truncation and max_minus_mean
(recall@1 over all sentences)}; per_unit, per document (the sampling unit: a document's
sentences are not independent queries), "long_text.coverage.windows" (its coverage) and, for the
two recall differences, ".<key>.hits" (its sentences' hit differences, summed) and
".<key>.sentences" (how many it has): the metric is their ratio of means.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from ..core.geometry import cosine_matrix, unit_rows
from ..core.ranking import recall_per_query

WindowPooling = Literal["max", "mean"]
WINDOW_POOLINGS = ("max", "mean")


# --------------------------------------------------------------------------- building texts


def dilution_sets(
    sentences: Sequence[str], topics: Sequence[str], n_keys: int, k_max: int, seed: int = 0, key_last: bool = False
) -> dict[str, list]:
    """``n_keys`` key sentences (seeded) and, for each, texts key + k fillers for k = 0..k_max
    (``key_last``: the k fillers, then the key), the fillers drawn (seeded, without repeats)
    from topics other than the key's; the same seed gives the same keys and fillers.
    → {"keys": [str], "fillers": [[str] * k_max], "texts": [[str] * (k_max + 1)]}"""
    topics = np.asarray(topics)
    rng = np.random.default_rng(seed)
    if not 1 <= n_keys <= len(sentences):
        raise ValueError(f"n_keys must be in [1, {len(sentences)}]; got {n_keys}")
    keys = np.sort(rng.choice(len(sentences), size=n_keys, replace=False))
    result: dict[str, list] = {"keys": [], "fillers": [], "texts": []}
    for key in keys:
        others = np.flatnonzero(topics != topics[key])
        if len(others) < k_max:
            raise ValueError(f"only {len(others)} sentences outside the key's topic; k_max is {k_max}")
        fillers = [sentences[i] for i in rng.choice(others, size=k_max, replace=False)]
        result["keys"].append(sentences[key])
        result["fillers"].append(fillers)
        order = (lambda k: [*fillers[:k], sentences[key]]) if key_last else (lambda k: [sentences[key], *fillers[:k]])
        result["texts"].append([" ".join(order(k)) for k in range(k_max + 1)])
    return result


KEY_POSITIONS = ("key first", "key last")


def dilution_texts(
    sentences: Sequence[str], topics: Sequence[str], n_keys: int, k_max: int, seed: int = 0
) -> dict[str, dict[str, list]]:
    """``dilution_sets`` with the key first and with the key last (same keys and fillers), by
    position name (KEY_POSITIONS); ``flat_texts`` lists their texts in the order
    ``pooling.dilution_study`` reads them."""
    return {
        position: dilution_sets(sentences, topics, n_keys, k_max, seed, key_last=position == "key last")
        for position in KEY_POSITIONS
    }


def flat_texts(sets: dict[str, dict[str, list]]) -> list[str]:
    """Every text of ``dilution_texts``: per position, per key, k = 0..k_max."""
    return [text for found in sets.values() for texts in found["texts"] for text in texts]


def topic_runs(sentences: Sequence[str], topics: Sequence[str], tokenizer, n_tokens: int) -> dict[str, str]:
    """Per topic, its sentences in corpus order joined until the text has at least ``n_tokens``
    tokens (special tokens included); topics whose sentences are too few are left out."""
    runs: dict[str, str] = {}
    for topic in dict.fromkeys(topics):
        text = ""
        for sentence, label in zip(sentences, topics):
            if label != topic:
                continue
            text = f"{text} {sentence}".strip()
            if len(tokenizer(text)["input_ids"]) >= n_tokens:
                runs[str(topic)] = text
                break
    if not runs:
        raise ValueError(f"no topic has enough sentences for a text of {n_tokens} tokens")
    return runs


def documents(sentences: Sequence[str], min_words: int, n_docs: int, seed: int = 0) -> list[list[int]]:
    """``n_docs`` documents as lists of sentence indices: a seeded shuffle of the sentences cut
    into consecutive runs of at least ``min_words`` words each."""
    docs = _cut(sentences, min_words, seed)
    if len(docs) < n_docs:
        raise ValueError(f"the corpus holds only {len(docs)} documents of ≥ {min_words} words; asked for {n_docs}")
    return docs[:n_docs]


def document_count(sentences: Sequence[str], min_words: int, seed: int = 0) -> int:
    """How many documents of ≥ ``min_words`` words :func:`documents` can cut from ``sentences`` with ``seed``."""
    return len(_cut(sentences, min_words, seed))


def _cut(sentences: Sequence[str], min_words: int, seed: int) -> list[list[int]]:
    """Every complete run of ≥ ``min_words`` words of a seeded shuffle of the sentences, in order."""
    order = np.random.default_rng(seed).permutation(len(sentences))
    docs, current, words = [], [], 0
    for i in order:
        current.append(int(i))
        words += len(sentences[i].split())
        if words >= min_words:
            docs.append(current)
            current, words = [], 0
    return docs


# --------------------------------------------------------------------------- the article's windows


def word_windows(text: str, window: int = 256, stride: int = 128) -> list[str]:
    """The article's ``_encode_long`` windows: ``window`` words every ``stride`` words, only full
    windows (a text of ≤ ``window`` words is returned whole)."""
    if window < 1 or stride < 1:
        raise ValueError(f"window and stride must be ≥ 1; got {window}, {stride}")
    words = text.split()
    if len(words) <= window:
        return [text]
    return [" ".join(words[i : i + window]) for i in range(0, len(words) - window + 1, stride)]


def window_starts(n_words: int, window: int, stride: int) -> list[int]:
    """First word of each window ``word_windows`` makes of a text of ``n_words`` words."""
    return [0] if n_words <= window else list(range(0, n_words - window + 1, stride))


def pool_windows(vectors: np.ndarray, method: WindowPooling = "max") -> np.ndarray:
    """One vector from window embeddings [n_windows, D]: each is L2-normalised first (what
    ``model.encode`` returns for a model with a Normalize module), then the per-dimension max
    (the article) or mean → [D]."""
    if method not in WINDOW_POOLINGS:
        raise ValueError(f"window pooling must be one of {WINDOW_POOLINGS}; got {method!r}")
    unit = unit_rows(vectors, "window embeddings")
    return unit.max(axis=0) if method == "max" else unit.mean(axis=0)


# --------------------------------------------------------------------------- what the model reads


def word_token_offsets(tokenizer, text: str) -> np.ndarray:
    """Token offsets of the words of ``text.split()``: word w owns tokens offsets[w]:offsets[w+1]
    (no special tokens) → [W + 1]."""
    words = text.split()
    # a whole long text, past the model's limit on purpose: no warning that it is longer
    encoding = tokenizer(words, is_split_into_words=True, add_special_tokens=False, verbose=False)
    counts = np.bincount([w for w in encoding.word_ids() if w is not None], minlength=len(words))
    return np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)


def budget(tokenizer, max_length: int) -> int:
    """B: how many of a text's own tokens fit in ``max_length`` next to the special tokens."""
    return max_length - tokenizer.num_special_tokens_to_add(pair=False)


def read_mask(
    offsets: np.ndarray, n_budget: int, starts: Sequence[int] | None = None, window: int | None = None
) -> np.ndarray:
    """Which tokens the model reads ([offsets[-1]] bool): the first ``n_budget`` tokens
    (truncation, ``starts`` None) or, per window starting at word s of ``window`` words, the
    first ``n_budget`` tokens of words s..s + window − 1."""
    total = int(offsets[-1])
    mask = np.zeros(total, dtype=bool)
    if starts is None:
        mask[:n_budget] = True
        return mask
    n_words = len(offsets) - 1
    for s in starts:
        first, last = int(offsets[s]), int(offsets[min(s + window, n_words)])
        mask[first : min(last, first + n_budget)] = True
    return mask


def sentence_spans(offsets: np.ndarray, word_counts: Sequence[int]) -> list[tuple[int, int]]:
    """Token span [start, end) of each sentence of a text made of sentences of
    ``word_counts`` words, joined in order."""
    bounds = np.concatenate([[0], np.cumsum(word_counts)])
    return [(int(offsets[a]), int(offsets[b])) for a, b in zip(bounds[:-1], bounds[1:])]


def tokens_per_word(tokenizer, texts: Sequence[str]) -> float:
    """Tokens (special tokens excluded) per whitespace word over ``texts``."""
    words = sum(len(t.split()) for t in texts)
    tokens = sum(len(x) for x in tokenizer(list(texts), add_special_tokens=False)["input_ids"])
    return tokens / words


# --------------------------------------------------------------------------- the long-document test


@dataclass(frozen=True)
class LongDocuments:
    """Documents built from corpus sentences and the article's windows of each.

    documents  per document, the indices of its sentences in order
    texts      per document, its sentences joined by spaces
    windows    per document, ``word_windows(text, window, stride)``"""

    documents: list[list[int]]
    texts: list[str]
    windows: list[list[str]]
    window: int
    stride: int

    @property
    def encoded(self) -> list[str]:
        """What the study encodes, in order: every document whole (truncated by the model), then
        every window of document 0, of document 1, …"""
        return self.texts + [w for ws in self.windows for w in ws]


def long_documents(
    sentences: Sequence[str], min_words: int, n_docs: int, window: int = 256, stride: int = 128, seed: int = 0
) -> LongDocuments:
    """``n_docs`` documents of ≥ ``min_words`` words from a seeded shuffle of ``sentences``, with
    their windows of ``window`` words every ``stride`` words."""
    docs = documents(sentences, min_words, n_docs, seed)
    texts = [" ".join(sentences[i] for i in doc) for doc in docs]
    return LongDocuments(docs, texts, [word_windows(t, window, stride) for t in texts], window, stride)


def coverage_study(
    docs: LongDocuments, tokenizer, max_length: int, key: str = "long_text", samples: bool = True
) -> dict[str, object]:
    """{long_text, per_unit} of what a model that reads ``max_length`` tokens (special tokens
    included) reads of ``docs`` — the tokenizer alone decides it, no forward pass: n_docs,
    words_per_doc, windows_per_doc, token_budget, coverage {truncation, windows},
    windows_over_limit_fraction; per_unit "long_text.coverage.windows" (per document). ``key``
    renames long_text (an exercise's run), ``samples`` False leaves per_unit out."""
    n_budget = budget(tokenizer, max_length)
    coverage, over_limit = {"truncation": [], "windows": []}, []
    for text in docs.texts:
        offsets = word_token_offsets(tokenizer, text)
        starts = window_starts(len(text.split()), docs.window, docs.stride)
        coverage["truncation"].append(read_mask(offsets, n_budget).mean())
        coverage["windows"].append(read_mask(offsets, n_budget, starts, docs.window).mean())
        over_limit += [int(offsets[min(s + docs.window, len(offsets) - 1)] - offsets[s]) > n_budget for s in starts]
    found = {
        "n_docs": len(docs.texts),
        "words_per_doc": float(np.mean([len(t.split()) for t in docs.texts])),
        "windows_per_doc": float(np.mean([len(ws) for ws in docs.windows])),
        "token_budget": n_budget,
        "coverage": {k: float(np.mean(v)) for k, v in coverage.items()},
        "windows_over_limit_fraction": float(np.mean(over_limit)),
    }
    if not samples:
        return {key: found}
    return {key: found, "per_unit": {f"{key}.coverage.windows": np.asarray(coverage["windows"])}}


def long_text_study(
    docs: LongDocuments,
    vectors: np.ndarray,
    sentences: Sequence[str],
    sentence_vectors: np.ndarray,
    tokenizer,
    max_length: int,
    key: str = "long_text",
    samples: bool = True,
) -> dict[str, object]:
    """{long_text, per_unit} (see the module docstring) of ``docs``, whose ``encoded`` texts have the
    (unnormalised) embeddings ``vectors`` [len(encoded), D]; each document is searched for with
    its own sentences' vectors (``sentence_vectors`` [N, D], rows of ``sentences``); the model
    reads ``max_length`` tokens, special tokens included. ``key`` renames long_text (an exercise's
    run), ``samples`` False leaves per_unit out."""
    n_budget = budget(tokenizer, max_length)
    bounds = np.cumsum([len(docs.texts)] + [len(ws) for ws in docs.windows])
    windows = [vectors[a:b] for a, b in zip(bounds[:-1], bounds[1:])]
    pooled = {
        "truncation": np.asarray(vectors[: len(docs.texts)]),
        **{f"windows_{m}": np.stack([pool_windows(w, m) for w in windows]) for m in WINDOW_POOLINGS},
    }
    read = coverage_study(docs, tokenizer, max_length)
    read_by_truncation, queries, relevant = [], [], []
    for d, (doc, text) in enumerate(zip(docs.documents, docs.texts)):
        offsets = word_token_offsets(tokenizer, text)
        read_by_truncation += [
            end <= n_budget for _, end in sentence_spans(offsets, [len(sentences[i].split()) for i in doc])
        ]
        queries += doc
        relevant += [d] * len(doc)
    recall, hits = _recall_by_reach(
        pooled, np.asarray(sentence_vectors)[queries], relevant, np.asarray(read_by_truncation)
    )
    found = {
        **read["long_text"],
        "sentences_beyond_truncation": float(np.mean(~np.asarray(read_by_truncation))),
        "recall_at_1": recall,
        "tokens_per_word": tokens_per_word(tokenizer, sentences),
    }
    found["words_in_budget"] = n_budget / found["tokens_per_word"]
    per_unit = dict(read["per_unit"])
    for name, (a, b) in {
        "windows_minus_truncation": ("windows_max", "truncation"),
        "max_minus_mean": ("windows_max", "windows_mean"),
    }.items():
        per_unit[f"long_text.{name}.hits"] = np.bincount(relevant, weights=hits[a] - hits[b], minlength=len(docs.texts))
        per_unit[f"long_text.{name}.sentences"] = np.bincount(relevant, minlength=len(docs.texts)).astype(np.float64)
    found.update(
        windows_minus_truncation=recall["windows_max"]["all"] - recall["truncation"]["all"],
        max_minus_mean=recall["windows_max"]["all"] - recall["windows_mean"]["all"],
    )
    return {key: found, "per_unit": per_unit} if samples else {key: found}


def _recall_by_reach(
    pooled: dict[str, np.ndarray], queries: np.ndarray, relevant: list[int], read: np.ndarray
) -> tuple[dict[str, dict[str, float | None]], dict[str, np.ndarray]]:
    """recall@1 of each method's document vectors for the sentence ``queries``: over all of
    them, over those truncation reads whole (``read``) and over the rest (None when empty); and
    each method's per-query hits (1 when the query's own document ranks first) → [Q]."""
    hits = {method: recall_per_query(cosine_matrix(queries, docs), relevant, 1) for method, docs in pooled.items()}
    groups = {"all": np.ones_like(read), "read_by_truncation": read, "beyond_truncation": ~read}
    recall = {method: {group: float(np.mean(h[mask])) if mask.any() else None for group, mask in groups.items()}
              for method, h in hits.items()}
    return recall, hits
