"""What a trainer's stopping point certifies about the quantity a check measures.

A trainer stops at a small gradient, not at its limit; these turn the gradient it stopped at into a bound on how
far the end point, and a squared distance measured from it (an excess risk), can still be from the limit's.
"""

from __future__ import annotations

import torch

from simulate.device import decompose
from simulate.estimators import smallest_positive_eigenvalue

__all__ = ["risk_shift", "row_space_distance", "population_path_length", "feature_shift", "log_ratio_shift",
           "log_misalignment_shift", "ridge_shift"]


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


# --- pretraining on the population loss: how far GD's weights can still move --------------------------------------

def population_path_length(grad_norm: torch.Tensor, weights: list[torch.Tensor]) -> torch.Tensor:
    """Per network, a bound on how far GD on the population loss 0.5 ||beta - beta_s||^2, stopped where the
    gradient in beta, g = beta - beta_s, has norm ``grad_norm``, can still move its weights (W_1, ..., W_L).

    The gradient in W_1 is g (W_2 ... W_L)^T, so ||grad_W||^2 >= mu ||g||^2 = 2 mu loss with mu = ||W_2 ... W_L||^2
    (a Polyak-Lojasiewicz inequality).  A GD step h within the curvature bound lowers the loss by at least
    (h/2) ||grad_W||^2 (the descent lemma), so sqrt(loss) falls by at least h ||grad_W|| sqrt(2 mu) / 4 a step, and
    the remaining path sum h ||grad_W|| is at most 2 sqrt(2 loss / mu) = 2 ||g|| / sqrt(mu): to first order in that
    length, over which mu changes by as little.  Gradient flow (which RK4 pretraining integrates) travels at most
    half of it, so the bound holds for both."""
    tail = weights[1]
    for w in weights[2:]:
        tail = tail @ w
    return 2 * grad_norm / tail.flatten(1).norm(dim=1)


def feature_shift(path_length: torch.Tensor, weights: list[torch.Tensor]) -> torch.Tensor:
    """Per network, a bound on ||Delta Phi||_op for Phi = W_1 ... W_{L-1} when the weights (W_1, ..., W_L) move
    along a path of length at most ``path_length`` (Frobenius, all layers together): to first order
    sum_l ||Delta W_l|| prod_{k != l, k < L} ||W_k||_op, at most the length times the root sum of squares of the
    products (Cauchy-Schwarz over the layers)."""
    norms = [decompose(torch.linalg.matrix_norm, w, ord=2) for w in weights[:-1]]
    total = torch.zeros_like(path_length)
    for skipped in range(len(norms)):
        product = torch.ones_like(path_length)
        for index, norm in enumerate(norms):
            if index != skipped:
                product = product * norm
        total = total + product.square()
    return path_length * total.sqrt()


def log_ratio_shift(shift: torch.Tensor, singular: torch.Tensor) -> torch.Tensor:
    """Per network, the most log(s2/s1) can move when Phi moves by ``shift`` in operator norm: each singular
    value moves by at most that (Weyl), so log s2 by -log(1 - shift/s2) and log s1 by -log(1 - shift/s1)
    (infinite where the shift reaches s2)."""
    s1, s2 = singular[:, 0], singular[:, 1]
    return -torch.log1p(-(shift / s2).clamp(max=1)) - torch.log1p(-(shift / s1).clamp(max=1))


def log_misalignment_shift(shift: torch.Tensor, singular: torch.Tensor, misalignment: torch.Tensor) -> torch.Tensor:
    """Per network, the most log m can move, m = 1 - cos^2(u_1, direction) = sin^2 of their angle, when Phi moves
    by ``shift``: u_1 turns by an angle whose sine is at most shift / (s1 - s2 - shift) (Wedin), so sin of the angle
    to the direction moves by at most that much, and log m by 2 |log(1 - that / sqrt m)| (infinite where it
    reaches sqrt m)."""
    gap = singular[:, 0] - singular[:, 1] - shift
    turn = torch.where(gap > 0, shift / gap, torch.full_like(shift, torch.inf))
    return -2 * torch.log1p(-(turn / misalignment.sqrt()).clamp(max=1))


def ridge_shift(shift: torch.Tensor, phi: torch.Tensor, X: torch.Tensor, y: torch.Tensor, lam: float) -> torch.Tensor:
    """Per draw, a bound on how far the ridge estimator on the features Phi, beta = K X^T A^{-1} y with K = Phi Phi^T
    and A = X K X^T + n lam I (eq. 121), moves when Phi moves by at most ``shift`` in operator norm.

    K moves by at most dK = shift (2 ||Phi|| + shift); to first order in it beta moves by
    dK X^T A^{-1} y - K X^T A^{-1} X dK X^T A^{-1} y, and ||K X^T A^{-1} X|| <= ||Phi|| ||X|| / sqrt(n lam), since
    ||K^(1/2) X^T A^(-1/2)|| <= 1 and A >= n lam I: ||d beta|| <= dK ||X^T A^{-1} y|| (1 + ||Phi|| ||X|| / sqrt(n lam))."""
    n = X.shape[-2]
    phi_norm = decompose(torch.linalg.matrix_norm, phi, ord=2)
    features = X @ phi
    gram = features @ features.transpose(-1, -2) + n * lam * torch.eye(n, dtype=X.dtype, device=X.device)
    v = (X.transpose(-1, -2) @ torch.linalg.solve(gram, y.unsqueeze(-1))).squeeze(-1).norm(dim=-1)
    x_norm = decompose(torch.linalg.matrix_norm, X, ord=2)
    moved = shift * (2 * phi_norm + shift)
    return moved * v * (1 + phi_norm * x_norm / (n * lam) ** 0.5)
