"""Chapter 7, *One backbone, two losses* (``notebooks/07_training_objective.ipynb``): does the training
objective shape the geometry? Its modules, in the order the notebook presents them:

    ``rules``           the chapter's parameters, the rule each must satisfy and what its computations
                        need of them together (the book's registry, ``book.rules``, takes both)
    ``training``        the two losses (in-batch contrastive on mean pools, or on MaxSim), the book's
                        training pairs and their held-out split, and the training loop
    ``synthetic_task``  arm 1: a retrieval task built from the corpus, and the small encoder that learns
                        it from scratch
    ``measures``        arm 2's texts, and the geometry each copy leaves, compared over paired seeds
    ``hard_negatives``  the third copy: a twin of every training positive built in code, and the hard
                        set measured
    ``runs``            training every copy: both arms' copies trained and measured in parallel
    ``results``         each arm's results: the copies kept, whether they settled, what the claims judge
    ``charts``          the chapter's charts and tables (on the book's chart kinds, ``book.charts``)
    ``prose``           the chapter's run-dependent sentences, written from its metrics and verdicts,
                        and the tables of its exercises' answers

Beside them, ``ledger.yaml``: the chapter's claims ledger (``claims.ledger.path("07_training_objective")``
finds it by the slug its ``chapter:`` names).

Nothing is imported here: the notebook imports the modules it uses (``training``, ``runs`` and
``synthetic_task`` load torch).
"""
