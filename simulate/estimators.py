"""Closed-form estimators and projectors, batched over trials."""

from __future__ import annotations

import torch

from simulate.device import decompose

__all__ = ["min_norm_solution", "row_space_projector", "smallest_positive_eigenvalue"]


def min_norm_solution(X: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """X^+ y for a batch of X (trials, n, d) and y (trials, n).

    For n < d this is X^T (X X^T)^{-1} y, the interpolator of least norm; for
    n > d it is the unique least-squares solution (X^T X)^{-1} X^T y.  Both
    Gram matrices are positive definite almost surely for Gaussian X, so a
    Cholesky solve is exact up to rounding and much cheaper than an SVD.  Draws
    whose Gram matrix is singular (a zero or repeated row of a sparse or
    Rademacher design) fall back to the SVD pseudo-inverse, which is X^+ y still.
    """
    n, d = X.shape[-2:]
    if n <= d:
        gram = X @ X.transpose(-1, -2)
        factor, info = torch.linalg.cholesky_ex(gram)
        solution = (X.transpose(-1, -2) @ torch.cholesky_solve(y.unsqueeze(-1), factor)).squeeze(-1)
    else:
        gram = X.transpose(-1, -2) @ X
        factor, info = torch.linalg.cholesky_ex(gram)
        solution = torch.cholesky_solve(X.transpose(-1, -2) @ y.unsqueeze(-1), factor).squeeze(-1)
    singular = info != 0
    if bool(singular.any()):
        solution[singular] = (decompose(torch.linalg.pinv, X[singular]) @ y[singular].unsqueeze(-1)).squeeze(-1)
    return solution


def row_space_projector(X: torch.Tensor) -> torch.Tensor:
    """P_par = X^T (X X^T)^{-1} X of shape (trials, d, d), for n <= d: the orthogonal projector
    onto row(X) (X^+ X, by the SVD, for draws whose X X^T is singular)."""
    gram = X @ X.transpose(-1, -2)
    factor, info = torch.linalg.cholesky_ex(gram)
    projector = X.transpose(-1, -2) @ torch.cholesky_solve(X, factor)
    singular = info != 0
    if bool(singular.any()):
        projector[singular] = decompose(torch.linalg.pinv, X[singular]) @ X[singular]
    return projector


def smallest_positive_eigenvalue(gram: torch.Tensor, rtol: float = 1e-10) -> torch.Tensor:
    """Per batch entry, the smallest eigenvalue of the PSD ``gram`` above rtol times its largest:
    lambda_min^+ of X X^T, which bounds how far a point of row(X) is from its target by the gradient."""
    eig = decompose(torch.linalg.eigvalsh, gram)
    floor = rtol * eig[..., -1:].clamp(min=0)
    return torch.where(eig > floor, eig, torch.full_like(eig, float("inf"))).min(-1).values
