"""docs/writing-a-claim.md's walk-throughs work as written.  The first: its claim, added to its family module's
namespace, is found by the registry, shown, run and judged by the CLI, its negative control is rejected, and the
page's test passes; nothing else needs editing.  The second: its claim, copied into a file outside the checkout,
is shown and run by the page's own commands (--claims-from, pytest --claims) and its negative control is rejected."""

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

import verify
from theorems import REGISTRY
from theorems import features_are_fate

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "writing-a-claim.md"


def _blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", PAGE.read_text(), flags=re.S)


@pytest.fixture
def walkthrough():
    """Register the page's claim as if it were written in theorems/features_are_fate.py; unregister after."""
    claim_code, test_code = _blocks("python")[:2]
    namespace = dict(vars(features_are_fate))
    saved = dict(REGISTRY)
    try:
        exec(compile(claim_code, str(PAGE), "exec"), namespace)
        yield REGISTRY["projection-fraction"], test_code
    finally:
        REGISTRY.clear()
        REGISTRY.update(saved)


def test_the_walkthrough_claim_runs_through_the_cli(walkthrough, tmp_path, capsys):
    assert verify.main(["show", "projection-fraction"]) == 0
    assert "pf-odds-for-fraction" in capsys.readouterr().out
    path = tmp_path / "run.json"
    assert verify.main(["projection-fraction", "--quick", "--json", str(path)]) == 0
    row = json.loads(path.read_text())["results"][0]
    assert row["verdict"] == "agree" and row["theory"] == "0.25" and row["effect"]["unit"] == "relative"


def test_the_walkthrough_claims_control_and_test_pass(walkthrough, quick_run):
    from test_negative_controls import test_negative_control_gets_its_verdict
    theorem, test_code = walkthrough
    for control in theorem.negative_controls:
        test_negative_control_gets_its_verdict(theorem.id, control, quick_run)
    namespace = {}
    exec(compile(test_code, str(PAGE), "exec"), namespace)
    cache = {}

    def outcomes(theorem_id, **overrides):
        key = (theorem_id, tuple(sorted(overrides.items())))
        if key not in cache:
            claim = REGISTRY[theorem_id]
            cache[key] = claim.check(claim, claim.resolve(overrides, "quick"), quick_run)
        return cache[key]
    namespace["test_projection_fraction_agrees_at_the_quick_tier"](outcomes)


@pytest.fixture
def own_file(tmp_path):
    """The page's claim of one's own, in a file of its name in a folder outside the checkout."""
    assert not str(tmp_path.resolve()).startswith(str(ROOT))
    code = _blocks("python")[2]
    assert len(code.splitlines()) <= 65   # the page promises a claim in about 60 lines
    path = tmp_path / "least_squares_claim.py"
    path.write_text(code)
    return path


def test_a_claim_in_its_own_file_runs_through_the_pages_commands(own_file):
    # PYTHONPATH: this checkout's packages, for pytest; `python verify.py` is this checkout's verify.py
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"}
    commands = [shlex.split(line) for line in _blocks("sh")[0].splitlines() if line.strip()]
    outputs = []
    for command in commands:
        if command[:2] == ["python", "verify.py"]:
            command = [sys.executable, str(ROOT / "verify.py"), *command[2:]]
        else:   # the plugin is loaded by its entry point once installed; here by its module
            assert command[0] == "pytest"
            command = [sys.executable, "-m", "pytest", "-p", "no:transfer_theorem_checker", "-p", "engine.pytest_plugin",
                       "-p", "no:cacheprovider", *command[1:]]
        result = subprocess.run(command, cwd=own_file.parent, env=env, capture_output=True, text=True, timeout=600)
        assert result.returncode == 0, result.stdout + result.stderr
        outputs.append(result.stdout)
    show, run, tests = outputs
    for fragment in ("least-squares-error", "inverse Wishart", "✓", "lse-off-by-one"):
        assert fragment in show
    assert "agree" in run and "CHANGED" not in run
    assert "1 passed" in tests


def test_a_claim_in_its_own_file_rejects_its_negative_control(own_file, own_claims, quick_run):
    from test_negative_controls import test_negative_control_gets_its_verdict
    own_claims.load_claim_sources([str(own_file)], entry_points=False)
    theorem = REGISTRY["least-squares-error"]
    assert [control.verdict for control in theorem.negative_controls] == ["disagree"]
    for control in theorem.negative_controls:
        test_negative_control_gets_its_verdict(theorem.id, control, quick_run)
