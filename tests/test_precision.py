"""Precision of the theory values: two precisions agree, float64 agrees where it is well conditioned,
and the tool flags the points where it is not.

For every registered claim, Hypothesis draws parameters across the declared domain (the typical range,
log-uniform when it spans two decades or more, plus the finite domain edges; integers up to the default
tier's sizes; points that ``resolve`` rejects are skipped with ``assume``) and asserts at each point:

(a) the value at DPS digits and the value at 2 DPS agree to DPS digits -- wherever the problem leaves the
    10 guard digits enough room (cond <= WELL_CONDITIONED); beyond that the tool must say so on the row;
(b) float64 (``Theorem.float64_theory``) and mpmath agree to within FLOAT64_SLACK * max(e, u), where
    u = 2^-53 and e = cond u + curvature u^2 / 2 is the relative error that rounding the inputs to float64
    causes to second order (|delta x_i| <= u |x_i|; the second-order term matters only where the value is
    stationary and small, e.g. sin^2 at theta = pi); 53-bit arithmetic adds at most about one u per
    operation, each carried through factors of order one by a stable formula, so a closed form of up to
    ~30 operations (ours have fewer) adds at most 32 u, and the rounding of the result one more:
    e + 33 u <= 64 max(e, u).  A formula that cancels where the problem does not (an unstable formula)
    exceeds it, which is what (b) is there to catch;
(c) where cond * u > ILL_CONDITIONED (float64 keeps fewer than 8 digits), or where float64 in fact keeps
    fewer, the row says so -- except at an exact 0, printed exactly, which float64 also gets exactly.

Known-hard points are pinned with ``example``.  The number of examples per claim is set by the cost of
its evaluator (quadrature and Gram-matrix claims take ~1 s per point), so the file stays under a minute.
"""

from __future__ import annotations

import dataclasses
import math
from fractions import Fraction

import mpmath as mp
import pytest
import sympy as sp
from hypothesis import HealthCheck, assume, example, given, settings, strategies as st

from numerics.conditioning import ILL_CONDITIONED, UNIT_ROUNDOFF, agreeing_digits
from numerics.expr import parse_number
from theorems import REGISTRY
from theorems.core import Parameter, ParameterError, Theorem
from engine.runner import theory_fields

DPS = 30
FLOAT64_SLACK = 64          # see (b) in the module docstring
WELL_CONDITIONED = 1e8      # cond up to which the 10 guard digits keep all DPS digits (2 to spare)
EDGE_OFFSET = sp.Rational(1, 10**9)

# --- drawing parameters across a declared domain -----------------------------------------------------


def _number(text):
    return None if text is None else parse_number(text)


def _defaults(p: Parameter) -> list[sp.Expr]:
    if isinstance(p.default, str):
        return [parse_number(p.default)]
    return [parse_number(p.default[tier]) for tier in ("quick", "default")]


def _integers(p: Parameter) -> st.SearchStrategy[str]:
    """Integers in the typical range if there is one, else from the lower edge to the default tier's value."""
    lower, upper = _number(p.lower), _number(p.upper)
    if p.typical:
        lo, hi = (int(parse_number(x)) for x in p.typical)
    else:
        lo = int(lower) if lower is not None else min(int(x) for x in _defaults(p))
        hi = int(upper) if upper is not None and upper <= 2 * max(_defaults(p)) + 8 else int(max(_defaults(p)))
    lo = max(lo, int(lower) + (1 if p.lower_open else 0)) if lower is not None else lo
    hi = min(hi, int(upper) - (1 if p.upper_open else 0)) if upper is not None else hi
    return st.integers(lo, max(lo, hi)).map(str)


def _reals(p: Parameter) -> st.SearchStrategy[str]:
    """The typical range (log-uniform when it spans two decades or more), plus the finite domain edges
    (an open edge as edge + 1e-9 of the range: the hard side of e.g. gamma -> 0)."""
    lower, upper = _number(p.lower), _number(p.upper)
    if p.typical:
        a, b = (parse_number(x) for x in p.typical)
    else:
        default = _defaults(p)[0]
        a = lower if lower is not None else default - 4 * (abs(default) + 1)
        b = upper if upper is not None else max(a + 1, 4 * abs(default))
    span = b - a
    edges = []
    if lower is not None:
        edges.append(lower + EDGE_OFFSET * span if p.lower_open else lower)
    if upper is not None:
        edges.append(upper - EDGE_OFFSET * span if p.upper_open else upper)
    fractions = st.fractions(0, 1, max_denominator=1000)
    if a > 0 and b / a >= 100:
        ratio = float(b / a)
        draws = fractions.map(lambda t: sp.Rational(f"{float(a) * ratio ** float(t):.6g}"))
    else:
        draws = fractions.map(lambda t: a + sp.Rational(t.numerator, t.denominator) * span)
    if edges:
        draws = st.one_of(draws, st.sampled_from(edges))
    return draws.map(str)


def parameter_points(theorem: Theorem) -> st.SearchStrategy[dict[str, str]]:
    return st.fixed_dictionaries({p.name: (_integers(p) if p.integer else _reals(p)) for p in theorem.parameters})


def resolved(theorem: Theorem, overrides: dict[str, str]):
    try:
        return theorem.resolve(overrides, "default")
    except ParameterError:
        return None


def defaults_with(theorem: Theorem, overrides: dict[str, str]) -> dict[str, str]:
    """A full parameter dict (the default tier's defaults) with ``overrides``: a pinned example."""
    point = {p.name: p.default if isinstance(p.default, str) else p.default["default"] for p in theorem.parameters}
    return {**point, **overrides}


# --- the property ----------------------------------------------------------------------------------

# Evaluators that stop at a tolerance of their own, relative to the working precision: at float64's
# 15 digits numerics.distances.converged stops when two Gauss-Hermite rules agree to 10^(5 - 15).
ROUTE_TOLERANCE = {"dudley-distance": 1e-10, "kl-divergence": 1e-10}

# Examples per claim, by the cost of one point (theory at DPS and 2 DPS, conditioning, float64 route):
# closed forms ~10 ms, quadratures ~0.3 s, the Gram-matrix claims ~1 s.
EXAMPLES = {"arccos-kernel": 4, "ntk-gram": 4, "kl-divergence": 5, "dudley-distance": 3, "relu-transfer": 5,
            "covariance-bound": 8, "rkhs-projection": 2, "transfer-gradient-norm": 2, "transfer-weight-distance": 2,
            "ntk-finetune-bound": 2}
CLOSED_FORM_EXAMPLES = 25

E9 = "1e-9"
HARD_POINTS = {
    "double-descent": [{"gamma": "1+1e-9"}, {"gamma": "1-1e-9"}, {"gamma": "1+1e-6"}, {"gamma": E9, "d": "10000000000"},
                       {"gamma": "2", "sigma": "0"}],
    "transferability-linear": [{"gamma": "1+1e-9", "d": "100000000000"},          # the interpolation peak
                               {"gamma": "26/25", "theta": "pi/2", "sigma": "1/5", "d": "400"},   # T = 0 there
                               {"theta": "pi/2+1e-9"}],
    "linear-transfer": [{"theta": "pi", "sigma": "0"}, {"theta": "pi/2-1e-9"}, {"theta": E9, "sigma": "0"}],
    "finetune": [{"theta": "pi/3+1e-9"}, {"theta": "pi/3"}, {"gamma": "1-1e-9", "d": "100000000000"}],
    "ridge-transfer": [{"lam": E9, "theta": "0"}, {"lam": E9, "theta": "pi"}, {"lam": E9, "theta": "pi/2+1e-9"}],
    "finetune-linear-regression": [{"theta": E9}, {"theta": "pi/2"}, {"theta": "pi"}],
    "gaussian-depth-bound": [{"theta": E9}, {"eps": E9}],
    "ptft-sample-efficiency": [{"rho": "1-1e-9", "a": "2e-9"}, {"a": "2"}],
    "ptft-penalty": [{"rho": "1", "m": "1/10000", "gamma": "1/10"}, {"rho": "-1/2", "m": "-1/10000", "gamma": "-1/10"}],
    "arccos-kernel": [{"u": "-1"}, {"u": "1-1e-9"}],
    "ntk-gram": [{"u": "1-1e-9"}],
    "kl-divergence": [{"norm_g": "1", "theta": "0"}],
    "dudley-distance": [{"norm_g": "1"}],
}


def assert_precision(theorem: Theorem, overrides: dict[str, str]):
    params = resolved(theorem, overrides)
    assume(params is not None)
    check = theorem.theory_checked(params, DPS)
    assert check.problem is None, check.problem
    if check.conditioning is None:          # not a real number here (None: "per draw")
        return
    cond = check.conditioning.cond
    warning = check.warning() or ""
    where = f"{theorem.id} at {overrides}: value {mp.nstr(check.value, 8)}, cond {cond:.3g}"

    exact_zero = check.value == 0 and check.digits == math.inf       # printed exactly, at any conditioning

    # (a) the printed digits hold, wherever the guard digits leave room for the problem's conditioning
    if cond <= WELL_CONDITIONED or exact_zero:
        assert check.confirmed_digits == DPS, f"{where}: only {check.digits:.1f} digits agree at {check.reference_dps}"
    else:
        assert warning, f"{where}: ill-conditioned beyond the guard digits, but not flagged"

    # (b) float64 agrees to within its conditioning
    float64 = theorem.float64_theory(params)
    with mp.workdps(DPS):
        value = check.value
        error = (0.0 if float64 == value else math.inf) if value == 0 else float(abs(mp.mpf(float64) - value) / abs(value))
    if math.isfinite(cond):
        expected = max(check.conditioning.float64_error, UNIT_ROUNDOFF)
        bound = FLOAT64_SLACK * expected + ROUTE_TOLERANCE.get(theorem.id, 0.0)
        assert error <= bound, f"{where}: float64 {float64!r} off by {error:.2g} > {bound:.2g}"

    # (c) where float64 keeps fewer than 8 digits, by cond or in fact, the row says so (an exact 0, which
    # float64 gets exactly too, is printed exactly and needs no relative digits)
    if (check.conditioning.float64_error > ILL_CONDITIONED and not exact_zero) or error > ILL_CONDITIONED:
        assert "float64" in warning, f"{where}: float64 error {error:.2g}, but the row says {warning!r}"


@pytest.mark.parametrize("theorem_id", sorted(REGISTRY))
def test_theory_precision_across_the_domain(theorem_id):
    theorem = REGISTRY[theorem_id]

    @settings(max_examples=EXAMPLES.get(theorem_id, CLOSED_FORM_EXAMPLES), deadline=None, derandomize=True,
              database=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
    @given(parameter_points(theorem))
    def holds(overrides):
        assert_precision(theorem, overrides)

    for point in HARD_POINTS.get(theorem_id, ()):
        holds = example(defaults_with(theorem, point))(holds)
    holds()


def test_every_hard_point_is_a_point_of_its_claim():
    """A pinned example that ``resolve`` rejects would be skipped silently by ``assume``."""
    for theorem_id, points in HARD_POINTS.items():
        theorem = REGISTRY[theorem_id]
        for point in points:
            assert resolved(theorem, defaults_with(theorem, point)) is not None, (theorem_id, point)


# --- the float64 route is float64 ------------------------------------------------------------------


@settings(max_examples=200, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.filter_too_much])
@given(parameter_points(REGISTRY["double-descent"]))
def test_float64_route_is_bit_for_bit_the_python_float_formula(overrides):
    """double-descent's formula is plain arithmetic: called with Python floats it *is* float64.  The
    route through mpmath at 53 bits gives the same bits, because both round every operation to nearest."""
    theorem = REGISTRY["double-descent"]
    params = resolved(theorem, overrides)
    assume(params is not None)
    python_float = theorem.formulas["asymptotic"](float(params["gamma"]), float(params["sigma"]))
    assert theorem.float64_theory(params) == python_float


@settings(max_examples=200, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.filter_too_much])
@given(lam=st.fractions(Fraction(1, 1000), 3, max_denominator=1000), theta=st.fractions(0, 1, max_denominator=1000))
def test_float64_route_matches_libm_to_an_ulp_or_two(lam, theta):
    """With sin and cos the route is mpmath's correctly rounded functions against libm's (< 1 ulp):
    ridge-transfer's eq. (15), written with math.sin and math.cos, agrees to a few ulps."""
    theorem = REGISTRY["ridge-transfer"]
    params = theorem.resolve({"lam": str(lam), "theta": f"{theta}*pi"})
    x, t = float(params["lam"]), float(params["theta"])
    libm = math.sin(t) ** 2 + math.cos(t) ** 2 * (x / (1 + x)) ** 2
    assert abs(theorem.float64_theory(params) - libm) <= 4 * UNIT_ROUNDOFF * libm


def test_float64_route_asks_for_float64s_digits_at_53_bits():
    """Iterative evaluators (quadrature, root finders) stop at the ``dps`` they are given: the float64 route
    asks for float64's 15 significant digits at 53 bits, so it neither pays for nor claims more."""
    requests = []

    def recording(params, dps):
        requests.append((dps, mp.mp.prec))
        return mp.mpf(1)

    theorem = dataclasses.replace(REGISTRY["double-descent"], evaluate=recording)
    assert theorem.float64_theory(theorem.resolve({})) == 1.0
    assert requests == [(15, 53)]


# --- the mechanism can fail: precision-losing evaluators, ill-conditioned points ------------------------


def with_evaluator(theorem_id: str, evaluate) -> Theorem:
    return dataclasses.replace(REGISTRY[theorem_id], evaluate=evaluate)


def test_an_evaluator_working_at_half_the_requested_precision_is_caught():
    """A precision bug tied to the request (dps halved, e.g. digits taken for bits): at 30 and 60
    digits it keeps 20 and 35, and the two evaluations part after ~20 digits."""
    original = REGISTRY["double-descent"].evaluate

    def halved(params, dps):
        with mp.workdps(dps // 2):
            return original(params, dps // 2)

    theorem = with_evaluator("double-descent", halved)
    check = theorem.theory_checked(theorem.resolve({"gamma": "1/3"}), DPS)
    assert 18 <= check.confirmed_digits < DPS
    assert check.warning().startswith(f"only {check.confirmed_digits} of {DPS} digits hold at {2 * DPS}")
    assert REGISTRY["double-descent"].theory_checked(theorem.resolve({"gamma": "1/3"}), DPS).warning() is None


def test_cancellation_against_working_precision_is_caught():
    """Eq. (15) as printed, 1 - cos^2 (1 + 2 lam)/(1 + lam)^2, cancels at theta = 0 and small lam (the form
    numerics.ridge_transfer had before these tests found it): only ~22 of 30 digits survive, and the row says so."""
    def printed_form(params, dps):
        lam, theta = (mp.mpf(sp.N(params[name], dps + 5)) for name in ("lam", "theta"))
        return 1 - mp.cos(theta) ** 2 * (1 + 2 * lam) / (1 + lam) ** 2

    theorem = with_evaluator("ridge-transfer", printed_form)
    params = theorem.resolve({"lam": "1e-9", "theta": "0"})
    fields = theory_fields(theorem, params, DPS)
    assert fields["theory_digits"] <= 23          # the value is lam^2 ~ 1e-18: 18 of its 40 working digits cancel
    assert fields["theory_warning"] == f"only {fields['theory_digits']} of {DPS} digits hold at {2 * DPS}"
    assert theory_fields(REGISTRY["ridge-transfer"], params, DPS)["theory_digits"] == DPS   # the stable form


def test_two_precisions_cannot_see_an_error_that_does_not_depend_on_the_precision():
    """An evaluator that computes with a fixed 15-digit constant (pi typed as 3.14159265358979) gives the same
    wrong number at every precision, so dps and 2 dps agree: this is a wrong *value*, and only an independent
    route sees it -- here the sympy statement of the claim, evaluated exactly."""
    pi_15 = "3.14159265358979"
    original = REGISTRY["ridge-transfer"].evaluate

    def fixed_constant(params, dps):
        return original({**params, "theta": params["theta"] * mp.mpf(pi_15) / mp.pi}, dps)

    theorem = with_evaluator("ridge-transfer", fixed_constant)
    params = theorem.resolve({"theta": "pi/3"})
    check = theorem.theory_checked(params, DPS)
    assert check.confirmed_digits == DPS and check.warning() is None       # not caught here ...
    statement, named = theorem.symbolic().statement.rhs, {"lambda": "lam"}
    exact = statement.subs({symbol: params[named.get(symbol.name, symbol.name)] for symbol in statement.free_symbols})
    assert agreeing_digits(check.value, sp.N(exact, 2 * DPS)) < 16          # ... but by the symbolic route


def test_an_evaluator_failing_at_the_higher_precision_is_reported_not_dropped():
    original = REGISTRY["double-descent"].evaluate

    def overflows_above_50_digits(params, dps):
        if dps > 50:
            raise OverflowError("int too large to convert to float")   # as mpmath's erfc does at ~150 digits
        return original(params, dps)

    theorem = with_evaluator("double-descent", overflows_above_50_digits)
    fields = theory_fields(theorem, theorem.resolve({}), DPS)
    assert fields["theory"] == "0.54" and fields["theory_digits"] is None
    assert fields["theory_warning"] == f"not re-checked at {2 * DPS} digits (OverflowError)"


def test_above_30_digits_the_reference_has_30_more():
    check = REGISTRY["double-descent"].theory_checked(REGISTRY["double-descent"].resolve({}), 50)
    assert check.reference_dps == 80 and check.confirmed_digits == 50


def test_values_that_are_not_numbers_are_handled():
    theorem = REGISTRY["finetune-linear-regression"]                       # a spiked spectrum: "per draw"
    fields = theory_fields(theorem, theorem.resolve({"top_eig": "3/2", "bottom_eig": "3/10"}), DPS)
    assert fields == {"theory": "n/a (per draw)", "theory_digits": None, "theory_cond": None,
                      "theory_cond_excludes": [], "theory_warning": None}
    as_text = with_evaluator("double-descent", lambda params, dps: ("risk", mp.mpf(1) / 3))
    check = as_text.theory_checked(as_text.resolve({}), DPS)
    assert check.confirmed_digits == DPS and check.conditioning is None


def test_an_ill_conditioned_point_is_flagged_on_the_row_in_the_table_and_in_show(capsys):
    import json
    import verify
    assert verify.main(["double-descent", "--theory-only", "--param", "gamma=1+1e-9", "--json", "-"]) == 0
    row = json.loads(capsys.readouterr().out)["results"][0]
    assert row["theory_digits"] == DPS and row["theory_cond"] == pytest.approx(1e9, rel=0.01)
    assert row["theory_warning"] == "cond 1e+09: float64 would keep ~7 digits"
    assert verify.main(["double-descent", "--theory-only", "--param", "gamma=1+1e-9"]) == 0
    table = capsys.readouterr().out
    points = table.count("double-descent: Monte-Carlo not run")   # the claim's cases at gamma = 1 + 1e-9
    assert points == 2                                              # d = 400, and the sensitive case's d = 80
    assert table.count("⚠") == 2 * points                           # per point: the cell and its line
    assert table.count("⚠ theory: cond 1e+09: float64 would keep ~7 digits") == points
    assert verify.main(["show", "double-descent", "--param", "gamma=1+1e-9"]) == 0
    shown = " ".join(capsys.readouterr().out.split())        # rich wraps at the terminal's width
    assert "30 of 30 digits hold at 60; cond 1e+09" in shown and "⚠ cond 1e+09: float64 would keep ~7 digits" in shown
    assert verify.main(["double-descent", "--theory-only", "--json", "-"]) == 0
    row = json.loads(capsys.readouterr().out)["results"][0]
    assert row["theory_warning"] is None and row["theory_cond"] == pytest.approx(0.926, abs=1e-3)
