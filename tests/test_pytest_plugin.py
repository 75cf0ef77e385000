"""pytest --claims (engine/pytest_plugin.py): inert without the option; with it, one item per case, built and
judged as verify.py builds and judges them, failing exactly where verify.py would exit 1."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

import verify
from engine import pytest_plugin
from test_claims_from import MISRECORDED

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def pytest_run(*args, cwd):
    """pytest in a fresh interpreter, with this checkout's plugin (installed, its entry point loads it)."""
    command = [sys.executable, "-m", "pytest", "-p", "no:transfer_theorem_checker", "-p", "engine.pytest_plugin",
               "-p", "no:cacheprovider", *args]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONPATH": ROOT, "COLUMNS": "200"})


def test_without_claims_the_plugin_does_nothing(tmp_path):
    (tmp_path / "test_other.py").write_text(textwrap.dedent('''
        import sys

        def test_the_plugin_imported_nothing(pytestconfig):
            assert pytestconfig.pluginmanager.has_plugin("engine.pytest_plugin")
            assert not {"theorems", "torch", "sympy", "engine.session"} & set(sys.modules)
    '''))
    result = pytest_run("-q", cwd=tmp_path)
    assert result.returncode == 0 and "1 passed" in result.stdout, result.stdout + result.stderr


@pytest.mark.parametrize("args, message", [
    (["--claims", "no-such-claim"], "ERROR: --claims: unknown theorem id 'no-such-claim'"),
    (["--claims", "all", "linear-transfer"], "'all' cannot be combined with claim ids"),
    (["--claims-tier", "quick"], "ERROR: --claims-tier and --claims-from apply to --claims"),
    (["--claims", "--claims-from", "missing.py"], "ERROR: --claims: --claims-from missing.py: no such file"),
    (["--claims", "--claims-tier", "paper"], "invalid choice: 'paper'"),
])
def test_bad_input_is_a_usage_error_in_one_line(args, message, tmp_path):
    result = pytest_run(*args, cwd=tmp_path)
    assert result.returncode == pytest.ExitCode.USAGE_ERROR
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert any(message in line for line in lines) and "Traceback" not in result.stderr


@pytest.mark.parametrize("ids, tier", [(["arccos-kernel", "linear-transfer"], "quick"), ([], "default")])
def test_the_items_are_the_tasks_verify_py_runs(ids, tier, monkeypatch, capsys):
    built = []

    def capture(tasks, args, console):
        built.extend(tasks)
        return [], True
    monkeypatch.setattr(verify, "execute_tasks", capture)
    assert verify.main([*(ids or ["all"]), *(["--quick"] if tier == "quick" else [])]) == 0
    assert pytest_plugin._tasks(ids, tier, []) == built   # same points, seeds, tier and false-alarm family


def test_a_changed_case_fails_as_verify_py_exits_1(tmp_path):
    (tmp_path / "misrecorded.py").write_text(MISRECORDED)
    tests = pytest_run("--claims", "uniform-mean", "--claims-from", "misrecorded.py", "--claims-tier", "quick",
                       "-v", "-rf", cwd=tmp_path)
    assert tests.returncode == pytest.ExitCode.TESTS_FAILED, tests.stdout + tests.stderr
    assert "claims::uniform-mean[c=1/2] FAILED" in tests.stdout and "claims::uniform-mean[c=1/3] PASSED" in tests.stdout
    for fragment in ("CHANGED: agree (recorded: disagree)", "theory: 0.5", "Monte-Carlo: 0.5", "z: ",
                     "verdict: agree (recorded: disagree)", "recorded finding: recorded as refuted by mistake"):
        assert fragment in tests.stdout
    run = subprocess.run([sys.executable, os.path.join(ROOT, "verify.py"), "--claims-from", "misrecorded.py",
                          "uniform-mean", "--quick", "--json", "run.json"], cwd=tmp_path, capture_output=True,
                         text=True, timeout=600)
    assert run.returncode == 1
    rows = json.loads((tmp_path / "run.json").read_text())["results"]
    assert [row["as_expected"] for row in rows] == [False, True]
