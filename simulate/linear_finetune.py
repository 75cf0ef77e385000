"""Fine-tuning a linear model by gradient descent from the source task (Shachaf et al., Sec. 4 setting),
and how far its end point is from a claimed limit, in units of what GD's final training loss certifies.

The certificate: if w - w_claim lies in row(X) and X w_claim = y, then
||w - w_claim||^2 <= ||X (w - w_claim)||^2 / lambda_min^+(X X^T) = 2 n loss / lambda_min^+(X X^T),
a bound from the training loss alone; a wrong limit violates it.  The risk of w then lies within
what that distance allows of the claimed risk.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from simulate.data import design, spiked_spectrum, task_pair
from simulate.estimators import row_space_projector, smallest_positive_eigenvalue
from simulate.linear_nets import TrainResult, empirical, train

__all__ = ["GD_TOL", "LinearFinetune", "finetune_from_source", "certified_gaps", "row_space_part"]


GD_TOL = 1e-11   # finetune_from_source stops GD at ||grad|| <= GD_TOL ||X^T y|| / n


@dataclass
class LinearFinetune:
    X: torch.Tensor           # (trials, n, d), rows ~ N(0, diag(eig))
    eig: torch.Tensor         # (d,) the diagonal of Sigma
    theta_s: torch.Tensor     # (trials, d) unit source tasks
    theta_t: torch.Tensor     # (trials, d) unit target tasks at the given angle
    fit: TrainResult          # GD from theta_S on the target's data


def finetune_from_source(trials, n, d, theta, top, top_eig, bottom_eig, gen, data, device) -> LinearFinetune:
    """Draw X with rows Sigma^{1/2} z (Sigma diagonal: ``top_eig`` on the first ``top`` coordinates, ``bottom_eig``
    elsewhere), unit tasks theta_S, theta_T at angle theta, noiseless y = X theta_T, and run GD on
    1/(2n) ||y - X w||^2 from w(0) = theta_S to ||grad|| <= GD_TOL ||X^T y|| / n (at most 200000 steps)."""
    eig = spiked_spectrum(d, top, top_eig, bottom_eig, device)
    X = design(trials, n, d, gen, data, cov_sqrt=eig.sqrt())
    theta_s, theta_t = task_pair(trials, d, theta, gen)
    y = (X @ theta_t.unsqueeze(-1)).squeeze(-1)
    fit = train(empirical(X, y), [theta_s.unsqueeze(-1)], tol=GD_TOL, max_steps=200000, step_scale=1.0)
    return LinearFinetune(X, eig, theta_s, theta_t, fit)


def certified_gaps(ft: LinearFinetune, limit, risk, rounding) -> dict:
    """Per draw: ``limit`` = ||w - limit|| over the certified distance sqrt(2 n loss / lambda_min^+(X X^T)) (plus
    ``rounding`` (1 + ||w||)); ``risk`` = |R(w) - risk| over the most that distance d allows, L d (2 sqrt(risk)
    + L d) with L = sqrt(lambda_max(Sigma)) (plus ``rounding``); ``population_risk`` = R(w) =
    (w - theta_T)^T Sigma (w - theta_T); ``risk_shift`` = the most R can still move from R(w) to the limit's,
    L d (2 sqrt(R(w)) + L d).  ``limit`` (trials, d) and ``risk`` (trials,) are the claim's."""
    X, w, n = ft.X, ft.fit.beta, ft.X.shape[-2]
    # lambda_min^+: the bound holds on row(X) also where X X^T is singular (a rank-deficient design, zero-rows:Q)
    lam_min = smallest_positive_eigenvalue(X @ X.transpose(-1, -2))
    floor = rounding * (1 + w.norm(dim=1))
    certified = (2 * n * ft.fit.loss / lam_min).sqrt() + floor
    population_risk = (ft.eig * (w - ft.theta_t).pow(2)).sum(1)
    lip = ft.eig.max().sqrt() * certified
    return {"limit": (w - limit).norm(dim=1) / certified, "population_risk": population_risk,
            "risk": (population_risk - risk).abs() / (lip * (2 * risk.clamp(min=0).sqrt() + lip) + rounding),
            "risk_shift": lip * (2 * population_risk.sqrt() + lip)}


def row_space_part(X: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """P_par v per draw: the orthogonal projection of v (trials, d) onto the row space of X (trials, n, d)."""
    return (row_space_projector(X) @ v.unsqueeze(-1)).squeeze(-1)
