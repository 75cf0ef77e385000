import math

import pytest
import sympy as sp
from hypothesis import given, strategies as st

from numerics.expr import ExpressionError, parse_number


@pytest.mark.parametrize("text, expected", [
    ("pi/4", sp.pi / 4),
    ("3*pi/8", 3 * sp.pi / 8),
    ("1e-3", sp.Rational(1, 1000)),
    ("0.2", sp.Rational(1, 5)),
    ("-2^-1", sp.Rational(-1, 2)),
    ("2**3", 8),
    ("(1 + 2) * 3", 9),
    ("sqrt(2)/2", sp.sqrt(2) / 2),
    ("arccos(1 - 0.2)", sp.acos(sp.Rational(4, 5))),
    (" 7 ", 7),
])
def test_parses_exactly(text, expected):
    assert sp.simplify(parse_number(text) - expected) == 0


@pytest.mark.parametrize("text, fragment", [
    ("", "empty"),
    ("1/0", "division by zero"),
    ("__import__('os')", "unexpected character"),
    ("os", "unknown name"),
    ("sqrt(-1)", "not a finite real"),
    ("log(0)", "not a finite real"),
    ("2**", "expected"),
    ("1..2", "unexpected"),
    ("pi pi", "unexpected"),
    ("2**2000", "exponent too large"),
    ("x" * 300, "longer than"),
])
def test_rejects_with_a_message(text, fragment):
    with pytest.raises(ExpressionError, match=fragment):
        parse_number(text)


@given(st.floats(min_value=-1e6, max_value=1e6, allow_nan=False))
def test_decimal_literals_round_trip(x):
    text = repr(x)
    assert math.isclose(float(parse_number(text)), x, rel_tol=1e-15, abs_tol=1e-300)


# --- conditions over parameters (a finding's region) ------------------------------------------------

from numerics.expr import parse_condition  # noqa: E402

NAMES = ("sigma", "gamma", "theta", "delta")


@pytest.mark.parametrize("text, point, holds", [
    ("sigma > 0", {"sigma": 0}, False),
    ("sigma > 0", {"sigma": sp.Rational(1, 10**300)}, True),       # decided exactly, not in float64
    ("sigma > 0 and gamma < 1", {"sigma": sp.Rational(1, 5), "gamma": sp.Rational(1, 2)}, True),
    ("sigma > 0 and gamma < 1", {"sigma": sp.Rational(1, 5), "gamma": 1}, False),
    ("delta >= 2 or not (theta < pi/3)", {"delta": 1, "theta": sp.pi / 3}, True),
    ("delta >= 2 or not (theta < pi/3)", {"delta": 1, "theta": sp.pi / 4}, False),
    ("(gamma + 1) * 2 <= 3", {"gamma": sp.Rational(1, 2)}, True),     # a parenthesised expression, not a condition
    ("sin(theta)**2 == 1/2", {"theta": sp.pi / 4}, True),
    ("gamma != 1", {"gamma": 1}, False),
])
def test_a_condition_is_decided_exactly_at_a_point(text, point, holds):
    assert parse_condition(text, NAMES).holds(point) is holds


def test_a_condition_names_only_the_parameters_it_uses():
    assert parse_condition("sigma > 0 and gamma < 1", NAMES).names == ("gamma", "sigma")


@pytest.mark.parametrize("text, fragment", [
    ("sigma", "expected a comparison"),
    ("sigma >", "expected a value"),
    ("x > 1", "unknown name 'x'"),
    ("sigma > 0 and", "expected a value"),
    ("sigma >> 0", "unexpected '>'"),
    ("__import__('os') > 0", "unexpected character"),
    ("", "empty condition"),
    ("sigma > 0 2", "unexpected '2' in 'sigma > 0 2'"),
    ("sigma > 0 " + "or sigma > 0 " * 100, "condition longer than"),
])
def test_a_malformed_condition_is_one_line_naming_the_problem(text, fragment):
    with pytest.raises(ExpressionError, match=fragment.replace("(", r"\(")):
        parse_condition(text, NAMES)


def test_a_parameter_value_is_still_a_number_not_a_name():
    with pytest.raises(ExpressionError, match="unknown name"):
        parse_number("sigma")
    with pytest.raises(ExpressionError):
        parse_number("1 < 2")


def test_a_condition_is_text_over_parameters_that_do_not_shadow_its_vocabulary():
    with pytest.raises(ExpressionError, match="expected text, got int"):
        parse_condition(3, NAMES)
    with pytest.raises(ExpressionError, match="expected text, got float"):
        parse_number(0.5)
    for name in ("pi", "sqrt", "and"):
        with pytest.raises(ExpressionError, match=f"may not be named '{name}'"):
            parse_condition("x > 0", ("x", name))
    assert repr(parse_condition("sigma > 0", NAMES)) == "Condition('sigma > 0')"
