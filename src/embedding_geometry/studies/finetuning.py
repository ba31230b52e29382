"""The article's "Fix 2: contrastive fine-tuning", run as written, and what its loss sees.

The article trains on two labelled pairs,

    ("DataForce quarterly report", "DataForce Q3 earnings")  label 0.9
    ("DataForce analysis", "Data Force military")            label 0.1

with ``MultipleNegativesRankingLoss`` (MNRL), ``batch_size=16``, ``epochs=1``,
``warmup_steps=100``. For a batch of B pairs (a_i, p_i) MNRL is the cross-entropy of picking p_i
among all p_j for a_i,

    L = −(1/B) Σ_i log softmax_j (s · cos(a_i, p_j))_i,      s = 20,

so the labels never enter it: every pair counts as a positive, the "0.1" pair included. With
linear warm-up the learning rate of optimizer step t (0-based) is lr · t / warmup_steps; two
examples in batches of 16 make one step, t = 0, at learning rate 0, so no weight moves.

``article_finetune`` replays that code on a copy of a model and reports how far its weights moved;
``mnrl_label_effect`` computes the loss with the labels as written and swapped. Both run through
sentence-transformers (its training loop needs a forward pass with gradients, which the book's
extraction, under ``torch.inference_mode``, never makes).

Training draws its dropout masks and batch order from the seed, so each run is one draw: the
study repeats both runs with SEEDS seeds (seed, seed + 1, …), the sampling unit of its claims.

Metrics: ``finetune_study`` → {finetune, per_unit}: finetune {article: ``article_finetune`` as
written {max_weight_change, pair_cosine_before [2], pair_cosine_after [2], optimizer_steps,
warmup_steps}, no_warmup: the same with warmup_steps = 0, mnrl: ``mnrl_label_effect``
{loss_labels_as_written, loss_labels_swapped, difference}, negative_pair_change: how one step
without warm-up moves cos of the pair labelled 0.1 (after − before), seeds {seeds,
max_weight_change, negative_pair_change: the means over the seeds}}; per_unit
"finetune.seeds.max_weight_change" and "finetune.seeds.negative_pair_change" [SEEDS], one value
a seed (the first is ``article`` / ``no_warmup``'s). ``NOT_RUN`` (None values) when it is
switched off.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..core import clock

ARTICLE_PAIRS = (
    ("DataForce quarterly report", "DataForce Q3 earnings", 0.9),
    ("DataForce analysis", "Data Force military", 0.1),
)
"""The article's training examples: (text a, text b, label)."""
ARTICLE_SETTINGS = {"batch_size": 16, "epochs": 1, "warmup_steps": 100}
SEEDS = 5
"""Training runs of each setting, one a seed."""


def _sentence_model(model: str, device: str):
    """A fresh sentence-transformers copy of ``model`` (the embedded id, a local directory or a hub id)."""
    from sentence_transformers import SentenceTransformer

    from ..core.models import locate

    directory, _ = locate(model)
    return SentenceTransformer(str(directory) if directory is not None else model, device=device)


def _examples(pairs: Sequence[tuple[str, str, float]]):
    from sentence_transformers.sentence_transformer.readers import InputExample

    return [InputExample(texts=[a, b], label=float(label)) for a, b, label in pairs]


def article_finetune(model: str, device: str = "cpu", pairs: Sequence[tuple[str, str, float]] = ARTICLE_PAIRS,
                     seed: int = 0, **settings) -> dict[str, float]:
    """Run the article's training code on a fresh copy of ``model`` and measure the change: max
    |Δw| over every weight, and cos(a, b) of each pair before and after. ``settings`` override
    batch_size, epochs and warmup_steps.

    sentence-transformers ≥ 3 runs ``fit`` through the Hugging Face Trainer, which needs the
    ``accelerate`` package; the book does not install it, so this calls ``old_fit``, the
    library's pre-3.0 training loop that the article's code was written for."""
    import torch
    from sentence_transformers.sentence_transformer import losses
    from torch.utils.data import DataLoader

    options = {**ARTICLE_SETTINGS, **settings}
    torch.manual_seed(seed)
    encoder = _sentence_model(model, device)
    texts = [t for a, b, _ in pairs for t in (a, b)]
    before_vectors = encoder.encode(texts, convert_to_numpy=True, show_progress_bar=False)
    before = {name: tensor.detach().clone() for name, tensor in encoder.state_dict().items()}
    loader = DataLoader(_examples(pairs), shuffle=True, batch_size=options["batch_size"])
    loss = losses.MultipleNegativesRankingLoss(encoder)
    with clock.model_call():  # training steps: the model's forward and backward passes
        encoder.old_fit(train_objectives=[(loader, loss)], epochs=options["epochs"],
                        warmup_steps=options["warmup_steps"], show_progress_bar=False)
    after_vectors = encoder.encode(texts, convert_to_numpy=True, show_progress_bar=False)
    change = max(float((encoder.state_dict()[name] - tensor).abs().max()) for name, tensor in before.items())
    return {"max_weight_change": change,
            "pair_cosine_before": _pair_cosines(before_vectors), "pair_cosine_after": _pair_cosines(after_vectors),
            "optimizer_steps": int(np.ceil(len(pairs) / options["batch_size"])) * options["epochs"],
            "warmup_steps": options["warmup_steps"]}


def mnrl_label_effect(model: str, device: str = "cpu",
                      pairs: Sequence[tuple[str, str, float]] = ARTICLE_PAIRS) -> dict[str, float]:
    """MNRL on one batch of ``pairs`` with their labels as written and with the labels swapped
    end to end; the difference is 0 when the loss ignores the labels."""
    import torch
    from sentence_transformers.sentence_transformer import losses

    encoder = _sentence_model(model, device)
    loss = losses.MultipleNegativesRankingLoss(encoder)
    columns = [encoder.preprocess([a for a, _, _ in pairs]), encoder.preprocess([b for _, b, _ in pairs])]
    features = [{k: v.to(encoder.device) if isinstance(v, torch.Tensor) else v for k, v in f.items()}
                for f in columns]
    labels = torch.tensor([label for _, _, label in pairs], dtype=torch.float32)
    encoder.eval()
    with torch.inference_mode():
        written = float(loss(features, labels))
        swapped = float(loss(features, labels.flip(0)))
    return {"loss_labels_as_written": written, "loss_labels_swapped": swapped,
            "difference": abs(written - swapped)}


def _pair_cosines(vectors: np.ndarray) -> list[float]:
    """cos(text a, text b) of each pair, from vectors laid out a_0, b_0, a_1, b_1, …"""
    from ..core.geometry import pair_cosine

    return pair_cosine(vectors[0::2], vectors[1::2]).tolist()


NOT_RUN = {"finetune": {"article": {"max_weight_change": None}, "no_warmup": None,
                        "mnrl": {"loss_labels_as_written": None, "loss_labels_swapped": None, "difference": None},
                        "negative_pair_change": None,
                        "seeds": {"seeds": None, "max_weight_change": None, "negative_pair_change": None}}}
"""What ``finetune_study`` gives when the chapter does not run the training code."""


def finetune_study(model: str, device: str = "cpu", seed: int = 0, n_seeds: int = SEEDS) -> dict[str, dict]:
    """{finetune, per_unit} (see the module docstring): the article's code as written and without
    warm-up, each on a fresh copy of ``model`` with ``n_seeds`` seeds from ``seed``, and MNRL with
    the labels as written and swapped."""
    runs = [(article_finetune(model, device, seed=s), article_finetune(model, device, seed=s, warmup_steps=0))
            for s in range(seed, seed + n_seeds)]
    moved = np.array([as_written["max_weight_change"] for as_written, _ in runs])
    pulled = np.array([run["pair_cosine_after"][1] - run["pair_cosine_before"][1] for _, run in runs])
    as_written, no_warmup = runs[0]
    return {"finetune": {"article": as_written, "no_warmup": no_warmup, "mnrl": mnrl_label_effect(model, device),
                         "negative_pair_change": float(pulled[0]),
                         "seeds": {"seeds": list(range(seed, seed + n_seeds)), "max_weight_change": float(moved.mean()),
                                   "negative_pair_change": float(pulled.mean())}},
            "per_unit": {"finetune.seeds.max_weight_change": moved, "finetune.seeds.negative_pair_change": pulled}}


def summary_table(finetune: dict[str, dict | None]) -> "pd.DataFrame":
    """One column per ``article_finetune`` run of a ``finetune_study`` (as written, no warm-up):
    max |Δw| and cos(a, b) of each of the article's pairs before and after."""
    import pandas as pd

    rows = {}
    runs = {"as written": finetune["article"], "no warm-up": finetune["no_warmup"]}
    for name, run in runs.items():
        row = {"max |Δ weight|": run["max_weight_change"]}
        for i, (_, _, label) in enumerate(ARTICLE_PAIRS):
            row[f"cos({label} pair) before"] = run["pair_cosine_before"][i]
            row[f"cos({label} pair) after"] = run["pair_cosine_after"][i]
        rows[name] = row
    return pd.DataFrame(rows).round(4)
