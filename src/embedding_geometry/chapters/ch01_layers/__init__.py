"""Chapter 1, *Layer by layer: how words collapse into a sentence vector*
(``notebooks/01_layer_by_layer.ipynb``): how a sentence's tokens collapse, depth by depth, into the
vector that stands for it, on two encoders and their random-init copies. Its modules, in the order the
notebook presents them:

    ``rules``   the chapter's parameters, the rule each must satisfy and what its computations need of
                them together (the book's registry, ``book.rules``, takes both)
    ``charts``  one measurement of every model run side by side on relative depth (series by colour,
                models by dash) over the post's published curves, and per-model histograms

Beside them, ``ledger.yaml``: the chapter's claims ledger (``claims.ledger.path("01_layer_by_layer")``
finds it by the slug its ``chapter:`` names), and ``coverage.yaml``: what the chapter covers of the
post, item by item (``coverage.path("01_layer_by_layer")``).

The chapter's measurements stay shared: ``studies.layer_by_layer`` (the metrics), which chapter 7 and
chapter 8 (``studies.across_models``) measure with, and what it imports, ``studies.layer_runs`` (every
encoder and its controls run), ``studies.pca_views`` (chapter 2's token animation too),
``studies.pool_dimensions`` and ``studies.sublayers``.
Nothing is imported here: the notebook imports the modules it uses.
"""
