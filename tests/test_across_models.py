"""Chapter 8, across models: the claim × model table and its readings on synthetic verdicts, the
ledger on an atlas run of the tiny model and its controls, the study's text sets and per-model
metrics, the charts, and the chapter end to end on two tiny models and their controls (slow)."""

import json
from types import SimpleNamespace

import numpy as np
import pytest
from conftest import copy_book, run_build, tiny_profile
from test_layer_by_layer import assert_intervals_and_nulls

from embedding_geometry.book import claims
from embedding_geometry.book.claims import words
from embedding_geometry.chapters.ch08_across import model_verdicts as mv
from embedding_geometry.book import atlas
from embedding_geometry.book.atlas import plan
from embedding_geometry.book.charts import theme
from embedding_geometry.chapters.ch08_across import charts
from embedding_geometry.studies import across_models as across
from embedding_geometry.studies import cone, layer_by_layer

SLUG = "08_across_models"
slow = pytest.mark.slow
A, B = "org/model-a", "org/model-b"
CA, CB = f"{A} [random-init control, seed 0]", f"{B} [random-init control, seed 0]"
ROSTER = mv.roster(SimpleNamespace(id=name, source=source, layers=layers, sha256=f"sha-{name}")
                   for name, source, layers in ((A, "embedded", 6), (B, "embedded", 12), (CA, "control", 6),
                                                (CB, "control", 12)))


def verdict(word: str, claim: str = "c", difference=None, interval=(0.1, 0.2)) -> dict:
    """A synthetic claim record: its verdict word, the 95 % interval of its statistic and, for a
    trained model tested against its controls, trained − control with its interval."""
    null = None if difference is None else {"kind": "control", "label": "random-init control", "value": 0.0,
                                            "difference_value": sum(difference) / 2, "difference": list(difference)}
    return {"id": claim, "statement": f"claim {claim}", "shape": {"test": "above", "statement": f"shape of {claim}"},
            "verdict": word, "outcome": word if word != "not tested" else None, "kind": "published",
            "statistic": {"name": "value", "value": sum(interval) / 2, "interval": list(interval)}, "null": null}


# --------------------------------------------------------------------------- the roster and the readings

def test_roster_names_each_controls_trained_model_and_depth():
    assert ROSTER[A] == {"kind": "trained", "control_of": None, "layers": 6, "sha256": f"sha-{A}",
                         "label": "model-a (6 blocks)"}
    assert ROSTER[CB] == {"kind": "control", "control_of": B, "layers": 12, "sha256": f"sha-{CB}",
                          "label": "model-b · random-init control"}


@pytest.mark.parametrize("trained, controls, reading", [
    (["holds", "holds"], ["does not hold", "inconclusive"], "training"),
    (["holds", "holds"], ["does not hold", "does not hold"], "training"),
    (["holds", "holds"], ["holds", "holds"], "architecture"),
    (["holds", "holds"], ["holds", "does not hold"], "undecided"),
    (["holds", "holds"], [], "undecided"),
    (["holds", "does not hold"], ["holds", "holds"], "model"),
    (["holds", "does not hold"], [], "model"),
    (["holds", "inconclusive"], ["does not hold", "does not hold"], "undecided"),
    (["does not hold", "does not hold"], ["holds", "holds"], "undecided"),
    (["inconclusive", "not tested"], ["holds"], "undecided"),
])
def test_the_reading_is_one_truth_table_over_the_verdicts(trained, controls, reading):
    assert mv.truth(trained, controls) == reading


def test_every_combination_of_verdicts_gets_a_reading_that_never_contradicts_them():
    """Enumerated over two trained models and two controls, four words each: *training* only when
    every trained model holds and no control does, *architecture* only when all hold, *model* only
    when the trained models' decided verdicts differ."""
    import itertools

    four = ["holds", "does not hold", "inconclusive", "not tested"]
    for t1, t2, c1, c2 in itertools.product(four, repeat=4):
        kind = mv.truth([t1, t2], [c1, c2])
        if kind == "training":
            assert t1 == t2 == "holds" and "holds" not in (c1, c2)
        elif kind == "architecture":
            assert t1 == t2 == c1 == c2 == "holds"
        elif kind == "model":
            assert {t1, t2} == {"holds", "does not hold"}
        else:
            assert kind == "undecided"


def test_a_reading_says_the_difference_from_the_controls():
    found = {A: verdict("holds", difference=(0.1, 0.3)), B: verdict("holds", difference=(0.05, 0.2)),
             CA: verdict("does not hold"), CB: verdict("inconclusive")}
    kind, sentence = mv.reading(found, ROSTER)
    assert kind == "training" and "model-a (6 blocks): Δ 0.2 [0.1, 0.3]" in sentence
    alone = {A: verdict("inconclusive", interval=(0.1, 0.3)), B: verdict("holds", interval=(0.2, 0.4))}
    kind, sentence = mv.reading(alone, ROSTER)
    assert kind == "undecided" and "model-a (6 blocks) inconclusive (value [0.1, 0.3])" in sentence


# --------------------------------------------------------------------------- the table

SYNTHETIC = {
    A: [verdict("holds", "x", difference=(0.1, 0.2), interval=(0.25, 0.5)),
        verdict("does not hold", "y", interval=(0.0, 0.05))],
    B: [verdict("holds", "x", difference=(0.1, 0.2)), verdict("holds", "y", interval=(0.3, 0.4))],
    CA: [verdict("does not hold", "x"), verdict("holds", "y")],
    CB: [verdict("does not hold", "x"), verdict("does not hold", "y")],
}


def test_table_has_one_row_per_claim_trained_columns_first_and_the_reading():
    table = mv.table({CA: SYNTHETIC[CA], A: SYNTHETIC[A], B: SYNTHETIC[B], CB: SYNTHETIC[CB]}, ROSTER)
    frame = table.frame
    assert list(frame.columns) == ["claim", "model-a (6 blocks)", "model-b (12 blocks)",
                                   "model-a · random-init control", "model-b · random-init control", "reading"]
    assert list(frame["claim"]) == ["shape of x", "shape of y"] and table.row_ids == ["across-x", "across-y"]
    assert frame.loc[0, "model-a (6 blocks)"] == "holds\n[0.25, 0.5]"
    assert list(frame["reading"]) == ["follows training", "depends on the model"]
    html = table._repr_html_()
    assert 'data-verdict="holds">holds\n[0.25, 0.5]' in html
    assert '<td data-label="reading">follows training' in html  # a reading is not a verdict


def test_the_table_writes_an_interval_as_the_claim_cards_do():
    """One number format for a claim's interval: the table's cell, the reading's and the chapter's card."""
    record = verdict("holds", interval=(0.0123456, 0.5))
    assert mv.table_cell(record) == "holds\n[0.01235, 0.5]"  # four significant digits (words.number), not three
    assert mv.cell(record) == "holds (value [0.01235, 0.5])"
    assert words.result_text({**record, "test": "> 0"}).endswith(" [0.01235, 0.5]")


def test_counts_summary_and_sentences_are_written_from_the_readings():
    rows = mv.readings(SYNTHETIC, ROSTER)
    assert mv.counts(rows) == {**dict.fromkeys(mv.READINGS, 0), "training": 1, "model": 1}
    assert mv.count_sentence(rows) == "Of 2 claims, 1 follows training, 1 depends on the model."


# --------------------------------------------------------------------------- the ledger, per model

# --------------------------------------------------------------------------- the ledger on an atlas run

@pytest.fixture(scope="module")
def tiny_atlas(tiny_bert_dir, tmp_path_factory):
    """The tiny BERT and ten random-init controls measured by the atlas: (metrics by model, infos)."""
    params = {"model": str(tiny_bert_dir), "models": [], "random_control": True, "control_seeds": 10,
              "corpus_texts": 24, "head_texts": 3, "head_length": 24, "device": "cpu", "batch_size": 8, "seed": 0,
              "trust_remote_code": False, "sample_size": 16, "shard_texts": None, "corpus": None,
              "corpus_column": "text", "atlas_results": None}
    chosen = plan.from_parameters(params, tmp_path_factory.mktemp("atlas"))
    return across.measured(atlas.read(atlas.run(chosen)))


def test_every_judged_claim_of_the_ledger_gets_an_interval_and_its_null(tiny_atlas):
    by_model, infos = tiny_atlas
    trained = next(name for name, info in infos.items() if info.source != "control")
    assert_intervals_and_nulls(SLUG, by_model[trained])
    assert by_model[trained]["per_unit"]["control.sentences.intra_sentence_cosine"].shape[0] == 10  # seeds


def test_every_claim_has_a_shape_test_and_a_unit():
    for claim in claims.load(SLUG).claims:
        assert claim.shape and claim.unit, claim.id
        assert not claim.fraction or claim.fraction_reason, claim.id


def test_without_controls_no_claim_names_a_control(tiny_atlas):
    by_model, infos = tiny_atlas
    alone = across.trained_only(by_model, infos)
    assert len(alone) == 1 and not any(k.startswith("control.") for k in next(iter(alone.values()))["per_unit"])


# --------------------------------------------------------------------------- the study

def test_text_sets_are_the_texts_of_chapters_1_to_4():
    sets = {s.name: s for s in across.text_sets({"corpus_texts": 96, "seed": 0, "head_texts": 5, "head_length": 64})}
    assert list(sets["sentences"].texts) == layer_by_layer.inputs()["sentences"]
    assert list(sets["corpus"].texts) == cone.chapter_corpus("project", 96, 0)["sentence"].tolist()
    assert sets["twins"].n_units == 12 and sets["twins"].arity == 3 and sets["easy_pairs"].n_units == 12
    assert (sets["heads"].kind, sets["heads"].n_units, sets["heads"].length) == ("windows", 5, 64)


def test_pair_sets_pair_the_hard_and_easy_sets_unit_by_unit():
    hard, easy = series_units(0.9, 0.6, n=4), series_units(0.1, 0.05, n=4)
    twins = {"per_unit": {"negation": hard, "role_reversal": hard + 0.1, "maxsim": hard + 0.2,
                          "maxsim_shared": hard + 0.3, "maxsim_discriminative": hard - 0.1}}
    found = across.pair_sets(twins, {"per_unit": {"easy": easy}})
    np.testing.assert_allclose(found["gap"], (hard - easy).mean(0))
    np.testing.assert_allclose(found["per_unit"]["maxsim_gap"], np.full_like(hard, 0.4))
    np.testing.assert_allclose(found["per_unit"]["reversal_minus_negation"], np.full_like(hard, 0.1))
    np.testing.assert_allclose(found["gap_relative"], found["gap"] / (hard - easy)[:, 0].mean())
    with pytest.raises(ValueError, match="as many pairs"):
        across.pair_sets(twins, {"per_unit": {"easy": easy[:3]}})


def test_controls_join_their_trained_model_seed_by_seed():
    seeds = {f"c{i}": {"x": 1, "per_unit": {"k": np.full((2, 3), i), "odd": np.zeros(i + 1)}} for i in range(3)}
    found = across.with_controls({"t": {"per_unit": {}}, **seeds}, {c: "t" for c in seeds})
    assert found["t"]["per_unit"]["control.k"].shape == (3, 2, 3) and "control.odd" not in found["t"]["per_unit"]
    assert across.without_units(found)["c0"] == {"x": 1}


def series_units(start: float, end: float, n: int = 8, depths: int = 4, noise: float = 0.01) -> np.ndarray:
    """n per-unit curves from start to end over ``depths`` depths, with seeded noise."""
    rng = np.random.default_rng(0)
    return np.linspace(start, end, depths)[None] + noise * rng.standard_normal((n, depths))


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
    assert colours["range"][0] == colours["range"][1] and colours["range"][2:] == theme.PUBLISHED_GREYS[:2]
    assert dashes["range"] == [[1, 0], [6, 3], *theme.PUBLISHED_DASHES[:2]]  # each published curve its own
    grids = charts.head_grid_frame({"m": {"d": [[1, 2], [3, 4]]}, "n": {"d": [[1, 2], [3, 4]]}})
    assert len(charts.head_grids(grids, {"d": "distance"}).to_dict()["vconcat"]) == 2  # one under the other


def test_more_models_than_a_chart_can_show_get_a_model_picker():
    names = [f"org/m{i}" for i in range(5)]
    roster = mv.roster(SimpleNamespace(id=n, source="hub", layers=6, sha256="s") for n in names)
    by_model = {n: {"x": [0.1 * i, 0.2, 0.3]} for i, n in enumerate(names)}
    assert "params" not in charts.models_figure({n: by_model[n] for n in names[:3]}, roster, "x", "y").to_dict()
    spec = charts.models_figure(by_model, roster, "x", "y").to_dict()
    assert spec["params"][0]["bind"]["input"] == "select" and len(spec["params"][0]["bind"]["options"]) == 5


LEGEND_CAP = 8
"""The most entries a legend of chapter 8 may list: more do not read at 390 px."""


def twelve_models(controls: int = 3):
    """A synthetic atlas of 12 trained models of 6 … 17 blocks with ``controls`` controls each:
    (roster, metrics by model with a per-depth ``x`` and head grids, a verdict per claim by model)."""
    infos = [SimpleNamespace(id=f"org/m{i:02d}", source="hub", layers=6 + i, sha256="s") for i in range(12)]
    infos += [SimpleNamespace(id=f"{t.id} [random-init control, seed {s}]", source="control", layers=t.layers,
                              sha256="s") for t in list(infos) for s in range(controls)]
    roster = mv.roster(infos)
    by_model = {info.id: {"x": list(np.linspace(0.1, 0.9, info.layers + 1) * (1 + n / 50)),
                          "heads": {"heads": {"mean_pair_distance": np.ones((info.layers, 4)).tolist(),
                                              "separator_attention": np.zeros((info.layers, 4)).tolist()}}}
                for n, info in enumerate(infos)}
    verdicts = {info.id: [verdict("does not hold" if info.id == "org/m05" else "holds", "x",
                                  difference=(0.1, 0.2) if info.source == "hub" else None),
                          verdict("inconclusive" if info.source == "control" else "holds", "y")]
                for info in infos}
    return roster, by_model, verdicts


def legend_entries(spec: dict) -> int:
    """The entries of every nominal legend of a chart spec (colour and dash share one)."""
    found = set()

    def walk(node):
        if isinstance(node, dict):
            for channel in ("color", "strokeDash"):
                encoding = (node.get("encoding") or {}).get(channel) or {}
                if encoding.get("type") == "nominal" and encoding.get("legend", {}) is not None:
                    found.update(encoding["scale"]["domain"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(spec)
    return len(found)


def bound_params(spec: dict) -> list[dict]:
    return [p for p in spec.get("params", []) if p.get("bind")]


def test_twelve_models_and_their_controls_stay_readable():
    """An audit found chapter 8 unreadable at N models: a legend of every series, a column per
    model, head grids of three models only."""
    roster, by_model, verdicts = twelve_models()
    figure = {"model": "org/pub", "layers": 2, "x": [0, 1, 2], "series": {"within-sentence": [0, 1, 2],
                                                                          "cross-sentence baseline": [0, 0.5, 1]}}
    spec = charts.models_figure(by_model, roster, "x", "y", figure, title="t").to_dict()
    assert legend_entries(spec) == 5 <= LEGEND_CAP  # three roles and the two published curves
    (pick,) = bound_params(spec)
    assert pick["bind"]["input"] == "select" and len(pick["bind"]["options"]) == 12  # every trained model
    grey, every, picked = spec["layer"]
    assert picked["transform"] == [{"filter": "(datum.family === model)"}] and every["encoding"]["detail"]
    few = charts.models_figure({m: v for m, v in by_model.items() if "m00" in m or "m01" in m}, roster, "x", "y")
    assert not bound_params(few.to_dict()) and legend_entries(few.to_dict()) == 4  # 2 models and their controls
    grids = charts.head_grids(charts.head_grid_frame(across.head_grids(by_model, roster)),
                              {"mean_pair_distance": "distance", "separator_attention": "share"}).to_dict()
    (grid_pick,) = bound_params(grids)
    assert len(grids["vconcat"]) == 2 and len(grid_pick["bind"]["options"]) == 12  # a heatmap a measure, picked
    table = mv.table(verdicts, roster).frame
    assert list(table.columns) == ["claim", "trained models", "random-init controls", "reading"]
    assert table.loc[0, "trained models"] == "11 of 12: holds\n1: does not hold (m05 (11 blocks))"
    assert table.loc[1, "random-init controls"] == "inconclusive\n36 of 36"
    narrow = mv.table({m: v for m, v in verdicts.items() if m.startswith(("org/m00", "org/m01"))}, roster).frame
    assert list(narrow.columns) == ["claim", "m00 (6 blocks)", "m01 (7 blocks)", "m00 · random-init control",
                                    "m01 · random-init control", "reading"]
    assert narrow.loc[0, "m00 · random-init control"] == "holds\n3 of 3"  # a control's seeds, tallied


def test_a_tally_names_the_models_off_the_most_common_verdict():
    roster, _, verdicts = twelve_models()
    records = {m: v[0] for m, v in verdicts.items() if roster[m]["kind"] == "control"}
    records |= {m: verdict("does not hold") for m in list(records)[:5]}
    assert mv.tally(records, roster, named=1) == (
        "31 of 36: holds\n5: does not hold (m00 · random-init control ×3 and 1 more)")


# --------------------------------------------------------------------------- the chapter end to end (slow)
# make test runs these in its second process, beside the default book's build (marker
# beside_default_book): its own build of the chapter balances the two processes.

@pytest.fixture(scope="module")
def built(tmp_path_factory, tiny_bert_dir):
    """The chapter alone on the tiny BERT, with a second tiny BERT (other weights) and ten controls of each."""
    import tiny_models

    root = copy_book(tmp_path_factory.mktemp("across"))
    second = tiny_models.tiny_bert(tmp_path_factory.mktemp("second"), seed=1)
    profile = tiny_profile(root, tiny_bert_dir, **{SLUG: {"models": [str(second)]}})
    result = run_build(root, "--profile", str(profile), "--only", SLUG, "--no-site")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return root, json.loads((root / "build" / "results" / f"{SLUG}.json").read_text())


@slow
@pytest.mark.beside_default_book
def test_every_model_of_the_atlas_is_recorded_with_its_weights_and_judged(built):
    root, results = built
    m = results["metrics"]
    seeds = results["params"]["control_seeds"]
    assert len(m["models"]) == 2 + 2 * seeds and [r["kind"] for r in m["models"].values()].count("control") == 2 * seeds
    assert {r["id"] for r in results["models"]} == set(m["models"])
    assert all(len(r["sha256"]) == 64 for r in results["models"])  # every model measured, by its weights
    assert set(m["by_model"]) == set(m["models"])
    assert len(results["claims"]) == 2 * len(claims.load(SLUG).claims)  # judged on both trained models
    assert list((root / "build" / "cache" / "atlas").glob("*/*.json"))  # measured by the atlas code path


@slow
@pytest.mark.beside_default_book
def test_the_page_shows_its_numbers_as_outputs_without_glue(built):
    root, _ = built
    notebook = json.loads((root / "book" / "chapters" / f"{SLUG}.ipynb").read_text())
    sources = "".join("".join(c["source"]) for c in notebook["cells"])
    assert "{glue" not in sources and "ch.glue" not in sources
    outputs = json.dumps([c.get("outputs", []) for c in notebook["cells"]])
    assert f"Of {len(claims.load(SLUG).claims)} claims" in outputs
    assert "from the sample&#x27;s kernel" in outputs and ">agree<" in outputs  # the measurement by hand, checked


def test_a_control_without_the_head_pass_gets_not_measured_with_its_reason(tiny_atlas):
    by_model, infos = tiny_atlas
    control = next(name for name, info in infos.items() if info.source == "control")
    found = {r["id"]: r for r in claims.records(claims.evaluate(claims.load(SLUG), by_model[control], control,
                                                                resamples=200, family=claims.family_size()))}
    for claim in ("separators-in-final-layers", "long-to-short-range", "same-sentence-in-final-layers"):
        assert found[claim]["status"] == "not measured" and found[claim]["reason"] == across.NO_HEAD_PASS


def test_without_controls_judges_again_only_the_claims_whose_null_is_a_control(tiny_atlas):
    by_model, infos = tiny_atlas
    ledger = claims.load(SLUG)
    verdicts = mv.evaluate(ledger, by_model, judged={"x": []})
    trained = across.trained_only(by_model, infos)
    (model,) = trained
    alone = mv.without_controls(ledger, verdicts, trained)[model]
    kinds = {c.id: (c.null or {}).get("kind") for c in ledger.claims}
    for before, after in zip(verdicts[model], alone):
        assert before["id"] == after["id"]
        if kinds[before["id"]] != "control":
            assert after is before
        elif after["verdict"] in words.TESTED:
            assert after["null"] is None or after["null"].get("value") is None


def test_the_main_model_is_found_under_its_hub_id_when_named_by_its_short_name():
    found = {"sentence-transformers/all-MiniLM-L6-v2": {}, "/models/tiny": {}}
    assert across.model_key(found, "minilm") == "sentence-transformers/all-MiniLM-L6-v2"
    assert across.model_key(found, "sentence-transformers/all-MiniLM-L6-v2") == "sentence-transformers/all-MiniLM-L6-v2"
    assert across.model_key(found, "/models/tiny") == "/models/tiny"
    assert across.model_key(found, "org/unknown") == "org/unknown"
