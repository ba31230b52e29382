"""Compounds that WordPiece splits: composition, stability, margins and the subword study."""

import numpy as np
import pytest

from embedding_geometry.core import activations
from embedding_geometry.chapters.ch05_without_tears import compounds

from synthetic_records import record


def test_composition_stability_and_margin_by_hand():
    vectors = np.eye(3)
    parts = [np.array([[1.0, 0.1, 0.0], [1.0, -0.1, 0.0]]), np.array([[0.0, 1.0, 0.2]]), np.array([[0.1, 0.0, 1.0]])]
    result = compounds.composition(vectors, parts)
    assert result["top1"] == 1.0 and result["hits"] == [1.0, 1.0, 1.0] and result["chance"] == pytest.approx(1 / 3)
    crossed = compounds.composition(vectors, [parts[1], parts[0], parts[2]])  # the first two parts swapped
    assert crossed["hits"] == [0.0, 0.0, 1.0] and crossed["top1"] == pytest.approx(1 / 3)
    assert result["cosine"][0] == pytest.approx(1.0)
    assert compounds.stability(np.ones((3, 4))) == pytest.approx(1.0)
    pair = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    assert compounds.pair_margin(pair, [(0, 1)], [(0, 2)]) == pytest.approx(1.0)


def test_word_index_finds_the_compound_in_any_case(tiny_bert):
    assert compounds.word_index(tiny_bert.tokenizer, "Every payment is on the Blockchain.", "blockchain") == 5
    with pytest.raises(ValueError, match="does not occur"):
        compounds.word_index(tiny_bert.tokenizer, "no such word here", "DataForce")


def test_the_compound_set_splits_every_compound_and_keeps_every_control_whole(embedded):
    data = compounds.compound_set()
    assert len(data["compounds"]) >= 10 and len(data["controls"]) >= 5
    for item in data["compounds"]:
        assert len(embedded.tokenizer.tokenize(item["compound"])) > 1, item["compound"]
        assert len(item["contexts"]) == 3 and all(item["compound"].lower() in s.lower() for s in item["contexts"])
        assert item["compound"].lower() not in item["literal"].lower()
    for item in data["controls"]:
        assert len(embedded.tokenizer.tokenize(item["word"])) == 1, item["word"]


def _context_free(tokenizer, texts, rng):
    """A record of ``texts`` whose every token's state depends on its token id only (no context)."""
    table = rng.standard_normal((tokenizer.vocab_size, 6))
    encoding = tokenizer(texts)
    states = [table[ids] for ids in encoding["input_ids"]]
    word_ids = [[-1 if w is None else w for w in encoding.word_ids(i)] for i in range(len(texts))]
    return record(states, word_ids=word_ids, texts=texts)


def test_subword_study_without_context_finds_every_word_perfectly_stable(tiny_bert):
    data = compounds.compound_set()
    small = {"compounds": data["compounds"][:3], "controls": data["controls"][:2]}
    texts = compounds.compound_texts(small)
    assert len(texts["bare_words"]) == 3 + sum(len(c["parts"]) for c in small["compounds"])
    assert len(texts["sentences"]) == 3 * 4 + 2 * 3
    rng = np.random.default_rng(0)
    bare, uses = (_context_free(tiny_bert.tokenizer, t, rng) for t in texts.values())
    found = compounds.subword_study(small, bare, uses, tiny_bert.tokenizer, "mean")
    study, per_unit = found["subword"], found["per_unit"]
    for key in ("composition_mean_cosine", "composition_top1", "stability_gap", "confused_fraction", "margin_gain"):
        assert len(per_unit[f"subword.{key}"]) == 3 and per_unit[f"subword.{key}"].mean() == pytest.approx(study[key])
    assert per_unit["subword.margin_gain"] == pytest.approx(
        [r["margin_subword_pool"] - r["margin_mean_pool"] for r in study["compounds"]])
    assert [r["compound"] for r in study["compounds"]] == ["DataForce", "Salesforce", "PayPal"]
    assert study["compounds"][0]["pieces"] == "data ##force" and study["split_fraction"] == 1.0
    assert all(r["n_pieces"] == 1 for r in study["controls"])
    assert study["stability_compound"] == pytest.approx(1.0) and study["stability_control"] == pytest.approx(1.0)
    assert study["stability_gap"] == pytest.approx(0.0, abs=1e-12)
    assert study["margin_gain"] == pytest.approx(study["margin_subword_pool"] - study["margin_mean_pool"])
    assert study["confused_fraction"] == np.mean([r["margin_mean_pool"] < 0 for r in study["compounds"]])
    assert study["composition_chance"] == pytest.approx(1 / 3)


def test_subword_study_on_the_tiny_model(tiny_bert):
    data = compounds.compound_set()
    small = {"compounds": data["compounds"][:3], "controls": data["controls"][:2]}
    bare, uses = (activations.extract(tiny_bert, t, cache=False, progress=False)
                  for t in compounds.compound_texts(small).values())
    study = compounds.subword_study(small, bare, uses, tiny_bert.tokenizer, tiny_bert.info.pooling)["subword"]
    assert -1 <= study["composition_mean_cosine"] <= 1 and 0 <= study["composition_top1"] <= 1
    assert 0 < study["stability_compound"] < 1 and 0 < study["stability_control"] < 1
