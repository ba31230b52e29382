"""The package's shape: three layers whose imports only run downward, modules small enough to
read, one forward path, and a package docstring that names every module.

    core/     measures           imports nothing of the package above it
    studies/  chapter topics     imports core (and other studies), never book
    book/     presents           imports anything
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import embedding_geometry

PACKAGE = Path(embedding_geometry.__file__).parent
LAYERS = {"core": {"core"}, "studies": {"core", "studies"}, "book": {"core", "studies", "book"}}
MAX_LINES = 400
FORWARD_HOMES = {"core/capture.py", "core/activations.py", "core/models.py"}
"""Where a model's forward pass may be called: the hooked pass, its batching, and the
sentence-transformers cross-check. Training (studies/objectives.py) calls it with gradients on,
which extraction never does."""
TRAINING = {"studies/objectives.py"}


def modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if p.name != "__init__.py" and "data" not in p.parts)


def imported_layers(path: Path) -> set[str]:
    """The package layers (core, studies, book) that ``path`` imports, relative or absolute."""
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
    return found


@pytest.mark.parametrize("path", modules(), ids=lambda p: p.relative_to(PACKAGE).as_posix())
def test_imports_run_downward(path):
    layer = path.relative_to(PACKAGE).parts[0]
    if layer not in LAYERS:
        return  # __main__
    assert imported_layers(path) <= LAYERS[layer], f"{layer} module imports {imported_layers(path) - LAYERS[layer]}"


@pytest.mark.parametrize("path", modules(), ids=lambda p: p.relative_to(PACKAGE).as_posix())
def test_no_module_is_over_400_lines(path):
    assert len(path.read_text().splitlines()) <= MAX_LINES


def test_a_forward_call_lives_only_in_core():
    calls = {p.relative_to(PACKAGE).as_posix() for p in modules() if re.search(r"\bmodel\(\*\*", p.read_text())}
    assert calls <= FORWARD_HOMES | TRAINING, calls - FORWARD_HOMES - TRAINING


def test_the_package_docstring_names_every_module():
    doc = embedding_geometry.__doc__
    named = set(re.findall(r"``(\w+)``", doc))
    missing = [p.relative_to(PACKAGE).as_posix() for p in modules()
               if p.stem not in named and p.parent.name != "charts" and p.stem != "__main__"]
    charts = [p.stem for p in (PACKAGE / "book" / "charts").glob("*.py")
              if p.stem != "__init__" and f"``{p.stem}``" not in doc]
    assert not missing and not charts, f"not in the package docstring: {missing + charts}"


def test_the_layer_check_sees_each_import_form(tmp_path):
    study = PACKAGE / "studies" / "layer_by_layer.py"
    assert imported_layers(study) <= {"core", "studies"} and "core" in imported_layers(study)
    assert "book" in imported_layers(PACKAGE / "book" / "chapter.py")


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
