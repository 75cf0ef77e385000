"""Pretrain-then-fine-tune runs of deep linear networks, and what is measured on them.

The setting of Shachaf, Brutzkus & Globerson, Sec. 5: rows of X with i.i.d. entries (N(0, 1) in the
paper), tasks theta_S, theta_T, a depth-L linear network pretrained on the source population loss by
gradient flow (RK4) and then fine-tuned on 1/(2n) ||y - X beta||^2 (simulate.depth_finetune has the
integrators and eq. (5)'s per-draw comparison).  The predictions compared with the trained networks are formulas passed in as
callables ``coefficient(a, b, s, L)`` (eq. (5)'s coefficient of P_perp theta_S) and ``limit(a, b, s)``
(its L -> oo value, eq. (6)), so a wrong formula is measured the same way as the right one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import mpmath as mp
import torch

from simulate.data import design, task_pair, unit_vectors
from simulate.depth_finetune import (IMBALANCE_FACTOR, TOL_RK4, apply, eq5_compare, fine_tune_all, imbalance,
                                     per_draw_values, pretrain_population)
from simulate.estimators import row_space_projector
from simulate.linear_nets import TrainResult
from simulate.stats import estimate

__all__ = ["draw_tasks", "draw_aligned_tasks", "TransferRun", "pretrain_then_finetune", "per_draw_formula",
           "predictor_risk", "coefficient_by_depth", "rescaling_measurements", "DepthRun", "risk_by_depth",
           "predicted_risk_by_depth"]


def draw_tasks(trials, n, d, theta, norm_t, sigma, gen, data):
    """X (trials, n, d), unit theta_S, theta_T of norm ``norm_t`` at angle theta, y = X theta_T + noise.

    The noise N(0, sigma^2) is drawn even when sigma = 0, so the random stream does not depend on sigma."""
    X = design(trials, n, d, gen, data)
    theta_s, theta_t = task_pair(trials, d, theta, gen)
    theta_t = norm_t * theta_t
    y = apply(X, theta_t) + sigma * torch.randn(trials, n, generator=gen, device=gen.device, dtype=torch.float64)
    return X, theta_s, theta_t, y


def draw_aligned_tasks(trials, n, d, scale, eps, gen, data):
    """X (trials, n, d), unit theta_S, theta_T = scale theta_S + eps u (u a uniform unit vector), and
    noiseless y = X theta_T."""
    X = design(trials, n, d, gen, data)
    theta_s = unit_vectors(trials, d, gen)
    theta_t = scale * theta_s + eps * unit_vectors(trials, d, gen)
    return X, theta_s, theta_t, apply(X, theta_t)


@dataclass
class TransferRun:
    """Pretraining, the pretrained weights' imbalance (Definition 5.1's defect), and fine-tuning
    (``imbalance`` and ``fine`` are None when pretraining did not converge)."""

    pre: TrainResult
    imbalance: torch.Tensor | None
    fine: TrainResult | None

    @property
    def steps(self) -> dict:
        """Steps of both stages, once both ran."""
        return {} if self.fine is None else {"pretrain_steps": self.pre.steps, "finetune_steps": self.fine.steps}

    @property
    def failure(self) -> str | None:
        """Which stage did not converge, or None."""
        if not bool(self.pre.converged.all()):
            return f"pretraining not converged after {self.pre.steps} steps"
        if not bool(self.fine.converged.all()):
            return f"fine-tuning not converged after {self.fine.steps} steps"
        return None


def pretrain_then_finetune(X, y, theta_s, depth, alpha, balanced, gen, *, frozen=(), max_steps=None, history=None,
                           times=None, progress=None) -> TransferRun:
    """Pretrain depth-``depth`` networks on 0.5 ||beta - theta_S||^2 from an init of scale ``alpha`` (exactly
    0-balanced rank one if ``balanced``, else eq. (22) of Features are fate), then fine-tune them on (X, y)
    with the layers in ``frozen`` held fixed (``max_steps``: depth_finetune's default when None).  Fine-tuning
    is skipped if pretraining has not converged.  ``history``, ``times``: fine-tuning's (step, beta) and flow time at
    each convergence check (linear_nets.train)."""
    if progress:
        progress("pretraining on the source population loss")
    pre = pretrain_population(theta_s, depth, alpha, balanced, gen)
    if not bool(pre.converged.all()):
        return TransferRun(pre, None, None)
    delta = imbalance(pre.weights)
    if progress:
        progress(f"fine-tuning with {len(frozen)} frozen layer(s) (RK4)" if frozen else "fine-tuning all layers (RK4)")
    limit = {} if max_steps is None else {"max_steps": max_steps}
    return TransferRun(pre, delta, fine_tune_all(X, y, pre.weights, frozen=frozen, history=history, times=times,
                                                 **limit))


def per_draw_formula(formula, columns, dps=25, device=None) -> torch.Tensor:
    """formula(*row) for each row of the float ``columns`` (lists of equal length), evaluated in mpmath at
    ``dps`` digits, as a float64 tensor."""
    with mp.workdps(dps):
        values = [float(formula(*row)) for row in zip(*columns)]
    return torch.tensor(values, dtype=torch.float64, device=device)


def predictor_risk(perp_t, c, perp_s):
    """Per draw, ||P_perp theta_T - c P_perp theta_S||^2: the null-space part of the risk ||beta - theta_T||^2
    (Sigma = I) of a predictor c P_perp theta_S + P_par theta_T."""
    return (perp_t - c.unsqueeze(-1) * perp_s).pow(2).sum(1)


def coefficient_by_depth(coefficient, limit, a, b, s, depths, dps=25):
    """Mean over draws of eq. (5)'s coefficient at each of ``depths`` (math.inf: ``limit``, eq. (6)), with
    the mean gap to the limit and L times it; and the mean |C| of the first-order term of
    c_L = c_inf + C/L + O(1/L^2) (numerics.depth_rescaling.rescaling_coefficient_first_order)."""
    rows = []
    with mp.workdps(dps):
        for L in depths:
            if math.isinf(L):
                c = [limit(mp.mpf(ai), mp.mpf(bi), mp.mpf(si)) for ai, bi, si in zip(a.tolist(), b.tolist(), s.tolist())]
            else:
                c = [coefficient(mp.mpf(ai), mp.mpf(bi), mp.mpf(si), L) for ai, bi, si in zip(a.tolist(), b.tolist(), s.tolist())]
            rows.append([float(x) for x in c])
    c_inf = torch.tensor(rows[-1], dtype=torch.float64)
    first = (c_inf * s.cpu().pow(2) * c_inf.log() / (s.cpu().pow(2) - a.cpu())).abs()
    table = []
    for L, c in zip(depths, rows):
        c = torch.tensor(c, dtype=torch.float64)
        gap = (c - c_inf).abs().mean().item()
        table.append({"L": "inf" if math.isinf(L) else L, "mean_c": c.mean().item(), "mean_abs_c_minus_c_inf": gap,
                      "L_times_gap": None if math.isinf(L) else L * gap})
    return table, first.mean().item()


def rescaling_measurements(m, run: TransferRun, theta_s, theta_t, depth, coefficient, limit, depths) -> dict:
    """What a fine-tuning run shows beyond eq. (5)'s per-draw test: from ``m`` = depth_finetune.eq5_compare(...)
    of the trained network, the worst distances and tolerances, the imbalance and the pretraining error, the
    coefficient of P_perp theta_S at ``depths`` (coefficient_by_depth), four draws' coefficients, and the mean
    risk ||beta - theta_T||^2 (Sigma = I) of the trained net, of eq. (5)'s predictor at this depth, of the
    L -> oo predictor (eq. 7) and of L = 1's (coefficient 1, eq. 2)."""
    delta, a, b, s = run.imbalance, m["a"], m["b"], m["s"]
    table, first_order = coefficient_by_depth(coefficient, limit, a, b, s, depths)
    perp_t = theta_t - apply(m["P"], theta_t)
    c_inf_draw = per_draw_values(lambda a, b, s, _: limit(a, b, s), a, b, s, None)
    row_risk = (m["row"] - (theta_t - perp_t)).pow(2).sum(1)          # ||X^+ noise||^2: 0 for noiseless labels
    risk_of = lambda c: (predictor_risk(perp_t, c, m["perp_s"]) + row_risk).mean().item()
    return {
        "max_distance_over_tolerance": (m["distance"] / m["tol"]).max().item(),
        "max_relative_distance": m["distance"].max().item(),
        "max_coefficient_error": m["coef_err"].max().item(), "tolerance_max": m["tol"].max().item(),
        "imbalance_max": delta.max().item(),
        "distance_over_L2_relative_imbalance_max": (m["distance"] / ((m["tol"] - TOL_RK4) / IMBALANCE_FACTOR)).max().item()
        if depth > 1 and bool((delta > 0).all()) else None,
        "pretraining_error_max": (run.pre.beta - theta_s).norm(dim=1).max().item(),
        "simulated_mean_c": estimate(m["c_sim"]).mean, "eq5_mean_c": m["c_pred"].mean().item(),
        "coefficient_vs_depth": table, "first_order_abs_C_mean": first_order,
        "per_draw": [{"c_sim": cs, "c_eq5": cp, "c_eq6": float(limit(ai, bi, si))}
                     for cs, cp, ai, bi, si in zip(m["c_sim"][:4].tolist(), m["c_pred"][:4].tolist(), a[:4].tolist(),
                                                   b[:4].tolist(), s[:4].tolist())],
        "max_final_loss": run.fine.loss.max().item(),
        "mean_risk": {"trained": (run.fine.beta - theta_t).pow(2).sum(1).mean().item(), "eq5_at_L": risk_of(m["c_pred"]),
                      "eq7_L_inf": risk_of(c_inf_draw), "eq2_L1": risk_of(torch.ones_like(c_inf_draw))},
    }


@dataclass
class DepthRun:
    depth: int
    run: TransferRun
    risk: torch.Tensor        # (trials,) ||beta - theta_T||^2 of the fine-tuned network (Sigma = I)
    eq5: dict                 # depth_finetune.eq5_compare's per-draw comparison
    predicted: torch.Tensor   # (trials,) the predicted risk


def risk_by_depth(X, y, theta_s, theta_t, depths, alpha, balanced, gen, coefficient, row_part, linear_risk=None,
                  progress=None) -> tuple[list[DepthRun], str | None]:
    """At each of ``depths``: pretrain_then_finetune, the fine-tuned risk, eq. (5)'s per-draw comparison
    (``coefficient``, ``row_part`` as in depth_finetune.eq5_compare) and the predicted risk: at depth 1
    ``linear_risk(q)`` per draw (q = ||P_perp theta_T||^2) if given, else eq. (5)'s predictor's
    (predictor_risk).  Stops at the first depth that does not converge, with the reason."""
    perp_t = theta_t - apply(row_space_projector(X), theta_t)
    done = []
    for L in depths:
        if progress:
            progress(f"depth {L}: pretraining and fine-tuning")
        run = pretrain_then_finetune(X, y, theta_s, L, alpha, balanced, gen)
        if run.failure:
            return done, f"L={L}: {run.failure}"
        risk = (run.fine.beta - theta_t).pow(2).sum(1)
        m = eq5_compare(coefficient, row_part, X, y, theta_t, run.pre.beta, run.fine.beta, L, run.imbalance)
        if L == 1 and linear_risk is not None:
            predicted = per_draw_formula(linear_risk, (perp_t.pow(2).sum(1).tolist(),), device=risk.device)
        else:
            predicted = predictor_risk(perp_t, m["c_pred"], m["perp_s"])
        done.append(DepthRun(L, run, risk, m, predicted))
    return done, None


def predicted_risk_by_depth(X, theta_s, theta_t, depths, coefficient, limit, reference, limit_risk=None) -> list[dict]:
    """Mean over draws of the risk ||P_perp theta_T - c_L P_perp theta_S||^2 of eq. (5)'s predictor at each of
    ``depths`` (P_perp: off row(X); math.inf: eq. (6)'s coefficient ``limit``, or, if given,
    ``limit_risk(a_i, s_i)`` per draw, a = ||P_perp theta_S||^2, s = ||theta_S||), and its ratio to
    ``reference`` (None unless reference > 0)."""
    P = row_space_projector(X)
    perp_s, perp_t = theta_s - apply(P, theta_s), theta_t - apply(P, theta_t)
    a_perp, s, b = perp_s.pow(2).sum(1), theta_s.norm(dim=1), apply(P, theta_t).pow(2).sum(1)
    rows = []
    for L in depths:
        if math.isinf(L) and limit_risk is not None:
            pr = per_draw_formula(limit_risk, (a_perp.tolist(), s.tolist()))
        else:
            if math.isinf(L):
                c = per_draw_values(lambda ai, bi, si, _: limit(ai, bi, si), a_perp, b, s, None)
            else:
                c = per_draw_values(coefficient, a_perp, b, s, L)
            pr = predictor_risk(perp_t, c, perp_s)
        rows.append({"L": "inf" if math.isinf(L) else L, "mean_predicted_risk": pr.mean().item(),
                     "ratio_to_L1": pr.mean().item() / reference if reference > 0 else None})
    return rows
