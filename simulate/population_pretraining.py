"""Pretraining deep linear networks on a source task's population loss, and what the trained weights show.

For x ~ N(0, I) the population loss of the source task is 0.5 ||beta - beta_s||^2 (+ const), so pretraining
needs no samples: its gradient is exact, and a network's end-to-end vector beta = W_1 ... W_L and its
features Phi = W_1 ... W_{L-1} are measured directly on the trained weights.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch

from simulate.convergence import feature_shift, log_misalignment_shift, log_ratio_shift, population_path_length
from simulate.data import unit_vectors
from simulate.device import decompose
from simulate.linear_nets import TrainResult, balance_margin, init_weights, population, train
from simulate.transfer import feature_map, pretrain

__all__ = ["Recovery", "recover_source", "FeatureLadder", "feature_ladder"]


@dataclass
class Recovery:
    beta_s: torch.Tensor      # (d,) the source task, a uniform unit vector
    distance: torch.Tensor    # (networks,) ||beta(t_end) - limit(beta_s)||
    along: list[dict]         # {"step", "max_distance"} at about ``points`` recorded steps of training
    margin_start: float       # min over the networks of eq. (22)'s balance margin / alpha^2 at the init
    margin_end: float         # the same after training (conserved by gradient flow, up to RK4's error)
    fit: TrainResult


def recover_source(networks: int, d: int, depth: int, alpha: float, init: str, gen: torch.Generator,
                   limit: Callable[[torch.Tensor], torch.Tensor], points: int = 8) -> Recovery:
    """Draw a source task beta_s and train ``networks`` networks from alpha * Wbar (``init``: "eq22" or
    "gaussian") by gradient flow (RK4) on its population loss until the gradient is <= 1e-12 ||beta_s||.

    ``limit(beta_s)`` is the end-to-end vector the networks are claimed to reach; the distance to it is
    measured at the end and along the way (its largest value over the networks at about ``points`` steps).
    """
    beta_s = unit_vectors(1, d, gen)[0]
    weights = init_weights(networks, d, depth, alpha, init, gen)
    margin = (balance_margin(weights) / alpha ** 2).min().item()
    history = []
    fit = train(population(beta_s.expand(networks, -1)), weights, tol=1e-12, max_steps=200000, step_scale=1.0,
                history=history, method="rk4")
    claimed = limit(beta_s)
    distance = (fit.beta - claimed).norm(dim=1)
    along = [{"step": s, "max_distance": (b - claimed).norm(dim=1).max().item()}
             for s, b in history[:: max(1, len(history) // points)]]
    drift = (balance_margin(fit.weights) / alpha ** 2).min().item()
    return Recovery(beta_s, distance, along, margin, drift, fit)


@dataclass
class FeatureLadder:
    ratios: list[torch.Tensor]          # per alpha reached: s2/s1 of W_1 ... W_{L-1}, per network
    misalignment: list[torch.Tensor]    # per alpha reached: 1 - cos^2(top left singular vector, direction), >= 1e-300
    rows: list[dict]                    # per alpha reached: {"alpha", "s2_over_s1", "one_minus_alignment"} (means)
    unconverged: float | None = None    # the alpha at which pretraining did not converge (the ladder stops there)
    # per alpha reached, per network: how far log(s2/s1) and log(misalignment) can still move from where GD
    # stopped to its limit (simulate.convergence; inf where the bound reaches the quantity itself)
    ratio_shifts: list[torch.Tensor] | None = None
    misalignment_shifts: list[torch.Tensor] | None = None


def feature_ladder(source: torch.Tensor, direction: torch.Tensor, depth: int, alphas, init: str,
                   gen: torch.Generator, networks: int, progress: Callable[[str], None] | None = None) -> FeatureLadder:
    """Pretrain ``networks`` networks on the population loss of ``source`` at each init scale in ``alphas``
    (in order, fresh inits from ``gen``) and measure how close their features Phi = W_1 ... W_{L-1} are to
    rank one along ``direction`` (normalised here): the ratio of the top two singular values of Phi, and the
    misalignment of its top left singular vector.  The misalignment is clamped at 1e-300 so that its log stays
    finite."""
    direction = direction / direction.norm()
    ratios, misalign, rows, ratio_shifts, misalign_shifts = [], [], [], [], []
    for alpha in alphas:
        if progress is not None:
            progress(f"pretraining at alpha={alpha:.0e}")
        # GD: from alpha -> 0 the escape from the saddle takes ~alpha^-(L-2) steps, 4x cheaper
        # without RK4's stages; the rank-one structure is a property of the limit, not of the path.
        fit = pretrain(source, depth, alpha, init, gen, networks=networks, method="gd")
        if not bool(fit.converged.all()):
            return FeatureLadder(ratios, misalign, rows, unconverged=alpha)
        U, S, _ = decompose(torch.linalg.svd, feature_map(fit.weights))
        ratio = S[:, 1] / S[:, 0]
        off = 1 - (U[:, :, 0] @ direction).pow(2)                         # 1 - cos^2(top feature, direction)
        ratios.append(ratio)
        misalign.append(off.clamp(min=1e-300))
        rows.append({"alpha": alpha, "s2_over_s1": ratio.mean().item(), "one_minus_alignment": off.mean().item()})
        shift = feature_shift(population_path_length(fit.grad_norm, fit.weights), fit.weights)
        ratio_shifts.append(log_ratio_shift(shift, S))
        misalign_shifts.append(log_misalignment_shift(shift, S, misalign[-1]))
    return FeatureLadder(ratios, misalign, rows, ratio_shifts=ratio_shifts, misalignment_shifts=misalign_shifts)
