"""The packaged ledgers as a whole: a claim is (home, id) with one statement, a counted claim has a
null or the reason it has none, and chapter 8 judges or lists every shape claim of chapters 1–4."""

import re

import pytest

from embedding_geometry.book import claims
from embedding_geometry.chapters.ch08_across import model_verdicts
from embedding_geometry.book.claims import ledger as ledgers, words

CHAPTERS_1_TO_4 = ("01_layer_by_layer", "02_similarity_attractor", "03_inside_the_cone",
                   "04_attention_context_similarity")
ACROSS = "08_across_models"


def packaged() -> dict[str, claims.Ledger]:
    return {name: claims.load(name) for name in ledgers.ledgers()}


def load(tmp_path, text):
    (tmp_path / "ch.yaml").write_text(text)
    return claims.load("ch", folder=tmp_path)


COUNTED = """
claims:
  - id: score
    statement: the score is high
    source: s
    metric: score
    unit: sentences
    shape: {test: above, args: {bound: 0}}
"""


def test_a_counted_claim_needs_a_null_or_the_reason_it_has_none(tmp_path):
    with pytest.raises(claims.LedgerError, match="claim 'score': a counted claim without a null must say why"):
        load(tmp_path, COUNTED)
    with pytest.raises(claims.LedgerError, match="a claim with a null takes no no_null"):
        load(tmp_path, COUNTED + "    no_null: paired\n    null: {kind: chance, value: 0}\n")
    with pytest.raises(claims.LedgerError, match="no_null says why a shape test has no null"):
        load(tmp_path, COUNTED.replace("    shape: {test: above, args: {bound: 0}}\n",
                                       "    description: a number\n    no_null: paired\n"))
    for other in ("    kind: hypothesis\n", "    home: 01_layer_by_layer\n"):  # not counted: the reason may wait
        assert load(tmp_path, COUNTED + other).claims[0].no_null is None
    claim = load(tmp_path, COUNTED + "    no_null: paired\n").claims[0]
    assert claim.no_null_reason == ledgers.NO_NULL["paired"]
    own = load(tmp_path, COUNTED + "    no_null: the text compares two models, each its own null\n").claims[0]
    assert own.no_null_reason == "the text compares two models, each its own null"


def test_the_reason_for_no_null_reaches_the_record_and_is_shown_where_the_null_is(tmp_path):
    import numpy as np

    claim = load(tmp_path, COUNTED + "    no_null: paired\n")
    values = 0.3 + 0.05 * np.random.default_rng(0).standard_normal(30)
    record = claims.records(claims.evaluate(claim, {"score": float(values.mean()), "per_unit": {"score": values}},
                                            "m", family=claims.family_size()))[0]
    assert record["null"] is None and record["no_null"] == ledgers.NO_NULL["paired"]
    assert words.null_text(record) == f"none: {ledgers.NO_NULL['paired']}"
    assert words.row(record)["null"] == words.null_text(record)


def test_every_counted_packaged_claim_has_a_null_or_says_why_not():
    for name, found in packaged().items():
        for claim in found.claims:
            if claim.in_family:
                assert bool(claim.null) != bool(claim.no_null), f"{name}: {claim.id}"


def test_a_claim_is_its_home_and_id_with_one_statement():
    """Ids repeat across homes (``gap-end`` of chapters 1 and 2 are two claims), so a claim is
    (home, id); a re-judgement names a claim that exists at its home and states it in its words."""
    found = packaged()
    statements: dict[tuple[str, str], str] = {}
    for name, ledger in found.items():
        for claim in ledger.claims:
            if claim.home is None:
                assert (name, claim.id) not in statements
                statements[name, claim.id] = claim.statement
    for name, ledger in found.items():
        for claim in ledger.claims:
            if claim.home is not None:
                assert (claim.home, claim.id) in statements, f"{name}: {claim.id} names no claim of {claim.home}"
                assert claim.statement == statements[claim.home, claim.id], f"{name}: {claim.id}"
    shared = {i for (_, i) in statements if sum(j == i for (_, j) in statements) > 1}
    assert {"gap-end", "cls-start", "cls-end"} <= shared  # the id alone is not a claim


def test_chapter_8_judges_or_lists_every_shape_claim_of_chapters_1_to_4():
    """Every claim of chapters 1–4 with a shape test (and not true by construction) is judged in
    chapter 8 or left out with a reason: no orphan, no stale or doubled entry."""
    found = packaged()
    shape_claims = {(name, c.id) for name in CHAPTERS_1_TO_4 for c in found[name].claims
                    if c.home is None and c.test is not None and not c.by_construction}
    judged = [(c.home, c.id) for c in found[ACROSS].claims]
    left = [(e["home"], e["id"]) for e in found[ACROSS].left_out]
    assert len(set(judged)) == len(judged) and len(set(left)) == len(left)
    assert not set(judged) & set(left), "judged and left out"
    assert set(judged) | set(left) == shape_claims, {"orphans": shape_claims - set(judged) - set(left),
                                                    "stale": (set(judged) | set(left)) - shape_claims}
    assert all(len(e["why"]) > 20 for e in found[ACROSS].left_out)
    assert ("03_inside_the_cone", "anisotropy-partial-reversal") in judged


def test_a_left_out_entry_needs_its_home_and_why(tmp_path):
    with pytest.raises(claims.LedgerError, match="a left_out entry needs id, home and why"):
        load(tmp_path, "claims: []\nleft_out:\n  - {id: a, home: 01_layer_by_layer}\n")
    with pytest.raises(claims.LedgerError, match="a left_out entry needs id, home and why"):
        load(tmp_path, "claims: []\nleft_out:\n  - {id: a, home: 01_layer_by_layer, why: ' '}\n")


def test_the_left_out_table_links_each_claim_to_its_home_row():
    ledger = claims.load(ACROSS)
    shown = model_verdicts.left_out_table(ledger)
    html = shown._repr_html_()
    n = len(ledger.left_out)
    assert html.startswith(f'<details class="eg-fold"><summary>{n} shape claims of other chapters not judged here')
    assert re.findall(r"<th [^>]*>(.*?)</th>", html) == ["claim", "home chapter", "why it is left out"]
    first = ledger.left_out[0]
    assert f'<a href="{first["home"]}.html#claim-{first["id"]}">{first["id"]}</a>' in html
    assert "<td" in html and html.count("<tr>") == n + 1  # the header and one row per claim


def test_the_build_check_names_what_a_counted_verdict_lacks(tmp_path):
    """tests/verdict_checks.py, which test_build runs on every verdict of a tiny-model build, on a
    verdict that carries everything and on copies that each lack one thing."""
    import numpy as np
    from verdict_checks import problems

    text = COUNTED.replace("bound: 0}", "bound: 0.1}") + "    no_null: size\n"
    values = 0.3 + 0.05 * np.random.default_rng(0).standard_normal(30)
    metrics = {"score": float(values.mean()), "per_unit": {"score": values}}
    record = claims.records(claims.evaluate(load(tmp_path, text), metrics, "m", family=claims.family_size()))[0]
    assert record["counted"] and record["bound"]["source"] == "typed" and problems(record) == []
    for key, value, lacks in [("no_null", None, "neither a null"), ("interval_method", None, "no test"),
                              ("outcome", None, "outcome None"), ("p_adjusted", None, "adjusted None"),
                              ("sensitivity", {"bound": "fraction"}, "a sensitivity"),
                              ("interval", [0.3, 0.2], "interval"), ("kind", "opinion", "kind"),
                              ("verdict", "census", "verdict 'census'"),
                              ("reach", {"holds": False, "does not hold": True}, "counted, though")]:
        assert any(lacks in p for p in problems({**record, key: value})), key
    undecided = {**record, "outcome": "inconclusive", "verdict": "inconclusive", "detectable": None}
    assert problems(undecided) == ["inconclusive without the effect its n detects"]
    untested = {**record, "status": "descriptive", "verdict": "not tested", "reason": "no unit"}
    assert problems(untested) == [] and problems({**untested, "reason": None}) == ["not tested, without why"]


def statistic(claim: claims.Claim) -> tuple:
    """What a claim's test decides on: its metric, as reduced, against its bound (or band, or
    window), on its model. Two counted claims with the same one would be one finding counted twice."""
    test, args = claim.test
    return claim.measured_on, claim.metric, claim.reduce, claim.series, test, repr(sorted(args.items()))


def test_no_two_counted_claims_test_the_same_statistic():
    """Duplicate statistics count once (issue 37): among the counted claims of every packaged ledger,
    no two test the same metric, reduced the same way, against the same bound. (A null differs
    between two such claims at most; the one with it is counted, the other says why it is not.)"""
    seen: dict[tuple, str] = {}
    for name, ledger in packaged().items():
        for claim in ledger.claims:
            if claim.in_family:
                key = statistic(claim)
                assert key not in seen, f"{name}: {claim.id} tests the statistic of {seen[key]}"
                seen[key] = f"{name}: {claim.id}"
    assert len(seen) == ledgers.family_size()


COUNTED_ONCE = {  # (home, id) not counted → the claim whose test counts for it
    ("01_layer_by_layer", "within-end"): "within-training",
    ("07_training_objective", "fingerprint-reaches-back-scratch"): "fingerprint-every-depth-scratch",
    **{("05_embeddings_without_tears", f"cls-table-{b}"): "cls-power-law" for b in ("0-10", "11-50", "51-100",
                                                                                      "100-plus")},
}


def test_the_claims_the_statistical_review_found_unable_to_fail_pass_or_count_once_stay_fixed():
    """Issue 37's list, claim by claim: each is counted with a test that can go both ways, or shown
    without a verdict and the reason, so that none comes back unnoticed."""
    found = packaged()
    ledger = {(name, c.id): c for name, led in found.items() for c in led.claims if c.home is None}
    for key, counted in COUNTED_ONCE.items():
        claim = ledger[key]
        why = " ".join(claim.description.split())
        assert not claim.in_family and claim.test and f"counted once, as {counted}" in why, key
        assert ledger[key[0], counted].in_family, counted
    heads = ledger["04_attention_context_similarity", "heads-specialise"]
    assert not heads.in_family and "cannot fail" in heads.description  # a count above 0, with no null
    dilution = ledger["05_embeddings_without_tears", "semantic-dilution"]
    assert not dilution.in_family and "cosine 1" in dilution.by_construction
    bounds = {("02_similarity_attractor", "shared-tokens-drift"): ("below", 0.935),  # half the post's drop, not 0.999
              ("04_attention_context_similarity", "unique-focus-tokens"): ("above", 0.75),  # 9 of 12, not 0.7505
              ("01_layer_by_layer", "within-start"): ("below", 3 * 0.055)}  # three times 0.055, not 0.055 / 0.33
    for key, (side, bound) in bounds.items():
        test, args = ledger[key].test
        assert ledger[key].in_family and test == side and args["bound"] == pytest.approx(bound, abs=1e-12), key
    for key in (("05_embeddings_without_tears", "cls-early-tokens"), ("03_inside_the_cone", "anisotropy-final")):
        assert ledger[key].in_family and ledger[key].null is None and ledger[key].no_null  # none repeating the bound
    for key in (("04_attention_context_similarity", "same-sentence-in-final-layers"),
                ("06_search_in_practice", "quantization-nonuniform")):  # a 0 bound no share falls below: the null,
        assert ledger[key].in_family and {"samples", "draws"} & set(ledger[key].null)  # a distribution, decides
    for claim in found[ACROSS].claims:  # chapter 8 re-judges each with its home's test and null
        home = ledger[claim.home, claim.id]
        assert (claim.test, claim.null is None) == (home.test, home.null is None), claim.id
