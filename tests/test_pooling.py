"""Pooling operators, the last layer's attention, length bias and dilution, and the library checks."""

import numpy as np
from scipy import stats
import pytest
import torch

from embedding_geometry.core import activations, models
from embedding_geometry.core.errors import ParameterError
from embedding_geometry.studies import pooling

import tiny_models
from synthetic_records import cls_maps, record, uniform_maps


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
    acts = activations.extract(tiny_bert, texts, cache=False, progress=False, attentions=True)
    assert np.allclose(pooling.pool(acts, "mean"), acts.mean_pool("all")[-1])
    assert np.allclose(pooling.pool(acts, "cls"), acts.cls()[-1])
    words = pooling.pool(acts, "subword")
    assert np.allclose(
        words[1], pooling.subword_aware_pool(acts.token_states(-1, 1, "all"), acts.word_ids[acts.rows(1)])
    )
    rows = pooling.cls_attention(acts)
    weighted = pooling.pool(acts, "attention")
    assert np.allclose(weighted[0], rows[0] @ acts.token_states(-1, 0, "all") / rows[0].sum())
    with pytest.raises(ValueError, match="attentions=True"):
        pooling.pool(activations.extract(tiny_bert, texts, cache=False, progress=False), "attention")
    with pytest.raises(ValueError, match="pooling must be one of"):
        pooling.pool(acts, "max")


def test_keeping_only_the_last_layers_attention_maps(tiny_bert, tmp_path):
    """``extract(attention_layers=(-1,))`` keeps the last block's maps only (what this chapter's
    pooling and [CLS] measurements read), under its own cache key, and they equal the full record's."""
    texts = ["a b c d e f g h", "short", "The stock market surged"]
    full = activations.extract(tiny_bert, texts, batch_size=2, cache=False, progress=False, attentions=True)
    last = activations.extract(
        tiny_bert, texts, batch_size=2, cache_dir=tmp_path, progress=False, attentions=True, attention_layers=(-1,)
    )
    assert last.attention_layers == (tiny_bert.info.layers - 1,) and full.attention_layers is None
    for whole, kept in zip(full.attentions, last.attentions):
        assert kept.shape == (1, *whole.shape[1:]) and np.allclose(kept[0], whole[-1])
    assert np.allclose(pooling.pool(last, "attention"), pooling.pool(full, "attention"))
    assert np.allclose(pooling.attention_entropy(last), pooling.attention_entropy(full))
    length = tiny_bert.info.max_seq_length
    keys = {activations.cache_key(tiny_bert, texts, length, True, layers) for layers in (None, (2,), (1, 2))}
    assert len(keys) == 3 and activations.cache_key(tiny_bert, texts, length, True) in keys
    again = activations.extract(
        tiny_bert, texts, cache_dir=tmp_path, progress=False, attentions=True, attention_layers=[2]
    )
    assert again.key == last.key  # (-1,) and [2] name the same block of a 3-block model: one cache entry
    for bad in ((3,), (), ("last",)):
        with pytest.raises(ParameterError, match="attention_layers"):
            activations.extract(tiny_bert, texts, cache=False, progress=False, attentions=True, attention_layers=bad)
    with pytest.raises(ParameterError, match="attention_layers"):
        activations.extract(tiny_bert, texts, cache=False, progress=False, attention_layers=(-1,))


def test_cls_attention_and_entropy_of_hand_made_maps():
    first = cls_maps([0.5, 0.25, 0.25])
    first[1] = uniform_maps(3)[1]  # the second head's [CLS] row is uniform
    acts = record([np.zeros((3, 2)), np.zeros((2, 2))], attentions=[first, uniform_maps(2)])
    rows = pooling.cls_attention(acts)
    assert rows[0] == pytest.approx([(0.5 + 1 / 3) / 2, (0.25 + 1 / 3) / 2, (0.25 + 1 / 3) / 2])
    assert rows[1] == pytest.approx([0.5, 0.5])
    entropy = pooling.attention_entropy(acts)
    row_entropy = -(0.5 * np.log(0.5) + 2 * 0.25 * np.log(0.25)) / np.log(3)  # the one non-uniform row
    assert entropy[0] == pytest.approx((row_entropy + 5) / 6) and entropy[1] == pytest.approx(1.0)
    with pytest.raises(ValueError, match="attentions=True"):
        pooling.cls_attention(record([np.zeros((3, 2))]))


def test_cls_attention_rows_of_the_tiny_model_are_distributions(tiny_bert):
    texts = ["a b c d e f g h", "short", "The stock market surged"]
    acts = activations.extract(tiny_bert, texts, batch_size=2, cache=False, progress=False, attentions=True)
    rows = pooling.cls_attention(acts)
    assert [len(r) for r in rows] == list(acts.lengths)  # input order kept although batches are sorted
    assert all(r.sum() == pytest.approx(1.0) for r in rows)
    assert np.all((pooling.attention_entropy(acts) > 0) & (pooling.attention_entropy(acts) <= 1 + 1e-9))


def test_pooling_retrieval_ranks_each_pooling_by_hand():
    # documents: [CLS] state, one word; queries equal the documents, so every pooling finds its own
    docs = record(
        [[[1.0, 0.0], [1.0, 0.1], [0.0, 0.0]], [[0.0, 1.0], [0.1, 1.0], [0.0, 0.0]]],
        attentions=[uniform_maps(3), uniform_maps(3)],
    )
    result = pooling.pooling_retrieval(docs, docs, [0, 1])
    found = result["pooling_retrieval"]
    assert set(found) == {*pooling.RETRIEVAL_POOLINGS, "cls_minus_mean", "subword_minus_mean"}
    assert all(
        found[m]["recall_at_1"] == 1.0 and found[m]["ndcg_at_10"] == pytest.approx(1.0)
        for m in pooling.RETRIEVAL_POOLINGS
    )
    assert found["cls_minus_mean"] == 0.0 and found["subword_minus_mean"] == 0.0
    assert result["per_unit"]["pooling_retrieval.cls_minus_mean"].tolist() == [0.0, 0.0]
    swapped = record(
        [[[0.0, 1.0], [2.0, 0.0], [0.0, 0.0]], [[1.0, 0.0], [0.0, 2.0], [0.0, 0.0]]],
        attentions=[uniform_maps(3), uniform_maps(3)],
    )  # [CLS] points to the other document
    crossed = pooling.pooling_retrieval(docs, swapped, [0, 1])
    assert crossed["pooling_retrieval"]["cls"]["recall_at_1"] == 0.0
    # per query: the relevant document ranks 2nd of 2 under [CLS] pooling, 1st under mean pooling
    differences = crossed["per_unit"]["pooling_retrieval.cls_minus_mean"]
    assert differences == pytest.approx([1 / np.log2(3) - 1] * 2)
    assert differences.mean() == pytest.approx(crossed["pooling_retrieval"]["cls_minus_mean"])


def test_cls_against_the_mean_pool_at_every_depth_by_hand():
    # two documents of [CLS], a word and [SEP] at two depths: at depth 0 each [CLS] points to the other
    # document's axis (it ranks the wrong document first; cos(c, m) = 1 / √17), at depth 1 along its own
    docs = record([[[[0.0, 1.0], [2.0, 0.0], [2.0, 0.0]], [[1.0, 0.0], [2.0, 0.0], [2.0, 0.0]]],
                   [[[1.0, 0.0], [0.0, 2.0], [0.0, 2.0]], [[0.0, 1.0], [0.0, 2.0], [0.0, 2.0]]]])
    queries = record([[[[1.0, 0.0]] * 3] * 2, [[[0.0, 1.0]] * 3] * 2])
    found = pooling.cls_by_depth(docs, queries, [0, 1])
    by_depth = found["cls_by_depth"]
    assert by_depth["mean"] == pytest.approx([1.0, 1.0]) and by_depth["cls"] == pytest.approx([1 / np.log2(3), 1.0])
    assert by_depth["alignment"] == pytest.approx([1 / np.sqrt(17), 1.0])
    np.testing.assert_allclose(found["per_unit"]["cls_by_depth.cls_minus_mean"], [[1 / np.log2(3) - 1, 0.0]] * 2)
    assert by_depth["cls_minus_mean"] == pytest.approx(np.subtract(by_depth["cls"], by_depth["mean"]))
    final = pooling.pooling_retrieval(docs, queries, [0, 1])["pooling_retrieval"]  # the final depth, as ranked there
    assert by_depth["cls"][-1] == pytest.approx(final["cls"]["ndcg_at_10"])
    from embedding_geometry.chapters.ch05_without_tears import charts

    drawn = charts.cls_depth_lines(by_depth).to_dict()["datasets"]
    rows = next(iter(drawn.values()))
    assert [(r["relative_depth"], r["series"]) for r in rows[:2]] == [(0.0, "nDCG@10, [CLS]"), (1.0, "nDCG@10, [CLS]")]
    assert [r["value"] for r in rows] == pytest.approx([1 / np.log2(3), 1.0, 1.0, 1.0, 1 / np.sqrt(17), 1.0], abs=1e-4)


# --------------------------------------------------------------------------- length bias and dilution


def test_dilution_curves_by_hand():
    keys = np.array([[1.0, 0.0]])
    texts = np.array([[[2.0, 0.0], [1.0, 1.0], [0.0, 1.0]]])
    assert pooling.dilution_curves(keys, texts)[0] == pytest.approx([1.0, 1 / np.sqrt(2), 0.0])


def test_length_norm_relation_of_an_exact_averaging_law():
    n = np.array([3, 5, 8, 13, 21, 34])
    norms = np.sqrt(0.5 + 4.0 / n)
    vectors = np.stack([[v, 0.0] for v in norms])
    found = pooling.length_norm_relation(vectors, n)
    relation, per_unit = found["length_bias"], found["per_unit"]
    assert relation["averaging_law_r2"] == pytest.approx(1.0) and relation["averaging_law_r"] == pytest.approx(1.0)
    assert relation["averaging_law_slope"] == pytest.approx(4.0)
    assert relation["spearman"] == pytest.approx(-1.0) and relation["abs_spearman"] == pytest.approx(1.0)
    assert set(per_unit) == {
        f"length_bias.{name}.{m}" for name in ("abs_spearman", "averaging_law_r") for m in ("x", "y", "xx", "yy", "xy")
    }


def test_per_sentence_moments_rebuild_the_correlations_and_are_resampled_as_correlations():
    from embedding_geometry.book.claims import samples

    rng = np.random.default_rng(0)
    lengths = rng.integers(3, 40, size=30)
    vectors = rng.standard_normal((30, 4)) + 1.0
    found = pooling.length_norm_relation(vectors, lengths)
    for name in ("abs_spearman", "averaging_law_r"):
        spec = {"correlation": {m: f"length_bias.{name}.{m}" for m in ("x", "y", "xx", "yy", "xy")}}
        statistic = samples.find(found, spec)
        assert float(statistic.point()) == pytest.approx(found["length_bias"][name]), name
        w = np.zeros((1, 30))
        w[0, :15] = 1 / 15  # the first half alone: r recomputed on it, not a mean of fixed products
        first_half = stats.pearsonr(
            found["per_unit"][f"length_bias.{name}.x"][:15, 0], found["per_unit"][f"length_bias.{name}.y"][:15, 0]
        ).statistic
        assert float(statistic.values(w)[0]) == pytest.approx(first_half)
    moments = pooling.correlation_moments("k", [1.0, 2.0, 3.0], [3.0, 2.0, 1.0])
    assert moments["k.xy"].mean() == pytest.approx(-1.0) and moments["k.x"].shape == (3, 1)
    with pytest.raises(ValueError, match="not all equal"):
        pooling.length_norm_relation(vectors, np.full(6, 4))


def test_dilution_study_of_hand_made_texts():
    # one key position, one key, k = 0..1: the key's text is [CLS] e1 [SEP]; with one filler its
    # mean turns towards e2, its [CLS] state stays, and [CLS] attends only to the key's token
    key = [[1.0, 0.0], [1.0, 0.0], [1.0, 0.0]]
    longer = [[1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.0, 1.0]]
    acts = record(
        [key, longer],
        word_ids=[[-1, 0, -1], [-1, 0, 1, -1]],
        attentions=[cls_maps([0.0, 1.0, 0.0]), cls_maps([0.0, 1.0, 0.0, 0.0])],
    )
    found = pooling.dilution_study(acts, ["key first"], k_max=1)
    study, per_unit = found["length_dilution"], found["per_unit"]
    assert study["k"] == [0, 1] and study["k_max"] == 1
    assert study["mean_drop"] == pytest.approx({"key_first": 1 - 1 / np.sqrt(2)})
    assert per_unit["length_dilution.mean_drop.key_first"] == pytest.approx([1 - 1 / np.sqrt(2)])  # one key
    assert per_unit["length_dilution.attention_gain"] == pytest.approx([1 - 1 / np.sqrt(2)])
    assert per_unit["length_dilution.attention_entropy"] == pytest.approx([study["attention_entropy"]])
    assert study["key_first"]["mean"] == pytest.approx([1.0, 1 / np.sqrt(2)])
    assert study["key_first"]["cls"] == pytest.approx([1.0, 1.0])
    assert study["key_first"]["attention"] == pytest.approx([1.0, 1.0])
    assert study["attention_gain"] == pytest.approx(1 - 1 / np.sqrt(2))
    assert study["final"]["key_first"] == pytest.approx({"mean": 1 / np.sqrt(2), "cls": 1.0, "attention": 1.0})
    assert 0 < study["attention_entropy"] < 1
    with pytest.raises(ValueError, match="positions"):
        pooling.dilution_study(acts, ["key first"], k_max=2)


# --------------------------------------------------------------------------- the library


class _Pipeline:
    """A stand-in for a sentence-transformers pipeline: two modules; ``encode`` returns each
    text's length in characters as a 2-vector, plus the batch size when padding leaks in."""

    def __init__(self, leak: float = 0.0):
        self.leak = leak

    def __iter__(self):
        return iter([type("Transformer", (), {})(), type("Pooling", (), {})()])

    def encode(self, texts, batch_size, **_):
        return np.array([[len(t) + self.leak * (len(texts) - 1), 0.0] for t in texts])


def test_library_checks_of_a_hand_made_pipeline():
    texts = ["ab", "abcd"]
    checks = pooling.library_checks(_Pipeline(), texts)
    assert checks == {"modules": ["Transformer", "Pooling"], "max_norm_deviation": 3.0, "padding_max_abs_diff": 0.0}
    assert pooling.library_checks(_Pipeline(leak=0.5), texts)["padding_max_abs_diff"] == 0.5
    assert pooling.library_checks(None, texts) is None
    with pytest.raises(ValueError, match="different lengths"):
        pooling.library_checks(_Pipeline(), ["same", "same"])


def test_library_checks_on_the_tiny_model(tiny_bert, tmp_path):
    texts = ["short one", "a somewhat longer sentence than the first", "mid length text"]
    checks = pooling.library_checks(models.sentence_transformer(tiny_bert), texts)
    assert checks["modules"] == ["Transformer", "Pooling"]
    assert checks["padding_max_abs_diff"] < 1e-5
    assert checks["max_norm_deviation"] > 1e-3  # no Normalize module: norms are not 1
    bare = models.load(str(tiny_models.tiny_bert(tmp_path / "bare", sentence_transformers=False)), device="cpu")
    assert models.sentence_transformer(bare) is None


def test_library_metrics_by_hand(tiny_bert):
    # [CLS] and [SEP] point along e2, the word along e1: the mean of all tokens is (1, 2) / 3
    acts = record([[[0.0, 1.0], [1.0, 0.0], [0.0, 1.0]]])
    checks = {"modules": ["Transformer", "Pooling"], "max_norm_deviation": 0.5, "padding_max_abs_diff": 0.0}
    found = pooling.library_metrics(tiny_bert.info, checks, {"max_abs_diff": 1e-7, "min_cosine": 1.0}, acts)
    assert found["model_facts"] == {"hidden": 40, "layers": 3, "max_seq_length": tiny_bert.info.max_seq_length}
    library = found["library"]
    assert library["pooling_mode"] == "mean" and library["pooling_is_mean"] == 1.0
    assert library["special_token_cosine"] == pytest.approx(1 / np.sqrt(5))
    assert library["meanpool_vs_model"]["max_abs_diff"] == 1e-7
    empty = pooling.library_metrics(tiny_bert.info, None, None, acts)["library"]
    assert empty["modules"] is None and empty["padding_max_abs_diff"] is None
    assert empty["meanpool_vs_model"] == {"max_abs_diff": None}
