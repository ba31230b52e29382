"""How the build runs its chapters (book/schedule.py ``_run_chapters``): a chapter that declares
``alongside`` runs in a second process, ranked lower by the scheduler, a summary page waits for
it, and while two chapters share the cores every kernel's thread pools wait without spinning
(``SHARED_CORES``)."""

from __future__ import annotations

import json
import os

import pytest

from embedding_geometry.book import schedule


def recording_runner(notebook, params, root, force=False):
    """A chapter runner that writes down what it saw: the thread-pool variables of its environment."""
    seen = {name: os.environ.get(name) for name in schedule.SHARED_CORES}
    (root / f"{notebook.stem}.seen.json").write_text(json.dumps(seen))
    (root / f"{notebook.stem}.nice").write_text(str(os.nice(0)))
    return schedule.Outcome(notebook.stem, "ran", 0.0)


def notebooks(root, metadata: dict[str, dict]):
    folder = root / "notebooks"
    folder.mkdir()
    for slug, declared in metadata.items():
        (folder / f"{slug}.ipynb").write_text(json.dumps(
            {"cells": [], "metadata": {"embedding_geometry": declared}, "nbformat": 4, "nbformat_minor": 5}))
    return {folder / f"{slug}.ipynb": {} for slug in metadata}


def seen(root, slug):
    return json.loads((root / f"{slug}.seen.json").read_text())


@pytest.fixture
def clean_environment(monkeypatch):
    for name in schedule.SHARED_CORES:
        monkeypatch.delenv(name, raising=False)


def test_a_chapter_alongside_makes_every_kernel_wait_without_spinning(tmp_path, clean_environment):
    planned = notebooks(tmp_path, {"01_a": {}, "07_trains": {"alongside": True},
                                   "99_summary": {"depends_on_results": True}})
    outcomes = schedule.run_chapters(planned, tmp_path, False, recording_runner)
    assert [o.slug for o in outcomes] == ["01_a", "07_trains", "99_summary"]  # the summary waited for chapter 7
    for slug in ("01_a", "07_trains", "99_summary"):
        assert seen(tmp_path, slug) == schedule.SHARED_CORES, slug
    niceness = {slug: int((tmp_path / f"{slug}.nice").read_text()) for slug in ("01_a", "07_trains", "99_summary")}
    assert niceness["07_trains"] - niceness["01_a"] == schedule.ALONGSIDE_NICENESS  # the chapters in order come first
    assert niceness["99_summary"] == niceness["01_a"] == os.nice(0)
    assert not any(name in os.environ for name in schedule.SHARED_CORES)  # the build's own environment is restored


def test_chapters_in_one_process_keep_the_pools_default_waiting(tmp_path, clean_environment):
    planned = notebooks(tmp_path, {"01_a": {}, "02_b": {}})
    schedule.run_chapters(planned, tmp_path, False, recording_runner)
    assert seen(tmp_path, "02_b") == {name: None for name in schedule.SHARED_CORES}


def test_a_value_the_caller_set_is_kept(tmp_path, clean_environment, monkeypatch):
    monkeypatch.setenv("OMP_WAIT_POLICY", "ACTIVE")
    planned = notebooks(tmp_path, {"01_a": {}, "07_trains": {"alongside": True}})
    schedule.run_chapters(planned, tmp_path, False, recording_runner)
    assert seen(tmp_path, "07_trains")["OMP_WAIT_POLICY"] == "ACTIVE"
    assert seen(tmp_path, "01_a")["OPENBLAS_THREAD_TIMEOUT"] == schedule.SHARED_CORES["OPENBLAS_THREAD_TIMEOUT"]
    assert os.environ["OMP_WAIT_POLICY"] == "ACTIVE"
