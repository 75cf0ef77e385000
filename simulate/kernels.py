"""Gaussian expectations of ReLU units in closed form (torch, batched, differentiable).

For x ~ N(0, I_d) and weight vectors a, b at cosine u:

- E[relu(a.x) relu(b.x)] = |a| |b| k1(u),  k1(u) = (sqrt(1 - u^2) + u (pi - arccos u)) / (2 pi)
  (the order-1 arc-cosine kernel of Cho & Saul);
- E[1{a.x >= 0} 1{b.x >= 0}] = k0(u) = (pi - arccos u) / (2 pi).

These are what the trainers use for exact population losses; the claims that state
them are checked against quadrature and sampling elsewhere, not against this file.
"""

from __future__ import annotations

import math
from typing import Callable

import torch

__all__ = ["arccos0", "arccos1", "relu_gram", "ntk_gram", "cosine_kernel"]


class _ArcCos1(torch.autograd.Function):
    """k1 with its derivative k1'(u) = k0(u) written out: autograd through sqrt(1 - u^2)
    and arccos gives inf - inf = nan at u = +-1 (a unit paired with itself), where
    the true derivative, 1/2 at u = 1 and 0 at u = -1, is finite."""

    @staticmethod
    def forward(ctx, u):
        ctx.save_for_backward(u)
        return ((1 - u * u).clamp(min=0).sqrt() + u * (math.pi - torch.acos(u))) / (2 * math.pi)

    @staticmethod
    def backward(ctx, grad):
        (u,) = ctx.saved_tensors
        return grad * arccos0(u.detach())


def arccos1(u: torch.Tensor) -> torch.Tensor:
    """k1(u) for cosines u (clamped to [-1, 1] against rounding)."""
    return _ArcCos1.apply(u.clamp(-1.0, 1.0))


def arccos0(u: torch.Tensor) -> torch.Tensor:
    """k0(u) = P(a.x >= 0, b.x >= 0) for cosines u (not differentiable at u = +-1)."""
    return (math.pi - torch.acos(u.clamp(-1.0, 1.0))) / (2 * math.pi)


def relu_gram(A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
    """E_x[relu(a_i.x) relu(b_j.x)] for rows a_i of A (..., p, d) and b_j of B (..., q, d)."""
    na, nb = A.norm(dim=-1), B.norm(dim=-1)
    outer = na.unsqueeze(-1) * nb.unsqueeze(-2)
    cosine = (A @ B.transpose(-1, -2)) / outer.clamp(min=torch.finfo(A.dtype).tiny)
    return outer * arccos1(cosine)


def ntk_gram(X: torch.Tensor, Z: torch.Tensor) -> torch.Tensor:
    """H_ij = x_i.z_j k0(x_i.z_j) = E_w[x_i.z_j 1{w.x_i >= 0, w.z_j >= 0}], w ~ N(0, I), for unit rows
    (the infinite-width NTK Gram matrix of a two-layer ReLU net with a fixed readout)."""
    inner = X @ Z.transpose(-1, -2)
    # The angle as 2 atan2(|x - z|, |x + z|), exact for unit rows: arccos(x.z) at a rounded x.z = 1 - 1e-16
    # is 1.5e-8, which puts the diagonal H_ii off by ~3e-9.
    mode = "donot_use_mm_for_euclid_dist"
    angle = 2 * torch.atan2(torch.cdist(X, Z, compute_mode=mode), torch.cdist(X, -Z, compute_mode=mode))
    return inner * (math.pi - angle) / (2 * math.pi)


def cosine_kernel(kernel: Callable[[torch.Tensor], torch.Tensor]):
    """The Gram-matrix function (X, Z) -> kernel(x_i.z_j) of a kernel of the cosine, for unit rows (the cosines
    clamped to [-1, 1] against rounding)."""
    return lambda X, Z: kernel((X @ Z.T).clamp(-1, 1))
