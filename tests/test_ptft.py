"""theorems.ptft: the PT+FT ReLU penalty (eqs. (6)-(11)) and its shape (Sec. 1.2, Fig. 1a-b).

Each recorded case gives its recorded verdict at the quick tier (with the numbers behind it checked); the shape
claim's negative controls (declared on the claim) break a predicate, not only the consistency test; the mpmath
routes agree with each other over the declared domain; out-of-domain parameters raise ParameterError.
"""

import importlib

import mpmath as mp
import pytest
import sympy as sp
from hypothesis import HealthCheck, example, given, settings, strategies as st

import theorems.ptft as ptft
from numerics.penalty_tables import penalty_and_slope_table, rounding_scale
from numerics.ptft_penalty import (penalty, penalty_by_minimisation, penalty_from_quartic, penalty_slope,
                                   penalty_slope_by_differences, positive_real_roots, quartic_coefficients,
                                   quartic_discriminant, stationary_bracket)
from theorems.core import ParameterError
from theorems.registry import REGISTRY
from claim_helpers import quick_check, with_formulas

PENALTY, SHAPE = "ptft-penalty", "ptft-penalty-shape"
ROOTS_CASE = {"rho": "1", "m_aux": "1", "m": "1/10000", "gamma": "1/10"}


# --- registration and faces ----------------------------------------------------------------------------

def test_claims_are_registered_once():
    again = importlib.import_module("theorems.ptft")
    assert again is ptft
    assert REGISTRY[PENALTY] is ptft.ptft_penalty and REGISTRY[SHAPE] is ptft.ptft_penalty_shape
    from theorems.registry import register
    with pytest.raises(ValueError, match="registered twice"):
        register(ptft.ptft_penalty)


def test_fields_are_filled():
    for theorem_id in (PENALTY, SHAPE):
        theorem = REGISTRY[theorem_id]
        assert theorem.statement and theorem.quantity and theorem.assumptions and theorem.verdict_rule
        assert theorem.record.startswith("agree") and theorem.false_alarm == 0.0
        assert all(theorem.points({}, tier) for tier in ("quick", "default", "paper"))
        assert theorem.findings and all(finding.why and finding.at for finding in theorem.findings)
    assert [p.name for p in REGISTRY[PENALTY].parameters] == ["rho", "m_aux", "m", "gamma"]
    # the predicates are data: every one names its m-interval and tolerance
    for predicate in ptft.SHAPE_PREDICATES:
        lo, hi = (sp.Rational(x) for x in predicate.m_range)
        assert 0 < lo < hi and sp.Rational(predicate.tolerance) > 0 and predicate.curves and predicate.paper


@pytest.mark.parametrize("theorem_id", [PENALTY, SHAPE])
def test_sympy_derivations_hold(theorem_id):
    symbolic = REGISTRY[theorem_id].symbolic()
    assert sp.latex(symbolic.statement)
    for derivation in symbolic.derivations:
        assert derivation.holds, derivation.claim


def test_sympy_derives_the_printed_quartic():
    derivation = next(d for d in REGISTRY[PENALTY].symbolic().derivations if d.claim.startswith("u^3/2 p'(u)"))
    u, m0 = sp.symbols("u m_0", positive=True)
    rho, m, gamma = sp.symbols("rho m gamma", real=True)
    assert sp.expand(derivation.result - (u**4 - m0 * rho * u**3 + gamma * m * u - m**2)) == 0


@pytest.mark.parametrize("theorem_id", [PENALTY, SHAPE])
def test_theory_is_stable_across_precisions(theorem_id):
    theorem = REGISTRY[theorem_id]
    for point in theorem.points({}, "default"):
        values = [theorem.theory(point.params, dps) for dps in (15, 30, 60)]
        with mp.workdps(60):
            assert abs(values[1] - values[2]) <= mp.mpf(10) ** -28 * max(1, abs(values[2]))
            assert abs(values[0] - values[2]) <= mp.mpf(10) ** -13 * max(1, abs(values[2]))


def test_theory_values_at_the_recorded_points():
    with mp.workdps(30):
        # r~ at rho = 9/10, m_aux = 1, m = 1, gamma = 1/20 and the rho = 0.99 slope of the finding
        assert abs(REGISTRY[PENALTY].theory(REGISTRY[PENALTY].resolve({}), 30) - mp.mpf("0.866964346348444485845")) < 1e-20
        slope = REGISTRY[SHAPE].theory(REGISTRY[SHAPE].resolve({"rho_l1": "99/100"}), 30)
        assert abs(slope - mp.mpf("1.51800275039761538265")) < 1e-19


# --- the mpmath routes over the declared domain -------------------------------------------------------

GRID = [(rho, m_aux, m, gamma) for rho in ("-1", "-0.3", "0", "0.9", "1") for m_aux in ("0.01", "1", "100")
        for m in ("-2", "0.01", "1", "30") for gamma in ("-0.1", "0", "0.05")]


def _proved_unique(rho, m, gamma):
    return rho <= 0 or gamma * m <= 0 or gamma**2 < 4 * abs(m)


def test_quartic_root_is_the_minimiser_of_p_over_a_grid_of_the_domain():
    """Over rho x m_aux x m x gamma (180 points): eq. (10) has one positive root, it is the minimiser that
    direct minimisation of p finds (to ~half the digits, p being flat there), and eq. (11) is min p."""
    with mp.workdps(30):
        for point in GRID:
            rho, m_aux, m, gamma = map(mp.mpf, point)
            m0 = mp.sqrt(m_aux)
            value, u_star, roots = penalty_from_quartic(rho, m0, m, gamma)
            direct, u_direct, minima = penalty_by_minimisation(rho, m0, m, gamma, points_per_decade=12)
            assert _proved_unique(rho, m, gamma) and len(roots) == 1 and len(minima) == 1, point
            assert abs(value - direct) <= mp.mpf(10) ** -27 * (1 + abs(value)), point
            assert abs(u_star - u_direct) <= mp.mpf(10) ** -12 * u_star, point
            assert abs(mp.polyval(quartic_coefficients(rho, m0, m, gamma), u_star)) < mp.mpf(10) ** -25 * (1 + u_star**4 + m * m)


def test_direct_minimisation_finds_a_minimum_next_to_the_bracket_s_lower_end():
    """The grid runs over twice the stationary bracket [L, U], so a minimiser just above L is an interior grid
    point even where the grid is coarse: here u* = 1.115 L (about the closest to L over the domain, by search)
    and 8 points a decade step by a factor 1.33."""
    with mp.workdps(30):
        rho, m0, m, gamma = mp.mpf(-1), mp.mpf("3.3756198"), mp.mpf("2.8460987"), mp.mpf("1.68663427")
        value, u_star, _ = penalty_from_quartic(rho, m0, m, gamma)
        assert u_star < mp.mpf("1.12") * stationary_bracket(rho, m0, m, gamma)[0]
        direct, u_direct, _ = penalty_by_minimisation(rho, m0, m, gamma, points_per_decade=8)
        assert abs(value - direct) <= mp.mpf(10) ** -25 * (1 + abs(value))
        assert abs(u_star - u_direct) <= mp.mpf(10) ** -10 * u_star


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rho=st.fractions(-1, 1, max_denominator=100), m_aux=st.fractions("1/100", 100, max_denominator=100),
       m=st.fractions(-100, 100, max_denominator=10000).filter(lambda x: x != 0),
       gamma=st.fractions(-10, 10, max_denominator=1000))
@example(rho=1, m_aux=1, m="1/10000", gamma="1/10")           # three positive roots
@example(rho=1, m_aux=25, m=1, gamma=10)                       # three, at a large gamma
@example(rho="-1/2", m_aux=1, m="-1/10000", gamma="-1/10")     # the mirror pattern: three negative roots, one positive
def test_root_count_is_what_descartes_and_the_discriminant_say(rho, m_aux, m, gamma):
    """Anywhere in the domain: one positive root where uniqueness is proved; otherwise three exactly when the
    discriminant is positive; eq. (11) at the best root is min p (direct minimisation), and the best root
    is the global minimiser."""
    from fractions import Fraction
    rho, m_aux, m, gamma = (Fraction(x) for x in (rho, m_aux, m, gamma))
    with mp.workdps(30):
        r, a, k, g = (mp.mpf(x.numerator) / x.denominator for x in (rho, m_aux, m, gamma))
        m0 = mp.sqrt(a)
        value, u_star, roots = penalty_from_quartic(r, m0, k, g)
        if _proved_unique(rho, m, gamma):
            assert len(roots) == 1
        else:
            assert len(roots) == (3 if quartic_discriminant(r, m0, k, g) > 0 else 1)
        direct, u_direct, _ = penalty_by_minimisation(r, m0, k, g, points_per_decade=12)
        assert abs(value - direct) <= mp.mpf(10) ** -25 * (1 + abs(value))
        assert abs(u_star - u_direct) <= mp.mpf(10) ** -10 * u_star
        lo, hi = stationary_bracket(r, m0, k, g)
        assert all(lo < root < hi for root in roots)


def test_three_roots_below_the_discriminant_threshold():
    """rho = 1, m_aux = 1, gamma = 1/10: the discriminant changes sign at m_c ~ 4 gamma^3/(27 m0 rho); below it
    eq. (10) has three positive roots (p: two minima), above it one."""
    with mp.workdps(30):
        gamma = mp.mpf("0.1")
        m_c = mp.findroot(lambda m: quartic_discriminant(1, 1, m, gamma), mp.mpf("1.4e-4"))
        assert abs(m_c / (4 * gamma**3 / 27) - 1) < 0.01
        below = penalty_from_quartic(1, 1, m_c * mp.mpf("0.9"), gamma)[2]
        above = penalty_from_quartic(1, 1, m_c * mp.mpf("1.1"), gamma)[2]
        assert len(below) == 3 and len(above) == 1
        # at the finding point the global minimiser is the largest root; the smallest is a local minimum only
        value, u_star, roots = penalty_from_quartic(1, 1, mp.mpf("1e-4"), gamma)
        assert u_star == roots[-1] and penalty(roots[0], 1, 1, mp.mpf("1e-4"), gamma) > 99 * value


def test_positive_real_roots_of_known_polynomials():
    with mp.workdps(30):
        assert positive_real_roots([1, -6, 11, -6]) == [1, 2, 3]
        assert positive_real_roots([1, 0, 1]) == []                     # +-i
        double = positive_real_roots([1, -2, 1])                       # (u - 1)^2: a double root, once or twice, at 1
        assert double and all(abs(r - 1) < mp.mpf(10) ** -25 for r in double)


def test_golden_section_finds_the_minimiser_of_a_unimodal_function():
    # Each step keeps the bracket that holds the minimum, shrinking it by 0.618, so a parabola's vertex is found
    # to the tolerance (the refinement penalty_by_minimisation starts from).
    from numerics.ptft_penalty import _golden_section
    with mp.workdps(30):
        vertex = _golden_section(lambda x: (x - mp.mpf("0.3")) ** 2, mp.mpf(-2), mp.mpf(1), mp.mpf(10) ** -20)
        assert abs(vertex - mp.mpf("0.3")) < mp.mpf(10) ** -19


def test_rounding_scale_is_the_sum_of_the_penalty_terms_magnitudes():
    # Without the cross term (gamma = 0), |p(u)| is at most the sum of its terms' magnitudes, the scale that
    # float64 rounding in p is measured against; with m = m0 = 0 only u^2 is left, and the two are equal.
    for u, rho, m0, m in [(10.0, 0.5, 3.0, 2.0), (0.1, -1.0, 1.0, 0.01), (3.0, 1.0, 3.0, 0.0)]:
        assert abs(penalty(u, rho, m0, m, 0.0)) <= rounding_scale(u, rho, m0, m, 0.0)
    assert rounding_scale(7.0, 0.3, 0.0, 0.0, 0.0) == penalty(7.0, 0.3, 0.0, 0.0, 0.0) == 49.0


def test_m_zero_has_no_bracket():
    with pytest.raises(ValueError, match="m = 0"):
        stationary_bracket(1, 1, 0, 0)


@pytest.mark.parametrize("point", [("1", "1", "1", "0"), ("0.99", "1", "0.5", "0"), ("0.9", "100", "2", "0"),
                                   ("1", "0.01", "30", "0.01"), ("-0.5", "2", "-3", "0.1")])
def test_implicit_slope_matches_finite_differences(point):
    """d log r~/d log m by implicit differentiation of the root = central differences of the directly minimised
    r~, and = the envelope form m 2(m/u* - gamma)/u* / r~."""
    with mp.workdps(30):
        rho, m_aux, m, gamma = map(mp.mpf, point)
        m0 = mp.sqrt(m_aux)
        slope, value, u = penalty_slope(rho, m0, m, gamma)
        assert abs(slope - penalty_slope_by_differences(rho, m0, m, gamma)) < mp.mpf(10) ** -15
        assert abs(slope - m * 2 * (m / u - gamma) / u / value) < mp.mpf(10) ** -25


def test_gamma_zero_penalty_scales_with_m_aux():
    """gamma = 0: r~(m; m_aux) = m_aux F(m/m_aux), so the slope depends on m/m_aux only (sympy derives it)."""
    with mp.workdps(30):
        for rho in (mp.mpf(1), mp.mpf("0.9")):
            a = penalty_slope(rho, mp.sqrt(4), 8, 0)
            b = penalty_slope(rho, mp.sqrt(mp.mpf("0.25")), mp.mpf("0.5"), 0)
            assert abs(a[0] - b[0]) < mp.mpf(10) ** -25 and abs(a[1] / 4 - b[1] * 4) < mp.mpf(10) ** -25


# --- recorded verdicts at the quick tier --------------------------------------------------------------

def test_penalty_default_case_agrees(outcomes):
    outcome = outcomes(PENALTY)
    assert outcome.verdict == "agree", outcome.detail
    assert outcome.extra["max_gap_over_floor"] < 0.1                # far inside the float64 floor
    assert outcome.extra["max_u_relative_gap"] < 1e-10              # the torch minimiser is the quartic's root
    assert outcome.extra["rows_with_several_roots"] == 0 and outcome.extra["point_roots"] == [pytest.approx(1.3128864983883677)]
    assert outcome.extra["discriminant_at_point"] < 0
    assert abs(outcome.mean - outcome.reference) < 1e-14 and outcome.trials == 100


def test_penalty_mirror_signs_agree(outcomes):
    outcome = outcomes(PENALTY, rho="-1/2", m="-3", gamma="1/10", m_aux="2")
    assert outcome.verdict == "agree", outcome.detail


def test_finding_three_positive_roots_is_recorded(outcomes):
    outcome = outcomes(PENALTY, **ROOTS_CASE)
    assert outcome.verdict == "disagree", outcome.detail
    assert outcome.detail.startswith("one positive root of eq. (10): 3 positive roots at the requested point")
    assert outcome.extra["rows_with_several_roots"] == 1 == outcome.extra["rows_with_several_minima"]  # the point only
    assert outcome.extra["point_roots"] == [pytest.approx(0.00115317304231), pytest.approx(0.00242816337182),
                                            pytest.approx(0.99999000980049)]
    assert outcome.extra["max_gap_over_floor"] < 0.1                # r~ = min over the roots is still min p
    assert outcome.extra["discriminant_at_point"] > 0


def test_shape_default_case_agrees_with_each_predicate(outcomes):
    outcome = outcomes(SHAPE)
    assert outcome.verdict == "agree", outcome.detail
    predicates = outcome.extra["predicates"]
    assert set(predicates) == {p.name for p in ptft.SHAPE_PREDICATES}
    assert all(p["holds"] and p["slack"] > 0 and p["slack_empirical"] > 0 for p in predicates.values())
    assert predicates["gap at rho = 1"]["slack"] < 0.05               # the gap narrows as m grows (ratio 1.10 at m = 100)
    assert outcome.extra["max_slope_gap_fd_vs_implicit"] < 1e-5
    assert abs(outcome.mean - outcome.reference) < 1e-5 and abs(outcome.reference - 1.2071154) < 1e-6


def test_finding_rho_099_is_not_l1_like(outcomes):
    outcome = outcomes(SHAPE, rho_l1="99/100")
    assert outcome.verdict == "disagree", outcome.detail
    predicates = outcome.extra["predicates"]
    assert not predicates["l1-like for rho < 1"]["holds"] and predicates["l1-like for rho < 1"]["slack"] < -0.1
    assert all(p["holds"] for name, p in predicates.items() if name != "l1-like for rho < 1")
    assert abs(outcome.reference - 1.518) < 1e-3


def test_finding_gamma_breaks_the_slope_scale(outcomes):
    outcome = outcomes(SHAPE, gamma="1/100")
    assert outcome.verdict == "disagree", outcome.detail
    predicates = outcome.extra["predicates"]
    assert not predicates["l1-l2 scale"]["holds"]
    assert all(p["holds"] for name, p in predicates.items() if name != "l1-l2 scale")


# --- negative controls ---------------------------------------------------------------------------------

@pytest.mark.parametrize("control", REGISTRY[SHAPE].negative_controls, ids=lambda control: control.name)
def test_shape_controls_break_a_predicate_not_only_the_consistency_test(control, run):
    # (every control is also run by tests/test_negative_controls.py, which asks only for its verdict)
    outcome = quick_check(with_formulas(REGISTRY[SHAPE], **control.formulas), run, **control.params)
    assert any(not p["holds"] for p in outcome.extra["predicates"].values()), outcome.detail


def test_consistent_wrong_claims_fail_the_predicates_not_the_consistency_test(run):
    outcome = quick_check(with_formulas(REGISTRY[SHAPE], penalty=ptft._p_rho_flipped, quartic=ptft._q_rho_flipped), run)
    assert outcome.extra["max_penalty_gap_over_floor"] < 1                  # torch and eq. (11) agree on the wrong p ...
    failed = {name for name, p in outcome.extra["predicates"].items() if not p["holds"]}
    assert failed == {"l1-l2 scale", "gap at rho = 1", "reversal at rho = 0.9"}   # ... whose shape is not the paper's


# --- domains -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("theorem_id, overrides, message", [
    (PENALTY, {"rho": "2"}, "outside its domain"),
    (PENALTY, {"rho": "-1.5"}, "outside its domain"),
    (PENALTY, {"m": "0"}, "outside its domain"),
    (PENALTY, {"m_aux": "0"}, "outside its domain"),
    (PENALTY, {"m_aux": "-1"}, "outside its domain"),
    (PENALTY, {"gamma": "x"}, "gamma"),
    (PENALTY, {"d": "3"}, "has no parameter"),
    (SHAPE, {"rho_l1": "1"}, "outside its domain"),
    (SHAPE, {"rho_l1": "-2"}, "outside its domain"),
    (SHAPE, {"m": "1"}, "has no parameter"),
])
def test_out_of_domain_parameters_are_rejected(theorem_id, overrides, message):
    with pytest.raises(ParameterError, match=message):
        REGISTRY[theorem_id].resolve(overrides, "quick")


def test_the_shape_regions_hold_on_both_sides_of_their_edges(capsys):
    # deterministic: each edge was root-found on the quick grid (docs/findings.md); a point just inside and just
    # outside the rho_l1 edge (0.98077318 at gamma = 0), the gamma edges (2.439e-5, -1.1053e-3) and the tangency
    # at rho_l1 ~ 0 (between -gamma and ~3 gamma) must each get what the record says
    import verify
    theorem = REGISTRY[SHAPE]
    expected = {("0.9807", "0"): "agree", ("0.9808", "0"): "disagree", ("9/10", "2/100000"): "agree",
                ("9/10", "3/100000"): "disagree", ("9/10", "-11/10000"): "agree", ("9/10", "-111/100000"): "disagree",
                ("0", "-1/10000"): "disagree", ("1/1000", "-1/10000"): "agree"}
    for (rho, gamma), verdict in expected.items():
        assert theorem.recorded(theorem.resolve({"rho_l1": rho, "gamma": gamma}, "quick"))[0] == verdict
    assert verify.main([SHAPE, "--quick", "--grid", "rho_l1=0.9807,0.9808", "--grid", "gamma=0"]) == 0
    assert verify.main([SHAPE, "--quick", "--grid", "gamma=2/100000,3/100000,-11/10000,-111/100000"]) == 0
    assert verify.main([SHAPE, "--quick", "--param", "gamma=-1/10000", "--grid", "rho_l1=0,1/1000"]) == 0
    assert "CHANGED" not in capsys.readouterr().out


def test_the_shape_table_gives_zero_penalty_and_an_infinite_slope_where_the_root_hits_rho_one_m_gamma_m0():
    # at rho = 1, m = gamma m0 eq. (11) is 0, so its log-slope is undefined; the table says so instead of failing
    F = REGISTRY[SHAPE].formulas
    table = penalty_and_slope_table([(1.0, 4.0, 1.0), (1.0, 4.0, 2.0)], 0.5, F["m0"], F["quartic"], F["penalty"], 30)
    assert table[(1.0, 4.0, 1.0)] == (0.0, mp.inf)
    value, slope = table[(1.0, 4.0, 2.0)]
    assert value > 0 and mp.isfinite(slope)
