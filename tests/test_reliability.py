"""Reliability: bad parameters rejected in one line, nothing half-written, interrupted builds,
deterministic results. Every case runs the way a user would: through the build's ``main`` and
papermill (the bad parameters in this process, the rest as ``python -m embedding_geometry``)."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import ROOT, build_here, copy_book, run_build, tiny_profile

import tiny_models

pytestmark = pytest.mark.slow

NOT_A_MODEL = "__not_a_model_dir__"  # replaced by a real folder with no config.json
NEEDS_CODE = "__needs_remote_code__"  # replaced by a model folder whose config has auto_map
NO_WORD_TOKENS = "\u200b"  # a zero-width space: non-empty, but the tokenizer keeps no token of it

# (chapter, parameter overrides, the one line the build must print for it)
BAD_PARAMETERS = [
    ("00_the_model", {"batch_size": "8"}, "parameter 'batch_size' expects an integer in [1, 4096]; got '8'"),
    ("00_the_model", {"batch_size": -4}, "parameter 'batch_size' expects an integer in [1, 4096]; got -4"),
    ("00_the_model", {"device": "tpu"}, "parameter 'device' expects one of 'auto', 'cpu', 'cuda'; got 'tpu'"),
    ("00_the_model", {"extra_sentences": "one sentence"},
     "parameter 'extra_sentences' expects a list (possibly empty) of non-empty, distinct strings"),
    ("00_the_model", {"extra_sentences": [NO_WORD_TOKENS]},
     "parameter 'extra_sentences' expects texts of at least 1 word token each once tokenized"),
    ("00_the_model", {"model": "nobody/not-a-real-model"},
     "model 'nobody/not-a-real-model' is not available offline"),
    ("00_the_model", {"model": NOT_A_MODEL}, "is a local path but not a model directory (no config.json in it)"),
    ("00_the_model", {"model": NEEDS_CODE},
     "needs custom modelling code (auto_map in its config.json); set trust_remote_code: true"),
    ("01_layer_by_layer", {"sentences": []}, "parameter 'sentences' expects"),
    ("01_layer_by_layer", {"sentences": ["The cat sat.", NO_WORD_TOKENS, "A dog ran."]},
     "parameter 'sentences' expects texts of at least 2 word tokens each once tokenized"),
    ("01_layer_by_layer", {"easy_k": -1}, "parameter 'easy_k' expects"),
    ("01_layer_by_layer", {"batch_size": 2.5}, "parameter 'batch_size' expects an integer"),
    ("01_layer_by_layer", {"models": ["nobody/not-a-real-model"]},
     "model 'nobody/not-a-real-model' is not available offline"),
    ("01_layer_by_layer", {"model": NOT_A_MODEL}, "is a local path but not a model directory"),
    ("02_similarity_attractor", {"pairs": {"mine": ["only one sentence"]}}, "parameter 'pairs' expects"),
    ("02_similarity_attractor", {"pairs": {"mine": ["A cat sat.", NO_WORD_TOKENS]}},
     "parameter 'pairs' expects texts of at least 1 word token each once tokenized"),
    ("02_similarity_attractor", {"batch_size": 0}, "parameter 'batch_size' expects an integer in [1, 4096]; got 0"),
    ("02_similarity_attractor", {"model": "nobody/not-a-real-model"},
     "model 'nobody/not-a-real-model' is not available offline"),
    ("03_inside_the_cone", {"n_texts": -5}, "parameter 'n_texts' expects"),
    ("03_inside_the_cone", {"token_set": "special"}, "parameter 'token_set' expects"),
    ("03_inside_the_cone", {"k_extremes": "5"}, "parameter 'k_extremes' expects"),
    ("03_inside_the_cone", {"corpus": "wiki"}, "parameter 'corpus' expects"),
    ("03_inside_the_cone", {"models": [NOT_A_MODEL]}, "is a local path but not a model directory"),
    ("04_attention_context_similarity", {"q": 1.5}, "parameter 'q' expects"),
    ("04_attention_context_similarity", {"attention_threshold": -0.1}, "parameter 'attention_threshold' expects"),
    ("04_attention_context_similarity", {"sensitivity_thresholds": [0.2, 2.0]},
     "parameter 'sensitivity_thresholds' expects"),
    ("04_attention_context_similarity", {"n_texts": -1}, "parameter 'n_texts' expects"),
    ("04_attention_context_similarity", {"text_length": 100000}, "parameter 'text_length' expects"),
    ("04_attention_context_similarity", {"model": "nobody/not-a-real-model"},
     "model 'nobody/not-a-real-model' is not available offline"),
    ("05_embeddings_without_tears", {"fit_fraction": 1.5}, "parameter 'fit_fraction' expects"),
    ("05_embeddings_without_tears", {"k_max": -1}, "parameter 'k_max' expects"),
    ("05_embeddings_without_tears", {"n_positions": 100000},
     "parameter 'n_positions' expects a length the model reads whole"),
    ("05_embeddings_without_tears", {"models": ["nobody/not-a-real-model"]},
     "model 'nobody/not-a-real-model' is not available offline"),
    ("06_search_in_practice", {"window_words": 0}, "parameter 'window_words' expects"),
    ("06_search_in_practice", {"reranker": NOT_A_MODEL}, "is a local path but not a model directory"),
]
BAD_PARAMETERS = [case for case in BAD_PARAMETERS if (ROOT / "notebooks" / f"{case[0]}.ipynb").is_file()]


@pytest.fixture(scope="module")
def special_dirs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("special")
    (folder / "empty").mkdir()
    (folder / "empty" / "readme.txt").write_text("not a model")
    return {NOT_A_MODEL: str(folder / "empty"),
            NEEDS_CODE: str(tiny_models.needs_remote_code(folder / "custom"))}


@pytest.mark.parametrize("chapter, overrides, message", BAD_PARAMETERS,
                         ids=[f"{c}-{next(iter(o))}-{i}" for i, (c, o, _) in enumerate(BAD_PARAMETERS)])
def test_bad_parameter_is_one_line_and_keeps_the_previous_outputs(built_book, tiny_bert_dir, special_dirs,
                                                                  chapter, overrides, message):
    root, result = built_book
    assert result.returncode == 0
    executed = root / "book" / "chapters" / f"{chapter}.ipynb"
    results = root / "build" / "results" / f"{chapter}.json"
    before = executed.read_bytes(), results.read_bytes()
    def swap(v):
        return special_dirs.get(v, v) if isinstance(v, str) else [swap(x) for x in v] if isinstance(v, list) else v
    overrides = {k: swap(v) for k, v in overrides.items()}
    profile = tiny_profile(root, tiny_bert_dir, **{chapter: overrides})
    failed = build_here(root, "--profile", str(profile), "--only", chapter, "--no-site")
    assert failed.returncode != 0
    (line,) = [l for l in failed.stdout.splitlines() if l.split()[:2] == ["failed", chapter]]
    assert message in line, line
    assert "Traceback" not in failed.stdout
    assert (executed.read_bytes(), results.read_bytes()) == before


def test_sigterm_mid_chapter_leaves_nothing_partial_and_the_next_build_completes(tmp_path, tiny_bert_dir):
    root = copy_book(tmp_path / "book")
    cache = tmp_path / "cache"
    profile = tiny_profile(root, tiny_bert_dir)
    env = {**os.environ, "EMBEDDING_GEOMETRY_CACHE": str(cache)}
    command = [sys.executable, "-m", "embedding_geometry", "build", "--root", str(root), "--profile", str(profile),
               "--only", "00_the_model", "--no-site"]
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.time() + 120
    while not list((root / "build").glob(".00_the_model-*")) and time.time() < deadline:
        time.sleep(0.1)
    time.sleep(3)  # the kernel is starting or running cells
    process.send_signal(signal.SIGTERM)
    output, _ = process.communicate(timeout=120)
    assert process.returncode != 0, output
    assert not (root / "book" / "chapters" / "00_the_model.ipynb").exists()
    assert not (root / "build" / "results" / "00_the_model.json").exists()
    assert not list((root / "build").glob(".00_the_model-*"))
    assert not list(cache.glob(".partial-*"))
    again = run_build(root, "--profile", str(profile), "--only", "00_the_model", "--no-site", cache=cache)
    assert again.returncode == 0, again.stdout + again.stderr
    assert (root / "build" / "results" / "00_the_model.json").is_file()


DETERMINISM_CHAPTERS = [c for c in ("00_the_model", "01_layer_by_layer")
                        if (ROOT / "notebooks" / f"{c}.ipynb").is_file()]


def _without_timing(document):
    document = dict(document)
    document["environment"] = {k: v for k, v in document["environment"].items() if k not in ("seconds", "timing")}
    return document


def test_two_forced_builds_give_identical_results(tmp_path, default_book):
    """With the embedded model, two runs of the same commit: identical results JSON apart from the
    run time. The first is the shared default build; the second runs the chapters again, forced,
    in another copy of the book with its own cache (so nothing is read back from the first)."""
    first, built = default_book
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    root = copy_book(tmp_path / "book")
    args = ["--profile", "default", "--force", "--no-site"]
    for chapter in DETERMINISM_CHAPTERS:
        args += ["--only", chapter]
    done = run_build(root, *args, cache=tmp_path / "cache")
    assert done.returncode == 0, done.stdout + done.stderr
    for chapter in DETERMINISM_CHAPTERS:
        runs = [json.loads((book / "build" / "results" / f"{chapter}.json").read_text()) for book in (first, root)]
        assert _without_timing(runs[0]) == _without_timing(runs[1]), chapter
