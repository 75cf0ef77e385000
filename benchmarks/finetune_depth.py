"""Seconds per fine-tuned deep linear network, against depth.

    python benchmarks/finetune_depth.py [--d 50] [--gamma 1/2] [--networks 16] [--depths 1,2,3,5,8]

For each depth L: ``networks`` independent draws (X Gaussian n x d, unit theta_S,
theta_T at angle pi/3, sigma = 0), a 0-balanced init of scale ALPHA = 0.2 pretrained on the source
population loss and then every layer fine-tuned to relative gradient 1e-12 -- the
routines of the depth-rescaling check (linear_nets.train: RK4 gradient flow at a quarter
of the curvature-bounded step; for L >= 3 the step bounds the local Hessian and the
stage gradients are kept as rank-one factors), batched over the networks.  For L = 2 the exact two-layer
reformulation used by the Features-are-fate checks is timed as well (same flow,
O(n^2) per step; RK4 or, for ill-conditioned X, RKC2).
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
from simulate.data import gaussian_design, task_pair  # noqa: E402
from simulate.device import generator, keep_freed_host_memory  # noqa: E402
from simulate.transfer import TargetDraws, fine_tune  # noqa: E402
from simulate.depth_finetune import fine_tune_all, pretrain_population  # noqa: E402

# Escaping the saddle at 0 takes time ~ alpha^-(L-2) for L >= 3: a near-zero but not tiny init.
ALPHA = 0.2


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--d", type=int, default=50)
    parser.add_argument("--gamma", default="1/2")
    parser.add_argument("--networks", type=int, default=16)
    parser.add_argument("--depths", default="1,2,3,5,8")
    args = parser.parse_args()
    keep_freed_host_memory()                 # as every check's process does (engine.runner.run_task)
    d, networks = args.d, args.networks
    n = round(float(parse_number(args.gamma)) * d)
    print(f"d = {d}, n = {n}, {networks} networks per depth, float64, {torch.get_num_threads()} threads")
    for depth in (int(x) for x in args.depths.split(",")):
        gen = generator(depth, torch.device("cpu"))
        X = gaussian_design(networks, n, d, gen)
        theta_s, theta_t = task_pair(networks, d, math.pi / 3, gen)
        y = (X @ theta_t.unsqueeze(-1)).squeeze(-1)
        start = time.perf_counter()
        pre = pretrain_population(theta_s, depth, ALPHA, True, gen)
        middle = time.perf_counter()
        ft = fine_tune_all(X, y, pre.weights)
        end = time.perf_counter()
        print(f"L = {depth:2d} RK4: pretrain {pre.steps:6d} steps {middle - start:6.2f} s, fine-tune "
              f"{ft.steps:6d} steps {end - middle:6.2f} s = {(end - middle) / networks * 1e3:7.1f} ms per network "
              f"(converged: {bool(ft.converged.all())})")
        if depth == 2:
            draws = TargetDraws(X, y, theta_s[0], theta_t)
            start = time.perf_counter()
            fast = fine_tune(draws, pre.weights, tol=1e-12)
            seconds = time.perf_counter() - start
            work = f"{fast.steps} RKC steps, {fast.evaluations} evaluations" if fast.evaluations else f"{fast.steps} RK4 steps"
            print(f"L =  2 two-layer reformulation: {work}, {seconds:6.2f} s = {seconds / networks * 1e3:7.1f} ms "
                  f"per network; max |beta - dense| = {(fast.beta - ft.beta).norm(dim=1).max().item():.1e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
