"""Two-layer ReLU networks f(x) = scale * sum_i c_i relu(w_i . x), batched over trials.

One trainer serves every ReLU claim:

- ``scale`` = 1/m puts the net in the mean-field (feature-learning) regime, 1/sqrt(m)
  in the NTK (lazy) regime;
- hidden weights, readout or both are trained; hidden weights may be kept on the
  unit sphere (Riemannian gradient step, then renormalisation), as in Features are
  fate Sec. 4;
- the loss is the empirical 1/(2n) sum (f(x_k) - y_k)^2 or the exact population loss
  E_x (f(x) - f*(x))^2 / 2 against a teacher network for x ~ N(0, I) (closed form
  through the arc-cosine kernel, so pretraining "on the population" is exact).

A tensor holds every trial: W is (trials, m, d), c is (trials, m), and the loss of the
batch is the sum of independent per-trial losses, so one backward pass gives every
trial's own gradient.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Callable

import torch

from simulate.kernels import relu_gram

__all__ = ["ReluNet", "ReluTrainResult", "init_relu_net", "empirical_loss", "population_loss", "train_relu",
           "SCALINGS"]

SCALINGS = {"mean-field": lambda m: 1.0 / m, "ntk": lambda m: 1.0 / math.sqrt(m)}


@dataclass(frozen=True)
class ReluNet:
    W: torch.Tensor      # (trials, m, d) hidden weights, one row per unit
    c: torch.Tensor      # (trials, m) readout
    scale: float         # output scaling: 1/m (mean field) or 1/sqrt(m) (NTK)

    @property
    def width(self) -> int:
        return self.W.shape[-2]

    def features(self, X: torch.Tensor) -> torch.Tensor:
        """relu(X W^T): (trials, n, m) for inputs X (trials, n, d)."""
        return torch.relu(X @ self.W.transpose(-1, -2))

    def __call__(self, X: torch.Tensor) -> torch.Tensor:
        return self.scale * (self.features(X) @ self.c.unsqueeze(-1)).squeeze(-1)


def init_relu_net(trials: int, m: int, d: int, gen: torch.Generator, *, scaling: str = "mean-field",
                  hidden: str = "sphere", kappa: float = 1.0, readout: str = "signs",
                  readout_scale: float = 1.0) -> ReluNet:
    """A batch of random nets.

    ``hidden``: "sphere" (w_i uniform on S^{d-1}) or "gaussian" (w_i ~ N(0, kappa^2 I)).
    ``readout``: "signs" (c_i = +-readout_scale, uniform) or "gaussian" (N(0, readout_scale^2)).
    """
    if scaling not in SCALINGS:
        raise ValueError(f"unknown scaling {scaling!r} (choose {sorted(SCALINGS)})")
    W = torch.randn(trials, m, d, generator=gen, device=gen.device, dtype=torch.float64)
    if hidden == "sphere":
        W = W / W.norm(dim=-1, keepdim=True)
    elif hidden == "gaussian":
        W = kappa * W
    else:
        raise ValueError(f"unknown hidden init {hidden!r} (choose sphere or gaussian)")
    if readout == "signs":
        c = torch.randint(0, 2, (trials, m), generator=gen, device=gen.device).double() * 2 - 1
    elif readout == "gaussian":
        c = torch.randn(trials, m, generator=gen, device=gen.device, dtype=torch.float64)
    else:
        raise ValueError(f"unknown readout init {readout!r} (choose signs or gaussian)")
    return ReluNet(W, readout_scale * c, SCALINGS[scaling](m))


Loss = Callable[[ReluNet], torch.Tensor]   # net -> (trials,) per-trial loss


def empirical_loss(X: torch.Tensor, y: torch.Tensor) -> Loss:
    """1/(2n) sum_k (f(x_k) - y_k)^2 on data X (trials, n, d), y (trials, n)."""
    return lambda net: (net(X) - y).pow(2).mean(-1) / 2


def population_loss(teacher: ReluNet) -> Loss:
    """E_x (f(x) - f*(x))^2 / 2 for x ~ N(0, I), exactly: with K the ReLU Gram of the
    units' Gaussian expectations, it is (s^2 c^T K c - 2 s s* c^T K' c* + s*^2 c*^T K* c*) / 2."""
    teacher_term = teacher.scale ** 2 * _quadratic(teacher.c, relu_gram(teacher.W, teacher.W), teacher.c)

    def loss(net: ReluNet) -> torch.Tensor:
        own = net.scale ** 2 * _quadratic(net.c, relu_gram(net.W, net.W), net.c)
        cross = net.scale * teacher.scale * _quadratic(net.c, relu_gram(net.W, teacher.W), teacher.c)
        return (own - 2 * cross + teacher_term) / 2
    return loss


def _quadratic(a, K, b):
    return (a.unsqueeze(-2) @ K @ b.unsqueeze(-1)).squeeze(-1).squeeze(-1)


@dataclass
class ReluTrainResult:
    net: ReluNet
    loss: torch.Tensor          # (trials,) final loss
    steps: int
    converged: torch.Tensor     # (trials,) bool: loss <= loss_tol


def train_relu(net: ReluNet, loss: Loss, *, lr: float, max_steps: int, loss_tol: float = 0.0,
               train_hidden: bool = True, train_readout: bool = True, sphere: bool = False,
               check_every: int = 100, history: list | None = None,
               progress: Callable[[int, torch.Tensor], None] | None = None) -> ReluTrainResult:
    """Full-batch gradient descent with step ``lr`` on each trial's own loss.

    A trial whose loss reaches ``loss_tol`` stops moving (it has met the stopping rule
    of the papers' experiments); the loop ends when every trial has, or after
    ``max_steps``.  With ``sphere`` the hidden gradient is projected on the tangent
    space of each unit's sphere and the units are renormalised after the step.
    ``history`` (a list) receives (step, per-trial loss) at every check; ``progress``
    is called with the same.
    """
    if not (train_hidden or train_readout):
        raise ValueError("nothing to train: train_hidden and train_readout are both False")
    W = net.W.detach().clone().requires_grad_(train_hidden)
    c = net.c.detach().clone().requires_grad_(train_readout)
    params = [p for p, trained in ((W, train_hidden), (c, train_readout)) if trained]
    step = 0
    while True:
        current = replace(net, W=W, c=c)
        value = loss(current)
        active = value.detach() > loss_tol
        if step % check_every == 0 or step >= max_steps or not bool(active.any()):
            if history is not None:
                history.append((step, value.detach().clone()))
            if progress is not None:
                progress(step, value.detach())
            if not bool(active.any()) or step >= max_steps:
                break
        grads = torch.autograd.grad(value.sum(), params)
        with torch.no_grad():
            for p, g in zip(params, grads):
                mask = active.view(-1, *([1] * (g.dim() - 1))).to(g.dtype)
                if p is W and sphere:
                    g = g - (g * W).sum(-1, keepdim=True) * W
                p -= lr * mask * g
                if p is W and sphere:
                    p /= p.norm(dim=-1, keepdim=True)
        step += 1
    final = replace(net, W=W.detach(), c=c.detach())
    value = value.detach()
    return ReluTrainResult(final, value, step, value <= loss_tol)
