"""Chapter packages: one small package per chapter that holds the code only that chapter uses, named
for the chapter (``ch07_objective`` for ``notebooks/07_training_objective.ipynb``). Its modules read
top to bottom in the order the notebook presents them, and its ``__init__`` docstring maps them in
that order. Its claims ledger can live beside them as ``ledger.yaml`` (its ``chapter:`` names the
slug; ``book.claims.ledger.path`` finds a chapter's ledger there or in ``data/claims``).
Importing a chapter package imports none of its modules (no torch on ``import embedding_geometry.chapters``).

What two or more chapters use stays shared: measurements in ``core``, chapter topics in ``studies``,
chart kinds and the presenting machinery in ``book`` (``book.charts``, ``book.tables``,
``book.claims``, ``book.parameters``). The layering (``tests/test_layers.py``):

    core/      imports nothing above it
    studies/   imports core (and other studies)
    chapters/  imports core, studies and book's shared parts (and its own chapter's modules)
    book/      imports core and studies; of the chapters, only its registry (``book.rules``)
               imports a chapter package (the chapter's parameter rules and needs)

Nothing in ``core`` or ``studies`` imports a chapter package. The notebook imports its chapter's
modules directly: ``from embedding_geometry.chapters.ch05_without_tears import whitening``.

    ch02_attractor      chapter 2, The similarity attractor
    ch03_cone           chapter 3, Inside the Cone
    ch04_heads          chapter 4, What attention heads write
    ch05_without_tears  chapter 5, Embeddings without tears, measured
    ch06_search         chapter 6, Search in practice, measured
    ch07_objective      chapter 7, One backbone, two losses
    ch08_across         chapter 8, Across models, on relative depth
"""
