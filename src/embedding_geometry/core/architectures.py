"""Where to capture what, in each architecture family the book supports: one table.

Every family is read through the same names (see :mod:`.activations`): ``hidden_states`` give
L + 1 depths (depth 0 the embedding output, depth l + 1 the output of block l), the attention
maps come from ``output_attentions`` under eager attention, and the heads' outputs are the
*input* of each block's attention output projection, the ``[B, T, H · d_head]`` concatenation
of softmax(QKᵀ/√d_head + mask) V over the H heads, captured by a forward pre-hook.

For each family the table gives:

    blocks       dotted path from the base model to its list of L blocks
    head_out     dotted path from a block to its attention output projection
    attention_norm
                 dotted path from a block to the LayerNorm that closes its attention sublayer,
                 a_l = LN₁(h + O(heads)), in a post-norm block; None for pre-norm families,
                 where the stream between the sublayers is no norm's output
    causal       whether a token attends only to itself and earlier tokens
    cls          whether the first token is a summary token ([CLS], <s>) that metrics may read
    sep          whether the last token is a separator ([SEP], </s>) that metrics may read
    pooling      the sentence-transformers pooling these models are trained with, used when a
                 model directory has no pooling configuration
    final_norm   whether depth L is block L − 1's output *after* the model's final norm
                 (pre-norm models: depths 1 … L − 1 are then the raw residual stream)
    positions_after_padding
                 whether position ids start after the padding index (RoBERTa, MPNet), which
                 costs pad_token_id + 1 positions of the position table
"""

from __future__ import annotations

import operator
from dataclasses import dataclass

import torch

from .errors import NotApplicableError, ParameterError


@dataclass(frozen=True)
class Family:
    """One row of the capture table (see the module docstring)."""

    name: str
    model_types: tuple[str, ...]
    blocks: str
    head_out: str
    attention_norm: str | None = None
    causal: bool = False
    cls: bool = True
    sep: bool = True
    pooling: str = "mean"
    final_norm: bool = False
    positions_after_padding: bool = False

    def blocks_of(self, model: torch.nn.Module) -> list[torch.nn.Module]:
        """The model's L blocks, in order."""
        return list(self._find(model, self.blocks))

    def head_out_of(self, block: torch.nn.Module) -> torch.nn.Module:
        """The block's attention output projection: its input is the heads' concatenated outputs."""
        return self._find(block, self.head_out)

    def attention_norm_of(self, block: torch.nn.Module) -> torch.nn.Module:
        """The block's norm that closes its attention sublayer (post-norm families); a pre-norm
        family: one-line :class:`NotApplicableError`."""
        if self.attention_norm is None:
            raise NotApplicableError("the stream between a block's attention and feed-forward sublayers", self.name,
                                     "post-norm blocks whose attention sublayer ends in a LayerNorm")
        return self._find(block, self.attention_norm)

    def _find(self, module: torch.nn.Module, path: str):
        try:
            return operator.attrgetter(path)(module)
        except AttributeError:  # custom modelling code that declares a known model_type
            raise ParameterError("model", f"a {self.name} model with the standard module '{path}'",
                                 type(module).__name__) from None


FAMILIES: tuple[Family, ...] = (
    Family("BERT", ("bert",), "encoder.layer", "attention.output.dense", "attention.output.LayerNorm"),
    Family("RoBERTa/XLM-R", ("roberta", "xlm-roberta"), "encoder.layer", "attention.output.dense",
           "attention.output.LayerNorm", positions_after_padding=True),
    Family("MPNet", ("mpnet",), "encoder.layer", "attention.attn.o", "attention.LayerNorm",
           positions_after_padding=True),
    Family("DistilBERT", ("distilbert",), "transformer.layer", "attention.out_lin", "sa_layer_norm"),
    Family("ModernBERT", ("modernbert",), "layers", "attn.Wo", final_norm=True),
    Family("decoder (Qwen2/Qwen3/Llama/Mistral)", ("qwen2", "qwen3", "llama", "mistral"), "layers",
           "self_attn.o_proj", causal=True, cls=False, sep=False, pooling="lasttoken", final_norm=True),
)


def supported() -> str:
    """The supported families and their ``model_type`` values, for messages."""
    return "; ".join(f"{f.name} ({', '.join(f.model_types)})" for f in FAMILIES)


class SpecialTokens:
    """For records that carry ``family``, ``has_cls`` and ``has_sep`` (a model's description,
    its activations): a guard for measurements that read [CLS] or [SEP]."""

    family: str
    has_cls: bool
    has_sep: bool

    def require(self, token: str, what: str) -> None:
        """Raise one-line :class:`NotApplicableError` when ``what`` needs a ``token`` ("[CLS]" or
        "[SEP]") that this architecture does not have."""
        if not (self.has_cls if token == "[CLS]" else self.has_sep):
            raise NotApplicableError(what, self.family, f"{token} token")


def find(model_type: str | None) -> Family | None:
    """The family whose table row lists ``model_type``, or None."""
    return next((family for family in FAMILIES if model_type in family.model_types), None)


def family_of(model) -> Family:
    """The family of a model, of its config, or of a ``model_type`` string. An architecture
    outside the table is a one-line :class:`ParameterError` naming the supported ones."""
    config = getattr(model, "config", model)
    model_type = model if isinstance(model, str) or model is None else getattr(config, "model_type", None)
    if (family := find(model_type)) is None:
        raise ParameterError("model", f"an encoder of a supported architecture: {supported()}",
                             model_type or "a config without a model_type")
    return family
