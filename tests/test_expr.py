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
