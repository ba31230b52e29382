"""Compounds that WordPiece splits ("DataForce" → data ##force), and the article's subword fix.

The compound set (``data/subword_compounds.yaml``) holds C compounds, each with its parts, three
sentences that use it in one meaning ("contexts") and one that uses its parts literally, and
single-token control words in three sentences each. With e(x) the model's sentence vector of
the bare word x and v_w(s) the contextual vector of word w in sentence s (the mean of its
pieces at the final depth, ``pooling.word_vectors``):

    composition cosine  = cos(e(compound), mean_p e(part_p))             per compound
    composition top1    = share of compounds whose parts' mean is nearer (cosine) to its own
                          compound's e than to any other compound's;  chance = 1 / C
    stability           = mean pairwise cosine of v_w(s) over the word's sentences
    margin              = mean cos(context pairs) − mean cos(context, literal sentence), over the
                          compound's four sentence vectors (mean pooling, or subword-aware pooling)

Metrics: ``subword_study`` → subword {compounds: per compound {compound, pieces, n_pieces,
composition_cosine, stability, margin_mean_pool, margin_subword_pool}, controls: per word {word,
n_pieces, stability}, split_fraction, composition_mean_cosine, composition_top1,
composition_chance, stability_compound, stability_control, margin_mean_pool,
margin_subword_pool (means over compounds), stability_gap = stability_control −
stability_compound, confused_fraction = share of compounds with margin_mean_pool < 0,
margin_gain = margin_subword_pool − margin_mean_pool}; per_unit: per compound (C values, their
mean the metric) "subword.composition_mean_cosine" (its cosine), ".composition_top1" (1 when its
parts' mean is nearest its own compound), ".stability_gap" (stability_control − its stability:
the control words' mean is held fixed), ".confused_fraction" (1 when its mean-pooling margin
is < 0) and ".margin_gain" (its subword-aware minus its mean-pooling margin: paired).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ...core.activations import Activations
from ...core.corpora import load_yaml
from ...core.geometry import cosine_matrix, mean_pairwise_cosine, pair_cosine
from ...studies.pooling import model_pooling, pool

COMPOUND_FILE = "subword_compounds.yaml"
POSITIVES, NEGATIVES = [(0, 1), (0, 2), (1, 2)], [(0, 3), (1, 3), (2, 3)]
"""Pairs among a compound's four sentences (three contexts, then the literal one)."""


def compound_set(name: str = COMPOUND_FILE) -> dict[str, list]:
    """The compounds (compound, parts, contexts, literal) and single-token controls (word,
    contexts) of ``data/subword_compounds.yaml``."""
    data = load_yaml(name)
    return {"compounds": list(data["compounds"]), "controls": list(data["controls"])}


def compound_texts(data: dict[str, list]) -> dict[str, list[str]]:
    """What the study encodes: ``bare_words`` (the compounds, then every part, in order) and
    ``sentences`` (per compound its three contexts and its literal sentence, then each control
    word's contexts)."""
    compounds = data["compounds"]
    bare = [c["compound"] for c in compounds] + [p for c in compounds for p in c["parts"]]
    sentences = [s for c in compounds for s in [*c["contexts"], c["literal"]]]
    return {"bare_words": bare, "sentences": sentences + [s for c in data["controls"] for s in c["contexts"]]}


# --------------------------------------------------------------------------- measurements


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
    ``cosine`` per compound cos(e_c, mean of parts); ``hits`` per compound 1.0 when its parts'
    mean is nearer (by cosine) to its own compound than to any other, ``top1`` their mean;
    ``chance`` = 1/C."""
    compounds = np.asarray(compounds, dtype=np.float64)
    if len(compounds) != len(parts) or len(compounds) < 2:
        raise ValueError("composition needs at least 2 compounds, each with its parts")
    midpoints = np.stack([np.asarray(p, dtype=np.float64).mean(axis=0) for p in parts])
    sims = cosine_matrix(midpoints, compounds)
    hits = (np.argmax(sims, axis=1) == np.arange(len(compounds))).astype(np.float64)
    return {
        "cosine": np.diag(sims).tolist(),
        "mean_cosine": float(np.mean(np.diag(sims))),
        "hits": hits.tolist(),
        "top1": float(np.mean(hits)),
        "chance": 1.0 / len(compounds),
    }


def stability(vectors: np.ndarray) -> float:
    """Mean pairwise cosine of one word's contextual vectors across its sentences ([K, D], K ≥ 2)."""
    return mean_pairwise_cosine(vectors)


def pair_margin(
    vectors: np.ndarray, positives: Sequence[tuple[int, int]], negatives: Sequence[tuple[int, int]]
) -> float:
    """mean cos over ``positives`` − mean cos over ``negatives`` (pairs of row indices of ``vectors``)."""
    vectors = np.asarray(vectors, dtype=np.float64)

    def mean_cos(pairs):
        a, b = zip(*pairs)
        return float(pair_cosine(vectors[list(a)], vectors[list(b)]).mean())

    return mean_cos(positives) - mean_cos(negatives)


def _word_stability(acts: Activations, tokenizer, start: int, contexts: Sequence[str], word: str) -> tuple[float, int]:
    """Stability of ``word`` over its sentences (texts start, start + 1, … of ``acts``), and
    how many pieces it has in the first."""
    ids = [word_index(tokenizer, s, word) for s in contexts]
    vectors = np.stack([contextual_word_vector(acts, start + k, w) for k, w in enumerate(ids)])
    return stability(vectors), piece_count(acts, start, ids[0])


# --------------------------------------------------------------------------- the study


def subword_study(
    data: dict[str, list], bare: Activations, uses: Activations, tokenizer, pooling_mode: str
) -> dict[str, object]:
    """{subword, per_unit} (see the module docstring) from the records of ``compound_texts(data)``:
    ``bare`` of its bare words, ``uses`` of its sentences; ``pooling_mode`` is the model's."""
    compounds, controls = data["compounds"], data["controls"]
    vectors = model_pooling(bare, pooling_mode)
    bounds = np.cumsum([0] + [len(c["parts"]) for c in compounds]) + len(compounds)
    composed = composition(vectors[: len(compounds)], [vectors[a:b] for a, b in zip(bounds[:-1], bounds[1:])])
    mean_vectors, subword_vectors = pool(uses, "mean"), pool(uses, "subword")
    rows = []
    for n, (c, cosine) in enumerate(zip(compounds, composed["cosine"])):
        own = list(range(4 * n, 4 * n + 4))
        stable, pieces = _word_stability(uses, tokenizer, 4 * n, c["contexts"], c["compound"])
        rows.append(
            {
                "compound": c["compound"],
                "pieces": " ".join(tokenizer.tokenize(c["compound"])),
                "n_pieces": pieces,
                "composition_cosine": cosine,
                "stability": stable,
                "margin_mean_pool": pair_margin(mean_vectors[own], POSITIVES, NEGATIVES),
                "margin_subword_pool": pair_margin(subword_vectors[own], POSITIVES, NEGATIVES),
            }
        )
    control_rows, start = [], 4 * len(compounds)
    for c in controls:
        stable, pieces = _word_stability(uses, tokenizer, start, c["contexts"], c["word"])
        control_rows.append({"word": c["word"], "n_pieces": pieces, "stability": stable})
        start += len(c["contexts"])

    def mean_of(key: str, table: list[dict]) -> float:
        return float(np.mean([r[key] for r in table]))

    found = {
        "compounds": rows,
        "controls": control_rows,
        "split_fraction": float(np.mean([r["n_pieces"] > 1 for r in rows])),
        "composition_mean_cosine": composed["mean_cosine"],
        "composition_top1": composed["top1"],
        "composition_chance": composed["chance"],
        "stability_compound": mean_of("stability", rows),
        "stability_control": mean_of("stability", control_rows),
        "margin_mean_pool": mean_of("margin_mean_pool", rows),
        "margin_subword_pool": mean_of("margin_subword_pool", rows),
    }

    def column(key: str) -> np.ndarray:
        return np.array([r[key] for r in rows], dtype=np.float64)

    per_unit = {
        "subword.composition_mean_cosine": column("composition_cosine"),
        "subword.composition_top1": np.asarray(composed["hits"]),
        "subword.stability_gap": found["stability_control"] - column("stability"),
        "subword.confused_fraction": (column("margin_mean_pool") < 0).astype(np.float64),
        "subword.margin_gain": column("margin_subword_pool") - column("margin_mean_pool"),
    }
    return {
        "subword": {
            **found,
            "stability_gap": found["stability_control"] - found["stability_compound"],
            "confused_fraction": float(np.mean([r["margin_mean_pool"] < 0 for r in rows])),
            "margin_gain": found["margin_subword_pool"] - found["margin_mean_pool"],
        },
        "per_unit": per_unit,
    }
