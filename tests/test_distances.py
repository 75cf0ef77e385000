"""theorems.features_are_fate_distances: Features are fate Thm 2.2, KL and Dudley halves, as registered claims.

Each recorded case gives its recorded verdict at the quick tier (with the numbers behind it checked); wrong
formulas swapped into the same checks are rejected (negative controls); the footnote's W_1 reading of the
Dudley claim agrees where the Dudley metric refutes it; the quadratures are independent of the closed forms;
out-of-domain parameters raise ParameterError.
"""

import importlib
import math

import mpmath as mp
import pytest
import sympy as sp
import torch
from hypothesis import HealthCheck, given, settings, strategies as st

import theorems.features_are_fate_distances as distances
from numerics.distances import (conditional_kl, cos_test_gap, cos_test_gap_sup, expected_cos_label,
                                l1_distance, smallest_scale_reaching, tent_test_gap, tent_witness, tent_witness_gap)
from simulate.device import generator
from simulate.distances import (JointSampler, half_cosine, l1_terms, label_test_difference, log_likelihood_ratio,
                                per_draw, scaled_teachers, teacher_directions)
from simulate.stats import estimate
from theorems.core import ParameterError, Run
from theorems.registry import REGISTRY
from claim_helpers import quick_check, with_formulas

KL, DUDLEY = "kl-divergence", "dudley-distance"


# --- registration and faces ------------------------------------------------------------------------

def test_claims_are_registered_once():
    again = importlib.import_module("theorems.features_are_fate_distances")
    assert again is distances
    assert REGISTRY[KL] is distances.kl_divergence_claim and REGISTRY[DUDLEY] is distances.dudley_distance
    with pytest.raises(ValueError, match="registered twice"):
        from theorems.registry import register
        register(distances.dudley_distance)


def test_fields_are_filled():
    for theorem_id in (KL, DUDLEY):
        theorem = REGISTRY[theorem_id]
        assert "Thm 2.2" in theorem.source and theorem.statement and theorem.quantity and theorem.assumptions
        assert theorem.verdict_rule and theorem.record.startswith("agree") and theorem.false_alarm == 1e-3
        assert all(theorem.points({}, tier) for tier in ("quick", "default", "paper"))
    findings = REGISTRY[DUDLEY].findings
    assert len(findings) == 1 and dict(findings[0].at) == {"delta": "3"} and findings[0].region == "delta >= 2"
    assert "delta >= 2" in findings[0].why and not findings[0].corrected      # a sharp edge


@pytest.mark.parametrize("theorem_id", [KL, DUDLEY])
def test_sympy_derivations_hold(theorem_id):
    symbolic = REGISTRY[theorem_id].symbolic()
    assert sp.latex(symbolic.statement)
    for derivation in symbolic.derivations:
        assert derivation.holds, derivation.claim


def test_kl_quadrature_is_eq34_at_any_precision():
    """The nested Gauss-Hermite quadrature of eq. (31) (log-densities, y given x, then x) meets eq. (34)."""
    theorem = REGISTRY[KL]
    for overrides in ({}, {"norm_g": "1", "theta": "pi/2", "sigma": "1/5"}, {"norm_f": "0"}, {"theta": "pi", "norm_g": "7/2"}):
        params = theorem.resolve(overrides, "quick")
        for dps in (15, 30, 50):
            with mp.workdps(dps + 10):
                closed = distances._kl_closed_form(*(mp.mpf(sp.N(params[k], dps + 15)) for k in ("norm_f", "norm_g", "theta", "sigma")))
                assert abs(theorem.theory(params, dps) - closed) <= mp.mpf(10) ** (2 - dps) * closed


def test_log_normal_density_is_a_normalised_density():
    # The constant -log(2 pi)/2 cancels in the KL integrand's difference, but the helper is the log-density itself.
    from numerics.distances import _log_normal_density
    with mp.workdps(30):
        mass = mp.quad(lambda e: mp.exp(_log_normal_density(e, mp.mpf("0.3"), mp.mpf("1.7"))), [-mp.inf, 0.3, mp.inf])
        assert abs(mass - 1) < mp.mpf(10) ** -25
        assert abs(_log_normal_density(0, 0, 1) + mp.log(2 * mp.pi) / 2) < mp.mpf(10) ** -28


def test_gauss_hermite_matches_tanh_sinh():
    """The rules are a quadrature, not an identity: tanh-sinh (mp.quad) of the same integrands agrees."""
    with mp.workdps(20):
        sigma, u = mp.mpf("0.7"), mp.mpf("1.3")
        by_quad = mp.quad(lambda e: mp.npdf(e, 0, sigma) * ((e + u) ** 2 - e**2) / (2 * sigma**2), [-mp.inf, 0, mp.inf])
        assert abs(conditional_kl(u, sigma, 32) - by_quad) < mp.mpf(10) ** -17
        by_quad = mp.quad(lambda y: mp.cos(y) * mp.npdf(y, 0, mp.sqrt(5 + sigma**2)), mp.linspace(-40, 40, 41))
        assert abs(expected_cos_label(mp.sqrt(5), sigma) - by_quad) < mp.mpf(10) ** -17


def test_dudley_quadrature_is_eq27_and_its_supremum():
    theorem = REGISTRY[DUDLEY]
    params = theorem.resolve({}, "quick")                         # a = 1, b = 3, sigma = 1/2
    with mp.workdps(40):
        closed = mp.exp(-mp.mpf(1) / 8) * (mp.exp(-mp.mpf(1) / 2) - mp.exp(-mp.mpf(9) / 2)) / 2
        for dps in (15, 30):
            assert abs(theorem.theory(params, dps) - closed) <= mp.mpf(10) ** (1 - dps)
        # the proof's h separates by at most e^{-sigma^2/2} max(e^{-a^2/2}, 1 - e^{-a^2/2}) / 2
        for a in (mp.mpf("0.5"), mp.mpf(1), mp.mpf(2)):
            expected = mp.exp(-mp.mpf(1) / 8) * max(mp.exp(-a**2 / 2), 1 - mp.exp(-a**2 / 2)) / 2
            assert abs(cos_test_gap_sup(a, mp.mpf(1) / 2) - expected) < mp.mpf(10) ** -35
            assert all(abs(cos_test_gap(a, b, mp.mpf(1) / 2)) <= expected + mp.mpf(10) ** -35 for b in (0, 1, 2, 4))


def test_l1_distance_bounds_the_proof_gap_and_stays_below_two():
    with mp.workdps(20):
        half = mp.mpf(1) / 2
        values = [l1_distance(1, b, mp.pi / 3, half) for b in (1, 3, 30, 3000)]
        assert all(x < y for x, y in zip(values, values[1:])) and values[-1] < 2 and values[-1] > mp.mpf("1.99")
        assert abs(cos_test_gap(1, 3, half)) < values[1]
        assert l1_distance(1, 1, 0, half) == 0


def test_l1_sampler_matches_quadrature():
    gen = generator(5, torch.device("cpu"))
    u_f, u_g = teacher_directions(6, math.pi / 3, gen)
    est = estimate(per_draw(100_000, u_f, 3 * u_g, 0.5, gen, lambda d: l1_terms(d, 0.5)))
    with mp.workdps(20):
        exact = float(l1_distance(1, 3, mp.pi / 3, mp.mpf(1) / 2))
    assert abs(est.mean - exact) < 4 * est.se


def test_joint_sampler_draws_what_per_draw_draws():
    """Same stream, same numbers: the sampler's estimates are per_draw's, call after call, in float64 and float32."""
    for dtype in (torch.float64, torch.float32):
        gen_a, gen_b = generator(7, torch.device("cpu")), generator(7, torch.device("cpu"))
        beta_f, beta_g, u_g = scaled_teachers(5, math.pi / 4, 1.0, 2.0, gen_a, torch.device("cpu"))
        u_f, u_g_b = teacher_directions(5, math.pi / 4, gen_b)
        assert torch.equal(beta_f, 1.0 * u_f) and torch.equal(beta_g, 2.0 * u_g_b) and torch.equal(u_g, u_g_b)
        draws = JointSampler(1000, beta_f, 0.5, gen_a, dtype)
        assert draws.kl(beta_g) == estimate(per_draw(1000, beta_f, beta_g, 0.5, gen_b,
                                                     lambda d: log_likelihood_ratio(d, 0.5), dtype))
        assert draws.l1(3 * u_g) == estimate(per_draw(1000, beta_f, 3 * u_g, 0.5, gen_b, lambda d: l1_terms(d, 0.5), dtype))
        assert draws.test_gap(beta_g, half_cosine) == estimate(
            per_draw(1000, beta_f, beta_g, 0.5, gen_b, lambda d: label_test_difference(d, half_cosine), dtype))
        ladder = draws.test_gap_ladder(u_g, half_cosine, [1, 4])       # one test_gap per scale, in order
        for row, s in zip(ladder, (1, 4)):
            gap = estimate(per_draw(1000, beta_f, s * u_g, 0.5, gen_b, lambda d: label_test_difference(d, half_cosine),
                                    dtype))
            assert row == {"norm_g": s, "mean": gap.mean, "se": gap.se}


def test_witness_helpers():
    with mp.workdps(20):
        half = mp.mpf(1) / 2
        width, scale = tent_witness(mp.mpf(1), half, mp.mpf("1.5"), lambda r: r / (r + 2))
        gap = tent_test_gap(width, width / (width + 2), mp.sqrt(1 + half**2), mp.sqrt(scale**2 + half**2))
        assert gap >= mp.mpf("1.5")
        assert tent_witness_gap(mp.mpf(1), half, mp.mpf("1.5"), lambda r: r / (r + 2)) == \
            (width, scale, width / (width + 2), gap)
        with pytest.raises(ValueError, match="separates"):
            tent_witness(mp.mpf(1), half, mp.mpf(2), lambda r: r / (r + 2), max_doublings=30)
        s = smallest_scale_reaching(lambda b: (1 + b**2 - b) / (2 * half**2), mp.mpf(100))
        assert abs((1 + s**2 - s) / (2 * half**2) - 100) < mp.mpf(10) ** -15
        assert smallest_scale_reaching(lambda b: 5 + b, mp.mpf(3)) == 0
        with pytest.raises(ValueError, match="stays below"):
            smallest_scale_reaching(lambda b: 1 - 1 / (1 + b), mp.mpf(2))
        # the bracket reaches 2^max_doublings and no further
        assert smallest_scale_reaching(lambda b: b, mp.mpf(2) ** 400) == mp.mpf(2) ** 400
        with pytest.raises(ValueError, match=r"for every scale up to 2\^400"):
            smallest_scale_reaching(lambda b: b, mp.mpf(2) ** 400 * mp.mpf("1.5"))
        # so does the tent's: a height that is zero below width 2^5 is found with 5 doublings, not with 4
        step = lambda r: mp.mpf(1) if r >= 32 else mp.mpf(0)
        assert tent_witness(mp.mpf(1), half, mp.mpf(1), step, max_doublings=5)[0] == 32
        with pytest.raises(ValueError, match=r"no tent of width up to 2\^4 separates"):
            tent_witness(mp.mpf(1), half, mp.mpf(1), step, max_doublings=4)


@pytest.mark.parametrize("norm_f, sigma, target", [
    (3, "1/2", "3/2"),      # at ||beta_f|| = 1 the spread's square and the norm agree, and a slip in sd_f is invisible
    (1, 50, "1/2"),         # sigma comparable to the scale found, so a slip in sd_g's sigma^2 moves it
])
def test_the_tent_witness_reads_the_label_spreads(norm_f, sigma, target):
    from numerics.distances import tent_expectation
    with mp.workdps(20):
        norm_f, sigma, target = (mp.mpf(sp.Rational(x)) for x in (norm_f, sigma, target))
        height = lambda r: r / (r + 2)
        sd_f = mp.sqrt(norm_f**2 + sigma**2)            # y_f ~ N(0, ||beta_f||^2 + sigma^2)
        r, b = tent_witness(norm_f, sigma, target, height)
        limit = lambda r: 2 * height(r) * (1 - tent_expectation(r, sd_f))          # the gap as ||beta_g|| -> oo
        assert limit(r) > target and (r == 1 or limit(r / 2) <= target)           # the first width that can
        gap = lambda b: tent_test_gap(r, height(r), sd_f, mp.sqrt(b**2 + sigma**2))
        assert gap(b) >= target and (b == max(1, norm_f) or gap(b / 2) < target)  # the first scale that does
        assert tent_witness_gap(norm_f, sigma, target, height) == (r, b, height(r), gap(b))


# --- recorded verdicts at the quick tier -------------------------------------------------------------

def test_kl_cases_agree(outcomes):
    for overrides in ({}, {"norm_g": "1", "theta": "pi/2", "sigma": "1/5", "delta": "1000"}, {"norm_f": "0", "delta": "10"}):
        outcome = outcomes(KL, **overrides)
        assert outcome.verdict == "agree", outcome.detail
        assert abs(outcome.extra["witness_z"]) < outcome.extra["z_critical"]
    assert outcomes(KL).reference == pytest.approx(6.0)                   # (1 + 4 - 2)/(2/4)
    assert outcomes(KL, norm_g="1", theta="pi/2", sigma="1/5", delta="1000").reference == pytest.approx(25.0)   # Fig. 5 scale


def test_dudley_default_case_agrees_with_a_certified_witness(outcomes):
    outcome = outcomes(DUDLEY)
    assert outcome.verdict == "agree", outcome.detail
    witness = outcome.extra["witness"]
    assert witness["height"] * (1 + 2 / witness["width"]) == pytest.approx(1)       # unit BL norm, eq. (24)
    assert 1 < witness["gap"] < 2 and abs(witness["gap"] - witness["quadrature"]) < 4 * witness["se"]
    proof = outcome.extra["proof"]
    assert proof["eq28"] == pytest.approx(1) and abs(proof["gap"]) < 0.05          # the proof's witness: 0.033, not 1
    assert max(abs(r["mean"]) for r in proof["ladder"]) < proof["sup_over_g"] + 4 * proof["ladder"][0]["se"]
    assert abs(outcome.extra["l1_at_g"] - outcome.extra["l1_exact"]) < 4 * outcome.extra["l1_se"]


def test_dudley_finding_large_delta_is_recorded(outcomes):
    outcome = outcomes(DUDLEY, delta="3")
    assert outcome.verdict == "disagree", outcome.detail
    assert outcome.detail.startswith("no g reaches delta = 3")
    assert 1.95 < outcome.extra["l1_far"] < 2 and outcome.extra["l1_at_g"] < outcome.extra["l1_far"]
    assert outcome.extra["proof"]["sup_over_g"] == pytest.approx(math.exp(-1 / 8 - 1 / 2) / 2)   # 0.268 << 3


def test_dudley_small_delta_case_agrees(outcomes):
    """delta = 1/4 at sigma = 1/5: the proof's h alone would reach it as ||g|| -> oo (0.297), its witness does not."""
    outcome = outcomes(DUDLEY, delta="1/4", sigma="1/5")
    assert outcome.verdict == "agree", outcome.detail
    proof = outcome.extra["proof"]
    assert proof["sup_over_g"] > 0.25 > abs(proof["gap"])


def test_dudley_holds_for_wasserstein_test_functions(run):
    """The footnote: with Lipschitz test functions only (W_1), the same check finds a witness at delta = 3."""
    w1 = with_formulas(REGISTRY[DUDLEY], bl_norm=lambda sup_norm, lipschitz: lipschitz)
    outcome = quick_check(w1, run, delta="3")
    assert outcome.verdict == "agree", outcome.detail
    assert outcome.extra["range"] is None and outcome.extra["witness"]["gap"] > 3


# --- over the declared domains ---------------------------------------------------------------------------

@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(norm_f=st.sampled_from(["0", "1/2", "2"]), norm_g=st.sampled_from(["0", "1", "5"]),
       theta=st.sampled_from(["0", "pi/4", "pi"]), sigma=st.sampled_from(["1/10", "1", "2"]),
       delta=st.sampled_from(["1/10", "50"]))
def test_kl_agrees_across_its_domain(norm_f, norm_g, theta, sigma, delta):
    theorem = REGISTRY[KL]
    params = theorem.resolve({"norm_f": norm_f, "norm_g": norm_g, "theta": theta, "sigma": sigma, "delta": delta, "d": "3"},
                             "quick")
    outcome = theorem.check(theorem, params, Run(tier="quick", trials=20_000, seed=4, device=torch.device("cpu")))
    assert outcome.verdict == "agree", outcome.detail


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(norm_f=st.sampled_from(["0", "1/2", "3"]), norm_g=st.sampled_from(["0", "2", "4"]),
       sigma=st.sampled_from(["1/10", "1", "3"]), delta=st.sampled_from(["1/10", "1", "19/10", "2", "5"]))
def test_dudley_verdict_follows_the_range_across_its_domain(norm_f, norm_g, sigma, delta):
    """delta < 2: a certified witness (agree); delta >= 2: refuted by the range; the proof's h never reaches (28)."""
    theorem = REGISTRY[DUDLEY]
    params = theorem.resolve({"norm_f": norm_f, "norm_g": norm_g, "sigma": sigma, "delta": delta, "d": "3"}, "quick")
    outcome = theorem.check(theorem, params, Run(tier="quick", trials=20_000, seed=5, device=torch.device("cpu")))
    assert outcome.verdict == ("agree" if float(params["delta"]) < 2 else "disagree"), outcome.detail
    proof = outcome.extra["proof"]
    assert abs(proof["gap"]) <= proof["sup_over_g"] + 5 * proof["se"]
    if proof["witness_norm_g"] > 0:
        assert proof["z_vs_eq28"] < -outcome.extra["z_critical"] and "(27) >= (28) fails" in outcome.detail


@pytest.mark.parametrize("theorem_id, overrides, message", [
    (KL, {"sigma": "0"}, "outside its domain"),
    (KL, {"norm_f": "-1"}, "outside its domain"),
    (KL, {"theta": "4"}, "outside its domain"),
    (KL, {"delta": "0"}, "outside its domain"),
    (KL, {"d": "1"}, "outside its domain"),
    (KL, {"d": "5/2"}, "must be an integer"),
    (KL, {"gamma": "1/2"}, "has no parameter"),
    (DUDLEY, {"norm_g": "5"}, "outside its domain"),
    (DUDLEY, {"sigma": "0"}, "outside its domain"),
    (DUDLEY, {"delta": "-1"}, "outside its domain"),
    (DUDLEY, {"theta": "-1/10"}, "outside its domain"),
])
def test_out_of_domain_parameters_are_rejected(theorem_id, overrides, message):
    with pytest.raises(ParameterError, match=message):
        REGISTRY[theorem_id].resolve(overrides, "quick")
