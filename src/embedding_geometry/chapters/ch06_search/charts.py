"""Chapter 6's tables and charts, in the order the notebook shows them: long texts (windows or
truncation), quantization, hybrid retrieval. Tables read as ``book.charts.practice.shown`` writes
them. The tables chapter 5 shows too (the query set's summary, what no measurement decides, the
errata) are ``book.charts.practice``'s, named here for the notebook."""

from __future__ import annotations

from collections.abc import Mapping

import altair as alt
import pandas as pd

from ...book.charts.depth import grouped_bars
from ...book.charts.practice import METRIC_NAMES, errata_shown, query_summary, shown, untested_table
from ...book.pages import HtmlTable

__all__ = [
    "query_summary", "recall_table", "WINDOW_NAMES", "long_text_facts", "QUANTIZER_NAMES", "QUANTIZATION_COLUMNS",
    "quantization_table", "hybrid_table", "hybrid_bars", "untested_table", "errata_shown", "shown"
]
"""The notebook's tables and charts, the shared ones it shows from here too (``query_summary``,
``untested_table``, ``errata_shown``, ``shown``)."""


# --------------------------------------------------------------------------- long texts


def recall_table(long_text: Mapping[str, object]) -> HtmlTable:
    """recall@1 of a document from its sentences, by method and by what truncation reads."""
    return shown(
        pd.DataFrame(long_text["recall_at_1"]).T.rename(
            columns={
                "all": "all sentences",
                "read_by_truncation": "inside the first B tokens",
                "beyond_truncation": "beyond them",
            },
            index=WINDOW_NAMES,
        ),
        "document vector",
    )


WINDOW_NAMES = {"truncation": "truncation", "windows_max": "max-pooled windows", "windows_mean": "mean-pooled windows"}


def long_text_facts(long_text: Mapping[str, object]) -> HtmlTable:
    """What the model reads of the long documents (``long_texts.long_text_study``)."""
    return shown(
        pd.Series(
            {
                "tokens per word (corpus)": long_text["tokens_per_word"],
                "token budget B": long_text["token_budget"],
                "words in a document": long_text["words_per_doc"],
                "windows per document": long_text["windows_per_doc"],
                "share of windows longer than B": long_text["windows_over_limit_fraction"],
                "share of tokens read, truncation": long_text["coverage"]["truncation"],
                "share of tokens read, windows": long_text["coverage"]["windows"],
            },
            name="value",
        ).to_frame(),
        "",
    )


# --------------------------------------------------------------------------- quantization


QUANTIZER_NAMES = {
    "int8": "int8 (the article's)",
    "binary": "binary (sign bits)",
    "pq_article": "PQ, the article's defaults",
    "pq_8x": "PQ at 8×",
    "pq_16x": "PQ at 16×",
}


QUANTIZATION_COLUMNS = {
    "bits_per_vector": "bits a vector",
    "compression_ratio": "compression ×",
    "mean_cosine_error": "cosine error",
    "reconstruction_error": "1 − cos(x, x̂)",
    "recall_at_10": "recall@10",
    "m": "PQ sub-vectors m",
}


def quantization_table(quantization: Mapping[str, object]) -> HtmlTable:
    """One row per quantizer (``quantization.quantization_study``): storage, compression, the
    pairwise cosine error, reconstruction and recall@10 against float32 (m only for PQ: "—")."""
    rows = {
        QUANTIZER_NAMES[name]: {column: quantization[name].get(key) for key, column in QUANTIZATION_COLUMNS.items()}
        for name in QUANTIZER_NAMES
    }
    return shown(pd.DataFrame.from_dict(rows, orient="index"), "quantizer")


# --------------------------------------------------------------------------- hybrid retrieval


def _by_method(hybrid: Mapping[str, object]) -> dict[str, Mapping]:
    return {
        name: by_kind
        for name, by_kind in hybrid.items()
        if isinstance(by_kind, Mapping) and "all" in by_kind and isinstance(by_kind["all"], Mapping)
    }


def hybrid_table(hybrid: Mapping[str, object]) -> HtmlTable:
    """Every method's recall and nDCG@10, per kind of query (``retrieval.hybrid_study``)."""
    rows = [
        {"method": name, "queries": kind, **{METRIC_NAMES.get(k, k): v for k, v in values.items()}}
        for name, by_kind in _by_method(hybrid).items()
        for kind, values in by_kind.items()
    ]
    return shown(pd.DataFrame(rows))


def hybrid_bars(hybrid: Mapping[str, object]) -> alt.Chart:
    """nDCG@10 per method and kind of query."""
    frame = pd.DataFrame(
        [
            {"method": name, "queries": kind, "nDCG@10": round(v["ndcg_at_10"], 4)}
            for name, h in _by_method(hybrid).items()
            for kind, v in h.items()
        ]
    )
    return grouped_bars(
        frame,
        "method",
        "nDCG@10",
        "queries",
        "nDCG@10",
        title="Dense, BM25 and fused retrieval on the judged query set",
    )
