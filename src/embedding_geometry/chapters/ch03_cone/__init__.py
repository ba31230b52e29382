"""Chapter 3, *Inside the Cone* (``notebooks/03_inside_the_cone.ipynb``): when does the cone of
anisotropy form, what drives it, and what centering removes, on every model compared. Its modules,
in the order the notebook presents them:

    ``rules``      the chapter's parameters, the rule each must satisfy and what its computations need
                   of them together (the book's registry, ``book.rules``, takes both)
    ``charts``     per-depth curves of every trained model, its controls and the post's, and the
                   chapter's tables (on the book's chart kinds, ``book.charts``)
    ``exercises``  the exercises' answers, each for its changed parameter value

Beside them, ``ledger.yaml``: the chapter's claims ledger (``claims.ledger.path("03_inside_the_cone")``
finds it by the slug its ``chapter:`` names), and ``coverage.yaml``: what the chapter covers of its
post (``coverage.path("03_inside_the_cone")``).

What other chapters use stays shared: the chapter's run and its corpus (``studies.cone``, which chapter 8
reads), anisotropy (``studies.anisotropy``), the cone axis (``studies.cone_axis``), centering
(``studies.centering``). Nothing is imported here: the notebook imports the modules it uses.
"""
