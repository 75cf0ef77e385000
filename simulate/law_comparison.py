"""One linear fine-tuning task drawn under several design laws of equal mean and covariance, batched.

- ``regression_draws``: designs X = Z Sigma^{1/2} with i.i.d. standardised entries from each law (one block of
  ``trials`` per law), a source/target pair of unit tasks at an angle, and noisy target labels;
- ``sgd_end_points``: constant-step SGD from the source task at several batch sizes (``simulate.sgd``);
- ``certified_miss``: how far an SGD end point is from a claimed limit, in units of its certified distance;
- ``sigma_norm2``: the excess risk v^T Sigma v of a parameter error v;
- ``inverse_norm_deviations``: (n - 2) E 1/||z||^2 - 1 per law, which is 0 for Gaussian z only;
- ``identity_draws``: per draw, the quantities whose Gaussian expectations the linear claims' proofs use
  (projections onto row(X), inverse Gram traces, inverse squared norms of projections).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import torch

from simulate.data import Distribution, design, rotated_sqrt, spiked_spectrum, task_pair
from simulate.device import decompose
from simulate.estimators import row_space_projector
from simulate.sgd import SgdResult, sgd_linear
from simulate.stats import estimate

__all__ = ["RegressionDraws", "regression_draws", "sgd_end_points", "certified_miss", "sigma_norm2",
           "inverse_norm_deviations", "identity_draws"]


@dataclass
class RegressionDraws:
    X: torch.Tensor          # (laws * trials, n, d), law-major
    y: torch.Tensor          # (laws * trials, n)
    theta_s: torch.Tensor    # (laws * trials, d) source task (the pretrained weights)
    theta_t: torch.Tensor    # (laws * trials, d) target task
    eig: torch.Tensor        # (d,) Sigma's eigenvalues
    root: torch.Tensor       # Sigma^{1/2}: (d,) sqrt-eigenvalues (coordinate basis) or (d, d) (rotated basis)


def regression_draws(laws: Sequence[Distribution], trials: int, n: int, d: int, top: int, top_eig: float,
                     bottom_eig: float, theta: float, sigma: float, rotate: bool, gen: torch.Generator,
                     device) -> RegressionDraws:
    """``trials`` regression data sets per law: Sigma with ``top`` eigenvalues ``top_eig`` and the rest
    ``bottom_eig`` (in a Haar-random eigenbasis if ``rotate``), rows Sigma^{1/2} z with i.i.d. entries of each
    law, unit tasks theta_S, theta_T at angle ``theta`` (uniformly rotated, one pair per data set) and labels
    y = X theta_T + sigma * N(0, 1).

    Draws from ``gen``: the rotation (if any), the designs law by law, the task pairs, the label noise."""
    eig = spiked_spectrum(d, top, top_eig, bottom_eig, device)
    root = rotated_sqrt(eig, gen) if rotate else eig.sqrt()
    X = torch.cat([design(trials, n, d, gen, law, root) for law in laws])
    theta_s, theta_t = task_pair(len(laws) * trials, d, theta, gen)
    y = (X @ theta_t.unsqueeze(-1)).squeeze(-1) + sigma * torch.randn(
        len(laws) * trials, n, generator=gen, device=gen.device, dtype=torch.float64)
    return RegressionDraws(X, y, theta_s, theta_t, eig, root)


def sgd_end_points(X: torch.Tensor, y: torch.Tensor, w0: torch.Tensor, shuffles: torch.Generator,
                   batches: Sequence[int], tol: float) -> list[tuple[int, SgdResult]]:
    """Constant-step SGD from ``w0`` at each batch size of ``batches`` in turn (epochs reshuffled from
    ``shuffles``), each run until certified within ``tol`` of the least-squares solution nearest w0; stops after
    the first run that is not certified in every draw (its result is the last one returned)."""
    fits = []
    for size in batches:
        fit = sgd_linear(X, y, w0, shuffles, batch=size, tol=tol)
        fits.append((size, fit))
        if not bool(fit.converged.all()):
            break
    return fits


def certified_miss(fit: SgdResult, limit: torch.Tensor, rounding: float) -> torch.Tensor:
    """Per draw, ||w_SGD - limit|| over SGD's certified distance to the least-squares solution (plus a relative
    rounding floor): at most 1 in every draw when ``limit`` is that solution."""
    return (fit.w - limit).norm(dim=-1) / (fit.distance + rounding * (1 + limit.norm(dim=-1)))


def sigma_norm2(v: torch.Tensor, eig: torch.Tensor, root: torch.Tensor) -> torch.Tensor:
    """v^T Sigma v per row of v, Sigma = root @ root for a (d, d) square root, else diag(eig)."""
    return ((v @ (root @ root)) * v).sum(-1) if root.dim() == 2 else (eig * v.pow(2)).sum(-1)


def inverse_norm_deviations(laws: Sequence[Distribution], ns: Sequence[int], samples: int,
                            gen: torch.Generator) -> list[dict]:
    """(n - 2) E 1/||z||^2 - 1 for z of n i.i.d. entries of each law (the entries of one design column: the law's
    own marginal, the least Gaussian projection), estimated from ``samples`` draws at every n of ``ns``.  Zero for
    Gaussian z (E 1/chi^2_n = 1/(n - 2): the identity behind Features are fate eq. 120).  The sparse law has
    P(at most 2 non-zero entries) > 0 and E 1/chi^2_k = oo for k <= 2, so its value is +oo (recorded as
    ``infinite``, nothing drawn).

    Draws from ``gen``: law by law, n by n."""
    rows = []
    for law in laws:
        if not law.entrywise:   # a law of whole rows: a column's law depends on the dimension of the rows
            rows.append({"law": str(law), "infinite": False, "row_law": True})
            continue
        if law.name == "sparse":
            rows.append({"law": str(law), "infinite": True})
            continue
        values = []
        for n in ns:
            z = law.sample((samples, n), gen)
            est = estimate((n - 2) / z.pow(2).sum(-1) - 1)
            values.append({"n": n, "deviation": est.mean, "se": est.se})
        rows.append({"law": str(law), "infinite": False, "by_n": values})
    return rows


def identity_draws(law: Distribution, n: int, d: int, samples: int, gen: torch.Generator) -> dict[str, torch.Tensor]:
    """Per draw of an n x d design X (n < d) and a d x n one X' (its transposed shape), both with rows of ``law``:

    - ``P_row e1``, ``P_row u``: e^T P e for P the projector onto row(X), e = e_1 and u = (1, ..., 1)/sqrt(d)
      (Gaussian: n/d, row(X) being a uniformly random n-plane; Features are fate eq. 96);
    - ``P_row e1.e2``: e_2^T P e_1 (Gaussian: 0; with ``P_row e1`` and ``P_row u``, E P = (n/d) I);
    - ``tr (X X^T)^-1``, ``tr (X'^T X')^-1``: inverse Gram traces (Gaussian: n/(d - n - 1), the inverse Wishart
      mean; eqs. 97-102); +inf for a singular draw;
    - ``1/||X e1||^2``, ``1/||X u||^2``: the inverse squared norm of a projection of the rows (Gaussian:
      1/(n - 2), E 1/chi^2_n; eq. 120); +inf where the projection is 0.

    Draws X, then X', from ``gen``."""
    X = design(samples, n, d, gen, law)
    tall = design(samples, d, n, gen, law)
    u = torch.full((d,), d ** -0.5, dtype=X.dtype, device=X.device)
    P = row_space_projector(X)

    def inverse_trace(gram):
        eig = decompose(torch.linalg.eigvalsh, gram)
        singular = eig[..., 0] <= 1e-12 * eig[..., -1]
        return torch.where(singular, torch.full_like(eig[..., 0], float("inf")), eig.reciprocal().sum(-1))

    return {"P_row e1": P[:, 0, 0], "P_row u": u @ P @ u, "P_row e1.e2": P[:, 1, 0],
            "tr (X X^T)^-1": inverse_trace(X @ X.transpose(-1, -2)),
            "tr (X'^T X')^-1": inverse_trace(tall.transpose(-1, -2) @ tall),
            "1/||X e1||^2": X[..., 0].pow(2).sum(-1).reciprocal(), "1/||X u||^2": (X @ u).pow(2).sum(-1).reciprocal()}
