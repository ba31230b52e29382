"""Pooling operators, [CLS] attention by position, length bias and the compound study."""

import numpy as np
import pytest
import torch
import yaml

from embedding_geometry.core import activations, corpora
from embedding_geometry.studies import pooling

import tiny_models


# --------------------------------------------------------------------------- pooling one text

def test_attention_weighted_pool_by_hand():
    states = np.array([[1.0, 0.0], [0.0, 1.0]])
    assert pooling.attention_weighted_pool(states, np.array([3.0, 1.0])) == pytest.approx([0.75, 0.25])
    with pytest.raises(ValueError, match="sum to zero"):
        pooling.attention_weighted_pool(states, np.zeros(2))
    with pytest.raises(ValueError, match="2 token states but 3"):
        pooling.attention_weighted_pool(states, np.ones(3))


def _article_subword_aware_pooling(token_embeddings, word_ids):
    """The article's function, verbatim but for its unused attention_mask argument."""
    word_embeddings, current_embeddings = [], []
    current_word = -1
    for i, word_id in enumerate(word_ids):
        if word_id is None:
            continue
        if word_id != current_word:
            if current_embeddings:
                word_embeddings.append(torch.stack(current_embeddings).mean(0))
            current_word = word_id
            current_embeddings = [token_embeddings[i]]
        else:
            current_embeddings.append(token_embeddings[i])
    if current_embeddings:
        word_embeddings.append(torch.stack(current_embeddings).mean(0))
    return torch.stack(word_embeddings).mean(0)


def test_subword_aware_pool_by_hand_and_against_the_article():
    states = np.array([[9.0, 9.0], [1.0, 0.0], [3.0, 0.0], [0.0, 4.0], [9.0, 9.0]])
    ids = np.array([-1, 0, 0, 1, -1])  # [CLS] word0 = two pieces, word1, [SEP]
    assert pooling.word_vectors(states, ids) == pytest.approx(np.array([[2.0, 0.0], [0.0, 4.0]]))
    assert pooling.subword_aware_pool(states, ids) == pytest.approx([1.0, 2.0])
    rng = np.random.default_rng(0)
    states = rng.standard_normal((9, 4))
    ids = np.array([-1, 0, 1, 1, 1, 2, 3, 3, -1])
    article = _article_subword_aware_pooling(torch.tensor(states), [None if w < 0 else int(w) for w in ids])
    assert pooling.subword_aware_pool(states, ids) == pytest.approx(article.numpy())
    with pytest.raises(ValueError, match="no word tokens"):
        pooling.subword_aware_pool(states[:2], np.array([-1, -1]))


def test_pool_on_a_record_of_the_tiny_model(tiny_bert):
    texts = ["The quick brown fox", "DataForce quarterly report"]
    acts = activations.extract(tiny_bert, texts, cache=False, progress=False)
    assert np.allclose(pooling.pool(acts, "mean"), acts.mean_pool("all")[-1])
    assert np.allclose(pooling.pool(acts, "cls"), acts.cls()[-1])
    words = pooling.pool(acts, "subword")
    assert np.allclose(words[1], pooling.subword_aware_pool(acts.token_states(-1, 1, "all"), acts.word_ids[acts.rows(1)]))
    rows, entropy = pooling.last_layer_attention(tiny_bert, texts)
    weighted = pooling.pool(acts, "attention", rows)
    assert np.allclose(weighted[0], rows[0] @ acts.token_states(-1, 0, "all") / rows[0].sum())
    with pytest.raises(ValueError, match="one row of \\[CLS\\] attention"):
        pooling.pool(acts, "attention")
    with pytest.raises(ValueError, match="pooling must be one of"):
        pooling.pool(acts, "max")


def test_last_layer_attention_rows_are_distributions(tiny_bert):
    texts = ["a b c d e f g h", "short", "The stock market surged"]
    rows, entropy = pooling.last_layer_attention(tiny_bert, texts, batch_size=2)
    lengths = activations.extract(tiny_bert, texts, cache=False, progress=False).lengths
    assert [len(r) for r in rows] == list(lengths)  # input order kept although batches are sorted
    assert all(r.sum() == pytest.approx(1.0) for r in rows)
    assert np.all((entropy > 0) & (entropy <= 1 + 1e-9))


# --------------------------------------------------------------------------- attention by position

def test_bucket_shares_by_hand():
    weights = np.arange(120, dtype=float)
    shares = pooling.bucket_shares(weights)
    assert shares == pytest.approx([sum(range(0, 11)), sum(range(11, 51)), sum(range(51, 101)), sum(range(101, 120))])
    assert pooling.bucket_shares(np.ones(5)) == pytest.approx([5, 0, 0, 0])


def test_uniform_shares():
    assert pooling.uniform_shares(256) == pytest.approx(np.array([11, 40, 50, 155]) / 256)


def test_power_law_is_the_articles_code():
    position = np.arange(512)
    attention_weight = 1 / (1 + 0.1 * position)
    attention_weight /= attention_weight.sum()
    assert pooling.power_law(512, 0.1) == pytest.approx(attention_weight)
    with pytest.raises(ValueError):
        pooling.power_law(0, 0.1)


def test_the_articles_table_does_not_follow_from_its_code():
    table = pooling.article_code_table()
    assert table.round(3) == pytest.approx([0.192, 0.270, 0.150, 0.387])
    assert table.sum() == pytest.approx(1.0)
    length, rms = pooling.closest_length()
    assert length == 130 and rms == pytest.approx(0.0266, abs=5e-4)
    erratum = next(e for e in yaml.safe_load(open(corpora._data("claims/05_embeddings_without_tears.yaml")))["errata"]
                   if e["id"] == "cls-table-not-from-its-code")
    assert erratum["data_value"].startswith(" / ".join(f"{100 * v:.1f} %" for v in table))
    assert "130 positions" in erratum["evidence"] and f"{100 * rms:.1f} points" in erratum["evidence"]


def test_fit_power_law_recovers_alpha():
    fit = pooling.fit_power_law(pooling.power_law(200, 0.05))
    assert fit["alpha"] == pytest.approx(0.05, rel=1e-3)
    assert fit["r2"] == pytest.approx(1.0, abs=1e-9) and fit["spearman"] == pytest.approx(-1.0)
    with pytest.raises(ValueError, match="non-constant"):
        pooling.fit_power_law(np.full(10, 0.1))


def test_position_profile_needs_equal_lengths():
    assert pooling.position_profile([np.array([0.5, 0.5]), np.array([1.0, 0.0])]) == pytest.approx([0.75, 0.25])
    with pytest.raises(ValueError, match="one length"):
        pooling.position_profile([np.ones(2), np.ones(3)])


# --------------------------------------------------------------------------- length bias and dilution

def test_dilution_curve_by_hand():
    keys = np.array([[1.0, 0.0]])
    texts = np.array([[[2.0, 0.0], [1.0, 1.0], [0.0, 1.0]]])
    assert pooling.dilution_curve(keys, texts) == pytest.approx([1.0, 1 / np.sqrt(2), 0.0])


def test_length_norm_relation_of_an_exact_averaging_law():
    n = np.array([3, 5, 8, 13, 21, 34])
    norms = np.sqrt(0.5 + 4.0 / n)
    vectors = np.stack([[v, 0.0] for v in norms])
    relation = pooling.length_norm_relation(vectors, n)
    assert relation["averaging_law_r2"] == pytest.approx(1.0)
    assert relation["averaging_law_slope"] == pytest.approx(4.0)
    assert relation["spearman"] == pytest.approx(-1.0) and relation["abs_spearman"] == pytest.approx(1.0)
    with pytest.raises(ValueError, match="not all equal"):
        pooling.length_norm_relation(vectors, np.full(6, 4))


# --------------------------------------------------------------------------- compounds

def test_composition_stability_and_margin_by_hand():
    compounds = np.eye(3)
    parts = [np.array([[1.0, 0.1, 0.0], [1.0, -0.1, 0.0]]), np.array([[0.0, 1.0, 0.2]]), np.array([[0.1, 0.0, 1.0]])]
    result = pooling.composition(compounds, parts)
    assert result["top1"] == 1.0 and result["chance"] == pytest.approx(1 / 3)
    assert result["cosine"][0] == pytest.approx(1.0)
    assert pooling.stability(np.ones((3, 4))) == pytest.approx(1.0)
    vectors = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    assert pooling.pair_margin(vectors, [(0, 1)], [(0, 2)]) == pytest.approx(1.0)


def test_word_index_finds_the_compound_in_any_case(tiny_bert):
    assert pooling.word_index(tiny_bert.tokenizer, "Every payment is on the Blockchain.", "blockchain") == 5
    with pytest.raises(ValueError, match="does not occur"):
        pooling.word_index(tiny_bert.tokenizer, "no such word here", "DataForce")


def test_compound_study_on_the_tiny_model(tiny_bert):
    data = pooling.compound_set()
    small = {"compounds": data["compounds"][:3], "controls": data["controls"][:2]}
    study = pooling.compound_study(tiny_bert, small, batch_size=8)
    assert [r["compound"] for r in study["compounds"]] == ["DataForce", "Salesforce", "PayPal"]
    assert study["compounds"][0]["pieces"] == "data ##force" and study["split_fraction"] == 1.0
    assert all(r["n_pieces"] == 1 for r in study["controls"])
    assert -1 <= study["composition_mean_cosine"] <= 1 and 0 <= study["composition_top1"] <= 1
    assert len(study["inputs"]["sentences"]) == 3 * 4 + 2 * 3


def test_the_compound_set_splits_every_compound_and_keeps_every_control_whole(embedded):
    data = pooling.compound_set()
    assert len(data["compounds"]) >= 10 and len(data["controls"]) >= 5
    for item in data["compounds"]:
        assert len(embedded.tokenizer.tokenize(item["compound"])) > 1, item["compound"]
        assert len(item["contexts"]) == 3 and all(item["compound"].lower() in s.lower() for s in item["contexts"])
        assert item["compound"].lower() not in item["literal"].lower()
    for item in data["controls"]:
        assert len(embedded.tokenizer.tokenize(item["word"])) == 1, item["word"]


# --------------------------------------------------------------------------- the library

def test_library_checks_on_the_tiny_model(tiny_bert, tmp_path):
    from embedding_geometry.core import models

    texts = ["short one", "a somewhat longer sentence than the first", "mid length text"]
    checks = pooling.library_checks(tiny_bert, texts)
    assert checks["modules"] == ["Transformer", "Pooling"] and checks["pooling_mode"] == "mean"
    assert checks["padding_max_abs_diff"] < 1e-5
    assert checks["max_norm_deviation"] > 1e-3  # no Normalize module: norms are not 1
    bare = models.load(str(tiny_models.tiny_bert(tmp_path / "bare", sentence_transformers=False)), device="cpu")
    assert pooling.library_checks(bare, texts) is None
    with pytest.raises(ValueError, match="different lengths"):
        pooling.library_checks(tiny_bert, ["same", "same"])
