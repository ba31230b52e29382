"""Chapter 5's tables and charts, in the order the notebook shows them: the query set, what the
library does, the isotropy score and the cone, whitening and centering, length bias and dilution,
where [CLS] looks, compounds, and [CLS] at every depth. Each reads one part of the chapter's metrics
dict (its schema is in the module that computes it) and returns a table as the book shows one
(``book.charts.practice.shown``) or an ``alt.Chart``. The tables chapter 6 shows too
(the query set's summary, what no measurement decides, the errata) are ``book.charts.practice``'s,
named here for the notebook."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import altair as alt
import numpy as np
import pandas as pd

from ...book.charts.depth import grouped_bars, line_chart, scatter_chart
from ...book.charts.frames import per_layer_frame
from ...book.charts.practice import METRIC_NAMES, errata_shown, query_summary, shown, untested_table
from ...book.claims.words import number
from ...book.pages import HtmlTable
from ...core import models
from .cls_attention import power_law

__all__ = [
    "query_summary", "query_examples", "library_table", "ISOTROPY_COLUMNS", "with_controls_averaged",
    "isotropy_table", "isotropy_bars", "cone_table", "METHOD_NAMES", "method_table", "VARIANT_NAMES",
    "sensitivity_table", "transfer_table", "length_scatter", "dilution_lines", "cls_bucket_table", "cls_bucket_bars",
    "cls_profile_lines", "COMPOUND_COLUMNS", "compound_table", "SUBWORD_ROWS", "subword_summary", "cls_depth_lines",
    "untested_table", "errata_shown", "shown"
]
"""The notebook's tables and charts, the shared ones it shows from here too (``query_summary``,
``untested_table``, ``errata_shown``, ``shown``)."""


# --------------------------------------------------------------------------- the query set


def query_examples(queries: Mapping[str, list], sentences: Sequence[str], per_kind: int = 3) -> HtmlTable:
    """The first ``per_kind`` queries of each kind, with their topic and one relevant sentence."""
    frame = pd.DataFrame(
        {
            "query": queries["queries"],
            "kind": queries["kinds"],
            "topic": queries["topics"],
            "a relevant sentence": [sentences[r[0]] for r in queries["relevant"]],
        }
    )
    return shown(frame.groupby("kind").head(per_kind))


# --------------------------------------------------------------------------- the library and isotropy


def library_table(library: Mapping[str, object]) -> HtmlTable:
    """What sentence-transformers does with the model (``pooling.library_metrics``)."""
    return shown(
        pd.Series(
            {
                "modules": " → ".join(library["modules"] or ["none (no sentence-transformers config)"]),
                "pooling mode": library["pooling_mode"],
                "max |‖e‖ − 1|": library["max_norm_deviation"],
                "max |alone − padded batch|": library["padding_max_abs_diff"],
                "max |library − our mean pool|": library["meanpool_vs_model"]["max_abs_diff"],
                "cos(mean of all tokens, mean of word tokens)": library["special_token_cosine"],
            },
            name="value",
        ).to_frame(),
        "",
    )


ISOTROPY_COLUMNS = {
    "score": "score",
    "mean_cos": "mean cos",
    "var_ratio": "var(c)·d",
    "avg_sim": "avg_sim",
    "warns": "avg_sim > 0.6",
    "recall_at_10": "recall@10",
    "ndcg_at_10": "nDCG@10",
    "texts_per_second": "texts/s",
}


def with_controls_averaged(by_model: Mapping[str, Mapping]) -> dict[str, Mapping]:
    """``by_model`` with each trained model's random-init controls ("<model> [random-init control,
    seed s]") replaced by one row, "<model> · controls (mean of S seeds)": each column's mean over
    the seeds (None where no seed has a value; a yes / no column becomes "k of S", the seeds with
    yes), so a table or a chart shows one line per model and one per model's controls however many
    seeds ran."""
    out: dict[str, Mapping] = {}
    groups: dict[str, list[Mapping]] = {}
    for name, row in by_model.items():
        if control := models.control_of(name):
            groups.setdefault(control[0], []).append(row)
        else:
            out[name] = row
    for base, rows in groups.items():
        out[f"{base} · controls (mean of {len(rows)} seeds)"] = {
            key: _over_seeds([row.get(key) for row in rows]) for key in dict.fromkeys(k for r in rows for k in r)}
    return out


def _over_seeds(values: list) -> object:
    """One column over the seeds: "k of S" for yes / no values, else the mean (None when none has one)."""
    if all(isinstance(v, (bool, np.bool_)) for v in values):
        return f"{sum(map(bool, values))} of {len(values)}"
    numbers = [float(v) for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    return float(np.mean(numbers)) if numbers else None


def _short(model: str) -> str:
    return model.rsplit("/", 1)[-1]


def isotropy_table(by_model: Mapping[str, Mapping], article_rows: Sequence[Mapping]) -> HtmlTable:
    """One row per model of the run (``isotropy.model_row``) beside the article's score, and one
    per model's random-init controls (their mean, :func:`with_controls_averaged`): the article's
    benchmark (its speed measured in this run, recall@10 on the query set, anisotropy) with the
    score's terms; a control has no speed or search of its own ("—")."""
    article = {row["model"]: row["score"] for row in article_rows}
    by_model = with_controls_averaged(by_model)
    table = pd.DataFrame(by_model).T[list(ISOTROPY_COLUMNS)].rename(columns=ISOTROPY_COLUMNS)
    table.insert(0, "article's score", [article.get(m) for m in table.index])
    return shown(table.rename(index=_short), "model")


def isotropy_bars(by_model: Mapping[str, Mapping], article_rows: Sequence[Mapping]) -> alt.Chart:
    """The article's isotropy table and this run's scores, side by side (a model's random-init
    controls as their mean, :func:`with_controls_averaged`)."""
    by_model = with_controls_averaged(by_model)
    bars = pd.DataFrame(
        [{"model": row["name"], "source": "article", "score": row["score"]} for row in article_rows]
        + [
            {"model": m.rsplit("/", 1)[-1], "source": "this run", "score": round(v["score"], 4)}
            for m, v in by_model.items()
        ]
    )
    return grouped_bars(
        bars, "model", "score", "source", "isotropy score", title="The article's isotropy table and this run's scores"
    )


def cone_table(cone: Mapping[str, object]) -> HtmlTable:
    """The article's E[cos θ] = cos α against the exact κ² on the embeddings and a simulated cone."""
    simulated = cone["simulated"]
    return shown(
        pd.DataFrame(
            {
                "mean pairwise cosine": [cone["mean_pairwise_cosine"], simulated["mean_pairwise_cosine"]],
                "article: cos α": [cone["kappa"]] * 2,
                "cos² α": [cone["kappa_squared"]] * 2,
            },
            index=["this model's embeddings", f"simulated cone, α = {number(simulated['alpha_degrees'])}°"],
        ),
        "vectors",
    )


# --------------------------------------------------------------------------- whitening and centering


METHOD_NAMES = {"none": "raw", "center": "centred", "whiten": "whitened"}
"""How the whitening study's methods read in a table."""


def method_table(by_method: Mapping[str, Mapping]) -> HtmlTable:
    """A whitening study's per-method values (held_out, retrieval) with readable names."""
    return shown(pd.DataFrame(by_method).T.rename(index=METHOD_NAMES, columns=METRIC_NAMES), "transform")


VARIANT_NAMES = {
    "raw": "raw (no transform)",
    "centred": "centred",
    "whitened": "whitened (as above)",
    "unnormalised_input": "whitened, unnormalised input",
    "eps_1e-2": "whitened, ε = 1e-2",
    "top_third": "whitened, top d/3 directions only",
    "fit_on_all": "whitened, fitted on every document",
}
"""How the held-out study's sensitivity variants (``whitening.VARIANTS``) read in a table."""


def sensitivity_table(held_out: Mapping[str, object]) -> HtmlTable:
    """nDCG@10 of every variant of the held-out evaluation (``whitening.held_out_study``) and its
    change from raw on the same held-out sentences and queries."""
    rows = {
        VARIANT_NAMES.get(name, name): {"nDCG@10": value, "minus raw": held_out["sensitivity_minus_raw"][name]}
        for name, value in held_out["sensitivity"].items()
    }
    return shown(pd.DataFrame.from_dict(rows, orient="index"), "variant")


def transfer_table(borrowed: Mapping[str, object]) -> HtmlTable:
    """Domain B's held-out anisotropy raw, with B's own transform and with domain A's."""
    return shown(
        pd.DataFrame({m: borrowed[m] for m in ("center", "whiten")}).T.rename(
            index=METHOD_NAMES, columns={"raw": "B raw", "own": "fitted on B", "borrowed": "fitted on A"}
        ),
        "transform",
    )


# --------------------------------------------------------------------------- length, dilution, [CLS]


def length_scatter(
    vectors: np.ndarray, lengths: np.ndarray, topics: Sequence[str], sentences: Sequence[str]
) -> alt.Chart:
    """Each sentence's unnormalised embedding norm against its token count."""
    points = pd.DataFrame(
        {"tokens": lengths, "norm": np.linalg.norm(vectors, axis=1).round(4), "topic": topics, "sentence": sentences}
    )
    return scatter_chart(
        points,
        "tokens",
        "norm",
        "tokens n",
        "‖embedding‖ before normalisation",
        title="Embedding norm against sentence length",
        tooltip=["sentence:N"],
    )


def dilution_lines(dilution: Mapping[str, object]) -> alt.Chart:
    """cos(key alone, key + k sentences) by pooling, key first (solid) and last (dashed)."""
    curves = {k: v for k, v in dilution.items() if k.startswith("key_")}
    frame = pd.DataFrame(
        [
            {"k": k, "cosine": round(float(c), 4), "pooling": m, "key": pos.replace("_", " ")}
            for pos, by in curves.items()
            for m, curve in by.items()
            for k, c in enumerate(curve)
        ]
    )
    return line_chart(
        frame,
        "k",
        "cosine",
        "pooling",
        "unrelated sentences added k",
        "cos(key alone, key + k sentences)",
        dash="key",
        title="How far a key sentence's vector drifts as text is added",
    )


def cls_bucket_table(cls: Mapping[str, object]) -> pd.DataFrame:
    """[CLS]'s share of attention per position bucket: measured, uniform, the article's table and
    its code at 512 and at T positions (``cls_attention.position_study``); shown with
    ``shown(table, "positions")``."""
    T = cls["n_positions"]
    return pd.DataFrame(
        {
            "measured (this run)": list(cls["shares"].values()),
            "uniform attention": cls["uniform"],
            "article's table": cls["article_table"],
            "article's code, 512 positions": cls["article_code_512"],
            f"article's code, {T} positions": cls["article_code_T"],
        },
        index=cls["buckets"],
    ).round(4)


def cls_bucket_bars(table: pd.DataFrame) -> alt.Chart:
    """``cls_bucket_table`` as grouped bars."""
    frame = table.rename_axis("positions").reset_index().melt("positions", var_name="source", value_name="share")
    return grouped_bars(
        frame,
        "positions",
        "share",
        "source",
        "share of [CLS] attention",
        title="[CLS] attention by position: measured, uniform and the article's",
    )


def cls_profile_lines(cls: Mapping[str, object]) -> alt.Chart:
    """The measured profile, the article's 1/(1 + 0.1 t) and the best curve of its family."""
    T, alpha = cls["n_positions"], cls["power_law"]["alpha"]
    article, fitted = "article: 1/(1 + 0.1 t)", f"best fit: α = {alpha:.3g}"
    frame = pd.DataFrame(
        {
            "position": np.tile(np.arange(T), 3),
            "curve": np.repeat(["measured", article, fitted], T),
            "weight": np.round(np.concatenate([cls["profile"], power_law(T, 0.1), power_law(T, alpha)]), 5),
        }
    )
    return line_chart(
        frame,
        "position",
        "weight",
        "curve",
        "position t",
        "attention from [CLS]",
        title="[CLS] attention at each position",
        greyed=[article],
    )


# --------------------------------------------------------------------------- compounds, and [CLS] at every depth


COMPOUND_COLUMNS = {
    "pieces": "WordPiece pieces",
    "composition_cosine": "cos(compound, mean of parts)",
    "stability": "stability across its sentences",
    "margin_mean_pool": "margin, mean pooling",
    "margin_subword_pool": "margin, subword-aware pooling",
}


def compound_table(subword: Mapping[str, object]) -> HtmlTable:
    """One row per compound of the compound study (``compounds.subword_study``)."""
    frame = pd.DataFrame(subword["compounds"]).set_index("compound")[list(COMPOUND_COLUMNS)]
    return shown(frame.rename(columns=COMPOUND_COLUMNS), "compound")


SUBWORD_ROWS = {
    "split compounds (share)": "split_fraction",
    "composition: mean cosine": "composition_mean_cosine",
    "composition: top-1": "composition_top1",
    "composition: top-1 by chance": "composition_chance",
    "stability, compounds": "stability_compound",
    "stability, single-token controls": "stability_control",
    "margin, mean pooling": "margin_mean_pool",
    "margin, subword-aware pooling": "margin_subword_pool",
}


def subword_summary(subword: Mapping[str, object]) -> HtmlTable:
    """The compound study's averages (``compounds.subword_study``)."""
    return shown(pd.Series({label: subword[key] for label, key in SUBWORD_ROWS.items()}, name="value").to_frame(), "")


def cls_depth_lines(by_depth: Mapping[str, Sequence[float]]) -> alt.Chart:
    """``pooling.cls_by_depth``'s curves on relative depth: nDCG@10 of the [CLS] states and of the
    mean pools, and the mean cos([CLS], mean pool) of the documents."""
    names = {"cls": "nDCG@10, [CLS]", "mean": "nDCG@10, mean pool", "alignment": "cos([CLS], mean pool)"}
    frame = per_layer_frame({name: by_depth[key] for key, name in names.items()}, model="")
    return line_chart(frame, "relative_depth", "value", "series", "relative depth l / L", "nDCG@10 or cosine",
                      title="[CLS] against the mean pool at every depth")
