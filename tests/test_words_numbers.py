"""How the book writes a number: four significant digits, whole numbers whole, never "-0"."""

from embedding_geometry.book.claims.words import number


def test_whole_numbers_are_written_whole_and_others_to_four_digits():
    assert [number(v) for v in (10000, 3072.0, 2, 384)] == ["10000", "3072", "2", "384"]
    assert [number(v) for v in (0.5, 0.123456, 123456.7, 12345678.0, 1e-5)] == ["0.5", "0.1235", "1.235e+05",
                                                                               "1.235e+07", "1e-05"]
    assert number(-0.0) == "0" and number(-0.00001) == "-1e-05" and number(True) == "True" and number("x") == "x"
