"""Pretraining and fine-tuning deep linear networks by gradient flow (RK4), as Shachaf et al.'s Sec. 5
and the comparison of two papers' predictions run them, and eq. (5)'s per-draw comparison.

Gradient flow is integrated with RK4 (its limit is path dependent: the null-space part of beta is
rescaled as the norm changes) at ``STEP_SCALE`` = 0.25 of the curvature-bounded step, pretraining
included: pretraining's limit theta_S is path independent, but the balance matrices
W_l^T W_l - W_{l+1} W_{l+1}^T are only conserved up to the integrator's error, and at step_scale 1
from an alpha = 1/2 init that drift moved eq. (5)'s coefficient by 5e-4.
"""

from __future__ import annotations

import mpmath as mp
import torch

from simulate.data import unit_vectors
from simulate.device import decompose
from simulate.estimators import min_norm_solution, row_space_projector
from simulate.linear_nets import empirical, init_weights, population, train

__all__ = ["STEP_SCALE", "TOL_RK4", "PRE_TOL", "IMBALANCE_FACTOR", "apply", "balanced_weights", "imbalance",
           "pretrain_population", "fine_tune_all", "interpolating_row_part", "per_draw_values", "eq5_tolerance", "eq5_compare"]

STEP_SCALE = 0.25       # RK4 step (fraction of the stable step) for pretraining and fine-tuning
# Per-draw tolerance on eq. (5), relative to ||c P_perp theta_S||.  RK4's limit differs from the
# flow's by O(h^4): tests/test_depth_rescaling_numerics.py measures <= ~5e-6 at step_scale 0.25
# (n = 5, d = 12, ||theta_S|| in [0.7, 1.8]; Richardson extrapolation leaves a few 1e-7), and these
# checks measure <= 1e-6 with exactly balanced weights; 2e-5 is 4x the largest measured error.
TOL_RK4 = 2e-5
# The theorem assumes exact balance.  An imbalance delta = max_l ||W_l^T W_l - W_{l+1} W_{l+1}^T||_2
# (conserved by the flow, so the pretrained weights carry the init's) moves beta off eq. (5) too.  It
# acts through the layers' squared norms, ~ ||beta||^(2/L), and accumulates over the L - 1 balance
# relations, so it is measured in units of L^2 epsilon, epsilon = delta / min(||beta(0)||, ||beta||)^(2/L).
# Measured over 12 settings (eq.-(22) init, alpha = 1e-2 .. 5e-2, L = 2..5, ||theta_T|| = 1/10 .. 3,
# gamma = 1/10 .. 1/2, sigma = 0, 1, theta = pi/4, pi/2): distance <= 0.086 L^2 epsilon (largest for small
# ||theta_T||).  The allowance is 0.25 L^2 epsilon, ~3x the largest measured effect.
IMBALANCE_FACTOR = 0.25
PRE_MAX_STEPS = 200000
FT_MAX_STEPS = 100000
# Pretraining stops at ||beta - theta_S|| <= PRE_TOL ||theta_S|| (the population gradient is beta - theta_S):
# the distance the checks' certificates carry into what they compare (frozen-layers' off-line fraction)
PRE_TOL = 1e-12


def apply(M, v):
    """Batched matrix-vector product: (trials, a, b) @ (trials, b) -> (trials, a)."""
    return (M @ v.unsqueeze(-1)).squeeze(-1)


def balanced_weights(trials: int, d: int, depth: int, alpha: float, gen) -> list[torch.Tensor]:
    """alpha * (v_0 v_1^T, v_1 v_2^T, ..., v_{L-2} v_{L-1}^T, v_{L-1}), v_l uniform unit vectors.

    W_l^T W_l = alpha^2 v_l v_l^T = W_{l+1} W_{l+1}^T: exactly 0-balanced (Definition 5.1).  With
    d_L = 1 every 0-balanced network is of this rank-one form, so this is the theorem's hypothesis
    itself, at a random orientation."""
    v = [unit_vectors(trials, d, gen) for _ in range(depth)]
    weights = [alpha * v[l].unsqueeze(-1) @ v[l + 1].unsqueeze(-2) for l in range(depth - 1)]
    return weights + [alpha * v[-1].unsqueeze(-1)]


def imbalance(weights: list[torch.Tensor]) -> torch.Tensor:
    """Per trial, max_l ||W_l^T W_l - W_{l+1} W_{l+1}^T||_2 (0 for L = 1): Definition 5.1's defect."""
    out = torch.zeros(weights[0].shape[0], dtype=weights[0].dtype, device=weights[0].device)
    for a, b in zip(weights[:-1], weights[1:]):
        gap = decompose(torch.linalg.eigvalsh, a.transpose(-1, -2) @ a - b @ b.transpose(-1, -2)).abs().amax(-1)
        out = torch.maximum(out, gap)
    return out


def pretrain_population(theta_s: torch.Tensor, depth: int, alpha: float, balanced: bool, gen):
    """Gradient flow (RK4) on 0.5 ||beta - theta_S||^2 from a near-zero init, one network per row of theta_s."""
    trials, d = theta_s.shape
    weights = (balanced_weights(trials, d, depth, alpha, gen) if balanced
               else init_weights(trials, d, depth, alpha, "eq22", gen))
    return train(population(theta_s), weights, tol=PRE_TOL, max_steps=PRE_MAX_STEPS, step_scale=STEP_SCALE,
                 method="rk4")


def fine_tune_all(X, y, weights, frozen=(), max_steps=FT_MAX_STEPS, history=None, times=None):
    """Gradient flow (RK4) on 1/(2n) ||y - X beta||^2 from ``weights``, the layers in ``frozen`` held fixed
    (``history``, ``times``: linear_nets.train's record along the flow)."""
    return train(empirical(X, y), weights, tol=1e-12, max_steps=max_steps, step_scale=STEP_SCALE, method="rk4",
                 frozen=frozen, history=history, times=times)


def interpolating_row_part(X, y, theta_t):
    """P_par beta_inf at zero training loss: the unique row(X) vector interpolating y, X^+ y
    (= P_par theta_T for noiseless labels, P_par theta_T + X^+ noise otherwise)."""
    return min_norm_solution(X, y)


def per_draw_values(formula, a, b, s, L, dps=25) -> torch.Tensor:
    """formula(a_i, b_i, s_i, L) per draw, in mpmath at ``dps`` digits, as a float64 tensor."""
    with mp.workdps(dps):
        values = [float(formula(mp.mpf(ai), mp.mpf(bi), mp.mpf(si), L)) for ai, bi, si in
                  zip(a.tolist(), b.tolist(), s.tolist())]
    return torch.tensor(values, dtype=torch.float64, device=a.device)


def eq5_tolerance(depth, delta, norm, flow_tol=TOL_RK4):
    """Per draw: flow_tol + 0.25 L^2 delta / norm^(2/L) (norm = min(||beta(0)||, ||beta||)); see IMBALANCE_FACTOR.
    ``flow_tol``: the integrator's own error (TOL_RK4 for this module's quarter-step RK4)."""
    return flow_tol + IMBALANCE_FACTOR * depth**2 * delta / norm.pow(2 / depth)


def eq5_compare(coefficient, row_part, X, y, theta_t, pre_beta, beta, L, delta, flow_tol=TOL_RK4):
    """Per draw: the prediction c P_perp beta(0) + row_part(X, y, theta_T), with c = coefficient(a, b, s, L)
    (a = ||P_perp beta(0)||^2, b = ||row part||^2, s = ||beta(0)||), and its distance from the trained beta
    relative to ||c P_perp beta(0)||, with the per-draw tolerance of ``eq5_tolerance`` (``flow_tol``: the
    error of the integrator that trained beta)."""
    P = row_space_projector(X)
    perp_s = pre_beta - apply(P, pre_beta)
    a, s = perp_s.pow(2).sum(1), pre_beta.norm(dim=1)
    row = row_part(X, y, theta_t)
    b = row.pow(2).sum(1)
    c_pred = per_draw_values(coefficient, a, b, s, L)
    predicted = c_pred.unsqueeze(-1) * perp_s + row
    perp_b = beta - apply(P, beta)
    c_sim = (perp_b * perp_s).sum(1) / a
    scale = c_pred.abs() * a.sqrt()
    return dict(a=a, b=b, s=s, perp_s=perp_s, row=row, c_pred=c_pred, c_sim=c_sim, predicted=predicted,
                distance=(beta - predicted).norm(dim=1) / scale, coef_err=(c_sim - c_pred).abs() / c_pred.abs(),
                tol=eq5_tolerance(L, delta, torch.minimum(s, beta.norm(dim=1)), flow_tol), P=P)
