"""``make test-times``: the test suite run once, timed, its slowest tests recorded.

Runs pytest (``make test``'s selection unless other arguments are given) with a JUnit report,
and writes under ``tests`` in ``build/bench.json``: the run's wall seconds, its exit status, how
many tests passed, failed and were skipped, the load average before and after (a figure taken
under load says so), and the slowest 50 tests with their seconds (setup, call and teardown
together, so a shared build counts against the first test that asks for it). ``make bench``
keeps the section.

    .venv/bin/python benchmarks/suite_times.py                       # what `make test-times` runs
    .venv/bin/python benchmarks/suite_times.py -m "not slow and not browser"   # make test-fast's tests
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SLOWEST = 50


def read_junit(path: Path) -> tuple[dict[str, int], list[dict]]:
    """Counts of passed, failed (failures and errors) and skipped tests, and every test with its
    seconds, slowest first, from a JUnit XML report as pytest writes it."""
    counts, tests = {"passed": 0, "failed": 0, "skipped": 0}, []
    for case in ET.parse(path).getroot().iter("testcase"):
        tags = {child.tag for child in case}
        outcome = "failed" if tags & {"failure", "error"} else "skipped" if "skipped" in tags else "passed"
        counts[outcome] += 1
        module = case.get("classname", "").replace(".", "/")
        tests.append({"test": f"{module}.py::{case.get('name')}", "seconds": round(float(case.get("time", 0)), 2),
                      "outcome": outcome})
    return counts, sorted(tests, key=lambda t: -t["seconds"])


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    with tempfile.TemporaryDirectory() as folder:
        report = Path(folder) / "junit.xml"
        load_before, began = os.getloadavg(), time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "pytest", f"--junitxml={report}", "--durations=10", *args],
                              cwd=ROOT)
        wall, load_after = time.perf_counter() - began, os.getloadavg()
        if not report.is_file():
            print(f"pytest wrote no report (exit {done.returncode}); nothing recorded", file=sys.stderr)
            return done.returncode or 1
        counts, tests = read_junit(report)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    section = {"wall_s": round(wall, 1), "exit": done.returncode, "counts": counts,
               "load_average": {"before": [round(x, 2) for x in load_before],
                                "after": [round(x, 2) for x in load_after]},
               "slowest": tests[:SLOWEST],
               "machine": {"platform": platform.platform(), "cpus": os.cpu_count(),
                           "measured_at": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
                           "commit": commit.stdout.strip() or "unknown",
                           "command": " ".join(["pytest", *args])}}
    out = ROOT / "build" / "bench.json"
    document = json.loads(out.read_text()) if out.is_file() else {}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({**document, "tests": section}, indent=1))
    print(f"\n{sum(counts.values())} tests ({', '.join(f'{n} {k}' for k, n in counts.items())}) in {wall:.0f} s "
          f"(load average {load_before[0]:.1f} before, {load_after[0]:.1f} after); the slowest ten:")
    for test in tests[:10]:
        print(f"{test['seconds']:8.1f} s  {test['test']}")
    print(f"written: {out.relative_to(ROOT)} (tests)")
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
