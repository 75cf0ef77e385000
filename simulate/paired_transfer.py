"""Transfer experiments on deep linear networks, paired on the same target draws.

The target data sets are drawn once and the network is pretrained once on the source population loss (it
sees no target data); every procedure compared on them (training from scratch, linear transfer, ridge on the
pretrained features, fine-tuning every layer; see ``simulate.transfer``) then sees the same draws, so
differences of per-draw risks are paired (common random numbers) and their mean has a small standard error.
Risks are the excess population risk ||beta - beta_t||^2 for x ~ N(0, I).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch

from simulate.convergence import risk_shift, row_space_distance
from simulate.data import GAUSSIAN, Distribution
from simulate.depth_finetune import eq5_compare, imbalance, interpolating_row_part
from simulate.estimators import row_space_projector
from simulate.linear_nets import TrainResult, balance_margin, init_weights
from simulate.stats import estimate
from simulate.transfer import (TargetDraws, draw_target, fine_tune, flow_tolerance, linear_transfer, pretrain,
                               ridge_transfer, scratch, scratch_continued)

__all__ = ["PretrainedTarget", "draw_and_pretrain", "excess_risk", "PairedFits", "scratch_minus_linear_transfer",
           "scratch_minus_fine_tune", "fine_tune_certified", "ridge_risk_reduction", "estimates_at_larger_alpha",
           "gain_along_training", "null_space_coefficient", "fine_tune_against_eq5", "ALPHA_TREND", "PairedTrend",
           "paired_with_alpha_trend", "Eq5Prediction", "eq5_prediction"]


@dataclass
class PretrainedTarget:
    draws: TargetDraws
    pretrained: TrainResult   # one network, pretrained on the source population loss
    init_margin: float        # eq. (22)'s balance margin of one separate draw of the init at scale 1


def draw_and_pretrain(trials: int, n: int, d: int, theta: float, sigma: float, depth: int, alpha: float, init: str,
                      gen: torch.Generator, data: Distribution = GAUSSIAN,
                      progress: Callable[[str], None] | None = None) -> PretrainedTarget:
    """``trials`` target data sets of n samples (``draw_target``), then one network pretrained from alpha * Wbar
    (``init``: "eq22" or "gaussian") on the shared source task.  Before pretraining one more draw of the init at
    scale 1 measures whether that init meets eq. (22) (margin > 0); it consumes random numbers of ``gen``."""
    draws = draw_target(trials, n, d, theta, sigma, gen, data)
    if progress is not None:
        progress("pretraining")
    margin = balance_margin(init_weights(1, d, depth, 1.0, init, gen)).item()
    return PretrainedTarget(draws, pretrain(draws.beta_s, depth, alpha, init, gen), margin)


def excess_risk(beta: torch.Tensor, draws: TargetDraws) -> torch.Tensor:
    """Per draw ||beta - beta_t||^2, the excess population risk for x ~ N(0, I)."""
    return (beta - draws.beta_t).pow(2).sum(1)


@dataclass
class PairedFits:
    gain: torch.Tensor            # per draw R_sc - R_transfer (> 0: the transfer helps)
    scratch: TrainResult
    transfer: TrainResult         # linear transfer (the last layer's fit; its beta is Phi W_L) or fine-tuning
    history: list | None = None   # (step, beta) along fine-tuning

    def gain_shift(self, draws: TargetDraws) -> torch.Tensor:
        """Per draw, the most the gain can still move between where training stopped and the limit: each risk
        moved by the certified distance of its end point (the transfer's own certificate where it has one, else
        the row-space part its gradient certifies, ``simulate.convergence``)."""
        def shift(fit):
            distance = fit.distance if fit.distance is not None else row_space_distance(fit.grad_norm, draws.X)
            return risk_shift(distance, excess_risk(fit.beta, draws))
        return shift(self.scratch) + shift(self.transfer)

    def max_final_loss(self, transfer: str) -> dict:
        """The largest final training loss over the draws: the scratch network's and the transfer's (named so)."""
        return {"scratch": self.scratch.loss.max().item(), transfer: self.transfer.loss.max().item()}


def _pretrained_at(draws, depth, alpha, init, gen, pretrained):
    return pretrained or pretrain(draws.beta_s, depth, alpha, init, gen).weights


def scratch_minus_linear_transfer(draws: TargetDraws, depth: int, alpha: float, init: str, gen: torch.Generator,
                                  pretrained: list[torch.Tensor] | None = None) -> PairedFits:
    """Per draw R_sc - R_lt: a network trained from scratch (init scale alpha, from ``gen``) against linear
    transfer from ``pretrained`` (or, when None, from a network pretrained afresh at alpha, drawn first).
    Raises ArithmeticError if either training has not converged."""
    pretrained = _pretrained_at(draws, depth, alpha, init, gen, pretrained)
    sc = scratch(draws, depth, alpha, init, gen)
    lt, lt_fit = linear_transfer(draws, pretrained)
    if not (bool(sc.converged.all()) and bool(lt_fit.converged.all())):
        raise ArithmeticError("training not converged")
    return PairedFits(excess_risk(sc.beta, draws) - excess_risk(lt, draws), sc, lt_fit)


def scratch_minus_fine_tune(draws: TargetDraws, depth: int, alpha: float, init: str, gen: torch.Generator,
                            pretrained: list[torch.Tensor] | None = None) -> PairedFits:
    """Per draw R_sc - R_ft: a network trained from scratch (init scale alpha, from ``gen``) against fine-tuning
    every layer from ``pretrained`` (or, when None, from a network pretrained afresh at alpha, drawn first),
    with fine-tuning's history.  Raises ArithmeticError if either training has not converged."""
    pretrained = _pretrained_at(draws, depth, alpha, init, gen, pretrained)
    sc = scratch(draws, depth, alpha, init, gen)
    history = []
    ft = fine_tune(draws, pretrained, history=history)
    if not (bool(sc.converged.all()) and bool(ft.converged.all())):
        raise ArithmeticError("training not converged")
    return PairedFits(excess_risk(sc.beta, draws) - excess_risk(ft.beta, draws), sc, ft, history)


# The most a continuation tightens the gradient tolerance in one round: a gradient far below what float64
# resolves (~1e-15 of ||X^T y / n||) cannot be reached.
TIGHTEST_ROUND = 1e-3


def fine_tune_certified(fits: PairedFits, draws: TargetDraws, allowance: float, rounds: int = 2) -> PairedFits:
    """``scratch_minus_fine_tune``'s two flows continued from where they stopped until the gain's certificate
    (``PairedFits.gain_shift``) is at most ``allowance``: each round tightens the relative gradient at which they
    stop by the factor the certificate misses half of it by (at most ``rounds`` rounds).  Near n = d the certified
    distance |grad| n / lambda_min^+(X X^T) is ~500 times the gradient (d = 500, n = 550), so a stop that serves
    every other point can leave T_ft ~ 0 resolved to 1e-7 only; continuing the same gradient flows changes where
    they stop, nothing else.  Returns ``fits`` itself where the certificate already holds (no work, same numbers);
    fine-tuning's history is its first stop's."""
    scale = (draws.X.transpose(-1, -2) @ draws.y.unsqueeze(-1)).squeeze(-1).norm(dim=1) / draws.X.shape[-2]
    for _ in range(rounds):
        shift = fits.gain_shift(draws).max().item()
        if not shift > allowance:
            return fits
        factor = max(allowance / (2 * shift), TIGHTEST_ROUND)
        # each flow goes on to the relative gradient it reached (the trainers' |grad| <= tol ||X^T y / n||), tightened
        sc = scratch_continued(draws, fits.scratch, tol=(fits.scratch.grad_norm / scale).max().item() * factor)
        ft = fine_tune(draws, fits.transfer.weights, tol=(fits.transfer.grad_norm / scale).max().item() * factor)
        if not (bool(sc.converged.all()) and bool(ft.converged.all())):
            raise ArithmeticError("continued training not converged")
        fits = PairedFits(excess_risk(sc.beta, draws) - excess_risk(ft.beta, draws), sc, ft, fits.history)
    return fits


def ridge_risk_reduction(draws: TargetDraws, pretrained: list[torch.Tensor], lam_from: float,
                         lam_to: float, shift: list | None = None) -> torch.Tensor:
    """Per draw R(lam_from) - R(lam_to) of ridge linear transfer on the pretrained features (> 0: lam_to is better).

    lam = 0 is taken as lam -> 0+ in the rank-one regime (lam >> alpha^2): linear transfer by GD.  A closed-form
    solve at lam = 0 would be the min-norm interpolator on all d features instead (``linear_transfer_pinv``).
    ``shift``, if a list, receives per draw the most the reduction can still move where GD stopped (the certified
    distance of linear transfer's end point, ``simulate.convergence.risk_shift``; 0 for closed forms)."""
    if lam_from == 0:
        at_from, fit = linear_transfer(draws, pretrained)
        moved = risk_shift(fit.distance, excess_risk(at_from, draws))
    else:
        at_from = ridge_transfer(draws, pretrained, lam_from)
        moved = torch.zeros(draws.X.shape[0], dtype=at_from.dtype, device=at_from.device)
    if shift is not None:
        shift.append(moved)
    return excess_risk(at_from, draws) - excess_risk(ridge_transfer(draws, pretrained, lam_to), draws)


def estimates_at_larger_alpha(alpha: float, sample: Callable[[float], torch.Tensor], factors, cap: float,
                              progress: Callable[[str], None] | None = None) -> list[dict]:
    """The estimate of ``sample(a)`` (per-draw samples, everything trained afresh at init scale a) at
    a = min(cap, alpha * factor) for each factor, skipping any a <= alpha: shows the approach to alpha -> 0.
    Rows {"alpha", "mean", "se"}."""
    rows = []
    for factor in factors:
        larger = min(cap, alpha * factor)
        if larger <= alpha:
            continue
        if progress is not None:
            progress(f"alpha trend: alpha={larger:.0e}")
        est = estimate(sample(larger))
        rows.append({"alpha": larger, "mean": est.mean, "se": est.se})
    return rows


def gain_along_training(risk_before: torch.Tensor, history: list, draws: TargetDraws,
                        points: int = 6) -> list[tuple[int, float]]:
    """(step, mean over draws of risk_before - R(beta(step))) at about ``points`` recorded steps, the last included."""
    return [(step, (risk_before - excess_risk(beta, draws)).mean().item())
            for step, beta in history[:-1:max(1, len(history) // points)] + history[-1:]]


def null_space_coefficient(X: torch.Tensor, beta_s: torch.Tensor, difference: torch.Tensor) -> torch.Tensor:
    """Per draw, the coefficient of P_perp beta_s in ``difference``: <difference, P_perp beta_s> / ||P_perp beta_s||^2,
    P_perp the projector onto the null space of the draw's X (what no interpolator of the target data fixes)."""
    p_perp_s = beta_s - (row_space_projector(X) @ beta_s.unsqueeze(-1)).squeeze(-1)
    return (difference * p_perp_s).sum(1) / p_perp_s.pow(2).sum(1)


def fine_tune_against_eq5(coefficient, draws: TargetDraws, pretrained: TrainResult, fine_tuned: torch.Tensor,
                          depth: int) -> dict:
    """Per draw, Shachaf et al.'s eq. (5) prediction c P_perp beta(0) + X^+ y for the fine-tuned beta (c from
    ``coefficient(a, b, s, L)``, see ``depth_finetune.eq5_compare``) and its distance from ``fine_tuned`` against
    a tolerance of fine-tuning's integrator error (``flow_tolerance``) and of the pretrained weights' imbalance."""
    trials = draws.X.shape[0]
    weights = [w.expand(trials, *w.shape[1:]) for w in pretrained.weights]
    return eq5_compare(coefficient, interpolating_row_part, draws.X, draws.y, draws.beta_t,
                       pretrained.beta.expand(trials, -1), fine_tuned, depth, imbalance(weights),
                       flow_tol=flow_tolerance(depth))


ALPHA_TREND = (100.0, 10.0)   # the paired estimate is also made at these multiples of alpha ...
ALPHA_CAP = 0.1               # ... capped here: a pretraining scale beyond it is no longer small


@dataclass
class PairedTrend:
    fits: PairedFits   # at the run's alpha, from the network pretrained once
    trend: list[dict]  # {"alpha", "mean", "se"} of the paired gain at larger alphas, everything trained afresh

    @property
    def text(self) -> str:
        shown = ", ".join(f"{r['mean']:.4g} at alpha={r['alpha']:.0e}" for r in self.trend)
        return f"as alpha shrinks: {shown}" if self.trend else ""


def paired_with_alpha_trend(paired: Callable[..., PairedFits], draws: TargetDraws, depth: int, alpha: float,
                            init: str, gen: torch.Generator, pretrained: list[torch.Tensor], trend: bool = True,
                            progress: Callable[[str], None] | None = None) -> PairedTrend:
    """``paired`` (``scratch_minus_linear_transfer`` or ``scratch_minus_fine_tune``) on the same draws: from
    ``pretrained``, then (when ``trend``) everything afresh at ALPHA_TREND times alpha (capped at ALPHA_CAP,
    see ``estimates_at_larger_alpha``), to show the approach to alpha -> 0.  Raises ArithmeticError if a
    training has not converged."""
    fits = paired(draws, depth, alpha, init, gen, pretrained)
    rows = estimates_at_larger_alpha(alpha, lambda larger: paired(draws, depth, larger, init, gen).gain,
                                     ALPHA_TREND if trend else (), ALPHA_CAP, progress)
    return PairedTrend(fits, rows)


@dataclass
class Eq5Prediction:
    gain: float            # the mean R_sc - R_ft that eq. (5)'s per-draw beta_ft predicts on these draws
    worst: float           # the largest per-draw distance to the fine-tuned beta over its tolerance
    largest: float         # the largest per-draw distance, relative to ||c P_perp beta_s||
    mean_c: float          # the mean of eq. (5)'s coefficient c


def eq5_prediction(coefficient, draws: TargetDraws, pretrained: TrainResult, fine_tuned: torch.Tensor, depth: int,
                   scratch_risk: torch.Tensor) -> Eq5Prediction:
    """Shachaf et al.'s eq. (5) against fine-tuning on these draws (``fine_tune_against_eq5``), and the paired
    gain R_sc - R_ft it predicts given the scratch risks ``scratch_risk``."""
    m = fine_tune_against_eq5(coefficient, draws, pretrained, fine_tuned, depth)
    return Eq5Prediction((scratch_risk - excess_risk(m["predicted"], draws)).mean().item(),
                         (m["distance"] / m["tol"]).max().item(), m["distance"].max().item(),
                         m["c_pred"].mean().item())
