"""Every chapter's parameters, the rule each must satisfy, and what each chapter's computations
need of them: the book's registry of these rules, derived. A chapter package keeps its own rules
and needs in its ``rules`` module (``RULES``: its parameters' rules; ``NEEDS``), found by its
ledger's ``chapter:`` (:func:`chapters`; imported when first asked for, so that a chapter's rules
can use the rule sets shared here: :data:`MODEL`, :data:`CONTROLS`, :data:`COMPARED`,
:func:`words`, :func:`distinct`, :func:`positions`). A chapter with no package declares its
parameters in its ledger (``parameters:``); the book's own pages, which are no chapters, are in
:data:`PAGES`.

A chapter notebook's ``parameters`` cell declares the names and defaults (what papermill
overrides); ``CHAPTERS`` says what each value must be alone, and ``NEEDS`` what the chapter's
computations need of its values together and of what the model's tokenizer makes of its texts
(a pair of tokens within a text needs two word tokens; a rank correlation three texts).
:meth:`Chapter.open <embedding_geometry.book.chapter.Chapter.open>` checks both before any
forward pass (:func:`check`); the build checks the rules and the needs that do not read the model
before any chapter runs. The page's parameter table (:func:`embedding_geometry.book.pages.parameter_table`)
shows the rule's ``expects`` text, and each need's, beside the cell's comment. A name in the
cell with no rule here, or a rule with no name in the cell, is a programming error that the
tests catch.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Mapping
from types import ModuleType
from typing import Any

from . import parameters as p
from .claims import ledger
from .claims.ledger import LedgerError
from ..core import corpora, windows
from ..studies import retrieval
from ..studies.long_texts import document_count

MODEL = {
    "model": p.text,
    "device": p.one_of("auto", "cpu", "cuda"),
    "batch_size": p.integer(1, 4096),
    "seed": p.integer(0, 2**32 - 1),
    "trust_remote_code": p.boolean,
}
"""Every measuring chapter: which model, where it runs, how it is batched and seeded."""

CONTROLS = {
    "random_control": p.boolean,
    "control_seeds": p.integer(1, 64),
}
"""Chapters with random-init controls: whether to run them, and how many seeds of each (their
spread is the null distribution a trained model is compared with)."""

COMPARED = {
    "models": p.text_list(0),
    **CONTROLS,
}
"""Chapters that compare models: more models, and random-init controls of each trained one."""

unit = p.number(0.0, 1.0)
CLS_POSITIONS = 102
"""The shortest text whose [CLS] attention reaches every position bucket of chapter 5
(``chapters.ch05_without_tears.cls_attention.MIN_POSITIONS``; a test checks that they agree)."""

CHAPTERS: dict[str, dict[str, p.Rule]] = {  # the chapters whose rules are not yet in their package
    "00_the_model": {**MODEL, "extra_sentences": p.text_list(0)},
    "00b_primer": {
        **MODEL, "pair": p.sentence_pair, "n_texts": p.integer(2, corpora.CORPUS_SIZE),
        "centering": unit, "toy_offset": p.number(0.0, 10.0),
        "toy_elongation": p.number(0.001, 1.0), "toy_stretch": p.number(0.0, 0.5),
    },
    "01_layer_by_layer": {
        **MODEL, "models": p.model_list, **CONTROLS,
        "sentences": p.optional(p.text_list(3)),
        "easy_set": p.optional(p.retrieval_set), "hard_set": p.optional(p.retrieval_set),
        "easy_k": p.integer(1), "hard_k": p.integer(1),
    },
    "04_attention_context_similarity": {
        **MODEL, "models": p.text_list(0),
        "texts": p.one_of(*windows.SOURCES), "n_texts": p.integer(1),
        "text_length": p.integer(4, 8192), "q": unit, "attention_threshold": unit,
        "sensitivity_thresholds": p.number_list(0.0, 1.0), "common_min_count": p.integer(2),
        "repeat_share_threshold": unit, "common_focus_threshold": unit,
        "matrix_size": p.integer(2, 512),
    },
    "05_embeddings_without_tears": {
        **MODEL, **COMPARED,
        "pair_sample": p.optional(p.integer(2)),
        "fit_fraction": p.number(0.05, 0.95), "n_keys": p.integer(1), "k_max": p.integer(1),
        "n_positions": p.optional(p.integer(CLS_POSITIONS)),
    },
    "06_search_in_practice": {
        **MODEL, "models": p.text_list(0), "pair_sample": p.optional(p.integer(2)),
        "n_long_docs": p.integer(2), "long_words": p.integer(2), "window_words": p.integer(1),
        "stride_words": p.integer(1), "reranker": p.optional(p.text), "rerank_depth": p.integer(1),
        "finetune": p.boolean, "finetune_model": p.optional(p.text), "finetune_seeds": p.integer(1, 64),
        "finetune_epochs": p.integer(1, 10_000),
    },
}

PAGES: dict[str, dict[str, p.Rule]] = {
    "98_performance": {"bench_file": p.text},
    "99_claims_dashboard": {"chapters": p.text_list(0)},
}
"""The book's own pages that are no chapters, and their parameters."""


# --------------------------------------------------------------------------- needs
# What each chapter's computations need of its values together and of its texts as the model's
# tokenizer reads them (parameters.need: the parameter an error names, what is needed, whether
# the check reads the model). Each is checked before any forward pass.

def _texts(value: Any) -> dict[str, str]:
    """The texts of a parameter's value, by where each stands: a list ("text 2"), a retrieval set
    ("query 1", "pool text 3"), a mapping of pairs ("pair 'mine', sentence 2"); None: none."""
    if isinstance(value, Mapping) and "pool" in value:
        return {**{f"query {i + 1}": t for i, t in enumerate(value["queries"])},
                **{f"pool text {i + 1}": t for i, t in enumerate(value["pool"])}}
    if isinstance(value, Mapping):
        return {f"pair {name!r}, sentence {i + 1}": t for name, pair in value.items() for i, t in enumerate(pair)}
    return {f"text {i + 1} of {len(value)}": t for i, t in enumerate(value or [])}


def words(name: str, at_least: int, why: str) -> p.Need:
    """Each text of parameter ``name`` has at least ``at_least`` word tokens once tokenized."""
    plural = "" if at_least == 1 else "s"

    @p.need(name, f"texts of at least {at_least} word token{plural} each once tokenized ({why})", model=True)
    def enough_words(values, view):
        return p.fewer_words(_texts(values[name]), view, at_least)

    return enough_words


def distinct(name: str, why: str) -> p.Need:
    """No two texts of parameter ``name`` read alike once tokenized."""

    @p.need(name, f"texts that differ once tokenized ({why})", model=True)
    def differ(values, view):
        return p.read_alike(_texts(values[name]), view)

    return differ


def positions(name: str) -> p.Need:
    """Parameter ``name`` (a length in tokens) within the model's positions."""

    @p.need(name, "at most as many tokens as the model has positions", model=True)
    def within_positions(values, view):
        limit = view.positions
        return None if values[name] <= limit else (values[name], f"this model has {limit} positions")

    return within_positions


@p.need("n_positions", "a length the model reads whole: at most its max_seq_length (None: that length, "
        f"itself at least {CLS_POSITIONS})", model=True)
def _positions_within_model(values, view):
    chosen = view.max_length if values["n_positions"] is None else values["n_positions"]
    fits = CLS_POSITIONS <= chosen <= view.max_length
    return None if fits else (values["n_positions"], f"this model reads {view.max_length} tokens")


@p.need("n_keys", "at most as many key sentences as the corpus has")
def _keys_within_corpus(values):
    n = len(corpora.corpus())
    return None if values["n_keys"] <= n else (values["n_keys"], f"the corpus has {n} sentences")


@p.need("k_max", "at most as many fillers as the corpus has sentences outside its largest topic (a key's "
        "fillers come from other topics)")
def _fillers_within_corpus(values):
    topics = corpora.corpus()["topic"]
    n = len(topics) - int(topics.value_counts().max())
    return None if values["k_max"] <= n else (values["k_max"], f"{n} sentences lie outside the largest topic")


EXERCISE_SEED = 1
"""Chapter 5's exercise splits the corpus with ``fit_fraction`` and seed 1 too (its split with fit fraction 0.2
leaves every part large enough for any seed)."""


def _split_shortfall(fraction: float, seed: int) -> str | None:
    """What chapter 5's split of its judged corpus by ``fraction`` and ``seed`` leaves too small, or None."""
    from ..chapters.ch05_without_tears import whitening  # loads torch: the site build and CLI read rules with no model

    _, topics, queries = retrieval.judged_corpus()
    return whitening.split_shortfall(queries["relevant"], topics, fraction, seed)


@p.need("fit_fraction", "a split of the corpus (with seed, and with seed 1 for the exercise) that leaves a "
        "judged query a relevant held-out sentence, and each topic domain of the transfer test 2 sentences to fit "
        "and to hold out")
def _fit_split_leaves_enough(values):
    for seed in (values["seed"], EXERCISE_SEED):
        short = _split_shortfall(values["fit_fraction"], seed)
        if short:
            return values["fit_fraction"], f"with seed {seed}, {short}"
    return None


EXERCISE_LONG_WORDS = 300
"""Chapter 6's exercise cuts documents of this many words too (``long_words_300``)."""


@p.need("n_long_docs", f"at most as many documents as the shuffled corpus gives of long_words words, and of "
        f"{EXERCISE_LONG_WORDS} (the exercise's)")
def _documents_within_corpus(values):

    sentences = corpora.corpus()["sentence"].tolist()
    for words in (values["long_words"], EXERCISE_LONG_WORDS):
        n = document_count(sentences, words, values["seed"])
        if values["n_long_docs"] > n:
            return values["n_long_docs"], f"the corpus gives {n} documents of ≥ {words} words"
    return None


NEEDS: dict[str, tuple[p.Need, ...]] = {
    "00_the_model": (words("extra_sentences", 1, "a word token to measure"),),
    "00b_primer": (words("pair", 1, "MaxSim matches word tokens"),),
    "01_layer_by_layer": (
        words("sentences", 2, "within-sentence cosines pair two tokens of a text"),
        distinct("sentences", "a correlation over texts needs texts that differ"),
        words("easy_set", 1, "a word token to measure"), words("hard_set", 1, "a word token to measure"),
    ),
    "04_attention_context_similarity": (positions("text_length"),),
    "05_embeddings_without_tears": (_keys_within_corpus, _fillers_within_corpus, _fit_split_leaves_enough,
                                    _positions_within_model),
    "06_search_in_practice": (_documents_within_corpus,),
}


@functools.cache
def _packages() -> dict[str, ModuleType]:
    """Each chapter package's ``rules`` module, by its chapter's slug (the ``chapter:`` of the
    package's ``ledger.yaml``), imported on first use."""
    found = {}
    for slug, where in ledger.ledgers().items():
        if where.name == ledger.CHAPTER_LEDGER and (where.parent / "rules.py").is_file():
            found[slug] = importlib.import_module(f"{__package__.rsplit('.', 1)[0]}.chapters.{where.parent.name}.rules")
    return found


def chapters() -> dict[str, dict[str, p.Rule]]:
    """Every rule table of the book, by slug: each chapter package's ``RULES`` on top of
    :data:`MODEL`, each table still written in :data:`CHAPTERS`, and the pages' (:data:`PAGES`)."""
    packaged = {slug: {**MODEL, **module.RULES} for slug, module in _packages().items()}
    return dict(sorted({**CHAPTERS, **packaged, **PAGES}.items()))


def rules_for(slug: str) -> dict[str, p.Rule]:
    """The rule table of chapter ``slug`` (:func:`chapters`), or the rules its ledger declares
    (``parameters:``, read by :func:`parameters.declared`) on top of :data:`MODEL`; KeyError names the
    known chapters when there are neither."""
    known = chapters()
    if slug in known:
        return known[slug]
    try:
        found = ledger.load(slug)
    except FileNotFoundError:
        raise KeyError(f"no parameter rules for chapter {slug!r}: write its ledger, data/claims/{slug}.yaml "
                       f"(CONTRIBUTING.md); chapters with rules: {sorted(known)}") from None
    try:
        return {**MODEL, **p.declared(found.parameters)}
    except ValueError as error:
        raise LedgerError(f"{slug}.yaml: {error}") from None


def needs_for(slug: str) -> tuple[p.Need, ...]:
    """The needs of chapter ``slug``: its package's ``NEEDS``, or those written in :data:`NEEDS` (none
    for a chapter that computes nothing on its values)."""
    rules_for(slug)
    module = _packages().get(slug)
    return tuple(module.NEEDS) if module is not None else NEEDS.get(slug, ())


def check(slug: str, values: Mapping[str, Any], view: p.ModelView | None = None) -> dict[str, Any]:
    """Every value of ``values`` (all of chapter ``slug``'s parameters) checked by its rule, then
    the chapter's needs — those that read the model only with ``view``; returns the checked
    values. The first fault is a one-line ParameterError."""
    checked = p.validate(rules_for(slug), **values)
    p.check_needs(needs_for(slug), checked, view)
    return checked


def expects(slug: str, name: str) -> str:
    """What parameter ``name`` of chapter ``slug`` expects, in words: its rule's text, then the
    text of every need that names it."""
    return "; ".join([rules_for(slug)[name].expects] + [n.expects for n in needs_for(slug) if n.name == name])
