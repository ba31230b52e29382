"""The article's "Fix 2: contrastive fine-tuning", run as written and with a learning rate that is not 0.

The article trains ``SentenceTransformer('all-mpnet-base-v2')`` on two labelled pairs,

    ("DataForce quarterly report", "DataForce Q3 earnings")  label 0.9
    ("DataForce analysis", "Data Force military")            label 0.1

with ``MultipleNegativesRankingLoss`` (MNRL), ``batch_size=16``, ``epochs=1``,
``warmup_steps=100``. For a batch of B pairs (a_i, p_i) MNRL is the cross-entropy of picking p_i
among all p_j for a_i,

    L = −(1/B) Σ_i log softmax_j (s · cos(a_i, p_j))_i,      s = 20,

so the labels never enter it: every pair counts as a positive, the "0.1" pair included. The
learning rate of optimizer step t (0-based) of E steps under sentence-transformers' WarmupLinear
schedule with peak lr (2e-5) and W warm-up steps is

    lr_t = lr · t / W                      for t < W
    lr_t = lr · (E − t) / (E − W)          after

so the article's two examples in batches of 16 make E = 1 step, t = 0, at learning rate 0: no
weight moves. The **working variant** is the same code with ``warmup_steps=0`` (its E steps, one
an epoch, run at lr · (E − t) / E: the first at the full 2e-5).

What a run measures, on the four texts it trains on (``PROBES``: the three DataForce texts and
"Data Force military"), before and after training: max |Δw| over every weight, cos(a, b) of each
pair, and the **consistency** of "DataForce", the mean pairwise cosine of its three texts (the
article's "DataForce has a consistent representation regardless of tokenization").

Training draws its dropout masks and batch order from the seed, so a run is one draw: the working
variant runs with ``n_seeds`` seeds (seed, seed + 1, …), the sampling unit of its claims; the
article's code as written runs once (at learning rate 0 every seed gives the same nothing). The
model is loaded once and its weights restored before each run. ``mnrl_label_effect`` computes the
loss with the labels as written and swapped. Everything runs through sentence-transformers (its
training loop needs a forward pass with gradients, which the book's extraction, under
``torch.inference_mode``, never makes).

Metrics: ``finetune_study`` → {finetune, per_unit}: finetune {model, article: the run as written
{max_weight_change, learning_rates [E], pair_cosine_before [2], pair_cosine_after [2],
consistency_before, consistency_after, optimizer_steps, warmup_steps}, working: the working
variant {seeds, epochs, learning_rates [E], max_weight_change, negative_pair_change (cos of the
0.1 pair after − before), positive_pair_change, consistency_change (after − before): the means over
the seeds; first: the first seed's run}, mnrl: ``mnrl_label_effect`` {loss_labels_as_written,
loss_labels_swapped, difference}}; per_unit "finetune.working.<max_weight_change |
negative_pair_change | positive_pair_change | consistency_change>" [seeds], one value a seed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from ...core import clock
from ...core.geometry import cosine_matrix
from ...core.models import locate

if TYPE_CHECKING:
    import pandas as pd

ARTICLE_PAIRS = (
    ("DataForce quarterly report", "DataForce Q3 earnings", 0.9),
    ("DataForce analysis", "Data Force military", 0.1),
)
"""The article's training examples: (text a, text b, label)."""
ARTICLE_SETTINGS = {"batch_size": 16, "epochs": 1, "warmup_steps": 100}
LEARNING_RATE = 2e-5
"""sentence-transformers' default peak learning rate (``optimizer_params={"lr": 2e-5}``)."""
SEEDS = 5
"""Training runs of the working variant, one a seed."""
PROBES = ("DataForce quarterly report", "DataForce Q3 earnings", "DataForce analysis", "Data Force military")
"""The texts each run is measured on: the three DataForce texts, then the literal "Data Force"."""


def _sentence_model(model: str, device: str):
    """A fresh sentence-transformers copy of ``model`` (the embedded id, a local directory or a hub id)."""
    from sentence_transformers import SentenceTransformer


    directory, _ = locate(model)
    return SentenceTransformer(str(directory) if directory is not None else model, device=device)


def _examples(pairs: Sequence[tuple[str, str, float]]):
    from sentence_transformers.sentence_transformer.readers import InputExample

    return [InputExample(texts=[a, b], label=float(label)) for a, b, label in pairs]


def learning_rates(steps: int, warmup_steps: int, lr: float = LEARNING_RATE) -> list[float]:
    """lr_t of each of ``steps`` optimizer steps under WarmupLinear (module docstring)."""
    return [
        lr * t / warmup_steps if t < warmup_steps else lr * (steps - t) / max(steps - warmup_steps, 1)
        for t in range(steps)
    ]


def _probe(encoder) -> dict[str, object]:
    """cos(a, b) of each article pair and the consistency of "DataForce" (module docstring)."""
    sims = cosine_matrix(encoder.encode(list(PROBES), convert_to_numpy=True, show_progress_bar=False))
    return {
        "pairs": [float(sims[0, 1]), float(sims[2, 3])],
        "consistency": float(np.mean([sims[0, 1], sims[0, 2], sims[1, 2]])),
    }


def train_once(
    encoder, initial: dict, pairs: Sequence[tuple[str, str, float]] = ARTICLE_PAIRS, seed: int = 0, **settings
) -> dict[str, object]:
    """Restore ``encoder``'s weights to ``initial``, run the article's training code on it
    (``settings`` override batch_size, epochs and warmup_steps) and measure the change: max |Δw|
    over every weight, the learning rate of each step, and the probes before and after.

    sentence-transformers ≥ 3 runs ``fit`` through the Hugging Face Trainer, which needs the
    ``accelerate`` package; the book does not install it, so this calls ``old_fit``, the
    library's pre-3.0 training loop that the article's code was written for."""
    import torch
    from sentence_transformers.sentence_transformer import losses
    from torch.utils.data import DataLoader

    options = {**ARTICLE_SETTINGS, **settings}
    encoder.load_state_dict(initial)
    torch.manual_seed(seed)
    before = _probe(encoder)
    loader = DataLoader(_examples(pairs), shuffle=True, batch_size=options["batch_size"])
    with clock.model_call():  # training steps: the model's forward and backward passes
        encoder.old_fit(
            train_objectives=[(loader, losses.MultipleNegativesRankingLoss(encoder))],
            epochs=options["epochs"],
            warmup_steps=options["warmup_steps"],
            show_progress_bar=False,
        )
    after = _probe(encoder)
    change = max(float((tensor - initial[name]).abs().max()) for name, tensor in encoder.state_dict().items())
    steps = int(np.ceil(len(pairs) / options["batch_size"])) * options["epochs"]
    return {
        "max_weight_change": change,
        "learning_rates": learning_rates(steps, options["warmup_steps"]),
        "pair_cosine_before": before["pairs"],
        "pair_cosine_after": after["pairs"],
        "consistency_before": before["consistency"],
        "consistency_after": after["consistency"],
        "optimizer_steps": steps,
        "warmup_steps": options["warmup_steps"],
    }


def _snapshot(encoder) -> dict:
    return {name: tensor.detach().clone() for name, tensor in encoder.state_dict().items()}


def mnrl_label_effect(
    model: str, device: str = "cpu", pairs: Sequence[tuple[str, str, float]] = ARTICLE_PAIRS, encoder=None
) -> dict[str, float]:
    """MNRL on one batch of ``pairs`` with their labels as written and with the labels swapped
    end to end; the difference is 0 when the loss ignores the labels. ``encoder``: an already
    loaded copy of ``model`` (else one is loaded)."""
    import torch
    from sentence_transformers.sentence_transformer import losses

    encoder = encoder or _sentence_model(model, device)
    loss = losses.MultipleNegativesRankingLoss(encoder)
    columns = [encoder.preprocess([a for a, _, _ in pairs]), encoder.preprocess([b for _, b, _ in pairs])]
    features = [{k: v.to(encoder.device) if isinstance(v, torch.Tensor) else v for k, v in f.items()} for f in columns]
    labels = torch.tensor([label for _, _, label in pairs], dtype=torch.float32)
    encoder.eval()
    with torch.inference_mode():
        written = float(loss(features, labels))
        swapped = float(loss(features, labels.flip(0)))
    return {"loss_labels_as_written": written, "loss_labels_swapped": swapped, "difference": abs(written - swapped)}


def changes(run: dict[str, object]) -> dict[str, float]:
    """What the working variant's claims read of one run: max |Δw| and, after − before, the cosine
    of the pair labelled 0.1 (``negative_pair_change``), of the pair labelled 0.9 and the
    consistency of DataForce."""
    return {
        "max_weight_change": run["max_weight_change"],
        "negative_pair_change": run["pair_cosine_after"][1] - run["pair_cosine_before"][1],
        "positive_pair_change": run["pair_cosine_after"][0] - run["pair_cosine_before"][0],
        "consistency_change": run["consistency_after"] - run["consistency_before"],
    }


def finetune_study(
    model: str, device: str = "cpu", seed: int = 0, n_seeds: int = SEEDS, epochs: int = 1
) -> dict[str, dict]:
    """{finetune, per_unit} (see the module docstring): the article's code as written, once, and
    the working variant (warm-up 0, ``epochs`` epochs) with ``n_seeds`` seeds from ``seed``, on
    one loaded copy of ``model`` whose weights each run restores; and MNRL with the labels as
    written and swapped."""
    encoder = _sentence_model(model, device)
    initial = _snapshot(encoder)
    as_written = train_once(encoder, initial, seed=seed)
    runs = [train_once(encoder, initial, seed=s, epochs=epochs, warmup_steps=0) for s in range(seed, seed + n_seeds)]
    encoder.load_state_dict(initial)
    each = [changes(run) for run in runs]
    values = {key: np.array([c[key] for c in each]) for key in each[0]}
    working = {
        "seeds": list(range(seed, seed + n_seeds)),
        "epochs": epochs,
        "learning_rates": runs[0]["learning_rates"],
        **{key: float(v.mean()) for key, v in values.items()},
        "first": runs[0],
    }
    return {
        "finetune": {
            "model": model,
            "article": as_written,
            "working": working,
            "mnrl": mnrl_label_effect(model, device, encoder=encoder),
        },
        "per_unit": {f"finetune.working.{key}": v for key, v in values.items()},
    }


NOT_RUN = {
    "finetune": {
        "model": None,
        "article": None,
        "mnrl": None,
        "working": {
            "seeds": None,
            "epochs": None,
            "learning_rates": None,
            "first": None,
            **{
                key: None
                for key in ("max_weight_change", "negative_pair_change", "positive_pair_change", "consistency_change")
            },
        },
    }
}
"""What ``finetune_study`` gives for a model the chapter does not fine-tune (its claims: not measured)."""


def facts(finetune: dict[str, object]) -> dict[str, object]:
    """The labelled numbers a chapter shows of a ``finetune_study``: the model, MNRL's loss with the
    labels as written and swapped, and the working variant's seeds and learning rates."""
    mnrl, working = finetune["mnrl"] or {}, finetune["working"]
    return {
        "fine-tuned model": finetune["model"] or "not run (finetune = False)",
        "loss, labels as written": mnrl.get("loss_labels_as_written"),
        "loss, labels swapped": mnrl.get("loss_labels_swapped"),
        "training seeds of the working variant": len(working["seeds"] or []),
        "its optimizer steps": len(working["learning_rates"] or []),
        "learning rate of its first step": (working["learning_rates"] or [None])[0],
    }


def summary_table(finetune: dict[str, dict]) -> pd.DataFrame:
    """The run as written and the working variant's first seed, side by side: the learning rate of
    the first step, max |Δ weight|, and each probe before and after (one "not run" row when the
    chapter did not fine-tune)."""
    import pandas as pd

    if finetune["article"] is None:
        return pd.DataFrame({"fine-tuning": ["not run (finetune = False)"]})

    runs = {
        "as written (warm-up 100)": finetune["article"],
        f"warm-up 0, {finetune['working']['epochs']} epoch(s), seed {finetune['working']['seeds'][0]}": finetune[
            "working"
        ]["first"],
    }
    rows = {}
    for name, run in runs.items():
        row = {"learning rate of step 1": run["learning_rates"][0], "max |Δ weight|": run["max_weight_change"]}
        for i, (_, _, label) in enumerate(ARTICLE_PAIRS):
            row[f"cos of the pair labelled {label}, before"] = run["pair_cosine_before"][i]
            row[f"cos of the pair labelled {label}, after"] = run["pair_cosine_after"][i]
        row["consistency of DataForce, before"] = run["consistency_before"]
        row["consistency of DataForce, after"] = run["consistency_after"]
        rows[name] = row
    return pd.DataFrame(rows)
