"""The guard that stops with one line when another project's package of the same name shadows one of ours."""

import os
import subprocess
import sys

import pytest

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

