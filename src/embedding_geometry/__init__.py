"""Embedding Geometry, Reproduced: the helper package behind the book.

Data moves one way through the modules:

    models → activations → geometry / attention → claims → charts

``models`` loads an encoder and its tokenizer, ``activations`` runs batched forward passes and
caches what they produce, ``geometry`` and ``attention`` hold the measurements of METHODS.md as
pure functions on arrays, ``claims`` compares them with the published numbers and writes each
chapter's results JSON, ``charts`` draws them with Altair, ``corpora`` holds the sentence sets
the project writes itself, and ``build`` runs the notebooks and compiles the site.

Importing the package has no side effects: call ``charts.use_theme()`` and
``build.seed_everything(seed)`` explicitly.
"""

__version__ = "0.1.0"
