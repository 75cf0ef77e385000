"""Two-layer ReLU students trained from teacher networks, batched over trials: pretraining on (ablated or
auxiliary) teachers, training from scratch on nested samples, retraining the readout alone, and fine-tuning
a pretrained net against a fresh one on the same samples.

Every procedure consumes its generator in a fixed documented order, so a batch of several settings (mu
values, sample sizes, correlations) shares its draws where the experiment pairs them.  Risks are exact
population risks for x ~ N(0, I) (``simulate.teachers.risk``), divided by the teacher's squared norm.
"""

from __future__ import annotations

import math
from typing import Sequence

import torch

from simulate.relu_nets import EmpiricalLoss, ReluNet, ReluTrainResult, empirical_loss, init_relu_net, population_loss, train_relu
from simulate.teachers import ablate, correlated_units, readout_gd, risk, sphere_teacher

__all__ = ["repeat_net", "squared_norm", "pretrain_on_ablated_sources", "train_on_nested_samples",
           "readout_transfer_risks", "small_init_net", "related_teachers", "pretrain_small_net",
           "finetune_against_single_task"]


def repeat_net(net: ReluNet, times: int) -> ReluNet:
    """The batch of nets repeated ``times`` times along the trial dimension (block-major)."""
    return ReluNet(net.W.repeat(times, 1, 1), net.c.repeat(times, 1), net.scale)


def squared_norm(net: ReluNet) -> torch.Tensor:
    """||f||^2 = E_x f(x)^2 for x ~ N(0, I), per trial: the risk of the zero net against ``net``."""
    return risk(ReluNet(net.W, torch.zeros_like(net.c), net.scale), net)


def pretrain_on_ablated_sources(teacher: ReluNet, removed: Sequence[int], width: int, gen: torch.Generator, *,
                                lr: float, max_steps: int, loss_tol: float, readout_init: float) -> ReluTrainResult:
    """One mean-field student per (removed count, trial), pretrained on the exact population loss of its source
    (the teacher with ``removed`` units ablated, ``simulate.teachers.ablate``), as one batch ordered
    removed-count-major.  Students start with units uniform on the sphere and readouts +-``readout_init``, and
    train by GD with the units kept on the sphere.

    Draws from ``gen``: the ablations (in the order of ``removed``), then the students' init."""
    sources = [ablate(teacher, r, gen) for r in removed]
    source = ReluNet(torch.cat([s.W for s in sources]), torch.cat([s.c for s in sources]), sources[0].scale)
    net = init_relu_net(source.W.shape[0], width, teacher.W.shape[-1], gen, readout_scale=readout_init)
    return train_relu(net, population_loss(source), lr=lr, max_steps=max_steps, loss_tol=loss_tol, sphere=True)


def train_on_nested_samples(teacher: ReluNet, X: torch.Tensor, y: torch.Tensor, ns: Sequence[int], width: int,
                            gen: torch.Generator, *, lr: float, max_steps: int, loss_tol: float,
                            readout_init: float, method: str = "gd") -> tuple[ReluTrainResult, torch.Tensor]:
    """Mean-field students trained from scratch on each trial's first n samples of (X, y), for every n of
    ``ns``, as one batch (n-major, trials within): (the training result, the risk / ||f*||^2 as (len(ns), trials)).
    ``method``: train_relu's (GD or Heun's method on the same flow).

    Draws from ``gen``: the students' init (sphere units, readouts +-``readout_init``)."""
    trials = X.shape[0]
    net = init_relu_net(len(ns) * trials, width, X.shape[-1], gen, readout_scale=readout_init)
    fit = train_relu(net, EmpiricalLoss([(X[:, :n], y[:, :n]) for n in ns]),
                     lr=lr, max_steps=max_steps, loss_tol=loss_tol, sphere=True, method=method)
    target = repeat_net(teacher, len(ns))
    return fit, (risk(fit.net, target) / squared_norm(target)).view(len(ns), trials)


def readout_transfer_risks(W: torch.Tensor, X: torch.Tensor, y: torch.Tensor, ns: Sequence[int], target: ReluNet,
                           norm2: torch.Tensor, *, scale: float, lr: float, max_steps: int,
                           loss_tol: float) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """Linear transfer: the readout alone retrained by GD from 0 on the features of the pretrained units W
    (copies x trials, block-major over copies), on each trial's first n samples of (X, y), for every n of ``ns``
    (``simulate.teachers.readout_gd``, exact iterates).  Returns, per n, risk / ``norm2`` against ``target`` as a
    (copies, trials) tensor: at the budget (``max_steps`` or loss ``loss_tol``), and in the limit t -> oo (the
    least-norm interpolant)."""
    trials = X.shape[0]
    copies = W.shape[0] // trials
    at_budget, limit = [], []
    for n in ns:
        Xn, yn = X[:, :n].repeat(copies, 1, 1), y[:, :n].repeat(copies, 1)
        c, _, _ = readout_gd(W, Xn, yn, scale, lr=lr, max_steps=max_steps, loss_tol=loss_tol)
        at_budget.append((risk(ReluNet(W, c, scale), target) / norm2).view(copies, trials))
        c_inf, _, _ = readout_gd(W, Xn, yn, scale, lr=lr, max_steps=10**15)
        limit.append((risk(ReluNet(W, c_inf, scale), target) / norm2).view(copies, trials))
    return at_budget, limit


def small_init_net(trials: int, width: int, d: int, gen: torch.Generator, init: float) -> ReluNet:
    """Small init in the standard parameterisation (scale 1): w_h ~ N(0, init^2/d I), c_h ~ N(0, init^2)."""
    net = init_relu_net(trials, width, d, gen, hidden="gaussian", kappa=init / math.sqrt(d), readout="gaussian",
                        readout_scale=init)
    return ReluNet(net.W, net.c, 1.0)


def related_teachers(trials: int, units: int, d: int, rhos: Sequence[float], weight: float, n: int,
                     gen: torch.Generator) -> tuple[ReluNet, list[ReluNet], torch.Tensor]:
    """Related tasks for pretraining + fine-tuning, at scale 1: per trial an auxiliary teacher of ``units`` sphere
    units with readout 1, per rho of ``rhos`` a main teacher whose units sit at cosine rho to the auxiliary ones
    (``correlated_units``) with readout ``weight``, and n inputs x ~ N(0, I_d).  (aux, mains, X (trials, n, d)).

    Draws from ``gen``: the auxiliary units, the main units rho by rho, the inputs."""
    V = sphere_teacher(trials, units, d, gen).W
    aux = ReluNet(V, torch.ones(trials, units, dtype=torch.float64, device=V.device), 1.0)
    mains = [ReluNet(correlated_units(V, rho, gen), torch.full_like(aux.c, weight), 1.0) for rho in rhos]
    X = torch.randn(trials, n, d, generator=gen, device=gen.device, dtype=torch.float64)
    return aux, mains, X


def pretrain_small_net(teacher: ReluNet, width: int, gen: torch.Generator, *, init: float, lr: float,
                       max_steps: int) -> ReluTrainResult:
    """A small-init net (``small_init_net``) of ``width`` units trained by GD on the exact population loss of
    ``teacher`` for ``max_steps`` steps or to loss 1e-10."""
    net = small_init_net(teacher.W.shape[0], width, teacher.W.shape[-1], gen, init)
    return train_relu(net, population_loss(teacher), lr=lr, max_steps=max_steps, loss_tol=1e-10)


def finetune_against_single_task(pretrained: ReluNet, mains: Sequence[ReluNet], X: torch.Tensor, gen: torch.Generator,
                                 *, init: float, lr: float, steps: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Pretraining + fine-tuning (PT+FT) against single-task learning (STL) on the samples X (trials, n, d) of each
    main teacher: PT+FT trains every weight of the pretrained net, readouts reset to ``init``; STL a fresh
    small-init net (``small_init_net``); both by full-batch GD on the empirical loss, all (main, method) blocks in
    one batch, for ``steps`` steps or to loss 1e-12.  Returns the population risk and the final training loss,
    each over ||f_main||^2, as (mains, 2, trials) tensors (method 0 = PT+FT, 1 = STL).

    Draws from ``gen``: one STL init per main teacher, in order."""
    trials, _, d = X.shape
    target = ReluNet(torch.cat([t.W for t in mains for _ in range(2)]), torch.cat([t.c for t in mains for _ in range(2)]), 1.0)
    norm = squared_norm(target)
    W, c, ys = [], [], []
    for main in mains:
        stl = small_init_net(trials, pretrained.W.shape[-2], d, gen, init)
        W += [pretrained.W, stl.W]
        c += [torch.full_like(pretrained.c, init), stl.c]
        ys += [main(X)] * 2
    fit = train_relu(ReluNet(torch.cat(W), torch.cat(c), 1.0), empirical_loss(X.repeat(len(W), 1, 1), torch.cat(ys)),
                     lr=lr, max_steps=steps, loss_tol=1e-12)
    return (risk(fit.net, target) / norm).view(len(mains), 2, trials), (fit.loss / norm).view(len(mains), 2, trials)
