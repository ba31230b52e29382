"""Chapter 0, *The model under the microscope* (``notebooks/00_the_model.ipynb``): the encoder's anatomy,
how its tokens' lengths change with depth, and whether our mean pool is the model's own embedding. Its
modules, in the order the notebook presents them:

    ``rules``     the chapter's parameters, the rule each must satisfy and what its computations need of
                  them together (the book's registry, ``book.rules``, takes both)
    ``measures``  token norms by kind of token, the mean-pool check against the model's embedding, and
                  the exercises' answers

Beside them, ``ledger.yaml``: the chapter's claims ledger (``claims.ledger.path("00_the_model")`` finds
it by the slug its ``chapter:`` names). The chapter has no coverage file: its claims are the Methods
page's, not a post's. Its charts are the book's shared kinds (``book.charts``).

Nothing is imported here: the notebook imports the modules it uses.
"""
