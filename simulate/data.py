"""Batched draws of the data the papers assume: designs, tasks at an angle.

Every function returns a leading ``trials`` dimension: one independent data set
per trial, so a whole Monte-Carlo experiment is one tensor program.

Designs are X = Z Sigma^{1/2} with the rows of Z drawn from a :class:`Distribution`.
The *standardised* laws have i.i.d. entries of mean 0 and variance 1: every one gives
rows with the same mean (0) and covariance (Sigma), and they differ from the Gaussian
one only in higher moments.  That is what universality claims ("the risk depends only
on the first two moments") are about, and what ``--data`` varies in every linear check.

The *stress* laws break one assumption a proof may make about the inputs on purpose
(``theorems.core.INPUT_ASSUMPTIONS`` says which law breaks which) and keep the second
moment E z z^T = I wherever it can be kept, so that a check's risk ||Sigma^{1/2}(w - theta)||^2
stays the population risk of the law that drew the data:

- ``gamma:K``: i.i.d. centred, standardised Gamma(K) entries (G - K)/sqrt(K) (K = 1: the centred
  exponential E - 1), skewness 2/sqrt(K): breaks symmetric entries;
- ``shifted:MU``: Gaussian rows with mean MU u (u = (1, ..., 1)/sqrt(d): every entry's mean is MU/sqrt(d))
  and second moment I, so covariance I - MU^2 u u^T: breaks centring alone (keeping the covariance
  instead, with entries MU + g, would move the second moment to I + MU^2 d u u^T, and a check's risk
  would no longer be the population risk: two assumptions broken, not one);
- ``sphere``: rows uniform on the sphere of radius sqrt(d): centred, second moment I, rotation
  invariant, but not Gaussian (a fixed norm, dependent entries);
- ``zero-rows:Q``: each row 0 with probability Q, else N(0, I/(1 - Q)): second moment I, rotation
  invariant, and X X^T singular with probability 1 - (1 - Q)^n: breaks full rank;
- ``anisotropic:A``: independent Gaussian entries, variance 1 + A on the first floor(d/2)
  coordinates and 1 - A on the last floor(d/2) (1 on the middle one of odd d): mean 0 and
  trace d kept, second moment diag(1 +- A) != I: breaks isotropy.

:meth:`Distribution.row_moments` states each law's mean and second moment; the tests check them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

__all__ = ["DISTRIBUTIONS", "Distribution", "GAUSSIAN", "design", "gaussian_design", "unit_vectors", "task_pair",
           "spiked_spectrum", "rotated_sqrt"]


@dataclass(frozen=True)
class Distribution:
    """The law of the design's rows: i.i.d. entries standardised to mean 0 and variance 1 for the
    standardised laws (``entrywise``), a law of whole rows for the stress laws (module docstring).

    ``parameter`` is the degrees of freedom nu of ``student-t`` (an integer > 4, so
    that the fourth moment is finite; default 5) and the density p of ``sparse``
    (Bernoulli(p) times N(0, 1/p); default 1/2: at p = 1/4 a 20-dimensional row is zero
    with probability 3e-3 and small designs are often near-singular, so gradient
    methods stall -- a finite-size effect to ask for explicitly, sparse:1/4); the shape
    K of ``gamma`` (a positive multiple of 1/2, drawn exactly as chi^2_{2K}/2; default 1),
    the mean's norm MU of ``shifted`` (default 9/10), the zero-row probability Q of
    ``zero-rows`` (default 1/10) and the spread A of ``anisotropic`` (default 3/5:
    variances 1.6 and 0.4); the other laws have none.
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
    def entrywise(self) -> bool:
        """Whether the entries are i.i.d. (mean 0, variance 1): ``sample`` then draws any shape of entries;
        the other laws draw whole rows along the last axis."""
        return self.name not in ROW_LAWS

    @property
    def excess_kurtosis(self) -> float:
        """E z^4 - 3 of an entry: 0 for the Gaussian; the size of the departure universality must survive."""
        if not self.entrywise:
            raise ValueError(f"{self} is a law of rows: its entries' kurtosis depends on d")
        return {"gaussian": lambda p: 0.0, "rademacher": lambda p: -2.0, "uniform": lambda p: -1.2,
                "student-t": lambda p: 6 / (p - 4), "sparse": lambda p: 3 / p - 3,
                "gamma": lambda k: 6 / k}[self.name](self.parameter)

    @property
    def skewness(self) -> float:
        """E z^3 of an entry: 2/sqrt(K) for ``gamma:K``, 0 for the symmetric standardised laws."""
        if not self.entrywise:
            raise ValueError(f"{self} is a law of rows: its entries' skewness depends on d")
        return 2 / math.sqrt(self.parameter) if self.name == "gamma" else 0.0

    def row_moments(self, d: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The stated mean (d,) and second moment E z z^T (d, d) of one row of Z: (0, I) for every law but
        ``shifted`` (mean MU u) and ``anisotropic`` (diag(1 +- A)); the covariance is their difference."""
        mean, second = torch.zeros(d, dtype=torch.float64), torch.eye(d, dtype=torch.float64)
        if self.name == "shifted":
            mean = torch.full((d,), self.parameter / math.sqrt(d), dtype=torch.float64)
        if self.name == "anisotropic":
            second = torch.diag(_anisotropic_variances(d, self.parameter, torch.float64, "cpu"))
        return mean, second

    def sample(self, shape, gen: torch.Generator, dtype: torch.dtype = torch.float64) -> torch.Tensor:
        opts = dict(generator=gen, device=gen.device, dtype=dtype)
        if self.name in STRESS_SAMPLERS:   # the stress laws; below them, the standardised laws' draws are unchanged
            return STRESS_SAMPLERS[self.name](self.parameter, tuple(shape), opts)
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


def _anisotropic_variances(d: int, spread: float, dtype, device) -> torch.Tensor:
    """1 + A on the first floor(d/2) coordinates, 1 - A on the last floor(d/2), 1 on the middle one of odd d."""
    variances = torch.ones(d, dtype=dtype, device=device)
    variances[: d // 2] += spread
    variances[d - d // 2:] -= spread
    return variances


def _gamma(k, shape, opts):
    """(G - K)/sqrt(K), G ~ Gamma(K, 1) drawn exactly as chi^2_{2K}/2 (2K squared normals)."""
    chi2 = torch.randn((round(2 * k), *shape), **opts).pow(2).sum(0)
    return (chi2 / 2 - k) / math.sqrt(k)


def _shifted(mu, shape, opts):
    """mu u + (I - mu^2 u u^T)^{1/2} g, u = 1/sqrt(d): mean mu u, second moment I; (I - mu^2 u u^T)^{1/2} is
    I - (1 - sqrt(1 - mu^2)) u u^T."""
    g = torch.randn(shape, **opts)
    d = shape[-1]
    along = g.sum(-1, keepdim=True) / math.sqrt(d)           # u . g
    return g + (mu - (1 - math.sqrt(1 - mu * mu)) * along) / math.sqrt(d)


def _sphere(_, shape, opts):
    g = torch.randn(shape, **opts)
    return g * (math.sqrt(shape[-1]) / g.norm(dim=-1, keepdim=True))


def _zero_rows(q, shape, opts):
    g = torch.randn(shape, **opts)
    kept = torch.rand((*shape[:-1], 1), **opts) >= q
    return g * kept / math.sqrt(1 - q)


def _anisotropic(spread, shape, opts):
    return torch.randn(shape, **opts) * _anisotropic_variances(shape[-1], spread, opts["dtype"], opts["device"]).sqrt()


STRESS_SAMPLERS = {"gamma": _gamma, "shifted": _shifted, "sphere": _sphere, "zero-rows": _zero_rows,
                   "anisotropic": _anisotropic}
ROW_LAWS = ("shifted", "sphere", "zero-rows", "anisotropic")   # drawn as whole rows (the last axis)

# name -> (parameter name or "", default, domain check, domain text)
DISTRIBUTIONS = {
    "gaussian": ("", None, None, ""),
    "rademacher": ("", None, None, ""),
    "uniform": ("", None, None, ""),
    "student-t": ("nu", 5, lambda nu: nu == int(nu) and nu > 4, "an integer > 4"),
    "sparse": ("p", 0.5, lambda p: 0 < p <= 1, "in (0, 1]"),
    # the stress laws (module docstring)
    "gamma": ("k", 1, lambda k: k > 0 and 2 * k == int(2 * k) and k <= 50, "a multiple of 1/2 in (0, 50]"),
    "shifted": ("mu", 0.9, lambda mu: 0 <= mu < 1, "in [0, 1)"),
    "sphere": ("", None, None, ""),
    "zero-rows": ("q", 0.1, lambda q: 0 < q < 1, "in (0, 1)"),
    "anisotropic": ("a", 0.6, lambda a: 0 <= a < 1, "in [0, 1)"),
}
GAUSSIAN = Distribution("gaussian")


def design(trials: int, n: int, d: int, gen: torch.Generator, data: Distribution = GAUSSIAN,
           cov_sqrt=None, dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """X of shape (trials, n, d) whose rows are i.i.d. Sigma^{1/2} z, z a row of the law ``data``.

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
