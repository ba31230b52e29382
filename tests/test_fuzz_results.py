"""Fuzz the build products that later pages and builds read back: results JSON, the activation
cache, the build's state files.

A results file that is truncated, empty, not UTF-8, of the wrong schema or from an older
version must be refused in one line naming the file and, for a chapter's file, the exact
command that rebuilds it (``pages.load_results``, ``dashboard.claims_frame``). A damaged cache
entry is recomputed with one warning line; a damaged state file makes its chapter run again.
In every case, no file other than the damaged one changes.
"""

from __future__ import annotations

import copy
import json
import pickle
import sys
import types
import warnings

import joblib
import numpy as np
import pytest
from hypothesis import event, example, given, settings
from hypothesis import strategies as st

from embedding_geometry.book import build, dashboard, pages, performance
from embedding_geometry.book.results import DamagedResultsError
from embedding_geometry.core import activations
from fuzz_values import FUZZ, budget, one_line, snapshot

SLUG = "02_similarity_attractor"
REBUILD = f"rebuild it: .venv/bin/python -m embedding_geometry build --only {SLUG} --force"
CLAIM = {"id": "hard-start", "statement": "The hard pair starts at cosine 0.899.", "metric": "pair_cosine.hard",
         "published": {"value": 0.899, "model": "big/model"}, "measured": 0.93, "model": "m",
         "numeric_verdict": None, "shape": None, "kind": "published", "status": "descriptive",
         "verdict": "not tested", "counted": False}
DOCUMENT = {"chapter": SLUG, "model": {"id": "m", "sha256": "ab", "layers": 3, "hidden": 40},
            "params": {"seed": 0}, "inputs": {"pairs": {"hard": ["a", "b"]}},
            "metrics": {"pair_cosine": {"hard": [0.9]}},
            "claims": [CLAIM, {**CLAIM, "id": "gap", "published": None, "measured": None}],
            "environment": {"python": "3.11", "torch": "2", "transformers": "5", "numpy": "2",
                            "embedding_geometry": "0.1.0", "device": "cpu", "seconds": 1.5}}
GOOD = json.dumps(DOCUMENT, indent=1).encode()
OTHER = json.dumps({**DOCUMENT, "chapter": "00_the_model"}, indent=1).encode()

json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner,
                                                                                       max_size=3),
                           max_leaves=8)
paths = st.lists(st.sampled_from(["chapter", "model", "params", "claims", "environment", "seconds", "device",
                                  "python", "statement", "published", "value", "model", 0, 1, "measured"]),
                 min_size=1, max_size=4)


def mutate(document: dict, path: list, value, delete: bool) -> dict:
    """``document`` with the key path ``path`` (as far as it exists) deleted or set to ``value``."""
    document = copy.deepcopy(document)
    node = document
    for key in path[:-1]:
        nxt = node[key] if (isinstance(node, dict) and key in node
                            or isinstance(node, list) and isinstance(key, int) and key < len(node)) else None
        if not isinstance(nxt, (dict, list)):
            break
        node = nxt
    key = path[-1]
    if isinstance(node, dict) and isinstance(key, str):
        node.pop(key, None) if delete else node.__setitem__(key, value)
    elif isinstance(node, list) and isinstance(key, int) and key < len(node):
        node.pop(key) if delete else node.__setitem__(key, value)
    return document


damaged = st.one_of(
    st.integers(0, len(GOOD) - 1).map(lambda n: GOOD[:n]),                               # truncated
    st.tuples(st.integers(0, len(GOOD)),
              st.binary(min_size=1, max_size=3)).map(lambda t: GOOD[:t[0]] + t[1] + GOOD[t[0]:]),
    st.binary(max_size=40), st.sampled_from([b"", b"   \n", b"\xff\xfe{}", "{\"chapter\": \"é\"}".encode("latin-1")]),
    json_values.map(lambda v: json.dumps(v).encode()),                                    # any JSON
    st.tuples(paths, json_values, st.booleans()).map(lambda t: json.dumps(mutate(DOCUMENT, *t)).encode()),
    st.sampled_from(["0.0.1", "0.2.0"]).map(lambda v: json.dumps(                          # older schemas
        {**{k: d for k, d in DOCUMENT.items() if k != "claims"}, "environment": {**DOCUMENT["environment"],
                                                                                 "embedding_geometry": v}}).encode()),
)


@pytest.fixture()
def results(tmp_path, monkeypatch):
    folder = tmp_path / "results"
    folder.mkdir()
    (folder / "00_the_model.json").write_bytes(OTHER)
    monkeypatch.setenv("EMBEDDING_GEOMETRY_RESULTS", str(folder))
    return folder


def read_all(folder):
    """What the pages do: provenance of the chapter's file, then the dashboard over the folder."""
    pages.provenance(pages.load_results(SLUG))
    return dashboard.claims_frame(folder)


@settings(parent=FUZZ, max_examples=budget(250))
@given(content=damaged)
@example(content=GOOD[:300])  # the report of issue 20: chapter 02's file cut at 300 bytes
@example(content=GOOD)
def test_a_damaged_results_file_names_itself_and_its_rebuild_command(results, content):
    target = results / f"{SLUG}.json"
    target.write_bytes(content)
    before = snapshot(results)
    try:
        board = read_all(results)
    except DamagedResultsError as error:
        message = str(error)
        event("refused")
        assert one_line(message) and str(target) in message and message.endswith(REBUILD), message
    else:
        event("read")
        assert set(board["chapter"]) == {"00_the_model", SLUG}
    assert snapshot(results) == before


def test_the_truncated_results_of_issue_20(results):
    (results / f"{SLUG}.json").write_bytes(GOOD[:300])
    with pytest.raises(DamagedResultsError) as error:
        dashboard.claims_frame(results)
    message = str(error.value)
    assert message.startswith(f"results file {results / SLUG}.json is damaged: not complete JSON (Expecting ")
    assert message.endswith(f"); {REBUILD}") and one_line(message)
    assert error.value._render_traceback_() == [f"DamagedResultsError: {error.value}"]


def test_stray_and_unfinished_files(results):
    (results / f".{SLUG}-x1y2.json").write_bytes(GOOD[:10])  # an unfinished write: not read
    assert len(dashboard.claims_frame(results)) == 2
    (results / "notes.json").write_bytes(b"[]")
    with pytest.raises(DamagedResultsError, match=r"notes\.json is not usable: .*: remove it$"):
        dashboard.claims_frame(results)


@settings(parent=FUZZ, max_examples=budget(50))
@given(content=damaged)
def test_a_damaged_benchmark_file_names_itself(tmp_path_factory, content):
    root = tmp_path_factory.mktemp("bench")
    (root / "_config.yml").write_text("title: t\n")
    (root / "build").mkdir()
    (root / "build" / "bench.json").write_bytes(content)
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(root)
        try:
            performance.load_bench()
        except DamagedResultsError as error:
            assert one_line(str(error)) and "build/bench.json" in str(error), str(error)
            assert str(error).endswith("make bench"), str(error)


# --------------------------------------------------------------------------- the activation cache

class Foreign:
    """Stands in for a class of an older package version that no longer exists."""


def older_version_pickle() -> bytes:
    module = types.ModuleType("embedding_geometry.activations_v0")
    Foreign.__module__ = module.__name__
    module.Foreign = Foreign
    sys.modules[module.__name__] = module
    try:
        return pickle.dumps(Foreign())
    finally:
        del sys.modules[module.__name__]


@pytest.fixture(scope="module")
def cache(tiny_bert, tmp_path_factory):
    """A cache folder holding one good entry, and a valid entry's bytes to damage."""
    folder = tmp_path_factory.mktemp("cache")
    activations.extract(tiny_bert, ["an earlier entry"], cache_dir=folder, progress=False)
    reference = activations.extract(tiny_bert, ["a text", "another text"], cache=False, progress=False)
    scratch = tmp_path_factory.mktemp("scratch") / "valid.joblib"
    reference.key = activations.cache_key(tiny_bert, reference.texts, tiny_bert.info.max_seq_length, False)
    joblib.dump(reference, scratch)
    return folder, reference, scratch.read_bytes()


def cache_damage(valid: bytes):
    return st.one_of(
        st.integers(0, len(valid) - 1).map(lambda n: valid[:n]), st.binary(max_size=64),
        st.sampled_from(["dict", "list", "other key", "older version"]),
    )


def damaged_entry(kind, reference, path):
    if isinstance(kind, bytes):
        return path.write_bytes(kind)
    if kind == "older version":
        return path.write_bytes(older_version_pickle())
    other = copy.copy(reference)
    other.key = "not-this-key"
    joblib.dump({"dict": {"hidden": [1]}, "list": [reference], "other key": other}[kind], path)


@settings(parent=FUZZ, max_examples=budget(30))
@given(data=st.data())
def test_a_damaged_cache_entry_is_recomputed_with_one_warning(tiny_bert, cache, data):
    folder, reference, valid = cache
    kind = data.draw(cache_damage(valid))
    path = folder / f"{reference.key}.joblib"
    damaged_entry(kind, reference, path)
    before = {name: digest for name, digest in snapshot(folder).items() if name != str(path)}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        again = activations.extract(tiny_bert, reference.texts, cache_dir=folder, progress=False)
    np.testing.assert_array_equal(again.hidden, reference.hidden)
    messages = [str(w.message) for w in caught if "activation cache" in str(w.message)]
    assert len(messages) == 1 and one_line(messages[0]) and path.name in messages[0], messages
    after = snapshot(folder)
    assert {name: digest for name, digest in after.items() if name != str(path)} == before
    assert isinstance(joblib.load(path), activations.Activations)  # rewritten, whole


def test_an_unwritable_cache_folder_is_a_warning(tiny_bert, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    with pytest.warns(UserWarning, match="not writable"):
        record = activations.extract(tiny_bert, ["a text"], cache_dir=blocker / "cache", progress=False)
    assert record.n_texts == 1 and blocker.read_text() == "not a folder"


# --------------------------------------------------------------------------- build state

@settings(parent=FUZZ, max_examples=budget(80))
@given(content=st.binary(max_size=40) | json_values.map(lambda v: json.dumps(v).encode())
       | st.integers(0, 60).map(lambda n: b'{"fingerprint": "0123", "params": {}}'[:n]))
def test_a_damaged_state_file_means_run_again(tmp_path_factory, content):
    state = tmp_path_factory.mktemp("state") / "02.json"
    state.write_bytes(content)
    fingerprint = build._last_fingerprint(state)
    assert fingerprint is None or fingerprint == json.loads(content)["fingerprint"]
    assert state.read_bytes() == content
