"""Batched decompositions of small matrices on a device: torch's own call against ``simulate.device.decompose``.

    python benchmarks/batched_linalg.py [--device cuda] [--batch 1000]

torch's CUDA SVD and symmetric eigen-solvers batch only matrices of side <= 32 and loop over larger ones;
``decompose`` sends such batches (at least HOST_BATCH matrices) to the host's LAPACK.  Prints, for the shapes
the checks decompose, the seconds of each path and the largest difference between their results.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from simulate.device import decompose, on_host, resolve_device  # noqa: E402

CASES = (   # (what, decomposition, options, shape of one matrix, symmetric)
    ("certificate ||X||_2 (ridge-transfer, 30 x 60)", torch.linalg.matrix_norm, {"ord": 2}, (30, 60), False),
    ("lambda_min^+ of X X^T (60 x 60)", torch.linalg.eigvalsh, {}, (60, 60), True),
    ("covariance-bound's svdvals (200 x 200)", torch.linalg.svdvals, {}, (200, 200), False),
)


def _timed(call, device):
    if device.type == "cuda":
        torch.cuda.synchronize()
    began = time.perf_counter()
    result = call()
    if device.type == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - began, result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--batch", type=int, default=1000)
    args = parser.parse_args(argv)
    device = resolve_device(args.device)
    gen = torch.Generator(device=device).manual_seed(0)
    print(f"device {device}{' (' + torch.cuda.get_device_name() + ')' if device.type == 'cuda' else ''}, "
          f"torch {torch.__version__}, {torch.get_num_threads()} host threads")
    for what, decomposition, options, shape, symmetric in CASES:
        batch = args.batch if shape[0] < 100 else max(64, args.batch // 10)
        A = torch.randn(batch, *shape, generator=gen, device=device, dtype=torch.float64)
        if symmetric:
            A = A @ A.transpose(-1, -2)
        decomposition(A[:2], **options), decompose(decomposition, A[:2], **options)      # warm the libraries
        direct_s, direct = _timed(lambda: decomposition(A, **options), device)
        routed_s, routed = _timed(lambda: decompose(decomposition, A, **options), device)
        gap = ((direct - routed).abs().max() / direct.abs().max()).item()
        print(f"{what}: {batch} matrices, torch {direct_s:.3f} s, decompose {routed_s:.3f} s "
              f"({'host' if on_host(A) else 'device'}), relative difference {gap:.1e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
