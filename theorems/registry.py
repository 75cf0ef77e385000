"""The registry of claims: ``register`` adds a Theorem, ``get`` finds one by id."""

from __future__ import annotations

from theorems.core import Theorem

__all__ = ["REGISTRY", "UnknownTheorem", "register", "get"]

REGISTRY: dict[str, Theorem] = {}


class UnknownTheorem(KeyError):
    def __str__(self) -> str:
        return self.args[0]


def register(theorem: Theorem) -> Theorem:
    if theorem.id in REGISTRY:
        raise ValueError(f"theorem id {theorem.id!r} registered twice")
    REGISTRY[theorem.id] = theorem
    return theorem


def get(theorem_id: str) -> Theorem:
    try:
        return REGISTRY[theorem_id]
    except KeyError:
        raise UnknownTheorem(f"unknown theorem id {theorem_id!r} (see 'python verify.py list')") from None
