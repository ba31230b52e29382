"""Tiny, randomly initialised local models for tests: other depths and widths than MiniLM, and
one of each architecture family the book supports (``tiny_family``).

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
    from transformers import BertConfig, BertModel

    tokenizer = _wordpiece()
    torch.manual_seed(seed)
    model = BertModel(BertConfig(vocab_size=tokenizer.vocab_size, **TINY_BERT))
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    if sentence_transformers:
        _sentence_transformers_config(directory, TINY_BERT["hidden_size"])
    return directory


def _byte_level_bpe(specials: list[str], every_byte: bool = False):
    """A 300-piece byte-level BPE (GPT-2/RoBERTa/Qwen style) trained on ``TRAINING_TEXT``; with
    ``every_byte`` its alphabet holds all 256 bytes, so that no text has unknown pieces."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    bpe = Tokenizer(models.BPE(unk_token="<unk>" if "<unk>" in specials else None))
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True)
    bpe.decoder = decoders.ByteLevel()
    alphabet = pre_tokenizers.ByteLevel.alphabet() if every_byte else []
    trainer = trainers.BpeTrainer(vocab_size=300, special_tokens=specials, initial_alphabet=alphabet)
    bpe.train_from_iterator(TRAINING_TEXT * 5, trainer)
    return bpe


def tiny_xlm_roberta(directory: Path, seed: int = 0) -> Path:
    """A 2-block, 48-wide XLM-RoBERTa with a small byte-level BPE tokenizer trained here."""
    from tokenizers import processors
    from transformers import PreTrainedTokenizerFast, XLMRobertaConfig, XLMRobertaModel

    bpe = _byte_level_bpe(["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
    bpe.post_processor = processors.RobertaProcessing(("</s>", bpe.token_to_id("</s>")),
                                                      ("<s>", bpe.token_to_id("<s>")))
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=bpe, bos_token="<s>", eos_token="</s>", sep_token="</s>",
                                        cls_token="<s>", pad_token="<pad>", unk_token="<unk>", mask_token="<mask>")
    torch.manual_seed(seed)
    config = XLMRobertaConfig(vocab_size=bpe.get_vocab_size(), pad_token_id=1, bos_token_id=0, eos_token_id=2,
                              **TINY_XLMR)
    XLMRobertaModel(config).save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


# --------------------------------------------------------------------------- one model per family

SMALL = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
             max_position_embeddings=160)
DECODER = dict(SMALL, num_key_value_heads=2)  # grouped-query attention: 2 key/value heads for 4 heads
FAMILY_CONFIGS = {
    # name: (transformers config class, its arguments, tokenizer: "wordpiece" or where a BPE adds tokens)
    "bert": ("BertConfig", SMALL, "wordpiece"),
    "xlm-roberta": None,  # tiny_xlm_roberta
    "mpnet": ("MPNetConfig", SMALL, "wordpiece"),
    "distilbert": ("DistilBertConfig", dict(dim=32, n_layers=2, n_heads=4, hidden_dim=64,
                                            max_position_embeddings=160), "wordpiece"),
    "modernbert": ("ModernBertConfig", dict(SMALL, local_attention=8, global_attn_every_n_layers=2), "wordpiece"),
    "qwen2": ("Qwen2Config", DECODER, "none"),  # Qwen2: the tokenizer adds no token
    # Qwen3-Embedding appends <|endoftext|>; d_head ≠ D / H
    "qwen3": ("Qwen3Config", dict(DECODER, head_dim=12), "eos"),
    "llama": ("LlamaConfig", DECODER, "bos"),  # Llama: <s> first
    "mistral": ("MistralConfig", DECODER, "bos"),
}


def tiny_family(name: str, directory: Path, seed: int = 0) -> Path:
    """A 2-block, random model of the family ``name`` (a key of ``FAMILY_CONFIGS``) with a fast
    tokenizer: MiniLM's WordPiece for encoders, a byte-level BPE for decoders."""
    import transformers

    if name == "xlm-roberta":
        return tiny_xlm_roberta(directory, seed)
    config_class, arguments, tokens = FAMILY_CONFIGS[name]
    tokenizer = _wordpiece() if tokens == "wordpiece" else _decoder_tokenizer(tokens)
    ids = {key: getattr(tokenizer, key) for key in ("pad_token_id", "bos_token_id", "eos_token_id",
                                                     "cls_token_id", "sep_token_id")}
    ids = {key: value for key, value in ids.items() if value is not None}
    if name == "mpnet":
        ids["pad_token_id"] = 1  # MPNet's position ids count from its fixed padding index 1
    torch.manual_seed(seed)
    config = getattr(transformers, config_class)(vocab_size=len(tokenizer), **ids, **arguments)
    transformers.AutoModel.from_config(config).save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


def _wordpiece():
    from transformers import AutoTokenizer

    from embedding_geometry.core import registry

    return AutoTokenizer.from_pretrained(str(registry.directory(registry.REGISTRY["minilm"])))


def _decoder_tokenizer(adds: str):
    """A decoder's byte-level BPE with its end-of-text token as padding; ``adds``: "none", "bos"
    (<s> before the text) or "eos" (<|endoftext|> after it)."""
    from tokenizers import processors
    from transformers import PreTrainedTokenizerFast

    bpe = _byte_level_bpe(["<|endoftext|>", "<s>"], every_byte=True)
    if adds != "none":
        token = "<s>" if adds == "bos" else "<|endoftext|>"
        template = f"{token} $A" if adds == "bos" else f"$A {token}"
        bpe.post_processor = processors.TemplateProcessing(single=template,
                                                           special_tokens=[(token, bpe.token_to_id(token))])
    pad = None if adds == "bos" else "<|endoftext|>"  # Llama-style tokenizers have no padding token
    return PreTrainedTokenizerFast(tokenizer_object=bpe, bos_token="<s>", eos_token="<|endoftext|>", pad_token=pad)


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
