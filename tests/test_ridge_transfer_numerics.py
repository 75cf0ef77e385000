"""Tests for numerics.ridge_transfer (Features are fate, Thm 3.8, eqs. (126)-(141))."""

import mpmath as mp
import numpy as np
import pytest
import torch

from numerics.ridge_transfer import (chi_moment_ratio, chi_square_expectation, paper_eq128,
                                     ridge_transfer_conditional_risk, ridge_transfer_expected_risk,
                                     ridge_transfer_integrals,
                                     ridge_transfer_large_n_gap_coefficient, ridge_transfer_limit,
                                     ridge_transfer_optimal_lambda, transfer_risk_lambda0)


def _hyperu_route(n, a, c, k):
    """E[s^a/(s+c)^k], s ~ chi2(n), c > 0, via Tricomi U (independent of quadrature):
    int_0^inf u^(q-1) e^-u (u + c')^-k du = Gamma(q) c'^(q-k) U(q, q-k+1, c'), q = n/2 + a."""
    p, cc = mp.mpf(n) / 2, mp.mpf(c) / 2
    q = p + a
    return mp.mpf(2) ** (a - k) * mp.gammaprod([q], [p]) * cc ** (q - k) * mp.hyperu(q, q - k + 1, cc)


# ---------------------------------------------------------------- integrals

@pytest.mark.parametrize("dps", [30, 60])
@pytest.mark.parametrize("n", [3, 5, 20, 10000])
def test_integrals_at_lambda0_match_closed_forms(n, dps):
    # eq. (120): E 1/||z||^2 = 1/(n-2); I1(n+2, 0) = I2(n, 0) = 1.
    with mp.workdps(dps):
        i1n, i1n2, i2n = ridge_transfer_integrals(n, 0)
        tol = mp.mpf(10) ** (-dps + 2)
        assert abs(i1n * (n - 2) - 1) < tol
        assert abs(i1n2 - 1) < tol
        assert abs(i2n - 1) < tol
        if n > 4:  # E s^-2 = 1/((n-2)(n-4)) exercises a stronger endpoint power
            assert abs(chi_moment_ratio(n, 0, 0, 2) * (n - 2) * (n - 4) - 1) < tol


@pytest.mark.parametrize("n,lam", [(1, "0.3"), (2, "0.01"), (3, "2"), (5, "0.3"), (5, "0.01"),
                                   (20, "2"), (20, "0.3"), (200, "0.3")])
def test_integrals_at_positive_lambda_match_hypergeometric_U(n, lam):
    with mp.workdps(30):
        c = n * mp.mpf(lam)
        got = ridge_transfer_integrals(n, mp.mpf(lam))
        want = (_hyperu_route(n, 1, c, 2), _hyperu_route(n, 2, c, 2), _hyperu_route(n, 1, c, 1))
        for g, w in zip(got, want):
            assert abs(g / w - 1) < mp.mpf(10) ** -27


def test_integrals_against_sampling_small_n():
    rng = np.random.default_rng(7)
    n, lam, trials = 5, 0.3, 400_000
    s = (rng.standard_normal((trials, n)) ** 2).sum(1)
    c = n * lam
    samples = (s / (s + c) ** 2, s**2 / (s + c) ** 2, s / (s + c))
    with mp.workdps(20):
        exact = ridge_transfer_integrals(n, mp.mpf(lam))
    for x, e in zip(samples, exact):
        assert abs(x.mean() - float(e)) < 4 * x.std() / trials**0.5


def test_domain_checks():
    with pytest.raises(ValueError):
        ridge_transfer_integrals(2, 0)          # E 1/chi2_2 = inf
    with pytest.raises(ValueError):
        ridge_transfer_expected_risk(2, 0, 0.5, 0.1)
    with pytest.raises(ValueError):
        ridge_transfer_expected_risk(10, -0.1, 0.5, 0.1)
    with pytest.raises(ValueError):
        chi_moment_ratio(4, 0, 0, 2)            # E s^-2 needs n > 4
    with mp.workdps(30):                          # but any n >= 1 is fine once lam > 0
        assert mp.isfinite(ridge_transfer_expected_risk(1, mp.mpf("0.1"), 0.5, 0.1))


def test_precision_is_local():
    before = mp.mp.prec
    with mp.workdps(25):
        chi_square_expectation(50, lambda s: 1 / (s + 1))
        assert mp.mp.dps == 25
    assert mp.mp.prec == before


# ---------------------------------------------------------------- expected risk

@pytest.mark.parametrize("n,lam", [(3, "0"), (5, "0.3"), (20, "0"), (20, "1.5"), (500, "0.3")])
def test_expected_risk_equals_printed_eq128(n, lam):
    # One quadrature of the conditional risk vs eq. (128) from three quadratures.
    with mp.workdps(30):
        th, sg = mp.mpf("0.7"), mp.mpf("0.5")
        a = ridge_transfer_expected_risk(n, mp.mpf(lam), th, sg)
        b = paper_eq128(n, mp.mpf(lam), th, sg)
        assert abs(a - b) < mp.mpf(10) ** -28


@pytest.mark.parametrize("n", [3, 5, 20, 1000])
@pytest.mark.parametrize("theta,sigma", [("0.3", "0"), ("1.2", "0.7")])
def test_lambda0_reduces_to_eq12(n, theta, sigma):
    with mp.workdps(30):
        th, sg = mp.mpf(theta), mp.mpf(sigma)
        r = ridge_transfer_expected_risk(n, 0, th, sg)
        assert abs(r - transfer_risk_lambda0(n, th, sg)) < mp.mpf(10) ** -28


def _mc_risk(n, lam, theta, sigma, trials, seed):
    """Direct sampling of z, w, eps and the estimator b of eq. (126)."""
    gen = torch.Generator().manual_seed(seed)
    z = torch.randn(trials, n, generator=gen, dtype=torch.float64)
    w = torch.randn(trials, n, generator=gen, dtype=torch.float64)
    eps = sigma * torch.randn(trials, n, generator=gen, dtype=torch.float64)
    y = np.cos(theta) * z + np.sin(theta) * w + eps
    b = (z * y).sum(1) / ((z * z).sum(1) + n * lam)
    # beta_hat - beta_t = (b - cos) beta_s - sin nu
    risk = (b - np.cos(theta)) ** 2 + np.sin(theta) ** 2
    return risk.mean().item(), risk.std().item() / trials**0.5


@pytest.mark.parametrize("n,lam,theta,sigma", [
    (5, 0.0, 0.6, 0.5),
    (5, 0.3, 0.9, 0.2),
    (20, 0.0, 1.1, 0.3),
    (20, 0.3, 0.4, 1.0),
])
def test_expected_risk_against_monte_carlo(n, lam, theta, sigma):
    mean, se = _mc_risk(n, lam, theta, sigma, trials=200_000, seed=11)
    with mp.workdps(20):
        exact = ridge_transfer_expected_risk(n, mp.mpf(lam), mp.mpf(theta), mp.mpf(sigma))
    assert abs(mean - float(exact)) < 4 * se


def test_full_ridge_solution_matches_eq126_and_monte_carlo():
    # Build X, beta_s, beta_t in R^d, the rank-one features Phi = (X beta_s) v^T
    # (hidden width h), solve the ridge problem (121) and form
    # beta_hat = beta_s v^T W_L; compare with eq. (126) and the exact risk.
    gen = torch.Generator().manual_seed(3)
    n, d, h, lam, theta, sigma, trials = 5, 4, 3, 0.3, 0.8, 0.4, 200_000
    beta_s = torch.zeros(d, dtype=torch.float64); beta_s[0] = 1
    nu = torch.zeros(d, dtype=torch.float64); nu[1] = 1
    beta_t = np.cos(theta) * beta_s + np.sin(theta) * nu
    v = torch.randn(h, generator=gen, dtype=torch.float64); v /= v.norm()
    X = torch.randn(trials, n, d, generator=gen, dtype=torch.float64)
    y = X @ beta_t + sigma * torch.randn(trials, n, generator=gen, dtype=torch.float64)
    z = X @ beta_s
    phi = z[:, :, None] * v[None, None, :]
    gram = phi.transpose(1, 2) @ phi + n * lam * torch.eye(h, dtype=torch.float64)
    w_l = torch.linalg.solve(gram, (phi.transpose(1, 2) @ y[:, :, None]))[:, :, 0]
    beta_hat = (w_l @ v)[:, None] * beta_s[None, :]
    b126 = (z * y).sum(1) / ((z * z).sum(1) + n * lam)
    assert torch.allclose(beta_hat, b126[:, None] * beta_s[None, :], atol=1e-10)
    risk = ((beta_hat - beta_t) ** 2).sum(1)
    mean, se = risk.mean().item(), risk.std().item() / trials**0.5
    with mp.workdps(20):
        exact = ridge_transfer_expected_risk(n, mp.mpf(lam), mp.mpf(theta), mp.mpf(sigma))
    assert abs(mean - float(exact)) < 4 * se


# ---------------------------------------------------------------- large n / eq. (15)

@pytest.mark.parametrize("lam,theta,sigma", [("0.3", "0.7", "0.5"), ("1", "0.2", "0")])
def test_finite_n_tends_to_eq15_like_one_over_n(lam, theta, sigma):
    with mp.workdps(30):
        lam, th, sg = mp.mpf(lam), mp.mpf(theta), mp.mpf(sigma)
        lim = ridge_transfer_limit(lam, th)
        c1 = ridge_transfer_large_n_gap_coefficient(lam, th, sg)
        gaps = [ridge_transfer_expected_risk(n, lam, th, sg) - lim for n in (10, 100, 1000, 10000)]
        assert all(g > 0 for g in gaps)
        for g_small, g_big in zip(gaps, gaps[1:]):
            assert 8 < g_small / g_big < 12          # roughly 1/n
        # n * gap -> c1 with an O(1/n) correction
        assert abs(10000 * gaps[-1] / c1 - 1) < 1e-3
        assert abs(1000 * gaps[-2] / c1 - 1) < 1e-2


def test_same_value_at_dps_30_and_60():
    args = ("0.3", "0.7", "0.5")
    for n in (7, 1000):
        with mp.workdps(30):
            a = ridge_transfer_expected_risk(n, *map(mp.mpf, args))
        with mp.workdps(60):
            b = ridge_transfer_expected_risk(n, *map(mp.mpf, args))
            assert abs(a - b) < mp.mpf(10) ** -28


def test_eq15_strictly_increasing_in_lambda():
    with mp.workdps(30):
        lams = [mp.mpf(k) / 10 for k in range(0, 51)]
        for theta in ("0", "0.5", "1.2", "1.5"):
            vals = [ridge_transfer_limit(l, mp.mpf(theta)) for l in lams]
            assert all(b > a for a, b in zip(vals, vals[1:]))
            # d/dlam = 2 lam cos^2 / (1 + lam)^3
            for l in (mp.mpf("0.2"), mp.mpf(3)):
                d = mp.diff(lambda x: ridge_transfer_limit(x, mp.mpf(theta)), l)
                assert abs(d - 2 * l * mp.cos(mp.mpf(theta)) ** 2 / (1 + l) ** 3) < mp.mpf(10) ** -20
        # lam = 0 gives sin^2 (the n -> oo limit of eq. (12)); at theta = pi/2 it is flat.
        assert abs(ridge_transfer_limit(0, mp.mpf("0.5")) - mp.sin(mp.mpf("0.5")) ** 2) < mp.mpf(10) ** -28
        flat = [ridge_transfer_limit(l, mp.pi / 2) for l in (0, 1, 5)]
        assert max(flat) - min(flat) < mp.mpf(10) ** -28


def test_finite_n_optimal_ridge_is_positive():
    # At finite n the risk is NOT increasing in lam: it is minimised at
    # lam* = (sin^2 + sigma^2)/(n cos^2) > 0, with minimum sin^2 + kappa E[1/(s + n lam*)].
    with mp.workdps(30):
        n, th, sg = 20, mp.mpf("0.7"), mp.mpf("0.5")
        lam_star = ridge_transfer_optimal_lambda(n, th, sg)
        r = lambda lam: ridge_transfer_expected_risk(n, lam, th, sg)
        r_star = r(lam_star)
        assert r_star < r(0)
        assert r_star < r(lam_star * mp.mpf("0.9")) and r_star < r(lam_star * mp.mpf("1.1"))
        kappa = mp.sin(th) ** 2 + sg**2
        assert abs(r_star - (mp.sin(th) ** 2 + kappa * chi_moment_ratio(n, 0, n * lam_star, 1))) \
            < mp.mpf(10) ** -27


def test_conditional_risk_averaged_over_the_chi_square_law_is_the_expected_risk():
    # Tower rule: E_s E[R | ||z||^2 = s] with s ~ chi-square(n) is the finite-n risk of eq. (128);
    # as s -> oo the conditional risk falls to the bias sin^2(theta).
    with mp.workdps(30):
        n, lam, theta, sigma = 7, mp.mpf("0.3"), mp.mpf("0.9"), mp.mpf("0.4")
        c = n * lam
        averaged = chi_square_expectation(n, lambda s: ridge_transfer_conditional_risk(s, c, theta, sigma),
                                          extra_points=(c,))
        assert abs(averaged - ridge_transfer_expected_risk(n, lam, theta, sigma)) < mp.mpf(10) ** -25
        far = ridge_transfer_conditional_risk(mp.mpf(10) ** 12, c, theta, sigma)
        assert abs(far - mp.sin(theta) ** 2) < mp.mpf(10) ** -11


@pytest.mark.parametrize("n,a,c,k", [(1, -1, 1, 1), (3, -2, "0.5", 0), (2, 0, 0, 1), (4, -1, 0, 1)])
def test_moment_ratio_rejects_the_divergent_moments(n, a, c, k):
    # Near s = 0 the chi-square(n) density is ~ s^(n/2 - 1), so E[s^a/(s + c)^k] is infinite when
    # n + 2a <= 0 (c > 0) or n + 2(a - k) <= 0 (c = 0).
    with pytest.raises(ValueError, match="infinite"):
        chi_moment_ratio(n, a, c, k)


def test_the_chi_square_expectations_refuse_a_divergent_or_undefined_case():
    with pytest.raises(ValueError, match="degrees of freedom"):
        chi_square_expectation(0, lambda s: s)
    with pytest.raises(ValueError, match="c = n lam must be >= 0"):
        chi_moment_ratio(5, 0, -1, 1)
    # E[1/s] for chi-square(2) diverges at s = 0 without a ridge (n + 2(a - k) = 0), and is finite with one
    with pytest.raises(ValueError, match="infinite"):
        chi_moment_ratio(2, 0, 0, 1)
    with pytest.raises(ValueError, match="infinite"):
        chi_moment_ratio(2, -1, 1, 0)
    with mp.workdps(20):
        assert chi_moment_ratio(3, 0, 0, 1) == pytest.approx(1.0)              # E[1/s] = 1 / (n - 2)
        assert chi_moment_ratio(2, 0, 1, 1) > 0
    with pytest.raises(ValueError, match=r"eq. \(12\) needs n > 2"):
        transfer_risk_lambda0(2, 0.3, 0.1)
