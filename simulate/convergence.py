"""What a trainer's stopping point certifies about the quantity a check measures.

A trainer stops at a small gradient, not at its limit; these turn the gradient it stopped at into a bound on how
far the end point, and a squared distance measured from it (an excess risk), can still be from the limit's.
"""

from __future__ import annotations

import torch

from simulate.estimators import smallest_positive_eigenvalue

__all__ = ["risk_shift", "row_space_distance"]


def row_space_distance(grad_norm: torch.Tensor, X: torch.Tensor) -> torch.Tensor:
    """Per draw, a bound on ||P_row (beta - beta_*)||, beta_* a minimiser of 1/(2n) ||X beta - y||^2, from the
    norm of its gradient at beta: the gradient is (X^T X / n)(beta - beta_*), it lies in row(X), and there X^T X / n
    is at least lambda_min^+(X X^T) / n.  The row-space part is the whole of beta - beta_* for n >= d; for n < d it
    is the part of the limit the data fix (every interpolator shares it)."""
    n = X.shape[-2]
    return grad_norm * n / smallest_positive_eigenvalue(X @ X.transpose(-1, -2))


def risk_shift(distance: torch.Tensor, risk: torch.Tensor) -> torch.Tensor:
    """Per draw, the most a squared distance ||beta - beta_t||^2 = ``risk`` can change when beta moves by at most
    ``distance``: (sqrt(risk) + distance)^2 - risk."""
    return distance * (2 * risk.clamp(min=0).sqrt() + distance)
