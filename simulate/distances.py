"""Draws from the joint laws p_beta(x, y) = N(x; 0, I_d) N(y; beta . x, sigma^2) of two linear
teachers, and per-draw statistics whose means are distances between two such laws.

Draws come in chunks (x has d columns, so a few million draws do not sit in memory at
once); every statistic is one number per draw, so its mean has an honest standard error.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import torch

from simulate.batching import batches
from simulate.data import task_pair
from simulate.stats import Estimate, estimate

__all__ = ["JointDraws", "teacher_directions", "scaled_teachers", "per_draw", "log_likelihood_ratio", "l1_terms",
           "label_test_difference", "half_cosine", "tent", "JointSampler"]

CHUNK = 2**16


@dataclass(frozen=True)
class JointDraws:
    """x ~ N(0, I_d) and one noise draw e ~ N(0, 1) per row, with both teachers' outputs and labels
    on them: y_f = f(x) + sigma e ~ p_f and y_g = g(x) + sigma e ~ p_g (common random numbers)."""

    x: torch.Tensor
    f: torch.Tensor
    g: torch.Tensor
    y_f: torch.Tensor
    y_g: torch.Tensor


def teacher_directions(d: int, theta: float, gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """Unit vectors (u_f, u_g) in R^d at angle theta, uniformly rotated; beta = norm * u."""
    u_f, u_g = task_pair(1, d, theta, gen)
    return u_f[0], u_g[0]


def scaled_teachers(d: int, theta: float, norm_f: float, norm_g: float, gen: torch.Generator,
                    device) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(beta_f, beta_g, u_g) on ``device``: beta_f = norm_f u_f, beta_g = norm_g u_g for the unit directions
    (u_f, u_g) of ``teacher_directions``; u_g is returned too, to place other g along beta_g's direction."""
    u_f, u_g = teacher_directions(d, theta, gen)
    return norm_f * u_f.to(device), norm_g * u_g.to(device), u_g.to(device)


def per_draw(count: int, beta_f: torch.Tensor, beta_g: torch.Tensor, sigma: float, gen: torch.Generator,
             statistic: Callable[[JointDraws], torch.Tensor], dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """``statistic`` of ``count`` independent joint draws, one value per draw (in ``dtype``)."""
    beta_f, beta_g = beta_f.to(dtype), beta_g.to(dtype)
    values = []
    for size in batches(count, CHUNK):
        x = torch.randn(size, beta_f.numel(), generator=gen, device=gen.device, dtype=dtype)
        e = torch.randn(size, generator=gen, device=gen.device, dtype=dtype)
        f, g = x @ beta_f, x @ beta_g
        values.append(statistic(JointDraws(x, f, g, f + sigma * e, g + sigma * e)))
    return torch.cat(values)


def _log_normal(y, mean, sigma):
    return -0.5 * ((y - mean) / sigma) ** 2 - math.log(sigma) - 0.5 * math.log(2 * math.pi)


def log_likelihood_ratio(draws: JointDraws, sigma: float) -> torch.Tensor:
    """log p_f(x, y) - log p_g(x, y) at (x, y_f) ~ p_f; the x-density is common and cancels.
    Its mean is D_KL(p_f || p_g)."""
    return _log_normal(draws.y_f, draws.f, sigma) - _log_normal(draws.y_f, draws.g, sigma)


def l1_terms(draws: JointDraws, sigma: float) -> torch.Tensor:
    """2 (1 - p_g/p_f)_+ at (x, y_f) ~ p_f; its mean is ||p_f - p_g||_1."""
    return 2 * (1 - torch.exp(-log_likelihood_ratio(draws, sigma))).clamp(min=0)


def label_test_difference(draws: JointDraws, h: Callable[[torch.Tensor], torch.Tensor]) -> torch.Tensor:
    """h(y_f) - h(y_g) for a test function of the label; its mean is E_{p_f} h - E_{p_g} h."""
    return h(draws.y_f) - h(draws.y_g)


def half_cosine(y: torch.Tensor) -> torch.Tensor:
    """The test function cos(y)/2 of the proof of Thm 2.2 (eq. (26))."""
    return torch.cos(y) / 2


def tent(r: float, height: float) -> Callable[[torch.Tensor], torch.Tensor]:
    """y -> height (1 - 2 min(|y|/r, 1)): sup norm ``height``, Lipschitz constant 2 height / r."""
    return lambda y: height * (1 - 2 * (y.abs() / r).clamp(max=1))


@dataclass(frozen=True)
class JointSampler:
    """Monte-Carlo means over p_f for one teacher f against any g: every call draws ``count`` fresh joint
    draws from ``gen`` (``per_draw``, in ``dtype``), so successive calls are independent estimates, in the
    order they are made."""

    count: int
    beta_f: torch.Tensor
    sigma: float
    gen: torch.Generator
    dtype: torch.dtype = torch.float64

    def mean(self, beta_g: torch.Tensor, statistic: Callable[[JointDraws], torch.Tensor]) -> Estimate:
        """The mean of ``statistic`` over fresh draws, with its standard error."""
        return estimate(per_draw(self.count, self.beta_f, beta_g, self.sigma, self.gen, statistic, self.dtype))

    def kl(self, beta_g: torch.Tensor) -> Estimate:
        """D_KL(p_f || p_g), the mean log-likelihood ratio."""
        return self.mean(beta_g, lambda draws: log_likelihood_ratio(draws, self.sigma))

    def l1(self, beta_g: torch.Tensor) -> Estimate:
        """||p_f - p_g||_1."""
        return self.mean(beta_g, lambda draws: l1_terms(draws, self.sigma))

    def test_gap(self, beta_g: torch.Tensor, h: Callable[[torch.Tensor], torch.Tensor]) -> Estimate:
        """E_{p_f} h - E_{p_g} h for a test function h of the label."""
        return self.mean(beta_g, lambda draws: label_test_difference(draws, h))

    def test_gap_ladder(self, direction: torch.Tensor, h: Callable[[torch.Tensor], torch.Tensor],
                        norms) -> list[dict]:
        """``test_gap`` at beta_g = s * direction for each s in ``norms``, in order: rows {"norm_g": s, "mean",
        "se"}."""
        return [{"norm_g": s, "mean": gap.mean, "se": gap.se}
                for s, gap in ((s, self.test_gap(s * direction, h)) for s in norms)]
