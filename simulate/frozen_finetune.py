"""Fine-tuning a deep linear network with its first k layers frozen, over a ladder of init scales: how far
the fine-tuned model leaves a given line (a direction per draw), along training and at its limit.

The line is the theorem's (Shachaf et al., Thm 5.5: theta_S) or a negative control's; it is passed in as
``direction`` (trials, d).  Pretraining and fine-tuning are simulate.deep_linear_transfer's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from simulate.deep_linear_transfer import per_draw_formula, pretrain_then_finetune
from simulate.depth_finetune import apply
from simulate.device import decompose
from simulate.linear_nets import empirical

__all__ = ["PINV_RTOL", "GROWTH_CEILING", "last_layer_limit", "off_line_fraction", "best_on_line", "FrozenLadder",
           "off_line_curve", "frozen_finetune_over_alphas", "alpha_exponents", "rate_exponent"]

PINV_RTOL = 1e-12     # singular values of the frozen features below this fraction of the largest: float64 rounding
# The growth of the off-line part is fitted while it is small (linear response: ~ alpha^(2k) t), below this
# fraction; above it beta turns towards the interpolator and the growth saturates.
GROWTH_CEILING = 1e-1
# ... and above this many times the floor (the per-draw tolerance), where it is growth, not rounding
GROWTH_FLOOR_FACTOR = 10


def last_layer_limit(X, y, weights, rtol=PINV_RTOL):
    """The fine-tuned model at t -> oo when only W_L trains (k = L - 1): gradient flow on the convex
    1/(2n)||y - F w||^2, F = X W_1...W_{L-1}, converges to w(0) + F^+ (y - F w(0)); singular values of F
    below ``rtol`` of the largest are taken as float64 rounding."""
    phi = weights[0]
    for w in weights[1:-1]:
        phi = phi @ w
    F = X @ phi
    w0 = weights[-1]
    w_inf = w0 + decompose(torch.linalg.pinv, F, rtol=rtol) @ (y.unsqueeze(-1) - F @ w0)
    return (phi @ w_inf).squeeze(-1)


def off_line_fraction(beta, direction):
    """Per draw, ||beta - (beta . u) u|| / ||beta||, u = direction / ||direction||: the part of beta off the line."""
    unit = direction / direction.norm(dim=1, keepdim=True)
    along = (beta * unit).sum(1, keepdim=True)
    return (beta - along * unit).norm(dim=1) / beta.norm(dim=1)


def best_on_line(X, y, theta_s, coefficient, dps=20):
    """The best model c theta_S on the source line, per draw: c = coefficient(<X theta_S, y>, ||X theta_S||^2)
    (a formula, evaluated in mpmath at ``dps`` digits), and its training loss 1/(2n) ||y - c X theta_S||^2."""
    u = apply(X, theta_s)
    c_line = per_draw_formula(coefficient, ([(ui @ yi).item() for ui, yi in zip(u, y)], [(ui @ ui).item() for ui in u]),
                              dps, u.device)
    return c_line, (y - c_line.unsqueeze(-1) * u).pow(2).sum(1) / (2 * X.shape[-2])


def off_line_curve(trajectory, times, steps, alpha, k, floor, points=8) -> dict:
    """How the off-line fraction grows along fine-tuning, from the values the run recorded at its convergence
    checks: ``trajectory`` and ``times`` (checks, trials), the off-line fraction and the flow time at the checks
    ``steps``.

    ``points``: at about ``points`` checks spaced evenly in log step (and the last), the step, the median flow
    time and the largest and median off-line fraction over the draws; ``max_over_checks``: the largest over
    every check and draw.  ``t_exponent``: per draw, the least-squares slope of log(off-line) against log t
    over the checks where it lies in (GROWTH_FLOOR_FACTOR ``floor``, GROWTH_CEILING), the growth's exponent in t (linear
    response: 1), fitted in the draws with at least 3 such checks; its mean and standard error over them.
    ``rate``: the median over those checks and draws of off-line / t, and ``rate_over_alpha_2k`` = rate /
    alpha^(2k) (constant over alpha if the growth is ~ alpha^(2k) t).  Both are None unless more than half the
    draws were fitted.  ``t_to_1pct``: the median over the draws of the first flow time at which the fraction
    exceeds 1e-2 (None unless it does in more than half of them)."""
    checks = len(steps)
    wanted = sorted({0, checks - 1} | {min(checks - 1, round(checks ** (i / points)) - 1) for i in range(1, points + 1)})
    rows = [{"step": int(steps[i]), "t_median": times[i].median().item(), "off_max": trajectory[i].max().item(),
             "off_median": trajectory[i].median().item()} for i in wanted]
    # per draw, over its checks inside the fitting window: least squares of log(off-line) on log t (masked sums:
    # the window differs between draws)
    inside = (trajectory > GROWTH_FLOOR_FACTOR * floor) & (trajectory < GROWTH_CEILING) & (times > 0)
    count = inside.sum(0)
    fitted = count >= 3
    x = torch.where(inside, times, 1.0).log()
    z = torch.where(inside, trajectory, 1.0).log()
    centred_x = torch.where(inside, x - (x * inside).sum(0) / count.clamp(min=1), 0.0)
    centred_z = torch.where(inside, z - (z * inside).sum(0) / count.clamp(min=1), 0.0)
    slopes = ((centred_x * centred_z).sum(0) / centred_x.pow(2).sum(0))[fitted]
    # a fit to a minority of the draws (those that happen to grow fastest) would not describe the draws
    exponent, rate = None, None
    if 2 * len(slopes) > trajectory.shape[1]:
        exponent = {"mean": slopes.mean().item(), "se": slopes.std().item() / math.sqrt(len(slopes)),
                    "draws": len(slopes)}
        window = inside & fitted
        rate = (trajectory[window] / times[window]).median().item()
    above = trajectory > 1e-2
    crossed = above.any(0)
    first = times.gather(0, above.to(torch.int8).argmax(0, keepdim=True))[0][crossed]   # the first check above 1e-2
    t_to_1pct = first.median().item() if 2 * len(first) > trajectory.shape[1] else None
    return {"points": rows, "max_over_checks": trajectory.max().item(), "t_exponent": exponent, "rate": rate,
            "rate_over_alpha_2k": None if rate is None else rate / alpha ** (2 * k), "t_to_1pct": t_to_1pct}


@dataclass
class FrozenLadder:
    rows: list[dict]          # per alpha: the off-line fraction by step and at the limit, losses, imbalance
    primary: dict | None      # the first alpha's per-draw measurements at its limit
    failure: str | None       # why the ladder stopped early (pretraining not converged)


def frozen_finetune_over_alphas(X, y, theta_s, direction, c_line, line_loss, depth, k, alphas, balanced, budget,
                                marks, gen, progress=None, floor=0.0) -> FrozenLadder:
    """At each init scale of ``alphas``: pretrain on theta_S, fine-tune with W_1..W_k frozen for at most ``budget``
    RK4 steps, and measure the off-line fraction (off_line_fraction against ``direction``) at the steps in
    ``marks`` (multiples of 25, the convergence checks) and at the limit: exact t -> oo for k = depth - 1
    (last_layer_limit), else the end of the budget.  ``c_line``, ``line_loss``: best_on_line's.  Each row also
    has the curve of the off-line fraction along fine-tuning time (off_line_curve, from the same run's
    convergence checks: nothing is trained again), fitted above ``floor``.

    A loss below the best on the line certifies a departure from it: ||X beta_off|| >= sqrt(2n line_loss) -
    sqrt(2n loss), so the off-line fraction is at least that / (sigma_max(X) ||beta||) ("certified").

    Pretraining stops at g = ||beta(0) - theta_S|| > 0, so beta(0) is off theta_S's line by a fraction of at most
    g / (||theta_S|| - g) ("pretraining_left"); with exactly balanced (rank-one) frozen layers every fine-tuned beta
    lies on beta(0)'s line, so that is all pretraining's stop can move the off-line fraction by."""
    n = X.shape[-2]
    sigma_max = decompose(torch.linalg.matrix_norm, X, ord=2)
    rows, primary = [], None
    for alpha in alphas:
        if progress:
            progress(f"alpha={alpha:.1e}: pretraining, then fine-tuning with {k} frozen layer(s)")
        history, times = [], []
        run = pretrain_then_finetune(X, y, theta_s, depth, alpha, balanced, gen, frozen=tuple(range(k)),
                                     max_steps=budget, history=history, times=times)
        if run.fine is None:
            return FrozenLadder(rows, primary, f"pretraining not converged at alpha={alpha:.1e}")
        fit = run.fine
        along = {step: beta for step, beta in history if step in marks}
        along[fit.steps] = fit.beta
        trajectory = torch.stack([off_line_fraction(beta, direction) for _, beta in history])   # (checks, trials)
        exact_limit = k == depth - 1
        limit = last_layer_limit(X, y, fit.weights) if exact_limit else fit.beta
        loss = empirical(X, y).loss(limit)
        off = off_line_fraction(limit, direction)
        certified = ((2 * n * line_loss).sqrt() - (2 * n * loss.clamp(min=0)).sqrt()).clamp(min=0) / sigma_max
        certified = certified / limit.norm(dim=1)
        rows.append({"alpha": alpha, "imbalance": run.imbalance.max().item(),
                     "off_line_max_by_step": {int(s): off_line_fraction(b, direction).max().item()
                                              for s, b in sorted(along.items())},
                     "loss_over_line_loss_by_step": {int(s): (empirical(X, y).loss(b) / line_loss).min().item()
                                                     for s, b in sorted(along.items())},
                     "final_step": fit.steps,
                     "limit": "exact t -> oo (k = L - 1)" if exact_limit else f"end of budget ({fit.steps} steps)",
                     "off_line_at_limit_max": off.max().item(), "off_line_at_limit_min": off.min().item(),
                     "certified_off_line_min": certified.min().item(), "loss_at_limit_max": loss.max().item(),
                     "coefficient_vs_line_fit_max": ((limit * theta_s).sum(1) - c_line).abs().max().item(),
                     "off_line_curve": off_line_curve(trajectory, torch.stack(times), [step for step, _ in history],
                                                      alpha, k, floor)})
        if primary is None:
            left = run.pre.grad_norm / (theta_s.norm(dim=1) - run.pre.grad_norm)
            primary = dict(worst=max(trajectory.max().item(), off.max().item()), off=off, certified=certified,
                           loss=loss, exact=exact_limit, trajectory_max=trajectory.max().item(), steps=fit.steps,
                           pretraining_left=left.max().item())
    return FrozenLadder(rows, primary, None)


def rate_exponent(rows) -> float | None:
    """p in rate ~ alpha^p, the off-line part's growth rate (off_line_curve's ``rate``) between the two smallest
    alphas of frozen_finetune_over_alphas' rows at which it grew above the floor; None where fewer than two did."""
    grown = [row for row in rows if row["off_line_curve"]["rate"]]
    if len(grown) < 2:
        return None
    r0, r1 = grown[-2]["off_line_curve"]["rate"], grown[-1]["off_line_curve"]["rate"]
    return math.log(r0 / r1) / math.log(grown[-2]["alpha"] / grown[-1]["alpha"])


def alpha_exponents(rows, floor) -> dict:
    """Step -> p in off-line ~ alpha^p, from the two smallest alphas of frozen_finetune_over_alphas' rows (the
    least saturated), at the steps where both off-line fractions exceed ``floor``."""
    slopes = {}
    if len(rows) >= 2:
        r0, r1 = rows[-2], rows[-1]
        for step in r1["off_line_max_by_step"]:
            o0, o1 = r0["off_line_max_by_step"].get(step), r1["off_line_max_by_step"][step]
            if o0 and o1 and o0 > floor and o1 > floor:
                slopes[step] = math.log(o0 / o1) / math.log(r0["alpha"] / r1["alpha"])
    return slopes
