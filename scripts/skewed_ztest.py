#!/usr/bin/env python
"""How far is the z-test of a mean from its nominal rate when the per-draw quantity is skewed?

The checks test a Monte-Carlo mean against an exact expectation with a two-sided z-test, and state
its false-alarm rate from the normal approximation.  For a skewed per-draw law the studentised mean
has a heavy tail on the side opposite the skew (Edgeworth: the one-sided error is of order
skew * z^2 / sqrt(N)), so at a few dozen draws the stated rate is far too small.  This script
measures the actual rate for ``ridge-transfer``, whose per-draw risk is the squared error of a
one-dimensional fit (skewness ~3.3 at lam = 1/50): it samples a large pool of per-draw risks with the
check's own procedure, then draws many samples of N from the pool (the pool's law stands for the
true one) and counts |z| beyond the critical values.

    python scripts/skewed_ztest.py [--lam 1/50] [--pool 50000] [--sizes 40,200,4000,20000]

Measured (pool 50 000, seed 7; replicates 400 000 / 400 000 / 200 000 / 50 000), lower / upper tail
against the nominal one-sided 5e-4 at |z| = 3.29 and 5e-5 at 3.89:

    N = 40      3.29: 0.022 / 5e-6       3.89: 0.012 / 0
    N = 200     3.29: 0.0050 / 3e-5      3.89: 0.0016 / 0
    N = 4000    3.29: 0.0012 / 2.2e-4    3.89: 1.2e-4 / 5e-6
    N = 20000   3.29: 6.2e-4 / 4.6e-4    3.89: 1.0e-4 / 2e-5

So the two-sided rate is ~1.4x nominal at N = 4 000 and ~1.1x at 20 000; the check runs 10 000 draws at
the quick tier and 20 000 at the default.
"""

from __future__ import annotations

import argparse
import math
import os
import sys

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from simulate.paired_transfer import excess_risk                             # noqa: E402
from simulate.transfer import ridge_transfer                                  # noqa: E402
from theorems import REGISTRY, Run                                             # noqa: E402
from theorems.features_are_fate_transfer import _setup                        # noqa: E402

CRITICAL = (3.29, 3.89)           # two-sided 1e-3 and 1e-4


def pool_of_risks(lam: str, size: int, seed: int) -> torch.Tensor:
    """Per-draw risks of ridge on the pretrained features, by the check's own procedure (quick tier sizes)."""
    theorem = REGISTRY["ridge-transfer"]
    run = Run(tier="quick", trials=size, seed=seed, trends=False)
    p, _, _, draws, pre, _ = _setup(theorem, theorem.resolve({"lam": lam}, "quick"), run)
    return excess_risk(ridge_transfer(draws, pre.weights, p["lam"]), draws).double().cpu()


def tail_rates(pool: torch.Tensor, draws: int, replicates: int, gen: torch.Generator) -> dict:
    """Fraction of replicate means of ``draws`` pool values whose z (against the pool mean) is beyond each
    critical value, below and above."""
    mean, counts, done = pool.mean(), {c: [0, 0] for c in CRITICAL}, 0
    chunk = max(1, 4_000_000 // draws)
    while done < replicates:
        k = min(chunk, replicates - done)
        x = pool[torch.randint(pool.numel(), (k, draws), generator=gen)]
        z = (x.mean(1) - mean) / (x.std(1) / math.sqrt(draws))
        for c in CRITICAL:
            counts[c][0] += int((z < -c).sum())
            counts[c][1] += int((z > c).sum())
        done += k
    return {c: (low / replicates, high / replicates) for c, (low, high) in counts.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lam", default="1/50")
    parser.add_argument("--pool", type=int, default=50_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--sizes", default="40,200,4000,20000")
    args = parser.parse_args()
    pool = pool_of_risks(args.lam, args.pool, args.seed)
    centred = pool - pool.mean()
    print(f"pool of {pool.numel()} risks at lam = {args.lam}: skewness "
          f"{float((centred ** 3).mean() / (centred ** 2).mean() ** 1.5):.2f}")
    gen = torch.Generator().manual_seed(0)
    for draws in (int(x) for x in args.sizes.split(",")):
        replicates = 400_000 if draws <= 1000 else 200_000 if draws <= 5000 else 50_000
        rates = tail_rates(pool, draws, replicates, gen)
        text = "   ".join(f"|z| > {c}: {low:.2g} below / {high:.2g} above "
                          f"(nominal {0.5 * math.erfc(c / math.sqrt(2)):.1g} each)" for c, (low, high) in rates.items())
        print(f"N = {draws:>6}: {text}", flush=True)


if __name__ == "__main__":
    main()
