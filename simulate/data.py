"""Batched draws of the data the papers assume: Gaussian designs, tasks at an angle.

Every function returns a leading ``trials`` dimension: one independent data set
per trial, so a whole Monte-Carlo experiment is one tensor program.
"""

from __future__ import annotations

import math

import torch

__all__ = ["gaussian_design", "unit_vectors", "task_pair", "spiked_spectrum"]


def gaussian_design(trials: int, n: int, d: int, gen: torch.Generator, cov_sqrt=None) -> torch.Tensor:
    """X of shape (trials, n, d) whose rows are i.i.d. N(0, Sigma).

    ``cov_sqrt`` is None (Sigma = I) or the vector of sqrt-eigenvalues of a
    diagonal Sigma; a rotation-invariant task distribution makes diagonal Sigma
    general.
    """
    X = torch.randn(trials, n, d, generator=gen, device=gen.device, dtype=torch.float64)
    return X if cov_sqrt is None else X * cov_sqrt


def unit_vectors(trials: int, d: int, gen: torch.Generator) -> torch.Tensor:
    """(trials, d) vectors drawn uniformly from the unit sphere."""
    v = torch.randn(trials, d, generator=gen, device=gen.device, dtype=torch.float64)
    return v / v.norm(dim=1, keepdim=True)


def task_pair(trials: int, d: int, theta: float, gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """Unit vectors (beta_s, beta_t) with beta_s . beta_t = cos(theta), uniformly rotated."""
    u = unit_vectors(trials, d, gen)
    w = torch.randn(trials, d, generator=gen, device=gen.device, dtype=torch.float64)
    w = w - (w * u).sum(1, keepdim=True) * u  # Gram-Schmidt: w orthogonal to u
    w = w / w.norm(dim=1, keepdim=True)
    return u, math.cos(theta) * u + math.sin(theta) * w


def spiked_spectrum(d: int, top: int, top_eig: float, bottom_eig: float, device) -> torch.Tensor:
    """Eigenvalues of a diagonal covariance: ``top`` of them ``top_eig``, the rest ``bottom_eig``."""
    eig = torch.full((d,), float(bottom_eig), dtype=torch.float64, device=device)
    eig[:top] = float(top_eig)
    return eig
