"""The Performance page: the build against the book's time budget (:func:`budget_table`), the
figures ``make bench`` measured (``build/bench.json``), with their targets, date and commit, or,
when the benchmarks were not run, the seconds each chapter's last run took as the build
recorded them (``build/state/<chapter>.json``); and the float-path deviations and tolerances
``make tolerances`` measured (:class:`FloatPathReport`)."""

from __future__ import annotations

import datetime
import html
import json
from pathlib import Path
from typing import Any

import pandas as pd

from . import results
from ..core import clock, paths
from .claims import words
from .pages import HtmlTable, chapter_label
from .reproducibility import FLOORS


SENSES = {"≥": float.__ge__, "≤": float.__le__, "<": float.__lt__}
"""How a benchmark figure is judged against its target."""
FIGURE = {"section": str, "figure": str, "value": (int, float), "detail": str}
CHAPTER_TIMES = {"wall_s": (int, float), "forward_s": (int, float), "analysis_s": (int, float),
                 "fixed_s": (int, float), "to_first_model_use_s": (int, float), "model_used": bool}


def load_bench(name: str = "build/bench.json") -> dict[str, Any] | None:
    """The figures ``make bench`` wrote (``name`` relative to the book's root), checked (what the
    page shows: ``figures``, ``machine``, the builds' chapters), or None when the benchmarks
    were not run. A damaged file is one line naming it and ``make bench``."""
    path = (paths.project_root() or Path.cwd()) / name
    if not path.is_file():
        return None
    bench = results.read_mapping(path, remedy := "remake it: make bench", "benchmark file")
    if problem := _bench_problem(bench):
        raise results.DamagedResultsError(
            f"benchmark file {results.shown_path(path)} is not usable: {problem}; {remedy}")
    return bench


def _bench_problem(bench: dict[str, Any]) -> str | None:
    figures, machine = bench.get("figures", []), bench.get("machine", {})
    if not isinstance(figures, list) or not isinstance(machine, dict):
        return "figures is not a list, or machine not an object"
    for i, f in enumerate(figures):
        if not isinstance(f, dict) or (problem := results.field_problem(f, FIGURE, f"figures[{i}].")):
            return problem or f"figures[{i}] is not an object"
        if not (f.get("sense") is None or f["sense"] in SENSES and isinstance(f.get("target"), (int, float))) \
                or not isinstance(f.get("met"), (bool, type(None))):
            return f"figures[{i}] has no valid sense, target and met"
    for section in ("build", "mpnet_build"):
        chapters = bench.get(section, {}).get("chapters", {}) if isinstance(bench.get(section), dict) else {}
        for slug, times in chapters.items() if isinstance(chapters, dict) else [("", None)]:
            if not isinstance(times, dict):
                return f"{section}.chapters is not a mapping of objects"
            if problem := results.field_problem(times, CHAPTER_TIMES, f"{section}.{slug}."):
                return problem
    return None


def figure(section: str, name: str, value: float, sense: str | None, target: float | None, detail: str = "",
           met: bool | None = None) -> dict[str, Any]:
    """One figure of ``make bench`` as ``build/bench.json`` records it: ``met`` is judged as
    ``value sense target`` (:data:`SENSES`) unless given; a figure without a target is
    information (met None). ``section`` is the benchmark section that measured it."""
    if met is None and sense is not None:
        met = bool(SENSES[sense](float(value), float(target)))
    return {"section": section, "figure": name, "value": value, "sense": sense, "target": target,
            "met": met, "detail": detail}


def performance_table(bench: dict[str, Any]) -> pd.DataFrame:
    """One row per recorded figure: figure, measured, target ("≥ 0.7", or "information"), met
    (yes / no / —), detail."""
    rows = [(f["figure"], f["value"], f"{f['sense']} {f['target']:g}" if f["sense"] else "information",
             {True: "yes", False: "no"}.get(f["met"], "—"), f["detail"]) for f in bench.get("figures", [])]
    return pd.DataFrame(rows, columns=["figure", "measured", "target", "met", "detail"])


def build_table(bench: dict[str, Any], section: str = "build") -> pd.DataFrame:
    """The cold build of ``section`` per chapter: wall seconds split into model calls (forward
    passes, training steps), analysis and fixed overhead, and the seconds from the kernel's start to its first model use
    (to its open, for a page that calls no model), wall and the kernel's CPU seconds; a chapter
    that ran alongside the others (in a process of its own, overlapping them) says so."""
    chapters = bench.get(section, {}).get("chapters", {})
    rows = [(f"{slug} (alongside)" if c.get("alongside") else slug, c["wall_s"], c["forward_s"], c["analysis_s"],
             c["fixed_s"],
             c["to_first_model_use_s"] if c["model_used"] else f"{c['to_first_model_use_s']} (no model)",
             c.get("cpu_to_first_model_use_s") or "—") for slug, c in chapters.items()]
    return pd.DataFrame(rows, columns=["chapter", "wall s", "model s", "analysis s", "fixed s",
                                       "start → first model use s", "its CPU s"])


MPNET_ALONE = "make bench BENCH_ARGS='--skip roofline cache batching memory atlas build'"
"""The command that measures the cold build on params/mpnet.yaml alone (``make bench`` skips it)."""


def budget_table(bench: dict[str, Any] | None, times: pd.DataFrame | None = None) -> pd.DataFrame:
    """The builds against the book's time budget (``clock.BUILD_BUDGET_S``: a cold build of the
    default profile, the venv set-up excluded), one row each: build, seconds, budget, met (yes /
    no / —) and how the seconds were measured. The default build's seconds are ``make bench``'s
    cold build when it was measured, else the sum of the chapters' last runs this build recorded
    (``times``, :func:`chapter_times`; said so, with what that sum leaves out), else "not
    measured"; the cold build on params/mpnet.yaml is information, with its date and commit, or
    "not measured" and the command that measures it."""
    limit = clock.BUILD_BUDGET_S
    rows = []
    cold = (bench or {}).get("build")
    if cold and _seconds(cold) and cold.get("profile") == "default":
        rows.append(("cold build, default profile", cold["cold_s"], f"≤ {limit} s", _yes(cold["cold_s"] <= limit),
                     f"make bench: a cold build (empty activation cache, venv set-up excluded){_when(cold)}"))
    elif times is not None and not times.empty:
        total = round(float(times["seconds"].sum()), 1)
        rows.append(("this build's chapters, summed", total, f"≤ {limit} s", _yes(total <= limit),
                     "not a cold build (make bench did not measure one): the sum of each chapter's last run as this "
                     "build recorded it (build/state), without the site build; a chapter run alongside the others "
                     "counts in full, and a chapter that read forward passes from the cache ran faster than it would "
                     "cold"))
    else:
        rows.append(("cold build, default profile", "not measured", f"≤ {limit} s", "—",
                     "make bench measures it; this build recorded no chapter's run"))
    mpnet = (bench or {}).get("mpnet_build")
    if mpnet and _seconds(mpnet):
        rows.append(("cold build, params/mpnet.yaml", mpnet["cold_s"], "information", "—",
                     f"make bench: a cold build{_when(mpnet)}"))
    else:
        rows.append(("cold build, params/mpnet.yaml", "not measured", "information", "—",
                     f"make bench skips it by default (it is long); {MPNET_ALONE} measures it"))
    return pd.DataFrame(rows, columns=["build", "seconds", "budget", "met", "how it was measured"])


def _seconds(report: dict[str, Any]) -> bool:
    """Whether a build's report holds its cold seconds (a number)."""
    return isinstance(report.get("cold_s"), (int, float)) and not isinstance(report.get("cold_s"), bool)


def _yes(met: bool) -> str:
    return "yes" if met else "no"


def _when(report: dict[str, Any]) -> str:
    """``; measured <date> at commit <commit>``, as far as the report recorded them."""
    return (f", measured {report.get('measured_at', 'on an unrecorded date')} at commit "
            f"{report.get('commit', 'unrecorded')}")


def chapter_times(root: Path | None = None) -> pd.DataFrame:
    """Each chapter's last successful run as the build recorded it in ``build/state/<chapter>.json``:
    its seconds (papermill's whole run: the kernel's start, every cell, the results written) and
    when it ended (UTC, from the file's time); the reference pages (98, 99) are left out."""
    rows = []
    for path in sorted(((root or paths.project_root() or Path.cwd()) / "build" / "state").glob("[!.]*.json")):
        try:
            seconds = json.loads(path.read_text(encoding="utf-8")).get("seconds")
        except (OSError, ValueError, AttributeError):
            continue
        head = path.stem.split("_", 1)[0]
        if isinstance(seconds, (int, float)) and not (head.isdigit() and int(head) >= 90):
            ended = datetime.datetime.fromtimestamp(path.stat().st_mtime, datetime.timezone.utc)
            rows.append((chapter_label(path.stem), round(float(seconds), 1), ended.strftime("%Y-%m-%d %H:%M")))
    return pd.DataFrame(rows, columns=["chapter", "seconds", "last run (UTC)"])


class PerformanceReport:
    """The Performance page's body: the builds against the time budget (:func:`budget_table`);
    the figures of the last ``make bench`` with their date and commit, targets and met flags,
    the cold build per chapter and the machine; without a benchmark file, the seconds each
    chapter's last run took, as this build recorded them (:func:`chapter_times`, unless ``times``
    is given), and the command that measures more."""

    def __init__(self, bench: dict[str, Any] | None, times: pd.DataFrame | None = None):
        self.bench = bench
        self.times = times if times is not None else chapter_times()

    def __repr__(self) -> str:
        return f"performance report: {len(performance_table(self.bench or {}))} figures"

    def _repr_html_(self) -> str:
        budget = (f"<h3>The time budget</h3><p>A cold build of the default profile must take at most "
                  f"{clock.BUILD_BUDGET_S // 60} minutes on the quiet 2-core machine, the venv set-up excluded.</p>"
                  + HtmlTable(budget_table(self.bench, self.times))._repr_html_())
        table = performance_table(self.bench or {})
        if table.empty:
            intro = ("<p>The benchmarks were not run for this build: <code>make bench</code> measures them, then "
                     "<code>make book</code> shows them here.")
            if self.times is None or self.times.empty:
                return budget + intro + "</p>"
            total = self.times["seconds"].sum()
            return (budget + intro + f" What the build itself recorded: each chapter's last run, {total:.0f} s in "
                    "all (the kernel's start, every cell and its results written; taken on the machine that built "
                    "this site, under whatever else it was running).</p>" + HtmlTable(self.times)._repr_html_())
        machine = self.bench.get("machine", {})
        stamp = (f"<p>Measured by <code>make bench</code> on {_e(machine.get('measured_at', 'an unrecorded date'))} "
                 f"at commit <code>{_e(machine.get('commit', 'unrecorded'))}</code>.</p>")
        machine = pd.DataFrame(list(machine.items()), columns=["machine", "value"])
        parts = [("Figures", HtmlTable(table)),
                 ("The cold build, chapter by chapter", HtmlTable(build_table(self.bench))),
                 ("The cold build on params/mpnet.yaml, chapter by chapter",
                  HtmlTable(build_table(self.bench, "mpnet_build"))),
                 ("Machine and command", HtmlTable(machine))]
        return budget + stamp + "".join(f"<h3>{title}</h3>{part._repr_html_()}" for title, part in parts
                                        if not part.frame.empty)


FAMILY_NAMES = {"float": "float (× scale)", "trained": "trained (× scale)", "share": "share",
                "count": "count (× total)", "noise": "noise (decades)", "depth": "depth (steps)"}
"""The columns of the float-path table: each family of the reproducibility contract, with its unit."""


def float_path_table(found: dict[str, Any]) -> pd.DataFrame:
    """Per perturbed float path (``make tolerances``), the largest deviation of each family of
    metric from the build on the book's own path, and how many verdicts changed; the last row the
    tolerance the contract derives from them."""
    rows = [{"perturbed path": spec["spec"], **{label: words.number(spec["largest"].get(family, {}).get("max", 0.0))
                                                for family, label in FAMILY_NAMES.items()},
             "verdicts changed": len(found["verdict_changes"][name])}
            for name, spec in found["perturbations"].items()]
    tolerance = {**FLOORS, **found["tolerances"]}  # figures measured before a family existed: its floor
    label = f"tolerance ({words.number(found['margin'])} × the largest, rounded up to 1, 2 or 5 × 10ⁿ)"
    rows.append({"perturbed path": label,
                 **{label: words.number(tolerance[family]) for family, label in FAMILY_NAMES.items()},
                 "verdicts changed": "—"})
    return pd.DataFrame(rows)


class FloatPathReport:
    """The measured float-path deviations and the contract's tolerances (:func:`float_path_table`),
    the verdicts a perturbed path changed, and the command, commit and CPU they were measured
    with; without figures, one sentence and the command."""

    def __init__(self, found: dict[str, Any] | None):
        self.found = found

    def __repr__(self) -> str:
        return f"float-path figures: {len((self.found or {}).get('perturbations', {}))} perturbed paths"

    def _repr_html_(self) -> str:
        if not self.found:
            return "<p>The float-path figures were not measured. Run <code>make tolerances</code>.</p>"
        run = self.found["run"]
        flips = pd.DataFrame([{"path": self.found["perturbations"][name]["spec"], "chapter": f["chapter"],
                               "claim": f["claim"], "own path": f["default"], "perturbed": f["perturbed"],
                               "fragile by its margin": "yes" if f["fragile_by_margin"] else "no"}
                              for name, flips in self.found["verdict_changes"].items() for f in flips])
        where = {spec["spec"]: pd.DataFrame([{"family": family, **_located(worst["where"])}
                                             for family, worst in spec["largest"].items() if worst["max"] > 0])
                 for spec in self.found["perturbations"].values()}
        measured = (f"<p>Measured with <code>{_e(run['command'])}</code> (profile {_e(run['profile'])}) at commit "
                    f"{_e(run['commit'])} on {_e(run['date'])}, on a {_e(run['machine'])}.</p>")
        parts = [HtmlTable(float_path_table(self.found))._repr_html_(), measured]
        if not flips.empty:
            parts.append("<h4>Verdicts a perturbed path changed (each is marked fragile)</h4>"
                         + HtmlTable(flips)._repr_html_())
        parts += [f"<details><summary>Where each largest deviation is, on the path <code>{_e(spec)}</code></summary>"
                  + HtmlTable(frame)._repr_html_() + "</details>" for spec, frame in where.items() if not frame.empty]
        return "".join(parts)


def _located(where: str) -> dict[str, str]:
    """A metric's place, ``chapter:a.b.c[i][j]``, as its chapter and its key path with a space
    around each step, so that a table cell wraps between steps rather than inside a name (a word
    joiner, U+2060, between ``][``, where a browser would otherwise break)."""
    chapter, _, path = where.partition(":")
    return {"chapter": chapter, "metric": " · ".join(path.split(".")).replace("][", "]\u2060[")}


def _e(value: Any) -> str:
    return html.escape(str(value))
