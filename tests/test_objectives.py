"""Chapter 7: the two losses on closed-form cases, the training's determinism on a tiny model,
the training pairs file, and the comparison functions on hand-made values."""

import math
from itertools import pairwise

import numpy as np
import pytest
import torch
from test_layer_by_layer import E1, E2, record

from embedding_geometry.book import claims
from embedding_geometry.core import corpora, geometry
from embedding_geometry.core.errors import ParameterError
from embedding_geometry.studies import layer_by_layer, objectives
from embedding_geometry.studies import objective_geometry as study

SLUG = "07_training_objective"


# --------------------------------------------------------------------------- the scores and the loss

def test_info_nce_of_identical_orthonormal_pairs_and_of_uniform_scores():
    # s_ii = 1, s_ij = 0: each row's loss is −log(e^{1/τ} / (e^{1/τ} + B − 1)) = log(1 + (B − 1) e^{−1/τ})
    tau, b = 0.5, 8
    assert objectives.info_nce(torch.eye(b, dtype=torch.float64), tau).item() == pytest.approx(math.log1p((b - 1) * math.exp(-1 / tau)))
    # every score equal: the positive is one of B equally likely columns
    assert objectives.info_nce(torch.full((b, b), 0.3), tau).item() == pytest.approx(math.log(b))
    # a row whose positive scores lowest pays more than log B
    assert objectives.info_nce(1 - torch.eye(b), tau).item() > math.log(b)


def _batch(*texts, width=2):
    """Padded states [B, T, D] and masks [B, T] from lists of token vectors."""
    t = max(len(x) for x in texts)
    states = torch.zeros(len(texts), t, width)
    mask = torch.zeros(len(texts), t, dtype=torch.long)
    for i, x in enumerate(texts):
        states[i, :len(x)] = torch.tensor(x, dtype=torch.float32)
        mask[i, :len(x)] = 1
    return states, mask


def test_maxsim_score_on_hand_computed_tokens_ignores_padding():
    # q = (e1, e2), d = (e1, (e1 + e2)/√2 unnormalised): e1 finds e1 (1), e2 finds the diagonal (1/√2)
    q, q_mask = _batch([E1, E2])
    d, d_mask = _batch([E1, [1.0, 1.0]])
    expected = (1 + 1 / math.sqrt(2)) / 2
    assert objectives.maxsim_scores(q, q_mask, d, d_mask).item() == pytest.approx(expected)
    # padding: a masked document token equal to e2 and a masked query token change nothing
    d_pad, d_pad_mask = _batch([E1, [1.0, 1.0], E2])
    d_pad_mask[0, 2] = 0
    q_pad, q_pad_mask = _batch([E1, E2, [-1.0, 0.0]])
    q_pad_mask[0, 2] = 0
    assert objectives.maxsim_scores(q_pad, q_pad_mask, d_pad, d_pad_mask).item() == pytest.approx(expected)


def test_mean_pool_score_is_the_cosine_of_the_masked_means():
    q, q_mask = _batch([E1, E2], [E1])
    d, d_mask = _batch([E1], [[0.0, -1.0], [1.0, 0.0]])
    # means: q0 = (½, ½), q1 = e1; d0 = e1, d1 = (½, −½)
    expected = [[1 / math.sqrt(2), 0.0], [1.0, 1 / math.sqrt(2)]]
    np.testing.assert_allclose(objectives.mean_pool_scores(q, q_mask, d, d_mask).numpy(), expected, atol=1e-6)


# --------------------------------------------------------------------------- batches and determinism

PAIRS = [("a", "b"), ("b", "c"), ("c", "d"), ("e", "f"), ("g", "h"), ("i", "j")]


def test_batches_are_seeded_full_and_never_repeat_a_text():
    first = objectives.batches(PAIRS, 3, 10, seed=4)
    assert first == objectives.batches(PAIRS, 3, 10, seed=4)
    assert first != objectives.batches(PAIRS, 3, 10, seed=5)
    assert len(first) == 10 and all(len(batch) == 3 for batch in first)
    for batch in first:
        texts = [t for i in batch for t in PAIRS[i]]
        assert len(texts) == len(set(texts))
    assert objectives.batches(PAIRS, 3, 4, seed=4) == first[:4]  # a shorter run is a prefix


def test_batches_refuse_a_batch_larger_than_the_pairs():
    with pytest.raises(ParameterError, match="pairs_per_batch"):
        objectives.batches(PAIRS, 7, 1, seed=0)


SETTINGS = objectives.Settings(steps=4, pairs_per_batch=4, learning_rate=1e-3, max_length=12)
TINY_PAIRS = [("The cat sat on the mat", "A cat is sitting on a mat"), ("Dogs bark at night", "A dog barks"),
              ("Rain fell all day", "It rained for hours"), ("The bank cut rates", "Interest rates were lowered"),
              ("She won the race", "The runner came first"), ("The soup is cold", "The soup has cooled")]


def test_fine_tune_is_deterministic_for_a_seed_and_leaves_the_backbone_alone(tiny_bert):
    before = objectives.weights_digest(tiny_bert.model)
    one, losses_one = objectives.fine_tune(tiny_bert, TINY_PAIRS, "maxsim", SETTINGS, seed=3)
    two, losses_two = objectives.fine_tune(tiny_bert, TINY_PAIRS, "maxsim", SETTINGS, seed=3)
    assert losses_one == losses_two and len(losses_one) == SETTINGS.steps
    for (name, a), (_, b) in zip(one.model.state_dict().items(), two.model.state_dict().items()):
        assert torch.equal(a, b), name
    assert one.info.sha256 == two.info.sha256 == objectives.weights_digest(one.model) != before
    assert objectives.weights_digest(tiny_bert.model) == before
    assert not one.model.training and "maxsim loss, seed 3" in one.info.id
    other, _ = objectives.fine_tune(tiny_bert, TINY_PAIRS, "maxsim", SETTINGS, seed=4)
    assert other.info.sha256 != one.info.sha256


def test_the_two_objectives_differ_and_midway_is_a_run_of_half_the_steps(tiny_bert):
    halfway = []
    full, _ = objectives.fine_tune(tiny_bert, TINY_PAIRS, "mean_pool", SETTINGS, seed=0,
                                   midway=lambda model: halfway.append(model.info.sha256))
    half, _ = objectives.fine_tune(tiny_bert, TINY_PAIRS, "mean_pool",
                                   objectives.Settings(**{**vars(SETTINGS), "steps": SETTINGS.steps // 2}), seed=0)
    assert halfway == [half.info.sha256]
    other, _ = objectives.fine_tune(tiny_bert, TINY_PAIRS, "maxsim", SETTINGS, seed=0)
    assert other.info.sha256 != full.info.sha256
    with pytest.raises(ParameterError, match="objective"):
        objectives.fine_tune(tiny_bert, TINY_PAIRS, "cls", SETTINGS, seed=0)


def test_a_start_given_as_a_function_is_made_when_its_turn_comes(tiny_bert):
    from embedding_geometry.core import activations

    made = []

    def make():
        made.append(len(measured))  # how many texts sets were measured before this start was made
        return tiny_bert

    measured = []

    def extract(model, texts):
        measured.append(len(texts))
        return activations.extract(model, texts, cache=False, progress=False)

    inputs = study.texts(["The cat sat on the mat.", "A dog ran in the park.", "Rain fell all day long."])
    settings = objectives.Settings(**{**vars(SETTINGS), "steps": 2})
    block = study.experiment({0: tiny_bert, 1: make}, TINY_PAIRS, settings, extract, inputs, "objectives.p")
    assert len(made) == 1 and made[0] > 0  # built once, after seed 0's models were measured
    assert set(block["runs"]["before"]) == {"seed_0", "seed_1"}
    half = block["midway"]
    np.testing.assert_allclose(half["difference"]["intra_sentence_cosine"],
                               half["mean_pool"]["intra_sentence_cosine"] - half["maxsim"]["intra_sentence_cosine"])


# --------------------------------------------------------------------------- the training pairs

def test_training_pairs_follow_the_two_rules_of_the_file_and_hold_out_every_measured_text():
    data = corpora.load_yaml(objectives.PAIRS_FILE)
    judged = [(q["query"], r) for q in corpora.load_yaml("corpus_queries.yaml")["queries"] for r in q["relevant"]]
    assert [tuple(p) for p in data["queries"]] == judged
    rows = list(corpora.corpus().itertuples(index=False))
    neighbours = [(a.sentence, b.sentence) for a, b in pairwise(rows) if a.topic == b.topic]
    assert [tuple(p) for p in data["neighbours"]] == neighbours
    pairs = objectives.training_pairs()
    assert len(pairs) == len(judged) + len(neighbours) == 783
    assert all(a != b for a, b in pairs) and len(set(pairs)) == len(pairs)
    measured = study.texts()
    held_out = set(measured["sentences"]) | set(measured["one_topic"]) | set(corpora.REFERENCE_SENTENCES.values())
    held_out |= {t for name in study.PAIR_SETS for pair in measured[name] for t in pair}
    assert not held_out & {t for pair in pairs for t in pair}


# --------------------------------------------------------------------------- measuring and comparing

def test_pair_scores_on_hand_made_pairs():
    # pair 0: a = (e1, e2), b = (e1): mean pools (½, ½) and e1 → cos 1/√2; MaxSim a → b = (1 + 0) / 2
    # pair 1: a = (e2), b = (e2, e1): mean pools e2 and (½, ½) → 1/√2; MaxSim = 1
    acts = record([[E1, E2]], [[E1]], [[E2]], [[E2, E1]])
    mean_pool, maxsim = study.pair_scores(acts)
    np.testing.assert_allclose(mean_pool, [[1 / math.sqrt(2)], [1 / math.sqrt(2)]])
    np.testing.assert_allclose(maxsim, [[0.5], [1.0]])


def test_separability_units_average_to_the_ratio():
    acts = record([[E1, E2], [E1, E1]], [[E1, [2.0, 0.0]], [E2, E2]], [[E2, [0.0, 3.0]], [E1, [1.0, 1.0]]])
    units = layer_by_layer.separability_units(acts)
    np.testing.assert_allclose(units["between"].mean(axis=0) / units["within"].mean(axis=0),
                               geometry.separability_ratio(acts.word_states()))
    # depth 0, text 0: centroid (½, ½); within = mean(‖(½, −½)‖², ‖(−½, ½)‖²) = ½
    assert units["within"][0, 0] == pytest.approx(0.5)


def _measured(intra, ratio_terms, n=2):
    curves = {"intra_sentence_cosine": np.mean(intra, axis=0), "separability_ratio": None}
    units = {"intra_sentence_cosine": np.asarray(intra, float),
             "separability_ratio.between": np.asarray(ratio_terms[0], float),
             "separability_ratio.within": np.asarray(ratio_terms[1], float)}
    curves["separability_ratio"] = units["separability_ratio.between"].mean(0) / units["separability_ratio.within"].mean(0)
    return curves, units


def test_seed_mean_difference_and_seed_null_by_hand():
    a = _measured([[0.0, 0.2], [0.2, 0.4]], ([[1.0, 1.0], [1.0, 1.0]], [[1.0, 2.0], [1.0, 2.0]]))
    b = _measured([[0.2, 0.6], [0.4, 0.8]], ([[3.0, 1.0], [3.0, 1.0]], [[1.0, 1.0], [1.0, 1.0]]))
    curves, units = study.seed_mean([a, b])
    np.testing.assert_allclose(curves["intra_sentence_cosine"], [0.2, 0.5])
    np.testing.assert_allclose(units["intra_sentence_cosine"], [[0.1, 0.4], [0.3, 0.6]])
    np.testing.assert_allclose(curves["separability_ratio"], [2.0, 2 / 3])  # (1 + 3)/2 over 1; 1 over (2 + 1)/2
    diff_curves, diff_units = study.difference(b, a)
    np.testing.assert_allclose(diff_curves["intra_sentence_cosine"], [0.2, 0.4])
    assert set(diff_units) == {"intra_sentence_cosine"}
    null = study.seed_null({"mean_pool": {0: a, 1: b}, "maxsim": {0: a, 1: a}})
    np.testing.assert_allclose(null["intra_sentence_cosine"], [0.2, 0.4])


def test_reach_counts_back_from_the_last_depth():
    null = np.array([0.1, 0.1, 0.1, 0.1, 0.1])
    diff = np.array([0.2, 0.05, 0.2, -0.3, 0.4])  # |d| clears the null at 0, 2, 3, 4: back to depth 2
    found = study.reach(diff, null)
    assert found["depth"] == 2 and found["relative_depth"] == 0.5 and found["share"] == pytest.approx(3 / 5)
    assert "share_interval" not in found
    assert study.reach(np.full(3, 0.2), np.zeros(3))["share"] == 1.0
    absent = study.reach(np.array([0.2, 0.05]), np.array([0.1, 0.1]))
    assert absent["depth"] is None and absent["share"] == 0.0


def test_reach_interval_is_the_percentile_interval_of_the_resampled_counts():
    null = np.full(4, 0.1)
    # 40 draws reach back 4 depths (all), 40 reach 2, 20 reach 0 (absent at the last depth)
    draws = np.array([[0.2, 0.2, 0.2, 0.2]] * 40 + [[0.2, 0.0, 0.2, 0.2]] * 40 + [[0.2, 0.2, 0.2, 0.0]] * 20)
    found = study.reach(np.array([0.0, 0.2, 0.2, 0.2]), null, draws, n_units=7)
    assert found["share"] == 0.75 and found["n_units"] == 7
    assert found["share_interval"] == [0.0, 1.0] and found["depth_interval"] == [0, None]
    tight = study.reach(np.full(4, 0.2), null, draws[:40])
    assert tight["share_interval"] == [1.0, 1.0] and tight["depth_interval"] == [0, 0]
    # 3 of 100 draws absent: a linear percentile would give 1.9 depths; the interval stays whole depths
    mixed = study.reach(np.full(4, 0.2), null, np.concatenate([draws[80:83], draws[:40], draws[:40], draws[:17]]))
    assert mixed["share_interval"] == [0.0, 1.0] and mixed["depth_interval"] == [0, None]


def test_sample_specs_and_kept_units():
    per_unit = {"objectives.p.mean.before.separability_ratio.between": 1, "objectives.p.mean.before.separability_ratio.within": 2,
                "objectives.p.runs.maxsim.seed_0.anisotropy": 3, "objectives.p.mean.maxsim.cross_sentence_baseline": 4,
                "other": 5}
    specs = study.sample_specs(per_unit)
    assert specs == {"objectives.p.mean.before.separability_ratio": ["objectives.p.mean.before.separability_ratio.between",
                                                                      "objectives.p.mean.before.separability_ratio.within"],
                     "objectives.p.runs.maxsim.seed_0.anisotropy": "objectives.p.runs.maxsim.seed_0.anisotropy",
                     "objectives.p.mean.maxsim.cross_sentence_baseline": "objectives.p.mean.maxsim.cross_sentence_baseline"}
    assert set(study.kept_units(per_unit)) == {"objectives.p.mean.before.separability_ratio.between",
                                               "objectives.p.mean.before.separability_ratio.within", "other"}


def test_ledger_loads_with_a_seed_null_on_every_difference():
    ledger = claims.load(SLUG)
    for claim in ledger.claims:
        if ".difference." in claim.metric:
            assert claim.null["kind"] == "seeds" and claim.null["metric"].startswith(claim.metric.split(".difference.")[0])
    assert {c.id for c in ledger.claims if c.headline} >= {"loss-decides-collapse", "maxsim-keeps-spread"}


# --------------------------------------------------------------------------- the chapter end to end (slow)

@pytest.mark.slow
def test_results_hold_every_curve_of_every_variant_and_seed_with_bands(built_book):
    from test_layer_by_layer import chapter_results

    results = chapter_results(built_book, SLUG)
    L, m = results["model"]["layers"], results["metrics"]
    seeds = m["objectives"]["seeds"]
    assert len(seeds) >= 2 and m["objectives"]["n_pairs"] == len(results["inputs"]["training_pairs"])
    for start in ("pretrained", "random_init"):
        block = m["objectives"][start]
        for variant in study.VARIANTS:
            for seed in seeds:
                curves = block["runs"][variant][f"seed_{seed}"]
                assert set(curves) == set(study.MEASURES)
                assert all(len(curves[key]) == L + 1 for key in study.MEASURES)
                band = np.asarray(m["objectives"]["intervals"][f"{start}.runs.{variant}.seed_{seed}.intra_sentence_cosine"])
                assert band.shape == (2, L + 1) and np.all(band[0] <= band[1])
        assert set(block["reach"]) == set(study.BANDED)
        assert len(block["loss"]["maxsim"][f"seed_{seeds[0]}"]["losses"]) == results["params"]["steps"]
    verdicts = {c["id"]: c for c in results["claims"]}
    assert verdicts["loss-decides-collapse"]["interval"] is not None
    assert verdicts["loss-decides-collapse"]["null"]["value"] is not None


def test_chart_helpers_state_values_intervals_and_reach():
    from embedding_geometry.book import charts

    block = {"mean": {v: {"m": np.array([0.1, 0.2, 0.3])} for v in study.VARIANTS},
             "loss": {"maxsim": {"seed_4": {"losses": [2.0, 1.5]}}}}
    ci = {"pretrained.mean.maxsim.m": [[0.0, 0.1, 0.25], [0.2, 0.3, 0.35]]}
    values = charts.objective_final_values({"pretrained": block}, ci, "m")
    assert values["final_pretrained_maxsim"] == "0.300 [0.250, 0.350]" and values["final_pretrained_before"] == "0.300"
    assert charts.fingerprint_reach_text({"depth": 2, "present": [False, False, True, True, True]}) == "depth 2 of 4 (l/L = 0.50)"
    assert charts.fingerprint_reach_text({"depth": None, "present": [True, False]}).startswith("none")
    spanned = {"depth": 2, "present": [False] * 2 + [True] * 3, "depth_interval": [1, None]}
    assert charts.fingerprint_reach_text(spanned) == "depth 2 of 4 (l/L = 0.50); 95 % interval: depth 1 of 4 to none"
    assert charts.fingerprint_reach_text(spanned, short=True) == "0.50 [0.25, none]"
    nowhere = {"depth": None, "present": [False, False], "depth_interval": [None, None]}
    assert charts.fingerprint_reach_text(nowhere).endswith("at the final depth); 95 % interval: none")
    frame = charts.training_loss_frame({"pretrained": block})
    assert list(frame["step"]) == [1, 2] and set(frame["run"]) == {"MaxSim loss, seed 4"}
    assert set(charts.dense_colbert_endpoints()) == {"pub_mxbai_end", "pub_jina_end", "pub_jina_peak"}
