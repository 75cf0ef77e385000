"""Ladders of simulation sizes (n, d) at a fixed ratio gamma = n/d, for claims about n, d -> oo that are
measured at several sizes and extrapolated in 1/d."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import torch

from simulate.stats import Estimate, estimate, rounding_floor, weighted_poly_fit

__all__ = ["halving_ladder", "extrapolate_to_infinite_size", "Rung", "estimates_along_ladder", "extrapolated_gap"]


def halving_ladder(gamma: float, d_max: int, min_gap: int, max_d: int) -> tuple[list[tuple[int, int]], str]:
    """Sizes d, d/2, d/4, d/8 (d = ``d_max``) with n = round(gamma d), keeping those with n >= 1 and
    |d - n| >= ``min_gap`` (away from the interpolation threshold n = d, where the min-norm risk has few
    finite moments).

    Near gamma = 1 fewer than three sizes survive; then d is raised to the smallest ladder with three
    valid sizes (the sizes are simulation sizes when the claim is about d -> oo), up to ``max_d``.  The
    text returned says so ("" when d was not raised).
    """
    def rungs_for(top):
        rungs = []
        for k in range(4):
            d = round(top / 2**k)
            n = round(gamma * d)
            if n >= 1 and abs(d - n) >= min_gap:
                rungs.append((n, d))
        return rungs

    rungs = rungs_for(d_max)
    if len(rungs) >= 3:
        return rungs, ""
    needed = 4 * math.ceil((min_gap + 1) / abs(1 - gamma))
    if needed > max_d:
        return rungs, f"gamma this close to 1 needs d >= {needed} for |d - n| >= {min_gap} at d/4; beyond {max_d}"
    return rungs_for(needed), f"d raised from {d_max} to {needed} so that |d - n| >= {min_gap} at d/4"


def extrapolate_to_infinite_size(ds, values, ses, max_degree: int = 2) -> tuple[float, float]:
    """The value at 1/d = 0, and its standard error, of the weighted least-squares polynomial in 1/d of
    degree min(max_degree, len(ds) - 1) through ``values`` measured at the sizes ``ds`` with standard
    errors ``ses``."""
    coef, coef_se = weighted_poly_fit([1 / d for d in ds], values, ses, min(max_degree, len(ds) - 1))
    return coef[0], coef_se[0]


@dataclass
class Rung:
    n: int
    d: int
    mc: Estimate      # the Monte-Carlo mean at this size
    exact: float      # the exact finite-(n, d) mean
    limit: float      # the claimed n, d -> oo value at this rung's n/d
    floor: float      # the rounding of ``exact`` in the simulation's dtype: a floor on standard errors

    def row(self, z: float) -> dict:
        """The rung as a report row, with the z of its comparison with the exact mean."""
        return {"n": self.n, "d": self.d, "mc": self.mc.mean, "se": self.mc.se, "finite": self.exact,
                "asymptotic": self.limit, "z": z}


def estimates_along_ladder(rungs, sample: Callable[[int, int], torch.Tensor], exact: Callable[[int, int], float],
                           limit: Callable[[int, int], float], dtype: torch.dtype,
                           progress: Callable[[str], None] | None = None) -> list[Rung]:
    """At each size (n, d) of ``rungs``, in order, the estimate of the per-trial samples ``sample(n, d)`` beside
    the exact finite-size mean ``exact(n, d)`` and the claimed limit ``limit(n, d)`` at that n/d."""
    out = []
    for n, d in rungs:
        if progress is not None:
            progress(f"n={n}, d={d}")
        value = float(exact(n, d))
        out.append(Rung(n, d, estimate(sample(n, d)), value, float(limit(n, d)), rounding_floor(dtype, value)))
    return out


def extrapolated_gap(rungs: list[Rung], dtype: torch.dtype) -> tuple[float, float]:
    """The d -> oo value of MC - limit(n/d), extrapolated in 1/d (``extrapolate_to_infinite_size``), and its
    standard error (each rung's and the fit's floored by the rounding of ``dtype``): 0 if the claimed limit is
    the limit."""
    gap, se = extrapolate_to_infinite_size([r.d for r in rungs], [r.mc.mean - r.limit for r in rungs],
                                           [max(r.mc.se, r.floor) for r in rungs])
    return gap, max(se, rounding_floor(dtype))
