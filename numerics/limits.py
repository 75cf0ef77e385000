"""The n -> oo limit of an exact finite-size expression, for linking a paper's asymptotic formula to it.

A Monte-Carlo check compares the simulation with the exact finite-size expectation, never with the
limit; the limit formula is then a separate claim about that expectation, checked here numerically
(and symbolically where sympy can take the limit).
"""

from __future__ import annotations

from typing import Callable

import mpmath as mp

__all__ = ["richardson_limit", "limit_matches"]


def richardson_limit(f: Callable[[int], mp.mpf], size: int) -> tuple[mp.mpf, mp.mpf]:
    """lim_{N -> oo} f(N) for f(N) = L + a/N + O(1/N^2), from f(size // 2) and f(size).

    Returns the first-order Richardson value 2 f(N) - f(N/2) and |f(N) - f(N/2)| as a bound on its
    error: that difference is a/N + O(1/N^2), while the Richardson value is off by O(1/N^2) only, so the
    bound is conservative by a factor ~N once N is large enough for the expansion to hold.
    """
    if size < 4 or size % 2:
        raise ValueError(f"size must be an even integer >= 4, got {size}")
    far, half = f(size), f(size // 2)
    return 2 * far - half, abs(far - half)


def limit_matches(f: Callable[[int], mp.mpf], claimed, size: int, *, dps: int = 30,
                  rel_digits: int = 12) -> tuple[bool, mp.mpf, mp.mpf]:
    """Is ``claimed`` the limit N -> oo of f(N)?  Deterministic: :func:`richardson_limit` at ``dps`` digits,
    with a tolerance of its error bound plus 10^-rel_digits relative (the evaluations' own accuracy).

    Returns (holds, limit, tolerance)."""
    with mp.workdps(dps):
        limit, error = richardson_limit(f, size)
        tolerance = error + mp.mpf(10) ** -rel_digits * max(1, abs(limit))
        return bool(abs(mp.mpf(claimed) - limit) <= tolerance), limit, tolerance
