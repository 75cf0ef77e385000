"""One grid point of Features-are-fate Fig. 3c, timed two ways in one run.

    python benchmarks/fig3c_point.py [--gamma 1/2] [--theta pi/4] [--skip-reference]

Ours: d = 500, L = 2, 20 draws, float64; the network is pretrained on the source
population loss (RK4 gradient flow), then for each draw a scratch network (GD) and
a fine-tuned one (gradient flow by adaptive Runge-Kutta-Chebyshev steps under a local
error control) are trained to training loss <= 1e-6 with the exact two-layer
reformulation of simulate.linear_nets.train_two_layer; when X X^T is ill-conditioned
(n near d, e.g. --gamma 9/10) the scratch network takes RKC steps too
(simulate.transfer._fit).

Reference: the recipe of the paper's public code -- float32, torch.optim.SGD with
lr 0.01, 5000 full-batch steps, autograd on the dense (20, 500, 500) weights, the
20 draws batched as one tensor -- for pretraining, scratch and fine-tuning.

Target (issue): ours <= 10 s on the 2-core CPU.  Final training losses of both are printed.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from numerics.expr import parse_number  # noqa: E402
from simulate.device import generator, keep_freed_host_memory  # noqa: E402
from simulate.transfer import draw_target, fine_tune, pretrain, scratch  # noqa: E402

D, DEPTH, DRAWS, SIGMA, ALPHA, LOSS = 500, 2, 20, 0.2, 1e-5, 1e-6


def ours(gamma, theta, seed=0):
    gen = generator(seed, torch.device("cpu"))
    n = round(gamma * D)
    draws = draw_target(DRAWS, n, D, theta, SIGMA, gen)
    start = time.perf_counter()
    pre = pretrain(draws.beta_s, DEPTH, ALPHA, "gaussian", gen)
    sc = scratch(draws, DEPTH, ALPHA, "gaussian", gen, loss_tol=LOSS)
    ft = fine_tune(draws, pre.weights, loss_tol=LOSS)
    seconds = time.perf_counter() - start
    t_ft = ((sc.beta - draws.beta_t).pow(2).sum(1) - (ft.beta - draws.beta_t).pow(2).sum(1)).mean().item()
    return seconds, sc.loss.max().item(), ft.loss.max().item(), _work(sc), _work(ft), t_ft


def _work(fit):
    """Steps, and gradient evaluations where the flow was integrated by RKC2 (fine-tuning; scratch on ill-conditioned X)."""
    return f"{fit.steps} RKC steps, {fit.evaluations} evaluations" if fit.evaluations else f"{fit.steps} steps"


def reference(gamma, theta, seed=0, steps=5000, lr=0.01):
    gen = generator(seed, torch.device("cpu"))
    n = round(gamma * D)
    draws = draw_target(DRAWS, n, D, theta, SIGMA, gen)
    X, y = draws.X.float(), draws.y.float()
    beta_s, beta_t = draws.beta_s.float(), draws.beta_t.float()

    def fit(weights, loss_fn):
        params = [w.clone().requires_grad_(True) for w in weights]
        opt = torch.optim.SGD(params, lr=lr)
        for _ in range(steps):
            opt.zero_grad()
            loss = loss_fn(params)
            loss.sum().backward()
            opt.step()
        return [p.detach() for p in params], loss.detach()

    def init(batch):
        return [ALPHA * torch.randn(batch, D, D, generator=gen) / math.sqrt(D),
                ALPHA * torch.randn(batch, D, 1, generator=gen) / math.sqrt(D)]

    start = time.perf_counter()
    pre, _ = fit(init(1), lambda p: 0.5 * ((p[0] @ p[1]).squeeze(-1) - beta_s).pow(2).sum(-1))
    empirical = lambda p: ((X @ p[0] @ p[1]).squeeze(-1) - y).pow(2).sum(-1) / (2 * n)
    sc, sc_loss = fit(init(DRAWS), empirical)
    ft, ft_loss = fit([w.expand(DRAWS, -1, -1) for w in pre], empirical)
    seconds = time.perf_counter() - start
    risk = lambda p: ((p[0] @ p[1]).squeeze(-1) - beta_t).pow(2).sum(1)
    return seconds, sc_loss.max().item(), ft_loss.max().item(), (risk(sc) - risk(ft)).mean().item()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gamma", default="1/2")
    parser.add_argument("--theta", default="pi/4")
    parser.add_argument("--skip-reference", action="store_true", help="time only our route")
    args = parser.parse_args()
    keep_freed_host_memory()                 # as every check's process does (engine.runner.run_task)
    gamma, theta = float(parse_number(args.gamma)), float(parse_number(args.theta))
    torch.set_num_threads(os.cpu_count() or 1)
    seconds, sc_loss, ft_loss, sc_steps, ft_steps, t_ft = ours(gamma, theta)
    target = f"target <= 10 s: {'meets' if seconds <= 10 else 'MISSES'}" if gamma == 0.5 else "no target off gamma = 1/2"
    print(f"ours      (float64, pretrain + {DRAWS} scratch + {DRAWS} fine-tuned, d={D}): {seconds:6.1f} s; "
          f"max final loss scratch {sc_loss:.1e} ({sc_steps}), fine-tune {ft_loss:.1e} ({ft_steps}); "
          f"T_ft = {t_ft:+.4f}; {target}")
    if not args.skip_reference:
        seconds, sc_loss, ft_loss, t_ft = reference(gamma, theta)
        print(f"reference (float32 SGD lr 0.01, 5000 full-batch steps, dense autograd):            {seconds:6.1f} s; "
              f"max final loss scratch {sc_loss:.1e}, fine-tune {ft_loss:.1e}; T_ft = {t_ft:+.4f}")
    print(f"eq. (17) at gamma={gamma:.3g}, theta={theta:.3g}: T_ft = {(gamma - 1) * (1 - 2 * math.cos(theta)):+.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
