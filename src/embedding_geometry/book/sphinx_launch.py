"""A Sphinx extension: launch buttons open the clean source notebook, not the executed copy.

The site's chapter pages are executed copies in ``book/chapters/`` (build products, not in the
repository); their sources live in ``notebooks/``. sphinx-book-theme builds Binder/Colab links
from the page's path, so this extension, running just after the theme's, points them at
``notebooks/<chapter>.ipynb``.
"""

from __future__ import annotations

from typing import Any

EXECUTED, SOURCE = "book/chapters/", "notebooks/"


def _retarget(buttons: list[dict[str, Any]]) -> None:
    for button in buttons:
        if "url" in button:
            button["url"] = button["url"].replace(EXECUTED, SOURCE)
        _retarget(button.get("buttons", []))


def retarget_launch_buttons(app, pagename, templatename, context, doctree) -> None:
    if pagename.startswith(EXECUTED):
        _retarget([b for b in context.get("header_buttons", []) if b.get("label") == "launch-buttons"])


def setup(app) -> dict[str, Any]:
    app.connect("html-page-context", retarget_launch_buttons, priority=502)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
