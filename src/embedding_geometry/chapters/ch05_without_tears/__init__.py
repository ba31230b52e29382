"""Chapter 5, *Embeddings without tears, measured* (``notebooks/05_embeddings_without_tears.ipynb``):
which of the article's claims about embeddings and its fixes hold on the book's corpus? Its modules,
in the order the notebook presents them:

    ``rules``          the chapter's parameters, the rule each must satisfy and what its computations
                       need of them together (the book's registry, ``book.rules``, takes both)
    ``whitening``      centering and whitening, fitted on one split and judged on another (the held-out
                       study, its sensitivity variants, a transform borrowed from another domain)
    ``cls_attention``  where [CLS] looks: its last-layer attention by position, against the article's
                       power law
    ``compounds``      compounds that WordPiece splits, and the subword-aware pooling fix
    ``charts``         the chapter's tables and charts (on the book's chart kinds, ``book.charts``; the
                       tables chapter 6 shows too are ``book.charts.practice``'s)

Beside them, ``ledger.yaml``: the chapter's claims ledger (``claims.ledger.path("05_embeddings_without_tears")``
finds it by the slug its ``chapter:`` names), and ``coverage.yaml``: what the chapter covers of the article
(``coverage.path``; its search pipeline is chapter 6's).

What chapters 5 and 6 both use stays shared: the isotropy score (``studies.isotropy``), pooling
(``studies.pooling``), long texts (``studies.long_texts``), retrieval (``studies.retrieval``).
Nothing is imported here: the notebook imports the modules it uses.
"""
