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
from typing import Callable

import torch

__all__ = ["Objective", "TrainResult", "balance_margin", "empirical", "end_to_end", "init_weights", "population",
           "train", "train_two_layer"]


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
    loss: torch.Tensor          # (trials,) final objective (1/(2n) ||X beta - y||^2 for data)
    grad_norm: torch.Tensor     # (trials,) final norm of the gradient with respect to beta
    steps: int
    converged: torch.Tensor     # (trials,) bool: grad_norm <= tol * ||b||


@dataclass
class Objective:
    """A quadratic loss of the end-to-end vector, 0.5 beta^T H beta - b^T beta + const, given by
    how to apply H, the vector b, lambda_max(H), and the loss itself computed from its
    residual (not from the expanded quadratic, which cancels catastrophically near 0)."""

    apply_h: Callable[[torch.Tensor], torch.Tensor]
    b: torch.Tensor             # (trials, d)
    lam_max: torch.Tensor       # (trials,)
    loss: Callable[[torch.Tensor], torch.Tensor]

    def gradient(self, beta: torch.Tensor) -> torch.Tensor:
        return self.apply_h(beta) - self.b


def empirical(X: torch.Tensor, y: torch.Tensor) -> Objective:
    """The papers' training objective 1/(2n) ||y - X beta||^2 on data (X, y)."""
    n = X.shape[-2]
    Xt = X.transpose(-1, -2)
    return Objective(
        apply_h=lambda beta: (Xt @ (X @ beta.unsqueeze(-1))).squeeze(-1) / n,
        b=(Xt @ y.unsqueeze(-1)).squeeze(-1) / n,
        lam_max=torch.linalg.eigvalsh(Xt @ X / n)[..., -1] if n >= X.shape[-1]
        else torch.linalg.eigvalsh(X @ Xt / n)[..., -1],
        loss=lambda beta: ((X @ beta.unsqueeze(-1)).squeeze(-1) - y).pow(2).sum(1) / (2 * n),
    )


def population(target: torch.Tensor) -> Objective:
    """The population loss for x ~ N(0, I) and noiseless labels x^T target:
    E (x^T beta - x^T target)^2 / 2 = ||beta - target||^2 / 2 (Features-are-fate eq. 4)."""
    ones = torch.ones(target.shape[0], dtype=target.dtype, device=target.device)
    return Objective(apply_h=lambda beta: beta, b=target, lam_max=ones, loss=lambda beta: (beta - target).pow(2).sum(1) / 2)


def _smoothness(weights: list[torch.Tensor]) -> torch.Tensor:
    """sum_l prod_{k != l} ||W_k||_F^2 per trial: with lambda_max(H) it bounds the
    curvature of the loss along the current weights (Frobenius >= operator norm)."""
    sq = torch.stack([w.flatten(1).pow(2).sum(1) for w in weights])  # (L, trials)
    total = torch.zeros_like(sq[0])
    for l in range(len(weights)):
        total = total + torch.cat([sq[:l], sq[l + 1:]]).prod(dim=0)
    return total


def train(
    objective: Objective,
    weights: list[torch.Tensor],
    *,
    tol: float = 1e-10,
    max_steps: int = 20000,
    step_scale: float = 0.5,
    frozen: tuple[int, ...] = (),
    check_every: int = 25,
    history: list | None = None,
) -> TrainResult:
    """Full-batch gradient descent until ||grad_beta|| <= tol * ||b|| for every trial.

    Step size per trial and step: step_scale / (lambda_max(H) * s_t) with s_t the
    curvature bound of :func:`_smoothness` (floored at 1), i.e. a fixed fraction
    of the stable step of the current iterate.  Gradient flow is the step -> 0
    limit; GD's limit point is what the callers check (steps are sped up, the
    objective is not changed).  ``frozen`` lists 0-based layer indices that are
    not updated.  If ``history`` is a list, (step, beta) is appended to it at
    every convergence check, to show how a quantity moves as training lengthens.
    """
    weights = [w.clone() for w in weights]
    scale = objective.b.norm(dim=1)
    depth = len(weights)
    steps = 0
    while True:
        beta = end_to_end(weights)
        grad_beta = objective.gradient(beta).unsqueeze(-1)              # (trials, d, 1)
        grad_norm = grad_beta.squeeze(-1).norm(dim=1)
        if steps % check_every == 0 or steps >= max_steps:
            if history is not None:
                history.append((steps, beta))
            if bool((grad_norm <= tol * scale).all()) or steps >= max_steps:
                break
        lr = (step_scale / (objective.lam_max * _smoothness(weights).clamp(min=1.0))).view(-1, 1, 1)
        # suffix[l] = W_{l+1} ... W_L; prefix_t runs through (W_1 ... W_{l-1})^T g
        suffix = [None] * depth
        acc = None
        for l in reversed(range(depth)):
            suffix[l] = acc
            acc = weights[l] if acc is None else weights[l] @ acc
        prefix_t = grad_beta
        updates = []
        for l in range(depth):
            updates.append(prefix_t if suffix[l] is None else prefix_t @ suffix[l].transpose(-1, -2))
            if l + 1 < depth:
                prefix_t = weights[l].transpose(-1, -2) @ prefix_t
        for l in range(depth):
            if l not in frozen:
                weights[l] = weights[l] - lr * updates[l]
        steps += 1
    return TrainResult(weights, beta, objective.loss(beta), grad_norm, steps, grad_norm <= tol * scale)


def train_two_layer(
    X: torch.Tensor,
    y: torch.Tensor,
    weights: list[torch.Tensor],
    *,
    tol: float = 1e-10,
    max_steps: int = 20000,
    step_scale: float = 0.5,
    check_every: int = 25,
    history: list | None = None,
) -> TrainResult:
    """:func:`train` on 1/(2n) ||y - X W_1 w_2||^2 for L = 2, in O(n d) per step instead of O(n d^2).

    Exact reformulation: the gradient of W_1 is X^T r w_2^T / n, so
    W_1(t) = W_1(0) + X^T M(t) with M of shape (n, d), and X W_1 = F evolves as
    F <- F - lr (X X^T r) w_2^T / n.  Only F, M and w_2 are stored and updated;
    W_1 is rebuilt once at the end.  The step-size rule is :func:`train`'s, with
    ||W_1||_F^2 = ||w_2||^2 + (||W_1(0)||_F^2 - ||w_2(0)||^2), the balance that
    gradient flow conserves (GD's drift from it is O(lr^2) and only sets the step).
    """
    W1, w2 = weights[0], weights[1].squeeze(-1)
    n = X.shape[-2]
    Xt = X.transpose(-1, -2)
    gram = X @ Xt                                                       # (trials, n, n)
    F = X @ W1                                                          # (trials, n, d)
    M = torch.zeros_like(F)
    objective = empirical(X, y)
    lam_max = objective.lam_max
    scale = objective.b.norm(dim=1)
    balance = W1.flatten(1).pow(2).sum(1) - w2.pow(2).sum(1)
    steps = 0
    while True:
        residual = (F @ w2.unsqueeze(-1)).squeeze(-1) - y               # X beta - y
        grad_w2 = (F.transpose(-1, -2) @ residual.unsqueeze(-1)).squeeze(-1) / n
        if steps % check_every == 0 or steps >= max_steps:
            grad_norm = (Xt @ residual.unsqueeze(-1)).squeeze(-1).norm(dim=1) / n
            if history is not None:
                history.append((steps, (W1 @ w2.unsqueeze(-1)).squeeze(-1) + (Xt @ (M @ w2.unsqueeze(-1))).squeeze(-1)))
            if bool((grad_norm <= tol * scale).all()) or steps >= max_steps:
                break
        w2_sq = w2.pow(2).sum(1)
        lr = step_scale / (lam_max * (2 * w2_sq + balance).clamp(min=1.0))
        coef = (lr / n).view(-1, 1, 1) * residual.unsqueeze(-1)                      # lr r / n
        M = M - coef * w2.unsqueeze(-2)                                              # rank-one updates:
        F = F - (gram @ coef) * w2.unsqueeze(-2)                                     # O(n^2 + n d)
        w2 = w2 - lr.view(-1, 1) * grad_w2
        steps += 1
    W1 = W1 + Xt @ M
    beta = (W1 @ w2.unsqueeze(-1)).squeeze(-1)
    return TrainResult([W1, w2.unsqueeze(-1)], beta, objective.loss(beta), grad_norm, steps, grad_norm <= tol * scale)
