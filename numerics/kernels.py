"""Gaussian expectations of ReLU units and L2 projections onto their span, in mpmath.

For a standard bivariate normal pair (a, b) with correlation u (a = w_i.x, b = w_j.x for
x ~ N(0, I_d) and unit w_i, w_j with w_i.w_j = u):

- ``relu_overlap(u)``        = E[relu(a) relu(b)],
- ``orthant_probability(u)`` = P(a >= 0, b >= 0),

each by quadrature of its defining Gaussian integral, *not* by the arc-cosine closed forms
(which are the claims these routes check).  The integral is taken along a: given a,
b ~ N(u a, 1 - u^2), and the inner one-dimensional Gaussian integral over b is the
textbook half-line moment (E[relu(b) | a] = mu Phi(mu/s) + s phi(mu/s), P(b >= 0 | a) =
Phi(mu/s), mu = u a, s = sqrt(1 - u^2)); the outer one is ``mp.quad`` over a in [0, oo),
where relu(a) and 1{a >= 0} vanish below 0.  (A nested two-dimensional ``mp.quad`` gives
the same numbers at 30 digits but takes ~10^3 times longer and loses accuracy near u = 1,
where the inner half-line starts at a point that moves with a.)

``projection_by_eigenfunctions`` is the squared L2 norm of the projection of a function
onto the span of finitely many features, through the orthonormal eigenfunctions of the
features' Gram matrix (the Mercer route of Features are fate eq. (157)), given the Gram
matrices.

All functions take mpmath numbers (or exact Python numbers) and work at the caller's
precision with guard digits; none changes the global precision.
"""

from __future__ import annotations

import mpmath as mp

__all__ = ["relu_overlap", "orthant_probability", "projection_by_eigenfunctions"]

GUARD = 10  # extra digits inside each quadrature


def _check_cosine(u):
    if not -1 <= u <= 1:
        raise ValueError(f"a correlation must lie in [-1, 1], got {u}")


def relu_overlap(u):
    """E[relu(a) relu(b)] for standard normals a, b with correlation u, by quadrature over a."""
    u = mp.mpf(u)
    _check_cosine(u)
    with mp.workdps(mp.mp.dps + GUARD):
        s = mp.sqrt(1 - u * u)

        def given_a(a):  # E[relu(b) | a]
            mu = u * a
            return max(mu, 0) if s == 0 else mu * mp.ncdf(mu / s) + s * mp.npdf(mu / s)

        value = mp.quad(lambda a: a * mp.npdf(a) * given_a(a), _half_line())
    return +value


def _half_line():
    """[0, oo) cut where the Gaussian weight is below 10^-(dps + 30): the tail is negligible at the
    working precision, and mpmath's erfc overflows for the huge arguments an infinite end produces
    at a few hundred digits."""
    cut = mp.sqrt(2 * (mp.mp.dps + 30) * mp.log(10))
    return [0, cut / 4, cut / 2, cut]


def orthant_probability(u):
    """P(a >= 0, b >= 0) for standard normals a, b with correlation u, by quadrature over a."""
    u = mp.mpf(u)
    _check_cosine(u)
    with mp.workdps(mp.mp.dps + GUARD):
        s = mp.sqrt(1 - u * u)
        if s == 0:  # b = u a: both nonnegative on a >= 0 (u = 1) or only at a = 0 (u = -1)
            value = mp.quad(mp.npdf, [0, mp.inf]) if u > 0 else mp.mpf(0)
        else:
            value = mp.quad(lambda a: mp.npdf(a) * mp.ncdf(u * a / s), _half_line())
    return +value


def projection_by_eigenfunctions(gram, cross, coefficients):
    """||P g||^2 for g = sum_j coefficients_j h_j and P the L2 projector onto span{f_1..f_m}.

    ``gram`` is the m x m matrix <f_i, f_k>, ``cross`` the m x m* matrix <f_i, h_j>.  With
    gram = Z diag(Lambda) Z^T, the functions psi_l = sum_i Z_il f_i / sqrt(Lambda_l) are
    orthonormal and span the features (eq. (157) up to the 1/m of the paper's K), so
    ||P g||^2 = sum_l <g, psi_l>^2 = sum_l ((Z^T cross coefficients)_l)^2 / Lambda_l.
    Needs gram positive definite (linearly independent features).
    """
    with mp.workdps(mp.mp.dps + GUARD):
        gram, cross = mp.matrix(gram), mp.matrix(cross)
        overlaps = cross * mp.matrix(coefficients)          # <f_i, g>
        eigenvalues, Z = mp.eigsy(gram)
        if min(eigenvalues) <= 0:
            raise ValueError("the features' Gram matrix is not positive definite")
        projected = Z.T * overlaps
        value = mp.fsum(projected[l] ** 2 / eigenvalues[l] for l in range(gram.rows))
    return +value
