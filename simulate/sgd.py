"""Stochastic gradient descent on a linear model, batched over independent trials.

Fine-tuning from pretrained weights w(0) on the empirical loss 1/(2n) ||X w - y||^2
with a constant step: each epoch visits the n rows in a fresh random order, in
mini-batches of ``batch`` rows (``batch = 1`` is single-sample SGD), and moves
w by -step * x_B^T (x_B w - y_B) / |B|.  Every update lies in row(X), so w - w(0)
stays there, and when the data can be interpolated (n < d) every per-sample
gradient vanishes at the interpolator closest to w(0): constant-step SGD then
converges to the same point as gradient descent, w(0) + X^+ (y - X w(0)).

The step is stable for every batch: the curvature of a batch loss is
lambda_max(x_B^T x_B)/|B| <= min(lambda_max(X X^T), |B| max_i ||x_i||^2)/|B|,
and the step is the inverse of that bound, per trial.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from simulate.device import decompose
from simulate.estimators import smallest_positive_eigenvalue

__all__ = ["SgdResult", "sgd_linear"]

CHECK_EVERY = 8   # epochs between certificates (each costs about what an epoch of mini-batch steps does)


@dataclass
class SgdResult:
    w: torch.Tensor          # (trials, d) end point
    loss: torch.Tensor       # (trials,) final training loss 1/(2n) ||X w - y||^2
    distance: torch.Tensor   # (trials,) certified bound on ||w - w_LS||, w_LS the least-squares solution nearest w(0)
    epochs: int
    converged: torch.Tensor  # (trials,) bool: distance <= tol
    step: torch.Tensor       # (trials,) the constant step used


def sgd_linear(X: torch.Tensor, y: torch.Tensor, w0: torch.Tensor, gen: torch.Generator, *, batch: int = 1,
               tol: float = 1e-8, max_epochs: int = 20000) -> SgdResult:
    """Constant-step SGD from ``w0`` (trials, d) on the rows of X (trials, n, d), labels y (trials, n).

    Runs whole epochs until, in every trial, the distance to w_LS (the least-squares
    solution in w0 + row(X), i.e. w0 + X^+ (y - X w0)) is certified to be at most
    ``tol``, or ``max_epochs``.  The certificate: w - w_LS lies in row(X) and
    X^T X (w - w_LS) = X^T (X w - y), so ||w - w_LS|| <= ||X^T (X w - y)|| / lambda_min^+(X X^T).
    It is evaluated every CHECK_EVERY epochs.
    """
    trials, n, d = X.shape
    batch = min(batch, n)
    # Every update is a combination of rows, so w = w0 + X^T a and SGD runs on a (trials, n): a step on the
    # rows B reads r_B = (G a + b)_B with G = X X^T, b = X w0 - y, and sets a_B -= step r_B / |B| -- the
    # same iterates as the d-dimensional updates, at O(|B| n) instead of O(|B| d) per step.
    gram = X @ X.transpose(-1, -2)
    top = decompose(torch.linalg.eigvalsh, gram)[..., -1]                          # lambda_max(X X^T)
    floor = smallest_positive_eigenvalue(gram)
    step = batch / torch.minimum(top, batch * gram.diagonal(dim1=-2, dim2=-1).max(-1).values)
    offset = (X @ w0.unsqueeze(-1)).squeeze(-1) - y
    # the step folded into G's rows and b once, so that a step is one row gather, one product and one scatter
    scaled_gram, scaled_offset = step.view(-1, 1, 1) * gram, step.view(-1, 1) * offset

    def certify(coef):
        residual = (gram @ coef.unsqueeze(-1)).squeeze(-1) + offset
        gradient = (X.transpose(-1, -2) @ residual.unsqueeze(-1)).squeeze(-1)
        return 0.5 * residual.pow(2).mean(-1), gradient.norm(dim=-1) / floor

    a = torch.zeros(trials, n, dtype=X.dtype, device=X.device)
    epochs = 0
    loss, distance = certify(a)
    while epochs < max_epochs and bool((distance > tol).any()):
        for _ in range(min(CHECK_EVERY, max_epochs - epochs)):
            _epoch(scaled_gram, a, scaled_offset, batch, gen)
        epochs += min(CHECK_EVERY, max_epochs - epochs)
        loss, distance = certify(a)
    w = w0 + (X.transpose(-1, -2) @ a.unsqueeze(-1)).squeeze(-1)
    return SgdResult(w, loss, distance, epochs, distance <= tol, step)


def _epoch(scaled_gram, a, scaled_offset, batch, gen):
    """One pass over the rows in a fresh random order, updating the coefficients ``a`` in place.

    ``a`` stays in the rows' own order: each mini-batch gathers its rows of step * G (one contiguous copy of
    |B| rows per trial, where permuting all of G every epoch copied n^2 entries per trial) and scatters its
    update back, so the iterates are those of the loop over the permuted rows, rounding aside."""
    trials, n = a.shape
    order = torch.argsort(torch.rand(trials, n, generator=gen, device=gen.device), dim=-1)
    flat_rows = scaled_gram.view(trials * n, n)
    first_row = torch.arange(trials, device=a.device).unsqueeze(-1) * n
    for first in range(0, n, batch):
        last = min(first + batch, n)
        rows = order[:, first:last]
        block = flat_rows.index_select(0, (first_row + rows).view(-1)).view(trials, last - first, n)
        residual = (block * a.unsqueeze(1)).sum(-1) + scaled_offset.gather(1, rows)
        a.scatter_add_(1, rows, residual.mul_(-1.0 / (last - first)))
