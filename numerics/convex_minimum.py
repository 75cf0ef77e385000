"""The minimum of a convex function of one variable by bisection on its derivative (mpmath)."""

from __future__ import annotations

import mpmath as mp

__all__ = ["convex_minimum"]


def convex_minimum(f, df, lo, hi):
    """min f over [lo, hi] for f convex there with df(lo) < 0 < df(hi): f at the zero of the increasing df,
    bracketed by bisection to the working precision (mp.prec + 20 halvings), evaluated at the bracket's middle.
    Bisection needs only the sign of df, so it does not depend on a root finder's starting point."""
    for _ in range(mp.mp.prec + 20):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if df(mid) < 0 else (lo, mid)
    return f((lo + hi) / 2)
