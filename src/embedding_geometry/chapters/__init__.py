"""Chapter packages: one small package per chapter that holds the code only that chapter uses, named
for the chapter, its modules read top to bottom in the order the notebook presents them (its
``__init__`` docstring maps them in that order). A chapter package may import ``core``, ``studies``
and ``book``; nothing in ``core`` or ``studies`` imports it. What two or more chapters use stays
shared: in ``core``, in ``studies``, and chart kinds in ``book.charts``. Importing this package, or
a chapter package, imports none of their modules (no torch on ``import embedding_geometry.chapters``).

``ch04_heads``  chapter 4, *What attention heads write* (``notebooks/04_attention_context_similarity.ipynb``)
"""
