"""The primer, *A primer: the geometry every chapter uses* (``notebooks/00b_primer.ipynb``): hidden states
and depths, relative depth, cosine similarity, pooling, PCA's axes and centering, each first on toy
vectors a reader can see, then on the model. Its modules, in the order the notebook presents them:

    ``primer``  the toys (a residual stream, an elongated cloud, a cone, two toy sentences), the
                three similarities, and the page's metrics and exercises' answers
    ``charts``  the page's interactive charts, each with the frame it draws and a slider (angle,
                pooling, PCA artefact, centering, relative depth), on the book's theme
    ``rules``   its parameters' rules and needs

The primer has no claims ledger and no coverage file: it judges no claim.
Nothing is imported here: the notebook imports the modules it uses.
"""
