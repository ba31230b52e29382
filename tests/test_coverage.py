"""The coverage of the five texts: every item has a known status, a shortfall has its reason, and
the counts add up per text."""

import pytest
import yaml

from embedding_geometry.book import coverage


def write(folder, items, seed="001 Layer by Layer", chapter="01_layer_by_layer"):
    (folder / f"{chapter}.yaml").write_text(yaml.safe_dump({"seed": seed, "chapter": chapter, "items": items}))


def test_the_package_coverage_files_load_and_name_all_five_texts_they_cover():
    items = coverage.load()
    assert items and {item["status"] for item in items} <= set(coverage.STATUSES)
    assert all(item["what"] and item["chapter"] for item in items)


def test_counts_add_up_per_text_and_keep_every_status_column(tmp_path):
    write(tmp_path, [{"what": "a", "status": "reproduced", "where": "## A"},
                     {"what": "b", "status": "partly", "why": "half", "where": "## B"},
                     {"item": "c", "status": "reproduced", "where": "## C"}])
    table = coverage.counts(coverage.load(tmp_path))
    assert table.to_dict(orient="records") == [{"seed": "001 Layer by Layer", "reproduced": 2, "partly": 1,
                                                "not possible offline": 0, "total": 3}]
    assert list(coverage.frame(coverage.load(tmp_path))["item"]) == ["a", "b", "c"]


def test_a_shortfall_without_its_reason_or_an_unknown_status_is_refused(tmp_path):
    write(tmp_path, [{"what": "b", "status": "partly", "where": "## B"}])
    with pytest.raises(coverage.CoverageError, match="item 'b' is partly but gives no 'why'"):
        coverage.load(tmp_path)
    write(tmp_path, [{"what": "b", "status": "missing", "where": "## B"}])
    with pytest.raises(coverage.CoverageError, match="has status 'missing'"):
        coverage.load(tmp_path)
    write(tmp_path, [{"what": "b", "status": "reproduced"}], seed="9 unknown")
    with pytest.raises(coverage.CoverageError, match="does not start with a seed's number"):
        coverage.load(tmp_path)
