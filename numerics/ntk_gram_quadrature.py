"""The infinite-width NTK Gram matrix of a two-layer ReLU net, H^inf_ij = x_i.x_j P(w.x_i >= 0, w.x_j >= 0)
for w ~ N(0, I), by quadrature at any mpmath precision (not the arccos closed form that the torch side uses,
``simulate.kernels.ntk_gram``), and the small linear algebra the NTK bounds need around it.

Rows come in as plain nested lists of floats (e.g. ``tensor.tolist()``) and are renormalised to unit
length at the working precision.  Functions take and return mpmath numbers and matrices at the caller's
precision; the global precision is never changed.
"""

from __future__ import annotations

import mpmath as mp

from numerics.feature_projection import unit_rows

__all__ = ["orthant_probability_by_plackett", "gram_by_quadrature", "unit_row_matrix", "inverse_quadratic_form"]


def orthant_probability_by_plackett(rho):
    """P(w.x >= 0, w.z >= 0) for w ~ N(0, I), unit x, z with x.z = rho, by quadrature of Plackett's
    identity dP/drho = phi_2(0, 0; rho) = 1 / (2 pi sqrt(1 - rho^2)) from P = 1/4 at rho = 0 (the claims'
    sympy faces derive both from the defining Gaussian integral); |rho| >= 1 gives the degenerate ends
    1/2 (x = z) and 0 (x = -z)."""
    rho = mp.mpf(rho)
    if abs(rho) >= 1:
        return mp.mpf(1) / 2 if rho > 0 else mp.mpf(0)
    return mp.mpf(1) / 4 + mp.quad(lambda t: 1 / (2 * mp.pi * mp.sqrt(1 - t * t)), [0, rho])


def gram_by_quadrature(A, B=None):
    """H^inf_ij = a_i.b_j P(w.a_i >= 0, w.b_j >= 0) for the unit rows of mp matrices A, B (B = None: B = A,
    symmetric, with the diagonal x.x = 1 exactly)."""
    same = B is None
    B = A if same else B
    H = mp.matrix(A.rows, B.rows)
    for i in range(A.rows):
        for j in range(i if same else 0, B.rows):
            rho = mp.mpf(1) if same and i == j else mp.fsum(A[i, k] * B[j, k] for k in range(A.cols))
            H[i, j] = rho * orthant_probability_by_plackett(rho)
            if same:
                H[j, i] = H[i, j]
    return H


def unit_row_matrix(rows):
    """float rows (a nested list) as an mp matrix of unit rows, renormalised at the working precision (float64
    inputs on the sphere are unit only to ~1e-16)."""
    return mp.matrix(unit_rows(rows))


def inverse_quadratic_form(H, v):
    """v^T H^-1 v for an mp matrix H and vector v, by LU solve."""
    return mp.fsum(v[i] * w for i, w in enumerate(mp.lu_solve(H, v)))
