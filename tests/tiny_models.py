"""Tiny, randomly initialised local models for tests: other depths and widths than MiniLM.

Each builder saves a model directory (config, weights, fast tokenizer) the way a downloaded
model looks on disk, so tests exercise the same loading code as real models.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

TINY_BERT = dict(hidden_size=40, num_hidden_layers=3, num_attention_heads=4, intermediate_size=64,
                 max_position_embeddings=160)
TINY_XLMR = dict(hidden_size=48, num_hidden_layers=2, num_attention_heads=3, intermediate_size=64,
                 max_position_embeddings=162)
TRAINING_TEXT = [
    "The quick brown fox jumps over the lazy dog",
    "Its rival acquired the tech giant",
    "The stock market surged after the central bank cut interest rates",
    "Retrieval augmented generation improves factual accuracy in language models",
]


def tiny_bert(directory: Path, sentence_transformers: bool = True, seed: int = 0) -> Path:
    """A 3-block, 40-wide BERT with the embedded model's WordPiece tokenizer; with
    ``sentence_transformers`` it is saved as a mean-pooling sentence-transformers model."""
    from transformers import AutoTokenizer, BertConfig, BertModel

    from embedding_geometry.core.models import embedded_model_path

    tokenizer = AutoTokenizer.from_pretrained(str(embedded_model_path()))
    torch.manual_seed(seed)
    model = BertModel(BertConfig(vocab_size=tokenizer.vocab_size, **TINY_BERT))
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    if sentence_transformers:
        _sentence_transformers_config(directory, TINY_BERT["hidden_size"])
    return directory


def tiny_xlm_roberta(directory: Path, seed: int = 0) -> Path:
    """A 2-block, 48-wide XLM-RoBERTa with a small byte-level BPE tokenizer trained here."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast, XLMRobertaConfig, XLMRobertaModel

    specials = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
    bpe = Tokenizer(models.BPE(unk_token="<unk>"))
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True)
    bpe.decoder = decoders.ByteLevel()
    bpe.train_from_iterator(TRAINING_TEXT * 5, trainers.BpeTrainer(vocab_size=300, special_tokens=specials))
    bpe.post_processor = processors.RobertaProcessing(("</s>", bpe.token_to_id("</s>")), ("<s>", bpe.token_to_id("<s>")))
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=bpe, bos_token="<s>", eos_token="</s>", sep_token="</s>",
                                        cls_token="<s>", pad_token="<pad>", unk_token="<unk>", mask_token="<mask>")
    torch.manual_seed(seed)
    config = XLMRobertaConfig(vocab_size=bpe.get_vocab_size(), pad_token_id=1, bos_token_id=0, eos_token_id=2, **TINY_XLMR)
    XLMRobertaModel(config).save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


def needs_remote_code(directory: Path) -> Path:
    """A copy of a tiny BERT whose config asks for custom modelling code (``auto_map``)."""
    tiny_bert(directory, sentence_transformers=False)
    config_path = directory / "config.json"
    config = json.loads(config_path.read_text())
    config["auto_map"] = {"AutoModel": "modeling_custom.CustomModel"}
    config_path.write_text(json.dumps(config))
    (directory / "modeling_custom.py").write_text("raise RuntimeError('custom code ran')\n")
    return directory


def _sentence_transformers_config(directory: Path, width: int) -> None:
    """The files sentence-transformers reads: modules.json and a mean Pooling module."""
    modules = [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
    ]
    (directory / "modules.json").write_text(json.dumps(modules))
    (directory / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 128, "do_lower_case": False}))
    (directory / "1_Pooling").mkdir(exist_ok=True)
    (directory / "1_Pooling" / "config.json").write_text(json.dumps({
        "word_embedding_dimension": width, "pooling_mode_cls_token": False,
        "pooling_mode_mean_tokens": True, "pooling_mode_max_tokens": False,
        "pooling_mode_mean_sqrt_len_tokens": False}))
