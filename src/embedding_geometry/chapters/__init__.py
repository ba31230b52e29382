"""Chapter packages: one small package per chapter that holds the code only that chapter uses, named
for the chapter (``ch07_objective`` for ``notebooks/07_training_objective.ipynb``). Its modules read
top to bottom in the order the notebook presents them, and its ``__init__`` docstring maps them in
that order. Its parameters' rules and needs are its ``rules`` module (``CHAPTER``: the slug;
``RULES``, ``NEEDS``), its claims ledger lives beside them as ``ledger.yaml`` (its ``chapter:`` names
the slug; ``book.claims.ledger.path`` finds it), and its coverage of its text as ``coverage.yaml``
(``book.coverage.path``). Importing a chapter package imports none of its modules (no torch on
``import embedding_geometry.chapters``).

What two or more chapters use stays shared: measurements in ``core``, chapter topics in ``studies``,
chart kinds and the presenting machinery in ``book`` (``book.charts``, ``book.tables``,
``book.claims``, ``book.parameters``). The layering (``tests/test_layers.py``):

    core/      imports nothing above it
    studies/   imports core (and other studies)
    chapters/  imports core, studies and book's shared parts (and its own chapter's modules)
    book/      imports core and studies, never a chapter package

No module outside a chapter package imports one: the book's registry of parameter rules
(``book.rules``) finds every ``chapters/*/rules.py`` and imports it by name at run time.
The notebook imports its chapter's modules directly:
``from embedding_geometry.chapters.ch05_without_tears import whitening``. No list of the packages is
kept here: ``python -m embedding_geometry new-chapter`` writes a new one, and the book finds it by
its files.
"""
