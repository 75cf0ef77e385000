"""The per-unit PT+FT penalty r~ (eqs. (8)-(11)) over many points at once, in mpmath, and the float64
rounding scale it is compared at.

``numerics.ptft_penalty`` evaluates one point; the functions here run it over the points a check
needs (the requested point and random draws, or a grid of (rho, m_aux, m)) and return plain floats
for comparison with a float64 torch minimiser.  The formulas are passed in (penalty p, quartic (10),
m0 as a function of m_aux), so that a wrong claim is evaluated by the same procedure as the right one.
"""

from __future__ import annotations

import mpmath as mp

from numerics.ptft_penalty import penalty_from_quartic, penalty_slope

__all__ = ["rounding_scale", "penalty_at_roots", "penalty_and_slope_table"]


def rounding_scale(u, rho, m0, m, gamma):
    """Sum of the magnitudes of eq. (8)'s terms at u: the scale of float64 rounding in p
    (operators only: floats, mpmath numbers or torch tensors)."""
    return (m / u) ** 2 + gamma**2 + u**2 + m0**2 + 2 * u * m0 * abs(rho)


def penalty_at_roots(points, m0_fn, quartic, penalty_fn, dps):
    """Eq. (11) per point (rho, m_aux, m, gamma): r~ = p at the best positive root of ``quartic``.

    Each point's numbers are taken as mpmath numbers at ``dps`` digits (floats exactly; mpmath numbers
    as they are).  Returns one dict per point, as floats: m0 = m0_fn(m_aux), the value r~, the root u*,
    the rounding scale of p at u* and every positive root (more than one where uniqueness fails)."""
    rows = []
    with mp.workdps(dps):
        for point in points:
            r_, a_, m_, g_ = (x if isinstance(x, mp.mpf) else mp.mpf(x) for x in point)
            m0 = m0_fn(a_)
            value, u_star, roots = penalty_from_quartic(r_, m0, m_, g_, quartic, penalty_fn)
            scale = rounding_scale(u_star, r_, m0, m_, g_)
            rows.append({"m0": float(m0), "value": float(value), "u": float(u_star), "scale": float(scale),
                         "roots": [float(r) for r in roots]})
    return rows


def penalty_and_slope_table(points, gamma, m0_fn, quartic, penalty_fn, dps):
    """(r~, s) per point (rho, m_aux, m) at one gamma, as floats: r~ by eq. (11) at the root of
    ``quartic``, s = d log r~ / d log m by implicit differentiation of the root (``penalty_slope``).
    Where r~ = 0 (rho = 1, m = gamma m0) log r~ is undefined: s = inf, r~ = 0 there."""
    table = {}
    with mp.workdps(dps):
        g = mp.mpf(gamma)
        for rho, m_aux, m in points:
            m0 = m0_fn(mp.mpf(m_aux))
            try:
                slope, value, _ = penalty_slope(mp.mpf(rho), m0, mp.mpf(m), g, quartic, penalty_fn)
            except ZeroDivisionError:
                slope, value = mp.inf, mp.mpf(0)
            table[(rho, m_aux, m)] = (float(value), float(slope))
    return table
