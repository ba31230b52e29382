"""The article's fine-tuning fix, replayed on the tiny model."""

from embedding_geometry.studies import finetuning


def test_mnrl_ignores_the_labels(tiny_bert_dir):
    result = finetuning.mnrl_label_effect(str(tiny_bert_dir), "cpu")
    assert result["difference"] == 0.0
    assert result["loss_labels_as_written"] > 0


def test_the_articles_training_code_moves_no_weight_and_one_real_step_does(tiny_bert_dir):
    as_written = finetuning.article_finetune(str(tiny_bert_dir), "cpu")
    assert as_written["optimizer_steps"] == 1 and as_written["warmup_steps"] == 100
    assert as_written["max_weight_change"] == 0.0
    assert as_written["pair_cosine_before"] == as_written["pair_cosine_after"]
    one_step = finetuning.article_finetune(str(tiny_bert_dir), "cpu", warmup_steps=0)
    assert one_step["max_weight_change"] > 0


def test_finetune_study_and_its_table(tiny_bert_dir):
    found = finetuning.finetune_study(str(tiny_bert_dir), "cpu", seed=0, n_seeds=2)
    study, per_unit = found["finetune"], found["per_unit"]
    assert set(study) == set(finetuning.NOT_RUN["finetune"]) == {"article", "no_warmup", "mnrl", "negative_pair_change",
                                                                 "seeds"}
    assert study["article"]["max_weight_change"] == 0.0 and study["no_warmup"]["max_weight_change"] > 0
    before, after = study["no_warmup"]["pair_cosine_before"][1], study["no_warmup"]["pair_cosine_after"][1]
    assert study["negative_pair_change"] == after - before and study["mnrl"]["difference"] == 0.0
    assert study["seeds"]["seeds"] == [0, 1]
    assert per_unit["finetune.seeds.max_weight_change"].tolist() == [0.0, 0.0]  # learning rate 0 on every seed
    pulled = per_unit["finetune.seeds.negative_pair_change"]
    assert pulled[0] == study["negative_pair_change"] and pulled.mean() == study["seeds"]["negative_pair_change"]
    table = finetuning.summary_table(study)
    assert list(table.columns) == ["as written", "no warm-up"] and "cos(0.1 pair) after" in table.index
