"""Where tensors live and how random numbers are drawn, reproducibly."""

from __future__ import annotations

import torch

__all__ = ["DeviceError", "resolve_device", "generator"]


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


def generator(seed: int, device: torch.device) -> torch.Generator:
    """A generator on ``device`` seeded with ``seed``.

    Random numbers are drawn on the device that uses them; CPU and CUDA streams
    differ, so a seed reproduces numbers on the same kind of device.
    """
    gen = torch.Generator(device=device)
    gen.manual_seed(int(seed) % 2**63)
    return gen
