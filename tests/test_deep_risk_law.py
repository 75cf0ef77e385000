"""numerics.deep_risk_law: the exact law of the L -> oo fine-tuned risk R(beta) for a Gaussian design, which gives the
failure probability of Shachaf et al.'s bound (9) (gaussian-depth-bound's corrected statement).

Each route is held against an independent one: the n = 1 formula (Cauchy closed form less a one-dimensional
correction) and the n >= 2 integral (float64 Gauss-Legendre) against a simulation of the projection itself, the
n >= 2 integral against an mpmath nested quadrature of the same representation (slow), the closed forms at theta = pi
and in the tail, and the incomplete beta function against mpmath's."""

import math

import mpmath as mp
import numpy as np
import pytest

from numerics.deep_risk_law import (deep_risk_survival, deep_risk_survival_cauchy_n1, deep_risk_survival_n1,
                                    LENTZ_TINY, _away_from_zero, regularized_beta)


def simulated_risk(n, d, theta, draws, seed):
    """R(beta) / ||theta_T||^2 per draw, straight from eqs. (6)-(7): P the projector on the row space of a Gaussian n x d
    design, theta_S = e1, theta_T = cos(theta) e1 + sin(theta) e2 (rotation invariance: the design is rotated instead)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((draws, n, d))
    plane = X[:, :, :2]
    G = plane.transpose(0, 2, 1) @ np.linalg.solve(X @ X.transpose(0, 2, 1), plane)     # Gram matrix of P on the plane
    s, t = np.array([1.0, 0.0]), np.array([math.cos(theta), math.sin(theta)])
    c = np.sqrt(np.einsum("i,mij,j->m", t, G, t) / G[:, 0, 0])                         # eq. (6)
    w = t[None, :] - c[:, None] * s[None, :]
    return (w * w).sum(1) - np.einsum("mi,mij,mj->m", w, G, w)                         # eq. (7): ||P_perp w||^2


@pytest.mark.parametrize("n, d, theta", [(1, 20, math.pi / 2), (1, 4, 3.0), (2, 40, 7 * math.pi / 8), (3, 40, math.pi / 8),
                                          (2, 8, 1.0), (6, 80, math.pi / 2), (10, 20, math.pi / 4), (5, 6, math.pi / 2)])
def test_the_law_is_the_simulated_risks(n, d, theta):
    risk = simulated_risk(n, d, theta, 40000, seed=n * 1000 + d)
    for q in (0.5, 0.9, 0.99):
        x = float(np.quantile(risk, q))
        p = deep_risk_survival(n, d, theta, x)
        se = math.sqrt(p * (1 - p) / risk.size)
        assert abs((risk > x).mean() - p) < 4.5 * se, (n, d, theta, q)


def test_n1_is_a_cauchy_closed_form_less_a_small_correction():
    # the closed form P(h(|v|) > x), v ~ Cauchy(cos theta, sin theta), bounds the law from above and carries its
    # tail: the correction (draws where <x, theta_S> and <x, theta_T> differ in sign) is 3 % at x = 2, 3e-5 at 3000
    gaps = []
    for x in (2.0, 40.0, 3000.0):
        exact, closed = deep_risk_survival_n1(20, math.pi / 2, x), deep_risk_survival_cauchy_n1(math.pi / 2, x)
        assert closed > exact
        gaps.append((closed - exact) / closed)
    assert gaps[0] < 0.04 and gaps[1] < 0.003 and gaps[2] < 1e-4
    # ... whose limit is 2 sin(theta) / (pi sqrt(x)), the tail constant of numerics.depth_rescaling
    with mp.workdps(20):
        for theta in (mp.pi / 8, mp.pi / 2, 7 * mp.pi / 8):
            x = mp.mpf(10) ** 12
            assert abs(mp.sqrt(x) * deep_risk_survival_n1(20, theta, x) / (2 * mp.sin(theta) / mp.pi) - 1) < 1e-5


def test_n1_closed_form_at_an_exact_point():
    # theta = pi/3, x = 1: h(w) = 1 + w^2 - w <= 1 exactly on w in [0, 1], and v ~ Cauchy(1/2, sqrt(3)/2) has
    # P(|v| <= 1) = (atan(1/sqrt(3)) + atan(sqrt(3))) / pi = (pi/6 + pi/3) / pi = 1/2 (a point where sin^2 theta
    # is neither 0 nor 1, so the window's width sqrt(x - sin^2 theta) is tested, not just its centre)
    with mp.workdps(30):
        assert abs(deep_risk_survival_cauchy_n1(mp.pi / 3, 1) - mp.mpf(1) / 2) < mp.mpf(10) ** -28


def test_theta_pi_is_a_beta_tail():
    # theta_T = -theta_S: kappa = 1 and R / ||theta_T||^2 = 4 (1 - G_11), G_11 ~ Beta(n/2, (d-n)/2): it never exceeds 4
    for n, d in ((1, 20), (3, 40)):
        risk = simulated_risk(n, d, math.pi, 20000, seed=7)
        assert risk.max() < 4 and deep_risk_survival(n, d, math.pi, 4.0) == 0
        x = float(np.quantile(risk, 0.3))
        p = deep_risk_survival(n, d, math.pi, x)
        assert p == pytest.approx(float(mp.betainc(n / 2, (d - n) / 2, 0, 1 - x / 4, regularized=True)), rel=1e-12)
        assert abs((risk > x).mean() - p) < 4.5 * math.sqrt(p * (1 - p) / risk.size)


def test_the_tail_falls_like_x_to_the_minus_n_over_2():
    # the finding: P(R > x) ~ C x^(-n/2), a polynomial tail in eps (x ~ eps^2) at every n
    for n, d in ((1, 20), (2, 40), (3, 40)):
        a, b = deep_risk_survival(n, d, math.pi / 2, 1e4), deep_risk_survival(n, d, math.pi / 2, 4e4)
        assert a / b == pytest.approx(2.0**n, rel=0.05)


def test_regularized_beta_is_mpmaths():
    x = np.linspace(0.0005, 0.9995, 41)
    for a, b in ((0.5, 18.5), (1.5, 37.5), (1.0, 0.5), (3.0, 150.0), (0.5, 0.5), (9.5, 999.5)):
        with mp.workdps(30):
            expected = np.array([float(mp.betainc(a, b, 0, t, regularized=True)) for t in x])
        assert np.max(np.abs(regularized_beta(a, b, x) - expected)) < 1e-12
    assert list(regularized_beta(2.0, 3.0, np.array([0.0, 1.0]))) == [0.0, 1.0]


def test_the_continued_fractions_denominators_are_kept_off_zero():
    # modified Lentz replaces a denominator within LENTZ_TINY of 0 by LENTZ_TINY (keeping its reciprocal finite)
    z = np.array([0.0, 1e-301, -1e-301, LENTZ_TINY, -2e-300, 0.5])
    assert list(_away_from_zero(z)) == [LENTZ_TINY, LENTZ_TINY, LENTZ_TINY, LENTZ_TINY, -2e-300, 0.5]


def test_n2_integral_matches_its_pinned_mpmath_values():
    # mpmath nested quadrature of the same (B, alpha) representation at 15 digits (test_n2_integral_is_an_mpmath_quadrature
    # recomputes them): n = 2, d = 40, theta = pi/2 at bound (9)'s level for eps = 2.5, 5, 10
    pinned = {2.5: "0.0332219409823297", 5: "0.0105598274746733", 10: "0.00299781385359017"}
    for eps, value in pinned.items():
        level = 38 / 40 * ((1 + eps) ** 2 * 2 + eps**2)
        assert deep_risk_survival(2, 40, math.pi / 2, level) == pytest.approx(float(value), rel=1e-3)


@pytest.mark.slow
def test_n2_integral_is_an_mpmath_quadrature():
    """The n >= 2 representation integrated by mpmath (tanh-sinh, nested; ~2 minutes a value) instead of float64 panels."""
    n, d, theta, eps = 2, 40, mp.pi / 2, mp.mpf(5)
    with mp.workdps(15):
        x = mp.mpf(d - n) / d * ((1 + eps) ** 2 * 2 + eps**2)

        def conditional(B, alpha):          # P(R > x | G_11 = B, alpha) over beta' ~ Beta((n-1)/2, (d-n-1)/2)
            st, ct = mp.sin(theta), mp.cos(theta)
            k0 = abs(ct + st * alpha * mp.sqrt((1 - B) / B))
            span = st**2 * (1 - alpha**2) / B
            kmax = mp.sqrt(k0**2 + span)
            a2, m, c0 = 1 - 2 * B, ct * (1 - B) - st * mp.sqrt(B * (1 - B)) * alpha, 1 - x
            q = lambda k: a2 * k * k - 2 * m * k + c0             # noqa: E731
            disc = m * m - a2 * c0
            roots = sorted([(m - mp.sqrt(disc)) / a2, (m + mp.sqrt(disc)) / a2]) if disc > 0 else []
            marks = [k0] + [r for r in roots if k0 < r < kmax] + [kmax]
            cdf = lambda k: mp.betainc(mp.mpf(n - 1) / 2, mp.mpf(d - n - 1) / 2, 0,   # noqa: E731
                                       min(1, (k * k - k0 * k0) / span), regularized=True)
            return sum(cdf(hi) - cdf(lo) for lo, hi in zip(marks, marks[1:]) if q((lo + hi) / 2) > 0)

        half_n, half_rest = mp.mpf(n) / 2, mp.mpf(d - n) / 2
        density_b = lambda B: B ** (half_n - 1) * (1 - B) ** (half_rest - 1) / mp.beta(half_n, half_rest)   # noqa: E731
        density_a = lambda a: (1 - a * a) ** (mp.mpf(d - 4) / 2) / mp.beta(mp.mpf(1) / 2, mp.mpf(d - 2) / 2)   # noqa: E731
        top = min(1, 1 / (mp.sqrt(x) - 1) ** 2)
        value = mp.quad(lambda B: density_b(B) * mp.quad(lambda a: density_a(a) * conditional(B, a), [-1, 0, 1]), [0, top])
    assert float(value) == pytest.approx(0.0105598274746733, rel=1e-9)
    assert deep_risk_survival(n, d, float(theta), float(x)) == pytest.approx(float(value), rel=1e-3)


def test_the_law_at_the_edges_of_its_support_and_domain():
    # h(w) = 1 + w^2 - 2 w cos(theta) >= sin(theta)^2, and for theta > pi/2 it exceeds 1 at every w >= 0: below
    # those the closed form's window is empty and R exceeds x surely
    assert deep_risk_survival_cauchy_n1(math.pi / 2, 0.5) == 1
    assert deep_risk_survival_cauchy_n1(3 * math.pi / 4, 0.7) == 1
    assert deep_risk_survival_cauchy_n1(3 * math.pi / 4, 1.2) < 1
    # theta = pi at n = 1 through the n = 1 route too: the Beta(1/2, (d-1)/2) tail
    with mp.workdps(20):
        assert float(deep_risk_survival_n1(20, mp.pi, 1.0)) == pytest.approx(
            float(mp.betainc(0.5, 9.5, 0, 0.75, regularized=True)), rel=1e-12)
    assert deep_risk_survival(3, 40, math.pi, 0.0) == 1.0 and deep_risk_survival(3, 40, math.pi, -1.0) == 1.0
    for n, d, theta in ((0, 5, 1.0), (5, 5, 1.0), (2, 5, 0.0), (2, 5, 3.2)):
        with pytest.raises(ValueError, match="need 1 <= n <= d - 1"):
            deep_risk_survival(n, d, theta, 1.0)
    with pytest.raises(ValueError, match="need d >= 2"):
        deep_risk_survival_n1(1, 1.0, 1.0)
