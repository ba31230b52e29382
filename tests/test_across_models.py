"""Chapter 8, across models: the claim × model table and its readings on synthetic verdicts, the
per-model ledger on synthetic metrics, the study's gathering of chapters 1–4's measures on the tiny
model, and the chapter end to end on two tiny models and their controls (slow)."""

import json
from types import SimpleNamespace

import numpy as np
import pytest
from conftest import copy_book, run_build, tiny_profile
from test_layer_by_layer import assert_intervals_and_nulls, assert_verdicts_explained

from embedding_geometry.book import charts, claims
from embedding_geometry.book.claims import judge, words
from embedding_geometry.book import model_verdicts as mv
from embedding_geometry.core import activations
from embedding_geometry.studies import across_models as across
from embedding_geometry.studies import anisotropy, layer_by_layer, similarity_attractor

SLUG = "08_across_models"
slow = pytest.mark.slow
A, B = "org/model-a", "org/model-b"
CA, CB = f"{A} [random-init control, seed 0]", f"{B} [random-init control, seed 0]"
ROSTER = mv.roster(SimpleNamespace(id=name, source=source, layers=layers, sha256=f"sha-{name}")
                   for name, source, layers in ((A, "embedded", 6), (B, "embedded", 12), (CA, "control", 6),
                                                (CB, "control", 12)))


OUTCOMES = {"shape transfers": "holds", "does not transfer": "does not hold", "inconclusive": "inconclusive"}


def verdict(word: str, claim: str = "c", difference=None, interval=(0.1, 0.2)) -> dict:
    """A synthetic claim record: its verdict word, the adjusted interval of its statistic and, for a
    trained model judged against its controls, the adjusted interval of trained − control."""
    null = None if difference is None else {"kind": "control", "label": "random-init control", "value": 0.0,
                                            "difference_value": sum(difference) / 2,
                                            "adjusted_difference": list(difference), "effect_size": 3.0}
    return {"id": claim, "statement": f"claim {claim}", "shape": {"test": "above", "statement": f"shape of {claim}"},
            "verdict": word, "outcome": OUTCOMES.get(word), "kind": "published",
            "statistic": {"name": "value", "value": sum(interval) / 2, "interval": list(interval),
                          "adjusted": list(interval)}, "null": null}


# --------------------------------------------------------------------------- the roster and the readings

def test_roster_names_each_controls_trained_model_and_depth():
    assert ROSTER[A] == {"kind": "trained", "control_of": None, "layers": 6, "sha256": f"sha-{A}",
                         "label": "model-a (6 blocks)"}
    assert ROSTER[CB] == {"kind": "control", "control_of": B, "layers": 12, "sha256": f"sha-{CB}",
                          "label": "model-b · random-init control"}


def test_training_when_every_trained_model_clears_its_controls_seeds():
    found = {A: verdict("shape transfers", difference=(0.1, 0.3)), B: verdict("shape transfers", difference=(0.05, 0.2)),
             CA: verdict("shape transfers"), CB: verdict("shape transfers")}
    kind, sentence = mv.reading(found, ROSTER)
    assert kind == "training" and "model-a (6 blocks): Δ 0.2 [0.1, 0.3], 3 seed SDs" in sentence


def test_architecture_when_every_control_shows_the_shape_and_training_adds_nothing_clear():
    found = {A: verdict("shape transfers", difference=(-0.1, 0.3)), B: verdict("shape transfers", difference=(0.05, 0.2)),
             CA: verdict("shape transfers"), CB: verdict("shape transfers")}
    assert mv.reading(found, ROSTER)[0] == "architecture"


def test_model_when_the_trained_models_intervals_exclude_each_other():
    found = {A: verdict("shape transfers", interval=(0.5, 0.6)), B: verdict("does not transfer", interval=(0.0, 0.1)),
             CA: verdict("does not transfer"), CB: verdict("inconclusive")}
    kind, sentence = mv.reading(found, ROSTER)
    assert kind == "model" and "model-a (6 blocks) value [0.5, 0.6]" in sentence


def test_undecided_otherwise_and_says_why():
    found = {A: verdict("inconclusive", interval=(0.1, 0.3)), B: verdict("shape transfers", interval=(0.2, 0.4))}
    kind, sentence = mv.reading(found, ROSTER)
    assert kind == "undecided" and "controls: none run" in sentence and "no control" in sentence


def test_a_difference_in_the_wrong_direction_is_not_training():
    below = {**verdict("shape transfers", difference=(-0.3, -0.1)), "shape": {"test": "below", "statement": "x"}}
    assert mv.beyond_control(below) and not mv.beyond_control(verdict("shape transfers", difference=(-0.3, -0.1)))


# --------------------------------------------------------------------------- the table

SYNTHETIC = {
    A: [verdict("shape transfers", "x", difference=(0.1, 0.2), interval=(0.25, 0.5)),
        verdict("does not transfer", "y", interval=(0.0, 0.05))],
    B: [verdict("shape transfers", "x", difference=(0.1, 0.2)), verdict("shape transfers", "y", interval=(0.3, 0.4))],
    CA: [verdict("does not transfer", "x"), verdict("shape transfers", "y")],
    CB: [verdict("does not transfer", "x"), verdict("does not transfer", "y")],
}


def test_table_has_one_row_per_claim_trained_columns_first_and_the_reading():
    table = mv.table({CA: SYNTHETIC[CA], A: SYNTHETIC[A], B: SYNTHETIC[B], CB: SYNTHETIC[CB]}, ROSTER)
    frame = table.frame
    assert list(frame.columns) == ["claim", "model-a (6 blocks)", "model-b (12 blocks)", "model-a · random-init control",
                                   "model-b · random-init control", "reading"]
    assert list(frame["claim"]) == ["shape of x", "shape of y"] and table.row_ids == ["across-x", "across-y"]
    assert frame.loc[0, "model-a (6 blocks)"] == "shape transfers\n[0.25, 0.5]"
    assert list(frame["reading"]) == ["follows training", "depends on the model"]
    html = table._repr_html_()
    assert 'data-verdict="shape transfers">shape transfers\n[0.25, 0.5]' in html
    assert '<td data-label="reading">follows training' in html  # a reading is not a verdict


def test_counts_summary_and_sentences_are_written_from_the_readings():
    rows = mv.readings(SYNTHETIC, ROSTER)
    assert mv.counts(rows) == {**dict.fromkeys(mv.READINGS, 0), "training": 1, "model": 1}
    assert mv.claims_read(rows, "model") == ["y"]
    assert mv.count_sentence(rows) == "Of 2 claims, 1 follows training, 1 depends on the model."
    values = mv.markdown_values(SYNTHETIC, ROSTER)
    assert set(values) == {"across_x", "across_y", "across_findings", "across_counts"}
    assert "model-a (6 blocks): shape transfers (value [0.25, 0.5])" in values["across_x"].data


# --------------------------------------------------------------------------- the ledger, per model

def series_units(start: float, end: float, n: int = 8, depths: int = 4, noise: float = 0.01) -> np.ndarray:
    """n per-unit curves from start to end over ``depths`` depths, with seeded noise."""
    rng = np.random.default_rng(0)
    return np.linspace(start, end, depths)[None] + noise * rng.standard_normal((n, depths))


def synthetic_metrics() -> dict:
    """Every metric the chapter's ledger reads, with per-unit values, for one model of 4 blocks."""
    ratio = lambda a, b: (series_units(*a), series_units(*b, noise=0.0) + 1.0)
    between, within = ratio((0.1, 2.0), (0.0, 0.0))
    hard, easy = series_units(0.9, 0.6), series_units(0.1, 0.05)
    hard[:, 2] += 0.2
    easy[:, 1] += 0.3
    gap = hard - easy
    blocks = {"separators": np.full((6, 4), 3.0), "attended": np.full((6, 4), 4.0),
              "distance": series_units(40.0, 10.0, n=6), "pairs": np.full((6, 4), 1.0), "same": series_units(0.1, 0.5, n=6)}
    units = {"intra_sentence_cosine": series_units(0.1, 0.8), "cross_sentence_baseline": series_units(0.05, 0.3),
             "collapse_gap": series_units(0.05, 0.5), "separability_ratio.between": between,
             "separability_ratio.within": within, "cls_mean_alignment": series_units(0.5, 0.9),
             "pair_sets.hard": hard, "pair_sets.easy": easy, "pair_sets.gap": gap,
             "pair_sets.gap_first": np.repeat(gap[:, :1], 4, axis=1),
             "anisotropy": series_units(0.3, 0.1) + np.array([0, 0.4, 0.2, 0]),
             "separator_attention.separators": blocks["separators"], "separator_attention.attended": blocks["attended"],
             "mean_pair_distance.distance": blocks["distance"], "high_pairs": blocks["pairs"],
             "same_sentence_fraction.same": blocks["same"]}
    rows = units["anisotropy"]
    peak = int(np.argmax(rows.mean(axis=0)))
    units.update({"final_step_share.last_step": rows[:, -2] - rows[:, -1], "final_step_share.fall": rows[:, peak] - rows[:, -1]})
    mean = {key: value.mean(axis=0) for key, value in units.items()}
    control = {"collapse_gap": np.zeros(4), "separability_ratio": np.ones(4), "anisotropy": np.full(4, 0.5),
               "pair_sets": {"hard": np.full(4, 0.9), "easy": np.full(4, 0.1)}}
    return {
        "intra_sentence_cosine": mean["intra_sentence_cosine"], "cross_sentence_baseline": mean["cross_sentence_baseline"],
        "collapse_gap": mean["collapse_gap"], "separability_ratio": between.mean(0) / within.mean(0),
        "cls_mean_alignment": mean["cls_mean_alignment"], "anisotropy": mean["anisotropy"],
        "final_step_share": anisotropy.final_step_share(mean["anisotropy"]),
        "pair_sets": {"hard": mean["pair_sets.hard"], "easy": mean["pair_sets.easy"], "gap": mean["pair_sets.gap"],
                      "gap_relative": mean["pair_sets.gap"] / gap[:, 0].mean()},
        "separator_attention": mean["separator_attention.separators"] / mean["separator_attention.attended"],
        "separator_share": 0.1, "mean_pair_distance": mean["mean_pair_distance.distance"],
        "same_sentence_fraction": mean["same_sentence_fraction.same"], "same_sentence_chance": 0.2,
        "control": control, "per_unit": units}


def test_every_judged_claim_of_the_ledger_gets_an_interval_and_its_null():
    assert_intervals_and_nulls(SLUG, synthetic_metrics())


def test_every_claim_has_a_shape_test_and_a_unit():
    for claim in claims.load(SLUG).claims:
        assert claim.shape and claim.unit, claim.id
        assert not claim.fraction or claim.fraction_reason, claim.id


def test_a_model_without_the_head_pass_gets_not_measured_with_its_reason():
    metrics = {**synthetic_metrics(), **across.no_head_pass("no heads here")}
    found = {r["id"]: r for r in claims.records(claims.evaluate(claims.load(SLUG), metrics, "m", resamples=200))}
    for claim in ("separators-in-final-layers", "long-to-short-range", "same-sentence-in-final-layers"):
        assert found[claim]["verdict"] == judge.NOT_MEASURED and found[claim]["reason"] == "no heads here"


# --------------------------------------------------------------------------- the study's glue

def test_merged_joins_per_unit_values_and_controls_are_attached():
    joined = across.merged({"a": 1, "per_unit": {"a": [1]}}, {"b": 2, "per_unit": {"b": [2]}}, {"c": 3})
    assert joined == {"a": 1, "b": 2, "c": 3, "per_unit": {"a": [1], "b": [2]}}
    control = {"collapse_gap": [0], "separability_ratio": [1], "anisotropy": [2], "pair_sets": {"hard": [3], "easy": [4], "gap": [5]}}
    found = across.with_controls({A: {"x": 1}, CA: control}, {CA: A})
    assert found[A]["control"] == {"collapse_gap": [0], "separability_ratio": [1], "anisotropy": [2],
                                   "pair_sets": {"hard": [3], "easy": [4]}}
    assert "control" not in found[CA]
    assert across.without_controls(found, {CA: A}) == {A: {"x": 1}}
    assert across.without_units({A: joined})[A] == {"a": 1, "b": 2, "c": 3}


def test_sample_anisotropy_reads_the_sample_from_the_corpus_pools():
    pools = np.random.default_rng(1).standard_normal((3, 5, 4)) + 1.0
    corpus = [f"s{i}" for i in range(5)]
    found = across.sample_anisotropy(pools, ["s1", "s3", "s4"], corpus, extract=None)
    np.testing.assert_allclose(found["anisotropy"], anisotropy.anisotropy_per_depth(pools[:, [1, 3, 4]]))
    assert found["peak_depth"] == int(np.argmax(found["anisotropy"]))
    assert found["max_difference"] == pytest.approx(np.abs(found["anisotropy"] - anisotropy.anisotropy_per_depth(pools)).max())


def test_inputs_are_the_texts_of_chapters_1_to_3():
    texts = across.inputs(100, seed=0)
    assert texts["sentences"] == layer_by_layer.inputs()["sentences"]
    assert texts["pairs"] == similarity_attractor.inputs()["pairs"] and len(texts["corpus"]) == 100


def test_measure_gathers_the_studies_unchanged_on_the_tiny_model(tiny_bert):
    extract = lambda texts: activations.extract(tiny_bert, texts, cache=False, progress=False)
    texts = {**across.inputs(None), "corpus": across.inputs(None)["corpus"][:30]}
    found, pools = across.measure(extract, texts)
    sentences = extract(texts["sentences"])
    np.testing.assert_allclose(found["collapse_gap"], layer_by_layer.collapse(sentences)["collapse_gap"])
    np.testing.assert_allclose(found["anisotropy"], anisotropy.anisotropy_per_depth(pools))
    assert pools.shape == (tiny_bert.info.layers + 1, 30, tiny_bert.info.hidden)
    for key in ("intra_sentence_cosine", "cls_mean_alignment", "anisotropy", "pair_sets.hard"):
        np.testing.assert_allclose(np.mean(found["per_unit"][key], axis=0), claims.lookup(found, key), rtol=1e-9, atol=1e-12)


def test_head_pass_gives_per_head_grids_and_per_text_values(tiny_bert):
    found = across.head_pass(tiny_bert, n_texts=3, length=24, seed=0, batch_size=2)
    L, H = tiny_bert.info.layers, tiny_bert.info.heads
    assert np.shape(found["head_grid"]["mean_pair_distance"]) == (L, H) and len(found["separator_attention"]) == L
    units = found["per_unit"]
    np.testing.assert_allclose(units["mean_pair_distance.distance"].sum(0) / units["high_pairs"].sum(0),
                               found["mean_pair_distance"])
    assert units["high_pairs"].shape == (3, L)


def test_charts_draw_every_model_over_the_published_curves():
    by_model = {A: {"x": [0.1, 0.2, 0.3]}, CA: {"x": [0.0, 0.1, 0.1]}, B: {"x": None}}
    frame = charts.models_frame(by_model, "x", ROSTER)
    assert set(frame["series"]) == {"model-a (6 blocks)", "model-a · random-init control"}
    assert set(frame["family"]) == {"model-a (6 blocks)"} and set(frame["kind"]) == {"trained", "random-init control"}
    figure = {"model": "org/pub", "layers": 2, "x": [0, 1, 2], "series": {"within-sentence": [0, 1, 2],
                                                                          "cross-sentence baseline": [0, 0.5, 1]}}
    assert charts.published_gap(figure)["series"] == {"gap": [0, 0.5, 1]}
    spec = charts.models_figure(by_model, ROSTER, "x", "y", figure, title="t").to_dict()
    encoding = spec["layer"][1]["encoding"]
    colours, dashes = encoding["color"]["scale"], encoding["strokeDash"]["scale"]
    assert colours["domain"] == ["model-a (6 blocks)", "model-a · random-init control",
                                 "within-sentence — published (pub)", "cross-sentence baseline — published (pub)"]
    assert colours["range"][0] == colours["range"][1] and colours["range"][-1] == charts.PUBLISHED_COLOR
    assert dashes["range"][:2] == [[1, 0], [6, 3]]
    grids = charts.head_grid_frame({"m": {"d": [[1, 2], [3, 4]]}})
    assert len(grids) == 4 and charts.head_grids(grids, {"d": "distance"}).to_dict()


# --------------------------------------------------------------------------- the chapter end to end (slow)

@pytest.fixture(scope="module")
def built(tmp_path_factory, tiny_bert_dir):
    """The chapter alone on the tiny BERT, with a second tiny BERT (other weights) and a control of each."""
    import tiny_models

    root = copy_book(tmp_path_factory.mktemp("across"))
    second = tiny_models.tiny_bert(tmp_path_factory.mktemp("second"), seed=1)
    profile = tiny_profile(root, tiny_bert_dir, **{SLUG: {"models": [str(second)]}})
    result = run_build(root, "--profile", str(profile), "--only", SLUG, "--no-site")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return root, json.loads((root / "build" / "results" / f"{SLUG}.json").read_text())


@slow
def test_every_model_is_judged_and_the_main_models_verdicts_are_the_claims(built):
    root, results = built
    m = results["metrics"]
    assert len(m["models"]) == 4 and [r["kind"] for r in m["models"].values()].count("control") == 2
    assert all(len(r["sha256"]) == 64 for r in m["models"].values())  # every model run, by its weights
    assert set(m["verdicts_by_model"]) == set(m["models"]) == set(m["by_model"])
    main = m["verdicts_by_model"][results["model"]["id"]]
    assert [(r["id"], r["verdict"], r["interval"]) for r in main] == \
        [(r["id"], r["verdict"], r["interval"]) for r in results["claims"]]
    assert_verdicts_explained((root, None), SLUG, results)


@slow
def test_trained_models_clear_their_own_control_and_controls_have_no_head_pass(built):
    _, results = built
    m = results["metrics"]
    for model, role in m["models"].items():
        records = {r["id"]: r for r in m["verdicts_by_model"][model]}
        if role["kind"] == "trained":
            control = next(c for c, r in m["models"].items() if r["control_of"] == model)
            assert records["gap-rises"]["null"]["value"] == pytest.approx(np.subtract(*np.asarray(
                m["by_model"][control]["collapse_gap"])[[-1, 0]]))
            assert np.shape(m["by_model"][model]["head_grid"]["separator_attention"]) == (role["layers"], 4)
        else:
            assert records["separators-in-final-layers"]["verdict"] == judge.NOT_MEASURED


@slow
def test_the_page_glues_the_table_the_readings_and_the_exercise_answers(built):
    root, results = built
    notebook = root / "book" / "chapters" / f"{SLUG}.ipynb"
    box = words.glued_text(notebook, "across_findings")
    assert box and box.startswith(":::{admonition} Across the models")
    assert words.glued_text(notebook, "across_counts").startswith(f"Of {len(results['claims'])} claims")
    for name in ("model_table", "ex1_moved", "ex2_model", "ex3_peaks"):
        assert words.glued_text(notebook, name) is not None, name
