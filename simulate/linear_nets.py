"""Deep linear networks f(x) = x^T W_1 W_2 ... W_L trained by full-batch gradient descent.

Shapes: W_l is (trials, d, d) for l < L and W_L is (trials, d, 1), so a batch of
independent networks trains as one tensor program.  L = 1 is plain linear
regression with a single (trials, d, 1) weight.

The loss is the papers' empirical objective 1/(2n) ||X beta - y||^2 with
beta = W_1 ... W_L.  Its gradient with respect to W_l is
(W_1 ... W_{l-1})^T g (W_{l+1} ... W_L)^T with g = X^T (X beta - y) / n, which
is what :func:`train` computes, without autograd, from prefix and suffix products.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

__all__ = ["TrainResult", "init_weights", "balance_margin", "end_to_end", "train"]


def init_weights(trials: int, d: int, depth: int, alpha: float, kind: str, gen: torch.Generator) -> list[torch.Tensor]:
    """alpha * Wbar_l for l = 1..L.

    kind = "gaussian": i.i.d. N(0, 1/d) entries, the paper's experiments (App. D.1);
        for L >= 2 it does *not* meet eq. (22), because the smallest singular
        value of a square Gaussian matrix is O(1/sqrt(d)) - see :func:`balance_margin`.
    kind = "eq22": Wbar_l = sqrt(L - l + 1) Q_l with Q_l Haar-orthogonal (l < L) and
        Wbar_L a unit vector, so Wbar_l^T Wbar_l - Wbar_{l+1} Wbar_{l+1}^T >= I:
        eq. (22) with lambda = 1.
    """
    opts = dict(generator=gen, device=gen.device, dtype=torch.float64)
    weights = []
    for layer in range(1, depth + 1):
        cols = 1 if layer == depth else d
        if kind == "gaussian":
            w = torch.randn(trials, d, cols, **opts) / math.sqrt(d)
        elif kind == "eq22":
            if layer == depth:
                w = torch.randn(trials, d, 1, **opts)
                w = w / w.norm(dim=1, keepdim=True)
            else:
                q, r = torch.linalg.qr(torch.randn(trials, d, d, **opts))
                q = q * torch.sign(torch.diagonal(r, dim1=-2, dim2=-1)).unsqueeze(-2)  # Haar
                w = math.sqrt(depth - layer + 1) * q
        else:
            raise ValueError(f"unknown initialisation {kind!r} (choose gaussian or eq22)")
        weights.append(alpha * w)
    return weights


def balance_margin(weights: list[torch.Tensor]) -> torch.Tensor:
    """Per trial, min over l of lambda_min(W_l^T W_l - W_{l+1} W_{l+1}^T).

    Eq. (22) asks this to be >= alpha^2 lambda > 0 at initialisation; gradient
    flow conserves the matrices, so the margin also measures how far gradient
    descent's discretisation has drifted from the flow.
    """
    margins = [
        torch.linalg.eigvalsh(a.transpose(-1, -2) @ a - b @ b.transpose(-1, -2))[..., 0]
        for a, b in zip(weights[:-1], weights[1:])
    ]
    if not margins:
        return torch.full((weights[0].shape[0],), math.inf, dtype=weights[0].dtype)
    return torch.stack(margins).amin(dim=0)


def end_to_end(weights: list[torch.Tensor]) -> torch.Tensor:
    """beta = W_1 ... W_L, shape (trials, d)."""
    beta = weights[-1]
    for w in reversed(weights[:-1]):
        beta = w @ beta
    return beta.squeeze(-1)


@dataclass
class TrainResult:
    weights: list[torch.Tensor]
    beta: torch.Tensor          # (trials, d) end-to-end vector
    loss: torch.Tensor          # (trials,) final 1/(2n) ||X beta - y||^2
    grad_norm: torch.Tensor     # (trials,) final ||X^T (X beta - y)|| / n
    steps: int
    converged: torch.Tensor     # (trials,) bool: grad_norm <= tol * ||X^T y|| / n


def _smoothness(weights: list[torch.Tensor]) -> torch.Tensor:
    """sum_l prod_{k != l} ||W_k||_F^2 per trial: with lambda_max(X^T X / n) it bounds
    the curvature of the loss along the current weights (Frobenius >= operator norm)."""
    sq = torch.stack([w.flatten(1).pow(2).sum(1) for w in weights])  # (L, trials)
    total = torch.zeros_like(sq[0])
    for l in range(len(weights)):
        total = total + torch.cat([sq[:l], sq[l + 1:]]).prod(dim=0)
    return total


def train(
    X: torch.Tensor,
    y: torch.Tensor,
    weights: list[torch.Tensor],
    *,
    tol: float = 1e-10,
    max_steps: int = 20000,
    step_scale: float = 0.5,
    frozen: tuple[int, ...] = (),
    check_every: int = 25,
    history: list | None = None,
) -> TrainResult:
    """Full-batch gradient descent until ||X^T r|| / n <= tol * ||X^T y|| / n for every trial.

    Step size per trial and step: step_scale / (lambda_max(X^T X / n) * s_t) with
    s_t the curvature bound of :func:`_smoothness` (floored at 1), i.e. a fixed
    fraction of the stable step of the current iterate.  Gradient flow is the
    step -> 0 limit; the limit point of GD from these steps is checked against it
    by the callers (training paths are not rescaled, only sped up).
    ``frozen`` lists 0-based layer indices that are not updated.  If ``history`` is a
    list, (step, beta) is appended to it at every convergence check, to show how a
    measured quantity moves as training lengthens.
    """
    n = X.shape[-2]
    weights = [w.clone() for w in weights]
    Xt = X.transpose(-1, -2)
    lam_max = torch.linalg.eigvalsh(Xt @ X / n)[..., -1]
    target_scale = (Xt @ y.unsqueeze(-1)).squeeze(-1).norm(dim=1) / n
    depth = len(weights)
    steps = 0
    while True:
        beta = end_to_end(weights)
        residual = (X @ beta.unsqueeze(-1)).squeeze(-1) - y
        grad_beta = (Xt @ residual.unsqueeze(-1)) / n                  # (trials, d, 1)
        grad_norm = grad_beta.squeeze(-1).norm(dim=1)
        if steps % check_every == 0 or steps >= max_steps:
            if history is not None:
                history.append((steps, beta))
            done = grad_norm <= tol * target_scale
            if bool(done.all()) or steps >= max_steps:
                break
        lr = (step_scale / (lam_max * _smoothness(weights).clamp(min=1.0))).view(-1, 1, 1)
        # prefix[l] = W_1 ... W_{l-1} (as a left factor), suffix[l] = W_{l+1} ... W_L
        suffix = [None] * depth
        acc = None
        for l in reversed(range(depth)):
            suffix[l] = acc
            acc = weights[l] if acc is None else weights[l] @ acc
        prefix_t = grad_beta                                             # (W_1..W_{l-1})^T g
        updates = []
        for l in range(depth):
            grad = prefix_t if suffix[l] is None else prefix_t @ suffix[l].transpose(-1, -2)
            updates.append(grad)
            if l + 1 < depth:
                prefix_t = weights[l].transpose(-1, -2) @ prefix_t
        for l in range(depth):
            if l not in frozen:
                weights[l] = weights[l] - lr * updates[l]
        steps += 1
    loss = residual.pow(2).sum(1) / (2 * n)
    return TrainResult(weights, beta, loss, grad_norm, steps, grad_norm <= tol * target_scale)
