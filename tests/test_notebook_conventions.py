"""One way to do each thing in every notebook (CONTRIBUTING.md, "How a chapter notebook reads"):

- stored without outputs, with one cell tagged ``parameters``;

- a parameter is read as ``ch.params["name"]`` (or ``ch.params`` handed whole to a function):
  after the parameters cell no code cell names a parameter bare, rebinds it, or aliases
  ``ch.params`` (``P = ch.params``);
- a metric is recorded with ``ch.add_metrics(...)``: no cell stores into ``ch.metrics`` (or a
  name bound to it, ``m = ch.metrics`` being fine for reading), rebinds it or calls a method
  that changes it;
- no lambda, function or class: a step a reader should see is a line of the cell, one they
  need not see is a function of the package.

Chapters in ``PENDING`` are being brought to the convention elsewhere: their test is expected
to fail (strict), so the entry must be removed once they follow it.
"""

from __future__ import annotations

import ast
import json

import pytest

from conftest import ROOT

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
PENDING: dict[str, str] = {}
CHANGES = {"update", "setdefault", "pop", "popitem", "clear", "__setitem__", "__delitem__"}
"""The methods of a dict that change it."""


def code_cells(path) -> list[tuple[list[str], str]]:
    """Each code cell of a notebook as (tags, source)."""
    cells = json.loads(path.read_text())["cells"]
    return [(c["metadata"].get("tags", []), "".join(c["source"])) for c in cells if c["cell_type"] == "code"]


def parsed(source: str) -> ast.Module:
    """A cell's Python, IPython's ``%`` and ``!`` lines left out (blank, so line numbers hold)."""
    return ast.parse("\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines()))


def assigned_names(source: str) -> set[str]:
    """The names a cell binds at its top level (a parameters cell: the notebook's parameters)."""
    names = set()
    for node in parsed(source).body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
            node, (ast.AnnAssign, ast.AugAssign)) else []
        names.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
    return names


def is_attribute(node: ast.AST, owner: str, name: str) -> bool:
    """``node`` is ``owner.name`` (``ch.metrics``)."""
    return isinstance(node, ast.Attribute) and node.attr == name and isinstance(node.value, ast.Name) \
        and node.value.id == owner


def departures(cells: list[tuple[list[str], str]]) -> list[str]:
    """Where a notebook's code cells read a parameter, record a metric or define a step other
    than the one way (empty when they follow the convention)."""
    start = next((i for i, (tags, _) in enumerate(cells) if "parameters" in tags), None)
    if start is None:
        return ["no cell is tagged 'parameters'"]
    parameters, metrics, found = assigned_names(cells[start][1]), set(), []
    for number, (_, source) in enumerate(cells[start + 1:], start + 2):
        for node in ast.walk(parsed(source)):
            where = f"code cell {number}, line {getattr(node, 'lineno', '?')}"
            if isinstance(node, ast.Name) and node.id in parameters:
                found.append(f"{where}: names the parameter {node.id} bare (read it as ch.params[{node.id!r}])")
            elif isinstance(node, ast.Lambda):
                found.append(f"{where}: a lambda")
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                found.append(f"{where}: defines {node.name} (logic lives in the study module)")
            elif isinstance(node, ast.Assign) and (is_attribute(node.value, "ch", "params")
                                                    or is_attribute(node.value, "ch", "metrics")):
                if node.value.attr == "params":
                    found.append(f"{where}: aliases ch.params (read each as ch.params[...])")
                metrics.update(t.id for t in node.targets if isinstance(t, ast.Name))
        for node in ast.walk(parsed(source)):
            where = f"code cell {number}, line {getattr(node, 'lineno', '?')}"
            if stores_into_metrics(node, metrics):
                found.append(f"{where}: records a metric without ch.add_metrics: {ast.unparse(node)[:60]}")
    return found


def stores_into_metrics(node: ast.AST, aliases: set[str]) -> bool:
    """``node`` changes ``ch.metrics`` (or a name in ``aliases`` bound to it): an assignment to it
    or into it, or a call of a method that changes a dict."""
    def metrics(value: ast.AST) -> bool:
        return is_attribute(value, "ch", "metrics") or isinstance(value, ast.Name) and value.id in aliases

    if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
        targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
        return any(metrics(t) and not isinstance(t, ast.Name) or isinstance(t, ast.Subscript) and metrics(t.value)
                   for target in targets for t in ast.walk(target))
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in CHANGES \
        and metrics(node.func.value)


def notebooks():
    pending = pytest.mark.xfail(strict=True, reason="brought to the convention in another branch")
    return [pytest.param(p, id=p.stem, marks=pending) if p.stem in PENDING else pytest.param(p, id=p.stem)
            for p in NOTEBOOKS]


@pytest.mark.parametrize("path", notebooks())
def test_every_notebook_reads_parameters_and_records_metrics_one_way(path):
    assert not departures(code_cells(path)), "\n".join(departures(code_cells(path)))


def test_pending_names_only_notebooks_that_exist():
    assert set(PENDING) <= {p.stem for p in NOTEBOOKS}


@pytest.mark.parametrize("cell, expected", [
    ('x = steps * 2', "names the parameter steps bare"),
    ('steps = 3', "names the parameter steps bare"),
    ('P = ch.params', "aliases ch.params"),
    ('ch.metrics["bench"] = 1', "records a metric without ch.add_metrics"),
    ('m = ch.metrics\nm["pair_cosine"] = 0.5', "records a metric without ch.add_metrics"),
    ('m = ch.metrics\nm["a"]["b"] += 1', "records a metric without ch.add_metrics"),
    ('ch.metrics.update(a=1)', "records a metric without ch.add_metrics"),
    ('ch.metrics = {}', "records a metric without ch.add_metrics"),
    ('f = lambda x: x', "a lambda"),
    ('def f(x):\n    return x', "defines f"),
])
def test_the_checker_finds_each_departure(cell, expected):
    cells = [(["parameters"], "steps = 10  # training steps\nseed = 0"), ([], "ch = Chapter.open('x', globals())"),
             ([], cell)]
    found = departures(cells)
    assert len(found) == 1 and expected in found[0] and found[0].startswith("code cell 3"), found


def test_the_checker_passes_the_one_way():
    cells = [(["parameters"], "steps = 10\nseed = 0"), ([], "ch = Chapter.open('x', globals())\nm = ch.metrics"),
             ([], 'ch.add_metrics({"loss": run(ch.params["steps"], seed=ch.params["seed"])})\nprint(m["loss"])'),
             ([], "%matplotlib inline\nfound = study.measure(ch.params)\nch.inputs['texts'] = texts")]
    assert departures(cells) == []


def test_source_notebooks_are_clean_and_parameterised():
    for path in NOTEBOOKS:
        code = [c for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]
        assert not any(c.get("outputs") for c in code), f"{path.name} has outputs: run `make strip`"
        tagged = [c for c in code if "parameters" in c["metadata"].get("tags", [])]
        assert len(tagged) == 1, f"{path.name} needs exactly one cell tagged 'parameters'"
