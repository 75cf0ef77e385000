"""Where tensors live and how random numbers are drawn, reproducibly."""

from __future__ import annotations

import ctypes
import ctypes.util
import math

import torch

__all__ = ["DeviceError", "resolve_device", "generator", "decompose", "keep_freed_host_memory", "exhausted_resource"]


class DeviceError(ValueError):
    """The requested device is unknown or not available here."""


def resolve_device(name: str = "auto") -> torch.device:
    """``auto`` picks CUDA when present, the CPU otherwise."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cpu":
        return torch.device("cpu")
    if name == "cuda":
        if not torch.cuda.is_available():
            raise DeviceError("--device cuda requested but no CUDA device is available")
        return torch.device("cuda")
    raise DeviceError(f"unknown device {name!r} (choose auto, cpu or cuda)")


def exhausted_resource(error: BaseException) -> str | None:
    """What a simulation ran out of, in one line, when ``error`` says it asked for more than the machine or
    float64 offers: memory (Python's ``MemoryError``, torch's allocators on the host and on CUDA) or the range
    of a size or number (an ``OverflowError``, torch's "Overflow when unpacking" for a size beyond int64).
    None for any other error, which is a bug and keeps its traceback."""
    first = (str(error).splitlines() or [""])[0]
    if isinstance(error, (MemoryError, torch.OutOfMemoryError)) or (
            isinstance(error, RuntimeError) and "can't allocate memory" in first):
        detail = first.split("DefaultCPUAllocator: ")[-1]
        return "out of memory" + (f": {detail}" if detail else "")
    if isinstance(error, OverflowError):
        return f"a number beyond float64's range: {first}"
    if isinstance(error, (TypeError, RuntimeError)) and "Overflow" in first:
        return "a tensor size beyond int64"
    return None


# glibc's mallopt parameters (malloc.h) and the values keep_freed_host_memory sets
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
MMAP_THRESHOLD = 32 * 2**20        # the largest glibc accepts (half its 64 MiB heap size)
TRIM_THRESHOLD = 256 * 2**20


def keep_freed_host_memory() -> bool:
    """Let the process reuse the memory of freed CPU tensors instead of asking the kernel for fresh pages.

    A trainer's step allocates and frees temporaries of several MB (a (384, 128, 32) float64 tensor is 12.6 MB).
    By default glibc serves such a block with a fresh mmap, or gives the top of its heap back to the kernel once
    about twice the last freed block lies free there; either way the next step's tensor lands on pages the kernel
    must map and zero on first touch.  Here blocks up to 32 MiB come from the heap and up to 256 MiB of free heap
    is kept.  relu-transfer's quick sizes, 100 steps, three interleaved pairs on the idle 2-core machine: scratch
    training (1 920 nets, Heun) 11.4 -> 9.7 s of CPU (page faults 400 000 -> 42 000, system time 1.4 -> 0.1 s),
    pretraining (1 152 nets) 7.5 -> 6.8 s; the same bits, since only where memory comes from changes.  The cost
    is memory the process keeps (at most 256 MiB beyond what it uses).  glibc only (elsewhere nothing changes);
    returns whether it applied."""
    try:
        mallopt = ctypes.CDLL(ctypes.util.find_library("c") or None).mallopt
    except (OSError, AttributeError, TypeError):     # no C library by that name, or no mallopt in it (not glibc)
        return False
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD))


def generator(seed: int, device: torch.device) -> torch.Generator:
    """A generator on ``device`` seeded with ``seed``.

    Random numbers are drawn on the device that uses them; CPU and CUDA streams
    differ, so a seed reproduces numbers on the same kind of device.
    """
    gen = torch.Generator(device=device)
    gen.manual_seed(int(seed) % 2**63)
    return gen


# torch's CUDA SVD and symmetric eigen-solvers decompose a batch in one cuSOLVER call only for matrices of side
# <= 32; above that they loop over the batch, one solver call per matrix.  A large batch of such matrices (the
# certificates' operator norms over 10 000 draws, covariance-bound's 100 SVDs of 200 x 200) is then far cheaper
# in one LAPACK call on the host, and comes back to the device (docs/scaling.md, "A GPU").
LOOPED_SIDE = 32
HOST_BATCH = 64


def looped_on_cuda(shape) -> bool:
    """Whether a batch of matrices of this shape is one that torch's CUDA decompositions loop over and that
    :func:`decompose` therefore sends to the host: at least HOST_BATCH matrices of side above LOOPED_SIDE."""
    batch = math.prod(shape[:-2])
    return batch >= HOST_BATCH and max(shape[-2:]) > LOOPED_SIDE


def on_host(matrix: torch.Tensor) -> bool:
    """Whether :func:`decompose` moves ``matrix`` (a batch of matrices) to the host."""
    return matrix.is_cuda and looped_on_cuda(tuple(matrix.shape))


def decompose(decomposition, matrix: torch.Tensor, **options):
    """``decomposition(matrix, **options)`` for a ``torch.linalg`` decomposition (svdvals, matrix_norm with ord=2,
    eigvalsh, eigh, svd, pinv, qr), on the host when :func:`on_host` says so, the result(s) on ``matrix``'s device.
    On the CPU it is the plain call, so CPU numbers do not depend on it."""
    if not on_host(matrix):
        return decomposition(matrix, **options)
    result = decomposition(matrix.cpu(), **options)
    if isinstance(result, torch.Tensor):
        return result.to(matrix.device)
    return tuple(part.to(matrix.device) for part in result)
