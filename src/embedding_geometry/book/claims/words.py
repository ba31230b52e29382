"""The words a verdict is shown with, each defined once: the rules table of verdict words, table
cells, one sentence per claim, the "What this run found" box, the summary and the legend.

Two questions, two words. **Shape transfers** asks whether this run's model shows the shape a
published claim states (any model); **reproduced** asks whether it gives the published number,
on the published model (:data:`NUMERIC`). A claim's verdict word comes from its kind and its
outcome (:data:`WORDS`), or from why it was not judged (:data:`STATUS_WORDS`).

Everything here reads claim **records** — the dicts of ``claims.records`` that the results JSON
stores — so a chapter page, the dashboard and a test of an executed chapter all write the same
words. Functions that take ``items`` accept records or ``claims.Verdict`` objects.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping
from typing import Any

from .. import maths
from .judge import BY_CONSTRUCTION, CENSUS, DESCRIPTIVE, NOT_MEASURED
from .shape_tests import FAILS, HOLDS, INCONCLUSIVE

WORDS: dict[str, dict[str, str]] = {
    "published": {HOLDS: "shape transfers", FAILS: "does not transfer", INCONCLUSIVE: "inconclusive"},
    "hypothesis": {HOLDS: "supported", FAILS: "not supported", INCONCLUSIVE: "inconclusive"},
    "pipeline": {HOLDS: "passes", FAILS: "fails", INCONCLUSIVE: "inconclusive"},
}
"""The rules table: a judged claim's verdict word by its kind and its (adjusted) outcome."""

STATUS_WORDS = {DESCRIPTIVE: "descriptive", CENSUS: "census", NOT_MEASURED: "not measured",
                BY_CONSTRUCTION: "by construction"}
"""The word of a claim that got no judged verdict, by why."""

NUMERIC = {"reproduced": "this run's value is within the ledger's tolerance of the published one, on the "
                         "published model",
           "not reproduced": "it is not, on the published model"}

MEANINGS = {
    "shape transfers": "a published claim's shape holds on this run's model: its interval, at the level adjusted "
                       "for the number of published claims, clears the test's bound and, where there is one, the "
                       "null (the difference from a random-init control, a permutation distribution or chance "
                       "clears 0)",
    "does not transfer": "the adjusted interval lies entirely on the wrong side of the bound, or the difference "
                         "from the null does",
    "inconclusive": "the adjusted interval straddles the bound or the null: this run cannot tell",
    "supported": "the book's own hypothesis holds, judged as a published claim is",
    "not supported": "the book's own hypothesis does not hold",
    "passes": "a check of the pipeline holds (the book's numbers mean what they say)",
    "fails": "a check of the pipeline does not hold",
    "descriptive": "shown with no verdict: the claim has no model-agnostic form, declares no sampling unit, has "
                   "fewer than 5 units, too few for an interval, or a null of fewer than 3 random-init control "
                   "seeds, too few for a distribution",
    "census": "every unit gives the same value, so the interval has zero width: a count of the units, not an "
              "estimate with noise, and not counted as a verdict",
    "not measured": "the metric was not computed on this run; the reason is given with the claim",
    "by construction": "true on every model because of how the metric is built; shown, not counted",
    "fragile": "float noise could flip the verdict: its margin is within the deviation another machine may give "
               "its statistic, or a perturbed float path changed it",
    **NUMERIC,
}
"""Every word once, with what it means (the legend)."""

JUDGED_WORDS = tuple(dict.fromkeys(w for words in WORDS.values() for w in words.values()))
COUNTED_ORDER = ("shape transfers", "does not transfer", "inconclusive")


def number(x: Any) -> str:
    """A number as the book writes it: four significant digits, a whole number below 10⁷ whole
    (10000, not 1e+04); text as it is."""
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return str(x)
    if float(x).is_integer() and abs(x) < 1e7:
        return str(int(x))
    text = f"{x:.4g}"
    return "0" if text in ("-0", "-0.0") else text


def _records(items: Iterable[Any]) -> list[Mapping[str, Any]]:
    return [item.record() if hasattr(item, "record") else item for item in items]


def verdict_word(record: Mapping[str, Any]) -> str:
    """The record's verdict word (:data:`WORDS`, :data:`STATUS_WORDS`)."""
    if record.get("status"):
        return STATUS_WORDS[record["status"]]
    return WORDS[record.get("kind") or "published"][record["outcome"]]


def verdict_of(record: Mapping[str, Any]) -> str:
    """The verdict word a stored record carries (or computes, for a record without one)."""
    return record.get("verdict") or verdict_word(record)


# --------------------------------------------------------------------------- table cells

def interval_text(record: Mapping[str, Any], adjusted: bool = False) -> str:
    """"[0.51, 0.6] over 24 sentences (percentile)", or "—"."""
    interval = record.get("adjusted_interval" if adjusted else "interval")
    if not interval:
        return "—"
    text = f"[{number(interval[0])}, {number(interval[1])}]"
    return text if adjusted else f"{text} over {record['n_units']} {record['unit']} ({record['interval_method']})"


def null_text(record: Mapping[str, Any]) -> str:
    """"0.12 (random-init control, 3 seeds); difference [0.2, 0.3]"; for a claim the ledger says
    has none, "none: <why>"; else "—"."""
    null = record.get("null")
    if not null:
        return f"none: {record['no_null']}" if record.get("no_null") else "—"
    value = number(null["value"]) if null.get("value") is not None else null.get("note") or "not measured"
    text = f"{value} ({null['label']}" + (f", {null['distribution']}" if null.get("distribution") else "") + ")"
    if null.get("difference"):
        lo, hi = null["difference"]
        text += f"; difference [{number(lo)}, {number(hi)}]"
    return text


def test_text(record: Mapping[str, Any]) -> str:
    """The test as a condition, with how its bound was set: "> 0.45 (0.5 × the published 0.9: …)"."""
    if not record.get("test"):
        return "—"
    text = record["test"]
    bound = record.get("bound") or {}
    if bound.get("source") == "fraction":
        text += (f" ({number(bound['fraction'])} × the published {number(record['published']['value'])}: "
                 f"{bound['reason']})")
    elif bound.get("source") == "typed":
        text += " (a bound typed into the ledger)"
    return text


def run_text(record: Mapping[str, Any]) -> str:
    """This run's value, with the depth it was read at."""
    if record.get("measured") is None:
        return NOT_MEASURED
    depth = record.get("depth")
    return number(record["measured"]) + (f" at {depth}" if depth else "")


def result_text(record: Mapping[str, Any]) -> str:
    """The test and its result inline: "last − first > 0: 0.34 [0.32, 0.36]"; for a value test
    the value and its interval ("> 0.45: 0.39 [0.37, 0.41]")."""
    stat = record.get("statistic")
    if not stat or not record.get("test"):
        return run_text(record)
    lo, hi = stat["interval"]
    return f"{record['test']}: {number(stat['value'])} [{number(lo)}, {number(hi)}]"


def sensitivity_text(record: Mapping[str, Any]) -> str:
    """At which bound the verdict would change, for a bound the ledger derived or typed; "—"."""
    found = record.get("sensitivity")
    if not found:
        return "—"
    if found["bound"] == "fraction":
        holds, fails = found["holds_below"], found["fails_from"]
        holds = "holds for every f" if holds is None else f"holds for f < {number(holds)}"
        fails = "fails for no f" if fails is None else f"does not hold for f ≥ {number(fails)}"
        return f"f = {number(found['fraction'])}; {holds}, {fails}"
    side, holds = found["holds_if_bound"]
    return f"typed bound {number(found['value'])}; holds for a bound {side} {number(holds)}"


def verdict_cell(record: Mapping[str, Any]) -> str:
    """The verdict word, the unadjusted result where it differs, its reason, and "fragile"."""
    word = verdict_of(record)
    parts = [word]
    if record.get("raw") and record.get("outcome") and record["raw"] != record["outcome"]:
        parts.append(f"(unadjusted: {WORDS[record.get('kind') or 'published'][record['raw']]})")
    text = " ".join(parts)
    if record.get("reason") and word != "descriptive":
        text += f": {record['reason']}"
    elif record.get("reason"):
        text += f" ({record['reason']})"
    return text + (f" — fragile: {record['fragile']}" if record.get("fragile") else "")


def row(record: Mapping[str, Any]) -> dict[str, str]:
    """One row of a chapter's claims table."""
    published = record.get("published")
    return {
        "claim": record["statement"],
        "published (model)": f"{number(published['value'])} ({published['model']})" if published else "—",
        "this run (model)": f"{run_text(record)} ({record['model']})",
        "verdict": verdict_cell(record),
        "test (its bound)": test_text(record),
        "test: result [95 % interval]": result_text(record),
        "adjusted interval": interval_text(record, adjusted=True),
        "null": null_text(record),
        "numeric": record.get("numeric_verdict") or "—",
        "sensitivity": sensitivity_text(record),
    }


# --------------------------------------------------------------------------- sentences

def _subject(record: Mapping[str, Any]) -> str:
    text = ((record.get("shape") or {}).get("statement") or record["statement"]).rstrip(".")
    return text[:1].upper() + text[1:]


def _lowered(text: str) -> str:
    """``text`` with its first letter in lower case, unless its first word is an acronym or a
    name in capitals ("CLS alignment", "MaxSim", "L6")."""
    first = text.split(" ", 1)[0]
    return text if sum(c.isupper() for c in first) > 1 or any(c.isdigit() for c in first) \
        else text[:1].lower() + text[1:]


def plain_sentence(record: Mapping[str, Any]) -> str:
    """The claim's finding in plain words, no numbers: "On all-MiniLM-L6-v2 the shape transfers:
    within-sentence similarity is higher at the final depth than at depth 0."."""
    record = _records([record])[0]
    word, subject = verdict_of(record), _subject(record)
    model = record["model"].rsplit("/", 1)[-1]
    claim = _lowered(subject)
    if word in ("shape transfers", "supported", "passes"):
        return f"On {model}, {claim}."
    if word in ("does not transfer", "not supported", "fails"):
        return f"On {model}, it is not so that {claim}."
    if word == "inconclusive":
        return f"On {model}, this run cannot tell whether {claim}."
    if word == "not measured":
        return f"{subject}: not measured on {model} ({record.get('reason')})."
    return f"{subject}: shown on {model}, not judged ({word})."


def sentence(record: Mapping[str, Any]) -> str:
    """One sentence stating a claim's verdict with its test, number and intervals."""
    record = _records([record])[0]
    word, subject = verdict_of(record), _subject(record)
    if record.get("status") == NOT_MEASURED:
        return f"{subject} — not measured: {record.get('reason') or 'the metric is None on this run'}."
    if record.get("status") in (DESCRIPTIVE, BY_CONSTRUCTION, CENSUS):
        reason = f" ({record['reason']})" if record.get("reason") else ""
        return f"{subject} — {word}{reason}: {run_text(record)} on {record['model']}."
    parts = [result_text(record), f"adjusted interval {interval_text(record, adjusted=True)}"]
    if record.get("null") or record.get("no_null"):
        parts.append(f"null: {null_text(record)}")
    fragile = f" Fragile: {record['fragile']}." if record.get("fragile") else ""
    return (f"{subject} — {verdict_cell(record).split(' — fragile')[0]} on {record['model']}: "
            f"{'; '.join(parts)}.{fragile}")


# --------------------------------------------------------------------------- box, summary, legend

BADGES = {"shape transfers": "transfers", "supported": "transfers", "passes": "transfers",
          "does not transfer": "fails", "not supported": "fails", "fails": "fails"}
"""The badge class of each judged word (the others are grey): _static/book.css colours them."""


def badge(record: Mapping[str, Any]) -> str:
    """The verdict word as a coloured badge (HTML)."""
    word = verdict_of(record)
    kind = BADGES.get(word, "other")
    fragile = ' <span class="eg-badge eg-badge-fragile">fragile</span>' if record.get("fragile") else ""
    return f'<span class="eg-badge eg-badge-{kind}">{html.escape(word)}</span>{fragile}'


def differences(items: Iterable[Any]) -> list[str]:
    """For every claim whose verdict differs between the models it was judged on, one sentence
    (Markdown) that says so: "`within-dip`: shape transfers on all-mpnet-base-v2 but does not
    transfer on all-MiniLM-L6-v2."."""
    by_claim: dict[str, dict[str, list[str]]] = {}
    for r in _records(items):
        by_claim.setdefault(r["id"], {}).setdefault(verdict_of(r), []).append(r["model"].rsplit("/", 1)[-1])
    found = []
    for claim, groups in by_claim.items():
        if len(groups) > 1:
            parts = [f"{word} on {' and '.join(models)}" for word, models in groups.items()]
            found.append(f"`{claim}`: " + (" but ".join(parts) if len(parts) == 2 else ", ".join(parts)) + ".")
    return found


def report(items: Iterable[Any]) -> str:
    """Claims in words for a chapter's text (Markdown with HTML badges): per claim and model, its
    badge, its shape in plain words, the test with its result and adjusted interval, and the
    published value where there is one; then, where the models' verdicts differ, the sentence
    that says so (:func:`differences`)."""
    lines, found = [], _records(items)
    for r in found:
        numbers = [result_text(r)]
        if r.get("adjusted_interval"):
            numbers.append(f"adjusted {interval_text(r, adjusted=True)}")
        if r.get("null") and r["null"].get("value") is not None:
            numbers.append(f"null: {null_text(r)}")
        if r.get("published"):
            numbers.append(f"published {number(r['published']['value'])} on "
                           f"{r['published']['model'].rsplit('/', 1)[-1]}")
        lines.append(f"- {badge(r)} {maths.markdown(plain_sentence(r))} "
                     f"<small>({html.escape('; '.join(numbers))})</small>")
    lines += [f"\n**The models differ.** {sentence}" for sentence in differences(found)]
    return "\n".join(lines) + "\n"


def headlines(items: Iterable[Any]) -> list[Mapping[str, Any]]:
    """The ledger's headline claims (chosen by their importance to the post, never by outcome)."""
    return [r for r in _records(items) if r.get("headline")]


def findings(items: Iterable[Any]) -> str:
    """The box under a chapter's "What this run found" heading (Markdown with HTML): per headline
    claim, its badge and one plain sentence, with its test, numbers and intervals in a small
    table that unfolds under it. Failing headlines are shown as the others are."""
    chosen = headlines(items)
    if not chosen:
        return "*This chapter's ledger marks no headline claim.*\n"
    blocks = []
    for r in chosen:
        details = "".join(f"<tr><th>{html.escape(k)}</th><td>{maths.html(v)}</td></tr>"
                          for k, v in [("claim (the post's words)", r["statement"]),
                                       ("test (its bound)", test_text(r)), ("test and result", result_text(r)),
                                       ("adjusted interval", interval_text(r, adjusted=True)),
                                       ("95 % interval", interval_text(r)), ("null", null_text(r)),
                                       ("published", f"{number(r['published']['value'])} on {r['published']['model']}"
                                        if r.get("published") else "—"),
                                       ("numeric", r.get("numeric_verdict") or "—"),
                                       ("sensitivity", sensitivity_text(r)), ("fragile", r.get("fragile") or "no")]
                          if v and v != "—")
        blocks.append(f'<div class="eg-finding">{badge(r)} {maths.html(plain_sentence(r))}'
                      f'<details><summary>numbers</summary><table class="eg-finding-table">{details}</table>'
                      f"</details></div>")
    return "\n".join(blocks) + "\n"


def tally(items: Iterable[Any], counted_only: bool = False) -> dict[str, int]:
    """How many claims got each verdict word (judged words first, then the others)."""
    found = [r for r in _records(items) if not counted_only or r.get("counted")]
    words = [verdict_of(r) for r in found]
    order = [*JUDGED_WORDS, *STATUS_WORDS.values()]
    return {w: words.count(w) for w in order if w in words}


def chapter_summary(items: Iterable[Any]) -> str:
    """The chapter summary (Markdown): the tally, then every claim whose verdict is not a
    judged pass — with its id and sentence."""
    found = _records(items)
    counts = ", ".join(f"{w} {n}" for w, n in tally(found).items())
    lines = [f"Of {len(found)} claims — {counts or 'none'}."]
    for word in [w for w in tally(found) if w not in ("shape transfers", "supported", "passes")]:
        group = [r for r in found if verdict_of(r) == word]
        lines.append(f"\n**{word[:1].upper() + word[1:]}** ({len(group)}):\n")
        lines += [f"- `{r['id']}` · {sentence(r)}" for r in group]
    if differ := differences(found):
        lines.append(f"\n**The models differ** ({len(differ)}):\n")
        lines += [f"- {sentence}" for sentence in differ]
    fragile = [r for r in found if r.get("fragile")]
    if fragile:
        lines.append(f"\n**Fragile** ({len(fragile)}): " + ", ".join(f"`{r['id']}`" for r in fragile) + ".")
    return "\n".join(lines) + "\n"


def summary_omissions(text: str, items: Iterable[Any]) -> list[str]:
    """Ids of claims that are not judged passes that ``text`` never names in backticks."""
    passes = ("shape transfers", "supported", "passes")
    return [r["id"] for r in _records(items) if verdict_of(r) not in passes and f"`{r['id']}`" not in text]


def legend() -> str:
    """Every word explained once (Markdown)."""
    return "\n".join(f"- **{word}**: {meaning}." for word, meaning in MEANINGS.items()) + "\n"
