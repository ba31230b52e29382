"""The project's corpus and the SNLI loader (through local data files: no network)."""

import json

import pandas as pd
import pytest

from embedding_geometry.core import corpora
from embedding_geometry.core.errors import ParameterError


@pytest.fixture(scope="module")
def frame():
    return corpora.corpus()


def test_corpus_has_the_promised_shape(frame):
    assert list(frame.columns) == ["sentence", "topic"]
    assert len(frame) >= 600
    assert frame["topic"].nunique() >= 12
    assert frame["topic"].value_counts().min() >= 30
    assert {"scenes", "news", "science", "sport", "cooking", "law", "medicine", "software"} <= set(frame["topic"])


def test_corpus_sentences_are_unique_clean_and_of_varied_length(frame):
    assert frame["sentence"].is_unique
    assert (frame["sentence"] == frame["sentence"].str.strip()).all()
    assert not frame["sentence"].str.contains("\t").any()
    words = frame["sentence"].str.split().str.len()
    assert words.min() >= 4 and words.max() <= 40
    assert (words <= 6).sum() >= 10 and (words >= 25).sum() >= 10
    assert words.std() > 3


def test_corpus_is_in_file_order(frame):
    lines = corpora._data(corpora.CORPUS_FILE).read_text(encoding="utf-8").splitlines()
    assert lines[0] == "topic\tsentence"
    assert lines[1].split("\t") == [frame["topic"][0], frame["sentence"][0]]
    assert lines[-1].split("\t") == [frame["topic"].iloc[-1], frame["sentence"].iloc[-1]]


def test_load_corpus_samples_in_order_and_is_seeded(frame):
    sample = corpora.load_corpus("project", n=50, seed=3)
    assert len(sample) == 50 and sample.equals(corpora.load_corpus("project", n=50, seed=3))
    positions = [frame.index[frame["sentence"] == s][0] for s in sample["sentence"]]
    assert positions == sorted(positions)
    assert not sample.equals(corpora.load_corpus("project", n=50, seed=4))
    assert corpora.load_corpus("project").equals(frame)
    assert len(corpora.load_corpus("project", n=10_000)) == len(frame)
    with pytest.raises(ParameterError, match="parameter 'corpus' expects one of 'project', 'snli'"):
        corpora.load_corpus("wiki")


SNLI_ROWS = [
    {"premise": "A man in a blue shirt is cutting the wood.", "hypothesis": "A man works.", "label": 0},
    {"premise": "A man in a blue shirt is cutting the wood.", "hypothesis": "A man sleeps.", "label": 2},
    {"premise": "Several girls are playing darts.", "hypothesis": "Girls play a game.", "label": 0},
    {"premise": "Two dogs run on the beach.", "hypothesis": "Animals outside.", "label": 1},
]


def test_snli_loader_reads_local_json_lines(tmp_path):
    path = tmp_path / "snli_validation.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in SNLI_ROWS))
    rows = corpora.snli(data_files=str(path))
    assert rows.to_dict("list") == {
        "sentence": ["A man in a blue shirt is cutting the wood.", "Several girls are playing darts.",
                     "Two dogs run on the beach."],
        "topic": ["snli"] * 3,
    }
    assert list(corpora.snli(data_files=[str(path)], n=2)["sentence"]) == rows["sentence"][:2].tolist()


def test_snli_loader_reads_local_csv_and_names_bad_input(tmp_path):
    path = tmp_path / "snli.csv"
    pd.DataFrame(SNLI_ROWS).to_csv(path, index=False)
    assert len(corpora.snli(split="test", data_files=str(path))) == 3
    with pytest.raises(ParameterError, match="parameter 'n'"):
        corpora.snli(data_files=str(path), n=0)
    other = tmp_path / "other.csv"
    pd.DataFrame({"text": ["no premise here"]}).to_csv(other, index=False)
    with pytest.raises(ParameterError, match="'premise' column"):
        corpora.snli(data_files=str(other))
    with pytest.raises(ParameterError, match="parameter 'corpus' expects SNLI"):
        corpora.snli(data_files=str(tmp_path / "missing.jsonl"))
