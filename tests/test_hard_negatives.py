"""Chapter 7's hard-negative copy: the twins built in code (by hand on examples; none of them a
text the chapter trains on as a positive or measures), the loss with a negative beside every pair
(closed form, a missing negative masked), the pairing of the hard-negative copy with the in-batch
one, the snapshot that leaves the training untouched, and the hard set's margins and recall by hand."""

import math

import numpy as np
import pytest
import torch
from test_layer_by_layer import E1, E2, record
from test_objectives import SETTINGS, TINY_PAIRS

from embedding_geometry.core import corpora
from embedding_geometry.chapters.ch07_objective import hard_negatives, measures, training

# --------------------------------------------------------------------------- the twins


@pytest.mark.parametrize(("text", "expected"), [
    ("The train was packed.", "The train was not packed."),  # a negation: "not" after the first auxiliary
    ("Tipping is not expected in restaurants.", "Tipping is expected in restaurants."),  # … or taken away
    ("Open the vents so the plants do not overheat.", "Open the vents so the plants do overheat."),
    ("A boy kicks a ball against the garage door.", "A door kicks a ball against the garage boy."),  # a swap
    ("Photosynthesis converts light into glucose.", "Glucose converts light into photosynthesis."),  # the capital
    ("Columbus reached the Caribbean in 1492.", "Caribbean reached the columbus in 1492."),
    ("Hello there.", None),  # one content word, no auxiliary: no twin
    ("Dogs chase dogs.", None),  # the first and the last content word are one word
])
def test_a_twin_keeps_the_words_and_changes_the_meaning(text, expected):
    assert hard_negatives.twin(text) == expected
    if expected is not None:  # a swap keeps the words; a negation adds or drops "not"
        before, after = (sorted(w.strip(".").lower() for w in t.split()) for t in (text, expected))
        assert before == after or set(before) ^ set(after) == {"not"}


def test_every_training_positive_gets_a_twin_that_is_no_text_the_chapter_uses():
    train, held = training.split_pairs(training.training_pairs(), 64)
    twins = hard_negatives.negatives(train)
    assert twins == hard_negatives.negatives(train) and len(twins) == len(train)
    kinds = hard_negatives.kinds(train)
    assert sum(kinds.values()) == len(train) and kinds["none"] == twins.count(None) == 0
    assert kinds["negation"] > 0 and kinds["role swap"] > 0
    used = {t for pair in training.training_pairs() for t in pair} | {t for pair in held for t in pair}
    measured = measures.texts()
    used |= set(measured["sentences"]) | set(measured["hard_queries"]) | set(measured["hard_pool"])
    used |= {t for name in measures.PAIR_SETS for pair in measured[name] for t in pair}
    assert not set(twins) & used and all(t != d for t, (_, d) in zip(twins, train))


def test_the_hard_set_lays_out_each_document_with_its_two_twins():
    items = corpora.load_yaml("retrieval_hard.yaml")["items"]
    negation, reversal = hard_negatives.hard_set("negation"), hard_negatives.hard_set("role_reversal")
    assert negation["hard_queries"] == reversal["hard_queries"] == [item["query"] for item in items]
    assert negation["hard_pool"][:3] == [items[0]["relevant"], items[0]["negation"], items[0]["role_reversal"]]
    assert reversal["hard_pool"][:3] == [items[0]["relevant"], items[0]["role_reversal"], items[0]["negation"]]
    assert measures.texts(hard_twin="role_reversal")["hard_pool"] == reversal["hard_pool"]


# --------------------------------------------------------------------------- the loss with hard negatives

def test_info_nce_with_a_negative_beside_each_pair_in_closed_form():
    # B = 2: positives score 1, other documents 0, each query's own twin 0.5 and the other twin 0:
    # each row's loss is −log(e^{1/τ} / (e^{1/τ} + e^0 + e^{0.5/τ} + e^0))
    tau = 0.5
    scores = training.hard_negative_scores(torch.eye(2, dtype=torch.float64),
                                             0.5 * torch.eye(2, dtype=torch.float64), [True, True])
    assert scores.shape == (2, 4)
    expected = -math.log(math.exp(2) / (math.exp(2) + 2 + math.exp(1)))
    assert training.info_nce(scores, tau).item() == pytest.approx(expected)
    # a pair without a twin: its column is −∞ and drops out of every row's softmax
    masked = training.hard_negative_scores(torch.eye(2, dtype=torch.float64),
                                             0.5 * torch.ones(2, 1, dtype=torch.float64), [False, True])
    assert torch.isinf(masked[:, 2]).all()
    by_hand = -math.log(math.exp(2) / (math.exp(2) + 1 + math.exp(1)))
    assert training.info_nce(masked, tau).item() == pytest.approx(by_hand)


def test_the_hard_negative_copy_sees_its_in_batch_twins_batches_and_their_negatives(tiny_bert, encoded_batches):
    seen = encoded_batches
    twins = hard_negatives.negatives(TINY_PAIRS)
    plain, _ = training.train(tiny_bert, TINY_PAIRS, "mean_pool", SETTINGS, seed=2)
    in_batch, seen[:] = list(seen), []
    hard, losses = training.train(tiny_bert, TINY_PAIRS, "mean_pool", SETTINGS, seed=2, negatives=twins)
    assert seen[0::3] == in_batch[0::2] and seen[1::3] == in_batch[1::2]  # the same queries and positives
    batches = training.batches(TINY_PAIRS, SETTINGS.pairs_per_batch, SETTINGS.steps, 2)
    assert seen[2::3] == [tuple(twins[i] for i in batch if twins[i] is not None) for batch in batches]
    assert hard.info.sha256 != plain.info.sha256 and "mean_pool loss with hard negatives, seed 2" in hard.info.id
    assert len(losses) == SETTINGS.steps


def test_a_snapshot_sees_the_copy_mid_training_and_changes_nothing(tiny_bert):
    taken = []
    settings = training.Settings(steps=4, pairs_per_batch=4, learning_rate=1e-3, max_length=12)
    plain, losses = training.train(tiny_bert, TINY_PAIRS, "maxsim", settings, seed=1)
    watched, watched_losses = training.train(
        tiny_bert, TINY_PAIRS, "maxsim", settings, seed=1,
        snapshots={3: lambda copy: taken.append((copy.model.training, copy.info.id, copy.info.sha256))})
    assert watched_losses == losses and watched.info.sha256 == plain.info.sha256
    ((in_training, name, digest),) = taken
    assert not in_training and "3 steps" in name and digest != plain.info.sha256


# --------------------------------------------------------------------------- the hard set, measured

def test_hard_margins_and_recall_by_hand():
    # two queries and their pools (document, hard twin, other twin): one token each, at two depths
    q = record([[E1], [E1]], [[E2], [E2]])
    pool = record([[E1], [E1]], [[[1.0, 1.0]], [E2]], [[[1.0, 0.2]], [E1]],  # d1, t1, o1
                  [[E2], [[1.0, 1.0]]], [[E2], [E2]], [[E1], [E1]])  # d2, t2, o2
    curves, units = hard_negatives.hard_set_measures(q, pool)
    r, c = 1 / math.sqrt(2), 1 / math.sqrt(1.04)  # cos(e1, (1, 1)), cos(e1, (1, 0.2))
    # depth 0: q1 = e1 → d1 1, t1 r, o1 c; q2 = e2 → d2 1, t2 1, o2 0
    # depth 1: q1 = e1 → d1 1, t1 0, o1 1; q2 = e2 → d2 r, t2 1, o2 0
    np.testing.assert_allclose(units["hard_margin"], [[1 - r, 1.0], [0.0, r - 1]], atol=1e-7)
    np.testing.assert_allclose(units["other_twin_margin"], [[1 - c, 0.0], [1.0, r]], atol=1e-7)
    # recall@1 among d1, d2, t1, t2: q1 ranks d1 first at both depths; q2 ties d2 with t2 at depth 0
    # (a tie counts against the document) and ranks t2 first at depth 1
    np.testing.assert_allclose(units["hard_recall"], [[1.0, 1.0], [0.0, 0.0]])
    np.testing.assert_allclose(curves["hard_margin"], units["hard_margin"].mean(axis=0))
    with pytest.raises(ValueError, match="three texts per query"):
        hard_negatives.hard_set_measures(q, record([[E1], [E1]], [[E2], [E2]]))
