"""Risks of fine-tuned linear predictors at their limits, per draw, and trained networks held against them.

Setting (Shachaf, Brutzkus & Globerson, Sec. 5, Sigma = I): a design X (n x d, n < d), a task pair
theta_S, theta_T of given norms at a given angle, uniformly rotated per draw, noiseless y = X theta_T.
P_par is the projector onto row(X), P_perp = I - P_par.  Per draw:

  * L = 1: gradient descent from theta_S ends at theta_S + X^+(y - X theta_S); its risk is
    ||P_perp (theta_T - theta_S)||^2;
  * L -> oo: the fine-tuned predictor is c P_perp theta_S + P_par theta_T, with a coefficient
    c = limit(a, b, s) of a = ||P_perp theta_S||^2, b = ||P_par theta_T||^2, s = ||theta_S|| (the claim's
    formula, passed in); its risk is ||P_perp (theta_T - c theta_S)||^2;
  * finite depth L: the same form with coefficient(a, b, s, L);
  * trained networks: L = 1 by gradient descent, certified against its limit by its final loss; depth-L
    networks (0-balanced rank-one init, RK4 gradient flow, simulate.depth_finetune) against the finite-L form.

Every function consumes the generator it is given in a fixed order (same seed, same numbers).
"""

from __future__ import annotations

import math

import torch

from simulate.convergence import row_space_distance
from simulate.data import design, task_pair
from simulate.depth_finetune import (apply, eq5_compare, fine_tune_all, imbalance, per_draw_values,
                                     pretrain_population)
from simulate.estimators import min_norm_solution, smallest_positive_eigenvalue
from simulate.linear_nets import empirical, train
from simulate.stats import estimate

__all__ = ["draw_noiseless_tasks", "limit_risks", "linear_gd_certificate", "simulate_limits", "low_quantiles",
           "risk_against_bounds", "trained_depth_row", "finite_depth_risks"]


def draw_noiseless_tasks(trials, n, d, theta, norm_s, norm_t, gen, data):
    """X (``data`` entries, identity covariance), theta_S and theta_T of norms norm_s, norm_t at angle theta,
    uniformly rotated per draw, and y = X theta_T."""
    X = design(trials, n, d, gen, data)
    theta_s, theta_t = task_pair(trials, d, theta, gen)
    theta_s, theta_t = norm_s * theta_s, norm_t * theta_t
    return X, theta_s, theta_t, apply(X, theta_t)


def limit_risks(limit, X, theta_s, theta_t):
    """Per draw: the L = 1 limit's risk ("linear"), the L -> oo limit's ("deep", coefficient
    limit(a, b, s) in mpmath per draw), and their inputs a, b, s, c_inf, P_perp theta_S, P_perp theta_T."""
    chol = torch.linalg.cholesky(X @ X.transpose(-1, -2))
    par = lambda v: (X.transpose(-1, -2) @ torch.cholesky_solve(X @ v.unsqueeze(-1), chol)).squeeze(-1)
    par_s, par_t = par(theta_s), par(theta_t)
    perp_s, perp_t = theta_s - par_s, theta_t - par_t
    a, b, s = perp_s.pow(2).sum(1), par_t.pow(2).sum(1), theta_s.norm(dim=1)
    c_inf = per_draw_values(lambda ai, bi, si, _: limit(ai, bi, si), a, b, s, None)
    return dict(linear=(perp_t - perp_s).pow(2).sum(1), deep=(perp_t - c_inf.unsqueeze(-1) * perp_s).pow(2).sum(1),
                a=a, b=b, s=s, c_inf=c_inf, perp_s=perp_s, perp_t=perp_t)


def linear_gd_certificate(X, y, theta_s, theta_t, max_steps, rounding):
    """Gradient descent (L = 1) from theta_S; per draw, the distance to theta_S + X^+(y - X theta_S) over what
    the final loss certifies (the difference lies in row(X), so ||w - w*||^2 <= 2 n loss / lambda_min^+(X X^T)),
    and the same for sqrt-risk (Sigma = I: |sqrt R - sqrt R*| <= ||w - w*||).  ``rounding``: the relative
    float64 floor added to the certificate."""
    n = X.shape[-2]
    fit = train(empirical(X, y), [theta_s.unsqueeze(-1)], tol=1e-11, max_steps=max_steps, step_scale=1.0)
    limit = theta_s + min_norm_solution(X, y - apply(X, theta_s))
    lam_min = smallest_positive_eigenvalue(X @ X.transpose(-1, -2))   # lambda_min^+: also for a rank-deficient X
    certified = (2 * n * fit.loss.clamp(min=0) / lam_min).sqrt() + rounding * (1 + fit.beta.norm(dim=1))
    risk, risk_limit = (fit.beta - theta_t).pow(2).sum(1), (limit - theta_t).pow(2).sum(1)
    return dict(converged=bool(fit.converged.all()), steps=fit.steps, draws=X.shape[0],
                excess=((fit.beta - limit).norm(dim=1) / certified).max().item(),
                risk_excess=((risk.sqrt() - risk_limit.sqrt()).abs() / certified).max().item(),
                max_risk_gap=(risk - risk_limit).abs().max().item())


def simulate_limits(limit, n, d, trials, theta, norm_s, norm_t, gen, data, *, gd_trials, keep, chunk,
                    gd_max_steps, rounding):
    """All ``trials`` draws at one size, in chunks of ``chunk``: the L = 1 and L -> oo risks per draw (see
    limit_risks); L = 1 gradient descent on the first ``gd_trials`` draws (linear_gd_certificate, None if 0);
    and the first ``keep`` draws' tensors (X, y, theta_S, theta_T and limit_risks' inputs), for networks."""
    linear, deep, kept = [], [], None
    gd = None
    done = 0
    while done < trials:
        size = min(chunk, trials - done)
        X, theta_s, theta_t, y = draw_noiseless_tasks(size, n, d, theta, norm_s, norm_t, gen, data)
        risks = limit_risks(limit, X, theta_s, theta_t)
        linear.append(risks["linear"])
        deep.append(risks["deep"])
        if done == 0:
            g = min(gd_trials, size)
            gd = linear_gd_certificate(X[:g], y[:g], theta_s[:g], theta_t[:g], gd_max_steps, rounding) if g else None
            kept = dict(X=X[:keep], y=y[:keep], theta_s=theta_s[:keep], theta_t=theta_t[:keep],
                        **{k: v[:keep] for k, v in risks.items() if k not in ("linear", "deep")})
        done += size
    return torch.cat(linear), torch.cat(deep), gd, kept


def low_quantiles(x: torch.Tensor) -> dict[str, float]:
    """The minimum, 1% quantile and median of ``x``."""
    q = torch.quantile(x.cpu(), torch.tensor([0.0, 0.01, 0.5], dtype=x.dtype))
    return {"min": q[0].item(), "q01": q[1].item(), "median": q[2].item()}


def risk_against_bounds(risk, centre, bounds, d):
    """Per-draw risks against a centre value and a list of bound values (all floats): the ratio risk/centre
    (mean, its standard error, median, standard deviation times sqrt(d)), the mean risk and its standard error;
    and per bound the failures (risk > bound), their fraction and the low quantiles of the slack bound - risk."""
    trials = risk.numel()
    ratio = risk / centre
    est = estimate(ratio)
    by_bound = []
    for bound in bounds:
        fails = int((risk > bound).sum())
        by_bound.append({"bound": bound, "fraction": fails / trials, "failures": fails,
                         "slack": low_quantiles(bound - risk)})
    summary = {"centre": centre, "mean_ratio": est.mean, "se_ratio": est.se, "median_ratio": ratio.median().item(),
               "sd_ratio_sqrt_d": ratio.std().item() * math.sqrt(d), "mean_risk": risk.mean().item(),
               "se_risk": estimate(risk).se}
    return summary, by_bound


def trained_depth_row(coefficient, row_part, kept, L, alpha, gen):
    """Depth-L networks (exactly 0-balanced rank-one init of scale alpha, RK4 gradient flow), pretrained to
    theta_S and fine-tuned on (X, y) of the kept draws: their distance from the finite-depth prediction
    (simulate.depth_finetune.eq5_compare, over its tolerance), the mean trained risk and the predicted one.
    Returns (row, the trained risk per draw, None), or (None, None, what did not converge)."""
    pre = pretrain_population(kept["theta_s"], L, alpha, True, gen)
    if not bool(pre.converged.all()):
        return None, None, f"pretraining (L={L}) not converged after {pre.steps} steps"
    ft = fine_tune_all(kept["X"], kept["y"], pre.weights)
    if not bool(ft.converged.all()):
        return None, None, f"fine-tuning (L={L}) not converged after {ft.steps} steps"
    m = eq5_compare(coefficient, row_part, kept["X"], kept["y"], kept["theta_t"], pre.beta, ft.beta, L,
                    imbalance(pre.weights))
    risk = (ft.beta - kept["theta_t"]).pow(2).sum(1)
    predicted = (kept["perp_t"] - m["c_pred"].unsqueeze(-1) * m["perp_s"]).pow(2).sum(1)
    return {"L": L, "steps": ft.steps, "max_distance_over_tolerance": (m["distance"] / m["tol"]).max().item(),
            "max_relative_distance": m["distance"].max().item(),
            # what fine-tuning's last gradient leaves of the row-space part, in the same units (see simulate.convergence)
            "max_left_over_tolerance": (row_space_distance(ft.grad_norm, kept["X"]) / (m["c_pred"].abs() * m["a"].sqrt())
                                        / m["tol"]).max().item(),
            "mean_risk": risk.mean().item(), "mean_risk_eq5": predicted.mean().item(),
            "mean_risk_eq7": kept["deep"].mean().item() if "deep" in kept else None}, risk, None


def finite_depth_risks(coefficient, kept, linear, deep, bound, depths):
    """Mean risk of the finite-depth form (coefficient(a, b, s, L) per draw) on the kept draws at each L in
    ``depths``, between L = 1 (``linear``) and L -> oo (``deep``), and the fraction of draws within ``bound``."""
    a, b, s = kept["a"], kept["b"], kept["s"]
    rows = [{"L": 1, "mean_risk": linear.mean().item(), "within_eq9": (linear <= bound).float().mean().item()}]
    for L in depths:
        c = per_draw_values(coefficient, a, b, s, L)
        risk = (kept["perp_t"] - c.unsqueeze(-1) * kept["perp_s"]).pow(2).sum(1)
        rows.append({"L": L, "mean_risk": risk.mean().item(), "within_eq9": (risk <= bound).float().mean().item()})
    rows.append({"L": "inf", "mean_risk": deep.mean().item(), "within_eq9": (deep <= bound).float().mean().item()})
    return rows
