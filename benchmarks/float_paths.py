"""``make tolerances``: how far the book's numbers move when only the float arithmetic changes.

The book is built once on its own float path and once more over a perturbed path
(:mod:`embedding_geometry.core.float_path`) that changes all five things at once: one thread
instead of the machine's, oneDNN off, BERT's unfused attention, another forward batch size,
and the kernels of a CPU without AVX-512 (AVX2 only)
(``--each`` adds one build per perturbation alone, to see which moves what). Every metric of every chapter's results
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
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PATHS = {
    "default": "",
    "perturbed": "threads=1,onednn=off,attention=unfused,batch_size=7,isa=avx2",
    "threads_1": "threads=1",
    "onednn_off": "onednn=off",
    "attention_unfused": "attention=unfused",
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
    from embedding_geometry.book import reproducibility

    names = list(PATHS) if args.each else list(BOTH)
    if args.compare_only:  # every build already made
        names = [n for n in PATHS if (FOLDER / n / "build" / "results").is_dir()]
    seconds = {}
    if not args.compare_only:
        for name in names:
            seconds[name] = build(name, PATHS[name], args.profile, args.fresh)
            print(f"{name:>18}  {'reused' if seconds[name] is None else f'{seconds[name]:.0f} s'}", flush=True)
    measured = reproducibility.measure({name: FOLDER / name / "build" / "results" for name in names},
                                       {name: PATHS[name] for name in names})
    previous = json.loads(reproducibility.FIGURES.read_text()) if reproducibility.FIGURES.is_file() else None
    other_cpus = carried(previous, reproducibility.machine())
    if other_cpus["perturbations"]:  # tolerances that cover every CPU measured
        measured["perturbations"].update(other_cpus["perturbations"])
        measured["verdict_changes"].update(other_cpus["verdict_changes"])
        measured["tolerances"] = reproducibility.derive(measured["perturbations"])
    measured["run"] = {"command": COMMAND, "profile": args.profile, "commit": _commit(),
                       "date": time.strftime("%Y-%m-%d"),
                       "machine": reproducibility.machine(), "python": platform.python_version()}
    target = reproducibility.FIGURES
    target.write_text(json.dumps(measured, indent=1, sort_keys=True) + "\n")
    print(reproducibility.report(measured))
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


GOLDEN = ROOT / "tests" / "reference" / "golden.json.xz"


def write_golden(results: Path, run: dict) -> None:
    """The default build's golden record (metrics without per-unit samples, draws as percentiles,
    verdicts: reproducibility.golden_record), chapter by chapter, as the golden
    test's reference: JSON compressed with xz (``xzcat`` reads it), about 0.5 MB for 225,000 lines."""
    from embedding_geometry.book import reproducibility

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
