"""Two-layer ReLU nets in the NTK regime trained along a ladder of widths, and what is measured on them.

The NTK transfer bounds (Liu et al. Thms 1-2, Shachaf et al. Thm 6.1) hold up to terms that vanish as
the width m -> oo and the init scale kappa -> 0.  A ladder of widths m_0 < m_1 < ... with
kappa_k = kappa_0 (m_0 / m_k)^{1/4} sends both kappa and 1 / (kappa sqrt m) to 0 like x = m^{-1/4}.  Each
draw (data, teachers) is trained at every width from its own W(0) (``simulate.ntk.pretrain_finetune``,
the shared trainer); the functions here run the ladder, return per-draw values (trials x widths) and a
row of summaries per width, and extrapolate per-draw values linearly in x to m -> oo.

A ladder stops at the first width where some draw did not reach the training loss within its step budget
(a net far from the lazy regime can lose units and stall): the result then carries a ``Stall`` and no
per-draw values.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import torch

from simulate.data import task_pair
from simulate.ntk import activation_gradient_sq, clipped_risk, pretrain_finetune, sphere_points
from simulate.stats import Estimate, estimate

__all__ = ["sphere_task_pair", "ladder_kappas", "Stall", "Ladder", "gradient_norm_gaps", "weight_distance_excess",
           "finetune_risk_slack", "paired_extrapolation", "FLOOR_POWERS", "fixed_scale_path"]

# the fixed-kappa path's finite-width corrections are fitted as a + b m^(-p) for each of these p: 1/2 is the
# order of W(0)'s kernel fluctuations, 1/4 the order of the papers' vanishing terms (poly / m^(1/4))
FLOOR_POWERS = (0.5, 0.25)


def sphere_task_pair(trials: int, counts: dict, d: int, theta: float, gen: torch.Generator):
    """({name: (trials, n, d) inputs uniform on S^{d-1}} for each (name, n) of ``counts``, in its order,
    then unit teachers (beta_source, beta_target) of shape (trials, d) at angle theta), all from ``gen``."""
    points = {name: sphere_points(trials, n, d, gen) for name, n in counts.items()}
    beta_source, beta_target = task_pair(trials, d, theta, gen)
    return points, beta_source, beta_target


def ladder_kappas(widths, kappa_0: float) -> list[float]:
    """kappa_k = kappa_0 (m_0 / m_k)^{1/4} along the widths m_0, m_1, ...: kappa and 1 / (kappa sqrt m) both
    vanish like m^{-1/4}."""
    return [kappa_0 * (widths[0] / m) ** 0.25 for m in widths]


@dataclass
class Stall:
    """The width at which some draw did not reach the training loss: ``draws`` of them, after ``steps`` steps
    per phase."""
    m: int
    kappa: float
    draws: int
    steps: tuple[int, ...]


@dataclass
class Ladder:
    """Per width a row of summaries; ``samples`` (trials, widths) the per-draw values to extrapolate (None if
    stalled); ``risk`` the risk across draws at the widest width (``finetune_risk_slack`` only)."""
    rows: list[dict]
    samples: torch.Tensor | None = None
    stall: Stall | None = None
    risk: Estimate | None = None


def _no_progress(message: str) -> None:
    pass


def gradient_norm_gaps(XP, yP, XQ, yQ, y_PQ, leading: Callable, widths, kappas, generator_for: Callable, *,
                       loss_tol: float, progress: Callable[[str], None] = _no_progress) -> Ladder:
    """Per width: pretrain on (XP, yP) from W(0) (drawn by ``generator_for(m)``) and measure, per draw, the gap
    ||dL(W(P))/dX^1||^2 - leading(||dL(W(0))/dX^1||^2, yQ, y_PQ), X^1 the hidden activations on the target
    inputs XQ (``simulate.ntk.activation_gradient_sq``).  Samples: |gap|."""
    gaps, rows = [], []
    for m, kappa in zip(widths, kappas):
        progress(f"m={m}, kappa={kappa:.3g}: pretraining on P")
        t = pretrain_finetune(XP, yP, XQ, yQ, m, kappa, generator_for(m), loss_tol=loss_tol, finetune=False)
        if not t.converged:
            return Ladder(rows, stall=Stall(m, kappa, t.stalled, t.steps))
        grad0 = activation_gradient_sq(t.init, XQ, yQ)
        gradP = activation_gradient_sq(t.pretrained.net, XQ, yQ)
        lead = leading(grad0, yQ, y_PQ)
        gap = gradP - lead
        gaps.append(gap)
        abs_gap = estimate(gap.abs())
        rows.append({"m": m, "kappa": kappa, "steps": t.steps[0], "final_loss": t.final_loss, "mean_abs_gap": abs_gap.mean, "se_abs_gap": abs_gap.se,
                     "mean_gap": gap.mean().item(), "mean_leading": lead.mean().item(),
                     "mean_measured": gradP.mean().item(), "mean_grad0": grad0.mean().item()})
    return Ladder(rows, torch.stack(gaps, 1).abs())


def weight_distance_excess(XP, yP, XQ, yQ, bound: torch.Tensor, widths, kappas, generator_for: Callable, *,
                           loss_tol: float, progress: Callable[[str], None] = _no_progress) -> Ladder:
    """Per width: pretrain on (XP, yP) from W(0), fine-tune on (XQ, yQ) from W(P), and measure, per draw, how
    far ||W(Q) - W(P)||_F exceeds ``bound`` (per draw).  Samples: the excess."""
    excesses, rows = [], []
    for m, kappa in zip(widths, kappas):
        progress(f"m={m}, kappa={kappa:.3g}: pretraining on P, fine-tuning on Q")
        t = pretrain_finetune(XP, yP, XQ, yQ, m, kappa, generator_for(m), loss_tol=loss_tol)
        if not t.converged:
            return Ladder(rows, stall=Stall(m, kappa, t.stalled, t.steps))
        distance = (t.finetuned.net.W - t.pretrained.net.W).pow(2).sum((-1, -2)).sqrt()
        excess = distance - bound
        excesses.append(excess)
        rows.append({"m": m, "kappa": kappa, "steps": list(t.steps), "final_loss": t.final_loss, "mean_excess": excess.mean().item(),
                     "se_excess": estimate(excess).se, "mean_distance": distance.mean().item(),
                     "within_bound": (excess <= 0).double().mean().item(), "max_excess": excess.max().item()})
    return Ladder(rows, torch.stack(excesses, 1))


def finetune_risk_slack(XS, yS, X, y, X_test, y_test, bound: Callable, widths, kappas, generator_for: Callable, *,
                        loss_tol: float, o_term: torch.Tensor, linear_risk: torch.Tensor, source_labels: torch.Tensor,
                        progress: Callable[[str], None] = _no_progress) -> Ladder:
    """Per width: pretrain on the source (XS, yS), fine-tune on the target (X, y) from there, and measure per
    draw the slack bound(y~) - R of the fine-tuned net, y~ = y - f(X, pretrained) and R = E min(|f(x) - y|, 1)
    over the fresh points (X_test, y_test) (``simulate.ntk.clipped_risk``).  Per width also: the draws with
    slack < 0 (``violations``), the constant the O-term of shape ``o_term`` would need to cover them, R against
    the per-draw ``linear_risk`` bound, and the pretrained net's error against ``source_labels`` (the source
    teacher on X).  Samples: the slack; ``risk``: R across draws at the widest width."""
    rows, slacks, last_risk = [], [], None
    for m, kappa in zip(widths, kappas):
        progress(f"m={m}, kappa={kappa:.3g}: pretraining on S, fine-tuning on T, risk on {X_test.shape[-2]} points")
        t = pretrain_finetune(XS, yS, X, y, m, kappa, generator_for(m), loss_tol=loss_tol)
        if not t.converged:
            return Ladder(rows, stall=Stall(m, kappa, t.stalled, t.steps))
        y_tilde = y - t.pretrained.net(X)                        # y - f(X, Theta(0)), Theta(0) = the pretrained net
        b = bound(y_tilde)
        risk, risk_se = clipped_risk(t.finetuned.net, X_test, y_test)
        slack = b - risk
        slacks.append(slack)
        last_risk = estimate(risk)                               # across draws, at the widest rung
        rows.append({"m": m, "kappa": kappa, "steps": list(t.steps), "final_loss": t.final_loss, "mean_risk": risk.mean().item(),
                     "max_risk_se": risk_se.max().item(), "mean_bound": b.mean().item(),
                     "mean_slack": slack.mean().item(), "min_slack": slack.min().item(),
                     "violations": int((slack < 0).sum()), "max_risk_over_bound": (risk / b).max().item(),
                     "c_needed": ((-slack).clamp(min=0) / o_term).max().item(),
                     "mean_cor63": linear_risk.mean().item(), "within_cor63": (risk <= linear_risk).double().mean().item(),
                     "pretrain_error": (t.pretrained.net(X) - source_labels).abs().mean().item()})
    return Ladder(rows, torch.stack(slacks, 1), risk=last_risk)


def paired_extrapolation(widths, samples: torch.Tensor, power: float = 0.25) -> dict:
    """Extrapolation of per-draw values ``samples`` (trials, widths) to m -> oo, linear in x = m^(-power).

    Every draw is observed at every width (same data, its own W(0) per width), so the least-squares
    intercept in x = m^{-power}, a fixed linear combination of the widths' values, is formed per draw and
    its mean and standard error come from the spread over draws: the data's share of the variance
    passes with weight 1 instead of being amplified by the extrapolation.  The slope of log(mean)
    against log m is reported the same way (delta method per draw), where every width's mean is positive
    (else ``log_slope`` and ``se_log_slope`` are None)."""
    combination = _least_squares_rows(widths, power, samples.device)        # rows: intercept, slope
    intercept = estimate(samples @ combination[0])
    means = samples.mean(0)
    fit = {"intercept": intercept.mean, "se": intercept.se, "z": intercept.mean / intercept.se,
           "coefficient": estimate(samples @ combination[1]).mean, "log_slope": None, "se_log_slope": None}
    if bool((means > 0).all()):
        logs = torch.tensor([math.log(m) for m in widths], dtype=torch.float64, device=samples.device)
        weights = torch.linalg.pinv(torch.stack([torch.ones_like(logs), logs], 1))[1]
        fit["log_slope"] = (weights * means.log()).sum().item()
        fit["se_log_slope"] = estimate((samples / means) @ weights).se
    return fit


def _least_squares_rows(widths, power: float, device) -> torch.Tensor:
    """The fixed combinations of the widths' values that give the least-squares intercept (row 0) and slope
    (row 1) of a fit linear in x = m^(-power)."""
    x = torch.tensor([m ** -power for m in widths], dtype=torch.float64, device=device)
    return torch.linalg.pinv(torch.stack([torch.ones_like(x), x], 1))


def _intercepts(widths, samples: torch.Tensor, power: float) -> torch.Tensor:
    """Per draw, the least-squares intercept of ``samples`` (trials, widths) linear in m^(-power)."""
    return samples @ _least_squares_rows(widths, power, samples.device)[0]


def _floor_ratio(a: torch.Tensor, b: torch.Tensor) -> dict | None:
    """mean(a) / mean(b) for paired per-draw values, its standard error (delta method over the draws) and
    log2 of it with its standard error: the exponent p of a floor ~ kappa^p when b is at half a's kappa."""
    mean_a, mean_b = a.mean().item(), b.mean().item()
    if mean_a <= 0 or mean_b <= 0:
        return None
    ratio = mean_a / mean_b
    se = estimate((a - ratio * b) / mean_b).se
    return {"ratio": ratio, "se": se, "exponent": math.log2(ratio), "se_exponent": se / (ratio * math.log(2))}


def fixed_scale_path(measure: Callable, widths, kappas, *, reuse: Ladder | None = None) -> dict:
    """The other order of limits: m -> oo at each fixed init scale of ``kappas`` (instead of the ladder's joint
    path kappa ~ m^(-1/4)).  ``measure(widths, kappas)`` runs one of this module's ladders (gradient_norm_gaps,
    weight_distance_excess, finetune_risk_slack) with its data and W(0) generators bound.  ``reuse``: a ladder
    already run by the same ``measure``: a rung of it at the same width and kappa is the same networks, and is
    taken from it, not trained again.

    Per kappa: the ladder's rows, the mean per-draw value and its standard error per width, the log-log slope
    of the mean in m, and for each p of FLOOR_POWERS the per-draw intercept of a + b m^(-p) (the floor a the
    value levels off at as m -> oo at this kappa) with its standard error.  Across kappas (paired: the same
    data, and W(0) = kappa Z with the same Z where the generators are shared): the ratio of the first kappa's
    floor to each other kappa's, and log2 of it (the floor's exponent in kappa when the ratio of the kappas
    is 2).  A kappa at which some draw stalls is reported with its Stall and no fit."""
    paths, intercepts = [], {}
    for kappa in kappas:
        known = {} if reuse is None else {j: i for j, m in enumerate(widths) for i, row in enumerate(reuse.rows)
                                          if row["m"] == m and row["kappa"] == kappa}
        todo = [m for j, m in enumerate(widths) if j not in known]
        fresh = measure(todo, [kappa] * len(todo)) if todo else Ladder([])
        if fresh.stall:
            paths.append({"kappa": kappa, "widths": list(widths), "rows": fresh.rows,
                          "stall": {"m": fresh.stall.m, "draws": fresh.stall.draws, "steps": list(fresh.stall.steps)}})
            continue
        rows, columns, taken = [], [], 0
        for j in range(len(widths)):
            source, column = (reuse, known[j]) if j in known else (fresh, taken)
            taken += j not in known
            rows.append({**source.rows[column], "reused": j in known})
            columns.append(source.samples[:, column])
        ladder = Ladder(rows, torch.stack(columns, 1))
        samples = ladder.samples
        per_width = [estimate(samples[:, j]) for j in range(len(widths))]
        slope = paired_extrapolation(widths, samples)
        floors = {}
        for power in FLOOR_POWERS:
            a = _intercepts(widths, samples, power)
            intercepts[(kappa, power)] = a
            fit = estimate(a)
            floors[f"m^-{power:g}"] = {"floor": fit.mean, "se": fit.se}
        paths.append({"kappa": kappa, "widths": list(widths), "rows": ladder.rows,
                      "mean": [e.mean for e in per_width], "se": [e.se for e in per_width],
                      "log_slope": slope["log_slope"], "se_log_slope": slope["se_log_slope"], "floors": floors})
    ratios = {}
    for kappa in kappas[1:]:
        for power in FLOOR_POWERS:
            if (kappas[0], power) in intercepts and (kappa, power) in intercepts:
                ratios[f"kappa={kappas[0]:.4g}:{kappa:.4g}, m^-{power:g}"] = _floor_ratio(
                    intercepts[(kappas[0], power)], intercepts[(kappa, power)])
    return {"paths": paths, "floor_ratios": ratios}
