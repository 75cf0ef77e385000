"""Deep linear networks trained from scratch by gradient descent at a ladder of initialisation scales
alpha, and how far each trained network ends from a target vector (the limit alpha -> 0 of the
implicit bias: Features are fate, Thm 3.5, names X^+ y).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch

from simulate.convergence import row_space_distance
from simulate.data import design, unit_vectors
from simulate.linear_nets import balance_margin, empirical, init_weights, train
from simulate.stats import estimate

__all__ = ["noisy_teacher", "InitScaleLadder", "distance_over_init_scales"]


def noisy_teacher(trials, n, d, sigma, gen, data):
    """X (trials, n, d) with i.i.d. ``data`` entries, a uniform unit teacher beta and y = X beta + eps,
    eps ~ N(0, sigma^2 I_n)."""
    X = design(trials, n, d, gen, data)
    beta = unit_vectors(trials, d, gen)
    y = (X @ beta.unsqueeze(-1)).squeeze(-1) + sigma * torch.randn(trials, n, generator=gen, device=gen.device,
                                                                   dtype=torch.float64)
    return X, beta, y


@dataclass
class InitScaleLadder:
    distances: list[torch.Tensor]    # per alpha, per trial ||beta_GD - target|| / ||target||
    rows: list[dict]                 # per alpha: mean distance and its se, steps, final loss, eq. (22) margin
    along_training: list[dict]       # the mean distance at a few steps of the smallest alpha's run
    failure: str | None              # why the ladder stopped (gradient descent not converged)
    # per alpha, per trial: the row-space part of beta_GD - beta_limit that GD's last gradient certifies, over ||target||
    left: list[torch.Tensor] = field(default_factory=list)

    def decade_slopes(self, scales) -> list[torch.Tensor]:
        """Per trial, the local slope of log(distance) against log(alpha) between each two neighbouring
        ``scales``, the last pair the closest to the limit alpha -> 0."""
        return [(near.log() - far.log()) / math.log(a / b)
                for near, far, a, b in zip(self.distances, self.distances[1:], scales, scales[1:])]


def distance_over_init_scales(X, y, target, depth, alpha, scales, kind, gen, *, tol=1e-9, max_steps=40000,
                              progress=None) -> InitScaleLadder:
    """For each alpha * scale of ``scales``: initialise depth-``depth`` networks at that scale (init ``kind`` of
    simulate.linear_nets.init_weights, with its eq.-(22) balance margin over alpha^2), train them by full-batch
    GD on 1/(2n) ||y - X beta||^2 to ||grad|| <= tol ||X^T y|| / n, and measure the relative distance of the
    end-to-end vector from ``target``.  Stops at the first scale where GD has not converged."""
    distances, rows, history, left = [], [], [], []
    for scale in scales:
        a = alpha * scale
        if progress:
            progress(f"alpha={a:.0e}")
        weights = init_weights(X.shape[0], X.shape[-1], depth, a, kind, gen)
        margin = balance_margin(weights).min().item() / a**2
        history.clear()
        fit = train(empirical(X, y), weights, tol=tol, max_steps=max_steps, history=history)
        if not bool(fit.converged.all()):
            return InitScaleLadder(distances, rows, [], f"gradient descent not converged at alpha={a:.0e} after "
                                                        f"{fit.steps} steps")
        dist = (fit.beta - target).norm(dim=1) / target.norm(dim=1)
        distances.append(dist)
        left.append(row_space_distance(fit.grad_norm, X) / target.norm(dim=1))
        rows.append({"alpha": a, "distance": dist.mean().item(), "se": estimate(dist).se, "steps": fit.steps,
                     "max_loss": fit.loss.max().item(), "eq22_margin_over_alpha2": margin})
    along = [{"step": step, "distance": ((b - target).norm(dim=1) / target.norm(dim=1)).mean().item()}
             for step, b in history[:-1:max(1, len(history) // 6)] + [history[-1]]]
    return InitScaleLadder(distances, rows, along, None, left)
