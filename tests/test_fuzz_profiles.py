"""Fuzz the profile a user passes to ``python -m embedding_geometry build --profile X``.

Generated profiles — malformed YAML, wrong types, unknown keys, huge lists, non-UTF-8 bytes,
damaged copies of the real profiles — go through the command line's ``main`` in-process (the
same code as the real entry point, which one case also runs as a subprocess). Chapters are not
executed: ``run_chapter`` is replaced by a recorder, so a profile that passes gives the
parameters each chapter would have received. Each case must either pass, giving every chapter
exactly the values the profile sets, or exit 1 with one line per problem naming the file (and,
for YAML syntax, the line and column) and what is expected — never a traceback; and the
earlier outputs (results JSON, executed notebooks, build state, cache) stay byte-identical.
"""

from __future__ import annotations

import contextlib
import io
import re
import subprocess
import sys

import pytest
import yaml
from hypothesis import example, given, settings
from hypothesis import strategies as st

from conftest import ROOT, copy_book
from embedding_geometry import __main__ as cli
from embedding_geometry.book import build, rules, schedule
from fuzz_values import FUZZ, budget, one_line, snapshot, texts, yaml_values

SLUGS = rules.slugs(ROOT)
NAMES = sorted(set().union(*rules.chapters().values()))
PREVIOUS = {  # earlier outputs of a build: none of them may change
    "build/results/02_similarity_attractor.json": b'{"chapter": "02_similarity_attractor", "metrics": {"x": 1}}',
    "book/chapters/02_similarity_attractor.ipynb": b'{"cells": [], "nbformat": 4, "nbformat_minor": 5, "metadata": {}}',
    "build/state/02_similarity_attractor.json": b'{"fingerprint": "0123"}',
    "build/cache/0123abcd.joblib": bytes(range(256)),
}


@pytest.fixture(scope="module")
def book(tmp_path_factory):
    root = copy_book(tmp_path_factory.mktemp("fuzz-book"))
    for name, content in PREVIOUS.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(content)
    return root


@pytest.fixture()
def run(book, tmp_path, monkeypatch):
    """``run(profile_bytes, *args)`` → (exit code, stdout lines, stderr lines, {slug: params})."""
    received = {}

    def recorder(notebook, params, root, force=False):
        received[notebook.stem] = params
        return schedule.Outcome(notebook.stem, "skipped", 0.0, "fuzz: not run")

    monkeypatch.setattr(build, "run_chapter", recorder)
    monkeypatch.setattr(schedule, "install_sigterm_handler", lambda: None)
    monkeypatch.setenv("EMBEDDING_GEOMETRY_CACHE", str(book / "build" / "cache"))
    before = snapshot(book / "build", book / "book" / "chapters")

    def call(content: bytes, *args: str):
        received.clear()
        path = tmp_path / "profile.yaml"
        path.write_bytes(content)
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = cli.main(["build", "--root", str(book), "--profile", str(path), "--no-site", *args])
            except SystemExit as stop:  # argparse, or an --only that names no chapter
                code, _ = 1, print(stop.code, file=sys.stderr)
        assert snapshot(book / "build", book / "book" / "chapters") == before, "an earlier output changed"
        return code, out.getvalue().splitlines(), err.getvalue().splitlines(), dict(received), path

    return call


def dump(document) -> str:
    return yaml.dump(document, Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper), allow_unicode=True)


def expected_parameters(document: dict, slug: str) -> dict:
    """What the profile sets for chapter ``slug``, computed independently of the build."""
    table = rules.chapters()[slug]
    common = {k: v for k, v in (document.get("common") or {}).items() if k in table}
    return {**common, **((document.get("chapters") or {}).get(slug) or {})}


def check(result, document=None) -> None:
    """The outcome contract: pass with every value delivered, or fail with one-line messages."""
    code, out, err, received, path = result
    if code == 0:
        assert err == [], err
        assert received, (out, err)
        if document is not None:
            for slug, params in received.items():
                assert params == expected_parameters(document, slug)
        return
    assert code == 1 and received == {}, (code, out, err)
    assert not any("Traceback" in line for line in out + err), out + err
    assert err and all(one_line(line) for line in err), err
    failed = [line for line in out if re.match(r"\s+failed\s+\S+\s+[\d.]+ s  ", line)]
    if failed:  # a value a chapter refuses: one line per chapter, then why nothing ran
        assert all(re.search(r"ParameterError: parameter '\w+' expects .+; got .+ \(from profile '", line)
                   for line in failed), failed
        assert err == ["bad parameters in the profile: no chapter was run"], err
    else:  # the file itself: one line naming it
        assert len(err) == 1 and str(path) in err[0], err


# --------------------------------------------------------------------------- the two known failures

@pytest.mark.parametrize("content, line, column", [(": : :\n", 1, 1), ("- [\n", 2, 1)])
def test_malformed_yaml_is_one_line_with_file_line_and_column(run, content, line, column):
    code, out, err, _, path = run(content.encode())
    assert code == 1 and out == []
    assert len(err) == 1 and err[0].startswith(f"profile '{path}' is not valid YAML: line {line}, column {column}: ")


def test_the_real_entry_point_prints_the_same_one_line(run, book):
    """``python -m embedding_geometry`` in a subprocess, as a user runs it: the same single line."""
    code, out, err, _, path = run(b": : :\n")
    real = subprocess.run([sys.executable, "-m", "embedding_geometry", "build", "--root", str(book),
                           "--profile", str(path), "--no-site"], capture_output=True, text=True, timeout=300)
    assert (real.returncode, real.stdout, real.stderr.splitlines()) == (code, "", err)


# --------------------------------------------------------------------------- generated profiles

YAML_BREAKERS = [": : :", "- [", "{", "}", "a: b: c", "\tcommon: {}", "common:\n\t- a", "&a [*a]", "*undefined",
                 "!!python/object:os.system x", "!!binary @@@", "? [a]\n: 1", "---\na: 1\n---\nb: 2",
                 "common: {model: 2020-13-45}", "a: !!int abc", "%YAML 9.9\n---\na: 1",
                 "common:\n  model: 'unterminated", "\x00", "\x1b[0m", "\ufeffcommon: {}", "common: [1, 2",
                 "chapters:\n  - 00_the_model", "common:\n  - batch_size: 8"]

garbage = st.one_of(st.sampled_from(YAML_BREAKERS), st.text(max_size=40),
                    st.lists(st.sampled_from(YAML_BREAKERS + ["\n", "  ", "common:", "chapters:", "- ", ": "]),
                             max_size=6).map("".join))


@settings(parent=FUZZ, max_examples=budget(150))
@given(text=garbage)
@example(text="")
@example(text="[" * 3000)  # deeper than Python's recursion limit
def test_any_text_as_a_profile(run, text):
    check(run(text.encode("utf-8", "surrogatepass")))


names = st.one_of(st.sampled_from(NAMES), texts, st.sampled_from(["batch_sise", "Model", "seed ", "models_"]))
sections = st.dictionaries(names, yaml_values, max_size=4)
documents = st.one_of(
    st.fixed_dictionaries({}, optional={"common": sections | yaml_values,
                                        "chapters": st.dictionaries(st.sampled_from(SLUGS) | texts,
                                                                    sections | yaml_values, max_size=3)}),
    st.dictionaries(st.sampled_from(["common", "chapters", "extra", "Common"]) | texts, yaml_values, max_size=3),
    yaml_values,
)


@settings(parent=FUZZ, max_examples=budget(200))
@given(document=documents)
def test_any_yaml_document_as_a_profile(run, document):
    try:
        content = dump(document).encode("utf-8", "surrogatepass")
    except (yaml.YAMLError, RecursionError):
        return  # not writable as YAML; the text and byte suites cover broken files
    check(run(content), document if isinstance(document, dict) else None)


REAL = [(ROOT / "params" / name).read_bytes() for name in ("default.yaml", "published.yaml")]
damage = st.one_of(
    st.tuples(st.just("truncate"), st.integers(0, 2000), st.just(b"")),
    st.tuples(st.just("insert"), st.integers(0, 2000), st.binary(min_size=1, max_size=4)),
    st.tuples(st.just("insert"), st.integers(0, 2000),
              st.sampled_from([b"\xff", b"\xc3", b"\t", b":", b"- [", b"\n  x"])),
    st.tuples(st.just("latin-1"), st.integers(0, 2000), st.just("é".encode("latin-1"))),
)


@settings(parent=FUZZ, max_examples=budget(100))
@given(which=st.sampled_from(range(len(REAL))), how=damage, only=st.sampled_from([None, *SLUGS]))
def test_damaged_copies_of_the_real_profiles(run, which, how, only):
    kind, at, extra = how
    content = REAL[which]
    at = min(at, len(content))
    content = content[:at] if kind == "truncate" else content[:at] + extra + content[at:]
    check(run(content, *(["--only", only] if only else [])))


def test_profiles_of_the_repository_pass_and_deliver_every_value(run):
    for content in REAL:
        result = run(content)
        check(result, yaml.safe_load(content))
        assert result[0] == 0 and set(result[3]) == set(SLUGS)


@pytest.mark.parametrize("content", [
    "\u00e9t\u00e9: 1\n".encode("latin-1"), "common: {}\n".encode("utf-16"), b"\xff\xfe\x00", b"\x80abc",
])
def test_non_utf8_bytes_name_the_file_and_the_line(run, content):
    code, out, err, _, path = run(content)
    assert code == 1 and len(err) == 1 and f"profile '{path}' is not UTF-8 text" in err[0] and "line 1" in err[0]


@pytest.mark.parametrize("document", [
    {"chapters": {"00_the_model": {"extra_sentences": [f"sentence {i}" for i in range(100_000)]}}},
    {"chapters": {"00_the_model": {"extra_sentences": ["same"] * 100_000}}},
    {"common": {"model": "m" * 200_000}},
    {"chapters": {"01_layer_by_layer": {"easy_k": 10**4000}}},
])
def test_huge_values_are_checked_quickly_and_named_briefly(run, document):
    result = run(dump(document).encode())
    check(result, document)
    assert all(len(line) < 2000 for line in result[1] + result[2])


def test_an_alias_bomb_is_refused_in_one_short_line(run):
    """A "billion laughs" value (9**9 strings through nested aliases) loads in little memory; its
    message must not try to print it."""
    anchors = ["&a [" + ", ".join(["lol"] * 9) + "]"]
    anchors += [f"&{chr(98 + i)} [" + ", ".join(["*" + chr(97 + i)] * 9) + "]" for i in range(8)]
    content = f"chapters:\n  00_the_model:\n    batch_size: [{', '.join(anchors)}]\n"
    result = run(content.encode())
    check(result)
    assert result[0] == 1 and len(result[1][0]) < 400
