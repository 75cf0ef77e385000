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
from typing import Callable, Sequence

import torch

from simulate.kernels import relu_gram

__all__ = ["ReluNet", "ReluTrainResult", "METHODS", "init_relu_net", "quadratic_form", "EmpiricalLoss", "empirical_loss", "PopulationLoss", "population_loss", "train_relu",
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


class EmpiricalLoss:
    """1/(2n) sum_k (f(x_k) - y_k)^2 per trial, with its gradient written out.

    ``blocks`` are consecutive groups of trials, each with its own data X (trials_b, n_b, d), y (trials_b, n_b),
    so nets trained on different sample sizes share one batch without computing on padded samples.
    ``forward`` keeps what the gradient needs: the step then costs one forward and two batched products, not a
    graph.  The gradient is the one autograd computes, operation for operation (tests/test_relu_transfer.py
    holds them equal bit for bit), except that the rank-one product dL/df c^T is a broadcast multiply (exact
    either way).
    """

    def __init__(self, blocks: Sequence[tuple[torch.Tensor, torch.Tensor]]):
        self.blocks = [(X, y) for X, y in blocks]

    def __call__(self, net: ReluNet) -> torch.Tensor:
        return self.forward(net).value

    def forward(self, net: ReluNet) -> "_EmpiricalForward":
        parts, start = [], 0
        for X, y in self.blocks:
            stop = start + X.shape[0]
            W, c = net.W[start:stop], net.c[start:stop]
            H = X @ W.transpose(-1, -2)
            F = torch.relu(H)
            R = (F @ c.unsqueeze(-1)).squeeze(-1) * net.scale - y
            parts.append((X, F, R, c))
            start = stop
        if start != net.W.shape[0]:
            raise ValueError(f"the loss's blocks hold {start} trials, the net {net.W.shape[0]}")
        return _EmpiricalForward(parts, net.scale)


class _EmpiricalForward:
    def __init__(self, parts, scale: float):
        self.parts, self.scale = parts, scale
        self.value = torch.cat([R.pow(2).sum(-1) / (2 * R.shape[-1]) for _, _, R, _ in parts])

    def gradients(self, hidden: bool, readout: bool) -> list[torch.Tensor]:
        """[dL/dW if hidden] + [dL/dc if readout], each (trials, ...) for each trial's own loss."""
        grad_W, grad_c = [], []
        for X, F, R, c in self.parts:
            dR = (1 / (2 * R.shape[-1])) * (2.0 * R)            # d/dR of sum(R^2) / (2n)
            dout = (dR * self.scale).unsqueeze(-1)             # (trials, n, 1)
            if hidden:
                # relu's backward as autograd runs it: 0 where F = relu(H) <= 0 (i.e. H <= 0), else the product;
                # the same bits as torch.where(H > 0, ..., 0.0), ~4x faster on the CPU
                dH = torch.ops.aten.threshold_backward(dout * c.unsqueeze(-2), F, 0.0)
                grad_W.append(X.transpose(1, 2).bmm(dH))
            if readout:
                grad_c.append(F.transpose(1, 2).bmm(dout).squeeze(-1))
        # dL/dW as autograd lays it out, a transposed view of (trials, d, m): the sphere projection's row sums
        # then add in the same order
        return ([torch.cat(grad_W).transpose(-1, -2)] if hidden else []) + ([torch.cat(grad_c)] if readout else [])


def empirical_loss(X: torch.Tensor, y: torch.Tensor) -> EmpiricalLoss:
    """1/(2n) sum_k (f(x_k) - y_k)^2 on data X (trials, n, d), y (trials, n)."""
    return EmpiricalLoss([(X, y)])


class PopulationLoss:
    """E_x (f(x) - f*(x))^2 / 2 for x ~ N(0, I) against a teacher net, exactly, with its gradient written out.

    With K the ReLU Gram of the units' Gaussian expectations (``simulate.kernels.relu_gram``) the loss is
    (s^2 c^T K(W, W) c - 2 s s* c^T K(W, W*) c* + s*^2 c*^T K(W*, W*) c*) / 2.  For units a, b at cosine u,
    K(a, b) = |a| |b| k1(u) and dK/da = |b| (sqrt(1 - u^2) / (2 pi) a/|a| + k0(u) b/|b|), so the step costs one
    arccos per pair instead of autograd's graph through norms, cosines and clamps (tests/test_relu_transfer.py
    holds the two gradients equal to rounding)."""

    def __init__(self, teacher: ReluNet):
        self.teacher = teacher
        self.teacher_term = teacher.scale ** 2 * quadratic_form(teacher.c, relu_gram(teacher.W, teacher.W), teacher.c)

    def __call__(self, net: ReluNet) -> torch.Tensor:
        return self.forward(net).value

    def forward(self, net: ReluNet) -> "_PopulationForward":
        return _PopulationForward(net, self.teacher, self.teacher_term)


class _PopulationForward:
    def __init__(self, net: ReluNet, teacher: ReluNet, teacher_term: torch.Tensor):
        self.net, self.teacher = net, teacher
        self.own, self.cross = _gram_parts(net.W, net.W), _gram_parts(net.W, teacher.W)
        own = net.scale ** 2 * quadratic_form(net.c, self.own["K"], net.c)
        cross = net.scale * teacher.scale * quadratic_form(net.c, self.cross["K"], teacher.c)
        self.value = (own - 2 * cross + teacher_term) / 2

    def gradients(self, hidden: bool, readout: bool) -> list[torch.Tensor]:
        """[dL/dW if hidden] + [dL/dc if readout] for each trial's own loss."""
        net, teacher = self.net, self.teacher
        own_weight = net.scale ** 2 * net.c                       # dL/dK(W, W) = own_weight_i own_weight_j / (2 s^2)
        cross_weight = -net.scale * teacher.scale * teacher.c     # dL/dK(W, W*) = c_i cross_weight_j
        grads = []
        if hidden:
            radial, along = 0.0, 0.0
            for parts, B, weight in ((self.own, net.W, own_weight), (self.cross, teacher.W, cross_weight)):
                radial = radial + ((parts["root"] * parts["norm_b"].unsqueeze(-2)) @ weight.unsqueeze(-1)).squeeze(-1)
                along = along + (parts["k0"] * weight.unsqueeze(-2)) @ B
            unit = net.W / parts["norm_a"].unsqueeze(-1)
            grads.append(net.c.unsqueeze(-1) * (radial.unsqueeze(-1) / (2 * math.pi) * unit + along))
        if readout:
            grads.append((self.own["K"] @ own_weight.unsqueeze(-1) + self.cross["K"] @ cross_weight.unsqueeze(-1)).squeeze(-1))
        return grads


def _gram_parts(A: torch.Tensor, B: torch.Tensor) -> dict:
    """relu_gram(A, B) (the same operations, so the same value) and what its derivative needs."""
    na, nb = A.norm(dim=-1), B.norm(dim=-1)
    outer = na.unsqueeze(-1) * nb.unsqueeze(-2)
    # in place where a temporary would be a fresh (trials, m, m) tensor: the same operations in the same order,
    # so the same bits, with a third fewer allocations on the mean-field trainer's hot path
    u = (A @ B.transpose(-1, -2)).div_(outer.clamp(min=torch.finfo(A.dtype).tiny)).clamp_(-1.0, 1.0)
    root = (u * u).neg_().add_(1).clamp_(min=0).sqrt_()                   # (1 - u^2)^(1/2)
    supplement = torch.acos(u).neg_().add_(math.pi)                        # pi - arccos(u)
    kernel = (u * supplement).add_(root).div_(2 * math.pi).mul_(outer)     # |a| |b| (root + u (pi - arccos u)) / (2 pi)
    return {"K": kernel, "k0": supplement.div_(2 * math.pi), "root": root, "norm_a": na, "norm_b": nb}


def population_loss(teacher: ReluNet) -> PopulationLoss:
    """E_x (f(x) - f*(x))^2 / 2 for x ~ N(0, I) against ``teacher``, exactly (``PopulationLoss``)."""
    return PopulationLoss(teacher)


def quadratic_form(a, K, b):
    """a^T K b per trial, for batched vectors a, b (..., m) and matrices K (..., m, m)."""
    return (a.unsqueeze(-2) @ K @ b.unsqueeze(-1)).squeeze(-1).squeeze(-1)


@dataclass
class _Value:
    value: torch.Tensor        # a loss autograd differentiates (the losses without a gradient written out)


@dataclass
class ReluTrainResult:
    net: ReluNet
    loss: torch.Tensor          # (trials,) final loss
    steps: int
    converged: torch.Tensor     # (trials,) bool: loss <= loss_tol


METHODS = ("gd", "heun")


def train_relu(net: ReluNet, loss: Loss, *, lr: float, max_steps: int, loss_tol: float = 0.0,
               train_hidden: bool = True, train_readout: bool = True, sphere: bool = False,
               method: str = "gd", check_every: int = 100, history: list | None = None,
               progress: Callable[[int, torch.Tensor], None] | None = None) -> ReluTrainResult:
    """Full-batch gradient descent with step ``lr`` on each trial's own loss.

    A trial whose loss reaches ``loss_tol`` stops moving (it has met the stopping rule
    of the papers' experiments); the loop ends when every trial has, or after
    ``max_steps``.  With ``sphere`` the hidden gradient is projected on the tangent
    space of each unit's sphere and the units are renormalised after the step.
    ``history`` (a list) receives (step, per-trial loss) at every check; ``progress``
    is called with the same.

    ``method`` "heun" integrates the same gradient flow with Heun's method (the explicit trapezoid
    rule, two gradients a step): a GD step to a trial point, then the step along the mean of the
    two points' gradients (each projected on its own point's tangent space with ``sphere``: the
    flow's field extended off the sphere, which leaves the sphere invariant, so renormalising keeps
    second order).  Where a paper runs GD with a step far below ``lr`` (its iterates are the flow's),
    this follows the flow with an error O(lr^2) where the loss is smooth (the population loss), instead of
    GD's O(lr).  An empirical loss's gradient jumps where a sample crosses a unit's hyperplane, and across
    those kinks every fixed-step method is first order; there Heun's error is about a tenth of GD's at the
    same step (tests/test_relu_transfer.py).
    """
    if not (train_hidden or train_readout):
        raise ValueError("nothing to train: train_hidden and train_readout are both False")
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}: one of {', '.join(METHODS)}")
    by_hand = isinstance(loss, (EmpiricalLoss, PopulationLoss))   # gradient written out; other losses: autograd
    W = net.W.detach().clone().requires_grad_(train_hidden and not by_hand)
    c = net.c.detach().clone().requires_grad_(train_readout and not by_hand)
    trained = [p for p, flag in ((W, train_hidden), (c, train_readout)) if flag]
    on_sphere = train_hidden and sphere          # then trained[0] is W, whose rows stay on the unit sphere

    def tangent(params, grads):
        """The gradients, the hidden one projected on the tangent space of its units' spheres with ``sphere``."""
        return [g - (g * p).sum(-1, keepdim=True) * p if p is params[0] and on_sphere else g
                for p, g in zip(params, grads)]

    def gradients(forward, params):
        grads = forward.gradients(train_hidden, train_readout) if by_hand else \
            torch.autograd.grad(forward.value.sum(), params)
        with torch.no_grad():
            return tangent(params, grads)

    def moved(params, direction, mask):
        """params - lr * mask * direction (a step of the trials still training), the hidden units renormalised
        with ``sphere``."""
        out = []
        for p, g in zip(params, direction):
            q = p - lr * mask.view(-1, *([1] * (g.dim() - 1))) * g
            if p is params[0] and on_sphere:
                q = q / q.norm(dim=-1, keepdim=True)
            out.append(q)
        return out

    def net_of(params):
        hidden = params[0] if train_hidden else W
        readout = params[-1] if train_readout else c
        return replace(net, W=hidden, c=readout)

    def evaluate(params):
        current = net_of(params)
        return loss.forward(current) if by_hand else _Value(loss(current))

    step = 0
    while True:
        forward = evaluate(trained)
        value = forward.value
        active = value.detach() > loss_tol
        if step % check_every == 0 or step >= max_steps or not bool(active.any()):
            if history is not None:
                history.append((step, value.detach().clone()))
            if progress is not None:
                progress(step, value.detach())
            if not bool(active.any()) or step >= max_steps:
                break
        grads = gradients(forward, trained)
        mask = active.to(value.dtype)
        if method == "heun":
            with torch.no_grad():
                trial = [q.requires_grad_(p.requires_grad) for p, q in zip(trained, moved(trained, grads, mask))]
            second = gradients(evaluate(trial), trial)
            grads = [(g + h) / 2 for g, h in zip(grads, second)]
        with torch.no_grad():
            for p, q in zip(trained, moved(trained, grads, mask)):
                p.copy_(q)
        step += 1
    final = replace(net, W=W.detach(), c=c.detach())
    value = value.detach()
    return ReluTrainResult(final, value, step, value <= loss_tol)
