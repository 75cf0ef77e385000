"""Paired differences as Estimates for one-sided sign tests.

A paired difference whose draws agree exactly has standard error 0; flooring it at 1e-300 makes its z 0
(no evidence either way) instead of 0/0.  A test that the difference has a predicted sign is the
'above 0' test of sign * the difference.
"""

from __future__ import annotations

import dataclasses

from simulate.stats import Estimate

__all__ = ["floored", "signed"]

SE_FLOOR = 1e-300


def floored(est: Estimate) -> Estimate:
    """The estimate with its standard error floored at 1e-300 (draws that agree exactly give z = 0, not 0/0)."""
    return dataclasses.replace(est, se=max(est.se, SE_FLOOR))


def signed(est: Estimate, sign: int) -> Estimate:
    """sign * the (floored) estimate, for a one-sided 'above' test of the predicted sign; the skewness flips with it."""
    est = floored(est)
    return est if sign > 0 else Estimate(-est.mean, est.se, est.trials, -est.skewness)
