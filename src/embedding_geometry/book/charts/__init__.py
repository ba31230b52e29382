"""Altair charts for the book, rendered offline, in four modules re-exported here:

- ``theme``: the book's theme and the offline ``book`` renderer (``use_theme``, ``write_bundle``);
- ``frames``: tidy DataFrames (series × depth, tokens, published curves);
- ``depth``: charts over depth and tokens (lines with published overlays, bars, heatmaps, sliders);
- ``matrices``: model × model and head × block charts, and the context-matrix explorer;
- ``objectives``: chapter 7's charts, both arms' copies of the two-loss experiment on relative depth
  with 95 % bands over seeds and sentences, the losses' per-seed differences, and its tables;
- ``heads``: chapter 4's tidy frames (per-block series, distances, focus tokens, sensitivity,
  the first text's matrices encoded for the explorer);
- ``practice``: the tables and charts of chapters 5 and 6 (isotropy, whitening, dilution,
  [CLS] by position, compounds, long texts, hybrid retrieval);
- ``primer``: the primer's toy charts, each with its frame and a slider (angle, pooling, PCA
  artefact, centering, relative depth);
- ``layers``: chapter 1's charts, one measurement of every model run side by side on relative
  depth (series by colour, models by dash) over the published curves;
- ``across``: chapter 8's charts, one measurement on every model compared, and per-head grids;
- ``attractor``: chapter 2's curves of every model (a colour per series, a dash per model) and tables;
- ``cone``: chapter 3's per-depth curves of every trained model, its controls and the post's.

Chart helpers take tidy DataFrames and return an ``alt.Chart``; per-layer charts put depth on
the x-axis as relative depth r = l / L whenever a published curve is overlaid.
"""

from .across import *  # noqa: F401,F403
from .attractor import *  # noqa: F401,F403
from .cone import *  # noqa: F401,F403
from .depth import *  # noqa: F401,F403
from .frames import *  # noqa: F401,F403
from .heads import *  # noqa: F401,F403
from .layers import *  # noqa: F401,F403
from .matrices import *  # noqa: F401,F403
from .objectives import *  # noqa: F401,F403
from .practice import *  # noqa: F401,F403
from .primer import *  # noqa: F401,F403
from .theme import *  # noqa: F401,F403
from .theme import BUNDLE_NAME, PUBLISHED_COLOR  # noqa: F401
