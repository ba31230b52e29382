"""Altair charts for the book, rendered offline. Every module of this package is re-exported here
(its own functions, classes and constants; a new module is found without a list):

- ``theme``: the book's theme and the offline ``book`` renderer (``use_theme``, ``write_bundle``);
- ``frames``: tidy DataFrames (series × depth, tokens, published curves);
- ``depth``: charts over depth and tokens (lines with published overlays, bars, heatmaps, sliders);
- ``matrices``: model × model heatmaps, each cell labelled, and a strip of ticks per category;
- ``practice``: the tables chapters 5 and 6 both show (how a table reads there, the judged query
  set, what no measurement decides, the errata).

Every chapter package keeps the charts only its chapter draws (``chapters/<package>/charts.py``, on
the kinds here); they are not re-exported here.

Chart helpers take tidy DataFrames and return an ``alt.Chart``; per-layer charts put depth on
the x-axis as relative depth r = l / L whenever a published curve is overlaid.
"""

import importlib
import inspect
import pkgutil


def _exported(module) -> dict:
    """A chart module's public names: its ``__all__``, or the functions, classes and UPPER_CASE
    constants it defines itself (never what it imports: ``alt``, ``pd``, another module's helper)."""
    if hasattr(module, "__all__"):
        return {name: getattr(module, name) for name in module.__all__}
    return {name: value for name, value in vars(module).items() if not name.startswith("_") and (
        (inspect.isfunction(value) or inspect.isclass(value)) and value.__module__ == module.__name__
        or name.isupper() and not inspect.ismodule(value))}


for _found in pkgutil.iter_modules(__path__):  # every chart module, a new chapter's too: no list to edit
    globals().update(_exported(importlib.import_module(f"{__name__}.{_found.name}")))
