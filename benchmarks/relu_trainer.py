"""Two-layer ReLU networks trained per second by the shared trainer, at the NTK claims' sizes.

    python benchmarks/relu_trainer.py [--networks 40] [--widths 64,256,1024,4096] [--d 8] [--n 8]

For each width m: ``networks`` independent nets f(x) = a^T relu(W^T x)/sqrt(m) (w_r(0) ~ N(0, kappa^2 I),
kappa = (1/10)(64/m)^{1/4}, a = +-1 fixed), batched in one tensor, trained by ``simulate.relu_nets.train_relu``
(full-batch GD, eta = n / lambda_max(H^inf)) on n unit-norm inputs in d dimensions with linear-teacher labels
to mean squared loss 1e-10, then fine-tuned on a second data set the same way: the pipeline of the
transfer-gradient-norm / transfer-weight-distance checks (``simulate.ntk.pretrain_finetune``).  Prints steps,
seconds and networks (pretrained + fine-tuned) per second.  Run with OMP_NUM_THREADS=1 to match CI.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from simulate.data import task_pair  # noqa: E402
from simulate.device import generator, keep_freed_host_memory  # noqa: E402
from simulate.ntk import linear_labels, pretrain_finetune, sphere_points  # noqa: E402

LOSS_TOL = 1e-10


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--networks", type=int, default=40)
    parser.add_argument("--widths", default="64,256,1024,4096")
    parser.add_argument("--d", type=int, default=8)
    parser.add_argument("--n", type=int, default=8, help="target (fine-tuning) samples")
    parser.add_argument("--n-source", type=int, default=8, help="source (pretraining) samples (ntk-finetune-bound: "
                        "--d 16 --n 8 --n-source 32)")
    args = parser.parse_args()
    keep_freed_host_memory()                 # as every check's process does (engine.runner.run_task)
    widths = [int(w) for w in args.widths.split(",")]
    print(f"d = {args.d}, n_P = {args.n_source}, n_Q = {args.n}, {args.networks} networks per width, float64, "
          f"{torch.get_num_threads()} threads")
    for m in widths:
        gen = generator(m, torch.device("cpu"))
        XP, XQ = sphere_points(args.networks, args.n_source, args.d, gen), sphere_points(args.networks, args.n, args.d, gen)
        beta_P, beta_Q = task_pair(args.networks, args.d, math.pi / 6, gen)
        kappa = 0.1 * (64 / m) ** 0.25
        start = time.perf_counter()
        run = pretrain_finetune(XP, linear_labels(XP, beta_P), XQ, linear_labels(XQ, beta_Q), m, kappa, gen,
                                loss_tol=LOSS_TOL)
        seconds = time.perf_counter() - start
        steps = run.steps
        print(f"m = {m:6d}: pretrain {steps[0]:5d} + fine-tune {steps[1]:5d} steps, {seconds:7.2f} s = "
              f"{args.networks / seconds:8.1f} networks/s ({2 * args.networks / seconds:8.1f} training runs/s, "
              f"{1e3 * seconds / (args.networks * sum(steps)):.3f} ms per network-step; converged: {run.converged})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
