"""Coefficients of the second-order Runge-Kutta-Chebyshev method (RKC2).

Gradient flow of a least-squares loss is stiff: near a minimum its Jacobian is
minus the Hessian, with real eigenvalues spread over [-rho, 0] where
rho / lambda_min is the condition number.  An explicit s-stage RKC2 step is
stable for h rho <= beta(s) ~ 0.65 s^2, so integrating to the time t ~
log(1/tol) / lambda_min that convergence needs costs ~ sqrt(rho / lambda_min)
gradient evaluations rather than the ~ rho / lambda_min of Euler (GD) or RK4,
while remaining a consistent second-order integrator of the same flow (its
limit point follows the flow's path, which matters for fine-tuning).

Reference: Sommeijer, Shampine & Verwer (1998), "RKC: an explicit solver for
parabolic PDEs", J. Comput. Appl. Math. 88; Verwer, Hundsdorfer & Sommeijer
(1990).  They damp with eps = 2/13, made for accuracy on parabolic problems;
here the flow is run to its steady state, and every step multiplies the
modes inside the stability interval by up to ~1/cosh(sqrt(2 eps)) (0.95 at
eps = 2/13), so reaching a relative gradient of 1e-10 would take hundreds of
steps whatever h is.  eps = 5 damps them by <= 0.37 per step at the price of a
shorter interval (beta(s) ~ 0.435 s^2 instead of 0.653 s^2); the order stays 2.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

__all__ = ["RKCStages", "rkc_stages", "stages_for"]

DAMPING = 5.0


@dataclass(frozen=True)
class RKCStages:
    """Stage j's state is Y_0 + h * sum_i coefficients[j][i] F(Y_i), for j = 1..s.

    The recurrence Y_j = (1 - mu_j - nu_j) Y_0 + mu_j Y_{j-1} + nu_j Y_{j-2}
    + mut_j h F(Y_{j-1}) + gamt_j h F(Y_0) is linear in the F's, so each stage is
    stored by its coefficients on F(Y_0), ..., F(Y_{j-1}); the trainer only ever
    forms these combinations (cheap when the F's are low rank).
    """

    s: int
    coefficients: tuple[tuple[float, ...], ...]   # coefficients[j] has length j; coefficients[0] = ()
    stability: float                               # beta(s): stable for h rho <= beta(s)


@lru_cache(maxsize=None)
def rkc_stages(s: int) -> RKCStages:
    if s < 2:
        raise ValueError("RKC2 needs s >= 2 stages")
    w0 = 1 + DAMPING / s**2
    T, dT, d2T = [1.0, w0], [0.0, 1.0], [0.0, 0.0]        # Chebyshev T_j(w0) and its derivatives
    for j in range(2, s + 1):
        T.append(2 * w0 * T[j - 1] - T[j - 2])
        dT.append(2 * T[j - 1] + 2 * w0 * dT[j - 1] - dT[j - 2])
        d2T.append(4 * dT[j - 1] + 2 * w0 * d2T[j - 1] - d2T[j - 2])
    w1 = dT[s] / d2T[s]
    b = [d2T[j] / dT[j] ** 2 if j >= 2 else 0.0 for j in range(s + 1)]
    b[0] = b[1] = b[2]
    coefficients = [(), (b[1] * w1,)]
    for j in range(2, s + 1):
        mu = 2 * w0 * b[j] / b[j - 1]
        nu = -b[j] / b[j - 2]
        mut = 2 * w1 * b[j] / b[j - 1]
        gamt = -(1 - b[j - 1] * T[j - 1]) * mut
        row = [0.0] * j
        for i, c in enumerate(coefficients[j - 1]):
            row[i] += mu * c
        for i, c in enumerate(coefficients[j - 2]):
            row[i] += nu * c
        row[j - 1] += mut
        row[0] += gamt
        coefficients.append(tuple(row))
    stability = (1 + w0) * d2T[s] / dT[s]
    return RKCStages(s, tuple(coefficients), stability)


def stages_for(h_rho: float, max_stages: int = 500) -> int:
    """The fewest stages s >= 2 with beta(s) >= h rho (beta(s) ~ 0.65 (s^2 - 1))."""
    s = max(2, int((1.5 * h_rho + 1) ** 0.5))
    while rkc_stages(s).stability < h_rho and s < max_stages:
        s += 1
    return s
