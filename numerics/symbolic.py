"""Building blocks of the claims' symbolic faces (sympy), written once."""

from __future__ import annotations

import sympy as sp

__all__ = ["normal_density"]


def normal_density(x, mean=0, sd=1):
    """The N(mean, sd^2) density at ``x``; with the defaults the standard normal's exp(-x^2/2)/sqrt(2 pi)."""
    return sp.exp(-(x - mean) ** 2 / (2 * sd**2)) / sp.sqrt(2 * sp.pi * sd**2)
