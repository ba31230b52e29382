"""Forward passes shared across chapters through the caches (issue 30: no text runs through a
model twice in one build): chapters 1, 4 and 8 run on the tiny model through the calls their
notebooks make, in one process with one cache, and every forward pass is counted.

A forward pass happens only on a cache miss (an ``activations.extract`` whose key is not stored)
or in a head pass (chapter 4's stream, or a batch of chapter 8's that chapter 4 did not stream);
no key misses twice, no window is streamed twice through a model, and chapter 8 runs no text
that chapters 1 and 4 ran.
"""

from __future__ import annotations

from collections import Counter

import pytest

from embedding_geometry.book import atlas
from embedding_geometry.book.atlas import plan
from embedding_geometry.core import activations, disk_cache, models, streaming
from embedding_geometry.studies import context_similarity, layer_by_layer, layer_runs
from embedding_geometry.studies.context_stats import Settings

HEADS = {"texts": "corpus", "n_texts": 6, "text_length": 32, "batch_size": 4, "seed": 0}
ATLAS = {"models": [], "random_control": True, "control_seeds": 1, "corpus_texts": 24, "head_texts": 4,
         "head_length": 32, "device": "cpu", "batch_size": 4, "seed": 0, "trust_remote_code": False,
         "sample_size": 10, "shard_texts": None, "atlas_results": None}


class Passes:
    """Every forward pass, by phase: the extractions that missed the cache (model, texts, options)
    and the windows streamed (model, window text); and the model calls made outside both."""

    def __init__(self, monkeypatch):
        self.phase, self.inside = "", 0
        self.missed: list[tuple] = []
        self.streamed: list[tuple] = []
        self.stray = 0
        forward, stream, call = activations._forward, streaming.stream, activations.run_with_cache

        def counted_forward(loaded, texts, max_length, batch_size, attentions, progress, source, layers=None,
                            after_attention=False):
            self.missed.append((self.phase, disk_cache.model_identity(loaded.info), tuple(texts), attentions,
                                after_attention))
            with self.within():
                return forward(loaded, texts, max_length, batch_size, attentions, progress, source, layers,
                               after_attention)

        def counted_stream(loaded, texts, batch_size=32, total=None, progress=False):
            for captured in self._in(stream(loaded, texts, batch_size, total, progress)):
                self.streamed += [(self.phase, disk_cache.model_identity(loaded.info), w.text)
                                  for w in captured.windows]
                yield captured

        def counted_call(*args, **kwargs):
            self.stray += not self.inside
            return call(*args, **kwargs)

        monkeypatch.setattr(activations, "_forward", counted_forward)
        monkeypatch.setattr(streaming, "stream", counted_stream)
        monkeypatch.setattr(activations, "run_with_cache", counted_call)
        monkeypatch.setattr(streaming, "run_with_cache", counted_call)

    def within(self):
        passes = self

        class Inside:
            def __enter__(self):
                passes.inside += 1

            def __exit__(self, *exc):
                passes.inside -= 1
        return Inside()

    def _in(self, iterator):
        while True:
            with self.within():
                item = next(iterator, None)
            if item is None:
                return
            yield item


@pytest.fixture
def passes(monkeypatch, tmp_path, tiny_bert_dir):
    """Chapters 1, 4 and 8 in order on the tiny model (with a random-init control), one cache."""
    monkeypatch.setenv("EMBEDDING_GEOMETRY_CACHE", str(tmp_path / "cache"))
    found = Passes(monkeypatch)
    trained = models.load(str(tiny_bert_dir), device="cpu")
    found.phase = "01"
    layer_runs.run_all(lambda texts, model, **o: activations.extract(model, texts, batch_size=4, progress=False, **o),
                       [trained, models.random_control(trained, 0)], layer_by_layer.inputs())
    found.phase = "04"
    context_similarity.run(trained, {**Settings().to_dict(), **HEADS})
    found.phase = "08"
    atlas.run(plan.from_parameters({**ATLAS, "model": str(tiny_bert_dir)}, tmp_path / "atlas"))
    return found


def test_no_text_list_or_window_runs_twice_and_every_pass_goes_through_a_cache(passes):
    assert passes.stray == 0  # no forward pass outside an extraction that missed or a head pass
    lists = Counter((model, texts, attentions) for _, model, texts, attentions, _ in passes.missed)
    assert max(lists.values()) == 1
    windows = Counter((model, text) for _, model, text in passes.streamed)
    assert max(windows.values()) == 1
    earlier = {(model, text) for phase, model, texts, *_ in passes.missed if phase != "08" for text in texts}
    later = {(model, text) for phase, model, texts, *_ in passes.missed if phase == "08" for text in texts}
    sentences = set(layer_by_layer.inputs()["sentences"])
    assert later and not {text for _, text in later} & sentences  # chapter 8's sentences: chapter 1's pass
    assert [p for p in passes.streamed if p[0] == "08"] == []  # its head windows: chapter 4's batches
    assert {phase for phase, *_ in passes.streamed} == {"04"}
    split = [texts for _, _, texts, _, after in passes.missed if after]
    assert split == [tuple(layer_by_layer.inputs()["sentences"])]  # the sublayer states: in chapter 1's pass
    assert earlier  # chapters 1 and 4 did run
