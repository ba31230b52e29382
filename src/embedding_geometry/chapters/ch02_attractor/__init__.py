"""Chapter 2, *The similarity attractor* (``notebooks/02_similarity_attractor.ipynb``): how a hard
negative moves through the depths, against easy pairs, on every model compared. Its modules, in the
order the notebook presents them:

    ``rules``   the chapter's parameters, the rule each must satisfy and what its computations need of
                them together (the book's registry, ``book.rules``, takes both)
    ``charts``  every model's per-depth curves (a colour per series, a dash per model) and the tables
                that sum them up (on the book's chart kinds, ``book.charts``)

Beside them, ``ledger.yaml``: the chapter's claims ledger (``claims.ledger.path("02_similarity_attractor")``
finds it by the slug its ``chapter:`` names), and ``coverage.yaml``: what the chapter covers of its
post (``coverage.path("02_similarity_attractor")``).

What chapter 8 (``studies.across_models``) reads of this chapter stays shared: the measurements
(``studies.similarity_attractor``) and shared words (``studies.surface_form``). Nothing is imported
here: the notebook imports the modules it uses.
"""
