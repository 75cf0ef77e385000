"""--baseline: a run compared with a stored one flags verdict flips, moved theory values and moved estimates."""

import copy
import json

import pytest

import verify
from engine.baseline import compare_runs


def row(theory="0.5", verdict="agree", mean=0.5, se=0.01, **params):
    return {"id": "double-descent", "params": params or {"gamma": 0.5}, "theory": theory, "verdict": verdict,
            "mc": {"mean": mean, "se": se}}


def run(*rows, dps=30):
    return {"version": 1, "environment": {"dps": dps}, "results": list(rows)}


def kinds(old, new):
    return sorted(change.kind for change in compare_runs(old, new) if change.is_change)


def test_identical_runs_have_no_change():
    stored = run(row(), row(gamma=2.0))
    assert compare_runs(stored, copy.deepcopy(stored)) == []


def test_each_kind_of_change_is_flagged():
    stored = run(row())
    assert kinds(stored, run(row(verdict="disagree"))) == ["verdict"]
    assert kinds(stored, run(row(theory="0.5000001"))) == ["theory"]
    assert kinds(stored, run(row(mean=0.6))) == ["estimate"]          # z = 0.1 / 0.014 = 7


def test_changes_within_precision_and_error_bars_are_not_flagged():
    stored = run(row(theory="0.50000000000000000000000000000"))
    assert kinds(stored, run(row(theory="0.500000000000000000000000000001"))) == []   # beyond 30 digits
    assert kinds(stored, run(row(mean=0.52))) == []                                   # z = 1.4
    assert kinds(run(row(theory="0.5"), dps=60), run(row(theory="0.5000001"), dps=5)) == []  # 5 digits printed


def test_rows_in_one_run_only_are_listed_not_changes():
    changes = compare_runs(run(row(), row(gamma=2.0)), run(row(), row(gamma=3.0)))
    assert sorted(c.kind for c in changes) == ["missing", "new"] and not any(c.is_change for c in changes)


def test_cli_exits_1_on_a_change_and_0_without(tmp_path, capsys):
    stored = tmp_path / "stored.json"
    args = ["double-descent", "--theory-only", "--param", "gamma=1/3"]
    assert verify.main([*args, "--json", str(stored)]) == 0
    assert verify.main([*args, "--baseline", str(stored)]) == 0
    assert "no change" in capsys.readouterr().out
    payload = json.loads(stored.read_text())
    payload["results"][0]["theory"] = "0.123"
    stored.write_text(json.dumps(payload))
    assert verify.main([*args, "--baseline", str(stored)]) == 1
    assert "CHANGED" in capsys.readouterr().out


@pytest.mark.parametrize("content, message", [(None, "No such file"), ("{", "not JSON"), ("[1]", "not a verify.py --json run")])
def test_a_bad_baseline_file_is_one_line_and_exit_2(tmp_path, capsys, content, message):
    path = tmp_path / "stored.json"
    if content is not None:
        path.write_text(content)
    assert verify.main(["double-descent", "--theory-only", "--baseline", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1
