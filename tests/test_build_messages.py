"""What the build prints when a chapter fails in a cell (book/build.py ``failure_message``): an
error the book raises on purpose for a bad input names its culprit itself; any other error is a
bug, and its line says so, with the chapter, the parameter values that led there and how to
report it, while the chapter's log gets the traceback, the cell and every value."""

from __future__ import annotations

import re

import pytest

from papermill import PapermillExecutionError

from embedding_geometry.book import build
from fuzz_values import one_line

PARAMS = {"model": "/models/tiny", "seed": 0, "sentences": ["The cat sat on the mat", "A dog barked", "🙂🙂"]}


def failed(ename: str, evalue: str) -> PapermillExecutionError:
    return PapermillExecutionError(cell_index=7, exec_count=6, source="ch.add_metrics(study.collapse(acts))",
                                   ename=ename, evalue=evalue,
                                   traceback=["\x1b[0;31mValueError\x1b[0m Traceback (most recent call last)",
                                              "  File geometry.py, line 139, in _check_stacks", f"{ename}: {evalue}"])


def test_a_bug_inside_a_cell_names_the_chapter_the_values_and_how_to_report_it(tmp_path):
    log = tmp_path / "build" / "logs" / "01_layer_by_layer.log"
    log.parent.mkdir(parents=True)
    log.write_text("kernel start-up notices\n")
    error = failed("ValueError", "text 2: needs a [depths, tokens ≥ 2, D] stack; got shape (4, 1, 40)")
    message = build.failure_message(error, "01_layer_by_layer", PARAMS, log, tmp_path)
    assert one_line(message)
    assert message.startswith("cell 6: ValueError: text 2: needs a [depths, tokens ≥ 2, D] stack; got shape (4, 1, 40)"
                              " — a bug in the book, not a bad value: chapter 01_layer_by_layer failed inside its code"
                              " with model='/models/tiny', seed=0, sentences=")
    assert "'🙂🙂'" in message or "..." in message
    assert message.endswith("please report it with build/logs/01_layer_by_layer.log (it holds the traceback and "
                            "every value)")
    written = log.read_text()
    assert written.startswith("kernel start-up notices\n")  # the kernel's log is kept, the report follows it
    assert "=== chapter 01_layer_by_layer failed in cell 6: a bug in the book, not a bad value ===" in written
    assert '"🙂🙂"' in written and "ch.add_metrics(study.collapse(acts))" in written
    assert "File geometry.py, line 139" in written and "\x1b[" not in written


def test_an_error_the_book_raises_for_a_bad_input_is_its_own_one_line(tmp_path):
    log = tmp_path / "chapter.log"
    log.write_text("")
    for ename, evalue in [("ParameterError", "parameter 'sentences' expects texts of at least 2 word tokens; got 'x'"),
                          ("ModelUnavailableError", "model 'org/name' is not available offline"),
                          ("DamagedResultsError", "benchmark file b.json is damaged: not complete JSON")]:
        message = build.failure_message(failed(ename, evalue), "01_layer_by_layer", PARAMS, log, tmp_path)
        assert message == f"cell 6: {ename}: {evalue}"
    assert log.read_text() == ""


def test_a_ledger_that_does_not_fit_the_metrics_is_the_books_bug(tmp_path):
    log = tmp_path / "chapter.log"
    error = failed("LedgerError", "claim 'x': metric 'y' is missing")
    message = build.failure_message(error, "02_x", {}, log, tmp_path)
    assert re.search(r"a bug in the book, not a bad value: chapter 02_x failed inside its code with the notebook's "
                     r"defaults; please report it with .*chapter\.log", message)


def test_a_kernel_that_dies_before_it_answers_is_started_once_more_and_a_second_death_is_raised(monkeypatch,
                                                                                                tmp_path, capsys):
    import papermill

    calls = []

    def dies(times):
        def execute(*args, **kwargs):
            calls.append(kwargs["kernel_manager_class"])
            if len(calls) <= times:
                raise RuntimeError("Kernel died before replying to kernel_info")
        return execute

    monkeypatch.setattr(papermill, "execute_notebook", dies(1))
    build._execute(tmp_path / "07_training_objective.ipynb", tmp_path / "out.ipynb", {}, tmp_path)
    assert len(calls) == 2 and "07_training_objective: Kernel died" in capsys.readouterr().err
    calls.clear()
    monkeypatch.setattr(papermill, "execute_notebook", dies(2))
    with pytest.raises(RuntimeError, match="kernel_info"):
        build._execute(tmp_path / "07_training_objective.ipynb", tmp_path / "out.ipynb", {}, tmp_path)
    assert len(calls) == 2
    calls.clear()
    monkeypatch.setattr(papermill, "execute_notebook", lambda *a, **k: calls.append(1) or 1 / 0)
    with pytest.raises(ZeroDivisionError):  # any other error is not retried
        build._execute(tmp_path / "07_training_objective.ipynb", tmp_path / "out.ipynb", {}, tmp_path)
    assert calls == [1]
