"""Sampling estimates of the Gaussian ReLU kernels and of L2 projections onto ReLU features.

Each function runs the procedure a kernel formula summarises, on random numbers drawn on
``gen.device``, and returns per-trial values (independent across trials) for the
statistics in ``simulate.stats``:

- ``relu_product_samples``: relu(w_i.x) relu(w_j.x) for a fresh uniformly rotated unit pair
  at cosine u and a fresh x ~ N(0, I_d) per sample;
- ``ntk_gram_at_init``: the Gram matrix of the tangent features d f(x)/dW of randomly
  initialised two-layer ReLU networks f(x) = a^T relu(W^T x) / sqrt(m), by autograd;
- ``least_squares_projection``: regress a teacher network on a student's features by least
  squares on n samples and measure the residual in-sample and on fresh samples.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from simulate.batching import batches
from simulate.data import task_pair
from simulate.relu_nets import ReluNet

__all__ = ["relu_product_samples", "ntk_gram_at_init", "LeastSquaresProjection", "least_squares_projection"]

CHUNK = 250_000  # samples per batch: bounds memory at ~3 * CHUNK * d doubles


def relu_product_samples(u: float, d: int, count: int, gen: torch.Generator,
                         dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """``count`` i.i.d. values of relu(w_i.x) relu(w_j.x): unit w_i, w_j at cosine u, uniformly
    rotated, and x ~ N(0, I_d), all fresh per sample."""
    theta = math.acos(max(-1.0, min(1.0, u)))
    out = []
    for size in batches(count, CHUNK):
        w_i, w_j = task_pair(size, d, theta, gen, dtype)
        x = torch.randn(size, d, generator=gen, device=gen.device, dtype=dtype)
        out.append(torch.relu((w_i * x).sum(1)) * torch.relu((w_j * x).sum(1)))
    return torch.cat(out)


def ntk_gram_at_init(X: torch.Tensor, width: int, trials: int, kappa: float, gen: torch.Generator) -> torch.Tensor:
    """<df(x_k)/dW, df(x_l)/dW> for ``trials`` independent networks at initialisation, (trials, N, N).

    f(x) = a^T relu(W^T x) / sqrt(m), w_r ~ N(0, kappa^2 I), a_r uniform in {-1, 1} (Liu et al.
    Sec. 6.1, after Du et al.); X (N, d) holds the inputs.  The gradients are taken by autograd,
    one backward pass per input, so nothing about the indicator form of the NTK is assumed.
    """
    d = X.shape[-1]
    W = (kappa * torch.randn(trials, width, d, generator=gen, device=gen.device, dtype=torch.float64)).requires_grad_()
    a = torch.randint(0, 2, (trials, width), generator=gen, device=gen.device).double() * 2 - 1
    f = (torch.relu(X @ W.transpose(-1, -2)) @ a.unsqueeze(-1)).squeeze(-1) / math.sqrt(width)   # (trials, N)
    rows = [torch.autograd.grad(f[:, k].sum(), W, retain_graph=k < f.shape[1] - 1)[0].flatten(1)
            for k in range(f.shape[1])]
    J = torch.stack(rows, 1)                                                                      # (trials, N, m d)
    return J @ J.transpose(-1, -2)


@dataclass(frozen=True)
class LeastSquaresProjection:
    """Per-trial results of regressing f* on the student's features with n samples."""

    in_sample: torch.Tensor      # (1/n) ||y - Phi beta_hat||^2 on the fitting samples
    out_of_sample: torch.Tensor  # mean (f*(x) - phi(x).beta_hat)^2 on fresh samples
    teacher_norm: torch.Tensor   # mean f*(x)^2 on the same fresh samples


def least_squares_projection(student_W: torch.Tensor, teacher: ReluNet, n: int, n_test: int, trials: int,
                             gen: torch.Generator) -> LeastSquaresProjection:
    """Least squares of y = f*(x) on the features relu(w_i.x), x ~ N(0, I_d), for ``trials``
    independent samples of size n, each judged on its own ``n_test`` fresh samples.

    ``student_W`` (m, d) and ``teacher`` (one network, W of shape (1, m*, d)) are fixed across
    trials.  The in-sample residual is biased low and the out-of-sample one high (E of a
    minimum <= the minimum of E <= the risk of any fitted beta), by O(m/n) each.
    """
    d = student_W.shape[-1]
    X = torch.randn(trials, n, d, generator=gen, device=gen.device, dtype=torch.float64)
    features = torch.relu(X @ student_W.T)
    y = teacher(X)
    beta = torch.linalg.lstsq(features, y.unsqueeze(-1)).solution
    in_sample = (y - (features @ beta).squeeze(-1)).pow(2).mean(1)
    fresh = torch.randn(trials, n_test, d, generator=gen, device=gen.device, dtype=torch.float64)
    y_fresh = teacher(fresh)
    fit_fresh = (torch.relu(fresh @ student_W.T) @ beta).squeeze(-1)
    return LeastSquaresProjection(in_sample, (y_fresh - fit_fresh).pow(2).mean(1), y_fresh.pow(2).mean(1))
