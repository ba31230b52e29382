"""How every table reads on a page (book/tables.py), and the reader test's raw-output patterns."""

import math

import numpy as np
import pandas as pd
import pytest

from embedding_geometry.book import tables


@pytest.mark.parametrize("value, decimals, text", [
    (None, None, "—"), (float("nan"), 4, "—"), (pd.NA, None, "—"), (np.float64("nan"), None, "—"),
    (True, None, "yes"), (np.bool_(False), None, "no"),
    (3072.0, None, "3072"), (np.int64(64), None, "64"),
    (-0.00001, 4, "-1e-05"), (-0.00004, 3, "-4e-05"), (-0.0, 4, "0.0000"), (-1e-20, None, "-1e-20"),
    (0.123456, 4, "0.1235"), (12.3456, 3, "12.346"), (0.5, None, "0.5"), (math.inf, 2, "∞"),
    ({"count": 64, "share": 0.25}, None, "count: 64; share: 0.25"), ([1, 2, 3], None, "1, 2, 3"), ([], None, "—"),
    ("text", None, "text"),
])
def test_cell_text_never_shows_a_machine_format(value, decimals, text):
    assert tables.cell_text(value, decimals) == text


def test_a_column_is_rounded_to_one_number_of_decimals_for_its_magnitude():
    assert tables.column_decimals(pd.Series([1.0, 2.0, None])) is None  # whole numbers: integers
    assert tables.column_decimals(pd.Series([0.1, 0.25])) == 4
    assert tables.column_decimals(pd.Series([12.5, 3.0])) == 3
    assert tables.column_decimals(pd.Series([1234.5, 2.0])) == 1
    assert tables.column_decimals(pd.Series([123456.7])) == 0
    assert tables.column_decimals(pd.Series(["a", None])) is None


def test_frame_html_names_columns_in_words_and_keeps_no_raw_value():
    frame = pd.DataFrame({"n_texts": [1.0, 3072.0], "mean_cos": [-0.00001, 0.5], "warns": [True, None]},
                         index=pd.Index(["a", "b"], name="model_id"))
    html = tables.frame_html(frame)
    assert html.startswith('<div class="eg-table-wrap"><table class="eg-table">')  # scrolls in its own box
    for shown in (">model id<", ">n texts<", ">mean cos<", ">3072<", ">-1e-05<", ">0.5000<", ">yes<", ">—<"):
        assert shown in html
    for raw in ("NaN", "nan", "True", "3072.0", "None", "_"):
        assert raw not in html
    assert "<th" in html and 'scope="row"' in html  # the index is a header column
    # a plain range index is not shown
    assert "<th" not in tables.frame_html(pd.DataFrame({"a": [1]})).split("<tbody>")[1]


def test_a_table_folds_under_its_summary_and_shows_code_columns_as_they_are():
    frame = pd.DataFrame({"parameter": ["flag", "sizes"], "default": ["True", "[1, 2]"]})
    frame.attrs.update(fold="2 parameters", code=["default"])
    html = tables.frame_html(frame)
    assert html.startswith('<details class="eg-fold"><summary>2 parameters</summary>')
    assert "<code>True</code>" in html and "<code>[1, 2]</code>" in html
    assert tables.styler_html(frame.style.hide(axis="index")) == html  # a Styler reads the same


def test_register_sends_dataframes_and_stylers_through_the_book_formatter():
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    tables.register(shell)
    data, _ = shell.display_formatter.format(pd.DataFrame({"x_y": [float("nan")]}))
    assert ">x y<" in data["text/html"] and ">—<" in data["text/html"]


def test_the_reader_tests_raw_patterns_catch_what_they_name():
    from test_reader import raw_strings

    assert len(raw_strings("PosixPath('/tmp/x/build/results/a.json')")) == 2
    assert raw_strings("{'count': 64}") and raw_strings("['a', 'b']") and raw_strings("mean nan here")
    assert raw_strings("a -0.0000 b") and raw_strings("flag True") and raw_strings("NaN")
    assert not raw_strings("−0.25, -0.01, 10.0000 and a nanometre; -0.5; yes / no; {x}; build/results")
    assert not raw_strings("its pooling module has pooling_mode_mean_tokens True")  # a quoted setting
