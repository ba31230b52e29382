"""Embedding Geometry, Reproduced: the helper package behind the book.

The package has four layers, and imports only run downward (``book`` → ``studies`` → ``core``;
a study never imports ``book``). A chapter package imports what the chapters share (``core``,
``studies``, ``book``'s shared parts) and no module outside a chapter package imports one (``book``'s
registry of the chapters' parameters, ``rules``, imports a package's ``rules`` by name at run time):

    core/      it measures: load a model, run it, capture its states, the geometry on arrays
    studies/   the analyses two or more chapters use (chapter 8 re-measures chapters 1–4): activations in, metrics out
    chapters/  one package per chapter for the code only it uses, its modules in the notebook's order
    book/      it presents: the chapter run, parameter rules, claims and verdicts, charts, pages, build

``core``
    ``models``          loading an encoder and its tokenizer, and describing it
    ``registry``        the encoders the book ships offline, and how each is made ready and verified
    ``architectures``   where to capture what, in each supported architecture family (one table)
    ``float_path``      which arithmetic a forward pass takes, and the perturbations that measure it
    ``capture``         one forward pass with named captures (TransformerLens style) on every architecture
    ``activations``     batched, cached forward passes and the ``Activations`` they produce
    ``passes``          forward passes cut by a token budget (least padding) and their inputs
    ``disk_cache``      content-keyed entries on disk, written atomically (activations, head statistics)
    ``streaming``       T-token windows through the model in batches, with head outputs and attention maps
    ``clock``           where a chapter's time goes: seconds in model calls, and the time to its first one
    ``windows``         texts of exactly T tokens, cut from the book's corpus or WikiText-103
    ``geometry``        the measurements every chapter shares, on arrays (book/methods.md)
    ``relative_depth``  where an entry of a per-depth series sits, l / L: one convention for studies and claims
    ``ranking``         a candidate pool ranked by score (ties against the relevant one), and recall@k
    ``hierarchical``    intervals over training seeds and measured units together, and the paired sign-flip test
    ``corpora``         the reference sentences of the Methods page and the project's own sentence sets
    ``text_sources``    a corpus of any size (a text file, JSON lines, TSV, a hub dataset) read a run of texts at a time
    ``paths``           where the book keeps its files
    ``errors``          one-line errors that name the culprit and what was expected

``studies``
    ``layer_by_layer``      chapter 1: how a sentence's tokens collapse into a sentence vector
    ``layer_runs``          chapter 1: every encoder and its random-init controls run on the chapter's texts
    ``pca_views``           chapter 1: 2-D PCA views over depth (fixed vs refitted axes, the final depth's view)
    ``pool_dimensions``     chapter 1: the mean pool dimension by dimension (writes, L0 ↔ L correlation, slices)
    ``sublayers``           chapter 1: a block split at its attention sublayer, and words by class (the dip)
    ``similarity_attractor``  chapter 2: how sentence pairs of every difficulty move through the depths
    ``surface_form``        chapter 2: a pair's cosine against the words the two sentences share, per depth
    ``retrieval``           chapter 5's search: BM25, rank fusion, reranking and nDCG over the judged queries
    ``anisotropy``          chapter 3: anisotropy, how much a set of vectors shares one direction, as pairs
    ``cone_axis``           chapter 3: the cone axis, what it encodes and how it compares across models
    ``cone``                chapter 3's run: its sentences, every model's pass, every measurement per model
    ``centering``           chapter 3: whether a centering vector is corpus-specific (per-topic geometry)
    ``context_similarity``  chapter 4: attention-head context similarity, streamed texts in, metrics out
    ``context_matrices``    chapter 4: context similarity matrices and their pairs
    ``context_stats``       chapter 4: the running totals, their settings and per-text rows, resamples of texts
    ``context_batch``       chapter 4: one captured batch reduced to statistics (matrix products)
    ``context_heads``       chapter 4: the book's rule for kinds of head, its stability and resampled counts
    ``context_attention``   chapter 4: a head's top context-similarity pairs against its top attention pairs
    ``head_cache``          chapter 4's head statistics per batch, cached by content (chapter 8 reads them)
    ``isotropy``            chapters 5 and 6: the article's isotropy score, its anisotropy warning and cone
                            arithmetic, the pair sample
    ``pooling``             pooling token states into one vector, length bias and dilution (chapters 5 and 6)
    ``long_texts``          texts longer than one sentence, and sliding windows (chapters 5 and 6)
    ``across_models``       chapter 8: chapters 1–4's per-depth measurements on several models
    ``accumulators``        mergeable building blocks: rows per unit, sums, co-moments, a bottom-K sample
    ``depth_statistics``    chapters 1–4's per-depth statistics as accumulators (update a batch, merge a shard)

``chapters``
    one package per chapter, ``chapters/ch<NN>_<name>``, for the code only that chapter uses, with its
    ``rules``, ``ledger.yaml`` and ``coverage.yaml``; each package's own docstring maps it, in the
    order its notebook reads (a new chapter's package needs no line here)

``book``
    ``chapter``         one run of one chapter notebook: validate, seed, extract, glue, write the results
    ``rules``           every chapter's parameters and the rule each must satisfy (the registry: a chapter
                        package's own ``rules`` found by its ledger), and the YAML profiles that set them for a build
    ``parameters``      the rule primitives and their one-line errors
    ``claims``          published claims and their verdicts, one package: ``ledger`` (the claims as
                        data), ``reduce`` (a metric to the number a claim is about, and the model-agnostic
                        shape tests), ``samples`` (the statistic on weighted per-unit values, and its
                        bootstrap: BCa), ``pvalues`` (the test each design calls for, exact or the
                        bootstrap, as p-values for the shape test and the null; the adjustment, power),
                        ``judge`` (``evaluate``: each claim once through every stage; ``decide``),
                        ``words`` (every verdict word)
    ``dashboard``       every verdict of the book, counted: distinct published claims per model
    ``reproducibility`` the reproducibility contract: families of numbers, measured tolerances, fragile verdicts
    ``results``         the results JSON of a chapter run, written atomically and read back checked (results
                        JSON, benchmark figures)
    ``pages``           parameter tables, provenance, errata, the claims dashboard, chapter numbers
    ``tables``          how every table reads on a page: missing values, rounding, names, folding
    ``maths``           maths in generated text: ``$…$`` set as maths in HTML, kept in Markdown
    ``performance``     the Performance page: ``make bench``'s figures, or the build's own chapter times
    ``charts``          Altair charts, rendered offline, the kinds the chapters share: ``theme``, ``frames``,
                        ``depth``, ``matrices``, ``practice`` (the tables chapters 5 and 6 both show)
    ``build``           run each notebook through papermill (skipping unchanged ones), then compile the site
    ``jupyter_kernels`` Jupyter kernels forked from a warm parent: a fresh process per chapter, imports paid once
    ``schedule``        the chapters in order, and one alongside them in a second process sharing the cores
    ``sphinx_pages``    the book's Sphinx extension: chapter numbers, maths as MathML (no script), a chapter's
                        plain links resolved, lighter pages, downloads, footer, repository and launch buttons
    ``pdf``             the whole book as one PDF (``make pdf``), every chart a picture
    ``coverage``        what the book covers of its five texts, item by item, with the reason for a shortfall
    ``derived``         what the site derives from the chapters: the table of contents, the Methods stubs
    ``scaffold``        a new chapter's notebook with the conventions in place (``new-chapter``)
    ``atlas``           chapter 8's measurements on many models, streamed and sharded, in process or as
                        Ray tasks: ``plan`` (models × shards), ``shards`` (one shard's statistics, written
                        once, atomically)

``python -m embedding_geometry build`` (``__main__``) builds the book; ``atlas``, ``pdf`` and
``new-chapter`` are its other commands. Importing the package has
no side effects: ``book.chapter.Chapter.open`` sets the chart theme and seeds every generator.
"""

__version__ = "0.1.0"
