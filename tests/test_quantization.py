"""int8 as the article writes it, binary codes, faiss product quantization, and their errors."""

import numpy as np
import pytest

from embedding_geometry.core import geometry
from embedding_geometry.chapters.ch06_search import quantization


def test_int8_by_hand():
    x = np.array([[0.5, -0.25, 1.0, 2.0], [0.1, -1.0, 0.0, 0.3]], dtype=np.float32)
    result = quantization.int8_article(x)
    scale = np.percentile(np.abs(x), 95)
    assert result["scale"] == pytest.approx(scale)
    expected = np.clip(x / scale * 127, -128, 127).astype(np.int8)  # the article's line, verbatim
    assert np.array_equal(result["codes"], expected)
    assert result["codes"].dtype == np.int8
    assert np.allclose(result["reconstruction"], expected.astype(np.float32) * scale / 127)
    assert result["mse"] == pytest.approx(np.mean((x - result["reconstruction"]) ** 2))


def test_int8_round_trip_error_is_below_one_step_inside_the_scale():
    x = np.random.default_rng(0).standard_normal((200, 16)).astype(np.float32)
    result = quantization.int8_article(x)
    scale, restored = result["scale"], result["reconstruction"]
    inside = np.abs(x) <= scale
    assert np.all(np.abs(x - restored)[inside] < scale / 127 + 1e-6)  # truncation: under one step
    assert np.all(np.abs(restored) <= scale * 128 / 127 + 1e-6)
    assert result["clipped_fraction"] == pytest.approx(0.05, abs=0.002)  # the 95th percentile saturates 5 %
    assert np.all(np.abs(restored) <= np.abs(x) + 1e-6)  # casting truncates toward zero


def test_int8_of_zeros_is_a_clear_error():
    with pytest.raises(ValueError, match="scale is undefined"):
        quantization.int8_article(np.zeros((3, 4)))


def test_binary_codes_and_their_cosine():
    x = np.array([[0.3, -0.2, 0.1, -0.9], [0.5, 0.5, -0.5, -0.5]])
    result = quantization.binary(x)
    assert np.array_equal(result["reconstruction"], [[1, -1, 1, -1], [1, 1, -1, -1]])
    hamming = 2
    assert geometry.cosine(*result["reconstruction"]) == pytest.approx(1 - 2 * hamming / 4)


def test_storage_and_compression():
    assert quantization.bits_per_vector("int8", 384) == 3072
    assert quantization.compression_ratio(quantization.bits_per_vector("int8", 384), 384) == 4
    assert quantization.compression_ratio(quantization.bits_per_vector("binary", 384), 384) == 32
    assert quantization.compression_ratio(quantization.bits_per_vector("pq", 384, m=8), 384) == 192  # the article's PQ
    assert quantization.compression_ratio(quantization.bits_per_vector("pq", 768, m=8), 768) == 384
    assert quantization.pq_subvectors(384, 8) == 192 and quantization.pq_subvectors(384, 16) == 96
    assert quantization.pq_subvectors(40, 8) == 20
    with pytest.raises(ValueError, match="needs m"):
        quantization.bits_per_vector("pq", 8)
    with pytest.raises(ValueError, match="method must be one of"):
        quantization.bits_per_vector("int4", 8)


def test_product_quantization_with_faiss():
    rng = np.random.default_rng(1)
    centres = rng.standard_normal((4, 8))
    x = centres[rng.integers(0, 4, 300)] + 0.01 * rng.standard_normal((300, 8))
    result = quantization.product_quantization(x, m=2, nbits=4, seed=0)
    assert result["codes"].shape == (300, 1)  # 2 sub-vectors of 4 bits = one byte
    assert np.mean(quantization.reconstruction_errors(x, result["reconstruction"])) < 1e-3
    with pytest.raises(ValueError, match="divides d"):
        quantization.product_quantization(x, m=3)
    with pytest.raises(ValueError, match="at least as many vectors"):
        quantization.product_quantization(x[:100], m=2, nbits=8)


def test_errors_and_recall_on_known_cases():
    x = np.random.default_rng(2).standard_normal((30, 5))
    assert quantization.mean_cosine_error(x, x) == pytest.approx(0.0)
    assert quantization.recall_against_float(x, x, k=5) == 1.0
    assert np.allclose(quantization.reconstruction_errors(x, 3 * x), 0)
    flipped = x.copy()
    flipped[0] *= -1
    assert quantization.reconstruction_errors(x, flipped)[0] == pytest.approx(2.0)
    points = np.array([[1.0, 0.0], [0.99, 0.1], [0.0, 1.0], [0.1, 0.99]])
    assert quantization.neighbours(points, 1).ravel().tolist() == [1, 0, 3, 2]
    with pytest.raises(ValueError, match="k must be in"):
        quantization.neighbours(points, 4)
    scores = quantization.evaluate(x, x, bits=5 * 8, pairs=np.arange(10))
    assert scores["compression_ratio"] == 4 and scores["recall_at_10"] == 1.0 and scores["mean_cosine_error"] == 0


def test_cosine_error_kernel_by_hand():
    x = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    restored = np.array([[1.0, 0.0], [1.0, 1.0], [1.0, 1.0]])  # cosines 0, c, c become c, c, 1
    c = 1 / np.sqrt(2)
    kernel = quantization.cosine_error_kernel(x, restored)
    assert kernel == pytest.approx(np.array([[0, c, 0], [c, 0, 1 - c], [0, 1 - c, 0]]))
    assert kernel.sum() / 6 == pytest.approx(quantization.mean_cosine_error(x, restored))  # the mean over pairs i ≠ j


def test_group_nonuniformity():
    errors = np.array([0.1, 0.11, 0.09, 0.1, 0.3, 0.31, 0.29, 0.3])
    labels = ["a"] * 4 + ["b"] * 4
    result = quantization.group_nonuniformity(errors, labels)
    assert result["max_over_min"] == pytest.approx(3.0)
    assert result["kruskal_p"] < 0.05
    # group means 0.1 and 0.3 around 0.2: between SS 8 · 0.01; within SS 2 · 2 · 0.0001
    assert result["topic_eta2"] == pytest.approx(0.08 / (0.08 + 0.0004))
    null = result["topic_eta2_null"]
    assert len(null) == 2000 and result["topic_eta2_permuted"] == pytest.approx(np.mean(null))
    assert result["topic_eta2_permuted"] == pytest.approx(1 / 7, abs=0.02)  # its expectation: (K − 1) / (N − 1)
    assert max(null) == pytest.approx(
        result["topic_eta2"]
    )  # a shuffle that keeps the groups reaches it, none exceeds it
    with pytest.raises(ValueError, match="two groups"):
        quantization.group_nonuniformity(errors, ["a"] * 8)


def test_quantization_study_keys_and_known_values():
    x = np.random.default_rng(0).standard_normal((300, 16))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    labels = ["a"] * 150 + ["b"] * 150
    pairs = np.arange(0, 300, 3)
    found = quantization.quantization_study(x, labels, article_m=2, pairs=pairs, seed=0)
    study, per_unit = found["quantization"], found["per_unit"]
    assert list(study) == ["int8", "binary", "pq_article", "pq_8x", "pq_16x", "n_pairs"] and study["n_pairs"] == 100
    names = list(quantization.CLAIMED) + ["binary", "pq_article"]
    assert [study[k]["compression_ratio"] for k in names] == [4.0, 8.0, 16.0, 32.0, 32.0]
    assert (study["pq_article"]["m"], study["pq_8x"]["m"], study["pq_16x"]["m"]) == (2, 8, 4)
    int8 = quantization.int8_article(x)
    assert study["int8"]["mse"] == int8["mse"] and study["int8"]["clipped_fraction"] == pytest.approx(0.05, abs=0.01)
    assert study["int8"]["mean_cosine_error"] < study["binary"]["mean_cosine_error"]
    assert {"kruskal_p", "max_over_min"} <= set(study["int8"])
    for name in quantization.CLAIMED:  # kernels over the pairs of the pair sample: their U-statistic is the metric
        kernel = per_unit[f"quantization.{name}.mean_cosine_error"]
        assert kernel.shape == (100, 100) and kernel.sum() / (100 * 99) == pytest.approx(
            study[name]["mean_cosine_error"]
        )
    assert study["int8"]["mean_cosine_error"] == pytest.approx(
        quantization.mean_cosine_error(x[pairs], quantization.int8_article(x)["reconstruction"][pairs])
    )
    parts = per_unit["quantization.int8.topic_eta2.between"], per_unit["quantization.int8.topic_eta2.total"]
    assert parts[0].mean() / parts[1].mean() == pytest.approx(study["int8"]["topic_eta2"])
    again = quantization.quantization_study(x, labels, article_m=2, pairs=pairs, seed=0, key="again", samples=False)
    assert set(again) == {"again"}  # an exercise's run: another key, no samples
    assert again["again"]["pq_8x"]["mean_cosine_error"] == study["pq_8x"]["mean_cosine_error"]  # seeded k-means


def test_product_quantization_trains_on_one_thread_and_gives_faiss_its_threads_back():
    import faiss

    faiss.omp_set_num_threads(2)
    x = np.random.default_rng(0).standard_normal((300, 16)).astype(np.float32)
    first = quantization.product_quantization(x, 4, 8, seed=3)
    assert faiss.omp_get_max_threads() == 2
    again = quantization.product_quantization(x, 4, 8, seed=3)
    assert np.array_equal(first["codes"], again["codes"])  # one thread, one order of sums: the same codes
