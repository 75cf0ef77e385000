"""Pretraining and fine-tuning two-layer ReLU networks in the NTK regime, batched over trials.

The setting of Du et al. (2019) that Liu et al. (Sec. 6) and Shachaf et al. (Sec. 6) build on:
f(x) = a^T relu(W^T x) / sqrt(m) on unit-norm inputs, w_r(0) ~ N(0, kappa^2 I), a_r = +-1 fixed,
W trained by full-batch gradient descent on a squared loss.  The trainer is the shared
``simulate.relu_nets.train_relu``; this module adds what the NTK claims need around it:
data on the sphere, the step size from the kernel's top eigenvalue, the two training phases,
the gradient with respect to the hidden activations, and a risk over fresh samples.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from simulate.device import decompose
from simulate.kernels import ntk_gram
from simulate.relu_nets import ReluNet, ReluTrainResult, empirical_loss, init_relu_net, train_relu

__all__ = ["sphere_points", "linear_labels", "ntk_step_size", "step_budget", "TransferRun", "pretrain_finetune",
           "activation_gradient_sq", "clipped_risk"]


def sphere_points(trials: int, n: int, d: int, gen: torch.Generator) -> torch.Tensor:
    """(trials, n, d) inputs drawn uniformly from the unit sphere S^{d-1}."""
    X = torch.randn(trials, n, d, generator=gen, device=gen.device, dtype=torch.float64)
    return X / X.norm(dim=-1, keepdim=True)


def linear_labels(X: torch.Tensor, beta: torch.Tensor) -> torch.Tensor:
    """y_i = <beta, x_i> for X (trials, n, d), beta (trials, d); |y| <= 1 for unit x and beta."""
    return (X @ beta.unsqueeze(-1)).squeeze(-1)


def ntk_step_size(X: torch.Tensor) -> float:
    """One step size for the batch: eta = n / max_trials lambda_max(H^inf(X)).

    On the empirical loss 1/(2n) sum (f - y)^2 the outputs move by -(eta/n) H (u - y), so
    eta lambda_max / n = 1 sits inside gradient descent's stability range (< 2) with room
    for the finite-width kernel's fluctuation around H^inf.
    """
    top = decompose(torch.linalg.eigvalsh, ntk_gram(X, X))[..., -1].max().item()
    return X.shape[-2] / top


def step_budget(X: torch.Tensor, loss_tol: float) -> int:
    """Steps a phase may take: in the kernel regime the slowest output mode decays like
    (1 - lambda_min/lambda_max)^k, so reaching ``loss_tol`` from a loss <= 1 takes about
    cond(H^inf) ln(1/loss_tol)/2 steps.  The budget is 20 times that plus 2000: a narrow net's own
    kernel can be several times worse conditioned than H^inf; one that needs more has left the lazy
    regime (e.g. ReLUs switched off for good), and the caller reports it instead of waiting."""
    eig = decompose(torch.linalg.eigvalsh, ntk_gram(X, X))
    condition = (eig[..., -1] / eig[..., 0].clamp(min=1e-300)).max().item()
    return int(10 * condition * math.log(1 / loss_tol)) + 2000


@dataclass
class TransferRun:
    init: ReluNet                       # W(0), a
    pretrained: ReluTrainResult         # W(P): trained on the source data from W(0)
    finetuned: ReluTrainResult | None   # W(Q): trained on the target data from W(P)

    @property
    def converged(self) -> bool:
        phases = [self.pretrained] + ([self.finetuned] if self.finetuned is not None else [])
        return all(bool(phase.converged.all()) for phase in phases)

    @property
    def stalled(self) -> int:
        """Draws that did not reach the loss in some phase."""
        phases = [self.pretrained] + ([self.finetuned] if self.finetuned is not None else [])
        return int(sum((~phase.converged).long() for phase in phases).clamp(max=1).sum())

    @property
    def final_loss(self) -> float:
        """The largest training loss any draw stopped at, over the phases: what the stopping rule left."""
        phases = [self.pretrained] + ([self.finetuned] if self.finetuned is not None else [])
        return max(phase.loss.max().item() for phase in phases)

    @property
    def steps(self) -> tuple[int, ...]:
        return tuple(phase.steps for phase in (self.pretrained, self.finetuned) if phase is not None)


def pretrain_finetune(XP, yP, XQ, yQ, m: int, kappa: float, gen: torch.Generator, *, loss_tol: float,
                      max_steps: int | None = None, finetune: bool = True) -> TransferRun:
    """Draw W(0) ~ N(0, kappa^2 I) (m units, NTK scaling 1/sqrt(m), readout signs, fixed), train W by
    gradient descent on the source (XP, yP) to mean squared loss ``loss_tol``, then, if ``finetune``,
    on the target (XQ, yQ) from there, with the same width and the step size of ``ntk_step_size``;
    each phase for at most ``max_steps`` (default: its ``step_budget``)."""
    trials, _, d = XP.shape
    init = init_relu_net(trials, m, d, gen, scaling="ntk", hidden="gaussian", kappa=kappa, readout="signs")
    pretrained = train_relu(init, empirical_loss(XP, yP), lr=ntk_step_size(XP),
                            max_steps=max_steps or step_budget(XP, loss_tol), loss_tol=loss_tol, train_readout=False)
    finetuned = None
    if finetune:
        finetuned = train_relu(pretrained.net, empirical_loss(XQ, yQ), lr=ntk_step_size(XQ),
                               max_steps=max_steps or step_budget(XQ, loss_tol), loss_tol=loss_tol, train_readout=False)
    return TransferRun(init, pretrained, finetuned)


def activation_gradient_sq(net: ReluNet, X: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """||dL/dX^1||_F^2 per trial, X^1 = relu(W^T X) the hidden activations on the data (m x n) and
    L = 1/2 ||a^T X^1 / sqrt(m) - y||^2 (Liu et al. Sec. 6.1), by automatic differentiation with
    the activations as the independent variable."""
    activations = net.features(X).detach().requires_grad_(True)          # (trials, n, m)
    outputs = net.scale * (activations @ net.c.unsqueeze(-1)).squeeze(-1)
    loss = (outputs - y).pow(2).sum() / 2
    (gradient,) = torch.autograd.grad(loss, activations)
    return gradient.pow(2).sum((-1, -2))


def clipped_risk(net: ReluNet, X: torch.Tensor, y: torch.Tensor, chunk: int = 8) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean of min(|f(x) - y|, 1) over the rows of X (trials, n_test, d) and its standard error,
    per trial: a Monte-Carlo estimate of the population risk of a 1-Lipschitz loss with values in
    [0, 1].  Evaluated ``chunk`` trials at a time (the activations are trials x n_test x m)."""
    losses = torch.cat([(ReluNet(net.W[i:i + chunk], net.c[i:i + chunk], net.scale)(X[i:i + chunk])
                         - y[i:i + chunk]).abs().clamp(max=1.0) for i in range(0, X.shape[0], chunk)])
    return losses.mean(-1), losses.std(-1) / math.sqrt(losses.shape[-1])
