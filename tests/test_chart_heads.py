"""Chapter 4's chart frames and charts (chapters.ch04_heads.frames and .charts): matrices encoded in
64 levels, block means, the first text's frames for the explorer, and every chapter 4 chart valid
against Vega-Lite."""

import json

import numpy as np
import pandas as pd
import pytest

from embedding_geometry.chapters.ch04_heads import charts, frames
from embedding_geometry.core import streaming, windows
from embedding_geometry.core.errors import ParameterError
from embedding_geometry.studies import context_similarity as cs


def decode_levels(text: str) -> np.ndarray:
    """The inverse of ``frames.encode_levels`` (up to its rounding, ≤ 1/63), as the page's script reads it."""
    return np.array([frames.LEVELS.index(c) for c in text]) * 2 / (len(frames.LEVELS) - 1) - 1

SENTENCES = ["The cat sat on the mat.", "A dog barked at the cat!", "Birds sing in the morning.",
             "Is the garden green?", "The mat was red.", "Rain fell all night long."]


def test_levels_encode_values_in_one_character_each():
    values = np.array([-1.0, -0.5, 0.0, 0.5, 1.0, 2.0])
    text = frames.encode_levels(values)
    assert len(text) == 6 and text[0] == "0" and text[-2:] == "__"
    np.testing.assert_allclose(decode_levels(text), np.clip(values, -1, 1), atol=1 / 63)


def test_block_means_average_square_blocks():
    m = np.arange(16, dtype=float).reshape(4, 4)
    np.testing.assert_allclose(frames.block_means(m, 2), [[2.5, 4.5], [10.5, 12.5]])
    assert frames.block_means(np.ones((5, 5)), 2).shape == (2, 2)  # blocks of 3, then 2
    np.testing.assert_allclose(frames.block_means(np.ones((5, 5)), 2), 1.0)


def test_example_frames_and_charts_are_valid_and_light(tiny_bert):
    settings = cs.Settings()
    texts = windows.windows(tiny_bert.tokenizer, windows.cycled(SENTENCES), 3, length=32)
    run = cs.measure(streaming.stream(tiny_bert, texts, batch_size=2), settings)
    example = frames.example_frames(run.example, size=16)
    L, H = tiny_bert.info.layers, tiny_bert.info.heads
    assert len(example["matrices"]) == L * H and example["matrices"]["side"].iloc[0] == 16
    assert all(len(c) == 16 * 16 for c in example["matrices"]["cells"])  # blocks of 2 tokens
    first = decode_levels(example["matrices"]["cells"].iloc[0]).reshape(16, 16)
    expected = frames.block_means(run.example.similarity[0, 0], 16)
    np.testing.assert_allclose(first, expected / np.abs(expected).max(), atol=1 / 63)
    assert example["bounds"]["position"].tolist()[0] == 1  # the first sentence starts after [CLS]
    spec = charts.context_matrix_explorer(example, L, H, 0.3, frames.LEVELS).to_dict()
    params = {p["name"]: p for p in spec["params"]}
    assert params["layer"]["bind"]["max"] == L and params["head"]["bind"]["max"] == H
    assert len(json.dumps(spec)) < 60_000
    m = cs.metrics(run.stats, settings)
    for chart in (charts.head_grid(cs.head_table(run.stats, settings)),
                  charts.distance_lines(frames.distance_frame(m, [1, L])),
                  charts.block_lines(frames.layer_frame({"run": m["mean_pair_distance"]}), "d", chance=10.0),
                  charts.layer_heatmap(frames.unique_focus_frame(m), "distinct", "share", "distinct"),
                  charts.sensitivity_chart(frames.sensitivity_frame(m), {"mean_pair_distance": "d"})):
        chart.to_dict()  # validates against the Vega-Lite schema
    with pytest.raises(ParameterError, match="'matrix_size'"):
        frames.example_frames(run.example, size=1)


def test_frames_from_a_hand_made_metrics_dict():
    m = {"attended_kinds": {"[CLS]": [0.5, 0.25], "other": [0.5, 0.75]},
         "distance_histogram": [[2, 1, 1], [0, 0, 4]],
         "unique_focus_tokens": {"histogram": [[0, 1, 3], [0, 4, 0]]},
         "sensitivity": {"thresholds": [0.1, 0.5], "separator_attention": [[0.2, 0.4], [0.6, None]],
                         "mean_pair_distance": [[1.0, 2.0], [3.0, 4.0]],
                         "same_sentence_fraction": [[0.1, 0.2], [0.3, 0.4]]}}
    kinds = frames.kinds_frame(m)
    assert kinds.columns.tolist() == ["layer", "share", "kind"] and kinds["share"].tolist() == [0.5, 0.25, 0.5, 0.75]
    distance = frames.distance_frame(m, [2])
    assert distance[distance["layer"] == "block 2 of 2"]["share"].tolist() == [0, 0, 1]
    # T = 4: pairs at distance 1, 2, 3 number 3, 2, 1 of 6
    assert distance[distance["layer"] == "chance"]["share"].tolist() == pytest.approx([0.5, 1 / 3, 1 / 6])
    focus = frames.unique_focus_frame(m)
    assert focus.values.tolist() == [[1, 1, 0.25], [1, 2, 0.75], [2, 1, 1.0]]  # counts no text had: dropped
    sensitivity = frames.sensitivity_frame(m)
    assert len(sensitivity) == 11 and set(sensitivity["threshold"]) == {"0.1", "0.5"}  # one None dropped
    pd.testing.assert_frame_equal(frames.layer_frame({"a": [1, 2]}),
                                  pd.DataFrame({"layer": [1, 2], "value": [1.0, 2.0], "series": "a"}))


def test_the_charts_of_models_side_by_side_are_valid_and_light(tiny_bert):
    """Two "models" (the tiny model's pass, and the same metrics under another name): frames on
    relative depth, the summed matrices encoded in levels, per-head histograms, the null's
    draws, the tables; every chart valid against Vega-Lite and no wider than a 640 px column."""
    settings = cs.Settings()
    texts = windows.windows(tiny_bert.tokenizer, windows.cycled(SENTENCES), 4, length=32)
    run = cs.measure(streaming.stream(tiny_bert, texts, batch_size=2), settings)
    m = cs.metrics(run.stats, settings)
    by_model = {"org/tiny": m, "org/other": m}
    L, H = tiny_bert.info.layers, tiny_bert.info.heads
    frame = frames.depth_frame(by_model, "mean_pair_distance", chance="mean_pair_distance_chance")
    assert set(frame["model"]) == {"tiny", "other"} and frame["relative_depth"].max() == 1.0
    np.testing.assert_allclose(frame[frame["model"] == "tiny"]["relative_depth"], np.arange(1, L + 1) / L)
    summed = frames.summed_frame(by_model)
    assert len(summed) == 2 * len({1, (L + 1) // 2, L}) and all(len(c) == cs.SUMMED_SIDE ** 2 for c in summed["cells"])
    distances = frames.head_distance_frame(by_model)
    shares = distances.groupby(["panel", "head"])["share"].sum()
    assert ((shares - 1).abs() < 1e-9).all() and distances["head"].max() == H
    draws, observed = frames.null_draws_frame(by_model, "unique_focus_fraction")
    assert len(draws) == 2 * cs.NULL_DRAWS and observed["value"].tolist() == [m["unique_focus_fraction"].mean()] * 2
    tables = (frames.class_table(by_model), frames.stability_table(by_model), frames.ratio_table(by_model))
    assert all(t.notna().all().all() for t in tables)  # missing values are "—"
    heads = cs.head_tables({"org/tiny": run, "org/other": run}, settings)
    built = [charts.depth_lines(frame, "d"), charts.kinds_by_model_chart(frames.kinds_by_model(by_model)),
             charts.summed_matrices(summed, frames.LEVELS), charts.head_distance_chart(distances),
             charts.head_class_grids(heads), charts.null_histogram(draws, observed, "share"),
             charts.distance_lines_by_model(frames.distances_by_model(by_model)),
             charts.sensitivity_by_model(by_model, {"mean_pair_distance": "d"})]
    for chart in built:
        spec = chart.to_dict()  # validates against the Vega-Lite schema
        widths = [v for k, v in _walk(spec) if k == "width" and isinstance(v, (int, float))]
        assert all(w <= 640 for w in widths), widths
    assert len(json.dumps(charts.summed_matrices(summed, frames.LEVELS).to_dict())) < 20_000


def _walk(tree, key=None):
    """Every (key, value) of a nested spec."""
    if isinstance(tree, dict):
        for k, v in tree.items():
            yield k, v
            yield from _walk(v, k)
    elif isinstance(tree, list):
        for v in tree:
            yield from _walk(v, key)


def test_what_a_run_did_not_measure_leaves_an_empty_frame_and_a_row_of_dashes():
    """One text (no halves for the head rule) whose window ends no sentence (no R-precision): the chart
    frame has no rows but its columns, the stability table a row of "—"."""
    by_model = {"org/tiny": {"head_stability": None, "segmentation": {"r_precision": None, "chance": None}}}
    frame = frames.depth_frame(by_model, "segmentation.r_precision", chance="segmentation.chance")
    assert frame.empty and list(frame.columns) == ["model", "block", "relative_depth", "value", "chance"]
    charts.depth_lines(frame, "R-precision").to_dict()
    table = frames.stability_table(by_model)
    assert table.index.tolist() == ["tiny"] and (table == "—").all().all() and "Cohen's κ" in table.columns
    assert {"focus J, subsets", "chance, topics"} <= set(table.columns)



def test_overlap_table_gives_each_block_its_share_and_its_heads_range():
    found = {"attention_overlap": {"share": [0.1, 0.3], "head_share": [[0.0, 0.2], [0.5, 0.1]], "rank": [0.2, -0.1],
                                   "head_rank": [[0.1, 0.3], [-0.2, 0.0]]}}
    table = frames.overlap_table({"org/model-a": found})
    assert table.index.tolist() == [("model-a", 1), ("model-a", 2)]
    assert table["lowest head"].tolist() == [0.0, 0.1] and table["highest head"].tolist() == [0.2, 0.5]
    assert table["mean ρ"].tolist() == [0.2, -0.1] and table["lowest head ρ"].tolist() == [0.1, -0.2]
    cosine = frames.overlap_table({"org/model-a": {"cosine_overlap": found["attention_overlap"]}}, "cosine_overlap")
    assert cosine.equals(table)
