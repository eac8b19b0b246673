"""Typed output compared as a person compares it: spacing never matters, numbers by value,
and a right value in another form counts as right with a word on how Python prints it."""

from __future__ import annotations

import pytest

from app.lessons import output_match
from app.lessons.output_match import Match

SAME = [
    ("rank 1: count=201.0", "rank 1: count=201.0\n"),
    ("rank 1:  count=201.0", "rank 1: count=201.0\n"),  # two spaces
    ("\trank 1: count=201.0   \n\n", "rank 1: count=201.0\n"),
    ("a\nb", "a\nb\n"),
    ("a\n\nb\n", "a\n\nb"),  # a blank line inside counts as a line; only the ends are trimmed
    ("a\r\nb\r\n", "a\nb\n"),
]

SAME_VALUE = [
    ("rank 1: count=201", "rank 1: count=201.0\n", "Right value; Python prints floats as 201.0"),
    ("rank 1:  3", "rank 1: 3.0\n", "Right value; Python prints floats as 3.0"),
    ("n=4.0", "n=4\n", "Right value; Python prints integers without a decimal point: 4"),
    ("x 1.90", "x 1.9\n", "Right value; the run prints it as 1.9"),
    ("tensor([1.0, 2.0])", "tensor([1., 2.])\n", "Right value; the run prints it as 1."),
    ("lr 0.00001", "lr 1e-05\n", "Right value; the run prints it as 1e-05"),
    ("[1.0,1.0]", "[1.0, 1.0]\n", "Right values; the run spaces it as: [1.0, 1.0]"),
    ("a 1\nb 2", "a 1.0\nb 2.0\n", "Right value; Python prints floats as 1.0"),
    ("x=-2", "x=-2.0\n", "Right value; Python prints floats as -2.0"),
]

DIFFERENT = [
    ("rank 1: count=200", "rank 1: count=201.0\n"),  # another value
    ("rank 0: count=201.0", "rank 1: count=201.0\n"),  # another rank's line
    ("rank1: count=201.0", "rank 1: count=201.0\n"),  # a word glued to a number is a word
    ("Rank 1: count=201.0", "rank 1: count=201.0\n"),  # case is what Python prints
    ("rank 1: count=201.0", "rank 1: count=201.0\nrank 1: done\n"),  # a line missing
    ("a 1\nb 3", "a 1.0\nb 2.0\n"),  # right first line, wrong second
    ("count=201.0 rank 1:", "rank 1: count=201.0\n"),  # the same tokens, another order
    ("x=2", "x=-2\n"),  # the sign is part of the value
    ("True", "true\n"),
    ("", "0\n"),
]


@pytest.mark.parametrize(("typed", "printed"), SAME)
def test_spacing_and_line_ends_never_matter(typed, printed):
    verdict = output_match.compare(typed, printed)
    assert (verdict.match, verdict.hint, verdict.right) == (Match.SAME, None, True)


@pytest.mark.parametrize(("typed", "printed", "hint"), SAME_VALUE)
def test_the_right_value_in_another_form_counts_and_says_how_python_prints_it(typed, printed, hint):
    verdict = output_match.compare(typed, printed)
    assert (verdict.match, verdict.hint, verdict.right) == (Match.SAME_VALUE, hint, True)


@pytest.mark.parametrize(("typed", "printed"), DIFFERENT)
def test_another_value_word_or_line_is_not_what_the_run_shows(typed, printed):
    verdict = output_match.compare(typed, printed)
    assert (verdict.match, verdict.right) == (Match.DIFFERENT, False)
