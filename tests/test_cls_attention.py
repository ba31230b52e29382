"""Where [CLS] looks: buckets, the article's power law, and the position study."""

import numpy as np
import pytest
import yaml

from embedding_geometry.book import claims
from embedding_geometry.core.errors import ParameterError
from embedding_geometry.chapters.ch05_without_tears import cls_attention

from synthetic_records import cls_maps, record


def test_bucket_shares_by_hand():
    weights = np.arange(120, dtype=float)
    shares = cls_attention.bucket_shares(weights)
    assert shares == pytest.approx([sum(range(0, 11)), sum(range(11, 51)), sum(range(51, 101)), sum(range(101, 120))])
    assert cls_attention.bucket_shares(np.ones(5)) == pytest.approx([5, 0, 0, 0])


def test_uniform_shares():
    assert cls_attention.uniform_shares(256) == pytest.approx(np.array([11, 40, 50, 155]) / 256)


def test_power_law_is_the_articles_code():
    position = np.arange(512)
    attention_weight = 1 / (1 + 0.1 * position)
    attention_weight /= attention_weight.sum()
    assert cls_attention.power_law(512, 0.1) == pytest.approx(attention_weight)
    with pytest.raises(ValueError):
        cls_attention.power_law(0, 0.1)


def test_the_articles_table_does_not_follow_from_its_code():
    table = cls_attention.article_code_table()
    assert table.round(3) == pytest.approx([0.192, 0.270, 0.150, 0.387])
    assert table.sum() == pytest.approx(1.0)
    length, rms = cls_attention.closest_length()
    assert length == 130 and rms == pytest.approx(0.0266, abs=5e-4)
    erratum = next(
        e
        for e in yaml.safe_load(open(claims.ledger.path("05_embeddings_without_tears")))["errata"]
        if e["id"] == "cls-table-not-from-its-code"
    )
    assert erratum["data_value"].startswith(" / ".join(f"{100 * v:.1f} %" for v in table))
    assert "130 positions" in erratum["evidence"] and f"{100 * rms:.1f} points" in erratum["evidence"]


def test_fit_power_law_recovers_alpha():
    fit = cls_attention.fit_power_law(cls_attention.power_law(200, 0.05))
    assert fit["alpha"] == pytest.approx(0.05, rel=1e-3)
    assert fit["r2"] == pytest.approx(1.0, abs=1e-9) and fit["spearman"] == pytest.approx(-1.0)
    with pytest.raises(ValueError, match="non-constant"):
        cls_attention.fit_power_law(np.full(10, 0.1))


def test_position_profile_needs_equal_lengths():
    assert cls_attention.position_profile([np.array([0.5, 0.5]), np.array([1.0, 0.0])]) == pytest.approx([0.75, 0.25])
    with pytest.raises(ValueError, match="one length"):
        cls_attention.position_profile([np.ones(2), np.ones(3)])


def test_n_positions_defaults_to_the_model_limit_and_names_the_parameter():
    assert cls_attention.n_positions(None, 256) == 256 and cls_attention.n_positions(128, 256) == 128
    for bad in (101, 257, 2.5, True):
        with pytest.raises(ParameterError, match=r"parameter 'n_positions' expects an integer in \[102, 256\]"):
            cls_attention.n_positions(bad, 256)


def test_position_study_of_texts_that_follow_the_articles_law():
    T = 120
    law = cls_attention.power_law(T, 0.1)
    acts = record([np.zeros((T, 2)), np.zeros((T, 2))], attentions=[cls_maps(law), cls_maps(law)])
    study = cls_attention.position_study(acts, [0.31, 0.42, 0.18, 0.09])["cls_attention_by_position"]
    assert study["n_positions"] == T and study["n_texts"] == 2 and study["buckets"] == list(cls_attention.BUCKET_LABELS)
    assert list(study["shares"].values()) == pytest.approx(cls_attention.bucket_shares(law))
    assert study["article_code_T"] == pytest.approx(list(study["shares"].values()))
    assert study["power_law"]["alpha"] == pytest.approx(0.1, rel=1e-3) and study["power_law"]["r2"] == pytest.approx(
        1.0
    )
    assert study["to_cls"] == pytest.approx(law[0]) and study["profile"] == pytest.approx(law)
    assert study["early_ratio"] == pytest.approx(study["shares"]["b0_10"] / (11 / T))
    assert (study["closest_length"], study["article_table"]) == (130, [0.31, 0.42, 0.18, 0.09])
    assert 0 < study["entropy"] < 1
    short = cls_attention.short_summary(study)
    assert short == {
        "n_positions": T,
        "shares": list(study["shares"].values()),
        "uniform": study["uniform"],
        "power_law": study["power_law"],
    }


def test_per_text_values_and_the_uniform_attention_null():
    """Two texts of 120 tokens: one follows the article's law, one attends only to the first 11
    positions (uniform attention would give each bucket its share of the 120 positions)."""
    T = 120
    law, early = cls_attention.power_law(T, 0.1), np.r_[np.full(11, 1 / 11), np.zeros(T - 11)]
    acts = record([np.zeros((T, 2)), np.zeros((T, 2))], attentions=[cls_maps(law), cls_maps(early)])
    found = cls_attention.position_study(acts)
    study, per_unit = found["cls_attention_by_position"], found["per_unit"]
    assert study["uniform_shares"] == pytest.approx(
        {"b0_10": 11 / T, "b11_50": 40 / T, "b51_100": 50 / T, "b101_plus": 19 / T}
    )
    assert study["uniform_early_ratio"] == 1.0
    key = "cls_attention_by_position"
    assert per_unit[f"{key}.shares.b0_10"] == pytest.approx([law[:11].sum(), 1.0])
    assert per_unit[f"{key}.early_ratio"] == pytest.approx([law[:11].sum() * T / 11, T / 11])
    assert per_unit[f"{key}.early_ratio"].mean() == pytest.approx(study["early_ratio"])
    assert per_unit[f"{key}.early_excess"] == pytest.approx([law[:11].sum() - 11 / T, 1 - 11 / T])
    assert study["early_excess"] == pytest.approx(study["shares"]["b0_10"] - 11 / T)  # uniform attention gives 0
    for name in cls_attention.SHARE_KEYS:
        assert per_unit[f"{key}.shares.{name}"].mean() == pytest.approx(study["shares"][name])
    r2 = per_unit[f"{key}.power_law_by_text.mean_r2"]
    assert (
        len(r2) == 2
        and r2[0] == pytest.approx(1.0)
        and r2[1] < 1
        and r2.mean() == pytest.approx(study["power_law_by_text"]["mean_r2"])
    )


def test_the_exercise_keeps_a_short_summary_under_its_own_key():
    T = 110
    acts = record([np.zeros((T, 2))], attentions=[cls_maps(cls_attention.power_law(T, 0.1))])
    found = cls_attention.exercise(acts)
    assert set(found) == {"exercise_n_positions"}
    summary = found["exercise_n_positions"]
    assert summary["n_positions"] == T and sum(summary["shares"]) == pytest.approx(1.0)
    assert summary["uniform"] == pytest.approx(cls_attention.uniform_shares(T).tolist())
