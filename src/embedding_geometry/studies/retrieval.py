"""Chapter 5's search: lexical (BM25), fused (reciprocal-rank fusion), reranked and graded (nDCG)
rankings of the judged corpus queries, on top of :mod:`..core.ranking` (pessimistic ranks, recall@k).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..core.corpora import corpus
from ..core.corpora import load_yaml
from ..core.errors import ModelUnavailableError
from ..core.geometry import cosine_matrix
from ..core.ranking import Relevant, ranks, recall_at_k


# --------------------------------------------------------------------------- lexical, fused, graded (chapter 5)
#
#   bm25[q, p]    = Σ_{t ∈ q} idf_t · tf / (tf + k1 (1 − b + b |p| / avgdl)),
#                   idf_t = ln(1 + (P − df_t + 0.5) / (df_t + 0.5))        Lucene's BM25 (bm25s),
#                   k1 = 1.5, b = 0.75, on lower-cased word tokens, English stopwords removed,
#                   Snowball-stemmed                                                     → [Q, P]
#   crank[q, p]   = 1 + #{p' : scores[q, p'] > scores[q, p]}   (ties share the best rank)
#   rrf[q, p]     = Σ_r 1 / (k + crank_r[q, p]),  k = 60       reciprocal-rank fusion of R rankings
#   nDCG@k        = mean_q DCG_q / IDCG_q,  DCG_q = Σ_{p ∈ R_q, rank ≤ k} 1 / log2(1 + rank_q(p)),
#                   IDCG_q = Σ_{i=1}^{min(|R_q|, k)} 1 / log2(1 + i)   (binary gains, pessimistic ranks)
#   rerank        the top ``depth`` candidates of a ranking reordered by a cross-encoder's scores,
#                 the rest kept in their order below them
#
#   Metrics: ``hybrid_study`` → hybrid_retrieval {dense, bm25, rrf (and "dense + rerank" with a
#   reranker): summary_by_kind {all, keyword, paraphrase: recall@1/5/10, nDCG@10}, rrf_minus_dense
#   {all, keyword, paraphrase: nDCG@10 of rrf − dense}, rerank_minus_dense (all queries; None
#   without a reranker)}; per_unit {"hybrid_retrieval.rrf_minus_dense.<kind>": the paired
#   per-query differences [Q_kind] (``paired_ndcg``), "hybrid_retrieval.rerank_minus_dense" [Q]}

RRF_K = 60
"""The constant of reciprocal-rank fusion (Cormack, Clarke and Büttcher, 2009)."""


def competition_ranks(scores: np.ndarray) -> np.ndarray:
    """1-based ranks of every candidate, ties sharing the best rank ("1224"): [Q, P] → [Q, P]."""
    scores = np.asarray(scores, dtype=np.float64)
    return np.stack([np.searchsorted(np.sort(-row), -row, side="left") + 1 for row in scores])


def bm25_scores(queries: Sequence[str], documents: Sequence[str], k1: float = 1.5, b: float = 0.75) -> np.ndarray:
    """BM25 score of every document for every query with bm25s (see above) → [Q, P]."""
    import bm25s
    import snowballstemmer

    stemmer = snowballstemmer.stemmer("english")
    tokens = bm25s.tokenize(list(documents), stopwords="en", stemmer=stemmer, show_progress=False)
    index = bm25s.BM25(k1=k1, b=b)
    index.index(tokens, show_progress=False)
    query_tokens = bm25s.tokenize(list(queries), stopwords="en", stemmer=stemmer, return_ids=False,
                                  show_progress=False)
    return np.stack([index.get_scores(q) for q in query_tokens]).astype(np.float64)


def reciprocal_rank_fusion(rankings: Sequence[np.ndarray], k: int = RRF_K) -> np.ndarray:
    """Σ_r 1 / (k + crank_r) over score matrices of the same shape [Q, P] → [Q, P]."""
    if not rankings:
        raise ValueError("reciprocal-rank fusion needs at least one ranking")
    if k < 0:
        raise ValueError(f"the RRF constant k must be ≥ 0; got {k}")
    shapes = {np.shape(r) for r in rankings}
    if len(shapes) != 1:
        raise ValueError(f"rankings to fuse must share one shape; got {sorted(shapes)}")
    return sum(1.0 / (k + competition_ranks(r)) for r in rankings)


def ndcg_per_query(scores: np.ndarray, relevant: Relevant, k: int = 10) -> np.ndarray:
    """DCG@k / IDCG@k of each query, binary gains and pessimistic ranks → [Q]."""
    if k < 1:
        raise ValueError(f"k must be at least 1; got {k}")
    values = []
    for query in ranks(scores, relevant):
        dcg = sum(1.0 / np.log2(1 + r) for r in query if r <= k)
        ideal = sum(1.0 / np.log2(1 + i) for i in range(1, min(len(query), k) + 1))
        values.append(dcg / ideal)
    return np.array(values, dtype=np.float64)


def ndcg_at_k(scores: np.ndarray, relevant: Relevant, k: int = 10) -> float:
    """Mean over queries of DCG@k / IDCG@k (:func:`ndcg_per_query`)."""
    return float(np.mean(ndcg_per_query(scores, relevant, k)))


def paired_ndcg(scores: np.ndarray, baseline: np.ndarray, relevant: Relevant, k: int = 10) -> np.ndarray:
    """Per query, nDCG@k of ``scores`` minus nDCG@k of ``baseline`` (the same queries and pool)
    → [Q]: the paired differences whose mean is the difference of the two nDCG@k."""
    return ndcg_per_query(scores, relevant, k) - ndcg_per_query(baseline, relevant, k)


def rerank(queries: Sequence[str], documents: Sequence[str], scores: np.ndarray, predict,
           depth: int = 100) -> np.ndarray:
    """Reorder each query's top ``depth`` candidates (by ``scores``, [Q, P]) by
    ``predict([(query, document), ...])``, a cross-encoder's relevance scores; the rest follow in
    their original order. Returns scores (−position in the new order) → [Q, P]."""
    scores = np.asarray(scores, dtype=np.float64)
    if depth < 1:
        raise ValueError(f"rerank depth must be ≥ 1; got {depth}")
    new = np.empty_like(scores)
    for q, row in enumerate(scores):
        order = np.argsort(-row, kind="stable")
        top = order[:depth]
        judged = np.asarray(predict([(queries[q], documents[p]) for p in top]), dtype=np.float64)
        reordered = np.concatenate([top[np.argsort(-judged, kind="stable")], order[depth:]])
        new[q, reordered] = -np.arange(len(reordered), dtype=np.float64)
    return new


def cross_encoder(model: str, device: str = "cpu"):
    """A sentence-transformers CrossEncoder (hub id or local directory) as a ``predict``
    function for ``rerank``; a model that cannot be loaded offline is a one-line error."""
    from sentence_transformers import CrossEncoder

    from ..core.models import locate  # loads torch: chapter 5's rules read this module without a model

    locate(model)  # a local path that is not a model directory: a one-line error before loading
    try:
        encoder = CrossEncoder(model, device=device)
    except OSError as error:
        raise ModelUnavailableError(
            f"cross-encoder '{model}' is not available offline: pass a local model directory, or run once "
            f"with internet access (huggingface-cli download {model})") from error
    return lambda pairs: np.asarray(encoder.predict(list(pairs), show_progress_bar=False), dtype=np.float64)


QUERY_FILE = "corpus_queries.yaml"


def corpus_queries(sentences: Sequence[str], name: str = QUERY_FILE) -> dict[str, list]:
    """The judged query set over the project corpus (``data/corpus_queries.yaml``): queries,
    their kinds (keyword or paraphrase), topics, and for each the indices in ``sentences`` of its
    relevant documents. A relevant sentence missing from ``sentences`` is a ValueError."""
    position = {s: i for i, s in enumerate(sentences)}
    out: dict[str, list] = {"queries": [], "kinds": [], "topics": [], "relevant": []}
    for item in load_yaml(name)["queries"]:
        missing = [s for s in item["relevant"] if s not in position]
        if missing:
            raise ValueError(f"query '{item['query']}': relevant sentence not in the corpus: '{missing[0]}'")
        out["queries"].append(item["query"])
        out["kinds"].append(item["kind"])
        out["topics"].append(item["topic"])
        out["relevant"].append([position[s] for s in item["relevant"]])
    return out


def summary(scores: np.ndarray, relevant: Relevant, ks: Sequence[int] = (1, 5, 10),
            ndcg_k: int = 10) -> dict[str, float]:
    """recall@k for each k in ``ks`` and nDCG@``ndcg_k`` of one ranking."""
    values = {f"recall_at_{k}": recall_at_k(scores, relevant, k) for k in ks}
    return {**values, f"ndcg_at_{ndcg_k}": ndcg_at_k(scores, relevant, ndcg_k)}


def summary_by_kind(scores: np.ndarray, relevant: Relevant, kinds: Sequence[str], ks: Sequence[int] = (1, 5, 10),
                    ndcg_k: int = 10) -> dict[str, dict[str, float]]:
    """``summary`` over all queries ("all") and over the queries of each kind."""
    scores, kinds = np.asarray(scores), np.asarray(kinds)
    out = {"all": summary(scores, relevant, ks, ndcg_k)}
    for kind in dict.fromkeys(kinds.tolist()):
        rows = np.flatnonzero(kinds == kind)
        out[kind] = summary(scores[rows], [relevant[i] for i in rows], ks, ndcg_k)
    return out


def hybrid_study(queries: dict[str, list], documents: Sequence[str], document_vectors: np.ndarray,
                 query_vectors: np.ndarray, judge=None, depth: int = 100) -> dict[str, object]:
    """{hybrid_retrieval, per_unit} (see the comment above RRF_K): dense (cosine of the vectors),
    BM25 and their fusion, and, with a ``judge`` (``cross_encoder``), the dense ranking reranked
    to ``depth``, for ``queries`` (``corpus_queries``) over ``documents``."""
    ranked = {"dense": cosine_matrix(query_vectors, document_vectors),
              "bm25": bm25_scores(queries["queries"], documents)}
    ranked["rrf"] = reciprocal_rank_fusion([ranked["dense"], ranked["bm25"]])
    if judge is not None:
        ranked["dense + rerank"] = rerank(queries["queries"], documents, ranked["dense"], judge, depth)
    relevant, kinds = queries["relevant"], np.asarray(queries["kinds"])
    found = {name: summary_by_kind(s, relevant, kinds) for name, s in ranked.items()}
    ndcg = {name: {kind: v["ndcg_at_10"] for kind, v in by_kind.items()} for name, by_kind in found.items()}
    rerank_gain = ndcg["dense + rerank"]["all"] - ndcg["dense"]["all"] if judge is not None else None
    fused = paired_ndcg(ranked["rrf"], ranked["dense"], relevant)
    per_unit = {f"hybrid_retrieval.rrf_minus_dense.{kind}": fused if kind == "all" else fused[kinds == kind]
                for kind in ndcg["dense"]}
    if judge is not None:
        per_unit["hybrid_retrieval.rerank_minus_dense"] = paired_ndcg(ranked["dense + rerank"], ranked["dense"],
                                                                      relevant)
    return {"hybrid_retrieval": {**found,
                                 "rrf_minus_dense": {k: ndcg["rrf"][k] - ndcg["dense"][k] for k in ndcg["dense"]},
                                 "rerank_minus_dense": rerank_gain}, "per_unit": per_unit}


def judged_corpus() -> tuple[list[str], list[str], dict[str, list]]:
    """The book's corpus as chapters 5 and 6 search it: its sentences, their topics, and the
    judged queries written against them (:func:`corpus_queries`)."""
    frame = corpus()
    sentences = frame["sentence"].tolist()
    return sentences, frame["topic"].tolist(), corpus_queries(sentences)
