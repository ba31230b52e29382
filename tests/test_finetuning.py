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
    table = finetuning.summary_table({"as written": as_written, "no warm-up": one_step})
    assert list(table.columns) == ["as written", "no warm-up"] and "cos(0.1 pair) after" in table.index
