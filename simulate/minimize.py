"""A batched global minimiser of one-variable functions on an interval (torch, float64).

Each row of a batch has its own function of u (``objective(u, rows)``, elementwise
in u) and its own interval; all rows are searched at once.  Used where a claim is
about the minimum of a scalar function: the search does not assume where, or how
many, the stationary points are.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

__all__ = ["Minimum", "global_minimum", "GRID_POINTS", "BISECTION_STEPS"]

GRID_POINTS = 2048          # log grid: a pair of stationary points closer than one cell is missed
BISECTION_STEPS = 64        # halvings of a grid cell: past float64 resolution


@dataclass
class Minimum:
    value: torch.Tensor      # min over u of the objective, per row
    u: torch.Tensor          # its minimiser
    minima: torch.Tensor     # local minima found (sign changes - to + of the derivative on the grid)
    maxima: torch.Tensor     # local maxima found
    # a bound on value - (the least value in the minimiser's final bracket [a, b]): |p'(u)| (b - a), p convex there
    error: torch.Tensor | None = None


def _derivative(objective, u, rows):
    u = u.detach().requires_grad_(True)
    with torch.enable_grad():
        (grad,) = torch.autograd.grad(objective(u, rows).sum(), u)
    return grad


def global_minimum(objective, lo, hi, points=GRID_POINTS) -> Minimum:
    """min over u in [lo, hi] of objective(u, rows) (u: (len(rows), k), elementwise in u), per row.

    Every sign change - to + of the autograd derivative between neighbours of a log grid is a local
    minimum; each is bisected to float64 resolution and the least is kept.  A row without one (the
    minimum at an end of [lo, hi]) gets value inf."""
    batch = lo.shape[0]
    rows_all = torch.arange(batch, device=lo.device)
    t = torch.linspace(0, 1, points, dtype=lo.dtype, device=lo.device)
    u = lo[:, None] * (hi / lo)[:, None] ** t
    g = _derivative(objective, u, rows_all)
    maxima = ((g[:, :-1] > 0) & (g[:, 1:] <= 0)).sum(1)
    rows, cols = ((g[:, :-1] < 0) & (g[:, 1:] >= 0)).nonzero(as_tuple=True)
    a, b = u[rows, cols], u[rows, cols + 1]
    for _ in range(BISECTION_STEPS):
        mid = (a + b) / 2
        downhill = _derivative(objective, mid[:, None], rows)[:, 0] < 0
        a, b = torch.where(downhill, mid, a), torch.where(downhill, b, mid)
    u_min = (a + b) / 2
    values = objective(u_min[:, None], rows)[:, 0].detach()
    # convex on the bracket: p(u*) >= p(u) + p'(u) (u* - u) >= p(u) - |p'(u)| (b - a) for u* in [a, b]
    errors = _derivative(objective, u_min[:, None], rows)[:, 0].abs() * (b - a)
    best = torch.full((batch,), math.inf, dtype=lo.dtype, device=lo.device)
    best = best.scatter_reduce(0, rows, values, reduce="amin")
    u_best = torch.full((batch,), math.nan, dtype=lo.dtype, device=lo.device)
    is_best = values == best[rows]
    u_best[rows[is_best]] = u_min[is_best]
    error = torch.full((batch,), math.nan, dtype=lo.dtype, device=lo.device)
    error[rows[is_best]] = errors[is_best]
    return Minimum(best, u_best, torch.bincount(rows, minlength=batch), maxima, error)
