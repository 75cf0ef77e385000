"""theorems.relu_kernels, numerics.kernels, simulate.kernel_sampling: the arc-cosine kernel (Features are fate
eq. (153)), the NTK Gram matrix (Liu et al. Sec. 6.1) and the RKHS projection (Features are fate eqs. (154)-(159)).

The numerics against the closed forms and against each other; the samplers against what they must satisfy per draw;
each claim's recorded cases at the quick tier; property tests over the declared domains; out-of-domain parameters
raise ParameterError.  (The negative controls are declared on the claims: tests/test_negative_controls.py runs them.)
"""

import importlib

import mpmath as mp
import pytest
import sympy as sp
import torch
from hypothesis import HealthCheck, assume, given, settings, strategies as st

import theorems.relu_kernels as relu_kernels
from numerics.kernels import orthant_probability, projection_by_eigenfunctions, relu_overlap
from simulate.device import generator
from simulate.kernel_estimates import LadderStep, ProjectionLadder, lowest_eigenvalues, ntk_gram_moments
from simulate.kernel_sampling import least_squares_projection, ntk_gram_at_init, relu_product_samples
from simulate.kernels import arccos0, cosine_kernel
from simulate.sphere_draws import unit_pair
from simulate.stats import Estimate
from simulate.relu_nets import ReluNet
from theorems.core import ParameterError, Run
from theorems.registry import REGISTRY
from claim_helpers import quick_check

IDS = ("arccos-kernel", "ntk-gram", "rkhs-projection")
PROPERTY = settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])


_k1 = REGISTRY["arccos-kernel"].formulas["kernel"]     # eq. (153), the formula the check compares with


def _mp(text):
    exact = sp.Rational(text)
    return mp.mpf(int(exact.p)) / int(exact.q)


def _text(fraction):
    return f"{fraction.numerator}/{fraction.denominator}"


# --- numerics ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("u", [-1.0, -0.3, 0.5, 1.0])
def test_inputs_with_cosine_put_both_prescribed_pairs_at_cosine_u(u):
    # the kernel checks read the Gram entries of (x_P[0], x_P[1]) and (x_P[0], x_Q[0]) at cosine u; every row unit
    from simulate.sphere_draws import inputs_with_cosine
    X_P, X_Q = inputs_with_cosine(6, 4, 5, u, torch.Generator().manual_seed(3))
    assert torch.allclose(torch.cat([X_P, X_Q]).norm(dim=1), torch.ones(10, dtype=torch.float64), atol=1e-15)
    assert float(X_P[0] @ X_P[1]) == pytest.approx(u, abs=1e-14)
    assert float(X_P[0] @ X_Q[0]) == pytest.approx(u, abs=1e-14)


@pytest.mark.parametrize("u", ["-1", "-0.999999", "-4/5", "0", "1/2", "0.999999", "1"])
def test_quadrature_routes_meet_the_closed_forms(u):
    with mp.workdps(40):
        u = _mp(u)
        assert abs(relu_overlap(u) - _k1(u)) < mp.mpf(10) ** -37
        sheppard = mp.mpf(1) / 4 + mp.asin(u) / (2 * mp.pi)           # a third form of P(both >= 0)
        assert abs(orthant_probability(u) - sheppard) < mp.mpf(10) ** -37


def test_quadrature_routes_reject_correlations_outside_minus_one_one():
    with pytest.raises(ValueError, match="correlation"):
        relu_overlap(mp.mpf("1.01"))
    with pytest.raises(ValueError, match="correlation"):
        orthant_probability(-2)


def test_projection_by_eigenfunctions_is_the_normal_equations():
    with mp.workdps(30):
        A, C = mp.matrix([[1, 2, 0], [0, 1, 3], [1, 0, 1]]), mp.matrix([[1, 0], [2, 1], [0, 1]])
        gram, coefficients = A * A.T + mp.eye(3), [mp.mpf(1) / 3, mp.mpf(-2) / 3]
        overlaps = C * mp.matrix(coefficients)
        direct = (overlaps.T * mp.lu_solve(gram, overlaps))[0]
        assert abs(projection_by_eigenfunctions(gram, C, coefficients) - direct) < mp.mpf(10) ** -27
        with pytest.raises(ValueError, match="positive definite"):
            projection_by_eigenfunctions(mp.matrix([[1, 1], [1, 1]]), mp.matrix([[1], [0]]), [1])


@settings(max_examples=10, deadline=None)
@given(u=st.fractions(min_value=-1, max_value=1, max_denominator=50))
def test_kernel_properties_over_the_domain(u):
    """k1(u) >= max(0, u/2) (k1(u) - k1(-u) = u/2, k1 >= 0), 0 <= k0 <= 1/2, and quadrature = closed form."""
    with mp.workdps(20):
        u = mp.mpf(u.numerator) / u.denominator
        k1 = relu_overlap(u)
        assert k1 >= max(0, u / 2) - mp.mpf(10) ** -18
        assert abs(k1 - relu_overlap(-u) - u / 2) < mp.mpf(10) ** -18
        assert -mp.mpf(10) ** -18 <= orthant_probability(u) <= mp.mpf(1) / 2 + mp.mpf(10) ** -18
        assert abs(k1 - _k1(u)) < mp.mpf(10) ** -18


# --- samplers ------------------------------------------------------------------------------------------------

def test_relu_products_at_u_one_are_squares_and_at_minus_one_vanish():
    gen = generator(0, torch.device("cpu"))
    assert (relu_product_samples(1.0, 5, 1000, gen) >= 0).all()
    assert relu_product_samples(-1.0, 5, 1000, gen).abs().max() < 1e-20


def test_ntk_gram_at_init_counts_active_units():
    """H(0)_ii = (1/m) #{r: w_r.x_i >= 0} for unit x_i (||x_i||^2 = 1), so m H(0)_ii is an integer; H(0) is PSD."""
    gen = generator(1, torch.device("cpu"))
    X = torch.randn(5, 3, generator=gen, dtype=torch.float64)
    X = X / X.norm(dim=1, keepdim=True)
    H = ntk_gram_at_init(X, 64, 7, 0.3, gen)
    diag = 64 * H.diagonal(dim1=-2, dim2=-1)
    assert torch.allclose(diag, diag.round(), atol=1e-9)
    assert torch.linalg.eigvalsh(H).min() > -1e-12


def test_ntk_gram_moments_draw_the_networks_in_batches_of_at_most_the_unit_budget():
    """64 units of budget hold two width-8 networks in 4 input dimensions: 10 networks in 5 batches, each drawn as
    ntk_gram_at_init draws it, and the moments are theirs."""
    X = torch.randn(3, 4, generator=generator(2, torch.device("cpu")), dtype=torch.float64)
    messages = []
    mean, se = ntk_gram_moments(X, 8, 10, 0.5, generator(3, torch.device("cpu")), 64, messages.append)
    assert messages == [f"NTK Gram of networks: batch {k} of 5" for k in range(1, 6)]
    gen = generator(3, torch.device("cpu"))
    grams = torch.cat([ntk_gram_at_init(X, 8, 2, 0.5, gen) for _ in range(5)])
    assert torch.equal(mean, grams.mean(0)) and torch.equal(se, grams.std(0, unbiased=True) / 10 ** 0.5)


def test_projection_ladder_extrapolates_a_midpoint_exact_in_one_over_n_squared():
    """c0 + c2/n^2 through midpoints that are exactly that: the fit returns c0 and c2; the rows carry n times the gaps."""
    def step(n, value):
        return LadderStep(n, Estimate(value - 1 / n, 1e-3, 100), Estimate(value + 1 / n, 1e-3, 100),
                          Estimate(value, 1e-3, 100))
    ladder = ProjectionLadder([step(n, 0.25 + 3 / n**2) for n in (10, 20, 40)], Estimate(1.0, 1e-3, 100))
    value, se, curvature = ladder.midpoint_limit(0.25, 1e-12)
    assert value == pytest.approx(0, abs=1e-12) and curvature == pytest.approx(3) and se > 0
    assert [row["n_times_in_gap"] for row in ladder.rows(0.25)] == pytest.approx([-1 + 3 / n for n in (10, 20, 40)])


def test_spectra_cosine_kernels_and_unit_pairs():
    gen = generator(3, torch.device("cpu"))
    A = torch.randn(5, 5, generator=gen, dtype=torch.float64)
    H = A @ A.T
    assert lowest_eigenvalues(H, 2) == (torch.linalg.eigvalsh(H)[0].item(), torch.linalg.eigvalsh(H[:2, :2])[0].item(),
                                        torch.linalg.eigvalsh(H[2:, 2:])[0].item())
    rows = unit_pair(-0.8)
    assert (rows @ rows.T)[0, 1].item() == pytest.approx(-0.8, abs=1e-15)
    assert torch.equal(cosine_kernel(arccos0)(rows, 1.5 * rows), arccos0((1.5 * rows @ rows.T).clamp(-1, 1)))


def test_least_squares_residual_vanishes_when_the_teacher_is_in_the_span():
    gen = generator(2, torch.device("cpu"))
    W = torch.randn(6, 4, generator=gen, dtype=torch.float64)
    teacher = ReluNet(W[:3].unsqueeze(0), torch.tensor([[1.0, -1.0, 1.0]], dtype=torch.float64), 1 / 3)
    fit = least_squares_projection(W, teacher, 40, 100, 3, gen)
    assert fit.in_sample.max() < 1e-25 and fit.out_of_sample.max() < 1e-25 and (fit.teacher_norm > 0).all()


# --- registration and faces ----------------------------------------------------------------------------------

def test_claims_are_registered_once():
    again = importlib.import_module("theorems.relu_kernels")
    assert again is relu_kernels
    assert [REGISTRY[i] for i in IDS] == [relu_kernels.arccos_kernel, relu_kernels.ntk_gram_claim,
                                          relu_kernels.rkhs_projection]
    with pytest.raises(ValueError, match="registered twice"):
        from theorems.registry import register
        register(relu_kernels.arccos_kernel)


@pytest.mark.parametrize("theorem_id", IDS)
def test_fields_and_sympy_faces(theorem_id):
    theorem = REGISTRY[theorem_id]
    assert theorem.statement and theorem.quantity and theorem.assumptions and theorem.verdict_rule
    assert theorem.record.startswith("agree") and theorem.false_alarm == 1e-3 and set(theorem.trials) == {"quick", "default", "paper"}
    symbolic = theorem.symbolic()
    assert symbolic.derivations and all(x.holds for x in symbolic.derivations) and sp.latex(symbolic.statement)


def test_arccos_kernel_mpmath_face_is_the_quadrature_at_any_precision():
    theorem = REGISTRY["arccos-kernel"]
    for u in ("1/2", "-4/5", "1"):
        params = theorem.resolve({"u": u}, "quick")
        with mp.workdps(50):
            exact = _k1(_mp(u))
            for dps in (15, 30, 45):
                assert abs(theorem.theory(params, dps) - exact) <= mp.mpf(10) ** (1 - dps)


def test_ntk_gram_mpmath_face_is_u_times_the_orthant_probability():
    theorem = REGISTRY["ntk-gram"]
    with mp.workdps(30):
        assert abs(theorem.theory(theorem.resolve({}, "quick"), 30) - mp.mpf(1) / 6) < mp.mpf(10) ** -28   # (1/2)(1/3)
        assert abs(theorem.theory(theorem.resolve({"u": "1"}, "quick"), 30) - mp.mpf(1) / 2) < mp.mpf(10) ** -28
        assert theorem.theory(theorem.resolve({"u": "-1"}, "quick"), 30) == 0


@pytest.mark.parametrize("overrides", [{}, {"shared": "1/2"}, {"config": "1"}])
def test_rkhs_mpmath_face_meets_the_float64_formula(overrides):
    """The Mercer route (eigsy at 30 digits) and eqs. (158)-(159) in float64 (K^{-1}) agree to float64 accuracy."""
    theorem = REGISTRY["rkhs-projection"]
    params = theorem.resolve(overrides, "quick")
    norm, projection, _, _ = relu_kernels._rkhs_claims(theorem, params, torch.device("cpu"))
    assert float(theorem.theory(params, 30)) == pytest.approx(norm - projection, rel=1e-9, abs=1e-14)
    assert theorem.theory(theorem.resolve({"m": "61"}, "quick"), 30) is None         # beyond the Mercer route's size


def test_rkhs_teacher_inside_the_student_has_no_complement():
    theorem = REGISTRY["rkhs-projection"]
    with mp.workdps(30):
        assert abs(theorem.theory(theorem.resolve({"shared": "1"}, "quick"), 30)) < mp.mpf(10) ** -25


# --- recorded cases at the quick tier ---------------------------------------------------------------------------

@pytest.mark.parametrize("theorem_id", IDS)
def test_every_case_agrees_at_the_quick_tier(theorem_id, run):
    theorem = REGISTRY[theorem_id]
    for point in theorem.points({}, "quick"):
        outcome = theorem.check(theorem, point.params, run)
        assert outcome.verdict == point.expected == "agree", (point.params, outcome.detail)


def test_ntk_gram_reports_lambda_0(run):
    duplicate = quick_check(REGISTRY["ntk-gram"], run, u="1")
    assert duplicate.extra["lambda_0_P"] < 1e-12 and "fails" in duplicate.detail          # x_P2 = x_P1
    antipodal = quick_check(REGISTRY["ntk-gram"], run, u="-1")
    assert antipodal.extra["lambda_0_P"] > 0.01 and antipodal.mean == antipodal.reference == 0


def test_rkhs_ladder_brackets_and_converges(run):
    outcome = quick_check(REGISTRY["rkhs-projection"], run)
    rows, truth = outcome.extra["ladder"], outcome.reference
    assert all(r["in_sample"] < truth < r["out_of_sample"] for r in rows)
    gaps = [r["out_of_sample"] - r["in_sample"] for r in rows]
    assert gaps[0] > gaps[1] > gaps[2]                                                 # ~ 2 tr(G^-1 S)/n
    assert abs(outcome.extra["norm_mc"] - outcome.extra["norm"]) < 4 * outcome.extra["norm_se"]


# --- the claims across their domains ----------------------------------------------------------------------------

@PROPERTY
@given(u=st.fractions(min_value=-1, max_value=1, max_denominator=20), d=st.integers(2, 30))
def test_arccos_kernel_agrees_across_its_domain(u, d):
    theorem = REGISTRY["arccos-kernel"]
    params = theorem.resolve({"u": _text(u), "d": str(d)}, "quick")
    outcome = theorem.check(theorem, params, Run(tier="quick", trials=50_000, seed=5, device=torch.device("cpu")))
    assert outcome.verdict == "agree", outcome.detail


@PROPERTY
@given(u=st.fractions(min_value=-1, max_value=1, max_denominator=20), d=st.integers(2, 12),
       n_p=st.integers(2, 8), n_q=st.integers(1, 5), m=st.sampled_from([1, 16, 100]))
def test_ntk_gram_agrees_across_its_domain(u, d, n_p, n_q, m):
    theorem = REGISTRY["ntk-gram"]
    params = theorem.resolve({"u": _text(u), "d": str(d), "n_p": str(n_p), "n_q": str(n_q), "m": str(m)}, "quick")
    outcome = theorem.check(theorem, params, Run(tier="quick", trials=300, seed=6, device=torch.device("cpu")))
    assert outcome.verdict == "agree", outcome.detail
    assert outcome.extra["lambda_min_all"] > -1e-12


@PROPERTY
@given(d=st.integers(2, 12), m=st.integers(3, 16), m_star=st.integers(1, 4),
       shared=st.sampled_from(["0", "1/4", "1/2", "1"]), config=st.integers(0, 1000))
def test_rkhs_projection_agrees_across_its_domain(d, m, m_star, shared, config):
    theorem = REGISTRY["rkhs-projection"]
    overrides = {"d": str(d), "m": str(m), "m_star": str(m_star), "shared": shared, "config": str(config)}
    try:
        params = theorem.resolve(overrides, "quick")
    except ParameterError as error:   # a student narrower than the shared teacher units is outside the domain
        assume("cannot hold" not in str(error))
        raise
    outcome = theorem.check(theorem, params, Run(tier="quick", trials=100, seed=7, device=torch.device("cpu")))
    assert outcome.verdict == "agree", outcome.detail


@pytest.mark.parametrize("theorem_id, overrides, message", [
    ("arccos-kernel", {"u": "1.01"}, "outside its domain"),
    ("arccos-kernel", {"u": "-2"}, "outside its domain"),
    ("arccos-kernel", {"d": "1"}, "outside its domain"),
    ("arccos-kernel", {"d": "2.5"}, "must be an integer"),
    ("arccos-kernel", {"w": "1"}, "has no parameter"),
    ("ntk-gram", {"u": "3/2"}, "outside its domain"),
    ("ntk-gram", {"n_p": "1"}, "outside its domain"),
    ("ntk-gram", {"n_q": "0"}, "outside its domain"),
    ("ntk-gram", {"m": "0"}, "outside its domain"),
    ("ntk-gram", {"kappa": "0"}, "outside its domain"),
    ("rkhs-projection", {"shared": "2"}, "outside its domain"),
    ("rkhs-projection", {"config": "-1"}, "outside its domain"),
    ("rkhs-projection", {"m_star": "0"}, "outside its domain"),
    ("rkhs-projection", {"m": "2", "m_star": "5", "shared": "1"}, "cannot hold"),
])
def test_out_of_domain_parameters_are_rejected(theorem_id, overrides, message):
    with pytest.raises(ParameterError, match=message):
        REGISTRY[theorem_id].resolve(overrides, "quick")
