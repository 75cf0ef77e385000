"""Claims from outside the package: modules that register claims with ``theorems.registry.register``.

A source is a dotted module name (importable from ``sys.path``) or the path of a ``.py`` file
(``--claims-from``), or a module named in the entry-point group ``transfer_theorem_checker.claims``
of an installed distribution (``[project.entry-points."transfer_theorem_checker.claims"]``, any
name, the module as value).  Loading a source imports it once per process; its claims then join
the registry, so ``list``, ``show``, runs, reports, JSON, JUnit and ``pytest --claims`` see them
as they see the built-in claims.  Bad sources raise :class:`engine.session.InputError` with one line.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import os
import sys
import traceback
import zlib

from engine import PACKAGES
from engine.session import InputError

__all__ = ["ENTRY_POINT_GROUP", "load_claim_sources"]

ENTRY_POINT_GROUP = "transfer_theorem_checker.claims"

_loaded: dict[str, object] = {}   # source (a module name or an absolute path) -> its module, per process


def load_claim_sources(sources, entry_points: bool = True) -> tuple[str, ...]:
    """Import each source (and, with ``entry_points``, every module of the entry-point group) once; the
    sources loaded, as they can be loaded again in another process (paths made absolute), for the runner's
    worker processes.  Each newly imported source must register at least one claim."""
    named = [("--claims-from", source) for source in sources]
    if entry_points:
        for entry in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
            owner = f" of {entry.dist.name}" if getattr(entry, "dist", None) is not None else ""
            module = entry.value.partition(":")[0].strip()   # importing the module registers its claims
            named.append((f"entry point {entry.name!r}{owner} ({ENTRY_POINT_GROUP})", module))
    loaded = []
    for option, source in named:
        key = _key(option, source)
        if key not in _loaded:
            _loaded[key] = _load(option, source, key)
        loaded.append(key)
    return tuple(dict.fromkeys(loaded))


def loaded_modules() -> list:
    """The modules of the claim sources loaded in this process (worker processes load the same)."""
    return list(_loaded.values())


def _key(option: str, source: str) -> str:
    """A file's absolute path, or a module's dotted name."""
    if source.endswith(".py") or os.sep in source or (os.altsep and os.altsep in source):
        path = os.path.abspath(source)
        if not os.path.isfile(path):
            raise InputError(f"{option} {source}: no such file")
        return path
    if not all(part.isidentifier() for part in source.split(".")):
        raise InputError(f"{option} {source}: neither a .py file nor a dotted module name")
    return source


def _load(option: str, source: str, key: str):
    from theorems.registry import REGISTRY
    before = set(REGISTRY)
    try:
        module = _import_file(key) if os.path.isabs(key) else importlib.import_module(key)
    except ModuleNotFoundError as error:
        if error.name is not None and (key == error.name or key.startswith(error.name + ".")):
            raise InputError(f"{option} {source}: no module named {error.name!r} on sys.path "
                             f"(give a dotted name that Python can import, or the path of a .py file)") from None
        raise InputError(f"{option} {source}: {_where(error)}") from None
    except Exception as error:   # noqa: BLE001 -- the module is input: whatever it raises is reported in one line
        raise InputError(f"{option} {source}: {_where(error)}") from None
    if not set(REGISTRY) - before:
        raise InputError(f"{option} {source}: registers no claim (call theorems.registry.register(Theorem(...)) "
                         f"at import; a module already imported registers nothing again)")
    return module


def _import_file(path: str):
    """Import a .py file as a module of its own, under a name no other module uses."""
    stem = os.path.splitext(os.path.basename(path))[0]
    name = f"claims_from_{stem}" if stem.isidentifier() else "claims_from"
    if name in sys.modules:   # another file of the same name: tell them apart by their paths
        name += f"_{zlib.crc32(path.encode()):08x}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module   # registered first: dataclasses and pickle look a module up by name
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def _where(error: Exception) -> str:
    """'Type: message (file:line)', the line being the claim module's own: the outermost frame outside this
    project's packages and importlib, i.e. the module's line that raised or called what raised (a Theorem
    that fails its own checks points at its declaration, not into theorems/core.py)."""
    home = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ours = tuple(os.path.join(home, package) + os.sep for package in PACKAGES)
    frames = [frame for frame in traceback.extract_tb(error.__traceback__)
              if not frame.filename.startswith("<") and not frame.filename.startswith(ours)]
    if isinstance(error, SyntaxError):
        message, place = error.msg, f" ({error.filename}:{error.lineno})"
    else:
        message = (str(error).splitlines() or [""])[0]
        place = f" ({frames[0].filename}:{frames[0].lineno})" if frames else ""
    return f"{type(error).__name__}: {message}{place}"
