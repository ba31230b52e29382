"""Tables and charts of the practice chapters (5 and 6): each reads one part of the chapter's
metrics dict (its schema is in the study module that computes it) and returns a DataFrame or
an ``alt.Chart``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import altair as alt
import numpy as np
import pandas as pd

from .depth import grouped_bars, line_chart, scatter_chart

METHOD_NAMES = {"none": "raw", "center": "centred", "whiten": "whitened"}
"""How the whitening study's methods read in a table."""


# --------------------------------------------------------------------------- the query set

def query_summary(queries: Mapping[str, list]) -> pd.DataFrame:
    """Per kind of query (keyword, paraphrase): how many, and relevant sentences per query."""
    frame = pd.DataFrame({"kind": queries["kinds"], "relevant": [len(r) for r in queries["relevant"]]})
    return frame.groupby("kind").agg(queries=("relevant", "size"), relevant_per_query=("relevant", "mean")).round(2)


def query_examples(queries: Mapping[str, list], sentences: Sequence[str], per_kind: int = 3) -> pd.DataFrame:
    """The first ``per_kind`` queries of each kind, with their topic and one relevant sentence."""
    frame = pd.DataFrame({"query": queries["queries"], "kind": queries["kinds"], "topic": queries["topics"],
                          "example_relevant": [sentences[r[0]] for r in queries["relevant"]]})
    return frame.groupby("kind").head(per_kind)


# --------------------------------------------------------------------------- the library and isotropy

def library_table(library: Mapping[str, object]) -> pd.DataFrame:
    """What sentence-transformers does with the model (``pooling.library_metrics``)."""
    def small(value):
        return "not measured" if value is None else f"{value:.1e}"

    return pd.Series({
        "modules": " → ".join(library["modules"] or ["none (no sentence-transformers config)"]),
        "pooling mode": library["pooling_mode"], "max |‖e‖ − 1|": small(library["max_norm_deviation"]),
        "max |alone − padded batch|": small(library["padding_max_abs_diff"]),
        "max |library − our mean pool|": small(library["meanpool_vs_model"]["max_abs_diff"]),
        "cos(mean of all tokens, mean of word tokens)": f"{library['special_token_cosine']:.4f}",
    }, name="value").to_frame()


def isotropy_table(by_model: Mapping[str, Mapping], article_rows: Sequence[Mapping]) -> pd.DataFrame:
    """One row per model of the run (``isotropy.model_row``) beside the article's score."""
    article = {row["model"]: row["score"] for row in article_rows}
    table = pd.DataFrame(by_model).T[["score", "mean_cos", "var_ratio", "avg_sim", "warns", "ndcg_at_10"]]
    table.insert(1, "article's score", [article.get(m) for m in table.index])
    return table.rename(columns={"mean_cos": "mean cos", "var_ratio": "var(c)·d", "warns": "avg_sim > 0.6"})


def isotropy_bars(by_model: Mapping[str, Mapping], article_rows: Sequence[Mapping]) -> alt.Chart:
    """The article's isotropy table and this run's scores, side by side."""
    bars = pd.DataFrame([{"model": row["name"], "source": "article", "score": row["score"]} for row in article_rows]
                        + [{"model": m.rsplit("/", 1)[-1], "source": "this run", "score": round(v["score"], 4)}
                           for m, v in by_model.items()])
    return grouped_bars(bars, "model", "score", "source", "isotropy score",
                        title="The article's isotropy table and this run's scores")


def cone_table(cone: Mapping[str, object]) -> pd.DataFrame:
    """The article's E[cos θ] = cos α against the exact κ² on the embeddings and a simulated cone."""
    simulated = cone["simulated"]
    return pd.DataFrame({"mean pairwise cosine": [cone["mean_pairwise_cosine"], simulated["mean_pairwise_cosine"]],
                         "article: cos α": [cone["kappa"]] * 2, "cos² α": [cone["kappa_squared"]] * 2},
                        index=["this model's embeddings",
                               f"simulated cone, α = {simulated['alpha_degrees']:.1f}°"]).round(4)


def method_table(by_method: Mapping[str, Mapping]) -> pd.DataFrame:
    """A whitening study's per-method values (held_out, retrieval) with readable method names."""
    return pd.DataFrame(by_method).T.rename(index=METHOD_NAMES).round(4)


VARIANT_NAMES = {"raw": "raw (no transform)", "centred": "centred", "whitened": "whitened (as above)",
                 "unnormalised_input": "whitened, unnormalised input", "eps_1e-2": "whitened, ε = 1e-2",
                 "top_third": "whitened, top d/3 directions only", "fit_on_all": "whitened, fitted on every document"}
"""How the held-out study's sensitivity variants (``whitening.VARIANTS``) read in a table."""


def sensitivity_table(held_out: Mapping[str, object], first: Mapping[str, object]) -> pd.DataFrame:
    """nDCG@10 of every variant of the held-out evaluation (``whitening.held_out_study``) and its
    change from raw on the same queries, then the first evaluation (``whitening.whitening_study``:
    unnormalised input, every document ranked), which ranks another pool."""
    pool = f"{held_out['n_held_out']} held-out sentences, {held_out['n_queries']} queries"
    rows = {VARIANT_NAMES.get(name, name): {"nDCG@10": value, "minus raw": held_out["sensitivity_minus_raw"][name],
                                            "pool": pool} for name, value in held_out["sensitivity"].items()}
    rows["first evaluation: unnormalised input, every document ranked"] = {
        "nDCG@10": first["ndcg_at_10"]["whiten"], "minus raw": first["retrieval_change"],
        "pool": "every sentence (fitted ones included), every query"}
    return pd.DataFrame.from_dict(rows, orient="index").round(4)


def transfer_table(borrowed: Mapping[str, object]) -> pd.DataFrame:
    """Domain B's held-out anisotropy raw, with B's own transform and with domain A's."""
    return pd.DataFrame({m: borrowed[m] for m in ("center", "whiten")}).T.rename(
        index=METHOD_NAMES, columns={"raw": "B raw", "own": "fitted on B", "borrowed": "fitted on A"}).round(4)


# --------------------------------------------------------------------------- length, dilution, [CLS]

def length_scatter(vectors: np.ndarray, lengths: np.ndarray, topics: Sequence[str],
                   sentences: Sequence[str]) -> alt.Chart:
    """Each sentence's unnormalised embedding norm against its token count."""
    points = pd.DataFrame({"tokens": lengths, "norm": np.linalg.norm(vectors, axis=1).round(4),
                           "topic": topics, "sentence": sentences})
    return scatter_chart(points, "tokens", "norm", "tokens n", "‖embedding‖ before normalisation",
                         title="Embedding norm against sentence length", tooltip=["sentence:N"])


def dilution_lines(dilution: Mapping[str, object]) -> alt.Chart:
    """cos(key alone, key + k sentences) by pooling, key first (solid) and last (dashed)."""
    curves = {k: v for k, v in dilution.items() if k.startswith("key_")}
    frame = pd.DataFrame([{"k": k, "cosine": round(float(c), 4), "pooling": m, "key": pos.replace("_", " ")}
                          for pos, by in curves.items() for m, curve in by.items() for k, c in enumerate(curve)])
    return line_chart(frame, "k", "cosine", "pooling", "unrelated sentences added k",
                      "cos(key alone, key + k sentences)", dash="key",
                      title="How far a key sentence's vector drifts as text is added")


def cls_bucket_table(cls: Mapping[str, object]) -> pd.DataFrame:
    """[CLS]'s share of attention per position bucket: measured, uniform, the article's table and
    its code at 512 and at T positions (``cls_attention.position_study``)."""
    T = cls["n_positions"]
    return pd.DataFrame({"measured (this run)": list(cls["shares"].values()), "uniform attention": cls["uniform"],
                         "article's table": cls["article_table"], "article's code, 512 positions": cls["article_code_512"],
                         f"article's code, {T} positions": cls["article_code_T"]}, index=cls["buckets"]).round(4)


def cls_bucket_bars(table: pd.DataFrame) -> alt.Chart:
    """``cls_bucket_table`` as grouped bars."""
    frame = table.rename_axis("positions").reset_index().melt("positions", var_name="source", value_name="share")
    return grouped_bars(frame, "positions", "share", "source", "share of [CLS] attention",
                        title="[CLS] attention by position: measured, uniform and the article's")


def cls_profile_lines(cls: Mapping[str, object]) -> alt.Chart:
    """The measured profile, the article's 1/(1 + 0.1 t) and the best curve of its family."""
    from ...studies.cls_attention import power_law

    T, alpha = cls["n_positions"], cls["power_law"]["alpha"]
    article, fitted = "article: 1/(1 + 0.1 t)", f"best fit: α = {alpha:.3g}"
    frame = pd.DataFrame({"position": np.tile(np.arange(T), 3), "curve": np.repeat(["measured", article, fitted], T),
                          "weight": np.round(np.concatenate([cls["profile"], power_law(T, 0.1), power_law(T, alpha)]), 5)})
    return line_chart(frame, "position", "weight", "curve", "position t", "attention from [CLS]",
                      title="[CLS] attention at each position", greyed=[article])


# --------------------------------------------------------------------------- compounds and long texts

SUBWORD_ROWS = {"split compounds (share)": "split_fraction", "composition: mean cosine": "composition_mean_cosine",
                "composition: top-1": "composition_top1", "composition: top-1 by chance": "composition_chance",
                "stability, compounds": "stability_compound", "stability, single-token controls": "stability_control",
                "margin, mean pooling": "margin_mean_pool", "margin, subword-aware pooling": "margin_subword_pool"}


def subword_summary(subword: Mapping[str, object]) -> pd.DataFrame:
    """The compound study's averages (``compounds.subword_study``)."""
    return pd.Series({label: subword[key] for label, key in SUBWORD_ROWS.items()}, name="value").to_frame().round(3)


def recall_table(long_text: Mapping[str, object]) -> pd.DataFrame:
    """recall@1 of a document from its sentences, by method and by what truncation reads."""
    return pd.DataFrame(long_text["recall_at_1"]).T.rename(columns={
        "all": "all sentences", "read_by_truncation": "inside the first B tokens",
        "beyond_truncation": "beyond them"}).round(3)


def long_text_facts(long_text: Mapping[str, object]) -> pd.DataFrame:
    """What the model reads of the long documents (``long_texts.long_text_study``)."""
    return pd.Series({"tokens per word (corpus)": long_text["tokens_per_word"], "token budget B": long_text["token_budget"],
                      "words in a document": long_text["words_per_doc"], "windows per document": long_text["windows_per_doc"],
                      "windows longer than B": long_text["windows_over_limit_fraction"],
                      "tokens read, truncation": long_text["coverage"]["truncation"],
                      "tokens read, windows": long_text["coverage"]["windows"]}, name="value").to_frame().round(3)


# --------------------------------------------------------------------------- hybrid retrieval

def _by_method(hybrid: Mapping[str, object]) -> dict[str, Mapping]:
    return {name: by_kind for name, by_kind in hybrid.items() if isinstance(by_kind, Mapping) and "all" in by_kind
            and isinstance(by_kind["all"], Mapping)}


def hybrid_table(hybrid: Mapping[str, object]) -> pd.DataFrame:
    """Every method's recall and nDCG@10, per kind of query (``retrieval.hybrid_study``)."""
    return pd.concat({name: pd.DataFrame(h).T for name, h in _by_method(hybrid).items()}).round(3)


def hybrid_bars(hybrid: Mapping[str, object]) -> alt.Chart:
    """nDCG@10 per method and kind of query."""
    frame = pd.DataFrame([{"method": name, "queries": kind, "nDCG@10": round(v["ndcg_at_10"], 4)}
                          for name, h in _by_method(hybrid).items() for kind, v in h.items()])
    return grouped_bars(frame, "method", "nDCG@10", "queries", "nDCG@10",
                        title="Dense, BM25 and fused retrieval on the judged query set")
