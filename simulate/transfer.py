"""The transfer procedures of deep linear networks, batched over independent target draws.

Pretraining runs gradient descent on the population loss of the source task
(exact for x ~ N(0, I): 0.5 ||beta - beta_s||^2); the target stage uses n noisy
samples and one of: training from scratch, linear transfer (only W_L, from its
pretrained value), ridge linear transfer (closed form, eq. 121 of Features are
fate), or fine-tuning every layer from the pretrained weights.

Each function returns what it trained or estimated; risks are computed by the
caller as ||beta - beta_t||^2 (the excess population risk for x ~ N(0, I)).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from simulate.data import gaussian_design, task_pair
from simulate.estimators import min_norm_solution
from simulate.linear_nets import (TrainResult, empirical, end_to_end, init_weights, population, train,
                                  train_two_layer)

__all__ = ["TargetDraws", "draw_target", "pretrain", "scratch", "fine_tune", "feature_map",
           "linear_transfer", "linear_transfer_pinv", "ridge_transfer"]

STEP_SCALE = 1.0  # fraction of the curvature-bounded stable step (see linear_nets.train)
# Fine-tuning's limit depends on the path (the null-space part of W_1 w_2 is rescaled as
# w_2 grows), so it integrates gradient flow with RK4 (limit error O(h^4)); GD's O(h) bias
# is measurable there.  Scratch training's limit is X^+ y up to O(alpha) whatever the path,
# and linear transfer is convex, so they use plain GD.  Pretraining uses RK4 so that the
# pretrained factors are the flow's.
FLOW = "rk4"


@dataclass
class TargetDraws:
    X: torch.Tensor        # (trials, n, d)
    y: torch.Tensor        # (trials, n)
    beta_s: torch.Tensor   # (d,) shared source task
    beta_t: torch.Tensor   # (trials, d) target task, beta_s . beta_t = cos(theta)


def draw_target(trials: int, n: int, d: int, theta: float, sigma: float, gen: torch.Generator) -> TargetDraws:
    """One source task and ``trials`` independent target data sets.

    The source is shared (it is what pretraining sees); each trial draws its own
    target direction at angle theta from it, its own X and its own noise, so by
    rotation invariance the trials are i.i.d. draws of the paper's E_D.
    """
    beta_s, _ = task_pair(1, d, theta, gen)
    beta_s = beta_s[0]
    other = torch.randn(trials, d, generator=gen, device=gen.device, dtype=torch.float64)
    other = other - (other @ beta_s).unsqueeze(-1) * beta_s
    other = other / other.norm(dim=1, keepdim=True)
    beta_t = torch.cos(torch.tensor(theta, dtype=torch.float64)) * beta_s + torch.sin(torch.tensor(theta, dtype=torch.float64)) * other
    X = gaussian_design(trials, n, d, gen)
    noise = sigma * torch.randn(trials, n, generator=gen, device=gen.device, dtype=torch.float64)
    return TargetDraws(X, (X @ beta_t.unsqueeze(-1)).squeeze(-1) + noise, beta_s, beta_t)


def pretrain(beta_s: torch.Tensor, depth: int, alpha: float, init: str, gen: torch.Generator, *,
             networks: int = 1, tol: float = 1e-12, max_steps: int = 100000, history=None,
             method: str = FLOW) -> TrainResult:
    """Gradient flow (RK4, or GD with ``method="gd"``) on the source population loss from alpha * Wbar (Lemma 3.3)."""
    d = beta_s.shape[-1]
    weights = init_weights(networks, d, depth, alpha, init, gen)
    target = beta_s.expand(networks, d)
    return train(population(target), weights, tol=tol, max_steps=max_steps, step_scale=STEP_SCALE, history=history,
                 method=method)


def _fit(X, y, weights, tol, max_steps, loss_tol=None, history=None, method="gd") -> TrainResult:
    if len(weights) == 2:
        return train_two_layer(X, y, weights, tol=tol, max_steps=max_steps, step_scale=STEP_SCALE,
                               loss_tol=loss_tol, history=history, method=method)
    if loss_tol is not None:
        raise ValueError("loss_tol is only offered by the two-layer trainer")
    return train(empirical(X, y), weights, tol=tol, max_steps=max_steps, step_scale=STEP_SCALE, history=history,
                 method=method)


def scratch(draws: TargetDraws, depth: int, alpha: float, init: str, gen: torch.Generator, *,
            tol: float = 1e-10, max_steps: int = 100000, loss_tol=None) -> TrainResult:
    """Training on the target data from a fresh small initialisation."""
    trials, _, d = draws.X.shape
    weights = init_weights(trials, d, depth, alpha, init, gen)
    return _fit(draws.X, draws.y, weights, tol, max_steps, loss_tol)


def fine_tune(draws: TargetDraws, pretrained: list[torch.Tensor], *, tol: float = 1e-10,
              max_steps: int = 100000, loss_tol=None, history=None) -> TrainResult:
    """Training every layer on the target data from the pretrained weights."""
    trials = draws.X.shape[0]
    weights = [w.expand(trials, *w.shape[1:]) for w in pretrained]
    return _fit(draws.X, draws.y, weights, tol, max_steps, loss_tol, history, method=FLOW)


def feature_map(pretrained: list[torch.Tensor]) -> torch.Tensor:
    """Phi = W_1 ... W_{L-1} of shape (networks, d, d); the identity for L = 1."""
    product = pretrained[0]
    for w in pretrained[1:-1]:
        product = product @ w
    if len(pretrained) == 1:
        return torch.eye(pretrained[0].shape[1], dtype=product.dtype, device=product.device).expand(
            product.shape[0], -1, -1)
    return product


def linear_transfer(draws: TargetDraws, pretrained: list[torch.Tensor], *, tol: float = 1e-10,
                    max_steps: int = 100000) -> tuple[torch.Tensor, TrainResult]:
    """Only W_L is trained, by gradient descent from its pretrained value, on features X Phi.

    After pretraining Phi is rank one up to O(alpha) (Thm 3.4), so the loss is flat
    (curvature O(alpha^2)) in all but one direction of W_L and GD converges only
    along the top singular direction of X Phi within any practical time; the stop
    is when the gradient there is <= tol.  (``linear_transfer_pinv`` is the other
    order of limits: the exact min-norm solution at fixed alpha.)
    Returns (beta, fit) with beta = Phi W_L.
    """
    trials = draws.X.shape[0]
    phi = feature_map(pretrained).expand(trials, -1, -1)
    objective = empirical(draws.X @ phi, draws.y)
    # Top right-singular vector of X Phi by power iteration (the spectral gap is 1 : alpha^2).
    top = pretrained[-1].squeeze(-1).expand(trials, -1)
    for _ in range(4):
        top = objective.apply_h(top)
        top = top / top.norm(dim=1, keepdim=True)
    scale = (objective.b * top).sum(1).abs()
    lr = (1.0 / objective.lam_max).unsqueeze(-1)
    w = pretrained[-1].squeeze(-1).expand(trials, -1)
    steps = 0
    while True:
        grad = objective.gradient(w)
        along_top = (grad * top).sum(1).abs()
        converged = along_top <= tol * scale
        if bool(converged.all()) or steps >= max_steps:
            break
        w = w - lr * grad
        steps += 1
    beta = (phi @ w.unsqueeze(-1)).squeeze(-1)
    return beta, TrainResult([w.unsqueeze(-1)], beta, objective.loss(w), along_top, steps, converged)


def linear_transfer_pinv(draws: TargetDraws, pretrained: list[torch.Tensor]) -> torch.Tensor:
    """beta = Phi (X Phi)^+ y: min-norm W_L at fixed alpha (t -> oo before alpha -> 0).

    Uses an SVD-based least-squares solve, since X Phi has n - 1 singular values O(alpha).
    """
    trials = draws.X.shape[0]
    phi = feature_map(pretrained).expand(trials, -1, -1)
    features = draws.X @ phi
    solution = torch.linalg.pinv(features, rtol=1e-14) @ draws.y.unsqueeze(-1)
    return (phi @ solution).squeeze(-1)


def ridge_transfer(draws: TargetDraws, pretrained: list[torch.Tensor], lam: float) -> torch.Tensor:
    """beta = Phi W_L with W_L = (Phi^T X^T X Phi + n lam I)^{-1} Phi^T X^T y (eqs. 14, 121).

    Solved in the n-dimensional dual form (Woodbury): W_L = F^T (F F^T + n lam I)^{-1} y, F = X Phi.
    """
    trials, n, _ = draws.X.shape
    phi = feature_map(pretrained).expand(trials, -1, -1)
    features = draws.X @ phi
    gram = features @ features.transpose(-1, -2) + n * lam * torch.eye(n, dtype=features.dtype, device=features.device)
    dual = torch.linalg.solve(gram, draws.y.unsqueeze(-1))
    return (phi @ (features.transpose(-1, -2) @ dual)).squeeze(-1)
