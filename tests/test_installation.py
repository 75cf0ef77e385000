"""The project as a user installs it: every entry point from a fresh virtual environment, and the guard that
stops with one line when another project's package of the same name shadows one of ours."""

import os
import shutil
import subprocess
import sys
import textwrap

import pytest

import theorems
from engine import PACKAGES, require_one_installation

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(command, cwd, env=None, timeout=600):
    return subprocess.run([str(part) for part in command], cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env={**{k: v for k, v in os.environ.items() if k != "PYTHONPATH"}, **(env or {})})


def test_this_checkout_is_one_installation():
    require_one_installation()
    assert all(os.path.dirname(os.path.dirname(__import__(name).__file__)) == ROOT for name in PACKAGES)


@pytest.fixture
def shadowing(tmp_path):
    """shadowing(NAME): a folder holding an unrelated package NAME, to put before this checkout on PYTHONPATH."""
    def make(name):
        folder = tmp_path / f"other-{name}"
        (folder / name).mkdir(parents=True)
        (folder / name / "__init__.py").write_text('"""Another project\'s package of the same name."""\n')
        return folder
    return make


@pytest.mark.parametrize("name", ["numerics", "simulate"])
def test_importing_theorems_under_a_shadowing_package_stops_with_one_line(name, shadowing, tmp_path):
    folder = shadowing(name)
    result = run([sys.executable, "-c", "import theorems"], cwd=tmp_path, env={"PYTHONPATH": f"{folder}{os.pathsep}{ROOT}"})
    assert result.returncode != 0
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("engine.MixedInstallation: ")
    assert f"the package {name!r} at {folder / name / '__init__.py'} shadows transfer-theorem-checker's {name!r} in {ROOT}" in last
    assert "install transfer-theorem-checker into its own virtual environment" in last and str(folder) in last


@pytest.mark.parametrize("name", ["numerics", "engine"])
def test_the_command_under_a_shadowing_package_is_one_line_exit_2(name, shadowing, tmp_path):
    folder = shadowing(name)
    result = run([sys.executable, "-m", "verify", "list"], cwd=tmp_path, env={"PYTHONPATH": f"{folder}{os.pathsep}{ROOT}"})
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("verify.py: error: ")
    assert repr(name) in result.stderr and str(folder) in result.stderr
    assert "own virtual environment" in result.stderr and "Traceback" not in result.stderr


def test_every_entry_point_from_a_fresh_virtual_environment(tmp_path):
    """venv (with the system's site-packages, so torch and sympy are found without downloads, and pip and
    setuptools too: a venv's own, from ensurepip, would be older than the system's), a non-editable pip install
    of a copy of this checkout, offline; then each entry point from a folder outside the checkout."""
    source, venv, elsewhere = tmp_path / "source", tmp_path / "venv", tmp_path / "elsewhere"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(".git", "build", "dist", "*.egg-info", "__pycache__",
                                                                ".pytest_cache", ".hypothesis", ".venv"))
    elsewhere.mkdir()
    created = run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", venv], cwd=tmp_path)
    assert created.returncode == 0, created.stderr
    python, bin_dir = venv / "bin" / "python", venv / "bin"
    installed = run([python, "-m", "pip", "install", "--no-deps", "--no-build-isolation", "--no-index", "--quiet", source],
                    cwd=tmp_path)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    ids = list(theorems.REGISTRY)

    where = run([python, "-c", "import theorems, verify; print(theorems.__file__); print(verify.__file__)"], cwd=elsewhere)
    assert all(line.startswith(str(venv)) for line in where.stdout.splitlines()), where.stdout + where.stderr
    for command in ([bin_dir / "transfer-check", "list", "--ids"], [python, "-m", "verify", "list", "--ids"]):
        result = run(command, cwd=elsewhere)
        assert result.returncode == 0 and result.stdout.splitlines() == ids, result.stderr
    bad = run([bin_dir / "transfer-check", "show", "no-such-claim"], cwd=elsewhere)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "unknown theorem id" in bad.stderr

    (elsewhere / "test_theirs.py").write_text(textwrap.dedent('''
        def test_a_test_of_their_own():
            assert True
    '''))
    tests = run([python, "-m", "pytest", "-p", "no:cacheprovider", "--claims", "linear-transfer", "--claims-tier", "quick",
                 "-v"], cwd=elsewhere, env={"OMP_NUM_THREADS": "1"})
    assert tests.returncode == 0, tests.stdout + tests.stderr
    assert "claims::linear-transfer[" in tests.stdout and "4 passed" in tests.stdout   # its three cases and their test
    alone = run([python, "-m", "pytest", "-p", "no:cacheprovider", "-q"], cwd=elsewhere)
    assert alone.returncode == 0 and "1 passed" in alone.stdout   # without --claims: their tests only
