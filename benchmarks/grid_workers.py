"""Grid points per minute: a serial run against --workers N on this machine, and a sizing model.

    python benchmarks/grid_workers.py [--workers 2] [--claim finetune] [--grid gamma=0.2:0.8:6] [--tier quick]

Runs the same grid serially and with ``--workers N`` (each a fresh ``verify.py``
process, imports included), checks that both give the same numbers, and prints
points per minute for each.  The sizing model for a cluster:

    wall ~ ceil(points / workers) * t_point,   t_point ~ trials * steps(gamma) * cost_per_step(n, d, L)

with the measured per-point seconds of the serial run as t_point.  For the
paper-scale Fig. 3c grid (d = 500, L = 2, 20 draws) the points cost from ~5 s (far
from gamma = 1) to ~60 s (gamma = 0.9: ~2 400 scratch and ~5 100 fine-tuning gradient
evaluations at O(n^2) each), so a cluster helps as long as the near-peak points are
spread over workers: one worker per point bounds the wall time by the slowest point.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def timed_run(arguments: list[str]) -> tuple[float, list[dict]]:
    with tempfile.TemporaryDirectory() as folder:
        out = os.path.join(folder, "run.json")
        start = time.perf_counter()
        subprocess.run([sys.executable, "verify.py", *arguments, "--json", out], cwd=ROOT, check=False,
                       capture_output=True)
        wall = time.perf_counter() - start
        return wall, json.load(open(out))["results"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--claim", default="finetune")
    parser.add_argument("--grid", action="append", default=None)
    parser.add_argument("--tier", choices=("quick", "default", "paper"), default="quick")
    args = parser.parse_args()
    grid = [item for spec in (args.grid or ["gamma=0.2:0.8:6"]) for item in ("--grid", spec)]
    common = [args.claim, *grid] + ([f"--{args.tier}"] if args.tier != "default" else [])
    serial_wall, serial = timed_run(common)
    parallel_wall, parallel = timed_run([*common, "--workers", str(args.workers)])
    # Workers run with cores/W BLAS threads, the serial run with all cores: a reduction may then round
    # differently in its last bits, so "same" means the same points, verdicts and means to 1e-10.
    same = [(r["params"], r["verdict"]) for r in serial] == [(r["params"], r["verdict"]) for r in parallel]
    gaps = [abs(a["mc"]["mean"] - b["mc"]["mean"]) / max(abs(a["mc"]["mean"]), 1e-300)
            for a, b in zip(serial, parallel) if a["mc"] and b["mc"]]
    same = same and all(gap <= 1e-10 for gap in gaps)
    points = len(serial)
    per_point = [r["seconds"] for r in serial]
    print(f"{args.claim} over {points} points ({args.tier} tier), {os.cpu_count()} cores")
    print(f"  serial:      {serial_wall:7.1f} s wall, {60 * points / serial_wall:6.1f} points/min")
    print(f"  --workers {args.workers}: {parallel_wall:7.1f} s wall, {60 * points / parallel_wall:6.1f} points/min"
          f"  (speed-up {serial_wall / parallel_wall:.2f}x; same verdicts and means: {same},"
          f" largest relative gap {max(gaps, default=0):.1e})")
    print(f"  per point: {min(per_point):.1f}-{max(per_point):.1f} s (mean {sum(per_point) / points:.1f} s);"
          f" model for W workers: ceil({points}/W) x mean, >= {max(per_point):.1f} s (the slowest point)")
    for workers in (4, 16, 64):
        estimate = max(math.ceil(points / workers) * sum(per_point) / points, max(per_point))
        print(f"    W = {workers:2d}: ~{estimate:.0f} s")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
