"""What every verdict record of a build must carry (book/methods.md, "How a verdict is made"): a
counted verdict its kind, test, p and adjusted p, null (or why it has none), one of the three
outcomes of a tested claim, a 95 % interval, the effect its n detects when it is inconclusive, a
test that can reach both *holds* and *does not hold*, and a sensitivity where its bound was derived
from the published value; a claim not tested its reason."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from embedding_geometry.book import pages
from embedding_geometry.book.claims import ledger, words

OUTCOMES = (words.HOLDS, words.FAILS, words.INCONCLUSIVE)


def problems(record: Mapping[str, Any]) -> list[str]:
    """What ``record`` lacks, in words (empty when it carries everything it must)."""
    if record.get("status"):
        return [] if record.get("reason") and record["verdict"] == words.NOT_TESTED else ["not tested, without why"]
    if record.get("verdict") not in words.VERDICTS:
        return [f"verdict {record.get('verdict')!r}"]
    if not record.get("counted"):
        return []
    found = []
    if record.get("kind") not in ledger.KINDS:
        found.append(f"kind {record.get('kind')!r}")
    if not record.get("interval_method"):
        found.append("no test")
    p, adjusted = record.get("p"), record.get("p_adjusted")
    if p is None or adjusted is None or not (0 <= p <= 1 and 0 <= adjusted <= 1):
        found.append(f"p {record.get('p')!r}, adjusted {record.get('p_adjusted')!r}")
    null = record.get("null")
    if not null and not record.get("no_null"):
        found.append("neither a null nor why it has none")
    if record.get("outcome") not in OUTCOMES:
        found.append(f"outcome {record.get('outcome')!r}")
    if record.get("outcome") == words.INCONCLUSIVE and record.get("detectable") is None:
        found.append("inconclusive without the effect its n detects")
    if record.get("reach") != {"holds": True, "does not hold": True}:
        found.append(f"counted, though its test can reach {record.get('reach')}")
    if (record.get("sensitivity") is not None) != ((record.get("bound") or {}).get("source") == "fraction"):
        found.append("a sensitivity without a fraction bound, or a fraction bound without one")
    interval = record.get("interval")
    if not interval or not interval[1] >= interval[0]:
        found.append(f"interval {interval}")
    return found


def unnamed(page: str, records) -> list[str]:
    """Ids of the claims that do not hold or are inconclusive that a chapter's ``page`` (every
    output of the executed notebook) neither names in backticks nor lists as a row of its claims
    table (``id="claim-<id>"``, pages.claim_anchor): each is on the page, said once in its
    section's words and listed in the table."""
    return [r["id"] for r in records if r.get("verdict") in (words.FAILS, words.INCONCLUSIVE)
            and f"`{r['id']}`" not in page and f'id="{pages.claim_anchor(r["id"])}"' not in page]


def page_outputs(notebook) -> str:
    """Every text and HTML output of an executed notebook (an ``nbformat`` node), its stderr left
    out (the book drops it), and what it shows as code left out too (parameter defaults and values
    are Python literals, as a notebook writes them), as the browser test of the site reads a page
    (tests/test_reader.py)."""
    texts = []
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            texts += [re.sub(r"<code[^>]*>.*?</code>", "", "".join(data[kind]), flags=re.S)  # a list of lines in JSON
                      for kind in ("text/markdown", "text/html") if kind in data]
            if output.get("output_type") == "stream" and output.get("name") == "stdout":
                texts.append(output["text"])
    return "\n".join(texts)
