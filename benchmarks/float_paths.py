"""``make tolerances``: how far the book's numbers move when only the float arithmetic changes.

The book is built once on its own float path and once more over a perturbed path
(:mod:`embedding_geometry.core.float_path`) that changes four things at once: one thread
instead of the machine's, oneDNN off, another forward batch size, and the kernels of a CPU
without AVX-512 (AVX2 only) (``--each`` adds one build per perturbation alone, to see which
moves what). Every metric of every chapter's results
JSON is compared with the default build's, family by family
(:mod:`embedding_geometry.book.reproducibility`), and every claim's verdict with the default's.
The largest deviation of each family under each perturbation, the claims whose verdict changed,
and the tolerances the contract derives from them (a stated margin over the largest deviation,
never tighter than the contract's floor) are written to
``src/embedding_geometry/data/float_paths.json``, which the golden test and the build read.

    .venv/bin/python benchmarks/float_paths.py                  # build both, compare, write
    .venv/bin/python benchmarks/float_paths.py --each           # and each perturbation alone
    .venv/bin/python benchmarks/float_paths.py --compare-only   # compare builds already made
    .venv/bin/python benchmarks/float_paths.py --compare-only --write-golden   # and make the default
                                        # build the golden test's reference (tests/reference/golden.json.xz)

The figures an earlier run recorded on another CPU are kept beside this run's ("<name> on
<CPU>") and the tolerances cover both: the golden reference is built on one CPU and compared on
whichever CPU runs the tests.

Each build lives in ``build/float-paths/<name>/`` (a copy of the book's sources, its own cache);
a build that already holds results for every chapter is reused unless ``--fresh``.
"""

from __future__ import annotations

import argparse
import json
import lzma
import math
import os
import platform
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from embedding_geometry.book import reproducibility
from embedding_geometry.book.reproducibility import (FLOORS, MARGIN, claim_records, deviation, differences, family,
                                                      golden_record, leaves)

ROOT = Path(__file__).resolve().parents[1]
PATHS = {
    "default": "",
    "perturbed": "threads=1,onednn=off,batch_size=7,isa=avx2",
    "threads_1": "threads=1",
    "onednn_off": "onednn=off",
    "batch_size_7": "batch_size=7",
    "isa_avx2": "isa=avx2",
}
"""The builds: the book's own path, every perturbation at once, then one perturbation each
(core.float_path's spec)."""
BOTH = ("default", "perturbed")
"""What ``make tolerances`` builds unless ``--each``."""
FOLDER = ROOT / "build" / "float-paths"
COMMAND = ".venv/bin/python benchmarks/float_paths.py"


def build(name: str, spec: str, profile: str, fresh: bool) -> float | None:
    """Build the book's chapters (no site) over ``spec`` in ``build/float-paths/<name>``;
    the seconds it took, or None when an earlier complete build was reused."""
    from embedding_geometry.book.build import copy_sources
    from embedding_geometry.book.rules import slugs

    root = FOLDER / name
    expected = [slug for slug in slugs(ROOT) if not slug.startswith("9")]
    results = root / "build" / "results"
    if not fresh and all((results / f"{slug}.json").is_file() for slug in expected):
        return None
    if root.exists():
        subprocess.run(["rm", "-rf", str(root)], check=True)
    copy_sources(ROOT, root)
    env = {**os.environ, "EMBEDDING_GEOMETRY_FLOAT_PATH": spec,
           "EMBEDDING_GEOMETRY_CACHE": str(root / "build" / "cache"),
           "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    env.pop("EMBEDDING_GEOMETRY_RESULTS", None)
    start = time.time()
    command = [sys.executable, "-m", "embedding_geometry", "build", "--root", str(root), "--profile", profile,
               "--no-site", *[arg for slug in expected for arg in ("--only", slug)]]
    done = subprocess.run(command, env=env)
    if done.returncode:
        raise SystemExit(f"the build over '{spec or 'the default path'}' failed (exit {done.returncode}); "
                         f"see {root}/build/logs")
    return time.time() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--compare-only", action="store_true", help="compare the builds already made")
    parser.add_argument("--fresh", action="store_true", help="rebuild even where a complete build exists")
    parser.add_argument("--profile", default="default")
    parser.add_argument("--each", action="store_true", help="also build each perturbation alone")
    parser.add_argument("--write-golden", action="store_true",
                        help="write the default build as the golden test's reference "
                             "(a deliberate act: commit it with the reason)")
    args = parser.parse_args(argv)
    names = list(PATHS) if args.each else list(BOTH)
    if args.compare_only:  # every build already made
        names = [n for n in PATHS if (FOLDER / n / "build" / "results").is_dir()]
    seconds = {}
    if not args.compare_only:
        for name in names:
            seconds[name] = build(name, PATHS[name], args.profile, args.fresh)
            print(f"{name:>18}  {'reused' if seconds[name] is None else f'{seconds[name]:.0f} s'}", flush=True)
    measured = measure({name: FOLDER / name / "build" / "results" for name in names},
                                       {name: PATHS[name] for name in names})
    previous = json.loads(reproducibility.FIGURES.read_text()) if reproducibility.FIGURES.is_file() else None
    other_cpus = carried(previous, machine())
    if other_cpus["perturbations"]:  # tolerances that cover every CPU measured
        measured["perturbations"].update(other_cpus["perturbations"])
        measured["verdict_changes"].update(other_cpus["verdict_changes"])
        measured["tolerances"] = derive(measured["perturbations"])
    measured["run"] = {"command": COMMAND, "profile": args.profile, "commit": _commit(),
                       "date": time.strftime("%Y-%m-%d"),
                       "machine": machine(), "python": platform.python_version()}
    target = reproducibility.FIGURES
    target.write_text(json.dumps(measured, indent=1, sort_keys=True) + "\n")
    print(report(measured))
    print(f"wrote {target.relative_to(ROOT)}")
    if args.write_golden:
        write_golden(FOLDER / "default" / "build" / "results", measured["run"])
    return 0


def carried(previous: dict | None, here: str) -> dict:
    """The perturbations ``previous`` figures measured on another CPU than ``here`` (with their
    verdict changes), renamed "<name> on <CPU>", so that the tolerances derived with them cover
    both CPUs: a golden reference built on one CPU is compared on whichever CPU runs the tests."""
    if not previous:
        return {"perturbations": {}, "verdict_changes": {}}
    out: dict = {"perturbations": {}, "verdict_changes": {}}
    for name, found in previous["perturbations"].items():
        cpu = found.get("machine", previous["run"]["machine"])
        if cpu == here:
            continue
        key = name if found.get("machine") else f"{name} on {cpu}"
        out["perturbations"][key] = {**found, "machine": cpu, "spec": found["spec"] if found.get("machine")
                                     else f"{found['spec']} ({cpu}, {previous['run']['date']})"}
        out["verdict_changes"][key] = previous["verdict_changes"].get(name, [])
    return out


# --------------------------------------------------------------------------- the figures

def largest(chapter: str, reference: Any, value: Any) -> dict[str, dict[str, Any]]:
    """Per family, the largest deviation of ``value`` from ``reference`` and where it is."""
    mine = {path: v for path, v, _, _ in leaves(value)}
    out: dict[str, dict[str, Any]] = {}
    for path, a, scale, total in leaves(reference):
        if path not in mine:
            continue
        name = family(chapter, path, a)
        d = deviation(name, a, mine[path], scale, total)
        if d > out.get(name, {}).get("max", -1.0):
            out[name] = {"max": d, "where": f"{chapter}:{path}", "reference": a, "value": mine[path]}
    return out



def measure(folders: Mapping[str, Path], specs: Mapping[str, str], base: str = "default") -> dict[str, Any]:
    """Compare every perturbed build's results JSON with the ``base`` build's: per perturbation
    and family, the largest deviation (and where); the claims whose verdict changed (and whether
    either build marked them fragile by their margin); the tolerances they give (:func:`derive`);
    and, per perturbation, what the golden test would report against the base build with those
    tolerances and the changed verdicts recorded (``golden``: empty when it passes)."""
    reference = {p.stem: json.loads(p.read_text()) for p in sorted(Path(folders[base]).glob("*.json"))}
    perturbations, changed, builds = {}, {}, {}
    for name, folder in folders.items():
        if name == base:
            continue
        worst: dict[str, dict[str, Any]] = {}
        flips = []
        builds[name] = {}
        for chapter, ref in reference.items():
            path = Path(folder) / f"{chapter}.json"
            if not path.is_file():
                raise FileNotFoundError(f"the '{name}' build has no results for {chapter} ({path})")
            other = builds[name][chapter] = json.loads(path.read_text())
            for fam, found in largest(chapter, golden_record(ref)["metrics"], golden_record(other)["metrics"]).items():
                if found["max"] > worst.get(fam, {}).get("max", -1.0):
                    worst[fam] = found
            mine = claim_records(other)
            flips += [{"chapter": chapter, "claim": key, "default": v["verdict"],
                       "perturbed": mine.get(key, {}).get("verdict"),
                       "fragile_by_margin": bool(v["fragile"] or mine.get(key, {}).get("fragile"))}
                      for key, v in claim_records(ref).items() if mine.get(key, {}).get("verdict") != v["verdict"]]
        perturbations[name] = {"spec": specs[name], "largest": worst}
        changed[name] = flips
    tolerance = derive(perturbations)
    recorded = {(f["chapter"], f["claim"]) for flips in changed.values() for f in flips}
    for name, found in perturbations.items():
        found["golden"] = [f"{chapter}.{d['path']}" for chapter, ref in reference.items()
                           for d in differences(chapter, golden_record(ref)["metrics"],
                                                golden_record(builds[name][chapter])["metrics"], tolerance)]
        found["golden"] += [f"{f['chapter']}: {f['claim']}" for f in changed[name]
                            if not f["fragile_by_margin"] and (f["chapter"], f["claim"]) not in recorded]
    return {"perturbations": perturbations, "verdict_changes": changed, "tolerances": tolerance,
            "margin": MARGIN, "floors": dict(FLOORS)}



def derive(perturbations: Mapping[str, Any]) -> dict[str, float]:
    """Each family's tolerance: :data:`MARGIN` × the largest deviation any perturbation caused,
    rounded up (:func:`round_up`), and at least the family's floor (share and count: a
    deviation of 0 gives 0, and a rule still allows what the floor allows). A noise deviation is
    already a log₁₀ ratio, so there the margin adds log₁₀ MARGIN and the result is rounded up to
    a whole number of orders of magnitude; a depth index moves in whole steps, so its tolerance
    is the largest step measured."""
    out = {}
    for name, floor in FLOORS.items():
        worst = max((p["largest"].get(name, {}).get("max", 0.0) for p in perturbations.values()), default=0.0)
        if math.isinf(worst):
            raise ValueError(f"a perturbed build changed a '{name}' metric beyond comparison: see its 'where'")
        if name == "noise":
            out[name] = max(floor, float(math.ceil(worst + math.log10(MARGIN))) if worst > 0 else 0.0)
            continue
        if name == "depth":  # whole steps: the largest measured, no margin
            out[name] = max(floor, float(math.ceil(worst)))
            continue
        scaled = MARGIN * worst
        out[name] = max(floor, round_up(scaled) if scaled > 0 else 0.0)
    return out



def round_up(x: float) -> float:
    """The least of 1, 2 and 5 times a power of ten that is ≥ ``x`` > 0 (0.32 → 0.5, 0.019 → 0.02):
    a tolerance as readable as a power of ten, and at most 2.5 times the margin's product."""
    power = 10.0 ** math.floor(math.log10(x))
    return next(step * power for step in (1, 2, 5, 10) if step * power >= x * (1 - 1e-12))



def machine() -> str:
    """The CPU's model name (Linux), else the platform's processor string."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()



def report(measured: Mapping[str, Any]) -> str:
    """The figures as a text table: per perturbation and family, the largest deviation."""
    names = list(FLOORS)
    lines = [f"{'perturbation':<20}" + "".join(f"{n:>12}" for n in names) + f"{'verdicts changed':>18}"]
    for name, found in measured["perturbations"].items():
        cells = "".join(f"{found['largest'].get(n, {}).get('max', 0.0):>12.3g}" for n in names)
        lines.append(f"{name:<20}{cells}{len(measured['verdict_changes'][name]):>18}")
    lines.append(f"{'tolerance':<20}" + "".join(f"{measured['tolerances'][n]:>12.3g}" for n in names))
    return "\n".join(lines)


GOLDEN = ROOT / "tests" / "reference" / "golden.json.xz"


def write_golden(results: Path, run: dict) -> None:
    """The default build's golden record (metrics without per-unit samples, draws as percentiles,
    verdicts: reproducibility.golden_record), chapter by chapter, as the golden
    test's reference: JSON compressed with xz (``xzcat`` reads it), about 0.5 MB for 225,000 lines."""
    chapters = {p.stem: reproducibility.golden_record(json.loads(p.read_text()))
                for p in sorted(results.glob("0*.json"))}
    about = {**run, "command": f"{COMMAND} --compare-only --write-golden", "float_path": ""}
    text = json.dumps({"about": about, "chapters": chapters}, indent=1, sort_keys=True) + "\n"
    GOLDEN.write_bytes(lzma.compress(text.encode(), preset=9))
    print(f"wrote {GOLDEN.relative_to(ROOT)} ({len(chapters)} chapters, {GOLDEN.stat().st_size / 1e6:.2f} MB)")


def _commit() -> str:
    done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    return done.stdout.strip() or "unknown"


if __name__ == "__main__":
    sys.exit(main())
