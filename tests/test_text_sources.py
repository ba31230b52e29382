"""A corpus of any size (core.text_sources): text files, JSON lines and TSV read a run of texts at
a time, a hub dataset through ``datasets`` (here a local stand-in for the hub), and every bad
file a one-line ParameterError that names the parameter and the fault."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from embedding_geometry.core import text_sources as ts
from embedding_geometry.core.errors import ParameterError
from embedding_geometry.studies.depth_statistics import TextSet

TEXTS = [f"sentence number {i} of the corpus" for i in range(10)]


def written(path, lines: list[str]) -> str:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return str(path)


def refusal(spec: str, column: str = "text", limit=None) -> str:
    with pytest.raises(ParameterError) as error:
        ts.open_source(spec, column, limit)
    message = str(error.value)
    assert len(message.splitlines()) == 1
    return message


@pytest.mark.parametrize("kind", ["txt", "jsonl", "tsv"])
def test_every_format_reads_its_texts_in_order_any_run_at_a_time(tmp_path, kind):
    rows = {"txt": TEXTS[:3] + ["", "   "] + TEXTS[3:],  # blank lines are skipped
            "jsonl": [json.dumps({"id": i, "text": t}) for i, t in enumerate(TEXTS)],
            "tsv": ["id\ttext", *[f"{i}\t{t}" for i, t in enumerate(TEXTS)]]}[kind]
    source = ts.open_source(written(tmp_path / f"c.{kind}", rows))
    assert source.n_texts == len(TEXTS) and len(source.digest) == 64
    assert source.texts(0, 10) == TEXTS and source.texts(3, 5) == TEXTS[3:5] and source.texts(8, 99) == TEXTS[8:]
    assert ts.open_source(source.spec, limit=4).texts(0, 99) == TEXTS[:4]  # the first corpus_texts


def test_a_process_that_did_not_open_the_corpus_reads_the_same_texts(tmp_path):
    """What a Ray worker does: it gets the opened source and builds its place index on its first shard."""
    source = ts.open_source(written(tmp_path / "c.txt", TEXTS))
    code = (f"from embedding_geometry.core.text_sources import TextSource; import json; "
            f"print(json.dumps(TextSource(*{[source.spec, source.column, None, source.n_texts, source.digest]})"
            f".texts(6, 9)))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(done.stdout) == TEXTS[6:9]


def test_a_relative_path_is_kept_absolute_for_workers_in_other_folders(tmp_path, monkeypatch):
    written(tmp_path / "c.txt", TEXTS)
    monkeypatch.chdir(tmp_path)
    source = ts.open_source("c.txt")
    monkeypatch.chdir(tmp_path.parent)
    assert source.spec == str(tmp_path.resolve() / "c.txt") and source.texts(0, 2) == TEXTS[:2]


def test_a_file_changed_after_it_was_opened_is_refused(tmp_path):
    source = ts.open_source(written(tmp_path / "c.txt", TEXTS))
    written(tmp_path / "c.txt", TEXTS[::-1])
    os.utime(tmp_path / "c.txt", ns=(1, 1))
    with pytest.raises(ParameterError, match="it changed since the run began"):
        source.texts(0, 2)


def test_the_corpus_cycles_for_the_head_pass(tmp_path):
    source = ts.open_source(written(tmp_path / "c.txt", TEXTS[:3]))
    stream = source.cycled(batch=2)
    assert [next(stream) for _ in range(7)] == TEXTS[:3] * 2 + TEXTS[:1]


def test_bad_files_are_one_line_that_names_the_parameter_and_the_fault(tmp_path):
    assert refusal(str(tmp_path / "nothing.txt")).endswith("(no such file)")
    assert "it is a folder" in refusal(str(tmp_path))
    assert refusal(written(tmp_path / "empty.txt", ["", " "])).endswith("(it holds 0 texts)")
    assert refusal(written(tmp_path / "one.txt", ["one text"])).endswith("(it holds 1 text)")
    (tmp_path / "latin1.txt").write_bytes("a text\ncafé au lait\n".encode("latin-1"))
    message = refusal(str(tmp_path / "latin1.txt"))
    assert message.startswith("parameter 'corpus' expects None (chapter 3's corpus), a UTF-8 file")
    assert message.endswith("(line 2 is not UTF-8)")
    assert refusal(written(tmp_path / "c.jsonl", ['{"text": "a b"}', "{oops"])).endswith("(line 2 is not JSON)")
    column = refusal(written(tmp_path / "d.jsonl", ['{"text": "a b"}', '{"body": "c d"}']))
    assert column.startswith("parameter 'corpus_column' expects a column of every text of") and "line 2" in column
    surrogate = written(tmp_path / "e.jsonl", ['{"text": "a b"}', '{"text": "c \\ud800"}'])
    assert refusal(surrogate).endswith("(line 2 holds a lone surrogate, not valid Unicode)")
    header = refusal(written(tmp_path / "c.tsv", ["id\tbody", "1\ta b"]))
    assert header.startswith("parameter 'corpus_column'") and "header names ['id', 'body']" in header
    assert "line 3 has 1 tab-separated fields, the header 2" in refusal(written(tmp_path / "d.tsv",
                                                                                ["id\ttext", "1\ta b", "c d"]))


class Hub:
    """``datasets.load_dataset`` for a stand-in hub: the named dataset's rows, built locally."""

    def __init__(self, rows: dict):
        self.rows, self.calls = rows, []

    def __call__(self, name, config=None, split="train"):
        import datasets

        self.calls.append((name, config, split))
        if name != "org/passages":
            raise FileNotFoundError(f"Dataset '{name}' doesn't exist on the Hub or cannot be accessed.")
        return datasets.Dataset.from_dict(self.rows)


def test_a_hub_dataset_is_read_by_rows_with_its_split_and_config(monkeypatch):
    import datasets

    hub = Hub({"passage": [TEXTS[0], "  ", *TEXTS[1:]], "n": list(range(11))})
    monkeypatch.setattr(datasets, "load_dataset", hub)
    source = ts.open_source("hub:org/passages:default:validation", column="passage")
    assert source.n_texts == 10 and source.texts(1, 4) == TEXTS[1:4] and hub.calls == [
        ("org/passages", "default", "validation")]
    assert ts.hub_parts("hub:org/passages") == ("org/passages", None, "train")
    assert ts.hub_parts("hub:org/passages:test") == ("org/passages", None, "test")
    assert "columns are ['passage', 'n']" in refusal("hub:org/passages:x", column="text")
    assert "could not be loaded" in refusal("hub:org/missing") and "FileNotFoundError" in refusal("hub:org/missing")
    assert "a hub spec is hub:<dataset id>" in refusal("hub:org/passages::")


def test_a_text_set_reads_its_units_from_its_corpus(tmp_path):
    source = ts.open_source(written(tmp_path / "c.txt", TEXTS))
    text_set = TextSet("corpus", "texts", corpus=source)
    assert text_set.n_units == 10 and text_set.unit_texts(2, 4) == TEXTS[2:4]
    assert ts.of_parameters({"corpus": None}) is None
    assert ts.of_parameters({"corpus": source.spec, "corpus_column": "text", "corpus_texts": 3}).n_texts == 3
