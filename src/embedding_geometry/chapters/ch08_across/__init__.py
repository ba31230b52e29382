"""Chapter 8, *Across models, on relative depth* (``notebooks/08_across_models.ipynb``): chapters 1–4's
measurements and claims on every model compared. Its modules, in the order the notebook presents them:

    ``rules``   the chapter's parameters, the rule each must satisfy and what its computations need of
                them together (the book's registry, ``book.rules``, takes both)
    ``charts``  one measurement on every model compared, on relative depth over the published curves,
                and the per-head grids (on the book's chart kinds, ``book.charts``)

Beside them, ``ledger.yaml``: the chapter's claims ledger (``claims.ledger.path("08_across_models")``
finds it by the slug its ``chapter:`` names).

What stays in ``studies`` and ``book``: the chapter's study (``studies.across_models``, which the atlas,
``book.atlas``, the chapter's sharded run, imports too), what the chapter needs of its corpus and of
another run's results (``book.atlas_needs``, listed in ``rules``) and the claim × model table
(``book.model_verdicts``). Nothing is imported here: the notebook imports the modules it uses.
"""
