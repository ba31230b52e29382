"""What chapter 8 and the atlas need of their corpus and of another run's results, checked before
any model runs (chapter 8's rules, ``rules`` beside this module, list them among its needs; the
page's parameter table states each beside its rule):

- ``corpus`` opens (``core.text_sources``: the file exists, decodes as UTF-8, holds at least two
  texts, has ``corpus_column``; a hub dataset loads);
- ``corpus_texts`` asks for no more texts than the corpus holds;
- each of the corpus's texts keeps at least two word tokens under every trained model's
  tokenizer (its within-sentence cosine pairs two of them; read in runs, so a large corpus is
  never held whole);
- ``atlas_results``, when set, holds the results of the chapter's ``model`` (the chapter reads
  its sets' sizes from them).
"""

from __future__ import annotations

from pathlib import Path

from ...book import parameters as p
from ...book.results import atlas_documents
from ...core import corpora, text_sources

CHECKED_AT_ONCE = 4096
"""Texts of a corpus tokenized at a time when their word tokens are counted."""


@p.need("corpus", text_sources.EXPECTS)
def _corpus_opens(values):
    """The corpus opens (``core.text_sources`` names a fault in one line itself)."""
    text_sources.of_parameters(values)


@p.need("corpus_texts", f"at most as many texts as the corpus holds (chapter 3's: {corpora.CORPUS_SIZE})")
def _texts_within_corpus(values):
    asked, source = values["corpus_texts"], text_sources.of_parameters(values)
    found = corpora.CORPUS_SIZE if source is None else source.n_texts
    return None if asked is None or asked <= found else (asked, f"the corpus holds {found} texts")


@p.need("corpus", "texts of at least 2 word tokens each once tokenized (within-sentence cosines pair two tokens of a "
        "text)", model=True)
def _corpus_words(values, view):
    source = text_sources.of_parameters(values)
    for start in range(0, source.n_texts if source else 0, CHECKED_AT_ONCE):
        texts = source.texts(start, start + CHECKED_AT_ONCE)
        for i, (text, n) in enumerate(zip(texts, view.word_counts(texts)), start + 1):
            if n < 2:
                return text, f"text {i} of {source.n_texts} has {n} word token{'' if n == 1 else 's'} once tokenized"
    return None


@p.need("atlas_results", "None, or the --out folder of an atlas run that measured the chapter's model")
def _results_hold_model(values):
    folder = values["atlas_results"]
    if folder is None:
        return None
    if not Path(folder).is_dir():
        return folder, "no such folder"
    ids = [document["model"]["id"] for document in atlas_documents(folder).values()]
    if values["model"] in ids:
        return None
    held = f"its results are of {', '.join(ids[:3])}{', …' if len(ids) > 3 else ''}" if ids else "it holds no results"
    return folder, f"{held}, none of model {values['model']!r}"


NEEDS = (_corpus_opens, _texts_within_corpus, _corpus_words, _results_hold_model)
"""Chapter 8's needs of its corpus and results, in the order they are checked."""
