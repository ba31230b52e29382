"""The claims dashboard: one row per claim and model, counts that keep the book's two questions
apart and count each published claim once."""

import json
import re

import pytest

from embedding_geometry.book import dashboard


def result(chapter, claims, by_model=None):
    return {"chapter": chapter, "model": {"id": "m", "sha256": "abc", "layers": 3, "hidden": 40},
            "params": {"seed": 0}, "inputs": {}, "metrics": {"verdicts_by_model": by_model or {}}, "claims": claims,
            "environment": {"python": "3.11", "torch": "2", "transformers": "5", "device": "cpu", "seconds": 1.5}}


def claim(id, verdict, model="org/minilm", kind="published", home=None, published=None, **fields):
    """A claim record as a results JSON stores it (claims.Verdict.record)."""
    outcome = verdict if verdict in ("holds", "does not hold", "inconclusive") else None
    status = None if outcome else verdict  # the reason a claim is not tested
    return {"id": id, "kind": kind, "home": home, "statement": f"claim {id}", "source": "seed 001",
            "published": published, "measured": 0.5, "model": model, "numeric_verdict": None,
            "verdict": outcome or "not tested", "status": status, "outcome": outcome, "reason": None, "depth": None,
            "interval": [0.4, 0.6] if outcome else None, "p": 0.001 if outcome else None,
            "p_adjusted": 0.02 if outcome else None,
            "interval_method": "bootstrap (BCa)" if outcome else None, "n_units": 24, "unit": "sentences",
            "null": None, "shape": None, "test": "> 0" if outcome else None, "fragile": None, "sensitivity": None,
            "statistic": {"value": 0.5, "interval": [0.4, 0.6]} if outcome else None,
            "counted": bool(outcome) and kind == "published" and home is None, **fields}


MXBAI = {"value": 0.9, "model": "org/mxbai"}


@pytest.fixture
def results(tmp_path):
    flip = {"bound": "fraction", "fraction": 0.5, "holds_below": 0.7, "fails_from": 0.9}
    one = [claim("peak", "holds", published=MXBAI, sensitivity=flip), claim("gap", "does not hold"),
           claim("rise", "inconclusive"), claim("start", "by construction"),
           claim("own", "holds", kind="hypothesis"), claim("check", "holds", kind="pipeline"),
           claim("size", "descriptive", published={"value": 1.0, "model": "org/minilm"},
                 numeric_verdict="not reproduced")]
    mpnet = [claim("peak", "does not hold", model="org/mpnet"), claim("gap", "descriptive", model="org/mpnet")]
    eight = [claim("peak", "holds", model="org/mpnet", home="01_a")]
    (tmp_path / "01_a.json").write_text(json.dumps(result("01_a", one + mpnet)))
    (tmp_path / "08_b.json").write_text(json.dumps(result("08_b", eight, {"org/minilm": [
        claim("peak", "holds", home="01_a")]})))
    (tmp_path / ".03_c-unfinished.json").write_text("{")  # a write in progress is not read
    return tmp_path


def test_one_row_per_claim_and_model_with_its_test_and_result(results):
    frame = dashboard.claims_frame(results)
    assert len(frame) == 11 and frame["chapter"].tolist().count("08_b") == 2
    assert frame.loc[0, "result"] == "> 0: 0.5 [0.4, 0.6]"
    assert frame.loc[0, "p"] == "p = 0.001 (bootstrap (BCa)), adjusted 0.02"
    assert dashboard.claims_frame(results, chapters=["08_b"])["model"].tolist() == ["org/mpnet", "org/minilm"]


def test_distinct_published_claims_count_each_claim_once_at_its_home(results):
    frame = dashboard.claims_frame(results)
    # peak, gap, rise, start, size: re-judgements and own ideas left out
    assert dashboard.distinct_published(frame) == 5
    counts = dashboard.model_counts(frame).set_index("model")
    assert counts.loc["org/minilm", ["tested", "holds", "does not hold", "inconclusive",
                                     "not tested"]].tolist() == [3, 1, 1, 1, 2]
    assert counts.loc["org/mpnet", ["tested", "does not hold", "not tested"]].tolist() == [1, 1, 1]
    assert dashboard.numeric_counts(frame) == (0, 1)


def test_the_count_sentence_separates_shape_from_reproduction_and_says_what_is_not_counted(results):
    text = dashboard.count_sentence(dashboard.claims_frame(results))
    assert text.startswith("5 distinct published claims; on **minilm**: "
                           "holds 1, does not hold 1, inconclusive 1 (not tested: 2)")
    assert "numeric reproduction: 0 of 1, where this build ran the published model" in text
    assert "1 of the book's own hypotheses, 1 checks of the pipeline, 2 re-judgements" in text


def test_models_the_build_did_not_run_are_named_once_not_counted_as_zero(tmp_path):
    ran = [claim("peak", "holds"), claim("gap", "not measured")]
    unrun = [claim("peak", "not measured", model="org/jina"), claim("gap", "not measured", model="org/jina"),
             claim("rise", "not measured", model="org/bert")]
    (tmp_path / "01_a.json").write_text(json.dumps(result("01_a", ran + unrun)))
    text = dashboard.count_sentence(dashboard.claims_frame(tmp_path))
    assert "on **minilm**: holds 1 (not tested: 1)" in text
    assert "not tested on models this build did not run: bert (1 claim), jina (2 claims);" in text
    assert "**jina**" not in text and "**bert**" not in text


def test_the_page_links_each_claim_to_its_home_and_filters_by_chapter_model_kind_and_verdict(results):
    html = dashboard.ClaimsDashboard(dashboard.claims_frame(results))._repr_html_()
    assert '<a href="01_a.html#claim-peak">claim peak</a>' in html and html.count('href="01_a.html#claim-peak"') == 4
    for name in ("chapter", "model", "kind", "verdict"):
        assert f'<select data-filter="{name}">' in html
    # the page opens on the headline claims: the filter's chosen value, each row saying whether it is one
    assert '<select data-filter="headline"><option value="">every claim</option><option value="yes" selected>' in html
    assert html.count('data-headline="no"') == 11 and 'data-headline="yes"' not in html
    assert re.findall(r"<th [^>]*>(.*?)</th>", html) == ["chapter", "claim", "model", "test: result [95 % interval]",
                                                         "verdict"]
    assert ("<dt>sensitivity</dt><dd>f = 0.5; the interval clears the bound for f &lt; 0.7, lies past it for "
            "f ≥ 0.9</dd>") in html  # in the claim's details
    assert "not counted (its home is 01 a)" in html and "not counted (the book&#x27;s own hypothesis)" in html
    assert '<option value="08_b">8 · b (2)</option>' in html  # chapters by their number and name
    assert '<a class="eg-download" href="../../downloads/claims.csv" download>' in html


MINILM, MPNET = "sentence-transformers/all-MiniLM-L6-v2", "sentence-transformers/all-mpnet-base-v2"


def test_the_landing_table_has_a_row_per_headline_claim_and_a_column_per_encoder(tmp_path):
    def headline(id, verdict, model=MINILM, **fields):
        return claim(id, verdict, model=model, headline=True, **fields)

    one = [headline("peak", "holds"), headline("peak", "does not hold", MPNET), headline("peak", "holds", "org/mxbai"),
           headline("gap", "inconclusive"),  # not run on MPNet
           claim("rise", "holds", model=MINILM), claim("rise", "holds", model=MPNET),  # not a headline
           headline("own", "holds", kind="hypothesis")]  # not a published claim
    eight = [headline("dip", "not measured", MPNET), headline("dip", "holds"),
             headline("peak", "does not hold", home="01_a")]  # a re-judgement, counted at its home
    (tmp_path / "01_a.json").write_text(json.dumps(result("01_a", one)))
    (tmp_path / "08_b.json").write_text(json.dumps(result("08_b", eight)))
    table = dashboard.headline_table(dashboard.claims_frame(tmp_path))
    assert list(table.frame.columns) == ["chapter", "claim", "MiniLM", "MPNet", "other model"]
    assert table.frame.values.tolist() == [[1, "claim peak", "holds", "does not hold", "mxbai: holds"],
                                           [1, "claim gap", "inconclusive", "—", "—"],
                                           [8, "claim dip", "holds", "not tested", "—"]]
    html = table._repr_html_()
    for slug, claim_id in (("01_a", "peak"), ("01_a", "gap"), ("08_b", "dip")):  # each to its row in its chapter
        assert f'<a href="chapters/{slug}.html#claim-{claim_id}">claim {claim_id}</a>' in html
    assert re.findall(r"<th [^>]*>(.*?)</th>", html) == ["chapter", "claim", "MiniLM", "MPNet", "other model"]
    beside = dashboard.headline_table(dashboard.claims_frame(tmp_path), to_chapters="")
    assert '<a href="08_b.html#claim-dip">' in beside._repr_html_()  # from a page among the chapters


def test_each_landing_question_is_a_counted_claim_at_its_home():
    from embedding_geometry.book.claims import ledger

    for question, chapter, claim_id in dashboard.QUESTIONS:
        found = {c.id: c for c in ledger.load(chapter).claims}
        assert claim_id in found and found[claim_id].in_family, (question, chapter, claim_id)


def test_the_landing_findings_answer_in_the_claims_own_words_per_verdict(tmp_path, monkeypatch):
    says = {"holds": "tokens end aligned", "fails": "tokens stay spread"}
    monkeypatch.setattr(dashboard, "QUESTIONS", (("Do tokens collapse?", "01_a", "peak"), ("Unrun?", "05_z", "x")))
    agree = [claim("peak", "holds", says=says), claim("peak", "holds", model="org/all-mpnet-base-v2", says=says)]
    (tmp_path / "01_a.json").write_text(json.dumps(result("01_a", agree)))
    shown = dashboard.landing_findings(tmp_path)
    assert "<dt>Do tokens collapse?</dt>" in shown and "On minilm and MPNet, tokens end aligned." in shown
    assert 'href="glossary.html#term-Holds"' in shown and 'href="chapters/01_a.html#claim-peak"' in shown
    assert "Not run in this build" in shown  # the question whose chapter did not run
    differ = [claim("peak", "holds", says=says), claim("peak", "does not hold", model="org/mpnet", says=says)]
    (tmp_path / "01_a.json").write_text(json.dumps(result("01_a", differ)))
    shown = dashboard.landing_findings(tmp_path)
    assert "On minilm, tokens end aligned. On mpnet, tokens stay spread." in shown
