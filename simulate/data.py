"""Batched draws of the data the papers assume: designs, tasks at an angle.

Every function returns a leading ``trials`` dimension: one independent data set
per trial, so a whole Monte-Carlo experiment is one tensor program.

Designs are X = Z Sigma^{1/2} with Z of i.i.d. entries of mean 0 and variance 1
drawn from a :class:`Distribution`: every distribution gives rows with the same
mean (0) and covariance (Sigma), and they differ from the Gaussian one only in
higher moments.  That is what universality claims ("the risk depends only on the
first two moments") are about, and what ``--data`` varies in every linear check.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

__all__ = ["DISTRIBUTIONS", "Distribution", "GAUSSIAN", "design", "gaussian_design", "unit_vectors", "task_pair",
           "spiked_spectrum", "rotated_sqrt"]


@dataclass(frozen=True)
class Distribution:
    """The law of one design entry, standardised to mean 0 and variance 1.

    ``parameter`` is the degrees of freedom nu of ``student-t`` (an integer > 4, so
    that the fourth moment is finite; default 5) and the density p of ``sparse``
    (Bernoulli(p) times N(0, 1/p); default 1/2: at p = 1/4 a 20-dimensional row is zero
    with probability 3e-3 and small designs are often near-singular, so gradient
    methods stall -- a finite-size effect to ask for explicitly, sparse:1/4); the
    other laws have none.
    """

    name: str
    parameter: float | None = None

    def __post_init__(self):
        if self.name not in DISTRIBUTIONS:
            raise ValueError(f"unknown data distribution {self.name!r} (choose {', '.join(DISTRIBUTIONS)})")
        takes, default, check, domain = DISTRIBUTIONS[self.name]
        if not takes and self.parameter is not None:
            raise ValueError(f"data distribution {self.name!r} takes no parameter")
        if takes and self.parameter is None:
            object.__setattr__(self, "parameter", default)
        if takes and not check(self.parameter):
            raise ValueError(f"{self.name}:{self.parameter:g} is outside its domain ({takes} {domain})")

    def __str__(self) -> str:
        return self.name if self.parameter is None else f"{self.name}:{self.parameter:g}"

    @property
    def excess_kurtosis(self) -> float:
        """E z^4 - 3: 0 for the Gaussian; the size of the departure universality must survive."""
        return {"gaussian": lambda p: 0.0, "rademacher": lambda p: -2.0, "uniform": lambda p: -1.2,
                "student-t": lambda p: 6 / (p - 4), "sparse": lambda p: 3 / p - 3}[self.name](self.parameter)

    def sample(self, shape, gen: torch.Generator, dtype: torch.dtype = torch.float64) -> torch.Tensor:
        opts = dict(generator=gen, device=gen.device, dtype=dtype)
        if self.name == "gaussian":
            return torch.randn(shape, **opts)
        if self.name == "rademacher":
            return torch.randint(0, 2, shape, generator=gen, device=gen.device).to(dtype) * 2 - 1
        if self.name == "uniform":
            return (torch.rand(shape, **opts) * 2 - 1) * math.sqrt(3)
        if self.name == "student-t":
            nu = int(self.parameter)   # chi^2_nu as a sum of nu squared normals: exact, and on the generator
            chi2 = torch.randn((nu, *shape), **opts).pow(2).sum(0)
            return torch.randn(shape, **opts) / (chi2 / nu).sqrt() * math.sqrt((nu - 2) / nu)
        p = self.parameter
        keep = torch.rand(shape, **opts) < p
        return torch.randn(shape, **opts) * keep / math.sqrt(p)


# name -> (parameter name or "", default, domain check, domain text)
DISTRIBUTIONS = {
    "gaussian": ("", None, None, ""),
    "rademacher": ("", None, None, ""),
    "uniform": ("", None, None, ""),
    "student-t": ("nu", 5, lambda nu: nu == int(nu) and nu > 4, "an integer > 4"),
    "sparse": ("p", 0.5, lambda p: 0 < p <= 1, "in (0, 1]"),
}
GAUSSIAN = Distribution("gaussian")


def design(trials: int, n: int, d: int, gen: torch.Generator, data: Distribution = GAUSSIAN,
           cov_sqrt=None, dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """X of shape (trials, n, d) whose rows are i.i.d. Sigma^{1/2} z, z with i.i.d. ``data`` entries.

    ``cov_sqrt`` is None (Sigma = I), the vector of sqrt-eigenvalues of a diagonal
    Sigma, or a symmetric (d, d) square root (see :func:`rotated_sqrt`).  For
    Gaussian z a rotation-invariant task distribution makes diagonal Sigma general;
    for other laws the eigenbasis matters (a rotated basis mixes the coordinates).
    The Gaussian draws are those of the plain ``torch.randn`` design, so seeds
    reproduce earlier runs.
    """
    Z = data.sample((trials, n, d), gen, dtype)
    if cov_sqrt is None:
        return Z
    cov_sqrt = cov_sqrt.to(dtype)
    return Z @ cov_sqrt if cov_sqrt.dim() == 2 else Z * cov_sqrt


def gaussian_design(trials: int, n: int, d: int, gen: torch.Generator, cov_sqrt=None) -> torch.Tensor:
    """X of shape (trials, n, d) whose rows are i.i.d. N(0, Sigma) (see :func:`design`)."""
    return design(trials, n, d, gen, GAUSSIAN, cov_sqrt)


def unit_vectors(trials: int, d: int, gen: torch.Generator, dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """(trials, d) vectors drawn uniformly from the unit sphere."""
    v = torch.randn(trials, d, generator=gen, device=gen.device, dtype=dtype)
    return v / v.norm(dim=1, keepdim=True)


def task_pair(trials: int, d: int, theta: float, gen: torch.Generator,
              dtype: torch.dtype = torch.float64) -> tuple[torch.Tensor, torch.Tensor]:
    """Unit vectors (beta_s, beta_t) with beta_s . beta_t = cos(theta), uniformly rotated."""
    u = unit_vectors(trials, d, gen, dtype)
    w = torch.randn(trials, d, generator=gen, device=gen.device, dtype=dtype)
    w = w - (w * u).sum(1, keepdim=True) * u  # Gram-Schmidt: w orthogonal to u
    w = w / w.norm(dim=1, keepdim=True)
    return u, math.cos(theta) * u + math.sin(theta) * w


def spiked_spectrum(d: int, top: int, top_eig: float, bottom_eig: float, device) -> torch.Tensor:
    """Eigenvalues of a diagonal covariance: ``top`` of them ``top_eig``, the rest ``bottom_eig``."""
    eig = torch.full((d,), float(bottom_eig), dtype=torch.float64, device=device)
    eig[:top] = float(top_eig)
    return eig


def rotated_sqrt(eig: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """U diag(sqrt(eig)) U^T for a Haar-random rotation U: a covariance square root whose
    eigenbasis is not the coordinate basis."""
    q, r = torch.linalg.qr(torch.randn(eig.numel(), eig.numel(), generator=gen, device=gen.device, dtype=torch.float64))
    q = q * torch.sign(torch.diagonal(r)).unsqueeze(0)
    return (q * eig.sqrt()) @ q.T
