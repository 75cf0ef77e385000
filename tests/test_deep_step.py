"""The step rule of linear_nets.train at depth L >= 3: a bound on the local curvature of the loss in the weights.

The bound must hold (a finite-difference Hessian never exceeds it; gradient descent at the bounded step never
raises the loss), the end points must agree with the old rule's (a fixed fraction of the step bounded by
lambda_max(H) max(s_t, 1)) to within what the checks resolve, and L = 2 must not use it at all."""

import math

import pytest
import torch

import simulate.linear_nets as linear_nets
from simulate.data import task_pair
from simulate.depth_finetune import TOL_RK4, fine_tune_all, pretrain_population
from simulate.linear_nets import _curvature_bound, _layer_gradients, empirical, init_weights, population, train
from simulate.transfer import FLOW_TOL, draw_target, fine_tune, pretrain, scratch


def _old_rule(objective, weights, grad_beta):
    """The rule before the curvature bound: lambda_max(H) max(s_t, 1), the clamp standing for the second term."""
    return objective.lam_max * linear_nets._smoothness(weights).clamp(min=1.0)


def _problem(seed, depth, alpha, d=3, n=2):
    gen = torch.Generator().manual_seed(seed)
    X = torch.randn(1, n, d, generator=gen, dtype=torch.float64)
    y = torch.randn(1, n, generator=gen, dtype=torch.float64)
    weights = [alpha * torch.randn(*w.shape, generator=gen, dtype=torch.float64)
               for w in init_weights(1, d, depth, 1.0, "gaussian", gen)]
    return empirical(X, y), weights


def _flat_gradient(objective, weights, shapes, vector):
    parts, start = [], 0
    for shape in shapes:
        size = math.prod(shape)
        parts.append(vector[start:start + size].view(shape))
        start += size
    grads = _layer_gradients(objective, parts)[2]
    return torch.cat([g.flatten() for g in grads])


@pytest.mark.parametrize("depth", [3, 4])
@pytest.mark.parametrize("alpha", [1e-2, 0.3, 1.0, 2.0])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_bound_exceeds_finite_difference_hessian(depth, alpha, seed):
    objective, weights = _problem(seed, depth, alpha)
    shapes = [w.shape for w in weights]
    flat = torch.cat([w.flatten() for w in weights])
    eps = 1e-6 * max(1.0, flat.abs().max().item())
    columns = []
    for j in range(flat.numel()):
        e = torch.zeros_like(flat)
        e[j] = eps
        columns.append((_flat_gradient(objective, weights, shapes, flat + e)
                        - _flat_gradient(objective, weights, shapes, flat - e)) / (2 * eps))
    hessian = torch.stack(columns, 1)
    norm = torch.linalg.eigvalsh((hessian + hessian.T) / 2).abs().max().item()
    grad_beta = _layer_gradients(objective, weights)[1]
    bound = _curvature_bound(objective, weights, grad_beta).item()
    assert norm <= bound * (1 + 1e-6), (norm, bound)


@pytest.mark.parametrize("depth", [3, 4])
@pytest.mark.parametrize("alpha", [1e-3, 0.1, 0.6])
def test_gradient_descent_lowers_the_loss_at_every_step(depth, alpha):
    """GD at step_scale 1 (the largest any check uses) on random data, Gaussian and eq.-(22) inits.  n > d with
    random labels, so the minimum loss is positive and a rise cannot hide in rounding near 0."""
    gen = torch.Generator().manual_seed(depth)
    X = torch.randn(4, 10, 8, generator=gen, dtype=torch.float64)
    y = torch.randn(4, 10, generator=gen, dtype=torch.float64)
    objective = empirical(X, y)
    for kind in ("gaussian", "eq22"):
        history = []
        fit = train(objective, init_weights(4, 8, depth, alpha, kind, gen), tol=1e-8, max_steps=1500,
                    step_scale=1.0, check_every=1, history=history)
        losses = torch.stack([objective.loss(beta) for _, beta in history])      # (steps + 1, trials)
        rise = losses[1:] - losses[:-1]
        assert bool((rise <= 1e-14 * losses[:-1]).all()), (kind, rise.max().item())
        assert bool((losses[-1] < 0.9 * losses[0]).all())       # and it did train


def test_deep_scratch_and_fine_tuning_agree_with_the_old_rule(monkeypatch):
    """L = 3, the finetune check's pipeline at a small size: pretraining (RK4, population), scratch (GD) and
    fine-tuning (RK4).  Their end points agree with the old rule's to within FLOW_TOL, the integration error
    the transfer checks allow (relative to ||beta||)."""
    def run():
        gen = torch.Generator().manual_seed(11)
        draws = draw_target(4, 10, 20, math.pi / 4, 0.2, gen)
        pre = pretrain(draws.beta_s, 3, 1e-2, "eq22", gen)
        sc = scratch(draws, 3, 1e-2, "eq22", gen)
        ft = fine_tune(draws, pre.weights)
        assert bool(pre.converged.all()) and bool(sc.converged.all()) and bool(ft.converged.all())
        return pre, sc, ft

    new = run()
    monkeypatch.setattr(linear_nets, "_curvature_bound", _old_rule)
    old = run()
    for name, a, b in zip(("pretraining", "scratch", "fine-tuning"), new, old):
        if name != "fine-tuning":                   # fine-tuning starts far from the saddle: no fewer steps
            assert a.steps < b.steps, (name, a.steps, b.steps)
        distance = (a.beta - b.beta).norm(dim=1) / b.beta.norm(dim=1)
        assert distance.max().item() < FLOW_TOL / 10, distance


def test_depth_rescaling_pipeline_agrees_with_the_old_rule(monkeypatch):
    """L = 3, the Shachaf checks' quarter-step RK4 (pretraining from a 0-balanced init, fine-tuning every
    layer): the fine-tuned end points agree with the old rule's to within TOL_RK4 / 10 (eq. (5)'s tolerance)."""
    def run():
        gen = torch.Generator().manual_seed(5)
        theta_s, theta_t = task_pair(3, 12, math.pi / 3, gen)
        X = torch.randn(3, 5, 12, generator=gen, dtype=torch.float64)
        pre = pretrain_population(theta_s, 3, 1e-2, True, gen)
        ft = fine_tune_all(X, (X @ theta_t.unsqueeze(-1)).squeeze(-1), pre.weights)
        return pre, ft

    new = run()
    monkeypatch.setattr(linear_nets, "_curvature_bound", _old_rule)
    old = run()
    assert new[0].steps < old[0].steps
    for a, b in zip(new, old):
        distance = (a.beta - b.beta).norm(dim=1) / b.beta.norm(dim=1)
        assert distance.max().item() < TOL_RK4 / 10, distance


def test_two_layers_do_not_use_the_bound(monkeypatch):
    """L <= 2 keeps lambda_max(H) max(s_t, 1), bit for bit: the deep bound is never evaluated."""
    def forbidden(*args):
        raise AssertionError("the deep curvature bound was used at L <= 2")

    monkeypatch.setattr(linear_nets, "_curvature_bound", forbidden)
    gen = torch.Generator().manual_seed(3)
    target = torch.randn(2, 5, generator=gen, dtype=torch.float64)
    for depth in (1, 2):
        for method in ("gd", "rk4"):
            fit = train(population(target), init_weights(2, 5, depth, 0.1, "eq22", gen), tol=1e-8, method=method)
            assert bool(fit.converged.all())


def _dense_steps(objective, weights, method, frozen, steps):
    """The dense iteration the deep trainer replaces: every stage's layer gradients formed as (trials, d, d)
    tensors and the shifted weights materialised (the L <= 2 loop of train, with the deep step)."""
    weights = [w.clone() for w in weights]
    for _ in range(steps):
        _, grad_beta, grads = _layer_gradients(objective, weights)
        h = (1.0 / _curvature_bound(objective, weights, grad_beta)).view(-1, 1, 1)
        stages = [grads]
        if method == "rk4":
            for coefficients in linear_nets.RK4:
                shifted = [w if l in frozen else w - h * sum(c * k[l] for c, k in zip(coefficients, stages) if c)
                           for l, w in enumerate(weights)]
                stages.append(_layer_gradients(objective, shifted)[2])
        step = linear_nets.RK4_WEIGHTS if method == "rk4" else (1.0,)
        weights = [w if l in frozen else w - h * sum(s * k[l] for s, k in zip(step, stages))
                   for l, w in enumerate(weights)]
    return weights


@pytest.mark.parametrize("depth", [3, 4])
@pytest.mark.parametrize("method", ["gd", "rk4"])
@pytest.mark.parametrize("frozen", [(), (0,), (0, 1)])
def test_rank_one_stages_are_the_dense_iteration(depth, method, frozen):
    """The deep trainer's rank-one factors change only the rounding: 200 steps agree with the dense loop."""
    gen = torch.Generator().manual_seed(7)
    X = torch.randn(3, 6, 10, generator=gen, dtype=torch.float64)
    objective = empirical(X, torch.randn(3, 6, generator=gen, dtype=torch.float64))
    weights = init_weights(3, 10, depth, 0.05, "eq22", gen)
    fit = train(objective, weights, tol=0.0, max_steps=200, step_scale=1.0, method=method, frozen=frozen)
    for new, old in zip(fit.weights, _dense_steps(objective, weights, method, frozen, 200)):
        assert (new - old).abs().max().item() <= 1e-12 * old.abs().max().item()
