"""The machinery that runs claims and judges them: the claims themselves live in ``theorems``.

``engine`` knows a claim only through its declared fields (``theorems.core.Theorem``) and the
registry; a claim module never imports from here except the verdict types it returns
(``engine.verdict``).  Modules: ``session`` (what a command line asks for, resolved into points,
run and summed up), ``runner`` (one point, serially, in processes or on Dask), ``verdict`` (the
statistics: every test, its comparison count and its effect size), ``report``, ``junit``,
``figures``, ``baseline``, ``power``, ``compare``, ``claim_sources`` (claims registered from
outside the package), ``pytest_plugin`` (``pytest --claims``).

This file imports nothing but the standard library: ``theorems.core`` runs its check before it
imports any other package of the project, and pytest loads ``engine.pytest_plugin`` (and so this
package) in every run of every repository where the project is installed.
"""

import importlib.util
import os

__all__ = ["PACKAGES", "MixedInstallation", "require_one_installation"]

# The project's top-level packages.  Their names are common words, so another distribution (or a folder
# on PYTHONPATH, or the working directory under `python -m`) can provide a package of the same name.
PACKAGES = ("numerics", "simulate", "theorems", "engine")


class MixedInstallation(ImportError):
    """One of PACKAGES resolves to another project's package of the same name."""


def require_one_installation() -> None:
    """Raise MixedInstallation, with one line saying which package shadows which and what to do, unless
    every name in PACKAGES resolves to a package beside this one (the same installation or checkout).

    ``find_spec`` answers what ``import NAME`` would give (the loaded module when there is one) without
    importing it, so this costs a few stat calls."""
    home = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for name in PACKAGES:
        spec = importlib.util.find_spec(name)
        if spec is None:
            raise MixedInstallation(f"transfer-theorem-checker's package {name!r} is missing beside {home}: "
                                    f"reinstall transfer-theorem-checker into its own virtual environment")
        # a package's __init__.py, a module's file, or a namespace package's folder
        location = os.path.abspath(spec.origin or next(iter(spec.submodule_search_locations)))
        parent = os.path.dirname(os.path.dirname(location) if os.path.basename(location) == "__init__.py" else location)
        if os.path.normcase(parent) != os.path.normcase(home):
            raise MixedInstallation(
                f"the package {name!r} at {location} shadows transfer-theorem-checker's {name!r} in {home}: install "
                f"transfer-theorem-checker into its own virtual environment (python -m venv), or take "
                f"{parent} off sys.path (PYTHONPATH, the working directory)")
