"""An exact one-sided binomial test in plain floats: the upper tail of a binomial law, and the normal quantile
that turns its p-value into a z-score (for a judge that compares z-scores against a critical value)."""

from __future__ import annotations

import math
from statistics import NormalDist

__all__ = ["binomial_upper_tail", "z_of_p_value"]


def binomial_upper_tail(k: int, trials: int, q: float) -> float:
    """P(Binomial(trials, q) >= k), exactly (a float sum of the terms)."""
    return math.fsum(math.comb(trials, j) * q**j * (1 - q) ** (trials - j) for j in range(k, trials + 1))


def z_of_p_value(p_value: float) -> float:
    """The normal quantile z with P(N(0, 1) > z) = p_value (-inf at p >= 1, +inf at p <= 0), so that a test
    alarming at z > z_crit alarms exactly when p < its per-test rate."""
    if p_value >= 1:
        return -math.inf
    return math.inf if p_value <= 0 else -NormalDist().inv_cdf(p_value)
