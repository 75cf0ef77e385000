"""Unit vectors on the sphere S^{d-1} for the kernel checks: inputs with one prescribed cosine, and a
fixed student/teacher pair of ReLU layers drawn from a seed of its own.
"""

from __future__ import annotations

import math

import torch

__all__ = ["unit_at_cosine", "inputs_with_cosine", "seeded_student_teacher", "unit_pair"]


def unit_at_cosine(x0: torch.Tensor, u: float, gen: torch.Generator) -> torch.Tensor:
    """A unit vector at cosine u with the unit vector x0, uniformly rotated about it (exactly +-x0 at u = +-1)."""
    v = torch.randn(x0.shape, generator=gen, device=gen.device, dtype=torch.float64)
    v = v - (v @ x0) * x0
    return u * x0 + math.sqrt(max(0.0, 1 - u * u)) * v / v.norm()


def inputs_with_cosine(n_p: int, n_q: int, d: int, u: float, gen: torch.Generator):
    """Two sets of unit inputs (n_p and n_q rows), uniform on S^{d-1}, except that the second row of the
    first set and the first row of the second are at cosine u with the first row of the first set."""
    def sphere(count):
        x = torch.randn(count, d, generator=gen, device=gen.device, dtype=torch.float64)
        return x / x.norm(dim=1, keepdim=True)
    X_P, X_Q = sphere(n_p), sphere(n_q)
    X_P[1] = unit_at_cosine(X_P[0], u, gen)
    X_Q[0] = unit_at_cosine(X_P[0], u, gen)
    return X_P, X_Q


def seeded_student_teacher(d: int, m: int, m_star: int, shared: int, seed: int):
    """A student (m units) and a teacher (m* units, readout c*) drawn by a CPU generator seeded with
    ``seed`` alone, float64 on CPU: the same under every run seed and device, so that the pair can be
    part of a claim's statement.  Units uniform on S^{d-1}; the first ``shared`` teacher units are
    copied into the student; readout c*_j uniform in {-1, 1}.  Returns (W, W_star, c_star)."""
    gen = torch.Generator().manual_seed(seed)
    W = torch.randn(m, d, generator=gen, dtype=torch.float64)
    W_star = torch.randn(m_star, d, generator=gen, dtype=torch.float64)
    W, W_star = W / W.norm(dim=1, keepdim=True), W_star / W_star.norm(dim=1, keepdim=True)
    W[:shared] = W_star[:shared]
    c_star = torch.randint(0, 2, (m_star,), generator=gen).double() * 2 - 1
    return W, W_star, c_star


def unit_pair(u) -> torch.Tensor:
    """Two float64 rows at cosine u: e_1 and (u, sqrt(1 - u^2)), unit to rounding (a certificate uses their
    exact float64 entries)."""
    u = float(u)
    return torch.tensor([[1.0, 0.0], [u, math.sqrt(max(0.0, 1 - u * u))]], dtype=torch.float64)
