"""Chapter 7's charts and tables: both arms' copies on relative depth with 95 % bands over seeds
and sentences, the posts' curves in grey underneath, the per-seed differences against their
noise band, the loss of every copy, and the tables of convergence, settling, reach and checks.
A chart or table of a comparison reads the arm's ``comparison`` (the two losses) by default, or
its ``hard_negatives`` comparison (the hard-negative copy and the in-batch one)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import altair as alt
import numpy as np
import pandas as pd

from ...book.charts.depth import layer_chart
from ...book.charts.frames import per_layer_frame, published_frame
from ...book.charts.theme import published_encoding, published_label
from ...book.tables import number_text
from ...core import corpora
from . import results

__all__ = [
    "ARM_LABELS", "OBJECTIVE_LABELS", "dense_colbert_endpoints", "objective_answers_chart", "objective_chart",
    "objective_cone_table", "objective_convergence_table", "objective_difference_chart", "objective_final_table",
    "objective_gradient_chart", "objective_loss_chart", "objective_panel", "objective_per_seed_table",
    "objective_published", "objective_reach_table", "objective_settled_table", "reach_text"
]

OBJECTIVE_LABELS = {"before": "before training", "mean_pool": "mean-pool loss", "maxsim": "MaxSim loss",
                    "mean_pool_hard": "mean-pool loss + hard negatives"}
ARM_LABELS = {"scratch": "trained from scratch", "finetune": "fine-tuned from the backbone"}
PALETTE = {"before": "#9a9a9a", "mean_pool": "#1f5fa8", "maxsim": "#d2691e", "mean_pool_hard": "#2e8b57"}
LOSS_COLOURS = alt.Scale(domain=[OBJECTIVE_LABELS[v] for v in ("mean_pool", "maxsim", "mean_pool_hard")],
                         range=[PALETTE[v] for v in ("mean_pool", "maxsim", "mean_pool_hard")])
PANEL = 240  # px: two panels and their axes fit a 688 px column side by side; a phone stacks them
PUBLISHED_CURVES: dict[str, tuple[str, str, Sequence[str] | None]] = {
    # measure: (chapter whose data/published file holds it, figure, series; None = every series)
    "intra_sentence_cosine": ("01_layer_by_layer", "dense_vs_colbert", None),
    "cross_sentence_baseline": ("01_layer_by_layer", "token_similarity", ["cross-sentence baseline"]),
    "separability_ratio": ("01_layer_by_layer", "separability", None),
    "cls_mean_alignment": ("01_layer_by_layer", "cls_alignment", ["CLS vs mean"]),
    "anisotropy": ("03_inside_the_cone", "anisotropy", None),
    "hard_mean_pool": ("02_similarity_attractor", "pair_cosine", ["hard"]),
    "easy_mean_pool": ("02_similarity_attractor", "pair_cosine", ["easy"]),
    "hard_maxsim": ("02_similarity_attractor", "maxsim_mean", None),
}
"""The posts' curve drawn under each measure (mxbai-embed-large-v1; jina-colbert-v2 where the
post has one)."""


def objective_published(measure: str) -> pd.DataFrame | None:
    """The posts' curves for ``measure`` as a long frame on relative depth, or None."""
    if measure not in PUBLISHED_CURVES:
        return None
    chapter, figure, names = PUBLISHED_CURVES[measure]
    return published_frame(corpora.published(chapter)[figure], names)


def _x() -> alt.X:
    return alt.X("relative_depth:Q", title="relative depth l / L", scale=alt.Scale(domain=[0, 1]))


def _band_layer(low: Sequence[float], high: Sequence[float], colour: str) -> alt.Chart:
    depth = np.arange(len(low))
    frame = pd.DataFrame({"relative_depth": depth / (len(low) - 1), "low": low, "high": high})
    return alt.Chart(frame).mark_area(opacity=0.18, color=colour).encode(x=_x(), y="low:Q", y2="high:Q")


def objective_panel(block: Mapping[str, Any], arm: str, measure: str, y_title: str,
                    comparison: str = "comparison", published: bool = True,
                    lines: Mapping[str, Any] | None = None) -> alt.LayerChart:
    """One arm: the mean curve of ``measure`` over the kept seeds before training and after each
    training of the ``comparison``, each with its 95 % band over seeds and sentences, the posts'
    curves underneath unless ``published`` is False; ``lines``: the chart's colour and dash
    encodings (:func:`_lines`)."""
    found = block[comparison]
    series = {OBJECTIVE_LABELS[v]: found["mean"][v][measure] for v in found["mean"]}
    post = objective_published(measure)
    chart = layer_chart(per_layer_frame(series, ARM_LABELS[arm]), y_title, post if published else None,
                        title=ARM_LABELS[arm], y_zero=False, lines=lines or _lines(list(found["mean"]), post))
    bands = [_band_layer(*np.asarray(found["band"][v][measure], dtype=float), PALETTE[v]) for v in found["band"]]
    return alt.layer(*bands, chart).properties(width=PANEL)


def _lines(variants: Sequence[str], post: pd.DataFrame | None) -> dict[str, Any]:
    """The colour and dash encodings of a chart of ``variants`` over the posts' curves ``post``:
    each variant solid in its :data:`PALETTE` colour (its band's), each published curve its own
    grey and dash; every panel takes the same, so that one legend names every line."""
    published = [] if post is None else [published_label(s, m) for s, m in zip(post["series"], post["model"])]
    return published_encoding(published, ours=[OBJECTIVE_LABELS[v] for v in variants],
                              colours=[PALETTE[v] for v in variants])


OWN_SCALE = 3.0
"""The posts' curves get a panel of their own when the y-range of theirs and this run's together is
more than this many times this run's own (bands included): one shared axis would flatten this run's
curves (chapter 7's B / W: the post's 3.6 over this run's 0–0.3)."""


def _measured_span(blocks: Mapping[str, Mapping], measure: str, comparison: str) -> tuple[float, float]:
    """The lowest and highest value (means and 95 % bands) of ``measure`` over every arm's ``comparison``."""
    values = [np.asarray(found[part][v][measure], dtype=float).ravel() for block in blocks.values()
              if (found := block.get(comparison)) for part in ("mean", "band") for v in found[part]]
    values = np.concatenate(values)
    return float(np.nanmin(values)), float(np.nanmax(values))


def objective_chart(blocks: Mapping[str, Mapping], measure: str, y_title: str, title: str = "",
                    comparison: str = "comparison") -> alt.HConcatChart:
    """:func:`objective_panel` for every arm whose ``comparison`` was made (at least 2 seeds kept),
    side by side, over the posts' curves; where those would flatten this run's (:data:`OWN_SCALE`),
    they are drawn in a last panel of their own, on their own y-scale."""
    made = {arm: block for arm, block in blocks.items() if block.get(comparison)}
    post = objective_published(measure)
    apart = False
    if post is not None and made:
        low, high = _measured_span(made, measure, comparison)
        both = max(high, post["value"].max()) - min(low, post["value"].min())
        apart = both > OWN_SCALE * max(high - low, 1e-12)
    variants = list(next(iter(made.values()))[comparison]["mean"]) if made else []
    lines = _lines(variants, post)
    panels = [objective_panel(block, arm, measure, y_title, comparison, published=not apart, lines=lines)
              for arm, block in made.items()]
    if apart:
        labelled = post.assign(label=[published_label(s, m) for s, m in zip(post["series"], post["model"])])
        panels.append(alt.Chart(labelled).mark_line(strokeWidth=1.5).encode(
            x=_x(), y=alt.Y("value:Q", title=y_title, scale=alt.Scale(zero=False)),
            tooltip=["label:N", "depth:Q", alt.Tooltip("value:Q", format=".4f")], **lines
        ).properties(title="the post, on its own scale", width=PANEL))
    return alt.hconcat(*panels).properties(title=title)


def objective_answers_chart(blocks: Mapping[str, Mapping]) -> alt.HConcatChart:
    """The question's three answers on relative depth, within-sentence cosine: the post's two
    models (each trained with one loss, different in everything else), then each arm's two
    copies (the same start, only the loss differing)."""
    post = objective_published("intra_sentence_cosine")
    loss_of = {name: "mean-pool loss" if "mean-pool" in name else "MaxSim loss" for name in post["series"].unique()}
    frames = [post.assign(panel="the post: two different models", loss=post["series"].map(loss_of))]
    for arm, block in blocks.items():
        if block["comparison"]:
            mean = block["comparison"]["mean"]
            series = {OBJECTIVE_LABELS[o]: mean[o]["intra_sentence_cosine"] for o in ("mean_pool", "maxsim")}
            frame = per_layer_frame(series, ARM_LABELS[arm])
            frames.append(frame.assign(panel=ARM_LABELS[arm], loss=frame["series"]))
    frame = pd.concat(frames, ignore_index=True)
    panels = [alt.Chart(frame[frame["panel"] == panel]).mark_line(point=True).encode(
        x=_x(), y=alt.Y("value:Q", title="within-sentence cosine", scale=alt.Scale(domain=[0, 1])),
        color=alt.Color("loss:N", title=None, scale=LOSS_COLOURS),
        tooltip=["model:N", "depth:Q", alt.Tooltip("value:Q", format=".3f")]).properties(title=panel, width=PANEL)
        for panel in frame["panel"].unique()]
    return alt.hconcat(*panels).properties(
        title="Within-sentence token cosine: the post's two models and each arm's two copies")


def objective_difference_chart(blocks: Mapping[str, Mapping], measure: str, y_title: str, title: str = "",
                               comparison: str = "comparison") -> alt.HConcatChart:
    """Per arm, mean-pool copy minus MaxSim copy at every depth: each kept seed's difference (thin
    lines), their mean with its 95 % band over seeds and sentences, and the grey zone ±n_l (the
    band's half-width): where the mean leaves the zone, the loss is visible at that depth (of the
    arm's ``comparison``: the two losses, or ``hard_negatives``)."""
    panels = []
    for arm, block in blocks.items():
        found = block.get(comparison)
        if not found:
            continue
        mean = np.asarray(found["difference"][measure], dtype=float)
        low, high = np.asarray(found["difference_band"][measure], dtype=float)
        depth = np.arange(len(mean)) / (len(mean) - 1)
        noise = (high - low) / 2
        per_seed = np.asarray(found["per_seed_difference"][measure])
        seeds = pd.concat([pd.DataFrame({"relative_depth": depth, "value": row, "seed": f"seed {s}"})
                           for s, row in zip(found["seeds"], per_seed)])
        zone = pd.DataFrame({"relative_depth": depth, "low": -noise, "high": noise})
        frame = pd.DataFrame({"relative_depth": depth, "value": mean, "low": low, "high": high})
        layers = [alt.Chart(zone).mark_area(opacity=0.25, color="#9a9a9a").encode(x=_x(), y="low:Q", y2="high:Q"),
                  alt.Chart(frame).mark_area(opacity=0.2, color="#1f5fa8").encode(x=_x(), y="low:Q", y2="high:Q"),
                  alt.Chart(seeds).mark_line(strokeWidth=1, opacity=0.45, color="#4682b4").encode(
                      x=_x(), y="value:Q", detail="seed:N", tooltip=["seed:N", alt.Tooltip("value:Q", format=".4f")]),
                  alt.Chart(frame).mark_line(point=True, color="#1f5fa8").encode(
                      x=_x(), y=alt.Y("value:Q", title=y_title),
                      tooltip=[alt.Tooltip("value:Q", format=".4f"), alt.Tooltip("low:Q", format=".4f"),
                               alt.Tooltip("high:Q", format=".4f")])]
        panels.append(alt.layer(*layers).properties(title=ARM_LABELS[arm], width=PANEL))
    return alt.hconcat(*panels).properties(title=title)


def objective_loss_chart(blocks: Mapping[str, Mapping]) -> alt.HConcatChart:
    """The training loss of every copy by step, one panel per arm, one line per seed."""
    panels = []
    for arm, block in blocks.items():
        rows = [pd.DataFrame({"step": np.arange(1, len(run["losses"]) + 1), "loss": run["losses"],
                              "loss function": OBJECTIVE_LABELS[objective], "seed": seed.removeprefix("seed_")})
                for objective, by_seed in block["loss"].items() for seed, run in by_seed.items()]
        frame = pd.concat(rows, ignore_index=True)
        panels.append(alt.Chart(frame).mark_line(strokeWidth=1.2, opacity=0.7).encode(
            x=alt.X("step:Q", title="optimizer step"), y=alt.Y("loss:Q", title="InfoNCE loss"),
            color=alt.Color("loss function:N", title=None, scale=LOSS_COLOURS),
            detail="seed:N", tooltip=["loss function:N", "seed:N", "step:Q", alt.Tooltip("loss:Q", format=".3f")])
            .properties(title=ARM_LABELS[arm], width=PANEL))
    return alt.hconcat(*panels).properties(title="Training loss of every copy")


def objective_gradient_chart(blocks: Mapping[str, Mapping]) -> alt.HConcatChart:
    """Each kept copy's gradient norm per block, averaged over its training steps, on the block's
    relative depth l / L (log scale: blocks can differ by orders of magnitude); one panel per arm,
    one line per seed."""
    panels = []
    for arm, block in blocks.items():
        found = block["gradient_norm"]
        rows = [pd.DataFrame({"block": np.arange(1, len(norms) + 1), "relative depth": np.arange(1, len(norms) + 1)
                              / len(norms), "gradient norm": norms, "loss function": OBJECTIVE_LABELS[objective],
                              "seed": str(seed)})
                for objective, per_seed in found["per_seed"].items() if per_seed
                for seed, norms in zip(found["seeds"], per_seed)]
        if not rows:
            continue
        lines = alt.Chart(pd.concat(rows, ignore_index=True)).mark_line(strokeWidth=1.2, opacity=0.7, point=True)
        panels.append(lines.encode(
            x=alt.X("relative depth:Q", title="block l / L", scale=alt.Scale(domain=[0, 1])),
            y=alt.Y("gradient norm:Q", title="gradient norm of the block", scale=alt.Scale(type="log")),
            color=alt.Color("loss function:N", title=None, scale=LOSS_COLOURS), detail="seed:N",
            tooltip=["loss function:N", "seed:N", "block:Q", alt.Tooltip("gradient norm:Q", format=".3g")])
            .properties(title=ARM_LABELS[arm], width=PANEL))
    return alt.hconcat(*panels).properties(title="Where the gradient lands: each block's gradient norm, per copy")


DIGITS = 4
"""Decimals of every number in the chapter's tables, so that each table reads in one format: a
value that rounds to zero reads 0.0000 (never 1.64e-06 beside 0.0004), a p-value below 0.0001
reads "< 0.0001". (Relative depths, multiples of 1 / L, keep two: :func:`reach_text`.)"""


def _rounded(value):
    """``value`` to :data:`DIGITS` decimals; None (not measured) stays None, shown as "—"."""
    return None if value is None else round(value, DIGITS)


def _fixed(value: float, digits: int = DIGITS) -> str:
    """``value`` with ``digits`` decimals, a zero without a sign (:func:`.tables.number_text`)."""
    return number_text(round(float(value), digits), digits)


def _p_text(p: float, digits: int = DIGITS) -> str:
    """"0.0078", or "< 0.0001" for a p-value that would round to zero."""
    return f"< {10.0 ** -digits:.{digits}f}" if p < 10.0 ** -digits else _fixed(p, digits)


def _interval(value: float | None, interval: Sequence[float] | None, digits: int = DIGITS) -> str:
    """"0.3950 [0.3600, 0.4310]", or "not measured"; every number with ``digits`` decimals."""
    if value is None:
        return "not measured"
    if interval is None:
        return _fixed(value, digits)
    low, high = (_fixed(end, digits) for end in interval)
    return f"{_fixed(value, digits)} [{low}, {high}]"


def objective_convergence_table(blocks: Mapping[str, Mapping]) -> pd.DataFrame:
    """Every copy: its loss over the first and the last tenth of its steps, how far the last tenth
    still fell against its noise and as a share of the whole fall, whether it levelled off, its
    held-out recall@k (with the score it was trained with) and exact 95 % interval against
    chance, and whether it is kept; then each arm's starts (both scores)."""
    rows = []
    for arm, block in blocks.items():
        reasons = {(e["variant"], e["seed"]): "; ".join(e["reasons"]) for e in block["excluded"]}
        for variant in block["variants"]:
            for seed, r in block["retrieval"][variant].items():
                loss = block["loss"][variant][f"seed_{seed}"]
                level = loss["levelled"]
                rows.append({"arm": ARM_LABELS[arm], "copy": OBJECTIVE_LABELS[variant], "seed": seed,
                             "loss, first tenth": _rounded(loss["first"]),
                             "loss, last tenth": _rounded(loss["last"]),
                             "last tenth's fall": _rounded(level["fall"]),
                             "its noise (2 SE)": _rounded(level["noise"]),
                             "share of the whole fall": _rounded(level["share"]),
                             "levelled off": level["levelled"],
                             f"recall@{block['k']} [95 %]": _interval(r["recall"], r["interval"]),
                             "chance": _rounded(r["chance"]), "p (vs chance)": _p_text(r["p_value"]),
                             "kept": "yes" if int(seed) in block["kept"] else
                             f"no — {reasons.get((variant, int(seed)), 'another copy of its seed is excluded')}"})
        for score, by_seed in block["retrieval"]["before"].items():
            found = list(by_seed.values())
            recall = (_interval(found[0]["recall"], found[0]["interval"]) if len(found) == 1 else
                      f"{_fixed(min(r['recall'] for r in found))} to {_fixed(max(r['recall'] for r in found))} "
                      f"over {len(found)} starts")
            rows.append({"arm": ARM_LABELS[arm], "copy": f"before training ({OBJECTIVE_LABELS[score]}'s score)",
                         "seed": "—", f"recall@{block['k']} [95 %]": recall, "chance": _rounded(block["chance"])})
    frame = pd.DataFrame(rows)
    frame.attrs["fold"] = f"How each of the {sum(len(b['loss'][v]) for b in blocks.values() for v in b['variants'])} " \
                          "copies trained, and whether it is kept"
    return frame


def objective_settled_table(blocks: Mapping[str, Mapping]) -> pd.DataFrame:
    """Per comparison that was made: its main difference at the final depth on the snapshots at
    three quarters of the steps and at the end, the end's 95 % interval, and whether it settled."""
    rows = []
    for arm, block in blocks.items():
        for name in ("comparison", "hard_negatives"):
            found = block.get(name)
            if not found:
                continue
            s = found["settled"]
            rows.append({"arm": ARM_LABELS[arm], "copies compared": " − ".join(OBJECTIVE_LABELS[v] for v in s["pair"]),
                         "measure (final depth)": results.MAIN_NAMES[s["measure"]], "at 3/4 of the steps":
                         _rounded(s["three_quarters"]), "at the end [95 %]": _interval(s["end"], s["interval"]),
                         "settled": s["settled"]})
    return pd.DataFrame(rows)


def objective_final_table(blocks: Mapping[str, Mapping], measures: Mapping[str, str],
                          comparison: str = "comparison") -> pd.DataFrame:
    """Per measure (rows) and arm × variant (columns) of each arm's ``comparison``: the final-depth
    mean over the kept seeds with its 95 % interval over seeds and sentences."""
    columns = {}
    for arm, block in blocks.items():
        found = block.get(comparison)
        if not found:
            continue
        for variant in found["mean"]:
            columns[(ARM_LABELS[arm], OBJECTIVE_LABELS[variant])] = {
                name: _interval(float(found["mean"][variant][key][-1]), np.asarray(found["band"][variant][key])[:, -1])
                for key, name in measures.items() if key in found["mean"][variant]}
    return pd.DataFrame(columns)


def objective_per_seed_table(blocks: Mapping[str, Mapping], measure: str,
                             comparison: str = "comparison") -> pd.DataFrame:
    """Each kept seed's final-depth difference (of the arm's ``comparison``: mean-pool copy −
    MaxSim copy, or hard-negative copy − in-batch copy) per arm, with the mean, its 95 % interval
    over seeds and sentences, and the exact sign-flip p-value."""
    rows = []
    for arm, block in blocks.items():
        if not block.get(comparison):
            continue
        final = block[comparison]["final"]["difference"][measure]
        row = {"arm": ARM_LABELS[arm],
               **{f"seed {s}": _rounded(v) for s, v in zip(block[comparison]["seeds"], final["per_seed"])},
               "mean [95 %]": _interval(final["value"], final["interval"]), "sign-flip p": _p_text(final["p_value"])}
        rows.append(row)
    return pd.DataFrame(rows, columns=None if rows else ["arm"]).set_index("arm").fillna("—")


def objective_reach_table(blocks: Mapping[str, Mapping], measures: Mapping[str, str]) -> pd.DataFrame:
    """Per measure and arm: the final-depth difference with its interval, and the depth from
    which the difference stays visible (relative depth, with the 95 % interval of the reach)."""
    rows = []
    for key, name in measures.items():
        row: dict[str, Any] = {"measure": name}
        for arm, block in blocks.items():
            comparison = block["comparison"]
            if not comparison or key not in comparison["reach"]:
                continue
            final, reach = comparison["final"]["difference"][key], comparison["reach"][key]
            row[f"final difference ({arm})"] = _interval(final["value"], final["interval"])
            row[f"visible from ({arm})"] = reach_text(reach)
        rows.append(row)
    return pd.DataFrame(rows).set_index("measure").fillna("—")


def reach_text(reach: Mapping[str, Any]) -> str:
    """"0.50 [0.25, none]": the relative depth from which a difference stays visible, then the
    shallowest and deepest start within its 95 % interval ("none": not visible at the final depth)."""
    n_layers = len(reach["present"]) - 1

    def text(depth: int | None) -> str:
        return "none" if depth is None else f"{depth / n_layers:.2f}"

    low, high = reach["depth_interval"]
    return f"{text(reach['depth'])} [{text(low)}, {text(high)}]"


def objective_cone_table(block: Mapping[str, Any]) -> pd.DataFrame:
    """Per fine-tuned copy: its cone axis and mean direction against the backbone's, and its
    anisotropy raw, centred on the backbone's mean pool and centred on its own."""
    rows = []
    for variant, by_seed in block["cone"].items():
        for seed, values in by_seed.items():
            name = "the backbone" if variant == "before" else f"{OBJECTIVE_LABELS[variant]}, {seed.replace('_', ' ')}"
            rows.append({"copy": name, **{key.replace("_", " "): _rounded(value)
                                          for key, value in values.items()}})
    return pd.DataFrame(rows).set_index("copy")


def dense_colbert_endpoints() -> dict[str, float]:
    """The post's dense and ColBERT within-sentence cosines: mxbai's and jina-colbert-v2's final
    values and jina's peak."""
    figure = corpora.published("01_layer_by_layer")["dense_vs_colbert"]
    dense, colbert = (np.asarray(values, dtype=float) for values in figure["series"].values())
    return {"mxbai_end": float(dense[-1]), "jina_end": float(colbert[-1]), "jina_peak": float(colbert.max()),
            "jina_peak_layer": int(np.argmax(colbert))}
