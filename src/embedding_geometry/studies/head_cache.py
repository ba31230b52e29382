"""Chapter 4's head pass, batch by batch, cached on disk by content: a chapter that streams the
same windows through the same model (chapter 8's head pass reads the first ``head_texts`` of
chapter 4's) reads the statistics chapter 4 computed instead of running those windows again.

A batch of windows through a model reduces to a
:class:`~embedding_geometry.studies.context_stats.ContextStats` (:func:`.context_batch.batch_statistics`),
and statistics add; so a pass is a sum of per-batch entries. One entry (``core.disk_cache``, in
the activation cache's folder) holds one batch's statistics under the key

    joblib.hash([model weights' SHA-256, each window's token ids, sentence ids and separators,
                 the settings, the index of the batch's first window, package version,
                 the names of the per-text rows, the float path when perturbed])

(the index seeds each text's random-positions null, so it is part of what the statistics are).
Chapter 4 stores every batch it streams (:func:`store`, from ``context_similarity.measure``);
:func:`statistics` cuts a list of windows into the same batches and streams only those it finds
no entry for, one batch at a time: constant memory, whatever the number of windows.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import joblib

from .. import __version__
from ..core import disk_cache, float_path, streaming
from ..core.models import LoadedModel
from ..core.windows import Window
from .context_batch import TextBatch, batch_statistics
from .context_stats import TEXT_ROWS, ContextStats, Settings, TextRows


@dataclass
class Entry:
    """One batch's statistics under its key."""

    key: str
    stats: ContextStats


def key(loaded: LoadedModel, windows: Sequence[Window], settings: Settings, first: int) -> str:
    """The content key of a batch's statistics (module docstring)."""
    texts = [[w.input_ids.tolist(), w.sentence_ids.tolist(), w.separators.tolist()] for w in windows]
    perturbed = [spec] if (spec := float_path.current().spec) else []
    return joblib.hash(["head statistics, focus pieces", disk_cache.model_identity(loaded.info), texts,
                        settings.to_dict(), int(first), __version__, list(TEXT_ROWS), *perturbed])


def store(loaded: LoadedModel, windows: Sequence[Window], settings: Settings, first: int, stats: ContextStats,
          cache_dir: str | Path | None = None) -> None:
    """Keep one batch's statistics (its per-text rows cut to the batch's texts)."""
    rows = TextRows(block=max(stats.per_text.count, 1))
    rows.extend(stats.per_text)
    found = key(loaded, windows, settings, first)
    disk_cache.store(disk_cache.entry(cache_dir, found), Entry(found, replace(stats, per_text=rows)))


def load(loaded: LoadedModel, windows: Sequence[Window], settings: Settings, first: int,
         cache_dir: str | Path | None = None) -> ContextStats | None:
    """A batch's stored statistics (per-text rows in the running totals' blocks), or None."""
    found = key(loaded, windows, settings, first)
    entry = disk_cache.load(disk_cache.entry(cache_dir, found), found, Entry, "head cache")
    if entry is None:
        return None
    rows = TextRows()
    rows.extend(entry.stats.per_text)
    return replace(entry.stats, per_text=rows)


def statistics(loaded: LoadedModel, windows: Sequence[Window], settings: Settings, first: int = 0,
               batch_size: int = 32, cache: bool = True,
               cache_dir: str | Path | None = None) -> Iterator[tuple[int, ContextStats]]:
    """(index of the batch's first window, its statistics) for ``windows`` (window ``first`` onwards
    of a pass) in batches of ``batch_size`` (a perturbed float path may set another): each batch
    read from the cache, or, with none there (or without ``cache``), streamed through the model
    and, with ``cache``, stored."""
    size = float_path.current().forward_batch(batch_size)
    for start in range(0, len(windows), size):
        batch, at = windows[start:start + size], first + start
        found = load(loaded, batch, settings, at, cache_dir) if cache else None
        if found is None:
            (captured,) = streaming.stream(loaded, batch, size)
            found = batch_statistics(captured.head_out, captured.pattern, TextBatch.of(batch), settings, first=at)
            del captured  # else held while the next batch is captured (two batches' attention maps at once)
            if cache:
                store(loaded, batch, settings, at, found, cache_dir)
        yield at, found
