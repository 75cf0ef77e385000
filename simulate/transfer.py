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

from simulate.data import GAUSSIAN, Distribution, design, task_pair
from simulate.device import decompose
from simulate.estimators import min_norm_solution
from simulate.linear_nets import (TrainResult, empirical, end_to_end, init_weights, population, train,
                                  train_two_layer)

__all__ = ["FLOW_TOL", "FLOW_TOL_RKC", "flow_tolerance", "TargetDraws", "draw_target", "pretrain", "scratch",
           "scratch_continued", "fine_tune", "feature_map", "linear_transfer", "linear_transfer_pinv", "ridge_transfer"]

STEP_SCALE = 1.0  # fraction of the curvature-bounded stable step (see linear_nets.train)
# Fine-tuning's limit depends on the path (the null-space part of W_1 w_2 is rescaled as
# w_2 grows), so it integrates gradient flow with steps chosen by accuracy: for L = 2 with
# adaptive RKC2 steps under a local error control (linear_nets._train_two_layer_rkc), however
# X is conditioned.  RK4 at a fixed fraction of the stable step controls no error: at the corner
# n = 3, d = 13, theta = pi (sigma = 0) its worst of 800 draws missed eq. (5) by 2.5e-3, where
# RKC2 misses it by 3.9e-5; and RKC2 is cheaper (d = 500, n = 250, 20 draws: 931 gradient
# evaluations and 11 s CPU against RK4's 5 100 and 36 s; d = 60 quick rows 2.4-2.9 s against
# 4.9-5.5 s).  Deeper networks with the dense RK4 trainer (limit error O(h^4)).  GD's O(h) bias is
# measurable there.  Scratch training's limit is X^+ y up to O(alpha) whatever the path, so it uses
# GD, or RKC with a loose tolerance where X is ill-conditioned; linear transfer is convex and uses
# plain GD.  Pretraining uses RK4 so that the pretrained factors are the flow's.
FLOW = "rk4"
SCRATCH_RTOL = 1e-4     # end point only: risks agree with rtol 1e-5 to 1e-8 (d = 500, n = 450)
# Above this cond(X X^T) scratch training takes RKC2 instead of GD (~sqrt(cond) evaluations, not ~cond).
RKC_CONDITION = 100.0
FLOW_RTOL = 1e-6        # path: end point within ~3e-5 of RK4 at a quarter step (tests/test_simulate.py)
# How far fine_tune's end point may lie from the flow's limit, relative to ||c P_perp beta(0)|| (the null-space
# part the path decides; eq. (5) of Shachaf et al. is that limit), per integrator: 4x the largest measured.
# L = 2 (RKC2 at FLOW_RTOL): over eleven settings (d = 13-100, n/d 0.1-0.9, theta 0.8-pi, sigma 0-2; 20-500
# draws) at most 4.4e-5 (d = 100, n = 50, theta = 2.8).  L >= 3 (RK4 at STEP_SCALE = 1, O(h^4)): over seven
# settings at d = 60 (gamma 0.1-0.9, sigma 0.2-2) at most 2.6e-4; 2.0e-4 at n = 3, d = 13, theta = pi.
FLOW_TOL_RKC = 2e-4
FLOW_TOL = 2e-3


def flow_tolerance(depth: int) -> float:
    """The integrator allowance of fine_tune's end point at this depth (see FLOW_TOL_RKC, FLOW_TOL)."""
    return FLOW_TOL_RKC if depth == 2 else FLOW_TOL


@dataclass
class TargetDraws:
    X: torch.Tensor        # (trials, n, d)
    y: torch.Tensor        # (trials, n)
    beta_s: torch.Tensor   # (d,) shared source task
    beta_t: torch.Tensor   # (trials, d) target task, beta_s . beta_t = cos(theta)


def draw_target(trials: int, n: int, d: int, theta: float, sigma: float, gen: torch.Generator,
                data: Distribution = GAUSSIAN) -> TargetDraws:
    """One source task and ``trials`` independent target data sets.

    The source is shared (it is what pretraining sees); each trial draws its own
    target direction at angle theta from it, its own X and its own noise, so by
    rotation invariance the trials are i.i.d. draws of the paper's E_D.  The rows of X have
    i.i.d. ``data`` entries (Gaussian in the paper).
    """
    beta_s, _ = task_pair(1, d, theta, gen)
    beta_s = beta_s[0]
    other = torch.randn(trials, d, generator=gen, device=gen.device, dtype=torch.float64)
    other = other - (other @ beta_s).unsqueeze(-1) * beta_s
    other = other / other.norm(dim=1, keepdim=True)
    beta_t = torch.cos(torch.tensor(theta, dtype=torch.float64)) * beta_s + torch.sin(torch.tensor(theta, dtype=torch.float64)) * other
    X = design(trials, n, d, gen, data)
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


def _condition(X: torch.Tensor) -> float:
    """The largest condition number of X X^T over the trials (on the range of X)."""
    singular = decompose(torch.linalg.svdvals, X)
    return float((singular[..., 0] / singular[..., -1]).pow(2).max())


def _fit(X, y, weights, tol, max_steps, rtol, loss_tol=None, history=None, *, two_layer: str,
         deep: str) -> TrainResult:
    """Gradient flow (or GD) on the target data: for L = 2 in the exact two-layer reformulation with
    ``two_layer`` ("gd", "rk4" or "rkc", the latter at relative tolerance ``rtol``), deeper networks with the
    dense trainer and ``deep``."""
    if len(weights) == 2:
        return train_two_layer(X, y, weights, tol=tol, max_steps=max_steps, step_scale=STEP_SCALE, loss_tol=loss_tol,
                               history=history, method=two_layer, rkc_rtol=rtol)
    if loss_tol is not None:
        raise ValueError("loss_tol is only offered by the two-layer trainer")
    return train(empirical(X, y), weights, tol=tol, max_steps=max_steps, step_scale=STEP_SCALE, history=history,
                 method=deep)


def scratch(draws: TargetDraws, depth: int, alpha: float, init: str, gen: torch.Generator, *,
            tol: float = 1e-10, max_steps: int = 100000, loss_tol=None) -> TrainResult:
    """Training on the target data from a fresh small initialisation (GD; RKC2 for L = 2 where X is
    ill-conditioned)."""
    trials, _, d = draws.X.shape
    weights = init_weights(trials, d, depth, alpha, init, gen)
    return _fit(draws.X, draws.y, weights, tol, max_steps, SCRATCH_RTOL, loss_tol,
                two_layer=_scratch_method(draws.X, depth), deep="gd")


def scratch_continued(draws: TargetDraws, fit: TrainResult, *, tol: float, max_steps: int = 100000) -> TrainResult:
    """``scratch``'s training continued from where ``fit`` stopped, to the relative gradient ``tol``."""
    return _fit(draws.X, draws.y, fit.weights, tol, max_steps, SCRATCH_RTOL,
                two_layer=_scratch_method(draws.X, len(fit.weights)), deep="gd")


def _scratch_method(X: torch.Tensor, depth: int) -> str:
    return "rkc" if depth == 2 and _condition(X) > RKC_CONDITION else "gd"


def fine_tune(draws: TargetDraws, pretrained: list[torch.Tensor], *, tol: float = 1e-10,
              max_steps: int = 100000, loss_tol=None, history=None) -> TrainResult:
    """Training every layer on the target data from the pretrained weights (gradient flow: RKC2 for L = 2,
    RK4 deeper)."""
    trials = draws.X.shape[0]
    weights = [w.expand(trials, *w.shape[1:]) for w in pretrained]
    return _fit(draws.X, draws.y, weights, tol, max_steps, FLOW_RTOL, loss_tol, history, two_layer="rkc", deep=FLOW)


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
    # What the stop certifies: along the top direction the loss is quadratic with curvature top^T H top, so W_L is
    # within along_top / curvature of that direction's minimiser, and beta = Phi W_L within ||Phi top|| times that.
    curvature = (top * objective.apply_h(top)).sum(1)
    distance = along_top / curvature * (phi @ top.unsqueeze(-1)).squeeze(-1).norm(dim=1)
    return beta, TrainResult([w.unsqueeze(-1)], beta, objective.loss(w), along_top, steps, converged, distance=distance)


def linear_transfer_pinv(draws: TargetDraws, pretrained: list[torch.Tensor]) -> torch.Tensor:
    """beta = Phi (X Phi)^+ y: min-norm W_L at fixed alpha (t -> oo before alpha -> 0).

    Uses an SVD-based least-squares solve, since X Phi has n - 1 singular values O(alpha).
    """
    trials = draws.X.shape[0]
    phi = feature_map(pretrained).expand(trials, -1, -1)
    features = draws.X @ phi
    solution = decompose(torch.linalg.pinv, features, rtol=1e-14) @ draws.y.unsqueeze(-1)
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
