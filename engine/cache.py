"""The result cache: a finished point's row, stored so that asking again costs a file read.

A row is stored under a key that holds everything its numbers depend on: the claim, its parameters, tier,
trials, seed, design law, dtype, precision, the run's Bonferroni family (several checks select what they
compare by the run's critical value, so a row is exact only for the family it was judged in), whether the
alpha-trend reruns ran, the device model and BLAS thread count (summation order), the versions of the
package, torch, mpmath and sympy, and a hash of the source files the claim's check runs: its family module
and every module of the project it imports, transitively (a changed source invalidates exactly the claims
that import it), plus the runner and the verdict engine, which build every row.

So a rerun, an interrupted grid started again, or a map refined further takes its finished points from
here and simulates only the new ones; a cached row equals the fresh one except ``seconds`` (the original
run's) and ``cached``.  Entries are pickles: a cache folder is trusted like a build folder.

Location: ``--cache DIR``, else ``$TRANSFER_CHECK_CACHE``, else ``$XDG_CACHE_HOME/transfer-theorem-checker``
(``~/.cache/...``); ``--no-cache`` or ``TRANSFER_CHECK_CACHE=off`` turns it off.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import pickle
import platform
import sys
import tempfile
from functools import lru_cache
from pathlib import Path

__all__ = ["OFF", "ResultCache", "code_identity", "default_location", "source_files"]

OFF = "off"
ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("numerics", "simulate", "theorems", "engine")
# every row is built by these, whatever the claim
ALWAYS = ("engine/runner.py", "engine/verdict.py", "theorems/core.py", "theorems/registry.py")
TRAVERSED = ("theorems/core.py", "engine/verdict.py")   # ... and these with what they import
SUFFIX = ".row.pkl"


def default_location() -> str:
    """Where the cache lives unless ``--cache`` says otherwise; ``OFF`` when the environment turns it off."""
    chosen = os.environ.get("TRANSFER_CHECK_CACHE")
    if chosen:
        return chosen
    home = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(home, "transfer-theorem-checker")


def _imported(path: Path) -> set[str]:
    """Module names a source file imports, anywhere in it (checks import lazily inside functions)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)   # `from pkg import module`
    return names


def _module_file(name: str, beside: Path) -> Path | None:
    """The project's (or a claim file's neighbour's) source file of a module name, else None."""
    parts = name.split(".")
    base = ROOT if parts[0] in PACKAGES else beside
    for candidate in (base.joinpath(*parts).with_suffix(".py"), base.joinpath(*parts, "__init__.py")):
        if candidate.is_file():
            return candidate.resolve()
    return None


@lru_cache(maxsize=None)
def source_files(claim_file: str) -> tuple[Path, ...]:
    """The source files a claim's check runs: its module, what it (or the claim types) import from the
    project or from beside it, transitively, and the files that build every row (``ALWAYS``; the runner's
    own imports, such as the session or the cache, do not change a row's numbers; the claim types' and the
    verdict engine's do)."""
    start = Path(claim_file).resolve()
    seen, todo = set(), [start] + [(ROOT / f).resolve() for f in TRAVERSED]
    while todo:
        path = todo.pop()
        if path not in seen:
            seen.add(path)
            todo += [f for f in (_module_file(n, start.parent) for n in _imported(path)) if f is not None]
    return tuple(sorted(seen | {(ROOT / f).resolve() for f in ALWAYS}))


@lru_cache(maxsize=None)
def _sources_hash(claim_file: str) -> str:
    digest = hashlib.sha256()
    for path in source_files(claim_file):
        digest.update(str(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path.name).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


@lru_cache(maxsize=None)
def _versions() -> dict:
    from importlib.metadata import PackageNotFoundError, version
    import mpmath
    import sympy
    import torch
    try:
        package = version("transfer-theorem-checker")
    except PackageNotFoundError:
        package = "checkout"
    return {"package": package, "torch": torch.__version__, "mpmath": mpmath.__version__, "sympy": sympy.__version__,
            "python": platform.python_version()}


def _device_model(device) -> str:
    import torch
    device = torch.device(device)
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return f"{device.type} {platform.machine()}"


def code_identity(theorem) -> dict:
    """What a stored result of ``theorem``'s check depends on besides its parameters and run settings: the hash
    of the sources the check runs (``source_files``) and the package versions.  The result cache keys on it, and
    so does a stored map's reuse of its points (engine/maps.py)."""
    return {"versions": _versions(), "sources": _sources_hash(sys.modules[theorem.check.__module__].__file__)}


class ResultCache:
    """Rows on disk, one file per point, under ``root``."""

    def __init__(self, root: str | os.PathLike):
        self.root = Path(root).expanduser()

    def key(self, task, theorem, device, threads: int) -> str:
        """The hex key of one point of one claim (``task`` is an ``engine.runner.Task``)."""
        fields = {"claim": task.theorem_id, "params": sorted((k, str(v)) for k, v in task.params.items()),
                  "tier": task.tier, "trials": task.trials, "seed": task.seed, "dps": task.dps, "trends": task.trends,
                  "theory_only": task.theory_only, "data": task.data, "dtype": task.dtype, "family": task.family,
                  "recorded": [task.expected, task.finding, task.corrected]
                  + ([task.departure] if task.departure is not None else []),   # the keys of earlier runs kept
                  "device": _device_model(device), "threads": threads, **code_identity(theorem)}
        if task.certify:   # a certified row carries its certificate, computed with python-flint's arb
            from importlib.metadata import version
            fields["certify"] = version("python-flint")
        return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / (key + SUFFIX)

    def load(self, key: str) -> dict | None:
        """The stored row, marked ``cached``; None when absent or unreadable (a damaged entry is recomputed)."""
        try:
            with open(self._path(key), "rb") as handle:
                row = pickle.load(handle)
        except (OSError, EOFError, pickle.UnpicklingError, AttributeError, ImportError):
            return None
        return {**row, "cached": True}

    def store(self, key: str, row: dict) -> None:
        """Write atomically (a temporary file renamed), so that a reader or a crash never sees half a row."""
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("wb", dir=path.parent, delete=False, suffix=".tmp") as handle:
            pickle.dump(row, handle, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(handle.name, path)

    def entries(self) -> list[Path]:
        return sorted(self.root.glob(f"*/*{SUFFIX}")) if self.root.is_dir() else []

    def info(self) -> dict:
        """How many rows of which claims the cache holds, and their size on disk."""
        claims: dict[str, int] = {}
        size = 0
        for path in self.entries():
            size += path.stat().st_size
            row = self.load(path.name.removesuffix(SUFFIX))
            claim = row["id"] if row else "(unreadable)"
            claims[claim] = claims.get(claim, 0) + 1
        return {"location": str(self.root), "rows": sum(claims.values()), "bytes": size, "claims": claims}

    def clear(self) -> int:
        """Remove every stored row (and nothing else); how many were removed."""
        removed = 0
        for path in self.entries():
            path.unlink(missing_ok=True)
            removed += 1
        for folder in sorted(self.root.glob("*"), reverse=True):
            if folder.is_dir() and not any(folder.iterdir()):
                folder.rmdir()
        return removed
