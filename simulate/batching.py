"""Splitting many independent trials into batches that fit in memory.

Every batch is one tensor program; the batches are drawn one after another from the same
generator.  The split bounds memory; another split may give other numbers from the generator,
never another distribution (the trials are i.i.d.).
"""

from __future__ import annotations

__all__ = ["batches"]


def batches(total: int, size: int):
    """Sizes of consecutive batches of at most ``size`` (>= 1) that add up to ``total``."""
    if size < 1:
        raise ValueError(f"batch size must be at least 1, not {size}")
    for start in range(0, total, size):
        yield min(size, total - start)
