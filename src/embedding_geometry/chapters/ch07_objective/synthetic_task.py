"""A retrieval task built in code from the book's corpus, and a small encoder that learns it from scratch.

Chapter 7's controlled arm needs a task on which a randomly initialised encoder *learns* to
retrieve within a budget of two CPU cores, and on which the two losses give different training
signals: a query and its document share several concepts, but no surface form.

**Words** (:func:`vocabulary`), from ``data/corpus.tsv``, lower-cased alphabetic words ranked by
frequency (ties alphabetically):

* fillers: the ``n_fillers`` most frequent stop words (scikit-learn's English stop-word list:
  "the", "a", "in", …); they stand between concepts and mean nothing in the task;
* content words: the ``2 C`` most frequent other words of at least three letters.

**Concepts.** A seeded shuffle pairs the content words: concept c has the two surface forms
(w_c, w'_c), *paraphrases* that mean the same here and nothing else.

**Texts** (:func:`sample`). A document holds ``doc_concepts`` distinct concepts, each in one of
its two forms at random, in random order, with ``fillers`` filler words at random places. Its
query holds ``query_concepts`` of the document's concepts, each in the *other* form, in random
order, with fillers. A query is relevant to the one document it was drawn from, and only
through paraphrase: it shares no content word with it, so a model that has not learned the
pairs ranks its document at chance, and a document that holds only some of the query's concepts
is not relevant (the query's concepts compose).

**Retrieval** (:func:`retrieval`): each held-out query ranks the pool of held-out documents by
the score a copy was trained with, at the final depth; recall@k = share of queries whose
document is in the top k, with chance k / |pool| (one relevant document, ranked at random).
Beating chance is a one-sided exact binomial test over queries (scipy's ``binomtest``, level
0.05): a copy that does not beat chance did not learn the task.

**The encoder** (:func:`encoder`): a BERT (the block structure of the book's models: embeddings
with LayerNorm, post-norm blocks of self-attention and a GELU feed-forward) of ``layers`` blocks
and width ``width``, randomly initialised by transformers with torch seeded by the seed, with a
word-level tokenizer over the task's words (``[CLS] w_1 … w_n [SEP]``).
"""

from __future__ import annotations

import collections
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from ...core import corpora, geometry
from ...core.activations import Activations
from ...core.errors import ParameterError
from ...core.models import LoadedModel, ModelInfo, state_sha256

SPECIALS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


@dataclass(frozen=True)
class Task:
    """The task's sizes: concepts C, filler words, concepts per document and per query, fillers
    per text, training pairs, held-out queries (each with its own document in the pool), and the
    seed of the concept pairing and of the texts."""

    concepts: int = 64
    n_fillers: int = 16
    doc_concepts: int = 5
    query_concepts: int = 3
    doc_fillers: int = 3
    query_fillers: int = 1
    train_pairs: int = 3000
    held_out: int = 200
    seed: int = 0

    def check(self) -> None:
        """One-line ParameterError for sizes the corpus or the rules cannot give."""
        if not 1 <= self.query_concepts <= self.doc_concepts <= self.concepts:
            raise ParameterError("query_concepts",
                                 f"1 ≤ query_concepts ≤ doc_concepts ≤ concepts ({self.concepts})",
                                 (self.query_concepts, self.doc_concepts))


@dataclass(frozen=True)
class Words:
    """The task's words: ``fillers`` and ``forms`` [C, 2], the two surface forms of each concept."""

    fillers: tuple[str, ...]
    forms: tuple[tuple[str, str], ...]

    @property
    def vocabulary(self) -> list[str]:
        """Every token of the tokenizer: the special tokens, the fillers, then the content words."""
        return [*SPECIALS, *self.fillers, *(w for pair in self.forms for w in pair)]


def vocabulary(task: Task) -> Words:
    """The fillers and the paired content words of the corpus (see the module docstring)."""
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    counts = collections.Counter(w for s in corpora.corpus()["sentence"] for w in re.findall(r"[a-z]+", s.lower()))
    ranked = sorted(counts, key=lambda w: (-counts[w], w))
    fillers = [w for w in ranked if w in ENGLISH_STOP_WORDS][: task.n_fillers]
    content = [w for w in ranked if w not in ENGLISH_STOP_WORDS and len(w) >= 3]
    if len(fillers) < task.n_fillers or len(content) < 2 * task.concepts:
        raise ParameterError("concepts", f"at most {len(content) // 2} concepts (the corpus's content words, two per "
                             "concept)", task.concepts)
    content = content[: 2 * task.concepts]
    shuffled = np.random.default_rng([task.seed, 1]).permutation(content)
    return Words(fillers=tuple(fillers), forms=tuple((str(a), str(b)) for a, b in zip(shuffled[0::2], shuffled[1::2])))


def _text(words: Words, concepts: Sequence[int], forms: Sequence[int], n_fillers: int, rng: np.random.Generator) -> str:
    """The concepts in the given forms, in their order, with ``n_fillers`` fillers at random places."""
    tokens = [words.forms[c][f] for c, f in zip(concepts, forms)]
    for _ in range(n_fillers):
        tokens.insert(int(rng.integers(0, len(tokens) + 1)), words.fillers[int(rng.integers(len(words.fillers)))])
    return " ".join(tokens)


def sample(task: Task, words: Words, n: int, stream: int) -> list[tuple[str, str]]:
    """``n`` (query, document) pairs from generator stream ``stream`` of the task's seed; no
    document repeats (a text twice in a batch would be its own negative)."""
    rng = np.random.default_rng([task.seed, 2, stream])
    pairs, seen = [], set()
    for _ in range(100 * n):
        if len(pairs) == n:
            break
        concepts = rng.choice(task.concepts, size=task.doc_concepts, replace=False)
        forms = rng.integers(0, 2, size=task.doc_concepts)
        document = _text(words, concepts, forms, task.doc_fillers, rng)
        asked = rng.choice(task.doc_concepts, size=task.query_concepts, replace=False)
        query = _text(words, concepts[asked], 1 - forms[asked], task.query_fillers, rng)
        if document not in seen:
            seen.add(document)
            pairs.append((query, document))
    if len(pairs) < n:
        raise ParameterError("task_pairs", f"fewer pairs than {task.concepts} concepts can make distinct", n)
    return pairs


def texts(task: Task) -> dict[str, Any]:
    """The task's texts: ``train`` pairs and ``held_out`` pairs (query, document), the latter from
    their own generator stream and sharing no document with the training pairs."""
    task.check()
    words = vocabulary(task)
    train = sample(task, words, task.train_pairs, stream=0)
    seen = {d for _, d in train}
    fresh = [pair for pair in sample(task, words, 2 * task.held_out, stream=1) if pair[1] not in seen]
    held_out = fresh[: task.held_out]
    return {"words": words, "train": train, "held_out": held_out}


# --------------------------------------------------------------------------- the encoder

def tokenizer(words: Words):
    """A word-level fast tokenizer over the task's words: ``[CLS] w_1 … w_n [SEP]``."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    vocab = {w: i for i, w in enumerate(words.vocabulary)}
    core = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    core.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    core.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])])
    made = PreTrainedTokenizerFast(tokenizer_object=core, pad_token="[PAD]", unk_token="[UNK]", cls_token="[CLS]",
                                   sep_token="[SEP]", mask_token="[MASK]", model_max_length=64)
    made.padding_side = "right"
    return made


@dataclass(frozen=True)
class Shape:
    """The small encoder's blocks, width, heads and dropout (BERT's feed-forward is 4 × width)."""

    layers: int = 4
    width: int = 64
    heads: int = 4
    dropout: float = 0.0

    def __post_init__(self) -> None:
        if self.width % self.heads:
            raise ParameterError("scratch_width", f"a multiple of the {self.heads} attention heads", self.width)


def encoder(words: Words, shape: Shape, seed: int) -> LoadedModel:
    """A randomly initialised BERT of ``shape`` over the task's words (torch seeded with
    ``seed``), on the CPU, in eval mode, its ``sha256`` the digest of its initial weights."""
    from transformers import BertConfig, BertModel

    made = tokenizer(words)
    config = BertConfig(vocab_size=len(made), hidden_size=shape.width, num_hidden_layers=shape.layers,
                        num_attention_heads=shape.heads, intermediate_size=4 * shape.width, max_position_embeddings=64,
                        hidden_dropout_prob=shape.dropout, attention_probs_dropout_prob=shape.dropout,
                        pad_token_id=made.pad_token_id)
    config._attn_implementation = "eager"
    torch.manual_seed(seed)
    model = BertModel(config, add_pooling_layer=False).eval()
    info = ModelInfo(id=f"small BERT ({shape.layers} blocks, width {shape.width}) [random init, seed {seed}]",
                     source="control", sha256=state_sha256(model), revision=None, model_type="bert",
                     layers=shape.layers, hidden=shape.width, heads=shape.heads, vocab=len(made),
                     parameters=sum(p.numel() for p in model.parameters()), pooling="mean", max_seq_length=64)
    return LoadedModel(model=model, tokenizer=made, info=info, device=torch.device("cpu"))


# --------------------------------------------------------------------------- retrieval

def scores(queries: Activations, documents: Activations, score: str, depth: int = -1) -> np.ndarray:
    """[Q, N] scores of every query against every document at ``depth``: the cosine of the
    mean pools (all tokens) for ``mean_pool``, the mean over the query's real tokens of their
    best cosine among the document's real tokens for ``maxsim`` (the two training scores)."""
    if score == "mean_pool":
        return geometry.cosine_matrix(queries.mean_pool("all")[depth], documents.mean_pool("all")[depth])
    q = [geometry.unit_rows(queries.token_states(depth, i, "all")) for i in range(queries.n_texts)]
    d = [geometry.unit_rows(documents.token_states(depth, j, "all")) for j in range(documents.n_texts)]
    return np.array([[(a @ b.T).max(axis=1).mean() for b in d] for a in q])


def beats_chance(hits: np.ndarray, chance: float, level: float = 0.05) -> dict[str, Any]:
    """Recall with its exact (Clopper–Pearson) 95 % interval, and whether it beats ``chance``:
    the one-sided exact binomial test of the hits against ``chance`` rejects at ``level``."""
    from scipy.stats import binomtest

    successes, n = int(hits.sum()), len(hits)
    test = binomtest(successes, n, chance, alternative="greater")
    low, high = binomtest(successes, n, chance).proportion_ci(0.95, method="exact")
    return {"recall": successes / n, "interval": [float(low), float(high)], "chance": chance, "n_queries": n,
            "p_value": float(test.pvalue), "beats_chance": bool(test.pvalue < level)}
