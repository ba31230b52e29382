"""Chapter 4, *What attention heads write: context similarity matrices*
(``notebooks/04_attention_context_similarity.ipynb``): the code only this chapter uses, its modules
in the order the notebook presents them. The notebook imports them directly
(``from embedding_geometry.chapters.ch04_heads import budget, charts, exercises, frames``); this
file imports none of them.

``rules``      the chapter's parameters, the rule each must satisfy and what its computations need
               of them together (the book's registry, ``book.rules``, takes both)
``budget``     each model's pass timed, projected to 1,000 texts, against the chapter's share of the
               book's time budget (the notebook's first table and sentence)
``frames``     tidy frames and tables of the chapter's metrics: the first text's matrices encoded for
               the explorer, per-block series of several models, distances, head classes and their
               stability, the summed matrices, the null's draws, the sensitivity ratios
``charts``     the chapter's Altair charts of those frames: the context-matrix explorer, per-block
               lines on relative depth, kinds of attended token, head-class grids, summed matrices,
               distance histograms, distinct focus positions, the null's histogram, the sensitivity
               panels
``exercises``  the exercises' answers, each for its changed parameter value

Beside them, ``ledger.yaml``: the chapter's claims ledger (``claims.ledger.path("04_attention_context_similarity")``
finds it by the slug its ``chapter:`` names), and ``coverage.yaml``: what the chapter covers of its paper
(``coverage.path``).

The chapter's measurements stay in ``studies`` (``context_similarity`` and the modules it folds:
``context_matrices``, ``context_attention``, ``context_stats``, ``context_batch``,
``context_heads``, ``head_cache``): chapter 8 and the atlas fold the same head statistics
(``studies.depth_statistics``, ``book.atlas.shards``).
"""
