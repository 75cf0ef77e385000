"""The per-unit penalty of pretraining + fine-tuning a ReLU unit, minimised globally in float64 torch.

A unit with pretrained first-layer weight w0 and readout re-initialised to gamma represents the
fine-tuned function (direction w_hat, signed magnitude m) at the least squared parameter deviation
min_{u>0} (m/u - gamma)^2 + ||u w_hat - w0||^2 (u = ||w1||, w2 = m/u).  These functions draw such
units, pretrain ||w0||, and find that minimum with ``simulate.minimize.global_minimum`` (a log grid
over a bracket that holds every stationary point, sign changes of the autograd derivative bisected),
without using the quartic whose root is claimed to give it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from numerics.penalty_tables import rounding_scale
from simulate.minimize import Minimum, global_minimum

__all__ = ["penalty_bracket", "rotated_unit_pair", "draw_penalty_points", "pretrained_unit_norm", "VectorSearch",
           "vector_penalty_search", "penalty_and_log_slope"]


def penalty_bracket(rho, m0, m, gamma):
    """numerics.ptft_penalty.stationary_bracket in torch, widened by 2 on each side: every positive
    stationary point of p(u) = (m/u - gamma)^2 + u^2 + m0^2 - 2 u m0 rho lies strictly inside."""
    inf = torch.full_like(m, math.inf)
    size = m.abs()
    upper = 2 * (m0 + (gamma * m).abs().pow(1 / 3) + size.sqrt())
    lower = size.sqrt() / 2
    lower = torch.minimum(lower, torch.where(gamma != 0, size / (2 * gamma.abs()), inf))
    lower = torch.minimum(lower, torch.where(m0 > 0, (size * size / (4 * m0)).pow(1 / 3), inf))
    return lower / 2, 2 * upper


def rotated_unit_pair(rho, gen, dim):
    """Unit vectors (w0_hat, w_hat) in R^dim per row of ``rho``, uniformly rotated, with cosine rho."""
    shape = (rho.shape[0], dim)
    a = torch.randn(shape, generator=gen, device=rho.device, dtype=rho.dtype)
    b = torch.randn(shape, generator=gen, device=rho.device, dtype=rho.dtype)
    a = a / a.norm(dim=1, keepdim=True)
    b = b - (b * a).sum(1, keepdim=True) * a
    b = b / b.norm(dim=1, keepdim=True)
    return a, rho[:, None] * a + (1 - rho * rho).clamp(min=0).sqrt()[:, None] * b


def draw_penalty_points(point, trials, gen, device, log_range, gamma_range):
    """The requested ``point`` (a dict with rho, m_aux, m, gamma), then ``trials`` draws: rho uniform on
    [-1, 1], m_aux and |m| log-uniform on ``log_range``, sign of m +-1, gamma uniform on ``gamma_range``.
    Returns a dict of float64 tensors of length trials + 1."""
    dtype = torch.float64
    uniform = lambda lo, hi: lo + (hi - lo) * torch.rand(trials, generator=gen, device=device, dtype=dtype)
    log_uniform = lambda lo, hi: torch.exp(uniform(math.log(lo), math.log(hi)))
    sign = torch.where(torch.rand(trials, generator=gen, device=device, dtype=dtype) < 0.5, -1.0, 1.0)
    draws = {"rho": uniform(-1.0, 1.0), "m_aux": log_uniform(*log_range), "m": sign * log_uniform(*log_range),
             "gamma": uniform(*gamma_range)}
    return {name: torch.cat([torch.tensor([point[name]], dtype=dtype, device=device), values])
            for name, values in draws.items()}


def pretrained_unit_norm(m_aux):
    """||w0|| of the least-norm unit with coefficient m_aux, trained from w = 0: min_s (m_aux/s)^2 + s^2
    (the penalty with w0 = 0, gamma = 0), found by the same global search; its minimiser s, per row."""
    zero = torch.zeros_like(m_aux)
    fit = global_minimum(lambda s, rows: (m_aux[rows, None] / s) ** 2 + s**2, *penalty_bracket(zero, zero, m_aux, zero))
    return fit.u


@dataclass
class VectorSearch:
    """Per row: the pretrained norm ||w0|| and the global minimum over u of the vector penalty."""

    m0: torch.Tensor
    fit: Minimum


def vector_penalty_search(rho, m_aux, m, gamma, gen, dim) -> VectorSearch:
    """Per row: pretrain ||w0|| to coefficient m_aux (``pretrained_unit_norm``), draw a rotated pair
    (w0_hat, w_hat) in R^dim at cosine rho, and minimise (m/u - gamma)^2 + ||u w_hat - w0||^2 over u > 0
    globally; the vectors, not their cosine, enter the objective."""
    m0 = pretrained_unit_norm(m_aux)
    w0_hat, w_hat = rotated_unit_pair(rho, gen, dim)
    w0 = m0[:, None] * w0_hat
    objective = lambda u, rows: ((m[rows, None] / u - gamma[rows, None]) ** 2
                                 + (u[..., None] * w_hat[rows, None, :] - w0[rows, None, :]).pow(2).sum(-1))
    return VectorSearch(m0, global_minimum(objective, *penalty_bracket(rho, m0, m, gamma)))


def penalty_and_log_slope(points, gamma, m0_fn, penalty_fn, device, log_step):
    """(r~, s) per point (rho, m_aux, m) at one gamma: r~ = min_u penalty_fn(u, rho, m0_fn(m_aux), m, gamma)
    found globally in float64, and s = d log r~ / d log m by central differences of step ``log_step`` in
    log m (as Fig. 1b was "computed empirically").  Returns that table, per point the rounding scale of p at
    the minimiser (``numerics.penalty_tables.rounding_scale``), and per point the bound on r~'s minimisation
    error (``Minimum.error``)."""
    dtype = torch.float64
    base = torch.tensor(points, dtype=dtype, device=device)
    shifts = torch.tensor([0.0, log_step, -log_step], dtype=dtype, device=device)
    rho = base[:, 0].repeat(3)
    m0 = m0_fn(base[:, 1]).repeat(3)
    m = (base[:, 2][None, :] * torch.exp(shifts)[:, None]).reshape(-1)
    g = torch.full_like(m, float(gamma))
    objective = lambda u, rows: penalty_fn(u, rho[rows, None], m0[rows, None], m[rows, None], g[rows, None])
    fit = global_minimum(objective, *penalty_bracket(rho, m0, m, g))
    value = fit.value.reshape(3, -1)
    slope = (value[1].log() - value[2].log()) / (2 * log_step)
    scale = rounding_scale(fit.u.reshape(3, -1)[0], rho[: len(points)], m0[: len(points)], m[: len(points)],
                           float(gamma))
    error = fit.error.reshape(3, -1)[0]
    return ({p: (value[0, i].item(), slope[i].item()) for i, p in enumerate(points)},
            {p: scale[i].item() for i, p in enumerate(points)}, {p: error[i].item() for i, p in enumerate(points)})
