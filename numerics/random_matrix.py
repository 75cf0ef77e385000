"""High-precision facts about Gaussian random matrices, each by a stated route.

All functions take and return mpmath numbers and work at the caller's precision
(``mpmath.workdps``); none changes the global precision.

Conventions: X is n x d with i.i.d. N(0, 1) entries.
"""

from __future__ import annotations

import mpmath as mp

__all__ = [
    "binomial_average",
    "inverse_wishart_trace",
    "marchenko_pastur_density",
    "marchenko_pastur_inverse_moment",
    "projection_fraction",
]


def inverse_wishart_trace(n, d):
    """E tr((X X^T)^{-1}) for n < d - 1, or E tr((X^T X)^{-1}) for d < n - 1.

    X X^T is Wishart_n(d, I) when n <= d, and E W^{-1} = I / (d - n - 1)
    (Muirhead 1982, Thm 3.2.12), so the trace is n / (d - n - 1); for n > d swap
    the roles of n and d.  Both traces equal E tr((X^+)^T X^+).
    """
    n, d = mp.mpf(n), mp.mpf(d)
    small, large = min(n, d), max(n, d)
    if large - small <= 1:
        raise ValueError("E tr(W^-1) is infinite unless |d - n| > 1")
    return small / (large - small - 1)


def projection_fraction(n, d):
    """E ||P_row(X) b||^2 for a unit vector b: min(n, d) / d.

    row(X) is a uniformly random min(n, d)-dimensional subspace of R^d, so by
    symmetry each of the d coordinates of a rotated b carries the same share.
    """
    return mp.mpf(min(n, d)) / d


def marchenko_pastur_density(x, q):
    """Density of the Marchenko-Pastur law with ratio q < 1 (unit variance)."""
    a, b = (1 - mp.sqrt(q)) ** 2, (1 + mp.sqrt(q)) ** 2
    if x <= a or x >= b:
        return mp.mpf(0)
    return mp.sqrt((b - x) * (x - a)) / (2 * mp.pi * q * x)


def marchenko_pastur_inverse_moment(q):
    """int x^{-1} dMP_q(x), by quadrature of the density (not the closed form).

    This is lim (1/n) E tr(C^{-1}) for C = X X^T / d with n / d -> q < 1, the
    quantity the Stieltjes-transform argument of Features-are-fate eqs.
    (98)-(102) evaluates in closed form as 1 / (1 - q).
    """
    q = mp.mpf(q)
    if not 0 < q < 1:
        raise ValueError("the inverse moment of MP_q is finite only for 0 < q < 1")
    a, b = (1 - mp.sqrt(q)) ** 2, (1 + mp.sqrt(q)) ** 2
    # x = a + (b - a) sin^2(phi) removes the square-root endpoint singularities.
    def integrand(phi):
        s, c = mp.sin(phi), mp.cos(phi)
        x = a + (b - a) * s**2
        return (b - a) ** 2 * s**2 * c**2 / (mp.pi * q * x**2)

    return mp.quad(integrand, [0, mp.pi / 4, mp.pi / 2])


def binomial_average(n, keep, f, smallest=0):
    """E f(K) for K ~ Binomial(n, keep), the terms K < ``smallest`` left out (where f is infinite, e.g.
    1/(K - 2); their mass, sum_{k < smallest} P(K = k), is below 1e-24 for n >= 30, keep = 0.9, smallest = 3): K is
    the number of non-zero rows of an n-row design under zero-rows:Q, keep = 1 - Q.  Exact probabilities, summed
    at the caller's precision."""
    keep = mp.mpf(keep)
    return mp.fsum(mp.binomial(n, k) * keep**k * (1 - keep) ** (n - k) * f(k) for k in range(smallest, n + 1))
