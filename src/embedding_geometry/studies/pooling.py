"""Pooling token states into one vector, and where [CLS] looks (METHODS.md §5).

For one text of T tokens with final-depth states H ([T, D]), word ids w_t (−1 for [CLS]/[SEP]),
and a_t, the attention [CLS] pays to token t in the last layer averaged over heads ([T], Σ a_t = 1):

    mean(H)        = (1/T) Σ_t h_t                                  all tokens (METHODS.md §0)
    cls(H)         = h_0
    attention(H)   = Σ_t a_t h_t / Σ_t a_t                          the article's ``weighted_pooling``
    word_vectors   = v_w = mean of the pieces t with w_t = w          [W, D], words in order
    subword(H)     = (1/W) Σ_w v_w                                  the article's ``subword_aware_pooling``
                     (special tokens skipped, every word weighs 1 however many pieces it has)

CLS attention by position, over N texts of exactly T tokens (a^{(i)}: [T] each):

    bucket_shares  = Σ_{t ∈ B} a_t for the buckets 0–10, 11–50, 51–100, 101+ (positions 0-based)
    profile[t]     = (1/N) Σ_i a^{(i)}_t                            [T]
    power law      w_t(α) = (1 + α t)^{-1} / Σ_s (1 + α s)^{-1}     the article's curve has α = 0.1
                     and 512 positions; α is fitted to a profile by least squares, R² reported
    entropy        = mean over heads h and query rows i of  −Σ_j A_hij log A_hij / log T
                     (1 = every row uniform over the T keys)

Length bias: Spearman's ρ between ‖m‖ (unnormalised sentence vector) and its token count n,
and the R² of the averaging law ‖m‖² = a + b / n; dilution: cos(pool(key), pool(key + k others)).

Compounds that WordPiece splits ("DataForce" → data ##force): composition compares the
embedding of the compound with the mean of its parts' embeddings; stability is the mean
pairwise cosine of one word's contextual vector v_w across the sentences that use it; the
margin is mean cos(a compound's sentences) − mean cos(those, a sentence using its parts literally).

``library_checks`` asks sentence-transformers itself what it does with a model: its modules,
whether padding changes an embedding, whether embeddings have norm 1.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np
from scipy import optimize, stats

from ..core.activations import Activations, run_with_cache
from ..core.geometry import cosine_matrix, mean_pairwise_cosine, pair_cosine
from ..core.models import LoadedModel

Pooling = Literal["mean", "cls", "attention", "subword"]
POOLINGS = ("mean", "cls", "attention", "subword")

BUCKETS = ((0, 10), (11, 50), (51, 100), (101, None))
"""The article's position ranges 0–10, 11–50, 51–100 and 100+ (inclusive; 100 goes to 51–100)."""
BUCKET_LABELS = ("0–10", "11–50", "51–100", ">100")

ARTICLE_TABLE = (0.31, 0.42, 0.18, 0.09)
"""The article's "Total Attention" column for those ranges."""
ARTICLE_ALPHA, ARTICLE_POSITIONS = 0.1, 512
"""The article's code: ``attention_weight = 1 / (1 + 0.1 * position)`` for ``np.arange(512)``."""


# --------------------------------------------------------------------------- pooling one text

def attention_weighted_pool(states: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Σ_t a_t h_t / Σ_t a_t for states [T, D] and non-negative weights [T] → [D]."""
    states, weights = np.asarray(states, dtype=np.float64), np.asarray(weights, dtype=np.float64)
    if len(states) != len(weights):
        raise ValueError(f"{len(states)} token states but {len(weights)} attention weights")
    total = weights.sum()
    if total <= 0:
        raise ValueError("the attention weights sum to zero; the weighted mean is undefined")
    return weights @ states / total


def word_vectors(states: np.ndarray, word_ids: np.ndarray) -> np.ndarray:
    """v_w: the mean of each word's pieces, words in order of appearance, special tokens
    (word id −1) skipped. states [T, D], word_ids [T] → [W, D]."""
    states, word_ids = np.asarray(states, dtype=np.float64), np.asarray(word_ids)
    words = list(dict.fromkeys(int(w) for w in word_ids if w >= 0))
    if not words:
        raise ValueError("the text has no word tokens: subword-aware pooling is undefined")
    return np.stack([states[word_ids == w].mean(axis=0) for w in words])


def subword_aware_pool(states: np.ndarray, word_ids: np.ndarray) -> np.ndarray:
    """The article's ``subword_aware_pooling``: the mean over words of the mean of each word's
    pieces, special tokens skipped. states [T, D], word_ids [T] → [D]."""
    return word_vectors(states, word_ids).mean(axis=0)


# --------------------------------------------------------------------------- pooling a record

def pool(acts: Activations, method: Pooling, cls_attention: Sequence[np.ndarray] | None = None,
         depth: int = -1) -> np.ndarray:
    """One vector per text of ``acts`` at ``depth`` (default: the final one) → [N, D].
    ``attention`` needs ``cls_attention``: per text, the weights [T_i] of ``last_layer_attention``."""
    if method not in POOLINGS:
        raise ValueError(f"pooling must be one of {POOLINGS}; got {method!r}")
    if method == "mean":
        return acts.mean_pool("all")[depth]
    if method == "cls":
        return acts.cls()[depth].astype(np.float64)
    if method == "attention":
        if cls_attention is None or len(cls_attention) != acts.n_texts:
            raise ValueError("attention pooling needs one row of [CLS] attention weights per text")
        return np.stack([attention_weighted_pool(acts.token_states(depth, i, "all"), cls_attention[i])
                         for i in range(acts.n_texts)])
    return np.stack([subword_aware_pool(acts.token_states(depth, i, "all"), acts.word_ids[acts.rows(i)])
                     for i in range(acts.n_texts)])


def model_pooling(acts: Activations, mode: str) -> np.ndarray:
    """The final-depth sentence vectors a model itself makes: CLS for a "cls" pooling mode,
    else the mean of all tokens (mean-pooling models, and models without a pooling config)."""
    return pool(acts, "cls" if mode == "cls" else "mean")


# --------------------------------------------------------------------------- the last layer's attention

def last_layer_attention(loaded: LoadedModel, texts: Sequence[str], max_length: int | None = None,
                         batch_size: int = 8) -> tuple[list[np.ndarray], np.ndarray]:
    """For each text: a_t, the last layer's attention from [CLS] (query row 0) to every token,
    averaged over heads ([T_i]); and the normalised entropy of that layer's attention rows
    (mean over heads and query positions; 1 = uniform). Texts are truncated to ``max_length``
    (default: the model's limit) and batched by length; the model returns every layer's maps,
    so batches stay small (``batch_size``), and only the last layer's are kept."""
    texts = list(texts)
    max_length = max_length or loaded.info.max_seq_length
    name = f"blocks.{loaded.info.layers - 1}.attn.pattern"
    ids = loaded.tokenizer(texts, truncation=True, max_length=max_length)["input_ids"]
    if min(len(x) for x in ids) < 2:
        raise ValueError("every text needs at least two tokens for attention by position")
    order = np.argsort([-len(x) for x in ids], kind="stable")
    rows: list[np.ndarray | None] = [None] * len(texts)
    entropy = np.zeros(len(texts))
    for start in range(0, len(texts), batch_size):
        chunk = order[start:start + batch_size]
        batch = loaded.tokenizer.pad({"input_ids": [ids[i] for i in chunk]}, return_tensors="pt")
        _, cache = run_with_cache(loaded.model, {k: v.to(loaded.device) for k, v in batch.items()}, [name])
        maps = cache[name].double().numpy()  # [B, H, T, T]
        for row, i in enumerate(chunk):
            n = len(ids[i])
            attn = maps[row, :, :n, :n]
            rows[i] = attn[:, 0, :].mean(axis=0)
            entropy[i] = -(attn * np.log(np.clip(attn, 1e-30, None))).sum(-1).mean() / np.log(n)
    return rows, entropy


# --------------------------------------------------------------------------- attention by position

def bucket_shares(weights: np.ndarray, buckets: Sequence[tuple[int, int | None]] = BUCKETS) -> np.ndarray:
    """Σ of ``weights`` ([T], indexed by position) inside each inclusive (first, last) bucket
    (last None: to the end) → [len(buckets)]; positions a text does not reach add nothing."""
    weights = np.asarray(weights, dtype=np.float64)
    return np.array([weights[first:None if last is None else last + 1].sum() for first, last in buckets])


def power_law(n_positions: int, alpha: float) -> np.ndarray:
    """w_t = (1 + α t)^{-1} normalised to sum 1, t = 0..n_positions − 1 (the article's curve
    for α = 0.1, 512 positions)."""
    if n_positions < 1 or alpha < 0:
        raise ValueError(f"power law needs n_positions ≥ 1 and α ≥ 0; got {n_positions}, {alpha}")
    weights = 1.0 / (1.0 + alpha * np.arange(n_positions))
    return weights / weights.sum()


def article_code_table(n_positions: int = ARTICLE_POSITIONS, alpha: float = ARTICLE_ALPHA) -> np.ndarray:
    """The bucket shares the article's own power-law code gives → [4]."""
    return bucket_shares(power_law(n_positions, alpha))


def closest_length(table: Sequence[float] = ARTICLE_TABLE, alpha: float = ARTICLE_ALPHA,
                   lengths: Sequence[int] = range(102, 2049)) -> tuple[int, float]:
    """The sequence length whose power-law bucket shares come closest to ``table`` (least
    squares), and the root-mean-square difference there."""
    table = np.asarray(table, dtype=np.float64)
    errors = {n: float(np.sqrt(np.mean((article_code_table(n, alpha) - table) ** 2))) for n in lengths}
    best = min(errors, key=errors.get)
    return best, errors[best]


def position_profile(rows: Sequence[np.ndarray]) -> np.ndarray:
    """The mean of equal-length attention rows [T] over texts → [T]."""
    lengths = {len(r) for r in rows}
    if len(lengths) != 1:
        raise ValueError(f"position profiles need texts of one length; got lengths {sorted(lengths)}")
    return np.mean(np.stack(rows), axis=0)


def fit_power_law(profile: np.ndarray) -> dict[str, float]:
    """Least-squares α of w_t(α) for a position profile ([T], summing to 1), the R² of that fit
    (1 − SSE / SST) and Spearman's ρ between position and weight (< 0: attention decays)."""
    profile = np.asarray(profile, dtype=np.float64)
    n = len(profile)
    if n < 3 or np.ptp(profile) == 0:
        raise ValueError("fitting a decay needs a non-constant profile of at least 3 positions")
    result = optimize.minimize_scalar(lambda log_a: np.sum((power_law(n, np.exp(log_a)) - profile) ** 2),
                                      bounds=(np.log(1e-6), np.log(1e3)), method="bounded")
    sse = float(result.fun)
    sst = float(np.sum((profile - profile.mean()) ** 2))
    return {"alpha": float(np.exp(result.x)), "r2": 1.0 - sse / sst,
            "spearman": float(stats.spearmanr(np.arange(n), profile).statistic)}


def uniform_shares(n_positions: int, buckets: Sequence[tuple[int, int | None]] = BUCKETS) -> np.ndarray:
    """What each bucket would get if [CLS] attended uniformly to ``n_positions`` tokens."""
    return bucket_shares(np.full(n_positions, 1.0 / n_positions), buckets)


# --------------------------------------------------------------------------- length bias and dilution

def length_norm_relation(vectors: np.ndarray, n_tokens: np.ndarray) -> dict[str, float]:
    """How the norm of unnormalised sentence vectors ([N, D]) depends on their token counts
    ([N]): Spearman's ρ (and p) between ‖m‖ and n, and the R² of the averaging law
    ‖m‖² = a + b / n (what a mean of n independent token vectors would follow)."""
    norms = np.linalg.norm(np.asarray(vectors, dtype=np.float64), axis=1)
    n_tokens = np.asarray(n_tokens, dtype=np.float64)
    if len(norms) != len(n_tokens) or len(norms) < 3 or np.ptp(n_tokens) == 0:
        raise ValueError("the length relation needs ≥ 3 vectors with token counts that are not all equal")
    rho = stats.spearmanr(norms, n_tokens)
    fit = stats.linregress(1.0 / n_tokens, norms ** 2)
    return {"spearman": float(rho.statistic), "p_value": float(rho.pvalue), "abs_spearman": abs(float(rho.statistic)),
            "averaging_law_r2": float(fit.rvalue ** 2), "averaging_law_slope": float(fit.slope)}


def dilution_curve(key_vectors: np.ndarray, text_vectors: np.ndarray) -> np.ndarray:
    """Mean over keys of cos(key alone, key + k unrelated sentences), for each k.
    key_vectors [M, D], text_vectors [M, K + 1, D] → [K + 1]."""
    key_vectors, text_vectors = np.asarray(key_vectors), np.asarray(text_vectors)
    return pair_cosine(key_vectors[:, None, :], text_vectors).mean(axis=0)


# --------------------------------------------------------------------------- compounds

def word_index(tokenizer, text: str, word: str) -> int:
    """The tokenizer's word id of the first occurrence of ``word`` in ``text`` (any case)."""
    at = text.lower().find(word.lower())
    if at < 0:
        raise ValueError(f"'{word}' does not occur in '{text}'")
    index = tokenizer(text).char_to_word(at)
    if index is None:
        raise ValueError(f"the tokenizer maps no word to '{word}' in '{text}'")
    return int(index)


def contextual_word_vector(acts: Activations, i: int, word_id: int, depth: int = -1) -> np.ndarray:
    """v_w of word ``word_id`` in text ``i`` at ``depth``: the mean of its pieces → [D]."""
    rows = acts.rows(i)
    mask = acts.word_ids[rows] == word_id
    if not mask.any():
        raise ValueError(f"text {i} has no word {word_id}")
    return acts.hidden[depth, rows][mask].astype(np.float64).mean(axis=0)


def piece_count(acts: Activations, i: int, word_id: int) -> int:
    """How many tokens WordPiece made of word ``word_id`` in text ``i``."""
    return int(np.sum(acts.word_ids[acts.rows(i)] == word_id))


def composition(compounds: np.ndarray, parts: Sequence[np.ndarray]) -> dict[str, float | list[float]]:
    """How well the mean of the parts' embeddings stands for the compound's embedding.

    compounds [C, D]; parts: per compound an array [P_c, D] of its parts' embeddings.
    ``cosine`` per compound cos(e_c, mean of parts); ``top1``, the share of compounds whose
    parts' mean is nearer (by cosine) to its own compound than to any other; ``chance`` = 1/C."""
    compounds = np.asarray(compounds, dtype=np.float64)
    if len(compounds) != len(parts) or len(compounds) < 2:
        raise ValueError("composition needs at least 2 compounds, each with its parts")
    midpoints = np.stack([np.asarray(p, dtype=np.float64).mean(axis=0) for p in parts])
    sims = cosine_matrix(midpoints, compounds)
    return {"cosine": np.diag(sims).tolist(), "mean_cosine": float(np.mean(np.diag(sims))),
            "top1": float(np.mean(np.argmax(sims, axis=1) == np.arange(len(compounds)))),
            "chance": 1.0 / len(compounds)}


def stability(vectors: np.ndarray) -> float:
    """Mean pairwise cosine of one word's contextual vectors across its sentences ([K, D], K ≥ 2)."""
    return mean_pairwise_cosine(vectors)


def pair_margin(vectors: np.ndarray, positives: Sequence[tuple[int, int]],
                negatives: Sequence[tuple[int, int]]) -> float:
    """mean cos over ``positives`` − mean cos over ``negatives`` (pairs of row indices of ``vectors``)."""
    vectors = np.asarray(vectors, dtype=np.float64)

    def mean_cos(pairs):
        a, b = zip(*pairs)
        return float(pair_cosine(vectors[list(a)], vectors[list(b)]).mean())

    return mean_cos(positives) - mean_cos(negatives)


# --------------------------------------------------------------------------- what the library does

def library_checks(loaded: LoadedModel, texts: Sequence[str]) -> dict[str, object] | None:
    """What sentence-transformers does with ``loaded``'s own configuration, or None when the
    model has none on disk: its module pipeline, its pooling mode, the largest |‖e‖ − 1| of
    the embeddings it returns (0 when a Normalize module L2-normalises them), and the largest
    |difference| between each text encoded alone and inside one padded batch of all ``texts``
    (0 when padding is excluded from the pooling)."""
    from sentence_transformers import SentenceTransformer

    from ..core.models import locate

    directory, _ = locate(loaded.info.id)
    if directory is None or not (directory / "modules.json").is_file():
        return None
    texts = list(texts)
    if len(texts) < 2 or len({len(t) for t in texts}) < 2:
        raise ValueError("the padding check needs at least two texts of different lengths")
    pipeline = SentenceTransformer(str(directory), device=str(loaded.device))
    encode = lambda batch: np.asarray(pipeline.encode(batch, batch_size=len(texts), convert_to_numpy=True,
                                                      show_progress_bar=False), dtype=np.float64)
    together = encode(texts)
    alone = np.vstack([encode([text]) for text in texts])
    return {"modules": [type(module).__name__ for module in pipeline], "pooling_mode": loaded.info.pooling,
            "max_norm_deviation": float(np.max(np.abs(np.linalg.norm(together, axis=1) - 1.0))),
            "padding_max_abs_diff": float(np.max(np.abs(together - alone)))}


# --------------------------------------------------------------------------- the compound study

COMPOUND_FILE = "subword_compounds.yaml"


def compound_set(name: str = COMPOUND_FILE) -> dict[str, list]:
    """The compounds (compound, parts, contexts, literal) and single-token controls (word,
    contexts) of ``data/subword_compounds.yaml``."""
    from ..core.corpora import load_yaml

    data = load_yaml(name)
    return {"compounds": list(data["compounds"]), "controls": list(data["controls"])}


def compound_study(loaded: LoadedModel, data: dict[str, list], batch_size: int = 32) -> dict[str, object]:
    """Everything the chapter measures on the compounds, at the final depth.

    Per compound: its WordPiece pieces; cos(e(compound), mean of e(part)) where e is the model's
    sentence vector of the bare word; the stability of its contextual vector over its three
    sentences; and, over its four sentences (three contexts, then the literal one), the margin
    mean cos(context pairs) − mean cos(context, literal) with mean pooling and with subword-aware
    pooling. Per control word: its stability. Summaries average over items."""
    from ..core.activations import extract

    compounds, controls = data["compounds"], data["controls"]
    words = [c["compound"] for c in compounds]
    parts = [p for c in compounds for p in c["parts"]]
    bare = extract(loaded, words + parts, batch_size=batch_size, progress=False, source="compounds")
    vectors = model_pooling(bare, loaded.info.pooling)
    bounds = np.cumsum([0] + [len(c["parts"]) for c in compounds]) + len(words)
    composed = composition(vectors[:len(words)], [vectors[a:b] for a, b in zip(bounds[:-1], bounds[1:])])

    sentences = [s for c in compounds for s in [*c["contexts"], c["literal"]]]
    sentences += [s for c in controls for s in c["contexts"]]
    acts = extract(loaded, sentences, batch_size=batch_size, progress=False, source="compounds")
    mean_vectors, subword_vectors = pool(acts, "mean"), pool(acts, "subword")
    positives, negatives = [(0, 1), (0, 2), (1, 2)], [(0, 3), (1, 3), (2, 3)]
    rows, start = [], 0
    for c, cosine in zip(compounds, composed["cosine"]):
        ids = [word_index(loaded.tokenizer, s, c["compound"]) for s in c["contexts"]]
        own = range(start, start + 4)
        rows.append({
            "compound": c["compound"],
            "pieces": " ".join(loaded.tokenizer.tokenize(c["compound"])),
            "n_pieces": piece_count(acts, start, ids[0]),
            "composition_cosine": cosine,
            "stability": stability(np.stack([contextual_word_vector(acts, start + k, w) for k, w in enumerate(ids)])),
            "margin_mean_pool": pair_margin(mean_vectors[list(own)], positives, negatives),
            "margin_subword_pool": pair_margin(subword_vectors[list(own)], positives, negatives),
        })
        start += 4
    control_rows = []
    for c in controls:
        ids = [word_index(loaded.tokenizer, s, c["word"]) for s in c["contexts"]]
        control_rows.append({
            "word": c["word"], "n_pieces": piece_count(acts, start, ids[0]),
            "stability": stability(np.stack([contextual_word_vector(acts, start + k, w) for k, w in enumerate(ids)])),
        })
        start += len(c["contexts"])
    mean_of = lambda key, table: float(np.mean([r[key] for r in table]))
    return {
        "compounds": rows, "controls": control_rows,
        "split_fraction": float(np.mean([r["n_pieces"] > 1 for r in rows])),
        "composition_mean_cosine": composed["mean_cosine"], "composition_top1": composed["top1"],
        "composition_chance": composed["chance"],
        "stability_compound": mean_of("stability", rows), "stability_control": mean_of("stability", control_rows),
        "margin_mean_pool": mean_of("margin_mean_pool", rows), "margin_subword_pool": mean_of("margin_subword_pool", rows),
        "inputs": {"bare_words": words + parts, "sentences": sentences},
    }
