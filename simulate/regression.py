"""Monte-Carlo runs of regression estimators on freshly sampled Gaussian data.

Each function draws ``trials`` independent data sets and returns one sample of the
measured quantity per trial.  Large experiments are split into chunks of trials
to bound memory; the chunks are tensor programs, not loops over trials.
"""

from __future__ import annotations

import torch

from simulate.batching import batches
from simulate.data import GAUSSIAN, Distribution, design, unit_vectors
from simulate.estimators import min_norm_solution

__all__ = ["chunks", "min_norm_risk_samples"]

CHUNK_ELEMENTS = 2**24  # float64 entries of X per chunk: 128 MiB


def chunks(trials: int, per_trial_elements: int):
    """Sizes of consecutive chunks of trials whose design matrices fit CHUNK_ELEMENTS."""
    return batches(trials, max(1, CHUNK_ELEMENTS // max(1, per_trial_elements)))


def min_norm_risk_samples(n: int, d: int, sigma: float, trials: int, gen: torch.Generator,
                          data: Distribution = GAUSSIAN, dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """R = ||X^+ y - beta||^2 for y = X beta + eps, beta uniform on the unit sphere.

    X has i.i.d. ``data`` entries (mean 0, variance 1; Gaussian by default) and eps ~ N(0, sigma^2 I_n); R is the excess risk
    E_x (x^T (beta_hat - beta))^2 of the min-norm least-squares estimator.
    """
    risks = []
    for size in chunks(trials, n * d):
        X = design(size, n, d, gen, data, dtype=dtype)
        beta = unit_vectors(size, d, gen, dtype)
        eps = sigma * torch.randn(size, n, generator=gen, device=gen.device, dtype=dtype)
        y = (X @ beta.unsqueeze(-1)).squeeze(-1) + eps
        risks.append((min_norm_solution(X, y) - beta).pow(2).sum(1))
    return torch.cat(risks)
