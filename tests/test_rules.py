"""What each chapter's computations need (its package's ``rules.NEEDS``):
every need accepts a value at its boundary, refuses the value one step past it with one line naming
the parameter, the item at fault and what is needed — before any forward pass (the tiny BERT's
tokenizer and sizes only: MiniLM's uncased WordPiece, max_seq_length 128, 160 positions, a
vocabulary of 30,522)."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from conftest import ROOT
from embedding_geometry.book import parameters, rules
from embedding_geometry.chapters.ch05_without_tears import cls_attention
from embedding_geometry.chapters.ch05_without_tears import rules as without_tears
from embedding_geometry.core.errors import ParameterError

TINY = {"device": "cpu", "batch_size": 8, "seed": 0, "trust_remote_code": False}


def values(slug: str, **changed) -> dict:
    """Chapter ``slug``'s notebook defaults with the tiny profile's common values and ``changed``."""
    defaults = rules.notebook_defaults(ROOT / "notebooks" / f"{slug}.ipynb")
    return {**defaults, **{k: v for k, v in TINY.items() if k in defaults}, **changed}


@pytest.fixture(scope="module")
def view(tiny_bert_dir):
    from embedding_geometry.core import models

    return parameters.ModelView(lambda: models.load(str(tiny_bert_dir), device="cpu"))


SENTENCES_WORDS = ("texts of at least 2 word tokens each once tokenized (within-sentence cosines pair two tokens of "
                   "a text)")
CASES = {
    # id: (chapter, accepted values, refused values, the refusal's message)
    "the issue's emoji sentence": (
        "01_layer_by_layer", {"sentences": ["The cat sat on the mat", "A dog barked", "Two words"]},
        {"sentences": ["The cat sat on the mat", "A dog barked", "🙂🙂"]},
        f"parameter 'sentences' expects {SENTENCES_WORDS}; got '🙂🙂' (text 3 of 3 has 1 word token once tokenized)"),
    "a one-token sentence": (
        "01_layer_by_layer", {"sentences": ["a b", "c d", "e f"]}, {"sentences": ["a b", "c d", "e"]},
        f"parameter 'sentences' expects {SENTENCES_WORDS}; got 'e' (text 3 of 3 has 1 word token once tokenized)"),
    "sentences read alike": (
        "01_layer_by_layer", {"sentences": ["a b", "c d", "A B C"]}, {"sentences": ["a b", "c d", " A  B "]},
        "parameter 'sentences' expects texts that differ once tokenized (a correlation over texts needs texts that "
        "differ); got ' A  B ' (text 3 of 3 reads as text 1 of 3 once tokenized)"),
    "a retrieval query of special tokens": (
        "01_layer_by_layer", {"easy_set": {"queries": ["a"], "pool": ["b", "c"], "relevant": [1]}},
        {"easy_set": {"queries": ["[SEP] [PAD]"], "pool": ["b", "c"], "relevant": [1]}},
        "parameter 'easy_set' expects texts of at least 1 word token each once tokenized (a word token to measure); "
        "got '[SEP] [PAD]' (query 1 has 0 word tokens once tokenized)"),
    "a retrieval document of special tokens": (
        "01_layer_by_layer", {"hard_set": {"queries": ["a"], "pool": ["b", "c"], "relevant": [0]}},
        {"hard_set": {"queries": ["a"], "pool": ["b", "[CLS]"], "relevant": [0]}},
        "parameter 'hard_set' expects texts of at least 1 word token each once tokenized (a word token to measure); "
        "got '[CLS]' (pool text 2 has 0 word tokens once tokenized)"),
    "an extra sentence of a zero-width space": (
        "00_the_model", {"extra_sentences": ["a"]}, {"extra_sentences": ["a", "\u200b"]},
        "parameter 'extra_sentences' expects texts of at least 1 word token each once tokenized (a word token "
        "to measure); got '\\u200b' (text 2 of 2 has 0 word tokens once tokenized)"),
    "a primer pair of special tokens": (
        "00b_primer", {"pair": ["a", "b"]}, {"pair": ["a", "[CLS] [SEP]"]},
        "parameter 'pair' expects texts of at least 1 word token each once tokenized (MaxSim matches word tokens); "
        "got '[CLS] [SEP]' (text 2 of 2 has 0 word tokens once tokenized)"),
    "an attractor pair of special tokens": (
        "02_similarity_attractor", {"pairs": {"mine": ["a", "b"]}}, {"pairs": {"mine": ["a", "[PAD]"]}},
        "parameter 'pairs' expects texts of at least 1 word token each once tokenized (MaxSim matches word tokens); "
        "got '[PAD]' (pair 'mine', sentence 2 has 0 word tokens once tokenized)"),
    "more extremes than sentences": (
        "03_inside_the_cone", {"n_texts": 3, "k_extremes": 3}, {"n_texts": 3, "k_extremes": 4},
        "parameter 'k_extremes' expects at most as many sentences as the chapter reads (n_texts); got 4 (the "
        "chapter reads 3 sentences)"),
    "more extremes than the whole corpus": (
        "03_inside_the_cone", {"n_texts": None, "k_extremes": 675}, {"n_texts": None, "k_extremes": 676},
        "parameter 'k_extremes' expects at most as many sentences as the chapter reads (n_texts); got 676 (the "
        "chapter reads 675 sentences)"),
    "a sample of sentences of one length": (
        "03_inside_the_cone", {"n_texts": 3, "k_extremes": 3, "seed": 124},
        {"n_texts": 3, "k_extremes": 3, "seed": 125},
        "parameter 'n_texts' expects a sample whose sentences differ in word-token count (Spearman's ρ of the cone "
        "axis with length needs lengths that vary); got 3 (its 3 sentences all have 14 word tokens)"),
    "more vocabulary tokens than the model has": (
        "03_inside_the_cone", {"k_vocab": 30522}, {"k_vocab": 30523},
        "parameter 'k_vocab' expects at most as many tokens as the model's vocabulary has; got 30523 (the "
        "vocabulary has 30522)"),
    "texts longer than the model's positions": (
        "04_attention_context_similarity", {"text_length": 160}, {"text_length": 161},
        "parameter 'text_length' expects at most as many tokens as the model has positions; got 161 (this model has "
        "160 positions)"),
    "head texts longer than the model's positions": (
        "08_across_models", {"head_length": 160}, {"head_length": 161},
        "parameter 'head_length' expects at most as many tokens as the model has positions; got 161 (this model has "
        "160 positions)"),
    "CLS positions beyond what the model reads": (
        "05_embeddings_without_tears", {"n_positions": 128}, {"n_positions": 129},
        "parameter 'n_positions' expects a length the model reads whole: at most its max_seq_length (None: that "
        "length, itself at least 102); got 129 (this model reads 128 tokens)"),
    "more keys than sentences": (
        "05_embeddings_without_tears", {"n_keys": 675}, {"n_keys": 676},
        "parameter 'n_keys' expects at most as many key sentences as the corpus has; got 676 (the corpus has 675 "
        "sentences)"),
    "more fillers than other topics hold": (
        "05_embeddings_without_tears", {"k_max": 623}, {"k_max": 624},
        "parameter 'k_max' expects at most as many fillers as the corpus has sentences outside its largest topic (a "
        "key's fillers come from other topics); got 624 (623 sentences lie outside the largest topic)"),
    "a held-out split without a judged query": (
        "05_embeddings_without_tears", {"fit_fraction": 0.94, "seed": 554}, {"fit_fraction": 0.95, "seed": 554},
        "parameter 'fit_fraction' expects a split of the corpus (with seed, and with seed 1 for the exercise) that "
        "leaves a judged query a relevant held-out sentence, and each topic domain of the transfer test 2 sentences to "
        "fit and to hold out; got 0.95 (with seed 554, no judged query has a relevant sentence in the held-out split)"),
    "more long documents than the corpus gives": (
        "06_search_in_practice", {"n_long_docs": 12, "long_words": 600}, {"n_long_docs": 13, "long_words": 600},
        "parameter 'n_long_docs' expects at most as many documents as the shuffled corpus gives of long_words words, "
        "and of 300 (the exercise's); got 13 (the corpus gives 12 documents of ≥ 600 words)"),
    "more long documents than the exercise's length gives": (
        "06_search_in_practice", {"n_long_docs": 24, "long_words": 2}, {"n_long_docs": 25, "long_words": 2},
        "parameter 'n_long_docs' expects at most as many documents as the shuffled corpus gives of long_words words, "
        "and of 300 (the exercise's); got 25 (the corpus gives 24 documents of ≥ 300 words)"),
}


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_a_need_accepts_its_boundary_and_refuses_one_step_past_it_in_one_line(view, case):
    slug, good, bad, message = CASES[case]
    assert rules.check(slug, values(slug, **good), view)
    with pytest.raises(ParameterError) as error:
        rules.check(slug, values(slug, **bad), view)
    assert str(error.value) == message
    assert error.value._render_traceback_() == [f"ParameterError: {message}"]


def test_a_rank_correlation_needs_three_sentences():
    """Found by the chapter fuzz: chapter 3 with n_texts 2 failed inside a cell (Spearman's ρ of
    two values)."""
    assert rules.check("03_inside_the_cone", values("03_inside_the_cone", n_texts=3, k_extremes=1))
    with pytest.raises(ParameterError, match=r"^parameter 'n_texts' expects None or an integer ≥ 3; got 2$"):
        rules.check("03_inside_the_cone", values("03_inside_the_cone", n_texts=2, k_extremes=1))


def test_a_model_that_reads_fewer_tokens_than_every_bucket_needs_refuses_the_default():
    short = SimpleNamespace(max_length=101)
    with pytest.raises(ParameterError, match=r"parameter 'n_positions' expects .+; got None \(this model reads 101 "):
        rules.check("05_embeddings_without_tears", values("05_embeddings_without_tears"), short)
    assert without_tears.CLS_POSITIONS == cls_attention.MIN_POSITIONS


def test_needs_that_do_not_read_the_model_are_checked_without_one():
    """What the build checks before any chapter runs: the rules, and the needs with no model."""
    with pytest.raises(ParameterError, match="'k_extremes'"):
        rules.check("03_inside_the_cone", values("03_inside_the_cone", n_texts=3, k_extremes=4))
    emoji = values("01_layer_by_layer", sentences=["a b", "c d", "🙂🙂"])
    assert rules.check("01_layer_by_layer", emoji)["sentences"] == ["a b", "c d", "🙂🙂"]  # the tokenizer decides


def test_the_defaults_of_every_chapter_meet_every_need(view):
    for slug in rules.chapters():
        defaults = values(slug)
        checked = rules.check(slug, defaults, view if "model" in defaults else None)
        assert checked.keys() == defaults.keys()


def test_every_need_names_a_parameter_of_its_chapter_and_says_what_it_needs():
    for slug, needs in ((slug, rules.needs_for(slug)) for slug in rules.chapters()):
        for need in needs:
            assert need.name in rules.rules_for(slug), (slug, need.name)
            assert need.expects and need.expects in rules.expects(slug, need.name)


def test_the_page_states_each_need_beside_the_rule(monkeypatch):
    from embedding_geometry.book import pages

    monkeypatch.chdir(ROOT)
    table = pages.parameter_table("01_layer_by_layer").set_index("parameter")["expects"]
    assert table["sentences"] == (f"None or a list of at least 3 non-empty, distinct strings; {SENTENCES_WORDS}; "
                                  "texts that differ once tokenized (a correlation over texts needs texts that differ)")
    assert table["easy_k"] == "an integer ≥ 1"


def test_the_build_checks_the_needs_that_do_not_read_the_model_before_any_chapter_runs(tmp_path):
    slug = "03_inside_the_cone"
    defaults = rules.notebook_defaults(ROOT / "notebooks" / f"{slug}.ipynb")
    assert defaults["n_texts"] == 300 and defaults["k_extremes"] == 5 and defaults["corpus"] == "project"
    fine = rules.Profile(tmp_path / "p.yaml", {"seed": 1}, {slug: {"n_texts": 3, "k_extremes": 3}})
    assert rules.chapter_parameters(slug, fine, defaults) == {"seed": 1, "n_texts": 3, "k_extremes": 3}
    short = rules.Profile(tmp_path / "p.yaml", {}, {slug: {"n_texts": 3}})  # k_extremes keeps its default, 5
    with pytest.raises(ParameterError, match=r"^parameter 'k_extremes' expects at most as many sentences .+; got 5 "):
        rules.chapter_parameters(slug, short, defaults)
    assert rules.chapter_parameters(slug, short) == {"n_texts": 3}  # without the defaults: the rules alone


# --------------------------------------------------------------------------- chapter 8's corpus and results

ACROSS = "08_across_models"


def refused(slug: str, view=None, **changed) -> str:
    """The one-line message of the ParameterError that chapter ``slug``'s values with ``changed`` raise."""
    with pytest.raises(ParameterError) as error:
        rules.check(slug, values(slug, **changed), view)
    assert len(str(error.value).splitlines()) == 1 and error.value._render_traceback_()[0].startswith("Param")
    return str(error.value)


def test_a_corpus_file_is_checked_before_any_model_runs(tmp_path, view):
    texts = tmp_path / "corpus.txt"
    texts.write_text("the first text\nthe second text\n\nthe third text\n", encoding="utf-8")
    assert rules.check(ACROSS, values(ACROSS, corpus=str(texts), corpus_texts=3), view)["corpus"] == str(texts)
    assert refused(ACROSS, corpus=str(texts), corpus_texts=4) == (
        "parameter 'corpus_texts' expects at most as many texts as the corpus holds (chapter 3's: 675); got 4 (the "
        "corpus holds 3 texts)")
    assert refused(ACROSS, corpus=None, corpus_texts=676).endswith("got 676 (the corpus holds 675 texts)")
    missing = refused(ACROSS, corpus=str(tmp_path / "missing.txt"))
    assert missing.startswith("parameter 'corpus' expects None (chapter 3's corpus)") and "(no such file)" in missing
    (tmp_path / "empty.txt").write_text("")
    assert refused(ACROSS, corpus=str(tmp_path / "empty.txt")).endswith("(it holds 0 texts)")
    (tmp_path / "bytes.txt").write_bytes(b"a text\n\xff\xfe\n")
    assert refused(ACROSS, corpus=str(tmp_path / "bytes.txt")).endswith("(line 2 is not UTF-8)")
    (tmp_path / "c.jsonl").write_text('{"body": "a text"}\n{"body": "another text"}\n')
    assert refused(ACROSS, corpus=str(tmp_path / "c.jsonl")).startswith("parameter 'corpus_column' expects a column")
    body = values(ACROSS, corpus=str(tmp_path / "c.jsonl"), corpus_column="body", corpus_texts=None)
    assert rules.check(ACROSS, body)["corpus_column"] == "body"


def test_a_corpus_text_the_tokenizer_leaves_one_word_token_is_refused_with_its_place(tmp_path, view):
    texts = tmp_path / "corpus.txt"
    texts.write_text("the first text\nthe second text\n[CLS] alone\n", encoding="utf-8")
    assert rules.check(ACROSS, values(ACROSS, corpus=str(texts), corpus_texts=2), view)
    assert refused(ACROSS, view, corpus=str(texts), corpus_texts=None) == (
        "parameter 'corpus' expects texts of at least 2 word tokens each once tokenized (within-sentence cosines "
        "pair two tokens of a text); got '[CLS] alone' (text 3 of 3 has 1 word token once tokenized)")


def test_atlas_results_without_the_chapters_model_are_refused_before_any_model_runs(tmp_path):
    """Found by an audit: a folder of another run's results without ``model`` failed in cell 9 (KeyError)."""
    model = values(ACROSS)["model"]
    (tmp_path / "org_a.json").write_text(json.dumps({"chapter": "atlas", "model": {"id": "org/a"}}))
    (tmp_path / "notes.json").write_text(json.dumps({"chapter": "99_claims_dashboard"}))
    message = refused(ACROSS, atlas_results=str(tmp_path))
    assert message.startswith("parameter 'atlas_results' expects None, or the --out folder of an atlas run that "
                              "measured the chapter's model; got '")
    assert message.endswith(f"(its results are of org/a, none of model {model!r})")
    assert refused(ACROSS, atlas_results=str(tmp_path / "nowhere")).endswith("(no such folder)")
    (tmp_path / "mine.json").write_text(json.dumps({"chapter": "atlas", "model": {"id": model}}))
    assert rules.check(ACROSS, values(ACROSS, atlas_results=str(tmp_path)))["atlas_results"] == str(tmp_path)
