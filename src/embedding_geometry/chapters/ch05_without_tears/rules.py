"""Chapter 5's parameters: the rule each must satisfy alone (:data:`RULES`; the registry adds the rules
every measuring chapter shares, ``book.rules.MODEL``) and what the chapter's computations need of
them together (:data:`NEEDS`). The book's registry, :mod:`embedding_geometry.book.rules`, takes both; a need
imports the chapter's torch modules only when it is checked (the site build and the CLI read the rules
without a model).
"""

from __future__ import annotations

from ...book import parameters as p
from ...book.rules import COMPARED
from ...core import corpora
from ...studies import retrieval

CLS_POSITIONS = 102
"""The shortest text whose [CLS] attention reaches every position bucket of chapter 5
(``cls_attention.MIN_POSITIONS``; a test checks that they agree)."""

CHAPTER = "05_embeddings_without_tears"
"""The chapter these rules are for (its notebook's name)."""

RULES: dict[str, p.Rule] = {
    **COMPARED,
    "pair_sample": p.optional(p.integer(2)),
    "fit_fraction": p.number(0.05, 0.95), "n_keys": p.integer(1), "k_max": p.integer(1),
    "n_positions": p.optional(p.integer(CLS_POSITIONS)),
}
"""Each of the chapter's own parameters and its rule (the book's registry adds ``MODEL``'s)."""


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
    from . import whitening  # loads torch: the site build and the CLI read these rules without a model

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


NEEDS: tuple[p.Need, ...] = (_keys_within_corpus, _fillers_within_corpus, _fit_split_leaves_enough,
                             _positions_within_model)
"""What the chapter's computations need of its values together."""
