"""Closed-form estimators and projectors, batched over trials."""

from __future__ import annotations

import torch

__all__ = ["min_norm_solution", "row_space_projector"]


def min_norm_solution(X: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """X^+ y for a batch of full-rank X (trials, n, d) and y (trials, n).

    For n < d this is X^T (X X^T)^{-1} y, the interpolator of least norm; for
    n > d it is the unique least-squares solution (X^T X)^{-1} X^T y.  Both
    Gram matrices are positive definite almost surely for Gaussian X, so a
    Cholesky solve is exact up to rounding and much cheaper than an SVD.
    """
    n, d = X.shape[-2:]
    if n <= d:
        gram = X @ X.transpose(-1, -2)
        coef = torch.cholesky_solve(y.unsqueeze(-1), torch.linalg.cholesky(gram))
        return (X.transpose(-1, -2) @ coef).squeeze(-1)
    gram = X.transpose(-1, -2) @ X
    rhs = X.transpose(-1, -2) @ y.unsqueeze(-1)
    return torch.cholesky_solve(rhs, torch.linalg.cholesky(gram)).squeeze(-1)


def row_space_projector(X: torch.Tensor) -> torch.Tensor:
    """P_par = X^T (X X^T)^{-1} X of shape (trials, d, d), for n <= d."""
    gram = X @ X.transpose(-1, -2)
    return X.transpose(-1, -2) @ torch.cholesky_solve(X, torch.linalg.cholesky(gram))
