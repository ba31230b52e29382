"""Hypothesis strategies and checks shared by the fuzz suites (tests/test_fuzz_*.py).

Every suite runs with :data:`FUZZ`: derandomized and without an example database, so the same
cases run on every machine and every run (CI is reproducible), and without deadlines (this
machine is shared and its timings are noisy). Each property tries :func:`budget` examples: in
``make test`` few enough to take seconds; ``HYPOTHESIS_PROFILE=deep`` multiplies them for a long
run, and every failure a deep run finds becomes a fixed case (an ``@example`` or a case list).
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

PROFILES = {"default": 1, "deep": 20}
"""``$HYPOTHESIS_PROFILE`` → how many times its ``make test`` budget each property tries."""
PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "default")
if PROFILE not in PROFILES:
    raise ValueError(f"HYPOTHESIS_PROFILE expects one of {', '.join(map(repr, PROFILES))}; got {PROFILE!r}")


def budget(examples: int) -> int:
    """The examples a property tries in this run: ``examples`` in ``make test``, and
    ``PROFILES[PROFILE]`` times as many under ``HYPOTHESIS_PROFILE=deep``."""
    return examples * PROFILES[PROFILE]


FUZZ = settings(derandomize=True, database=None, deadline=None, print_blob=False,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.function_scoped_fixture])

# --------------------------------------------------------------------------- values

ODD_TEXT = ["", " ", "\t\n", "\x00", "\x1b[31mred", "\u202eright-to-left", "שלום עולם", "مرحبا بالعالم",
            "😀👍🏽", "\u200b\u200d", "[CLS] [SEP]", "<s></s>", "a\nb", "'\"", "\\", "null", "~", "yes",
            "2020-13-45", "0x1F", ".inf", "auto ", "CPU", "a" * 300]
"""Strings that have broken parsers and validators before: empty, blank, control characters,
bidirectional and non-Latin scripts, emoji, zero-width characters, special tokens, YAML words."""

texts = st.one_of(st.sampled_from(ODD_TEXT), st.text(max_size=12),
                  st.text(st.characters(codec="utf-8"), min_size=1, max_size=6))
scalars = st.one_of(
    st.none(), st.booleans(),
    st.integers(), st.sampled_from([0, -1, 1, 2, 3, 102, 512, 675, 4096, 4097, 2**32, 2**63, -2**63 - 1, 10**4000]),
    st.floats(), st.sampled_from([0.0, -0.0, 0.5, 1.0, 1.0000001, 1e308, float("nan"), float("inf")]),
    texts, st.binary(max_size=8), st.dates(), st.datetimes(),
    st.sampled_from([complex(1, 2), b"", bytearray(b"x"), range(3), Ellipsis, object(), type, print]),
    st.sampled_from(["auto", "cpu", "cuda", "project", "snli", "word", "all", "corpus", "wikitext"]),
)
"""One value of every type a user (or YAML, or a notebook cell) can produce, and some more."""

near_valid = st.one_of(
    st.lists(texts, max_size=6), st.lists(st.sampled_from(["a", "b", "a"]), max_size=5),
    st.lists(st.floats(-1, 2) | st.integers(-1, 2), max_size=4),
    st.dictionaries(texts, st.lists(texts, max_size=3), max_size=3),
    st.fixed_dictionaries({"queries": st.lists(texts, max_size=3), "pool": st.lists(texts, max_size=4),
                           "relevant": st.lists(st.integers(-1, 4) | st.booleans(), max_size=3)}),
)
"""Lists and mappings close to the shapes the rules accept: lists of strings, pairs, retrieval sets."""

shaped = near_valid | st.tuples(texts, texts) | st.frozensets(st.integers(), max_size=3)

values = st.recursive(st.one_of(scalars, shaped),
                      lambda inner: st.lists(inner, max_size=4) | st.dictionaries(texts | st.integers(), inner,
                                                                                  max_size=3),
                      max_leaves=12)
"""Any value: scalars, near-valid shapes, and lists and mappings nesting both."""

yaml_scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), texts,
                         st.sampled_from([2**63, 10**300, float("nan")]))
yaml_values = st.recursive(yaml_scalars | near_valid,
                           lambda inner: st.lists(inner, max_size=4) | st.dictionaries(texts, inner, max_size=3),
                           max_leaves=10)
"""What ``yaml.safe_dump`` can write: the values a profile can hold."""


# --------------------------------------------------------------------------- checks

def one_line(message: str) -> bool:
    """A message a reader meets as one line: no line break of any kind, no traceback, not empty."""
    return bool(message.strip()) and len(message.splitlines()) == 1 and "Traceback" not in message


def snapshot(*folders: Path) -> dict[str, str]:
    """SHA-256 of every file under ``folders`` (what must stay byte-identical)."""
    return {str(path): hashlib.sha256(path.read_bytes()).hexdigest()
            for folder in folders for path in sorted(Path(folder).rglob("*")) if path.is_file()}


def unchanged(before: dict[str, str]) -> bool:
    """Whether every file of a :func:`snapshot` still exists with the same bytes."""
    return all(Path(name).is_file() and hashlib.sha256(Path(name).read_bytes()).hexdigest() == digest
               for name, digest in before.items())


BOUNDS = re.compile(r"in \[([^,\]]+), ([^\]]+)\]|≥ (\S+)|≤ (\S+)")


def within_stated_bounds(expects: str, number: float) -> bool:
    """Whether ``number`` lies within the bounds a rule's ``expects`` text states."""
    match = BOUNDS.search(expects)
    if not match:
        return True
    low, high, at_least, at_most = (float(g) if g else None for g in match.groups())
    low = at_least if low is None else low
    high = at_most if high is None else high
    return (low is None or number >= low) and (high is None or number <= high)


def of_expected_kind(expects: str, value) -> bool:
    """Whether ``value``, which a rule accepted, is of the kind its ``expects`` text describes
    (a rule text this does not know passes: the suite's other checks still apply)."""
    if expects.startswith("None or "):
        return value is None or of_expected_kind(expects[len("None or "):], value)
    strings = isinstance(value, list) and all(isinstance(s, str) and s.strip() for s in value)
    if expects.startswith("an integer"):
        return isinstance(value, int) and not isinstance(value, bool) and within_stated_bounds(expects, value)
    if expects.startswith("a number"):
        return isinstance(value, float) and within_stated_bounds(expects, value)
    if expects == "true or false":
        return isinstance(value, bool)
    if expects.startswith("one of "):
        return value in re.findall(r"'([^']*)'", expects)
    if expects == "a non-empty string":
        return isinstance(value, str) and bool(value.strip())
    if expects.startswith("a list of at least"):
        return strings and len(value) >= int(expects.split()[5]) and len(set(value)) == len(value)
    if expects.startswith("a non-empty list of model ids"):
        return strings and len(value) > 0
    if expects.startswith("a list of two different"):
        return strings and len(value) == 2 and value[0] != value[1]
    if expects.startswith("a non-empty list of numbers"):
        return (isinstance(value, list) and len(value) > 0
                and all(isinstance(x, float) and within_stated_bounds(expects, x) for x in value))
    if expects.startswith("a mapping {pair name"):
        return isinstance(value, dict) and all(
            isinstance(k, str) and isinstance(p, list) and len(p) == 2 and all(isinstance(s, str) for s in p)
            for k, p in value.items())
    if expects.startswith('{"queries"'):
        return (isinstance(value, dict) and set(value) == {"queries", "pool", "relevant"}
                and len(value["relevant"]) == len(value["queries"])
                and all(0 <= r < len(value["pool"]) for r in value["relevant"]))
    return True

