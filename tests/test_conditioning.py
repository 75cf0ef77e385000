"""numerics.conditioning: digits of agreement and relative condition numbers on functions whose answers
are known in closed form."""

import math
import zlib
from fractions import Fraction

import mpmath as mp
import pytest
import sympy as sp

from numerics.conditioning import (JUMPS, UNIT_ROUNDOFF, Conditioning, agreeing_digits, float64_digits,
                                   relative_condition)


def mpf(x):
    return x if isinstance(x, mp.mpf) else mp.mpf(sp.N(x, mp.mp.dps + 5))


# --- agreeing_digits -------------------------------------------------------------------------------

def test_digits_of_agreement():
    with mp.workdps(60):
        third = mp.mpf(1) / 3
        with mp.workdps(20):
            low = +third
        assert 20 < agreeing_digits(low, third) < 22.5          # 20 digits are 70 bits, ~21 digits
        assert agreeing_digits(third, third) == math.inf
        assert agreeing_digits(mp.mpf("1e-40"), mp.mpf(0)) == 0          # a residue where the value is 0
        assert agreeing_digits(mp.mpf(0), mp.mpf(0)) == math.inf


def test_digits_of_other_objects():
    assert agreeing_digits(None, None) is None                               # "per draw": not a number
    assert agreeing_digits((mp.mpf(1), mp.mpf(2)), (mp.mpf(1), mp.mpf("2.000001"))) == pytest.approx(6.3, abs=0.1)
    assert agreeing_digits("agree", "agree") == math.inf
    assert agreeing_digits("agree", "disagree") == 0
    assert agreeing_digits((1, 2), (1, 2, 3)) == 0
    assert agreeing_digits(sp.Rational(1, 3), mp.mpf(1) / 3) > 15
    assert agreeing_digits(Fraction(1, 3), mp.mpf(1) / 3) > 15
    with mp.workdps(40):
        near = mp.mpc(1, 1) + mp.mpf("1e-30")
    assert 29 < agreeing_digits(near, mp.mpc(1, 1)) < 31     # compared at the bits it carries, not at 15 digits
    assert agreeing_digits(mp.matrix([[1, 2]]), mp.matrix([[1, 2.000001]])) == pytest.approx(6.3, abs=0.1)
    assert agreeing_digits(mp.matrix([[1, 2]]), mp.matrix([[1], [2]])) == 0
    assert float64_digits(math.inf) == 0 and float64_digits(math.nan) == 0


# --- relative_condition ------------------------------------------------------------------------------

def condition(fn, **point):
    return relative_condition(lambda p: fn(**{k: mpf(v) for k, v in p.items()}), point, list(point))


def test_power_laws_have_their_exponent_as_condition_number():
    found = condition(lambda x, y: x**3 / y**2, x=sp.Rational(7, 3), y=sp.pi)
    assert found.terms["x"] == pytest.approx(3, rel=1e-9) and found.terms["y"] == pytest.approx(2, rel=1e-9)
    assert found.cond == pytest.approx(5, rel=1e-9) and not found.not_differentiable
    for x in (sp.Integer(-1), -sp.Rational(7, 3)):               # a negative input is perturbed like any other
        assert condition(lambda x: x**3, x=x).terms["x"] == pytest.approx(3, rel=1e-9)


def test_a_pole_is_ill_conditioned_and_said_so():
    for distance, cond in ((sp.Rational(1, 10**9), 1e9), (sp.Rational(1, 10**15), 1e15)):
        found = condition(lambda g: 1 / (g - 1), g=1 + distance)
        assert found.cond == pytest.approx(cond, rel=1e-6)
        assert found.ill_conditioned and "float64 would keep ~" in found.warning()
    near = condition(lambda g: 1 / (g - 1), g=1 + sp.Rational(1, 10**6))
    assert not near.ill_conditioned and near.warning() is None               # cond 1e6: 10 digits left


def test_a_zero_where_the_value_varies_has_no_relative_accuracy():
    found = condition(lambda t: 1 - 2 * mp.cos(t), t=sp.pi / 3)           # 0 to working precision
    assert found.cond == math.inf and "no relative digits" in found.warning()


def test_an_unused_or_zero_input_contributes_nothing():
    found = condition(lambda x, y: x**2, x=sp.Rational(1, 2), y=sp.Rational(5, 1))
    assert found.terms == {"x": pytest.approx(2), "y": 0.0}
    assert condition(lambda x: x + 1, x=sp.Integer(0)).cond == 0


def test_an_input_that_seeds_a_draw_is_listed_not_differentiated():
    def seeded(theta):      # the value depends on theta through a seed made of its text, as reference data do
        return mp.mpf(zlib.crc32(str(theta).encode()) % 1000 + 1) / 7
    found = relative_condition(lambda p: seeded(p["theta"]), {"theta": sp.pi / 6}, ["theta"])
    assert "theta" in found.not_differentiable and found.cond == 0


def test_a_pole_inside_the_first_step_is_listed_with_no_second_try():
    # a pole 5e-21 below x = 1, inside the first relative step (1e-20) but outside the second (1e-23): the value
    # moves by far more than a tenth of itself at the first step, which float64 inputs cannot resolve, so the
    # input is listed as not differentiable rather than given the 2e20 the smaller step would measure
    pole = 1 - sp.Rational(5, 10**21)
    found = relative_condition(lambda p: 1 / (mpf(p["x"]) - mpf(pole)), {"x": sp.Integer(1)}, ["x"])
    assert found.not_differentiable == {"x": JUMPS} and found.cond == 0


def test_a_domain_edge_is_differentiated_on_its_inside():
    def sqrt_or_undefined(p):
        return mp.sqrt(mpf(p["x"]) - 1) + 2 if p["x"] >= 1 else None       # defined on x >= 1 only
    found = relative_condition(lambda p: sqrt_or_undefined(p) if p["x"] <= 5 else None, {"x": sp.Integer(5)}, ["x"])
    assert found.terms["x"] == pytest.approx(5 / (2 * 2) / 4, rel=1e-9)     # x f'/f = 5 (1/(2*2)) / 4


def test_curvature_takes_over_at_a_small_stationary_value():
    """sin^2 near pi: first-order cond 0 at pi, but float64's pi is off by 1.2e-16, whose square matters
    next to a value of 1e-18."""
    found = condition(lambda t, lam: mp.sin(t) ** 2 + lam**2, t=sp.pi, lam=sp.Rational(1, 10**9))
    assert found.terms["lam"] == pytest.approx(2, rel=1e-6)
    assert found.curvature == pytest.approx(2 * math.pi**2 / 1e-18, rel=1e-3)
    assert found.float64_error == pytest.approx(2 * UNIT_ROUNDOFF + found.curvature * UNIT_ROUNDOFF**2 / 2)


def test_float64_digits():
    assert float64_digits(0) == pytest.approx(15.95, abs=0.01)
    assert float64_digits(3e9 * UNIT_ROUNDOFF) == pytest.approx(6.5, abs=0.05)
    assert float64_digits(1.0) == 0 and float64_digits(10.0) == 0     # an error of 100 % or more keeps no digit
    assert Conditioning(cond=3e9).warning() == "cond 3e+09: float64 would keep ~6 digits"   # 3e9 u = 3.3e-7
    assert Conditioning(cond=1.0).warning() is None


def test_the_second_order_warning_the_repr_and_values_defined_on_too_little_of_a_neighbourhood():
    # stationary and small: the curvature term carries float64's error (cond 0, curvature 1e30: 1e30 u^2 / 2 = 6e-3)
    assert Conditioning(cond=0.0, curvature=1e30).warning() == "second-order cond 1e+30: float64 would keep ~2 digits"
    assert repr(Conditioning(cond=2.0, terms={"x": 2.0}, not_differentiable={"seed": "jumps"}, curvature=0.5)) == \
        "Conditioning(cond=2, x=2, curvature=0.5, seed: jumps)"
    with pytest.raises(ValueError, match="not a real number"):
        relative_condition(lambda p: mp.sqrt(p["x"]), {"x": sp.Integer(-1)}, ["x"])
    # defined at x = 1 and just above it, not at twice the step: no one-sided difference either
    from numerics.conditioning import CONDITION_DIGITS
    step = sp.Rational(1, 10 ** (CONDITION_DIGITS // 2))                  # relative_condition's step
    edge = lambda p: mp.mpf(1) if 1 <= p["x"] < 1 + 3 * step / 2 else None
    found = relative_condition(edge, {"x": sp.Integer(1)}, ["x"])
    assert found.not_differentiable == {"x": "the value is not defined on either side of this point"}
