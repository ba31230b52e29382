"""Chapter 6, *Search in practice, measured* (``notebooks/06_search_in_practice.ipynb``): the article's
search pipeline on the book's corpus: long texts, quantization, hybrid retrieval and its fine-tuning
fix. Its modules, in the order the notebook presents them:

    ``rules``         the chapter's parameters, the rule each must satisfy and what its computations
                      need of them together (the book's registry, ``book.rules``, takes both)
    ``quantization``  int8, binary codes and product quantization of embeddings, and where their
                      errors fall
    ``finetuning``    contrastive fine-tuning as the article writes it, and what its loss sees
    ``charts``        the chapter's tables and charts (on the book's chart kinds, ``book.charts``; the
                      tables chapter 5 shows too are ``book.charts.practice``'s)

Beside them, ``ledger.yaml``: the chapter's claims ledger (``claims.ledger.path("06_search_in_practice")``
finds it by the slug its ``chapter:`` names), and ``coverage.yaml``: what the chapter covers of the article
(``coverage.path``; the rest of the article is chapter 5's).

What chapters 5 and 6 both use stays shared: long texts and windows (``studies.long_texts``),
retrieval and hybrid search (``studies.retrieval``), pooling (``studies.pooling``), the pair sample
(``studies.isotropy``). Nothing is imported here: the notebook imports the modules it uses
(``finetuning`` loads torch when it trains).
"""
