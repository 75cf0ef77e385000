"""Log-linear laws fitted to Monte-Carlo means, their inversion, and where a measured curve changes sign.

A power law R ~ A n^-nu is a straight line log R = a + b x in x = log n; the fit weights each mean by its
relative standard error (the standard error of log R, to first order), centres x at its weighted mean so that
the intercept and the slope are uncorrelated, and tests the form by the coefficient of a quadratic term.
"""

from __future__ import annotations

import math
from typing import Sequence

import torch

from simulate.stats import weighted_poly_fit

__all__ = ["log_linear_fit", "log_linear_inverse", "first_sign_change"]


def log_linear_fit(xs: Sequence[float], means: Sequence[float], ses: Sequence[float]) -> dict:
    """Weighted fit of log R = a + b (x - x_bar) to the positive means R (standard errors ``ses``) at ``xs``,
    x_bar the weighted mean of the xs (a, b uncorrelated), and of a quadratic term in the same coordinates.

    Returns a, b, their standard errors sa, sb, x_bar, and the quadratic coefficient with its standard
    error (curvature, curvature_se): a significant curvature says the law is not log-linear in x."""
    x = torch.tensor(list(xs), dtype=torch.float64)
    y = torch.tensor([math.log(v) for v in means], dtype=torch.float64)
    s = torch.tensor([se / v for v, se in zip(means, ses)], dtype=torch.float64)
    w = 1 / s**2
    x_bar = float((w * x).sum() / w.sum())
    (a, b), (sa, sb) = weighted_poly_fit(x - x_bar, y, s, degree=1)
    coef, se = weighted_poly_fit(x - x_bar, y, s, degree=2)
    return dict(a=a, b=b, sa=sa, sb=sb, x_bar=x_bar, curvature=coef[2], curvature_se=se[2])


def log_linear_inverse(fit: dict, value: float, value_rel_se: float) -> tuple[float, float]:
    """The x at which the fitted law of ``log_linear_fit`` reaches ``value`` (log value = a + b (x - x_bar)),
    and the delta-method variance of that x, from the fit's (uncorrelated) a and b and the relative standard
    error of ``value``."""
    log_value = math.log(value)
    x = fit["x_bar"] + (log_value - fit["a"]) / fit["b"]
    var = (value_rel_se ** 2 + fit["sa"] ** 2) / fit["b"] ** 2 + (log_value - fit["a"]) ** 2 / fit["b"] ** 4 * fit["sb"] ** 2
    return x, var


def first_sign_change(ns: Sequence[float], values: Sequence[float]) -> float | None:
    """The n where ``values`` (measured at the increasing ``ns``) first turns from positive to non-positive,
    interpolated linearly in log n between the two points around it (None if it never does)."""
    points = list(zip(ns, values))
    for (n0, v0), (n1, v1) in zip(points, points[1:]):
        if v0 > 0 >= v1:
            frac = v0 / (v0 - v1)
            return math.exp(math.log(n0) + frac * (math.log(n1) - math.log(n0)))
    return None
