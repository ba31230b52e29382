"""Chapter 7: the two losses on closed-form cases, the schedule, the training's determinism and
pairing on tiny models, the held-out split and the training pairs file, the comparison over
paired seeds on hand-made values, the exclusion of copies that do not learn, and the chapter end
to end on the tiny model."""

import math
from itertools import pairwise

import numpy as np
import pytest
import torch
from conftest import ROOT
from test_layer_by_layer import E1, E2, record

from embedding_geometry.book import claims
from embedding_geometry.chapters.ch07_objective import charts, measures, prose, results, runs, synthetic_task, training
from embedding_geometry.core import corpora, geometry, hierarchical, models
from embedding_geometry.core.errors import ParameterError
from embedding_geometry.studies import layer_by_layer

SLUG = "07_training_objective"


# --------------------------------------------------------------------------- the scores, the loss, the schedule

def test_info_nce_of_identical_orthonormal_pairs_and_of_uniform_scores():
    # s_ii = 1, s_ij = 0: each row's loss is −log(e^{1/τ} / (e^{1/τ} + B − 1)) = log(1 + (B − 1) e^{−1/τ})
    tau, b = 0.5, 8
    expected = math.log1p((b - 1) * math.exp(-1 / tau))
    assert training.info_nce(torch.eye(b, dtype=torch.float64), tau).item() == pytest.approx(expected)
    assert training.info_nce(torch.full((b, b), 0.3), tau).item() == pytest.approx(math.log(b))
    assert training.info_nce(1 - torch.eye(b), tau).item() > math.log(b)


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
    assert training.maxsim_scores(q, q_mask, d, d_mask).item() == pytest.approx(expected)
    d_pad, d_pad_mask = _batch([E1, [1.0, 1.0], E2])
    d_pad_mask[0, 2] = 0
    q_pad, q_pad_mask = _batch([E1, E2, [-1.0, 0.0]])
    q_pad_mask[0, 2] = 0
    assert training.maxsim_scores(q_pad, q_pad_mask, d_pad, d_pad_mask).item() == pytest.approx(expected)


def test_mean_pool_score_is_the_cosine_of_the_masked_means():
    q, q_mask = _batch([E1, E2], [E1])
    d, d_mask = _batch([E1], [[0.0, -1.0], [1.0, 0.0]])
    expected = [[1 / math.sqrt(2), 0.0], [1.0, 1 / math.sqrt(2)]]
    np.testing.assert_allclose(training.mean_pool_scores(q, q_mask, d, d_mask).numpy(), expected, atol=1e-6)


def test_schedule_warms_up_linearly_then_decays_to_zero():
    # 10 steps, warm-up 0.2: W = 2 steps at 1/2, 2/2, then (10 − k) / 8 for k = 2 … 9
    factors = [training.schedule(k, 10, 0.2) for k in range(10)]
    assert factors == pytest.approx([0.5, 1.0, 1.0, 7 / 8, 6 / 8, 5 / 8, 4 / 8, 3 / 8, 2 / 8, 1 / 8])
    assert training.schedule(0, 5, 0.0) == 1.0  # no warm-up: one step at the peak


PAIRS = [("a", "b"), ("b", "c"), ("c", "d"), ("e", "f"), ("g", "h"), ("i", "j")]


def test_batches_are_seeded_full_and_never_repeat_a_text():
    first = training.batches(PAIRS, 3, 10, seed=4)
    assert first == training.batches(PAIRS, 3, 10, seed=4) != training.batches(PAIRS, 3, 10, seed=5)
    assert len(first) == 10 and all(len(batch) == 3 for batch in first)
    for batch in first:
        texts = [t for i in batch for t in PAIRS[i]]
        assert len(texts) == len(set(texts))
    with pytest.raises(ParameterError, match="pairs_per_batch"):
        training.batches(PAIRS, 7, 1, seed=0)


SETTINGS = training.Settings(steps=4, pairs_per_batch=4, learning_rate=1e-3, max_length=12)
TINY_PAIRS = [("The cat sat on the mat", "A cat is sitting on a mat"), ("Dogs bark at night", "A dog barks"),
              ("Rain fell all day", "It rained for hours"), ("The bank cut rates", "Interest rates were lowered"),
              ("She won the race", "The runner came first"), ("The soup is cold", "The soup has cooled")]


def test_training_is_deterministic_for_a_seed_and_leaves_its_start_alone(tiny_bert):
    before = models.state_sha256(tiny_bert.model)
    one, losses_one = training.train(tiny_bert, TINY_PAIRS, "maxsim", SETTINGS, seed=3)
    two, losses_two = training.train(tiny_bert, TINY_PAIRS, "maxsim", SETTINGS, seed=3)
    assert losses_one == losses_two and len(losses_one) == SETTINGS.steps
    for (name, a), (_, b) in zip(one.model.state_dict().items(), two.model.state_dict().items()):
        assert torch.equal(a, b), name
    assert one.info.sha256 == two.info.sha256 == models.state_sha256(one.model) != before
    assert models.state_sha256(tiny_bert.model) == before
    assert not one.model.training and "maxsim loss, seed 3" in one.info.id
    assert training.train(tiny_bert, TINY_PAIRS, "maxsim", SETTINGS, seed=4)[0].info.sha256 != one.info.sha256
    norms = []
    watched, _ = training.train(tiny_bert, TINY_PAIRS, "maxsim", SETTINGS, seed=3, gradient_norms=norms)
    assert watched.info.sha256 == one.info.sha256  # recording the gradients changes nothing
    assert np.shape(norms) == (SETTINGS.steps, tiny_bert.info.layers) and np.all(np.asarray(norms) > 0)
    with pytest.raises(ParameterError, match="objective"):
        training.train(tiny_bert, TINY_PAIRS, "cls", SETTINGS, seed=0)


def test_the_two_losses_of_a_seed_are_paired_and_differ_only_in_the_score(tiny_bert, encoded_batches):
    seen = encoded_batches
    mean_pool, losses_mean = training.train(tiny_bert, TINY_PAIRS, "mean_pool", SETTINGS, seed=2)
    batches_mean, seen[:] = list(seen), []
    maxsim, losses_max = training.train(tiny_bert, TINY_PAIRS, "maxsim", SETTINGS, seed=2)
    assert seen == batches_mean  # the same texts, batch by batch
    assert mean_pool.info.sha256 != maxsim.info.sha256 and losses_mean != losses_max


# --------------------------------------------------------------------------- the pairs

def test_training_pairs_follow_the_two_rules_of_the_file_and_hold_out_every_measured_text():
    data = corpora.load_yaml(training.PAIRS_FILE)
    judged = [(q["query"], r) for q in corpora.load_yaml("corpus_queries.yaml")["queries"] for r in q["relevant"]]
    assert [tuple(p) for p in data["queries"]] == judged
    rows = list(corpora.corpus().itertuples(index=False))
    neighbours = [(a.sentence, b.sentence) for a, b in pairwise(rows) if a.topic == b.topic]
    assert [tuple(p) for p in data["neighbours"]] == neighbours
    pairs = training.training_pairs()
    assert len(pairs) == 783 and all(a != b for a, b in pairs) and len(set(pairs)) == len(pairs)
    measured = measures.texts()
    held_out = set(measured["sentences"]) | set(measured["one_topic"]) | set(corpora.REFERENCE_SENTENCES.values())
    held_out |= {t for name in measures.PAIR_SETS for pair in measured[name] for t in pair}
    assert not held_out & {t for pair in pairs for t in pair}


def test_the_held_out_split_shares_no_text_with_training_or_within_itself():
    pairs = training.training_pairs()
    train, held = training.split_pairs(pairs, 64)
    assert len(held) == 64 and (train, held) == training.split_pairs(pairs, 64)
    texts = [t for pair in held for t in pair]
    assert len(set(texts)) == len(texts) and not set(texts) & {t for pair in train for t in pair}
    assert set(train) | set(held) <= set(pairs)
    with pytest.raises(ParameterError, match="held_out_pairs"):
        training.split_pairs(pairs, 1)


# --------------------------------------------------------------------------- measuring one model

def test_pair_scores_on_hand_made_pairs():
    acts = record([[E1, E2]], [[E1]], [[E2]], [[E2, E1]])
    mean_pool, maxsim = measures.pair_scores(acts)
    np.testing.assert_allclose(mean_pool, [[1 / math.sqrt(2)], [1 / math.sqrt(2)]])
    np.testing.assert_allclose(maxsim, [[0.5], [1.0]])


def test_sentence_measures_average_their_units_to_the_curves():
    acts = record([[E1, E2], [E1, [1.0, 0.5]]], [[E1, [2.0, 0.5]], [E2, [0.5, 1.0]]],
                  [[E2, [0.5, 3.0]], [E1, [1.0, 1.0]]], cls=[[E1, E2, E1], [E1, E1, E2]])
    curves, units = measures.sentence_measures(acts)
    for key in ("intra_sentence_cosine", "cross_sentence_baseline", "cls_mean_alignment", "anisotropy"):
        np.testing.assert_allclose(units[key].mean(axis=0), curves[key])
    np.testing.assert_allclose(curves[measures.RATIO], geometry.separability_ratio(acts.word_states()))
    np.testing.assert_allclose(curves[measures.RATIO], layer_by_layer.separability(acts)["separability_ratio"])


def test_the_projection_of_a_pairwise_statistic_has_its_mean_and_its_resampled_spread():
    """2 r_s − θ averages to θ, and resampling it spreads as the U-statistic recomputed among the
    resampled units does (the engine's pairwise samples.Units), where the row means alone spread half as much."""
    from embedding_geometry.book.claims import samples

    x = np.random.default_rng(0).normal(size=(60, 3)) + np.array([1.0, 0.0, 0.0])
    kernel = x @ x.T
    kernel[np.arange(60), np.arange(60)] = 0.0
    theta = kernel.sum() / (60 * 59)
    units = measures.projection(kernel)
    assert units.mean() == pytest.approx(theta)

    def spread(statistic):
        return np.std(samples.bootstrap(statistic, lambda x: x, 4000, np.random.default_rng(1)))

    exact = spread(samples.Units(kernel, pairwise=True))
    assert spread(samples.Units(units)) == pytest.approx(exact, rel=0.15)
    assert spread(samples.Units(kernel.sum(axis=1) / 59)) == pytest.approx(exact / 2, rel=0.15)
    np.testing.assert_allclose(measures.projection(kernel.sum(axis=1) / 59, rows=True), units)


# --------------------------------------------------------------------------- comparing over paired seeds

def fake_measured(rng, seeds, n_units=6, depths=4, shift=0.0):
    """(curves, units) per seed with every sentence measure, units [n_units, depths]."""
    out = {}
    for s in seeds:
        units = {key: rng.normal(0.3 + shift, 0.05, size=(n_units, depths)) for key in measures.SENTENCE_MEASURES
                 if key != measures.RATIO}
        units[f"{measures.RATIO}.between"] = rng.uniform(1, 2, size=(n_units, depths)) + shift
        units[f"{measures.RATIO}.within"] = rng.uniform(1, 2, size=(n_units, depths))
        curves = {key: value.mean(axis=0) for key, value in units.items() if "." not in key}
        curves[measures.RATIO] = units[f"{measures.RATIO}.between"].mean(0) / units[f"{measures.RATIO}.within"].mean(0)
        out[s] = (curves, units)
    return out


def comparison(seeds=(0, 1, 2, 3), shift=0.2):
    rng = np.random.default_rng(0)
    measured = {"before": fake_measured(rng, seeds), "mean_pool": fake_measured(rng, seeds, shift=shift),
                "maxsim": fake_measured(rng, seeds)}
    return measured, measures.compare(measured, list(seeds), measures.SENTENCE_MEASURES, seed=0, resamples=300)


def test_differences_are_taken_seed_by_seed_and_judged_over_seeds_and_sentences():
    measured, block = comparison()
    seeds = block["seeds"]

    def within(variant, s):
        return measured[variant][s][0]["intra_sentence_cosine"]

    per_seed = np.stack([within("mean_pool", s) - within("maxsim", s) for s in seeds])
    np.testing.assert_allclose(block["per_seed_difference"]["intra_sentence_cosine"], per_seed)
    np.testing.assert_allclose(block["difference"]["intra_sentence_cosine"], per_seed.mean(axis=0))
    final = block["final"]["difference"]["intra_sentence_cosine"]
    assert final["value"] == pytest.approx(per_seed[:, -1].mean())
    assert final["per_seed"] == pytest.approx(per_seed[:, -1])
    assert final["interval"][0] > 0 and final["n_seeds"] == 4 and final["n_units"] == 6  # a shift of 0.2 ≫ the noise
    assert final["p_value"] == hierarchical.sign_flip_test(per_seed[:, -1]) == pytest.approx(2 / 16)

    def ratio(v, s):
        terms = measured[v][s][1]
        return terms[f"{measures.RATIO}.between"].mean(0) / terms[f"{measures.RATIO}.within"].mean(0)

    expected = [ratio("mean_pool", s) - ratio("maxsim", s) for s in seeds]
    np.testing.assert_allclose(block["per_seed_difference"][measures.RATIO], expected)
    change = block["change"]["maxsim"]["anisotropy"]
    np.testing.assert_allclose(change, block["mean"]["maxsim"]["anisotropy"] - block["mean"]["before"]["anisotropy"])
    assert np.asarray(block["band"]["before"]["anisotropy"]).shape == (2, 4)


def test_reach_counts_back_the_depths_where_the_difference_leaves_its_noise():
    value = np.array([0.2, 0.05, 0.2, -0.3, 0.4])  # |d| > 0.1 at depths 0, 2, 3, 4: back to depth 2
    band = np.stack([value - 0.1, value + 0.1])
    draws = np.stack([value] * 40 + [value * np.array([1, 1, 1, 1, 0])] * 10)  # 10 draws absent at the last depth
    found = measures.reach(hierarchical.Hierarchical(value, band, draws, n_seeds=5, n_units=7))
    assert found["depth"] == 2 and found["relative_depth"] == 0.5 and found["share"] == pytest.approx(3 / 5)
    np.testing.assert_allclose(found["noise"], 0.1)
    assert found["share_interval"] == [0.0, 0.6] and found["depth_interval"] == [2, None]
    assert (found["n_seeds"], found["n_units"]) == (5, 7)
    nothing = hierarchical.Hierarchical(np.zeros(3), np.stack([-np.ones(3), np.ones(3)]), np.zeros((5, 3)), 2, 2)
    absent = measures.reach(nothing)
    assert absent["depth"] is None and absent["share"] == 0.0 and absent["depth_interval"] == [None, None]


def test_the_peak_margin_holds_its_peak_depth_in_every_draw():
    values = np.tile(np.array([0.1, 0.5, 0.3]), (3, 4, 1)) + np.random.default_rng(0).normal(0, 0.01, (3, 4, 3))
    found = measures.peak_margin(values, seed=0, name="x", resamples=100)
    assert found["peak_depth"] == 1 and found["value"] == pytest.approx(0.2, abs=0.02) and found["interval"][0] > 0.1


# --------------------------------------------------------------------------- has a copy finished learning?

def test_levelled_compares_the_last_two_tenths_by_hand():
    # 20 steps, tenths of t = 2: first (4, 4), ninth (1.2, 1.2), last (1.0, 0.8): fall 1.2 − 0.9 = 0.3,
    # share 0.3 / (4 − 0.9). The last half (1.2 × 8, then 1.0, 0.8) changes by 0 seven times, then
    # −0.2 twice: the changes' sd is 0.2 √(2/9 · 7/8) = 0.2 √(7/36), s = that / √2, n = 2 s √(2 / 2) = 2 s
    losses = [4.0, 4.0] + [2.0] * 8 + [1.2] * 8 + [1.0, 0.8]
    found = training.levelled(losses)
    s = 0.2 * math.sqrt(7 / 36) / math.sqrt(2)
    assert found["steps_per_tenth"] == 2 and found["fall"] == pytest.approx(0.3)
    assert found["step_noise"] == pytest.approx(s) and found["noise"] == pytest.approx(2 * s)
    assert found["share"] == pytest.approx(0.3 / 3.1) and not found["levelled"]  # 0.3 > 0.12, and 9.7 % > 5 %
    noisy = training.levelled([4.0, 4.0] + [2.0] * 8 + [1.2, 1.6] * 4 + [1.0, 0.8])  # the same fall, in noise
    assert noisy["fall"] == pytest.approx(0.5) and noisy["noise"] > noisy["fall"] and noisy["levelled"]
    with pytest.raises(ValueError, match="at least 6 steps"):
        training.levelled([3.0, 2.0, 1.0, 0.5, 0.2])
    from embedding_geometry.chapters.ch07_objective.rules import STEPS_AT_LEAST

    assert training.levelled([3.0, 2.0, 1.0, 0.5, 0.2, 0.1])["steps_per_tenth"] == 2 == STEPS_AT_LEAST // 3


def test_levelled_on_synthetic_loss_curves():
    rng = np.random.default_rng(0)
    steps = np.arange(200)
    flattened = 3.0 * np.exp(-steps / 20) + 0.1 + rng.normal(0, 0.02, 200)  # flat for the last half
    still_falling = np.linspace(3.0, 0.5, 200) + rng.normal(0, 0.02, 200)  # falls as fast at the end
    noisy_flat = 1.0 + rng.normal(0, 0.3, 30)  # a fine-tuning curve: no trend, batch noise
    rose_then_fell = np.r_[np.full(20, 1.0), np.full(160, 2.0), np.full(20, 1.5)] + rng.normal(0, 0.01, 200)
    assert training.levelled(flattened)["levelled"]
    falling = training.levelled(still_falling)
    assert not falling["levelled"] and falling["fall"] > falling["noise"]
    assert falling["share"] == pytest.approx(1 / 9, rel=0.1)  # one tenth of a linear fall, over nine tenths of it
    assert training.levelled(noisy_flat)["levelled"]
    rose = training.levelled(rose_then_fell)
    assert rose["share"] is None and not rose["levelled"]  # it fell at the end, but never overall: no share
    slow_end = np.r_[np.linspace(3.0, 0.2, 160), np.linspace(0.2, 0.19, 40)] + rng.normal(0, 0.001, 200)
    slow = training.levelled(slow_end)
    assert slow["fall"] > slow["noise"] and slow["share"] < training.LEVEL_TOLERANCE and slow["levelled"]


# --------------------------------------------------------------------------- copies, exclusion, an arm's results

def curve(last=0.5, steps=20):
    """A loss curve from 2.0 that has levelled off at ``last`` over its last half."""
    return [2.0] * 2 + list(np.linspace(2.0, last, steps // 2 - 2)) + [last] * (steps // 2)


def fake_records(arm, seeds=(0, 1, 2), learned=lambda variant, seed: True, levelled=lambda variant, seed: True,
                 drift=0.0, before_hits=lambda n: (np.arange(n) % 2 == 0).astype(float)):
    """Records as :func:`runs.run_copy` returns them, with made-up measurements: a copy
    that ``learned`` finds every held-out document, else none, and the start finds ``before_hits``
    (every other one); one that ``levelled`` has a flat
    end to its loss, else one that still falls; its snapshot is its geometry with the mean-pool
    copy's measures lower by ``drift``."""
    rng = np.random.default_rng(1)
    n = len(arm.held_out)
    out = {}
    for variant in ("before", *arm.trained):
        geometry_of = fake_measured(rng, seeds, shift=0.2 if variant in ("mean_pool", "mean_pool_hard") else 0.0)
        if arm.pair_sets:
            for s in seeds:
                geometry_of[s][1].update({key: rng.normal(0.1 if variant == "mean_pool_hard" else 0.0, 0.01, (5, 4))
                                          for key in results.HARD_KEYS if key != "anisotropy"}, **{
                    key: rng.normal(0.3, 0.05, (6, 4)) for key in measures.PAIR_MEASURES})
        out[variant] = {}
        for s in seeds:
            curves, units = geometry_of[s]
            early = {k: v - (drift if variant == "mean_pool" else 0.0) for k, v in units.items()}
            losses = curve() if levelled(variant, s) else list(np.linspace(2.0, 0.2, 20))
            out[variant][s] = {"arm": arm.name, "variant": variant, "seed": s, "info": {"id": f"{variant} {s}"},
                               "losses": None if variant == "before" else losses, "geometry": (curves, units),
                               "gradient_norms": None if variant == "before" else [0.1 * s, 0.2, 0.3, 0.4 + s],
                               "snapshot": None if variant == "before" else (curves, early),
                               "retrieval": {o: np.full(n, float(learned(variant, s))) if variant != "before" else
                                             before_hits(n) for o in training.OBJECTIVES},
                               "pools": rng.normal(size=(8, 5)), "cpu_seconds": 1.5}
    return out


SCRATCH = runs.Arm("scratch", SETTINGS, tuple(TINY_PAIRS), tuple(TINY_PAIRS * 4), {"sentences": []}, k=1,
                             task=synthetic_task.Task(concepts=16), shape=synthetic_task.Shape(layers=2, width=16))
FINETUNE = runs.Arm("finetune", SETTINGS, tuple(TINY_PAIRS), tuple(TINY_PAIRS * 4), {"sentences": []}, k=1,
                              model="m", pair_sets=measures.PAIR_SETS, hard_negatives=True)


def test_a_seed_is_kept_only_when_every_copy_beats_chance_and_levels_off():
    found = {"mean_pool": {0: {"beats_chance": True}, 1: {"beats_chance": True}, 2: {"beats_chance": False}},
             "maxsim": {0: {"beats_chance": True}, 1: {"beats_chance": True}, 2: {"beats_chance": True}}}
    loss = {v: {f"seed_{s}": {"levelled": {"levelled": not (v == "maxsim" and s == 1)}} for s in range(3)}
            for v in found}
    dropped = results.excluded(found, loss)
    assert [(e["variant"], e["seed"], e["reasons"]) for e in dropped] == [
        ("mean_pool", 2, ["does not beat chance"]), ("maxsim", 1, ["its loss had not levelled off"])]
    assert results.kept_seeds([0, 1, 2], dropped) == [0]


def test_an_arm_leaves_out_every_copy_that_does_not_beat_chance_or_level_off_with_its_seed():
    records = fake_records(SCRATCH, learned=lambda variant, seed: not (variant == "maxsim" and seed == 1))
    block = results.block(records, SCRATCH, resamples=200)
    assert block["kept"] == [0, 2] and block["comparison"]["seeds"] == [0, 2]
    assert [(e["variant"], e["seed"]) for e in block["excluded"]] == [("maxsim", 1)]
    assert block["judged"]["collapse_difference"]["n_seeds"] == 2
    assert block["loss"]["maxsim"]["seed_1"]["last"] == 0.5  # reported, but its geometry is not
    assert set(block["runs"]["maxsim"]) == set(block["runs"]["mean_pool"]) == {"seed_0", "seed_2"}
    gradients = block["gradient_norm"]  # the kept seeds' only, per block
    assert gradients["seeds"] == [0, 2]
    assert gradients["per_seed"]["maxsim"] == [[0.0, 0.2, 0.3, 0.4], [0.2, 0.2, 0.3, 2.4]]
    assert gradients["mean"]["maxsim"] == pytest.approx([0.1, 0.2, 0.3, 1.4])
    assert gradients["per_seed"]["mean_pool_hard"] is None and gradients["mean"]["mean_pool_hard"] is None  # not run
    ran = runs.models_run({"scratch": records})
    assert set(ran) == {f"{v} {s}" for v in measures.VARIANTS for s in (0, 1, 2)}
    unlevelled = results.block(fake_records(SCRATCH, levelled=lambda v, s: s != 2), SCRATCH, resamples=50)
    assert unlevelled["kept"] == [0, 1] and {e["seed"] for e in unlevelled["excluded"]} == {2}
    assert unlevelled["excluded"][0]["reasons"] == ["its loss had not levelled off"]
    nobody = results.block(fake_records(SCRATCH, learned=lambda v, s: s == 0), SCRATCH, resamples=50)
    assert nobody["comparison"] is None and nobody["judged"]["collapse_difference"] == {
        "value": None, "interval": None, "draws": None, "n_seeds": None}
    reasons = results.not_measured({"scratch": nobody})
    assert reasons["objectives.scratch.judged.collapse_difference.value"].startswith("1 of 3 seeds kept")


def test_a_comparison_that_had_not_settled_judges_nothing_but_its_checks():
    settled = results.block(fake_records(FINETUNE), FINETUNE, resamples=300)
    assert settled["comparison"]["settled"]["settled"] and settled["hard_negatives"]["settled"]["settled"]
    assert settled["not_judged"] == {} and settled["judged"]["hard_negative_margin"]["value"] > 0
    moving = results.block(fake_records(FINETUNE, drift=0.5), FINETUNE, resamples=300)
    check = moving["comparison"]["settled"]
    assert not check["settled"] and check["three_quarters"] == pytest.approx(check["end"] - 0.5)
    assert check["per_seed_three_quarters"] == pytest.approx(
        np.asarray(moving["comparison"]["final"]["difference"][measures.FINGERPRINT]["per_seed"]) - 0.5)
    assert not moving["hard_negatives"]["settled"]["settled"]  # the in-batch copy moved: the margin too
    for name in results.RESTS_ON["comparison"] + results.RESTS_ON["hard_negatives"]:
        assert moving["judged"][name]["value"] is None and "had not settled" in moving["not_judged"][name]
    for name in ("retrieval_match", "anisotropy_change_maxsim", "easy_change_mean_pool", "hard_negative_retrieval"):
        assert moving["judged"][name]["value"] is not None  # the checks are judged either way
    reasons = results.not_measured({"finetune": moving})
    assert "outside the 95 % interval" in reasons["objectives.finetune.judged.collapse_difference.value"]


def test_fine_tuned_copies_that_do_not_improve_their_backbone_judge_no_difference_between_the_losses():
    n = len(FINETUNE.held_out)
    taught = results.block(fake_records(FINETUNE), FINETUNE, resamples=300)
    gain = taught["improvement"]["maxsim"]
    assert (gain["before"], gain["after"], gain["gained"], gain["lost"]) == (0.5, 1.0, n // 2, 0)
    assert gain["p_value"] == pytest.approx(0.5 ** (n // 2)) and gain["improves"]  # exact: all gains of n/2
    same = results.block(fake_records(FINETUNE, before_hits=np.ones), FINETUNE, resamples=300)
    assert same["improvement"]["mean_pool"] == {"before": 1.0, "after": 1.0, "gained": 0, "lost": 0,
                                                "p_value": 1.0, "improves": False}
    for name in results.RESTS_ON["comparison"]:
        assert same["judged"][name]["value"] is None
        copies = "MaxSim" if name in ("maxsim_change", "peak_margin") else "mean-pool"  # what each needs trained
        assert same["not_judged"][name].startswith("fine-tuning did not improve the backbone's held-out recall@1: "
                                                   f"{copies} copies 1.000 → 1.000 (0 queries gained, 0 lost")
    maxsim_only = fake_records(FINETUNE, before_hits=np.ones)
    maxsim_only["before"][0]["retrieval"]["maxsim"] = np.zeros(n)  # its own score's start finds nothing
    partly = results.block(maxsim_only, FINETUNE, resamples=300)
    assert partly["judged"]["maxsim_change"]["value"] is not None and "maxsim_change" not in partly["not_judged"]
    assert partly["judged"]["collapse_difference"]["value"] is None
    for name in ("retrieval_match", "anisotropy_change_maxsim", "hard_negative_margin", "hard_negative_retrieval"):
        assert same["judged"][name]["value"] is not None  # the checks and the hard negatives need no gain
    reasons = results.not_measured({"finetune": same})
    assert "did not improve" in reasons["objectives.finetune.judged.maxsim_change.value"]
    text = prose.convergence({"finetune": same})
    assert ("- **Fine-tuned from the backbone, against the backbone** (held-out recall@1, each query's hit averaged "
            "over the kept copies): the mean-pool loss 1.000 → 1.000 (0 queries gained, 0 lost; one-sided exact "
            "sign test p = 1)") in text
    assert ("the copies of the mean-pool loss and the MaxSim loss do not improve on it: that training taught nothing "
            "this test detects, so the two losses' geometry is not compared (its claims are not tested); the checks "
            "of the experiment and the hard-negative comparison are judged.") in text
    assert "both losses' copies improve on it, so the losses' geometry is compared" in prose.convergence(
        {"finetune": taught})
    assert "it had settled, but fine-tuning did not improve the backbone" in prose.settling({"finetune": same})
    one = results.block(fake_records(FINETUNE, before_hits=lambda n: np.r_[0.0, np.ones(n - 1)]), FINETUNE,
                                  resamples=300)
    assert "(1 query gained, 0 lost;" in prose.convergence({"finetune": one})
    assert "(1 query gained, 0 lost;" in one["not_judged"]["collapse_difference"]  # one gain of 1: p = 1/2
    scratch = results.block(fake_records(SCRATCH, before_hits=np.ones), SCRATCH, resamples=50)
    assert "improvement" not in scratch and scratch["not_judged"] == {}  # from scratch, the start knows nothing


def test_copies_are_deterministic_and_paired_on_the_small_encoder():
    task = synthetic_task.Task(concepts=16, train_pairs=64, held_out=12)
    arm = runs.scratch_arm(task, synthetic_task.Shape(layers=1, width=16),
                                     training.Settings(steps=4, pairs_per_batch=8, learning_rate=1e-3, max_length=16))
    one, again = runs.run_copy(arm, "maxsim", 5), runs.run_copy(arm, "maxsim", 5)
    assert one["info"]["sha256"] == again["info"]["sha256"] and one["losses"] == again["losses"]
    for key, curve_ in one["geometry"][0].items():
        np.testing.assert_array_equal(curve_, again["geometry"][0][key])
    assert runs.snapshot_step(4) == 3 and runs.snapshot_step(30) == 23
    assert set(one["snapshot"][1]) == set(one["geometry"][1])  # measured after 3 of the 4 steps
    assert not np.array_equal(one["snapshot"][1]["intra_sentence_cosine"], one["geometry"][1]["intra_sentence_cosine"])
    start = runs.run_copy(arm, None, 5)
    assert start["variant"] == "before" and start["losses"] is None and start["snapshot"] is None
    assert start["gradient_norms"] is None and len(one["gradient_norms"]) == 1  # one block, averaged over the steps
    start_weights = synthetic_task.encoder(synthetic_task.vocabulary(task), arm.shape, 5).info.sha256
    assert start["info"]["sha256"] == start_weights  # both copies' start
    assert runs.run_copy(arm, "mean_pool", 5)["info"]["sha256"] != one["info"]["sha256"]
    assert len(one["retrieval"]["maxsim"]) == 12 and torch.get_num_threads() >= 1 and one["cpu_seconds"] > 0


def test_a_pool_of_workers_gives_its_model_calls_to_the_chapters_clock(monkeypatch):
    from embedding_geometry.core import clock

    task = synthetic_task.Task(concepts=8, train_pairs=16, held_out=6)
    arm = runs.scratch_arm(task, synthetic_task.Shape(layers=1, width=8),
                                     training.Settings(steps=2, pairs_per_batch=8, learning_rate=1e-3, max_length=8,
                                                         warmup=0))
    monkeypatch.setattr(clock, "_totals", {"seconds": 0.0, "calls": 0})
    records = runs.run([arm], {arm.name: [0, 1]}, workers=2)
    copies = [r for by_seed in records[arm.name].values() for r in by_seed.values()]
    assert all(r["model_calls"][1] >= 2 for r in copies if r["variant"] != "before")  # its 2 training steps at least
    done = {id(r): r for r in copies}.values()  # a start stands under every seed it serves
    seconds, calls = clock.model_seconds()
    assert calls == sum(r["model_calls"][1] for r in done) > 0
    assert seconds == pytest.approx(sum(r["model_calls"][0] for r in done) / 2)


def test_jobs_run_the_long_copies_first_and_one_start_per_fine_tuning_arm():
    fine = runs.Arm("finetune", SETTINGS, (), tuple(TINY_PAIRS), {}, model="m")
    todo = runs.jobs([SCRATCH, fine], {"scratch": [0, 1], "finetune": [0, 1, 2]})
    expected = [("finetune", o, s) for s in (0, 1, 2) for o in training.OBJECTIVES] + [("finetune", None, 0)]
    assert [(a.name, o, s) for a, o, s in todo][:7] == expected
    assert len(todo) == 7 + 6
    assert FINETUNE.trained == ("mean_pool", "maxsim", "mean_pool_hard") and SCRATCH.trained == training.OBJECTIVES
    with_hard = runs.jobs([FINETUNE], {"finetune": [0, 1]})
    assert [(o, s) for _, o, s in with_hard] == [(v, s) for s in (0, 1) for v in FINETUNE.trained] + [(None, 0)]


def test_ledger_judges_every_claim_on_draws_over_seeds():
    ledger = claims.load(SLUG)
    drawn = [c for c in ledger.claims if ".gradient_norm." not in c.metric]
    for claim in ledger.claims:
        arm = claim.metric.split(".")[1]
        assert claim.unit == "seeds" and claim.null is None and (claim.measured_on is not None) == (arm == "scratch")
        if claim not in drawn:  # each kept seed's gradient norms: the seeds are the units, exact at small n
            assert claim.samples == {"path": claim.metric.replace(".mean.", ".per_seed.")}
            assert claim.series == "blocks" and claim.test[0] == "rises"
            continue
        assert claim.samples == {"draws": claim.metric.replace(".value", ".draws"),
                                 "n_units": claim.metric.replace(".value", ".n_seeds")}
        assert claim.metric.startswith(f"objectives.{arm}.judged.")
    assert len(drawn) == len(ledger.claims) - 2
    names = {c.metric.split(".")[3] for c in drawn}
    assert names <= set(results.judged(None, FINETUNE))
    headlines = {"loss-decides-collapse-scratch", "fingerprint-every-depth-scratch", "maxsim-keeps-spread",
                 "hard-negatives-necessary"}  # the posts' own emphasis (the ledger's header)
    assert {c.id for c in ledger.claims if c.headline} == headlines


def test_the_hard_negative_claim_lives_here_and_chapter_2_links_to_it():
    """Seed 000's claim is judged here only: chapter 2 runs before this chapter, so it could not show
    this chapter's verdict; its coverage row and its prose send the reader here."""
    import yaml

    from embedding_geometry.book import coverage

    (here,) = [c for c in claims.load(SLUG).claims if c.id == "hard-negatives-necessary"]
    assert here.kind == "published" and here.home is None and here.in_family and here.source.startswith("seed 000")
    assert not [c for c in claims.load("02_similarity_attractor").claims if c.id == here.id]
    path = coverage.path("02_similarity_attractor")
    (item,) = [i for i in yaml.safe_load(path.read_text())["items"] if i["id"] == "hard-negatives-necessary"]
    assert item["chapter"] == SLUG and item["where"].startswith("## Hard negatives") and item["status"] == "partly"
    assert {"hard-negatives-necessary", "hard-negatives-other-twin"} <= set(item["claims"])


def test_the_engine_reads_its_interval_and_p_from_the_arms_draws():
    """Each scratch claim judged on a fake arm: its 95 % interval is the percentiles of the draws
    the arm stored, and its one-sided p the share of draws on the other side of the bound."""
    block = results.block(fake_records(SCRATCH, seeds=(0, 1, 2, 3, 4)), SCRATCH, resamples=4000)
    tested = [c for c in claims.load(SLUG).claims if ".scratch.judged." in c.metric and not c.description]
    scratch = claims.Ledger(SLUG, tested)
    verdicts = claims.evaluate(scratch, {"objectives": {"scratch": block}}, "tiny", resamples=100,
                               family=claims.family_size())
    for verdict in verdicts:
        draws = block["judged"][verdict.claim.metric.split(".")[3]]["draws"]
        stat = verdict.statistic
        assert stat["n_units"] == 5 and stat["method"] == "resamples (the chapter's own)"
        np.testing.assert_allclose(stat["interval"], np.percentile(draws, [2.5, 97.5]))
        (sign, bound), *_ = [(-1.0 if verdict.claim.test[0] == "below" else 1.0,
                              float(verdict.claim.test[1].get("bound", 0.0)))]
        if verdict.claim.test[0] != "between":
            beyond = np.sum(sign * (draws - bound) > 0)
            assert verdict.p_holds == pytest.approx((1 + len(draws) - beyond) / (len(draws) + 1))
        assert verdict.verdict in ("holds", "does not hold", "inconclusive")
    rising = next(c for c in claims.load(SLUG).claims if c.id == "gradient-strongest-at-output-scratch")
    found, = claims.evaluate(claims.Ledger(SLUG, [rising]), {"objectives": {"scratch": block}}, "tiny",
                             family=claims.family_size())
    assert found.statistic["method"] == "sign-flip (exact)" and found.statistic["n_units"] == 5  # seeds 0–4
    assert found.statistic["value"] == pytest.approx(np.mean([0.4 + s - 0.1 * s for s in range(5)]))


def test_the_peak_and_the_weakest_depth_are_found_again_in_every_draw():
    # row 0 peaks at depth 1 (margin min(0.5, 0.4) = 0.4), row 1 at depth 2 (min(0.3, 0.6) = 0.3)
    means = np.array([[0.0, 0.5, 0.2, 0.1], [0.0, 0.1, 0.3, -0.3]])
    np.testing.assert_allclose(measures.peak_statistic(means), [0.4, 0.3])
    band = np.array([[0.0, 0.2, 0.6], [0.2, 0.6, 1.0]])
    found = hierarchical.Hierarchical(value=np.array([0.1, 0.4, 0.8]), band=band,
                                      draws=np.array([[0.3, 0.1, 0.8], [0.0, 0.5, 0.9]]), n_seeds=5, n_units=7)
    # noise n = 0.1, 0.2, 0.2: the estimate's |d| / n = 1, 2, 4; draw 0: 3, 0.5, 4; draw 1: 0, 2.5, 4.5
    every = measures.visibility(found, 0.0)
    assert every["value"] == pytest.approx(1.0)
    np.testing.assert_allclose(every["draws"], [0.5, 0.0])
    back = measures.visibility(found, 0.5)  # depths 1 and 2 of L = 2
    assert back["value"] == pytest.approx(2.0)
    np.testing.assert_allclose(back["draws"], [0.5, 2.5])
    np.testing.assert_allclose(measures.visibility(found, 1.0)["draws"], [4.0, 4.5])


def test_rules_refuse_in_one_line_what_the_runs_would_refuse_later():
    """The chapter's needs build what its cells build (the task, the split, the batches, the
    encoder's shape) and refuse before any run what those would refuse mid-chapter."""
    from embedding_geometry.book import rules

    defaults = rules.notebook_defaults(ROOT / "notebooks" / f"{SLUG}.ipynb")
    rules.check(SLUG, defaults)
    for bad, name in (({"scratch_width": 30}, "scratch_width"), ({"scratch_layers": 1}, "scratch_layers"),
                      ({"task_pairs": 100, "scratch_pairs_per_batch": 512}, "scratch_pairs_per_batch"),
                      ({"held_out_pairs": 300}, "finetune_pairs_per_batch"),
                      ({"hard_negatives": "yes"}, "hard_negatives"), ({"finetune_steps": 5}, "finetune_steps"),
                      ({"scratch_steps": 5}, "scratch_steps")):
        with pytest.raises(ParameterError, match=f"parameter '{name}'"):
            rules.check(SLUG, {**defaults, **bad})


def test_charts_and_sentences_of_an_arm():
    block = results.block(fake_records(SCRATCH), SCRATCH, resamples=100)
    blocks = {"scratch": block}
    assert charts.objective_loss_chart(blocks).to_dict()["hconcat"]
    gradients = charts.objective_gradient_chart(blocks).to_dict()
    assert len(gradients["hconcat"]) == 1 and gradients["hconcat"][0]["encoding"]["y"]["scale"] == {"type": "log"}
    table = charts.objective_convergence_table(blocks)
    assert len(table) == 3 * 2 + 2 and bool(table["levelled off"].iloc[0])
    assert table.attrs["fold"].startswith("How each of the 6 copies trained")
    settled = charts.objective_settled_table(blocks)
    assert settled["settled"].tolist() == [True] and settled["at 3/4 of the steps"].iloc[0] == pytest.approx(
        block["comparison"]["settled"]["three_quarters"], abs=5e-5)  # four decimals
    table = charts.objective_per_seed_table(blocks, "intra_sentence_cosine")
    assert list(table.columns)[:3] == ["seed 0", "seed 1", "seed 2"]
    for chart in (charts.objective_chart(blocks, "anisotropy", "a"), charts.objective_answers_chart(blocks),
                  charts.objective_difference_chart(blocks, "anisotropy", "d")):
        assert chart.to_dict()
    text = prose.convergence(blocks)
    assert "all 6 copies beat chance (one-sided exact binomial test at 0.05) and levelled off" in text
    assert "from 2.00 to 0.50 and levels off on 3 of 3 copies" in text
    assert prose.starts(blocks).startswith("- **Trained from scratch**, before training: held-out recall@1")
    assert "had settled, so its claims are judged" in prose.settling(blocks)
    assert prose.reaches(blocks).startswith("- Trained from scratch: visible from relative depth")
    assert charts.reach_text({"depth": 2, "present": [0] * 5, "depth_interval": [1, None]}) == "0.50 [0.25, none]"
    assert set(charts.dense_colbert_endpoints()) == {"mxbai_end", "jina_end", "jina_peak", "jina_peak_layer"}
    few = prose.fewer_seeds(fake_records(SCRATCH), [0, 1, 2], 2, seed=0)
    assert list(few["seeds kept"].values()) == [2, 3] and all(w > 0 for w in few["width"].values())
    assert list(prose.fewer_seeds(fake_records(SCRATCH), [1, 2], 2, seed=0)["difference"].values())[0] == "—"


def test_each_table_of_the_chapter_reads_in_one_format():
    """Four decimals throughout: a tiny value reads 0.0000 beside its interval, never 1.64e-06 beside
    0.0004; a p-value that would round to zero reads "< 0.0001"."""
    from embedding_geometry.chapters.ch07_objective.charts import _interval, _p_text

    assert _interval(-1.639e-06, [-0.0004072, 0.0004493]) == "0.0000 [-0.0004, 0.0004]"
    assert _interval(0.007, [0.00024, 0.013]) == "0.0070 [0.0002, 0.0130]"
    assert [_p_text(p) for p in (2.75e-42, 0.0, 0.0078125, 0.0625)] == ["< 0.0001", "< 0.0001", "0.0078", "0.0625"]
    block = results.block(fake_records(SCRATCH), SCRATCH, resamples=100)
    table = charts.objective_convergence_table({"scratch": block})
    assert not table.astype(str).apply(lambda column: column.str.contains(r"\de-\d")).any().any()


def test_the_posts_curve_gets_its_own_scale_only_where_it_would_flatten_this_runs():
    """The post's B / W reaches 3.6; this run's at 0–0.3 gets a panel of its own for the post's curve,
    with one legend (the same colour and dash scales in every panel); at 0–3 they share one axis."""
    def blocks(top: float) -> dict:
        curve = np.linspace(0, top, 5)
        variants = ("before", "mean_pool", "maxsim")
        found = {"mean": {v: {"separability_ratio": curve} for v in variants},
                 "band": {v: {"separability_ratio": [curve - 0.01, curve + 0.01]} for v in variants}}
        return {"scratch": {"comparison": found}}

    apart = charts.objective_chart(blocks(0.3), "separability_ratio", "B / W").to_dict()
    *arms, post = apart["hconcat"]
    assert post["title"] == "the post, on its own scale" and len(arms) == 1
    def lines(panel: dict) -> list[dict]:  # the line layers of a panel, nested layers included
        return [line for layer in panel["layer"] for line in
                (lines(layer) if "layer" in layer else [layer] if layer["mark"]["type"] == "line" else [])]

    (ours,) = lines(arms[0])  # this run's curves only
    colour = post["encoding"]["color"]["scale"]
    assert ours["encoding"]["color"]["scale"] == colour
    assert colour["range"][:3] == ["#9a9a9a", "#1f5fa8", "#d2691e"]  # each variant's line the colour of its band
    together = charts.objective_chart(blocks(3.0), "separability_ratio", "B / W").to_dict()
    assert len(together["hconcat"]) == 1 and len(lines(together["hconcat"][0])) == 2


def test_the_hard_negative_comparison_is_charted_and_a_text_excluded_copy_says_why():
    block = results.block(fake_records(FINETUNE, levelled=lambda v, s: (v, s) != ("mean_pool_hard", 1)),
                                    FINETUNE, resamples=100)
    blocks = {"finetune": block}
    assert block["hard_negatives"]["pair"] == ["mean_pool_hard", "mean_pool"] and block["kept"] == [0, 2]
    assert charts.objective_chart(blocks, "hard_margin", "m", comparison="hard_negatives").to_dict()
    final = charts.objective_final_table(blocks, {"hard_margin": "hard margin"}, comparison="hard_negatives")
    assert [c[1] for c in final.columns] == ["before training", "mean-pool loss + hard negatives", "mean-pool loss"]
    text = prose.convergence(blocks)
    assert "mean-pool loss + hard negatives, seed 1: its loss had not levelled off" in text
    assert len(charts.objective_settled_table(blocks)) == 2
    assert any("hard negatives" in name for name in charts.objective_cone_table(block).index)


def test_the_budget_sentence_reads_the_recorded_seconds():
    blocks = {"scratch": {"cpu_seconds": {"before": {"seed_0": 1.0}, "maxsim": {"seed_0": 10.25}}},
              "finetune": {"cpu_seconds": {"mean_pool": {"seed_0": 30.0, "seed_1": 31.0}}}}
    document = {"environment": {"seconds": 241.6, "device": "cpu"}, "params": {"workers": 2},
                "metrics": {"objectives": blocks}}
    assert prose.budget(document) == (
        "This build ran the chapter in 242 s on cpu (from opening the chapter to writing its results): 81 % of the "
        "300 s budget of the default build's chapter, within it. Training and measuring its 4 copies and starts "
        "took 72 CPU-seconds in all, in 2 worker processes of one thread each.\n")
    document["environment"]["seconds"] = 301
    assert "100 % of the 300 s budget of the default build's chapter, over it" in prose.budget(document)


def test_the_fine_tuning_geometry_is_flagged_when_retrieval_is_not_matched():
    """The flag is written from the matched-retrieval check's verdict, and follows the fine-tuning
    arm's geometry claims only."""
    ledger = claims.load(SLUG)
    ids = ["finetune-retrieval-matched", "loss-decides-collapse", "loss-decides-collapse-scratch"]
    chosen = claims.Ledger(SLUG, [c for c in ledger.claims if c.id in ids])

    def verdicts(recall_gap, **fake):
        block = results.block(fake_records(FINETUNE, seeds=(0, 1, 2, 3, 4), **fake), FINETUNE,
                                        resamples=500)
        match = block["judged"]["retrieval_match"]
        match.update(value=recall_gap, draws=match["draws"] * 0 + recall_gap
                     + np.random.default_rng(0).normal(0, 0.01, len(match["draws"])))
        scratch = results.block(fake_records(SCRATCH, seeds=(0, 1, 2, 3, 4)), SCRATCH, resamples=500)
        return claims.evaluate(chosen, {"objectives": {"finetune": block, "scratch": scratch}}, "tiny", resamples=100,
                               family=1)  # 500 draws cannot resolve the book's q / m

    matched, unmatched = verdicts(0.0), verdicts(0.4)
    assert prose.flag(matched) == "" and prose.report(matched, ["loss-decides-collapse"]).count(
        "Flagged") == 0
    flag = prose.flag(unmatched)
    assert flag.startswith("**Flagged:** the check that the two fine-tuned copies retrieve equally well did not "
                           "pass (its verdict: does not hold; in [-0.1, 0.1]: 0.4")
    assert "Flagged" in prose.report(unmatched, ["loss-decides-collapse"])
    assert "Flagged" not in prose.report(unmatched, ["loss-decides-collapse-scratch"])
    assert "Flagged" in prose.answers(unmatched, {"finetune": {"not_measured": None}})
    untaught = verdicts(0.4, before_hits=np.ones)  # the geometry claim is not tested: nothing to flag
    assert prose.flag(untaught) and "Flagged" not in prose.report(untaught, ["loss-decides-collapse"])


# --------------------------------------------------------------------------- the chapter end to end (slow)

@pytest.mark.slow
def test_results_record_every_copy_its_loss_retrieval_and_the_seed_intervals(built_book):
    from test_layer_by_layer import chapter_results

    built = chapter_results(built_book, SLUG)
    params, m = built["params"], built["metrics"]["objectives"]
    for arm, n_seeds, steps in (("scratch", params["scratch_seeds"], params["scratch_steps"]),
                                ("finetune", params["finetune_seeds"], params["finetune_steps"])):
        block = m[arm]
        assert len(block["seeds"]) == n_seeds and set(block["kept"]) <= set(block["seeds"])
        assert block["variants"] == list(training.OBJECTIVES) + (["mean_pool_hard"] if arm == "finetune" else [])
        for variant in block["variants"]:
            for seed in block["seeds"]:
                loss = block["loss"][variant][f"seed_{seed}"]
                assert len(loss["losses"]) == steps and loss["levelled"] == training.levelled(loss["losses"])
                found = block["retrieval"][variant][str(seed)]
                assert found["beats_chance"] == (found["p_value"] < 0.05) and found["chance"] == block["chance"]
                usable = found["beats_chance"] and loss["levelled"]["levelled"]
                assert usable or seed not in block["kept"]  # no statistic rests on an excluded copy
        for name in ("comparison", "hard_negatives"):
            if block.get(name):
                seeds = block[name]["seeds"]
                assert seeds == block["kept"]
                depths = len(block[name]["difference"][results.MAIN[name]])
                band = np.asarray(block[name]["band"][block[name]["pair"][0]][results.MAIN[name]])
                assert band.shape == (2, depths) and np.all(band[0] <= band[1])
                settled = block[name]["settled"]
                assert settled["settled"] == (settled["interval"][0] <= settled["three_quarters"]
                                              <= settled["interval"][1])
                assert len(settled["per_seed_three_quarters"]) == len(seeds)
    verdicts = {c["id"]: c for c in built["claims"]}
    assert verdicts["loss-decides-collapse-scratch"]["unit"] == "seeds"
    # the tiny run keeps 2 seeds: fewer than 5 units is no test (the default build trains 8)
    assert all(c["interval"] is not None or c["status"] in ("not measured", "descriptive") and c["reason"]
               for c in verdicts.values())
    assert verdicts["hard-negatives-necessary"]["home"] is None and len(built["inputs"]["finetune_hard_negatives"]) \
        == m["finetune"]["n_train"]
    assert built["environment"]["seconds"] > 0
