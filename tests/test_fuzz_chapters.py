"""Fuzz whole chapters: parameter sets that pass a chapter's rules, run through the build on the
tiny local BERT, as a user runs them (``python -m embedding_geometry build --only <chapter>``,
called in-process so that the imports are paid once).

For each chapter, hypothesis draws values of the parameters the chapter computes with, around
the tiny profile's sizes (each notebook's ``embedding_geometry.tiny`` metadata), keeping only the sets that the
chapter's rules, and its needs that do not read the model, accept (what the build checks before
any chapter runs). Texts are drawn to be awkward: one token, nothing but special tokens, emoji,
other scripts, zero-width characters, very long, duplicates up to case, surrounding white space,
the book's own sentences. Each run must either complete — writing the chapter's results JSON
and executed notebook — or fail in one line in the cell that opens the chapter, before any
forward pass: a ParameterError of a need that reads the tokenizer, or the one-line error of a
file a parameter names; and then every earlier output stays byte-identical. An exception from
any later cell fails the test.

The cases are derandomized, use no example database and are not shrunk (one case is a chapter
run): ``EXAMPLES`` per chapter (``FUZZ_CHAPTER_EXAMPLES`` overrides it) keeps the suite to a
few minutes. Every failure found is a fixed case, run through the build: ``FOUND``, an input the
rules now refuse (and at its boundary in tests/test_rules.py), or ``RAN``, an input the rules rightly
accept that the chapter now runs, saying which claim it could not judge and why.
"""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

import nbformat
import pytest
from hypothesis import HealthCheck, Phase, assume, given, settings
from hypothesis import strategies as st

from conftest import ROOT, build_here, copy_book, tiny_parameters, tiny_profile
from embedding_geometry.book import build, parameters, rules
from embedding_geometry.core import corpora
from embedding_geometry.core.errors import ParameterError
from fuzz_values import FUZZ, budget, one_line, snapshot

pytestmark = pytest.mark.slow
EXAMPLES = int(os.environ.get("FUZZ_CHAPTER_EXAMPLES", budget(2)))
SKIPPED: dict[str, str] = {}
RUNS: list[tuple[str, str, float]] = []  # (chapter, outcome, seconds) of every generated run, for the summary

# --------------------------------------------------------------------------- texts

WORDS = ["the", "market", "surged", "after", "bank", "cut", "rates", "a", "dog", "chased", "ball", "park",
         "retrieval", "improves", "accuracy", "quantum", "tea", "is", "not", "good", "sat", "mat", "cat"]
AWKWARD = [
    "cat", "a b",                           # one token, two
    "[CLS]", "[SEP] [PAD]", "[CLS] [SEP]",  # nothing but special tokens spelled out
    "[MASK] [UNK]", "the the the",          # tokens that are words, or all one word
    "🙂🙂", "🙂 🙂", "😀👍🏽 ok",             # emoji (one [UNK] per word)
    "שלום עולם", "مرحبا بالعالم", "漢字とかな", "Ελληνικά κείμενα", "नमस्ते दुनिया",  # other scripts
    "\u200b\u200d", "a\u200bb",             # zero-width characters
    "  padded   with  spaces  ", "tab\tand\nnewline",
    "word " * 400, "a" * 300,               # longer than the model reads
    "The cat sat.", "THE CAT SAT.", "the cat sat.",  # duplicates up to case
    *corpora.REFERENCE_SENTENCES.values(),  # the book's own texts
]
sentence = st.lists(st.sampled_from(WORDS), min_size=1, max_size=12).map(" ".join)
text = st.one_of(sentence, sentence.map(str.upper), st.sampled_from(AWKWARD), st.sampled_from(AWKWARD),
                 st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), min_size=1, max_size=12))


@st.composite
def texts(draw, min_size: int, max_size: int) -> list[str]:
    """A list of distinct texts (the rules want distinct strings), sometimes with a copy of one of
    them that differs only in case or white space (what an uncased tokenizer reads alike)."""
    found = draw(st.lists(text, min_size=min_size, max_size=max_size, unique=True))
    if found and draw(st.booleans()):
        change = draw(st.sampled_from([str.upper, str.lower, str.title, lambda t: f" {t} "]))
        copy = change(draw(st.sampled_from(found)))
        if copy not in found:
            found.append(copy)
    return found


@st.composite
def retrieval_set(draw) -> dict:
    pool = draw(texts(2, 5))
    queries = draw(texts(1, 3))
    return {"queries": queries, "pool": pool,
            "relevant": draw(st.lists(st.integers(0, len(pool) - 1), min_size=len(queries), max_size=len(queries)))}


pair = st.lists(text, min_size=2, max_size=2, unique=True)
names = st.sampled_from(["mine", "hard", "medium", "easy", "x y", "🙂"])  # pair names, the post's among them
fraction = st.floats(0.0, 1.0)
seed = st.sampled_from([0, 1, 2**32 - 1]) | st.integers(0, 2**32 - 1)

# --------------------------------------------------------------------------- per chapter

STRATEGIES = {
    "00_the_model": {"extra_sentences": texts(0, 4)},
    "00b_primer": {"seed": seed, "pair": st.none() | pair, "n_texts": st.sampled_from([2, 3]) | st.integers(2, 60),
                   "centering": fraction, "toy_offset": st.floats(0.0, 10.0), "toy_elongation": st.floats(0.001, 1.0),
                   "toy_stretch": st.floats(0.0, 0.5)},
    "01_layer_by_layer": {"sentences": st.none() | texts(3, 6), "easy_set": st.none() | retrieval_set(),
                          "hard_set": st.none() | retrieval_set(), "easy_k": st.integers(1, 8),
                          "hard_k": st.integers(1, 8), "random_control": st.booleans()},
    "02_similarity_attractor": {"pairs": st.dictionaries(names, pair, max_size=3),
                                "random_control": st.booleans()},
    "03_inside_the_cone": {"seed": seed, "n_texts": st.sampled_from([2, 3, 4]) | st.integers(2, 120),
                           "token_set": st.sampled_from(["word", "all"]),
                           "k_extremes": st.integers(1, 8), "k_vocab": st.integers(1, 40),
                           "random_control": st.booleans()},
    "04_attention_context_similarity": {
        "n_texts": st.integers(1, 6), "text_length": st.sampled_from([4, 5, 160]) | st.integers(4, 160),
        "q": fraction, "attention_threshold": fraction,
        "sensitivity_thresholds": st.lists(fraction, min_size=1, max_size=4),
        "common_min_count": st.integers(2, 6), "repeat_share_threshold": fraction, "common_focus_threshold": fraction,
        "matrix_size": st.integers(2, 64)},
    "05_embeddings_without_tears": {"seed": seed, "fit_fraction": st.sampled_from([0.05, 0.95]) | st.floats(0.05, 0.95),
                                    "n_keys": st.integers(1, 4),
                                    "k_max": st.integers(1, 4), "n_positions": st.none() | st.integers(102, 200),
                                    "random_control": st.booleans()},
    "06_search_in_practice": {"seed": seed, "n_long_docs": st.integers(2, 4),
                              "long_words": st.sampled_from([2, 600]) | st.integers(2, 300),
                              "window_words": st.integers(1, 100), "stride_words": st.integers(1, 100),
                              "rerank_depth": st.integers(1, 200), "finetune": st.just(False)},
    "07_training_objective": {  # a tiny run: few seeds, few steps, a small task
        "seed": seed, "scratch_seeds": st.integers(2, 3), "scratch_steps": st.integers(6, 12),
        "scratch_pairs_per_batch": st.sampled_from([2, 64]) | st.integers(2, 32), "scratch_layers": st.integers(2, 3),
        "scratch_width": st.sampled_from([8, 16, 30, 32]), "concepts": st.sampled_from([8, 256]) | st.integers(8, 40),
        "task_pairs": st.integers(16, 200), "task_held_out": st.integers(4, 40), "finetune_seeds": st.just(2),
        "finetune_steps": st.integers(6, 8), "finetune_pairs_per_batch": st.integers(2, 16),
        "held_out_pairs": st.sampled_from([4, 300]) | st.integers(4, 60), "recall_k": st.integers(1, 10),
        "max_length": st.integers(4, 32), "sentences": st.none() | texts(3, 5),
        "hard_twin": st.sampled_from(["negation", "role_reversal"]), "warmup": st.floats(0.0, 0.5),
        "hard_negatives": st.booleans()},
    "08_across_models": {"seed": seed, "corpus_texts": st.none() | st.integers(2, 60), "head_texts": st.integers(1, 4),
                         "head_length": st.integers(4, 160), "random_control": st.booleans()},
    "98_performance": {"bench_file": st.sampled_from(["build/bench.json", "no/such/file.json", "🙂", "_config.yml"])},
    "99_claims_dashboard": {"chapters": st.lists(st.sampled_from(["01_layer_by_layer", "nope", "03_inside_the_cone"]),
                                                 max_size=2, unique=True)},
}
TINY_COMMON = {"model": "tiny BERT", "device": "cpu", "batch_size": 8, "seed": 0, "trust_remote_code": False}
"""The common values of ``conftest.tiny_profile`` (the model's name is checked as a string only)."""


def values(slug: str, params: dict) -> dict:
    """Every parameter of chapter ``slug`` as the build gives them: the notebook's defaults, the
    tiny profile's common and chapter values, then ``params``."""
    defaults = rules.notebook_defaults(ROOT / "notebooks" / f"{slug}.ipynb")
    common = {name: value for name, value in TINY_COMMON.items() if name in defaults}
    return {**defaults, **common, **tiny_parameters().get(slug, {}), **params}


def refusal(slug: str, params: dict, view=None) -> str | None:
    """The one-line ParameterError the chapter's rules and needs give ``params`` (with ``view``,
    the needs that read the model too), or None when they accept them."""
    try:
        rules.check(slug, values(slug, params), view)
    except ParameterError as error:
        return str(error)
    return None


def open_cell(slug: str) -> int:
    """The execution count of the cell that opens the chapter (``Chapter.open``) in a build: the
    parameters cell and the one papermill injects come before it."""
    code = [c for c in nbformat.read(ROOT / "notebooks" / f"{slug}.ipynb", as_version=4).cells if c.cell_type == "code"]
    return next(i for i, c in enumerate(code) if "Chapter.open(" in c.source) + 2


# --------------------------------------------------------------------------- running

@pytest.fixture(scope="module")
def book(tmp_path_factory, tiny_bert_dir):
    """A copy of the book with an earlier executed notebook and results JSON for every chapter."""
    root = copy_book(tmp_path_factory.mktemp("chapter-fuzz"))
    for slug in rules.slugs(ROOT):
        for path, content in earlier_outputs(root, slug).items():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(content)
    yield root
    summarize()


def earlier_outputs(root: Path, slug: str) -> dict[Path, str]:
    """An executed notebook and a results JSON (of the schema the dashboard reads) from "before"."""
    environment = {"python": "3", "torch": "2", "transformers": "4", "device": "cpu", "seconds": 1.0}
    results = {"chapter": slug, "model": {}, "params": {}, "inputs": {}, "metrics": {"earlier": 1}, "claims": [],
               "environment": environment}
    return {root / "build" / "results" / f"{slug}.json": json.dumps(results),
            root / "book" / "chapters" / f"{slug}.ipynb": json.dumps(
                {"cells": [], "nbformat": 4, "nbformat_minor": 5, "metadata": {"earlier": slug}})}


@pytest.fixture()
def run_chapter(book, tiny_bert_dir):
    """``run_chapter(slug, params)`` → (outcome, message): one build of one chapter, in-process."""

    def call(slug: str, params: dict) -> tuple[str, str]:
        profile = tiny_profile(book, tiny_bert_dir, **{slug: {**tiny_parameters().get(slug, {}), **params}})
        start = time.time()  # the cache is the book's: the book's own texts hit
        done = build_here(book, "--profile", str(profile), "--only", slug, "--force", "--no-site")
        line = next((l for l in done.stdout.splitlines() if re.match(rf"\s*(ran|failed)\s+{slug}\s", l)), "")
        outcome = line.split()[0] if line else "none"
        RUNS.append((slug, outcome, time.time() - start))
        assert line, done.stdout + done.stderr
        return outcome, re.sub(rf"^\s*{outcome}\s+{slug}\s+[\d.]+ s\s*", "", line)

    return call


@pytest.fixture(scope="module")
def view(tiny_bert):
    """What the chapters' needs read of the tiny BERT: its tokenizer and sizes."""
    return parameters.ModelView(lambda: tiny_bert)


def check_run(book: Path, run_chapter, view, slug: str, params: dict) -> None:
    """The contract: the chapter completes when its rules and needs accept ``params``; when a need
    that reads the model refuses them, the chapter refuses them with that one line as it opens,
    before any forward pass. A failed run leaves every earlier output byte-identical."""
    expected = refusal(slug, params, view)
    earlier = snapshot(book / "build" / "results", book / "book" / "chapters")
    outcome, message = run_chapter(slug, params)
    if outcome == "ran":
        assert expected is None, f"{slug} ran with {params!r}, which its needs refuse: {expected}"
        results = json.loads((book / "build" / "results" / f"{slug}.json").read_text())
        assert results["chapter"] == slug and "earlier" not in results["metrics"], results.keys()
        return
    assert one_line(message), message
    assert snapshot(book / "build" / "results", book / "book" / "chapters") == earlier, "an earlier output changed"
    if expected is not None:
        assert message == f"cell {open_cell(slug)}: ParameterError: {expected}", message
        return
    culprit = "|".join(sorted(build._input_errors() - {"ParameterError"}))  # a damaged file a parameter names
    assert re.fullmatch(rf"cell {open_cell(slug)}: ({culprit}): .+", message), \
        f"{slug} with {params!r}, which its rules accept, failed: {message}"


@pytest.mark.parametrize("slug", sorted(set(rules.slugs(ROOT)) | set(SKIPPED)))
def test_every_accepted_parameter_set_runs_or_is_refused_in_one_line_as_the_chapter_opens(book, run_chapter, view,
                                                                                           slug):
    if slug in SKIPPED:
        pytest.skip(SKIPPED[slug])

    @settings(parent=FUZZ, max_examples=EXAMPLES, phases=[Phase.explicit, Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(params=st.fixed_dictionaries(STRATEGIES[slug]))
    def fuzz(params):
        assume(refusal(slug, params) is None)
        check_run(book, run_chapter, view, slug, params)

    fuzz()


FOUND = {
    # what failed inside a cell before, now refused before any forward pass: (chapter, values, parameter). The
    # emoji sentence is the issue's; the fuzz found n_texts 2 and n_positions 130; reading the split found seed 554.
    "the issue's emoji sentence": ("01_layer_by_layer",
                                   {"sentences": ["The cat sat on the mat", "A dog barked", "🙂🙂"]}, "sentences"),
    "a rank correlation of two sentences": ("03_inside_the_cone", {"n_texts": 2, "k_extremes": 1}, "n_texts"),
    "CLS positions beyond what the model reads": ("05_embeddings_without_tears", {"n_positions": 130}, "n_positions"),
    "a held-out split without a judged query": ("05_embeddings_without_tears", {"fit_fraction": 0.95, "seed": 554},
                                                "fit_fraction"),
}


@pytest.mark.parametrize("case", FOUND, ids=list(FOUND))
def test_what_the_fuzz_found_is_refused_in_one_line_before_any_forward_pass(book, run_chapter, case):
    slug, params, name = FOUND[case]
    earlier = snapshot(book / "build" / "results", book / "book" / "chapters")
    outcome, message = run_chapter(slug, params)
    assert outcome == "failed" and one_line(message), message
    before_any_chapter = rf"parameters cell: ParameterError: parameter '{name}' expects .+; got .+ \(from profile .+\)"
    as_it_opens = rf"cell {open_cell(slug)}: ParameterError: parameter '{name}' expects .+; got .+"
    assert re.fullmatch(f"{before_any_chapter}|{as_it_opens}", message), message
    assert snapshot(book / "build" / "results", book / "book" / "chapters") == earlier


RAN = {
    # what failed inside a cell before and is a legitimate input, so the chapter now runs: (chapter, values, claim
    # id, the status and reason that claim gets). The fuzz found all three.
    "chapter 1 without random-init controls": (
        "01_layer_by_layer", {"sentences": None, "easy_set": None, "hard_set": None, "easy_k": 1, "hard_k": 1,
                              "random_control": False},
        "within-training", "descriptive: its null is the random-init controls, and this run made none"),
    "chapter 3 on six sentences, no topic of five": (
        "03_inside_the_cone", {"k_extremes": 6, "random_control": True, "seed": 43, "n_texts": 6, "k_vocab": 16,
                               "token_set": "all"},
        "centering-is-corpus-specific", "not measured: fewer than two topics have 5 sentences"),
    "chapter 4 on one text too short to end a sentence": (
        "04_attention_context_similarity", {"n_texts": 1, "text_length": 4, "q": 0.0, "attention_threshold": 0.0,
                                            "sensitivity_thresholds": [0.0], "common_min_count": 2,
                                            "repeat_share_threshold": 0.0, "common_focus_threshold": 0.0,
                                            "matrix_size": 2},
        "separator-segmentation", "not measured: no text ends a sentence"),
}


@pytest.mark.parametrize("case", RAN, ids=list(RAN))
def test_what_the_fuzz_found_that_the_rules_rightly_accept_now_runs_and_says_what_it_could_not_judge(book, run_chapter,
                                                                                                     case):
    slug, params, claim, reading = RAN[case]
    assert refusal(slug, params) is None
    outcome, message = run_chapter(slug, params)
    assert outcome == "ran", message
    results = json.loads((book / "build" / "results" / f"{slug}.json").read_text())
    status, why = reading.split(": ")
    found = [(c["status"], c["reason"]) for c in results["claims"] if c["id"] == claim]
    assert found and all(s == status and why in r for s, r in found), found


def summarize() -> None:
    """How many chapter runs the fuzz made and how long they took (printed with ``-s``)."""
    if RUNS:
        print(f"\nchapter fuzz: {len(RUNS)} chapter runs in {sum(s for *_, s in RUNS):.0f} s: "
              + ", ".join(f"{slug} {outcome} {seconds:.0f} s" for slug, outcome, seconds in RUNS))
