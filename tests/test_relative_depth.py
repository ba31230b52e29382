"""core.relative_depth on hand values: the one convention the studies and the claims engine share."""

import numpy as np

from embedding_geometry.core import relative_depth as rd


def test_positions_tail_window_and_nearest_depth_by_hand():
    assert list(rd.positions(5)) == [0, 0.25, 0.5, 0.75, 1] and list(rd.positions(4, "blocks")) == [0.25, 0.5, 0.75, 1]
    # the last 2/24: two of 24 blocks, one of 6 or 12 (12 · 2/24 = 1 exactly: block 11 sits on the boundary, out)
    assert [int(rd.in_tail(2 / 24, n, "blocks").sum()) for n in (6, 12, 24)] == [1, 1, 2]
    assert list(np.flatnonzero(rd.window((0.25, 0.5), 5))) == [1, 2]  # ends included, despite 1/4 in floats
    assert [rd.index_at(0.5, L + 1) for L in (1, 5, 6)] == [1, 3, 3]  # a tie goes deeper
    assert rd.index_at(0.5, 6, "blocks") == 2  # block 3 of 6 is entry 2
