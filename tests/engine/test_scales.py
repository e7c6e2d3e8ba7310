"""Scales: value sets, order (worst -> best, reversible), instruction text and token support."""

import pytest

from verdict.scale import BooleanScale, ContinuousScale, DiscreteScale


def test_discrete_range_and_explicit_values():
    assert DiscreteScale((1, 5)).values == (1, 2, 3, 4, 5)
    letters = DiscreteScale(["A", "B", "C", "D", "E", "F"])
    assert letters.values == ("A", "B", "C", "D", "E", "F")
    assert (letters.worst, letters.best) == ("A", "F")


def test_end_is_worst_reverses_order():
    grades = DiscreteScale(["A", "B", "C", "D", "E", "F"], end_is_worst=True)
    assert (grades.worst, grades.best) == ("F", "A")
    assert grades.instruction == "one of F, E, D, C, B, A (from worst to best)"
    assert ContinuousScale(0, 1, end_is_worst=True).best == 0


def test_instruction_texts():
    assert DiscreteScale((1, 5)).instruction == "an integer from 1 (worst) to 5 (best)"
    assert ContinuousScale(0, 1).instruction == "a number from 0 (worst) to 1 (best)"
    assert BooleanScale().instruction == "yes or no"


def test_instruction_of_fractional_values_lists_them():
    # Found by mypy (issue 18): numeric values that are not integers went to range() and raised.
    assert DiscreteScale([0.5, 1.0]).instruction == "one of 0.5, 1.0 (from worst to best)"
    assert DiscreteScale([1, 3, 5]).instruction == "one of 1, 3, 5 (from worst to best)"


def test_token_support():
    assert DiscreteScale((1, 3)).tokens == ("1", "2", "3")
    assert DiscreteScale((1, 3)).value_of_token(" 2") == 2
    assert DiscreteScale((1, 3)).value_of_token("7") is None
    assert DiscreteScale(["Yes", "No"]).value_of_token("yes") == "Yes"
    assert BooleanScale().tokens == ("no", "yes")
    assert BooleanScale().value_of_token(" Yes") is True
    assert BooleanScale().value_of_token("false") is False
    assert ContinuousScale(0, 1).tokens is None


@pytest.mark.parametrize("bad", [(5, 1), (3, 3), [1], ["a", "A"]])
def test_invalid_discrete_scales(bad):
    with pytest.raises(ValueError):
        DiscreteScale(bad)


def test_invalid_continuous_scale():
    with pytest.raises(ValueError, match="low < high"):
        ContinuousScale(1, 0)


def test_equal_scales_are_equal_and_hashable():
    assert DiscreteScale((1, 5)) == DiscreteScale([1, 2, 3, 4, 5])
    assert hash(DiscreteScale((1, 5))) == hash(DiscreteScale((1, 5)))
    assert DiscreteScale((1, 5)) != DiscreteScale((1, 5), end_is_worst=True)
