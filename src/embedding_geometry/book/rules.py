"""Every chapter's parameters and the rule each must satisfy: the one home of these rules.

A chapter notebook's ``parameters`` cell declares the names and defaults (what papermill
overrides); this table says what each value must be. :meth:`Chapter.open
<embedding_geometry.book.chapter.Chapter.open>` validates the cell against it, and the page's
parameter table (:func:`embedding_geometry.book.pages.parameter_table`) shows its ``expects``
text beside the cell's comment. A name in the cell with no rule here, or a rule with no name in
the cell, is a programming error that the tests catch.
"""

from __future__ import annotations

from . import parameters as p
from ..core import corpora, windows

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

CHAPTERS: dict[str, dict[str, p.Rule]] = {
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
    "02_similarity_attractor": {**MODEL, "pairs": p.sentence_pairs, **CONTROLS},
    "03_inside_the_cone": {
        **MODEL, **COMPARED,
        "corpus": p.one_of(*corpora.CORPORA), "n_texts": p.optional(p.integer(2)),
        "token_set": p.one_of("word", "all"), "token_sample": p.integer(2),
        "k_extremes": p.integer(1), "k_vocab": p.integer(1),
    },
    "04_attention_context_similarity": {
        **MODEL,
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
        "n_positions": p.optional(p.integer(102)),
    },
    "06_search_in_practice": {
        **MODEL, "models": p.text_list(0), "pair_sample": p.optional(p.integer(2)),
        "n_long_docs": p.integer(2), "long_words": p.integer(2), "window_words": p.integer(1),
        "stride_words": p.integer(1), "reranker": p.optional(p.text), "rerank_depth": p.integer(1),
        "finetune": p.boolean, "finetune_model": p.optional(p.text), "finetune_seeds": p.integer(1, 64),
        "finetune_epochs": p.integer(1, 10_000),
    },
    "07_training_objective": {
        **MODEL, "n_seeds": p.integer(2, 64), "steps": p.integer(2, 1_000_000),
        "pairs_per_batch": p.integer(2, 512), "learning_rate": p.number(1e-8, 1.0),
        "temperature": p.number(1e-3, 10.0), "max_length": p.integer(4, 8192),
        "sentences": p.optional(p.text_list(3)), "hard_twin": p.one_of("negation", "role_reversal"),
    },
    "08_across_models": {
        **MODEL, **COMPARED, "corpus_texts": p.optional(p.integer(2, corpora.CORPUS_SIZE)),
        "head_texts": p.integer(1), "head_length": p.integer(4, 8192),
    },
    "98_performance": {"bench_file": p.text},
    "99_claims_dashboard": {"chapters": p.text_list(0)},
}


def rules_for(slug: str) -> dict[str, p.Rule]:
    """The rule table of chapter ``slug`` (KeyError names the known chapters)."""
    if slug not in CHAPTERS:
        raise KeyError(f"no parameter rules for chapter {slug!r}; known: {sorted(CHAPTERS)}")
    return CHAPTERS[slug]
