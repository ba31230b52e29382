"""Chapter 8, *Across models, on relative depth* (``notebooks/08_across_models.ipynb``): chapters 1–4's
measurements and claims on every model compared. Its modules, in the order the notebook presents them:

    ``rules``           the chapter's parameters, the rule each must satisfy and what its computations
                        need of them together (the book's registry, ``book.rules``, takes both)
    ``atlas_needs``     what the chapter and the atlas need of their corpus and of another run's results
    ``charts``          one measurement on every model compared, on relative depth over the published
                        curves, and the per-head grids (on the book's chart kinds, ``book.charts``)
    ``model_verdicts``  one ledger judged on several models: the claim × model table and what it says
                        (follows training, follows the architecture, depends on the model)

Beside them, ``ledger.yaml``: the chapter's claims ledger (``claims.ledger.path("08_across_models")``
finds it by the slug its ``chapter:`` names).

What stays in ``studies``: the chapter's study (``studies.across_models``, which the atlas,
``book.atlas``, the chapter's sharded run, imports too). Nothing is imported here: the notebook
imports the modules it uses.
"""
