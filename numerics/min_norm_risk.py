"""The risk of the min-norm interpolator X^+ y (Features are fate, Thm 3.6): exact at finite size for a
Gaussian design, and the values it takes under design laws that break an assumption of the proof
(``simulate.data``'s zero-rows:Q and anisotropic:A), where the checker records the break.

Setting: y = X beta + eps, ||beta|| = 1, eps ~ N(0, sigma^2 I_n); the risk is ||X^+ y - beta||^2.
Arguments are mpmath numbers or Python numbers.
"""

from __future__ import annotations

import mpmath as mp

from numerics.covariance_risk import deq_kappa
from numerics.random_matrix import binomial_average, inverse_wishart_trace, projection_fraction

__all__ = ["expected_risk", "limit_with_zero_rows", "limit_with_anisotropic_rows", "transfer_gap_with_zero_rows"]


def expected_risk(n, d, sigma, signal=1):
    """Exact E R at finite (n, d) for Gaussian X, from eq. (95) of the proof:
    E R = 1 - E||P_row b||^2 + sigma^2 E tr((X^+)^T X^+), both terms exact.  ``signal`` is ||b||^2 where the
    target is not a unit vector (the interpolator started elsewhere, measured in Sigma = c I's metric: c ||b||^2)."""
    return signal * (1 - projection_fraction(n, d)) + sigma**2 * inverse_wishart_trace(n, d)


def limit_with_zero_rows(gamma, sigma, q):
    """Eq. (10) (gamma < 1) for rows that are 0 with probability q, else N(0, I/(1 - q)): X^+ y sees the
    (1 - q) n non-zero rows, whose Gram matrix is 1/(1 - q) times a white Wishart one, so the limit is eq. (10)'s
    terms at g = (1 - q) gamma: 1 - g + (1 - q) sigma^2 g/(1 - g)."""
    g = (1 - q) * mp.mpf(gamma)
    return 1 - g + (1 - q) * mp.mpf(sigma) ** 2 * g / (1 - g)


def limit_with_anisotropic_rows(gamma, sigma, a):
    """Eq. (10) (gamma < 1) for independent N(0, 1 + a) entries on half the coordinates and N(0, 1 - a) on the
    other half: the bias 1 - gamma is unchanged (beta is uniformly rotated, row(X) has dimension n), and
    sigma^2 tr (X X^T)^-1 -> sigma^2 / kappa, kappa the root of sum_j w_j lam_j/(lam_j + kappa) = gamma (the
    Marchenko-Pastur law of a non-white Wishart matrix; 1/kappa = gamma/(1 - gamma) at a = 0)."""
    half = mp.mpf(1) / 2
    return 1 - mp.mpf(gamma) + mp.mpf(sigma) ** 2 / deq_kappa(mp.mpf(gamma), ((half, 1 + a), (half, 1 - a)))


def transfer_gap_with_zero_rows(n, d, theta, sigma, q):
    """E R_sc - E R_lt (Features are fate, eq. (13) before n, d -> oo) when each row is 0 with probability q,
    else N(0, I/(1 - q)), averaged over the number K of non-zero rows: R_sc(K) = 1 - K/d + (1 - q) sigma^2
    K/(d - K - 1) (their Gram matrix is 1/(1 - q) times a white Wishart one) and R_lt(K) = sin^2 + (sin^2 +
    (1 - q) sigma^2)/(K - 2) (||X beta_s||^2 = chi^2_K/(1 - q))."""
    keep, s2, t2 = 1 - q, mp.mpf(sigma) ** 2, mp.sin(mp.mpf(theta)) ** 2
    return binomial_average(n, keep, lambda k: 1 - mp.mpf(k) / d + keep * s2 * k / (d - k - 1)
                            - t2 - (t2 + keep * s2) / (k - 2), smallest=3)
