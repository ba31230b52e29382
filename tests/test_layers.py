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
