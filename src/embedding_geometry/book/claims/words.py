"""The words a verdict is shown with, each defined once: verdict words, table cells, sentences,
the "What we found" box, the summary and the legend. Two questions: the **verdict** (*holds*,
*does not hold*, *inconclusive*, *not tested*: does this run's model show what the claim states?)
and the **numeric** verdict (*reproduced* or not: the published number, on the published model).
Everything reads claim records (``claims.records``; a Verdict is accepted too), so a chapter page,
the dashboard and a test of an executed chapter write the same words.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping
from typing import Any

from .. import maths
from .judge import FAILS, HOLDS, INCONCLUSIVE, NOT_MEASURED, NOT_TESTED, PENDING
from .judge import verdict_word as verdict_of  # the verdict word a stored record carries (or computes)
from .reduce import NO_TROUGH

TESTED = (HOLDS, FAILS, INCONCLUSIVE)
"""The words of a tested claim."""
VERDICTS = (*TESTED, NOT_TESTED)
"""The four verdict words, in the order tallies list them."""

NUMERIC = {"reproduced": "this run's value is within the ledger's tolerance of the published one, on the "
                         "published model",
           "not reproduced": "it is not, on the published model"}

MEANINGS = {
    HOLDS: "the test the claim's design calls for decides it: its p, adjusted for the number of claims, is at most "
           "0.05, and the statistic lies on the claim's side of its bound (and of its null, where it has one)",
    FAILS: "the adjusted p is at most 0.05 and the statistic lies on the other side",
    INCONCLUSIVE: "the adjusted p is above 0.05: this run cannot tell; the verdict says which effect its n would "
                  "detect with 80 % power",
    NOT_TESTED: "shown without a verdict, with the reason: the claim has no model-agnostic form (descriptive), holds "
                "on every model by construction, was not measured on this run, has fewer than 5 units, or has too "
                "few random-init control seeds for a null",
    "fragile": "a perturbed float path changed the verdict, or its p lies within twice its Monte Carlo error of the "
               "threshold",
    **NUMERIC,
}
"""Every word once, with what it means (the legend and the glossary)."""

BADGES = {HOLDS: "holds", FAILS: "fails", INCONCLUSIVE: "inconclusive"}
"""The badge class of each tested verdict word (any other: "other"): _static/book.css gives each its colour."""


def number(x: Any) -> str:
    """Four significant digits; a whole number below 10⁷ whole (10000, not 1e+04); text as it is."""
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return str(x)
    if float(x).is_integer() and abs(x) < 1e7:
        return str(int(x))
    text = f"{x:.4g}"
    return "0" if text in ("-0", "-0.0") else text


def _records(items: Iterable[Any]) -> list[Mapping[str, Any]]:
    return [item.record() if hasattr(item, "record") else item for item in items]


# --------------------------------------------------------------------------- table cells

def p_text(record: Mapping[str, Any]) -> str:
    """"p = 0.0012 (sign-flip (exact)), adjusted 0.021", or "—"."""
    if record.get("p") is None:
        return "—"
    adjusted = f", adjusted {number(record['p_adjusted'])}" if record.get("p_adjusted") is not None else ""
    return f"p = {number(record['p'])} ({record['interval_method']}){adjusted}"


def null_text(record: Mapping[str, Any]) -> str:
    """"0.12 (random-init control, 3 seeds, unit by unit); difference [0.2, 0.3]", "none: <why>" or "—"."""
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
    if bound.get("source") == "fraction":  # above: f × published; below: published / f (Claim.test)
        f, published = number(bound["fraction"]), number(record["published"]["value"])
        below = record["shape"]["test"] == "below"
        derived = f"the published {published} / {f}" if below else f"{f} × the published {published}"
        text += f" ({derived}: {bound['reason']})"
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
    """The test and its result inline: "last − first > 0: 0.34 [0.32, 0.36]"."""
    stat = record.get("statistic")
    if not stat or not record.get("test"):
        return run_text(record)
    lo, hi = stat["interval"]
    if stat.get("name", "").endswith("lowest trough"):  # NO_TROUGH: a resample with no trough in the stretch
        value, lo, hi = ("no trough" if x == NO_TROUGH else number(x) for x in (stat["value"], lo, hi))
        return f"{record['test']}: {value} [{lo}, {hi}]"
    return f"{record['test']}: {in_scale(stat['value'], lo, hi)} [{number(lo)}, {number(hi)}]"


def in_scale(x: float, lo: float, hi: float) -> str:
    """``x`` as :func:`number` writes it, unless it is near 0 beside its interval's ends: then to
    their decimals (-0.0000036 [-0.0004036, 0.0004436], not -3.569e-06 [-0.0004036, 0.0004436])."""
    text, ends = number(x), (number(lo), number(hi))
    if "e" not in text or any("e" in end for end in ends):
        return text
    decimals = max(len(end.partition(".")[2]) for end in ends)
    return number(round(x, decimals)) if round(x, decimals) == 0 else f"{x:.{decimals}f}"


def sensitivity_text(record: Mapping[str, Any]) -> str:
    """For a bound derived from the published value, the fractions f the 95 % interval clears or lies past."""
    found = record.get("sensitivity")
    if not found:
        return "—"
    holds, fails = found["holds_below"], found["fails_from"]
    holds = "clears the bound for every f" if holds is None else f"clears the bound for f < {number(holds)}"
    fails = "lies past it for no f" if fails is None else f"lies past it for f ≥ {number(fails)}"
    return f"f = {number(found['fraction'])}; the interval {holds}, {fails}"


def why_undecided(record: Mapping[str, Any]) -> str | None:
    """For an inconclusive verdict, what its n could have detected; for a location, how often the
    resamples put the peak (or trough) inside the window."""
    if verdict_of(record) != INCONCLUSIVE or record.get("detectable") is None:
        return None
    if str(record.get("interval_method", "")).startswith("location"):
        return (f"too few {record['unit']} to tell: the resamples put it inside the window "
                f"{100 * (1 - record['p_holds']):.0f} % of the time")
    if record["detectable"] == 0:
        return f"every one of its {record['n_units']} {record['unit']} gives the same value, so no test can tell"
    return (f"too few {record['unit']} to tell: {record['n_units']} detect a difference of "
            f"{number(record['detectable'])} from the bound with 80 % power")


def verdict_cell(record: Mapping[str, Any]) -> str:
    """The verdict word, why a claim is undecided or not tested, and "fragile"."""
    text = word = verdict_of(record)
    if word == NOT_TESTED and record.get("reason"):
        text += f" ({record.get('status')}: {record['reason']})"
    elif undecided := why_undecided(record):
        text += f": {undecided}"
    if record.get("tested_at"):
        text += f" (its home chapter's verdict, chapter {int(record['tested_at'][:2])}, on {record['n_units']} units)"
    return text + (f" — fragile: {record['fragile']}" if record.get("fragile") else "")


def row(record: Mapping[str, Any]) -> dict[str, str]:
    """One row of a chapter's claims table."""
    published = record.get("published")
    return {
        "claim": record["statement"],
        "published (model)": f"{number(published['value'])} ({published['model']})" if published else "—",
        "this run (model)": f"{run_text(record)} ({model_name(record['model'])})",
        "verdict": verdict_cell(record),
        "test (its bound)": test_text(record),
        "result [95 % interval]": result_text(record),
        "p (test), adjusted": p_text(record),
        "null": null_text(record),
        "numeric": record.get("numeric_verdict") or "—",
        "sensitivity": sensitivity_text(record),
    }


# --------------------------------------------------------------------------- sentences

def _subject(record: Mapping[str, Any]) -> str:
    text = ((record.get("shape") or {}).get("statement") or record["statement"]).rstrip(".")
    return text[:1].upper() + text[1:]


def _lowered(text: str) -> str:
    """``text`` with its first letter in lower case, unless its first word is an acronym ("CLS", "MaxSim", "L6")."""
    first = text.split(" ", 1)[0]
    return text if sum(c.isupper() for c in first) > 1 or any(c.isdigit() for c in first) \
        else text[:1].lower() + text[1:]


MODEL_NAMES = {"all-MiniLM-L6-v2": "MiniLM", "all-mpnet-base-v2": "MPNet"}
"""Short names of the book's two encoders in tables and sentences."""


def model_name(model: str) -> str:
    """"MiniLM" for sentence-transformers/all-MiniLM-L6-v2, else the id's last path component."""
    name = model.rsplit("/", 1)[-1]
    return MODEL_NAMES.get(name, name)


def _finding(record: Mapping[str, Any]) -> str:
    """The clause a tested claim's verdict says: the ledger's ``says``, or the question left open."""
    word, says = verdict_of(record), record.get("says")
    if says and word in (HOLDS, FAILS):
        return says["holds" if word == HOLDS else "fails"]
    claim = _lowered(_subject(record))
    return {HOLDS: claim, FAILS: f"the data show the opposite of the claim that {claim}",
            INCONCLUSIVE: f"this run cannot tell whether {claim}"}.get(word, f"{claim} ({PENDING})")


def plain_sentence(record: Mapping[str, Any], models: Iterable[str] | None = None, subject: bool = True) -> str:
    """The finding in plain words on ``models`` (default: the record's own): "On MiniLM, …". A claim
    not tested names its subject unless ``subject`` is False: "Not measured on MPNet: why."."""
    record = _records([record])[0]
    names = [model_name(m) for m in (models or [record["model"]])]
    where = "both encoders" if len(names) == 2 and set(names) == set(MODEL_NAMES.values()) else " and ".join(names)
    if verdict_of(record) in (*TESTED, PENDING):
        return f"On {where}, {_finding(record)}."
    if record.get("status") == NOT_MEASURED:
        return (f"{_subject(record)}: not measured on {where} ({record.get('reason')})." if subject
                else f"Not measured on {where}: {record.get('reason')}.")
    why = f"shown on {where}, not tested ({record.get('status')})"
    return f"{_subject(record)}: {why}." if subject else f"{why[:1].upper()}{why[1:]}."


# --------------------------------------------------------------------------- box, summary, legend

def badge(record: Mapping[str, Any], root: str = "../") -> str:
    """The verdict word as a coloured badge (HTML), its meaning as tooltip, linked to the glossary under ``root``."""
    word = verdict_of(record)
    kind = BADGES.get(word, "other")
    title = html.escape(MEANINGS.get(word, word), quote=True)
    fragile = ' <span class="eg-badge eg-badge-fragile">fragile</span>' if record.get("fragile") else ""
    term = word[:1].upper() + word[1:].replace(" ", "-")  # the glossary's anchor for the word
    return (f'<a class="eg-badge eg-badge-{kind}" title="{title}" href="{root}glossary.html#term-{term}">'
            f"{html.escape(word)}</a>{fragile}")


def differences(items: Iterable[Any]) -> list[str]:
    """One sentence per claim whose verdict differs between models: "`within-dip`: holds on MPNet but …"."""
    found = []
    for claim, records in by_claim(items).items():
        groups: dict[str, list[str]] = {}
        for r in records:
            groups.setdefault(verdict_of(r), []).append(model_name(r["model"]))
        parts = [f"{word} on {' and '.join(models)}" for word, models in groups.items()]
        if len(parts) > 1:
            found.append(f"`{claim}`: " + (" but ".join(parts) if len(parts) == 2 else ", ".join(parts)) + ".")
    return found


def said(records: list[Mapping[str, Any]]) -> str:
    """One sentence when the models' verdicts agree ("On both encoders, …"), else one per model."""
    if len({verdict_of(r) for r in records}) == 1:
        return plain_sentence(records[0], [r["model"] for r in records])
    tested = any(verdict_of(r) in (*TESTED, PENDING) for r in records)
    return " ".join(plain_sentence(r, subject=not tested) for r in records)


def report(items: Iterable[Any]) -> str:
    """Claims in words for a chapter's text: one :func:`finding` per claim."""
    return "\n\n".join(finding(records) for records in by_claim(items).values()) + "\n"


def headlines(items: Iterable[Any]) -> list[Mapping[str, Any]]:
    """The ledger's headline claims (chosen by their importance to the post, never by outcome)."""
    return [r for r in _records(items) if r.get("headline")]


def _numbers(r: Mapping[str, Any]) -> str:
    """A record's :func:`row` as a small HTML table: the "numbers" fold of a finding."""
    cells = "".join(f"<tr><th>{html.escape(k)}</th><td>{maths.html(v)}</td></tr>" for k, v in row(r).items()
                    if v and v != "—")
    return f'<table class="eg-finding-table">{cells}</table>'


def by_claim(items: Iterable[Any]) -> dict[str, list[Mapping[str, Any]]]:
    """Records grouped by claim id, in ledger order: each claim's verdicts on every model."""
    grouped: dict[str, list[Mapping[str, Any]]] = {}
    for r in _records(items):
        grouped.setdefault(r["id"], []).append(r)
    return grouped


def finding(records: list[Mapping[str, Any]], root: str = "../", numbers: bool = True) -> str:
    """One claim on every model (HTML): a badge per model, :func:`said`, and each model's numbers folded."""
    folds = "".join(f"<details><summary>numbers · {model_name(r['model'])}</summary>{_numbers(r)}</details>"
                    for r in records) if numbers else ""
    badges = " ".join(f'<span class="eg-model">{model_name(r["model"])}</span> {badge(r, root)}' for r in records)
    return f'<div class="eg-finding">{badges}<br>{maths.html(said(records))}{folds}</div>'


def findings(items: Iterable[Any]) -> str:
    """The "What we found" box (HTML): the headlines in one sentence (:func:`in_short`), then each
    headline claim once (:func:`finding`), failing or not."""
    chosen = by_claim(headlines(items))
    if not chosen:
        return "*This chapter's ledger marks no headline claim.*\n"
    return f"<p>{in_short(chosen)}</p>\n" + "\n".join(finding(records) for records in chosen.values()) + "\n"


_IN_SHORT = {  # the headlines' outcome on every model: (plural, singular), by how many models tested them
    "holds": {1: ("hold", "holds"), 2: ("hold on both models", "holds on both models"),
              3: ("hold on every model", "holds on every model")},
    "fails": {1: ("do not hold", "does not hold"), 2: ("hold on neither model", "holds on neither model"),
              3: ("hold on no model", "holds on no model")},
    "differ": ("differ between the models", "differs between the models"),
    "undecided": ("are undecided on some model", "is undecided on some model"),
    "not tested": ("are not tested", "is not tested"),
}


def in_short(chosen: Mapping[str, list[Mapping[str, Any]]]) -> str:
    """The headline claims in one sentence: how many hold on every model, on none, differ between
    the models, are undecided on some model (inconclusive, or not tested there), or are not tested."""
    tested = len({r["model"] for records in chosen.values() for r in records if verdict_of(r) != NOT_TESTED})
    counts = dict.fromkeys(_IN_SHORT, 0)
    for records in chosen.values():
        words = frozenset(verdict_of(r) for r in records)
        kind = {frozenset({HOLDS}): "holds", frozenset({FAILS}): "fails", frozenset({HOLDS, FAILS}): "differ",
                frozenset({NOT_TESTED}): "not tested"}.get(words, "undecided")
        counts[kind] += 1
    parts = []
    for kind, n in counts.items():
        forms = _IN_SHORT[kind]
        forms = forms[min(max(tested, 1), 3)] if isinstance(forms, dict) else forms
        parts += [f"{n} {forms[n == 1]}"] if n else []
    listed = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    n = len(chosen)
    return f"<strong>In short:</strong> of the chapter's {n} headline claim{'s' * (n != 1)}, {listed}."


def tally(items: Iterable[Any], counted_only: bool = False) -> dict[str, int]:
    """How many claims got each verdict word (:data:`VERDICTS` order)."""
    found = [r for r in _records(items) if not counted_only or r.get("counted")]
    words = [verdict_of(r) for r in found]
    return {w: words.count(w) for w in (*VERDICTS, PENDING) if w in words}


def chapter_summary(items: Iterable[Any]) -> str:
    """The chapter summary (Markdown): the tally, the claims on which the models differ, the fragile ones."""
    found = _records(items)
    counts = ", ".join(f"{w} {n}" for w, n in tally(found).items())
    models = len({r["model"] for r in found})
    lines = [f"Of {len(by_claim(found))} claims judged on {models} model{'s' * (models != 1)} "
             f"({len(found)} verdicts) — {counts or 'none'}."]
    if differ := differences(found):
        lines.append(f"\n**The models differ** ({len(differ)}):\n")
        lines += [f"- {sentence}" for sentence in differ]
    fragile = [r for r in found if r.get("fragile")]
    if fragile:
        lines.append(f"\n**Fragile** ({len(fragile)}): " + ", ".join(f"`{r['id']}`" for r in fragile) + ".")
    return "\n".join(lines) + "\n"


def legend() -> str:
    """Every word explained once (Markdown)."""
    return "\n".join(f"- **{word}**: {meaning}." for word, meaning in MEANINGS.items()) + "\n"
