"""docs/writing-a-claim.md's walk-through works as written: its claim, added to its family module's namespace,
is found by the registry, shown, run and judged by the CLI, its negative control is rejected, and the page's
test passes; nothing else needs editing."""

import json
import re
from pathlib import Path

import pytest

import verify
from theorems import REGISTRY
from theorems import features_are_fate

PAGE = Path(__file__).resolve().parent.parent / "docs" / "writing-a-claim.md"


@pytest.fixture
def walkthrough():
    """Register the page's claim as if it were written in theorems/features_are_fate.py; unregister after."""
    claim_code, test_code = re.findall(r"```python\n(.*?)```", PAGE.read_text(), flags=re.S)
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
