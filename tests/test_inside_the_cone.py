"""Chapter 3 (Inside the Cone) end to end on the tiny 3-block, 40-wide BERT, with the embedded
MiniLM as its second trained model and ten random-init controls of each, through the built book.

The results JSON must hold every number the chapter shows, and an independent recomputation
from its recorded inputs must give the same numbers. Every claim is judged on both trained
models, has an interval (or says why not) and its declared null, and the page lists every claim whose
verdict is not a judged pass (its claims table). The notebook states no number by hand: it has
no glue role, and its key measurement is checked against the package in a visible cell.
"""

import json

import nbformat
import numpy as np
import pytest
from conftest import tiny_parameters

from embedding_geometry.book import claims, results
from embedding_geometry.core import activations, geometry
from embedding_geometry.chapters.ch03_cone import exercises as ex
from embedding_geometry.studies import anisotropy, cone
from verdict_checks import page_outputs, unnamed

pytestmark = pytest.mark.slow
SLUG = "03_inside_the_cone"
MINILM = "sentence-transformers/all-MiniLM-L6-v2"
PER_DEPTH = ("anisotropy", "token_anisotropy", "anisotropy_gap", "pooling_share", "token_set_effect",
             "topic_mean_cosine_offdiag", "topic_centering_removal_offdiag", "corpus_mean_removal")


@pytest.fixture(scope="module")
def document(built_book):
    root, result = built_book
    path = root / "build" / "results" / f"{SLUG}.json"
    assert path.is_file(), result.stdout[-3000:] + result.stderr[-3000:]
    return json.loads(path.read_text())


@pytest.fixture(scope="module")
def executed(built_book):
    return json.loads((built_book[0] / "book" / "chapters" / f"{SLUG}.ipynb").read_text())


def outputs(notebook: dict) -> str:
    """Every text and Markdown output of an executed notebook, joined."""
    parts = []
    for cell in notebook["cells"]:
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            parts += ["".join(data.get(kind, "")) for kind in ("text/markdown", "text/plain", "text/html")]
    return "\n".join(parts)


def test_per_depth_series_have_one_entry_per_depth_on_both_models(document):
    by_model = document["metrics"]["by_model"]
    assert list(by_model) == [document["model"]["id"], MINILM]
    for name, metrics in by_model.items():
        for key in PER_DEPTH:
            assert len(metrics[key]) == metrics["layers"] + 1, (name, key)
        np.testing.assert_allclose(metrics["anisotropy_gap"],
                                   np.subtract(metrics["anisotropy"], metrics["token_anisotropy"]), atol=1e-12)
    assert by_model[MINILM]["layers"] == 6 and document["metrics"]["layers"] == 3


def test_inputs_are_the_balanced_sample_and_every_model_is_recorded(document):
    inputs, n = document["inputs"], tiny_parameters()[SLUG]["n_texts"]
    sample = cone.chapter_corpus("project", n, seed=0)
    assert inputs["sentences"] == sample["sentence"].tolist() and inputs["topics"] == sample["topic"].tolist()
    ids = [m["id"] for m in document["models"]]
    controls = [i for i in ids if "random-init control" in i]
    seeds = document["params"]["control_seeds"]
    assert len(ids) == 2 + 2 * seeds and len(controls) == 2 * seeds and all(m["sha256"] for m in document["models"])


def test_numbers_recompute_from_the_recorded_inputs(document, tiny_bert):
    inputs, metrics = document["inputs"], document["metrics"]
    record = activations.extract(tiny_bert, inputs["sentences"], batch_size=5, cache=False, progress=False)
    pools = record.mean_pool("all")
    words_only = record.word_mask
    for depth in (0, record.n_layers):
        assert metrics["anisotropy"][depth] == pytest.approx(geometry.mean_pairwise_cosine(pools[depth]), abs=1e-5)
        pairs, counts = anisotropy.token_kernels(record.hidden[:, words_only], record.text_index()[words_only],
                                                 record.n_texts)
        expected = pairs.sum(axis=(0, 1))[depth] / counts.sum()
        assert metrics["token_anisotropy"][depth] == pytest.approx(expected, abs=1e-5)
    final = pools[-1]
    axis = np.asarray(metrics["cone_axis"])
    centred = final - final.mean(axis=0)
    _, _, vt = np.linalg.svd(centred, full_matrices=False)
    assert abs(axis @ vt[0]) == pytest.approx(1.0, abs=1e-5)
    scores = centred @ axis
    assert [e["sentence"] for e in metrics["cone_extremes"]["high"]] == \
        [inputs["sentences"][i] for i in np.argsort(-scores)[:5]]


def test_kernels_are_recorded_by_value_or_when_large_by_shape(document):
    units, n = document["metrics"]["per_unit"], len(document["inputs"]["sentences"])
    seeds = document["params"]["control_seeds"]
    shapes = {"anisotropy.pairs": [n, n, 4], "controls.anisotropy.pairs": [seeds, n, n, 4],
              "token_anisotropy.counts": [n, n, 1], "cone_axis_topic_eta2.between": [n]}
    for key, shape in shapes.items():
        if np.prod(shape) > results.PER_UNIT_INLINE:
            assert units[key] == {"shape": shape, "values": units[key]["values"]}
            assert "not recorded" in units[key]["values"]
        else:
            assert list(np.shape(units[key])) == shape, key


def test_every_claim_is_judged_on_both_models_with_its_interval_or_reason_and_null(document, executed):
    ledger = {claim.id: claim for claim in claims.load(SLUG).claims}
    records = document["claims"]
    assert {(r["id"], r["model"]) for r in records} == {(c, m) for c in ledger for m in document["metrics"]["by_model"]}
    for r in records:
        explained = r["reason"] and r["status"] in ("descriptive", "not measured", "cannot decide")
        assert r["interval"] is not None or explained, r["id"]
        if ledger[r["id"]].null and r["measured"] is not None and r["status"] is None:
            assert r["null"]["value"] is not None, r["id"]
            assert r["null"]["distribution"] != "a single value (no distribution)", r["id"]
    by_id = {(r["id"], r["model"]): r for r in records}
    assert by_id["anisotropy-peak", MINILM]["null"]["distribution"] == "10 seeds, unit by unit"
    assert by_id["cone-axis-content", MINILM]["null"]["distribution"] == f"{anisotropy.PERMUTATIONS} draws"
    assert by_id["anisotropy-peak-depth", MINILM]["test"].startswith("peak at l/L in")
    assert by_id["anisotropy-partial-reversal", MINILM]["bound"]["source"] == "fraction"
    assert all(r["numeric_verdict"] is None for r in records)  # neither model is mxbai
    page = page_outputs(nbformat.from_dict(executed))
    assert unnamed(page, [r for r in records if r["model"] == document["model"]["id"]]) == []


def test_the_notebook_states_its_numbers_as_outputs(executed):
    sources = "\n".join("".join(cell["source"]) for cell in executed["cells"])
    assert "{glue" not in sources and "ch.glue" not in sources
    text = outputs(executed)
    assert "anisotropy at the final depth" in text and "PosixPath" not in text
    assert all(f"`{claim.id}`" in text or claim.id in text for claim in claims.load(SLUG).claims if claim.headline)


def test_exercise_answers_are_recorded_and_recompute(document, tiny_bert):
    inputs, metrics = document["inputs"], document["metrics"]
    exercises = metrics["exercises"]
    assert set(exercises) == {"n_texts_64", "k_extremes_20", "k_vocab_100"}
    sample = inputs["exercise_sample"]
    assert sample == cone.chapter_corpus("project", ex.N_TEXTS, seed=0)["sentence"].tolist()
    assert set(sample) <= set(inputs["sentences"])  # a subset: no forward pass of its own
    record = activations.extract(tiny_bert, sample, batch_size=8, cache=False, progress=False)
    answer = exercises["n_texts_64"]
    assert answer["sample"]["n"] == 64
    assert answer["sample_anisotropy"][-1] == pytest.approx(geometry.mean_pairwise_cosine(record.mean_pool("all")[-1]),
                                                            abs=1e-5)
    assert set(exercises["k_extremes_20"]) == set(metrics["by_model"])
    assert all(a["of"] >= 1 for a in exercises["k_vocab_100"].values())
