"""Monte-Carlo estimates of Gaussian ReLU kernel quantities, batched to bound memory: the NTK Gram
matrix at initialisation averaged over many networks, and the least-squares residual of a teacher on a
student's features along a ladder of sample sizes.  Also the matrices the closed forms are written in:
the normalised ReLU Gram matrices of a student and a teacher, and a joint Gram matrix of two input sets.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from simulate.batching import batches
from simulate.kernel_sampling import least_squares_projection, ntk_gram_at_init
from simulate.kernels import relu_gram
from simulate.relu_nets import ReluNet
from simulate.stats import Estimate, estimate, weighted_poly_fit

__all__ = ["ntk_gram_moments", "block_gram", "lowest_eigenvalues", "normalised_relu_grams", "relu_teacher",
           "LadderStep", "ProjectionLadder", "projection_ladder"]


def _quiet(message: str) -> None:
    pass


def ntk_gram_moments(X: torch.Tensor, width: int, trials: int, kappa: float, gen: torch.Generator,
                     chunk_units: int, progress=_quiet):
    """Entrywise mean and standard error of the mean of the NTK Gram matrix H(0) of ``trials`` independent
    width-m networks at initialisation (``simulate.kernel_sampling.ntk_gram_at_init``) on the inputs X,
    in batches of at most ``chunk_units`` = trials * width * d.  Returns (mean, se), each (N, N)."""
    chunk = max(1, chunk_units // (width * X.shape[-1]))
    grams = []
    for done, size in enumerate(batches(trials, chunk)):
        progress(f"NTK Gram of networks: batch {done + 1} of {math.ceil(trials / chunk)}")
        grams.append(ntk_gram_at_init(X, width, size, kappa, gen).detach())
    grams = torch.cat(grams)                                    # (trials, N, N)
    return grams.mean(0), grams.std(0, unbiased=True) / math.sqrt(trials)


def block_gram(gram, X_P: torch.Tensor, X_Q: torch.Tensor) -> torch.Tensor:
    """The joint Gram matrix of the inputs X_P followed by X_Q under the kernel ``gram(X, Z)`` (a matrix
    function), block by block: gram(X_P, X_P), gram(X_Q, X_Q) and gram(X_P, X_Q), mirrored below."""
    n_p, n_q = X_P.shape[0], X_Q.shape[0]
    joint = torch.zeros(n_p + n_q, n_p + n_q, dtype=X_P.dtype, device=X_P.device)
    P, Q = slice(0, n_p), slice(n_p, n_p + n_q)
    joint[P, P], joint[Q, Q] = gram(X_P, X_P), gram(X_Q, X_Q)
    joint[P, Q] = gram(X_P, X_Q)
    joint[Q, P] = joint[P, Q].T
    return joint


def lowest_eigenvalues(joint: torch.Tensor, split: int) -> tuple[float, float, float]:
    """The smallest eigenvalue of a symmetric ``joint`` matrix and of its two diagonal blocks, the first
    ``split`` rows and columns and the rest (a joint Gram matrix of two input sets, ``block_gram``)."""
    first, rest = slice(0, split), slice(split, joint.shape[0])
    return tuple(torch.linalg.eigvalsh(block)[0].item() for block in (joint, joint[first, first], joint[rest, rest]))


def normalised_relu_grams(W: torch.Tensor, W_star: torch.Tensor):
    """K = G/m, K* = G*/m*, Kt = G~/sqrt(m m*): the L2(N(0, I)) Gram matrices of the features
    relu(w.x) of student units W (m, d) and teacher units W_star (m*, d), normalised as in Features
    are fate eqs. (154)-(156)."""
    m, m_star = W.shape[0], W_star.shape[0]
    K = relu_gram(W, W) / m
    K_star = relu_gram(W_star, W_star) / m_star
    K_tilde = relu_gram(W, W_star) / math.sqrt(m * m_star)
    return K, K_star, K_tilde


def relu_teacher(W_star: torch.Tensor, c_star: torch.Tensor) -> ReluNet:
    """f*(x) = (1/m*) sum_j c*_j relu(w*_j.x) as one network (batch of one)."""
    return ReluNet(W_star.unsqueeze(0), c_star.unsqueeze(0), 1.0 / W_star.shape[0])


@dataclass(frozen=True)
class LadderStep:
    """Least squares with n fitting samples: residuals in-sample, out-of-sample and their average."""

    n: int
    in_sample: Estimate
    out_of_sample: Estimate
    midpoint: Estimate


@dataclass(frozen=True)
class ProjectionLadder:
    steps: list[LadderStep]
    teacher_norm: Estimate       # mean f*(x)^2 over every step's fresh samples

    def midpoint_limit(self, complement: float, floor: float) -> tuple[float, float, float]:
        """The midpoint minus ``complement`` extrapolated to n -> oo: the weighted least-squares fit c0 + c2/n^2
        over the steps (standard errors floored at ``floor``), whose O(1/n) terms cancel (in-sample and
        out-of-sample are both off by tr(G^{-1} E[phi phi^T r^2])/n at leading order, with opposite signs).
        Returns (c0, its standard error floored at ``floor``, c2)."""
        coef, coef_se = weighted_poly_fit([1 / step.n ** 2 for step in self.steps],
                                          [step.midpoint.mean - complement for step in self.steps],
                                          [max(step.midpoint.se, floor) for step in self.steps], degree=1)
        return coef[0], max(coef_se[0], floor), coef[1]

    def rows(self, complement: float) -> list[dict]:
        """One row per step: the residuals with their standard errors, and n times each residual's distance
        from ``complement`` (of order one while the O(1/n) terms dominate)."""
        return [{"n": step.n, "in_sample": step.in_sample.mean, "in_se": step.in_sample.se,
                 "out_of_sample": step.out_of_sample.mean, "out_se": step.out_of_sample.se,
                 "midpoint": step.midpoint.mean, "midpoint_se": step.midpoint.se,
                 "n_times_in_gap": step.n * (step.in_sample.mean - complement),
                 "n_times_out_gap": step.n * (step.out_of_sample.mean - complement)} for step in self.steps]


def projection_ladder(W: torch.Tensor, teacher: ReluNet, sizes, n_test: int, trials: int, gen: torch.Generator,
                      chunk_entries: int, progress=_quiet) -> ProjectionLadder:
    """``simulate.kernel_sampling.least_squares_projection`` of ``teacher`` on the features of W at each
    sample size n in ``sizes`` (in order), ``trials`` independent fits each, batched to at most
    ``chunk_entries`` = trials * n * m.  E(in-sample) <= ||P_perp f*||^2 <= E(out-of-sample) at every n;
    their average cancels the O(1/n) terms.  The teacher's norm is estimated from all the fresh samples."""
    m = W.shape[0]
    steps, norm_samples = [], []
    for n in sizes:
        chunk = max(1, chunk_entries // (n * m))
        parts = []
        for done, size in enumerate(batches(trials, chunk)):
            progress(f"least squares with n = {n}: batch {done + 1} of {math.ceil(trials / chunk)}")
            parts.append(least_squares_projection(W, teacher, n, n_test, size, gen))
        inside = torch.cat([x.in_sample for x in parts])
        outside = torch.cat([x.out_of_sample for x in parts])
        norm_samples.append(torch.cat([x.teacher_norm for x in parts]))
        steps.append(LadderStep(n, estimate(inside), estimate(outside), estimate((inside + outside) / 2)))
    return ProjectionLadder(steps, estimate(torch.cat(norm_samples)))
