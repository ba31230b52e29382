"""The head cache: chapter 4's pass stores each batch's head statistics, and a pass over the
same windows (chapter 8's head pass, a prefix of chapter 4's) reads them instead of running the
model, with the statistics a fresh pass would give."""

import dataclasses

import numpy as np
import pytest

from embedding_geometry.core import streaming, windows
from embedding_geometry.studies import context_similarity as cs
from embedding_geometry.studies import depth_statistics, head_cache
from embedding_geometry.studies.context_stats import Settings

PARAMS = {**Settings().to_dict(), "texts": "corpus", "n_texts": 6, "text_length": 24, "batch_size": 2}


def assert_same_statistics(a, b):
    """Every total, focus piece and per-text row of two ContextStats, exactly."""
    for f in dataclasses.fields(a):
        if f.name not in ("per_text", "focus_pieces"):
            np.testing.assert_array_equal(getattr(a, f.name), getattr(b, f.name), err_msg=f.name)
    assert a.focus_pieces == b.focus_pieces
    rows_a, rows_b = a.text_rows(), b.text_rows()
    assert rows_a.keys() == rows_b.keys()
    for name in rows_a:
        np.testing.assert_array_equal(rows_a[name], rows_b[name], err_msg=name)


def no_forward(*args, **kwargs):
    raise AssertionError("a window ran through the model again")


@pytest.fixture
def cached(tiny_bert, tmp_path, monkeypatch):
    """Chapter 4's pass on the tiny model with an empty cache: its measurement and its windows."""
    monkeypatch.setenv("EMBEDDING_GEOMETRY_CACHE", str(tmp_path))
    run = cs.run(tiny_bert, PARAMS)
    return run, list(cs.texts_of(tiny_bert, PARAMS))


def test_chapter_4_stores_one_entry_per_batch_and_a_prefix_reads_them_without_the_model(cached, tiny_bert,
                                                                                       tmp_path, monkeypatch):
    run, cut = cached
    assert len(list(tmp_path.glob("*.joblib"))) == 3  # 6 windows in batches of 2
    monkeypatch.setattr(streaming, "stream", no_forward)
    settings = Settings.from_parameters(PARAMS)
    found = list(head_cache.statistics(tiny_bert, cut[:4], settings, 0, PARAMS["batch_size"]))
    assert [first for first, _ in found] == [0, 2]
    total = found[0][1] + found[1][1]
    rest = head_cache.load(tiny_bert, cut[4:], settings, 4)
    assert_same_statistics(total + rest, run.stats)


def test_a_pass_past_the_cached_windows_streams_only_the_rest_and_stores_it(cached, tiny_bert, tmp_path, monkeypatch):
    _, cut = cached
    more = list(windows.from_source(tiny_bert.tokenizer, "corpus", 8, PARAMS["text_length"], 0))
    assert [w.text for w in more[:6]] == [w.text for w in cut]
    streamed = []
    original = streaming.stream
    monkeypatch.setattr(streaming, "stream", lambda loaded, batch, size: streamed.append(
        [w.text for w in batch]) or original(loaded, batch, size))
    settings = Settings.from_parameters(PARAMS)
    list(head_cache.statistics(tiny_bert, more, settings, 0, PARAMS["batch_size"]))
    assert streamed == [[w.text for w in more[6:]]]
    assert len(list(tmp_path.glob("*.joblib"))) == 4
    fresh = list(head_cache.statistics(tiny_bert, more[6:], settings, 6, PARAMS["batch_size"], cache=False))
    assert_same_statistics(head_cache.load(tiny_bert, more[6:], settings, 6), fresh[0][1])


def test_the_key_names_the_model_the_windows_their_place_and_the_settings(cached, tiny_bert):
    from embedding_geometry.core import models

    _, cut = cached
    settings = Settings.from_parameters(PARAMS)
    base = head_cache.key(tiny_bert, cut[:2], settings, 0)
    assert head_cache.key(tiny_bert, cut[:2], settings, 0) == base
    others = {head_cache.key(tiny_bert, cut[2:4], settings, 0), head_cache.key(tiny_bert, cut[:2], settings, 2),
              head_cache.key(tiny_bert, cut[:2], dataclasses.replace(settings, q=0.95), 0),
              head_cache.key(models.random_control(tiny_bert, 0), cut[:2], settings, 0)}
    assert base not in others and len(others) == 4
    assert head_cache.load(tiny_bert, cut[:2], dataclasses.replace(settings, q=0.95), 0) is None


def test_chapter_8s_head_set_reads_chapter_4s_statistics(cached, tiny_bert, monkeypatch):
    """The atlas's accumulator of the first four windows, from the cache, gives the metrics of
    a fresh pass over them."""
    _, cut = cached
    text_set = depth_statistics.TextSet("heads", "windows", source="corpus", windows=4, length=PARAMS["text_length"])
    from_cache = text_set.accumulator()
    with monkeypatch.context() as patched:
        patched.setattr(streaming, "stream", no_forward)
        for first, stats in head_cache.statistics(tiny_bert, cut[:4], from_cache.settings, 0, PARAMS["batch_size"]):
            from_cache.add(stats, range(first, first + stats.texts))
    fresh = text_set.accumulator()
    for first, stats in head_cache.statistics(tiny_bert, cut[:4], fresh.settings, 0, 4, cache=False):
        fresh.add(stats, range(first, first + stats.texts))
    found, expected = from_cache.result(), fresh.result()
    for key in ("mean_pair_distance", "separator_attention", "same_sentence_fraction", "unique_focus_fraction"):
        np.testing.assert_allclose(np.asarray(found[key], float), np.asarray(expected[key], float), rtol=1e-6,
                                   err_msg=key)
    with pytest.raises(ValueError, match="consecutive unit indices"):
        fresh.add(stats, range(1))
