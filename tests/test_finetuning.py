"""The article's fine-tuning fix, replayed on the tiny model: as written, and with a learning rate that is not 0."""

import numpy as np
import pytest

from embedding_geometry.chapters.ch06_search import finetuning


def test_mnrl_ignores_the_labels(tiny_bert_dir):
    result = finetuning.mnrl_label_effect(str(tiny_bert_dir), "cpu")
    assert result["difference"] == 0.0
    assert result["loss_labels_as_written"] > 0


def test_the_learning_rate_of_each_step_under_linear_warm_up():
    assert finetuning.learning_rates(1, 100) == [0.0]  # the article: one step, warm-up 100
    assert finetuning.learning_rates(1, 0) == [2e-5]
    assert finetuning.learning_rates(4, 0) == pytest.approx([2e-5, 1.5e-5, 1e-5, 0.5e-5])
    assert finetuning.learning_rates(4, 2) == pytest.approx([0.0, 1e-5, 2e-5, 1e-5])


def test_the_articles_training_code_moves_no_weight_and_one_real_step_does(tiny_bert_dir):
    encoder = finetuning._sentence_model(str(tiny_bert_dir), "cpu")
    initial = finetuning._snapshot(encoder)
    as_written = finetuning.train_once(encoder, initial)
    assert as_written["optimizer_steps"] == 1 and as_written["warmup_steps"] == 100
    assert as_written["learning_rates"] == [0.0] and as_written["max_weight_change"] == 0.0
    assert as_written["pair_cosine_before"] == as_written["pair_cosine_after"]
    assert as_written["consistency_before"] == as_written["consistency_after"]
    one_step = finetuning.train_once(encoder, initial, warmup_steps=0)
    assert one_step["max_weight_change"] > 0 and one_step["learning_rates"] == [2e-5]


def test_each_run_starts_from_the_same_weights(tiny_bert_dir):
    encoder = finetuning._sentence_model(str(tiny_bert_dir), "cpu")
    initial = finetuning._snapshot(encoder)
    first = finetuning.train_once(encoder, initial, seed=3, warmup_steps=0)
    again = finetuning.train_once(encoder, initial, seed=3, warmup_steps=0)
    assert first["pair_cosine_before"] == again["pair_cosine_before"]  # the weights were restored
    assert first["pair_cosine_after"] == pytest.approx(again["pair_cosine_after"])  # and the seed fixes the run


def test_finetune_study_its_seeds_and_its_table(tiny_bert_dir):
    found = finetuning.finetune_study(str(tiny_bert_dir), "cpu", seed=0, n_seeds=2, epochs=2)
    study, per_unit = found["finetune"], found["per_unit"]
    assert set(study) == set(finetuning.NOT_RUN["finetune"]) == {"model", "article", "working", "mnrl"}
    assert study["article"]["max_weight_change"] == 0.0 and study["mnrl"]["difference"] == 0.0
    working = study["working"]
    assert working["seeds"] == [0, 1] and working["epochs"] == 2 and len(working["learning_rates"]) == 2
    first = working["first"]
    assert per_unit["finetune.working.negative_pair_change"][0] == pytest.approx(
        first["pair_cosine_after"][1] - first["pair_cosine_before"][1]
    )
    assert per_unit["finetune.working.consistency_change"][0] == pytest.approx(
        first["consistency_after"] - first["consistency_before"]
    )
    for key in ("max_weight_change", "negative_pair_change", "positive_pair_change", "consistency_change"):
        values = per_unit[f"finetune.working.{key}"]
        assert len(values) == 2 and np.mean(values) == pytest.approx(working[key])
    assert np.all(per_unit["finetune.working.max_weight_change"] > 0)
    table = finetuning.summary_table(study)
    assert list(table.columns)[0] == "as written (warm-up 100)" and "consistency of DataForce, after" in table.index
    facts = finetuning.facts(study)
    assert facts["training seeds of the working variant"] == 2 and facts["learning rate of its first step"] == 2e-5


def test_a_chapter_that_does_not_fine_tune_shows_so():
    assert finetuning.summary_table(finetuning.NOT_RUN["finetune"]).iloc[0, 0].startswith("not run")
    assert finetuning.facts(finetuning.NOT_RUN["finetune"])["fine-tuned model"].startswith("not run")
