"""Two papers, one procedure: their predictions side by side on the same simulation.

Fine-tuning every layer of a pretrained deep linear network by gradient flow is
predicted twice:

* Features are fate, Thm 3.9 (eq. 142 of its proof, giving eqs. 16-17):
  beta_ft = beta_sc + P_perp beta_s, with beta_sc = X^+ y the scratch network's limit;
* Shachaf et al., Thm 5.2 (eq. 5): beta_ft = c P_perp theta_S + X^+ y, with c =
  (||beta_ft|| / ||theta_S||)^((L-1)/L) solving eq. (5) per draw (the paper's
  noiseless P_par theta_T is X^+ y once labels are noisy: the part in row(X) of any
  interpolator).

``finetune_side_by_side`` pretrains and fine-tunes real networks (RK4 gradient flow,
as the ``depth-rescaling`` check does) and scores both predictions per draw and in
risk, for noiseless and noisy targets, depths and initialisations.  A row's
verdict for each paper: "per draw" if every draw's trained beta is within the
integrator's tolerance of the prediction, "in risk" if only the mean risks agree
(two-sided paired z-test), "off" otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from numerics.depth_rescaling import rescaling_coefficient
from simulate.data import gaussian_design, task_pair
from simulate.device import generator
from simulate.estimators import min_norm_solution, row_space_projector
from simulate.stats import estimate, paired_estimate, z_critical
from numerics.expr import ExpressionError, parse_number
from theorems.core import Parameter, ParameterError, Run
from simulate.depth_finetune import eq5_tolerance, fine_tune_all, imbalance, per_draw_values, pretrain_population

__all__ = ["ComparisonRow", "finetune_side_by_side", "run_comparison", "COMPARISONS"]

FALSE_ALARM = 1e-3      # per row and paper: the risk z-test's two-sided false-alarm rate
COMPARISON_TRIALS = 32  # draws per row unless --trials says otherwise


@dataclass
class ComparisonRow:
    setting: dict                 # init, sigma, L
    risk: object                  # Estimate of the trained network's excess risk ||beta_ft - theta_T||^2
    predictions: dict             # paper -> {"risk": mean predicted risk, "z": paired z, "distance": max per-draw
                                  #           distance / ||P_perp theta_S||, "tolerance": ..., "verdict": ...}
    note: str = ""


def _score(beta, predicted, theta_t, scale, tolerance, z_crit):
    risk = (beta - theta_t).pow(2).sum(1)
    predicted_risk = (predicted - theta_t).pow(2).sum(1)
    difference = paired_estimate(risk, predicted_risk)
    z = difference.mean / difference.se if difference.se > 0 else 0.0
    distance = (beta - predicted).norm(dim=1) / scale
    verdict = "per draw" if bool((distance <= tolerance).all()) else ("in risk" if abs(z) <= z_crit else "off")
    return {"risk": predicted_risk.mean().item(), "z": z, "distance": distance.max().item(),
            "tolerance": tolerance.max().item(), "verdict": verdict}


def finetune_side_by_side(*, d=40, gamma=0.5, theta=1.0471975511965976, sigmas=(0.0, 1.0), depths=(2, 3),
                          inits=("balanced", "eq22"), alpha=1e-2, trials=COMPARISON_TRIALS, run: Run | None = None) -> list[ComparisonRow]:
    """Rows over (init, sigma, L); the same X, tasks and noise draws for every row of one seed."""
    run = run or Run()
    n = round(gamma * d)
    z_crit = z_critical(FALSE_ALARM)
    rows = []
    for init in inits:
        for sigma in sigmas:
            for L in depths:
                gen = generator(run.seed_for("compare-finetune", {"d": d, "gamma": gamma, "theta": theta}), run.device)
                X = gaussian_design(trials, n, d, gen)
                theta_s, theta_t = task_pair(trials, d, theta, gen)
                y = (X @ theta_t.unsqueeze(-1)).squeeze(-1) + sigma * torch.randn(
                    trials, n, generator=gen, device=gen.device, dtype=torch.float64)
                run.progress(f"init={init}, sigma={sigma:g}, L={L}: pretraining and fine-tuning")
                pre = pretrain_population(theta_s, L, alpha, init == "balanced", gen)
                ft = fine_tune_all(X, y, pre.weights)
                if not (bool(pre.converged.all()) and bool(ft.converged.all())):
                    raise ArithmeticError(f"training not converged (init={init}, sigma={sigma}, L={L})")
                row_part = min_norm_solution(X, y)                    # X^+ y: every interpolator's row(X) part
                P = row_space_projector(X)
                perp_s = pre.beta - (P @ pre.beta.unsqueeze(-1)).squeeze(-1)
                scale = perp_s.norm(dim=1)
                tolerance = eq5_tolerance(L, imbalance(pre.weights), torch.minimum(pre.beta.norm(dim=1), ft.beta.norm(dim=1)))
                c = per_draw_values(rescaling_coefficient, perp_s.pow(2).sum(1), row_part.pow(2).sum(1), pre.beta.norm(dim=1), L)
                predictions = {
                    "Features are fate eq. (142)": _score(ft.beta, row_part + perp_s, theta_t, scale, tolerance, z_crit),
                    "Shachaf et al. eq. (5)": _score(ft.beta, row_part + c.unsqueeze(-1) * perp_s, theta_t, scale,
                                                     tolerance, z_crit),
                }
                rows.append(ComparisonRow({"init": init, "sigma": sigma, "L": L},
                                          estimate((ft.beta - theta_t).pow(2).sum(1)), predictions,
                                          note=f"c = {c.mean().item():.4f} (range {c.min().item():.3f}..{c.max().item():.3f})"))
    return rows


# Scalars take one value; the list parameters take comma lists (one row per combination).
PARAMETERS = {
    "d": Parameter("d", "input dimension", "40", lower="4", upper="400", integer=True),
    "gamma": Parameter("gamma", "n/d (the theorems need n < d)", "1/2", lower="0", upper="1", lower_open=True, upper_open=True),
    "theta": Parameter("theta", "angle between the tasks", "pi/3", lower="0", upper="pi"),
    "alpha": Parameter("alpha", "init scale before pretraining", "1e-2", lower="1e-6", upper="1/2"),
    "sigmas": Parameter("sigmas", "label-noise stds (comma list)", "0,1", lower="0"),
    "depths": Parameter("depths", "depths L (comma list)", "2,3", lower="1", upper="6", integer=True),
}
LISTS = ("sigmas", "depths")


def resolve(overrides: dict[str, str]) -> dict:
    """Validated keyword arguments of finetune_side_by_side; ParameterError names the bad one."""
    unknown = sorted(set(overrides) - set(PARAMETERS))
    if unknown:
        raise ParameterError(f"unknown parameter {unknown[0]!r} for compare (choose {', '.join(PARAMETERS)})")
    values = {}
    for name, parameter in PARAMETERS.items():
        text = overrides.get(name, parameter.default)
        try:
            parsed = [parameter.validate(parse_number(item)) for item in text.split(",")]
        except ExpressionError as error:
            raise ParameterError(f"{name}: {error}") from None
        if name not in LISTS and len(parsed) > 1:
            raise ParameterError(f"{name} takes one value, got {text!r}")
        kind = int if parameter.integer else float
        values[name] = tuple(kind(v) for v in parsed) if name in LISTS else kind(parsed[0])
    return values


COMPARISONS = {"finetune": (
    "Fine-tuning a pretrained deep linear network: Features are fate Thm 3.9 vs Shachaf et al. Thm 5.2",
    finetune_side_by_side, resolve)}


def run_comparison(names: list[str], request, trials: int | None, progress=lambda message: None):
    """``verify.py compare [NAME]``: (title, rows, the JSON payload) at ``trials`` draws (None: COMPARISON_TRIALS);
    an unknown name, a bad --param, more than 100 times the default draws or a run beyond the machine's memory
    is a one-line InputError."""
    import torch

    from engine.session import InputError
    from simulate.device import exhausted_resource
    from theorems.core import ParameterError, Run
    trials = trials or COMPARISON_TRIALS
    if trials > 100 * COMPARISON_TRIALS:
        raise InputError(f"--trials {trials}: compare runs at most {100 * COMPARISON_TRIALS} (100 times its default)")
    if len(names) > 1 or names[0] not in COMPARISONS:
        raise InputError(f"unknown comparison {' '.join(names)!r} (choose {', '.join(COMPARISONS)})")
    title, simulate_rows, resolve_params = COMPARISONS[names[0]]
    try:
        kwargs = resolve_params(request.params)
    except ParameterError as error:
        raise InputError(str(error)) from None
    run = Run(tier=request.tier, seed=request.seed, device=torch.device(request.device), progress=progress)
    try:
        rows = simulate_rows(trials=trials, run=run, **kwargs)
    except (MemoryError, OverflowError, TypeError, RuntimeError) as error:
        reason = exhausted_resource(error)       # e.g. 3200 draws of depth-6 networks at d = 400 on a small machine
        if reason is None:
            raise
        raise InputError(f"compare {names[0]} cannot be simulated here: {reason}") from None
    payload = {"comparison": names[0], "seed": request.seed,
               "rows": [{"setting": row.setting, "risk": row.risk.mean, "risk_se": row.risk.se,
                         "predictions": row.predictions, "note": row.note} for row in rows]}
    return title, rows, payload
