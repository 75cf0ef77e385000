"""Is a paper's asymptotic formula the limit of the exact finite-size value a simulation is tested against?

A Monte-Carlo check compares the simulation with the exact finite-size expectation; without this link a
wrong limit formula would pass wherever the simulation matches the finite-size value.  The link is
deterministic (``numerics.limits.limit_matches``: 30 digits, Richardson in 1/N from N/2 and N), and the
caller registers it as a fact of its verdict.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Callable

import mpmath as mp

from numerics.limits import limit_matches

__all__ = ["LINK_SIZE", "LimitLink", "limit_link", "limit_link_at_ratio"]

LINK_SIZE = 2 ** 20      # the exact finite-size value is extrapolated from sizes LINK_SIZE / 2 and LINK_SIZE


@dataclass(frozen=True)
class LimitLink:
    holds: bool
    claimed: mp.mpf
    limit: mp.mpf          # the Richardson limit of the finite-size value
    tolerance: mp.mpf      # its error bound plus the evaluations' own accuracy
    size: str              # the size that is extrapolated: "n", "d", or "d/q" along n/d = p/q

    @property
    def text(self) -> str:
        return (f"{mp.nstr(mp.mpf(self.claimed), 8)} vs {mp.nstr(self.limit, 8)} ± {mp.nstr(self.tolerance, 2)} "
                f"by Richardson from {self.size} = {LINK_SIZE // 2}, {LINK_SIZE}")

    def record(self) -> dict:
        """The link as a row's extra fields."""
        return {"limit_of_finite": float(self.limit), "limit_tolerance": float(self.tolerance),
                "limit_link_holds": self.holds}


def limit_link(finite_at: Callable[[int], mp.mpf], claimed, size: str = "n") -> LimitLink:
    """Is ``claimed`` (evaluated by the caller, at its precision) the N -> oo limit of ``finite_at(N)``?"""
    holds, limit, tolerance = limit_matches(finite_at, claimed, LINK_SIZE)
    return LimitLink(holds, claimed, limit, tolerance, size)


def limit_link_at_ratio(finite: Callable, asymptotic: Callable, gamma, *rest) -> LimitLink:
    """:func:`limit_link` for a finite-size formula ``finite(n, d, *rest)`` and its claimed limit
    ``asymptotic(gamma, *rest)``: d -> oo at fixed n/d = gamma, with gamma as a fraction (denominator <= 10^6)
    so that n = gamma d is an integer along the ladder of d."""
    ratio = Fraction(str(mp.nstr(mp.mpf(gamma), 17))).limit_denominator(10 ** 6)
    return limit_link(lambda N: finite(N * ratio.numerator, N * ratio.denominator, *rest),
                      asymptotic(mp.mpf(ratio.numerator) / ratio.denominator, *rest),
                      size="d" if ratio.denominator == 1 else f"d/{ratio.denominator}")
