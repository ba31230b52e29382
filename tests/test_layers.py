"""The package's shape: layers whose imports only run downward, modules small enough to read, one
forward path, and a package docstring that names every module (a chapter package's modules: its own
docstring, so that a new chapter's package needs no edit elsewhere).

    core/      measures             imports nothing of the package above it
    studies/   chapter topics       imports core (and other studies), never book or chapters
    chapters/  one chapter's code   imports core, studies, book's shared parts and its own chapter
    book/      presents             imports core, studies and book, never chapters

No module outside a chapter package imports one: the book's registry of parameter rules
(``book.rules``) finds a chapter package's ``rules`` by its ledger and imports it by name at run time.
"""

from __future__ import annotations

import ast
import graphlib
import re
from pathlib import Path

import pytest

import embedding_geometry

PACKAGE = Path(embedding_geometry.__file__).parent
LAYERS = {"core": {"core"}, "studies": {"core", "studies"}, "book": {"core", "studies", "book"},
          "chapters": {"core", "studies", "book", "chapters"}}
MAX_LINES = 400
FORWARD_HOMES = {"core/capture.py", "core/activations.py", "core/models.py"}
"""Where a model's forward pass may be called: the hooked pass, its batching, and the
sentence-transformers cross-check. Training (chapters/ch07_objective/training.py) calls it with
gradients on, which extraction never does."""
TRAINING = {"chapters/ch07_objective/training.py"}


def modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if p.name != "__init__.py" and "data" not in p.parts)


def imported_layers(path: Path) -> set[str]:
    """The package layers (core, studies, chapters, book) that ``path`` imports, relative or absolute."""
    layer = path.relative_to(PACKAGE).parts[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level == 1:
                target = layer if not module else (module.split(".")[0] if module.split(".")[0] in LAYERS else layer)
            elif node.level >= 2:
                target = module.split(".")[0] if module else None
                names = [a.name for a in node.names] if not module else []
                found.update(n for n in names if n in LAYERS)
            else:
                parts = module.split(".")
                target = parts[1] if parts[0] == "embedding_geometry" and len(parts) > 1 else None
            if target in LAYERS:
                found.add(target)
        elif isinstance(node, ast.Import):  # import embedding_geometry.chapters.ch06_search.rules
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == "embedding_geometry" and len(parts) > 1 and parts[1] in LAYERS:
                    found.add(parts[1])
    return found


@pytest.mark.parametrize("path", modules(), ids=lambda p: p.relative_to(PACKAGE).as_posix())
def test_imports_run_downward(path):
    layer = path.relative_to(PACKAGE).parts[0]
    if layer not in LAYERS:
        return  # __main__
    allowed = LAYERS[layer]
    assert imported_layers(path) <= allowed, f"{layer} module imports {imported_layers(path) - allowed}"


@pytest.mark.parametrize("path", modules(), ids=lambda p: p.relative_to(PACKAGE).as_posix())
def test_no_module_is_over_400_lines(path):
    assert len(path.read_text().splitlines()) <= MAX_LINES


def test_a_forward_call_lives_only_in_core():
    calls = {p.relative_to(PACKAGE).as_posix() for p in modules() if re.search(r"\bmodel\(\*\*", p.read_text())}
    assert calls <= FORWARD_HOMES | TRAINING, calls - FORWARD_HOMES - TRAINING


def docstring_names(doc: str | None) -> set[str]:
    return set(re.findall(r"``(\w+)``", doc or ""))


def chapter_packages() -> list[Path]:
    return sorted(p for p in (PACKAGE / "chapters").iterdir() if (p / "__init__.py").is_file())


def test_the_package_docstring_names_every_module():
    doc = embedding_geometry.__doc__
    named = docstring_names(doc)
    missing = [p.relative_to(PACKAGE).as_posix() for p in modules()
               if p.stem not in named and p.parent.name != "charts" and p.stem != "__main__"
               and p.relative_to(PACKAGE).parts[0] != "chapters"]
    charts = [p.stem for p in (PACKAGE / "book" / "charts").glob("*.py")
              if p.stem != "__init__" and f"``{p.stem}``" not in doc]
    assert not missing and not charts, f"not in the package docstring: {missing + charts}"


def test_a_chapter_package_names_its_modules_in_its_docstring():
    """Each chapter package's docstring maps its modules (in the notebook's order: that is read, not tested)."""
    missing = [p.relative_to(PACKAGE).as_posix() for package in chapter_packages() for p in package.glob("*.py")
               if p.name != "__init__.py" and p.stem not in docstring_names(
                   ast.get_docstring(ast.parse((package / "__init__.py").read_text())))]
    assert not missing, f"not in their chapter package's docstring: {missing}"


def chapter_imports() -> list[str]:
    """Each import of a chapter package that the layering forbids: from any module outside a chapter
    package, or from another chapter's package."""
    chapters = f"{PACKAGE.name}.chapters"
    found = []
    for name, imported in import_graph().items():
        own = ".".join(name.split(".")[:3]) if name.startswith(chapters + ".") else None
        for target in sorted(m for m in imported if m.startswith(chapters + ".")):
            if not (own and (target == own or target.startswith(own + "."))):
                found.append(f"{name} imports {target}")
    return found


def test_only_the_chapter_itself_imports_a_chapter_package():
    assert not chapter_imports(), chapter_imports()


def test_a_chapter_package_imports_no_module_at_import_time():
    """``import embedding_geometry.chapters`` (and a chapter package) loads none of its modules, so no torch."""
    for path in [PACKAGE / "chapters" / "__init__.py", *(p / "__init__.py" for p in chapter_packages())]:
        tree = ast.parse(path.read_text())
        assert not [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))], path


def test_the_layer_check_sees_each_import_form(tmp_path):
    study = PACKAGE / "studies" / "layer_by_layer.py"
    assert imported_layers(study) <= {"core", "studies"} and "core" in imported_layers(study)
    assert "book" in imported_layers(PACKAGE / "book" / "chapter.py")
    chapter = PACKAGE / "chapters" / "ch05_without_tears"
    assert {"core", "studies"} <= imported_layers(chapter / "whitening.py")
    assert {"book", "core", "chapters"} <= imported_layers(chapter / "charts.py")
    assert {"book", "core", "studies", "chapters"} <= imported_layers(chapter / "rules.py")  # whitening, in a need
    assert "chapters" not in imported_layers(PACKAGE / "book" / "rules.py")  # it imports a chapter's rules by name
    chapter = PACKAGE / "chapters" / "ch07_objective"
    assert {"core", "studies", "chapters"} <= imported_layers(chapter / "runs.py")
    assert "book" in imported_layers(chapter / "charts.py")


def private(name: str) -> bool:
    """``_x`` is private to its module; ``__x__`` and protocol names such as ``_repr_html_`` are not."""
    return name.startswith("_") and not name.endswith("_")


def private_imports(source: str) -> list[str]:
    """The private names a module takes from another module of the package: ``from .m import _x``
    or ``m._x`` where ``m`` was imported from the package."""
    tree, found, package_names = ast.parse(source), [], set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith("embedding_geometry")):
            found += [f"line {node.lineno}: imports {a.name}" for a in node.names if private(a.name)]
            package_names.update(a.asname or a.name for a in node.names)
        elif isinstance(node, ast.Import):
            package_names.update((a.asname or a.name).split(".")[0] for a in node.names
                                 if a.name.startswith("embedding_geometry"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and private(node.attr):
            root = node.value
            while isinstance(root, ast.Attribute):
                root = root.value
            if isinstance(root, ast.Name) and root.id in package_names:
                found.append(f"line {node.lineno}: uses {ast.unparse(node)}")
    return found


@pytest.mark.parametrize("path", modules(), ids=lambda p: p.relative_to(PACKAGE).as_posix())
def test_no_module_imports_a_private_name_of_another(path):
    assert not private_imports(path.read_text()), private_imports(path.read_text())


def test_the_private_import_check_sees_each_form():
    assert private_imports("from .errors import _short as show\n") == ["line 1: imports _short"]
    assert private_imports("from . import readback\nreadback._fields(1)\n") == ["line 2: uses readback._fields"]
    assert private_imports("import embedding_geometry.book\nembedding_geometry.book.pages._short('m')\n") == [
        "line 2: uses embedding_geometry.book.pages._short"]
    assert not private_imports("from .. import __version__\nfrom . import tables\ntables.x._repr_html_()\n"
                               "import os\nos._exit(0)\n")


# --------------------------------------------------------------------------- import circles

def module_name(path: Path, package: Path = PACKAGE) -> str:
    """``embedding_geometry.book.claims.judge`` for ``book/claims/judge.py`` (a package: its folder)."""
    parts = path.relative_to(package.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    """Each module of ``package`` → the package's modules it imports, at its top or inside a
    function (an import inside a function closes a circle as surely, only later):
    ``from .claims import judge`` → ``…claims.judge``; ``from .ledger import Claim`` → ``…ledger``."""
    paths = {module_name(p, package): p for p in package.rglob("*.py")}
    graph = {}
    for name, path in paths.items():
        here = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        found = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                found.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parent = ".".join(here.split(".")[: len(here.split(".")) - node.level + 1])
                    base = f"{parent}.{base}" if base else parent
                found.update(f"{base}.{a.name}" if f"{base}.{a.name}" in paths else base for a in node.names)
        graph[name] = {m for m in found if m in paths and m != name}
    return graph


def circle(graph: dict[str, set[str]]) -> list[str]:
    """One import circle of ``graph`` (its modules, the first repeated at the end), or []."""
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as error:
        return error.args[1]
    return []


def test_no_import_circle():
    """``python -m pytest tests/test_layers.py -k circle`` measures it: 0 circles."""
    assert circle(import_graph()) == [], "import circle: " + " → ".join(circle(import_graph()))


def test_the_circle_check_finds_a_circle_through_an_import_inside_a_function(tmp_path):
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sub" / "__init__.py").write_text("")
    (package / "a.py").write_text("from .sub import b\n")
    (package / "sub" / "b.py").write_text("def f():\n    from ..a import g\n")
    assert import_graph(package) == {"pkg": set(), "pkg.sub": set(), "pkg.a": {"pkg.sub.b"}, "pkg.sub.b": {"pkg.a"}}
    assert set(circle(import_graph(package))) == {"pkg.a", "pkg.sub.b"}


def inner_imports_without_why(source: str) -> list[str]:
    """The package's own modules imported inside a function without a comment on that line
    saying why (heavy optional dependencies such as torch stay out of light modules so)."""
    tree, lines = ast.parse(source), source.splitlines()
    return [f"line {node.lineno}: {lines[node.lineno - 1].strip()}"
            for function in ast.walk(tree) if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef))
            for node in ast.walk(function)
            if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith("embedding_geometry"))
            and "#" not in lines[node.lineno - 1]]


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: p.relative_to(PACKAGE).as_posix())
def test_an_import_inside_a_function_says_why(path):
    assert not inner_imports_without_why(path.read_text())


def test_the_inner_import_check_sees_a_bare_one():
    assert inner_imports_without_why("def f():\n    from . import x\n    from .y import z  # loads torch\n") == [
        "line 2: from . import x"]
