"""The coverage of the five texts: every item has a known grade, a shortfall has its reason, the
counts add up per text, and the rows agree with the claims ledgers."""


import pytest
import yaml

from embedding_geometry.book import coverage
from embedding_geometry.book.claims import ledger


def write(folder, items, seed="001 Layer by Layer", chapter="01_layer_by_layer"):
    (folder / f"{chapter}.yaml").write_text(yaml.safe_dump({"seed": seed, "chapter": chapter, "items": items}))


def ledgers():
    return {slug: yaml.safe_load(path.read_text(encoding="utf-8")) for slug, path in ledger.ledgers().items()}


def test_the_package_coverage_files_load_and_name_all_five_texts_in_the_chapters_order():
    items = coverage.load()
    assert items and {item["status"] for item in items} <= set(coverage.STATUSES)
    assert all(item["what"] and item["chapter"] for item in items)
    texts = list(dict.fromkeys(item["text"] for item in items))
    assert texts == list(coverage.TEXTS.values())
    table = coverage.counts(items)
    assert list(table["text"]) == [*coverage.TEXTS.values(), coverage.ALL]
    assert table.iloc[-1]["total"] == len(items) == table.iloc[:-1]["total"].sum()


def test_counts_add_up_per_text_and_keep_every_grade_column(tmp_path):
    write(tmp_path, [{"what": "a", "status": "reproduced", "where": "## A"},
                     {"what": "b", "status": "partly", "why": "half", "where": "## B"},
                     {"item": "c", "status": "untestable", "why": "a question", "where": "## C"},
                     {"what": "d", "status": "missing", "why": "not yet", "where": "## D"}])
    write(tmp_path, [{"what": "e", "status": "not possible offline", "why": "mxbai", "where": "## E"}],
          seed="000 The Similarity Attractor", chapter="02_similarity_attractor")
    table = coverage.counts(coverage.load(tmp_path))
    layer, attractor = coverage.TEXTS["001"], coverage.TEXTS["000"]
    assert table.to_dict(orient="records") == [
        {"text": layer, "reproduced": 1, "partly": 1, "missing": 1, "not possible offline": 0, "untestable": 1,
         "total": 4},
        {"text": attractor, "reproduced": 0, "partly": 0, "missing": 0, "not possible offline": 1, "untestable": 0,
         "total": 1},
        {"text": coverage.ALL, "reproduced": 1, "partly": 1, "missing": 1, "not possible offline": 1,
         "untestable": 1, "total": 5}]
    assert list(coverage.frame(coverage.load(tmp_path))["item"]) == ["a", "b", "c", "d", "e"]


def test_an_item_judged_in_another_chapter_is_listed_there(tmp_path):
    write(tmp_path, [{"what": "a", "status": "reproduced", "where": "## A", "chapter": "07_training_objective"}])
    (item,) = coverage.load(tmp_path)
    assert item["chapter"] == "07_training_objective"
    assert coverage.frame([item])["where"][0] == "07_training_objective, A"


def test_a_shortfall_without_its_reason_or_an_unknown_status_is_refused(tmp_path):
    for status in ("partly", "missing", "untestable", "not possible offline"):
        write(tmp_path, [{"what": "b", "status": status, "where": "## B"}])
        with pytest.raises(coverage.CoverageError, match=f"item 'b' is {status} but gives no 'why'"):
            coverage.load(tmp_path)
    write(tmp_path, [{"what": "b", "status": "gone", "why": "?", "where": "## B"}])
    with pytest.raises(coverage.CoverageError, match="has status 'gone'"):
        coverage.load(tmp_path)
    write(tmp_path, [{"what": "b", "status": "reproduced"}], seed="9 unknown")
    with pytest.raises(coverage.CoverageError, match="does not start with a seed's number"):
        coverage.load(tmp_path)


def test_every_claim_and_erratum_of_a_ledger_has_a_coverage_row_and_every_row_names_existing_ones():
    """In every chapter that reproduces one of the five texts (one the coverage rows name), a
    ledger's published claims and hypotheses judged in their own chapter (no ``home:`` elsewhere)
    and its errata are each named by a coverage row of that chapter; a row names only claims and
    errata of its chapter's ledger. Checks of the pipeline are not items of the texts, and a chapter
    no row names (CONTRIBUTING.md's example) reproduces no text."""
    books, named, items = ledgers(), set(), coverage.load()
    covered = {item["chapter"] for item in items}
    books = {slug: book for slug, book in books.items() if slug in covered}
    assert {"01_layer_by_layer", "07_training_objective"} <= covered
    for item in items:
        ledger = books.get(item["chapter"], {})
        claims = {c["id"] for c in ledger.get("claims", [])}
        errata = {e["id"] for e in ledger.get("errata") or []}
        assert set(item.get("claims", [])) <= claims, (item["chapter"], item["what"])
        assert set(item.get("errata", [])) <= errata, (item["chapter"], item["what"])
        named |= {(item["chapter"], i) for i in item.get("claims", []) + item.get("errata", [])}
    expected = {(slug, c["id"]) for slug, ledger in books.items() for c in ledger.get("claims", [])
                if c.get("kind", "published") != "pipeline" and c.get("home", slug) == slug}
    expected |= {(slug, e["id"]) for slug, ledger in books.items() for e in ledger.get("errata") or []}
    assert sorted(expected - named) == []
