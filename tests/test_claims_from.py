"""Claims registered from outside the package (engine/claim_sources.py): --claims-from a file or a dotted module,
the entry-point group transfer_theorem_checker.claims, worker processes, and one line for each bad source."""

import json
import re
import sys
import textwrap

import pytest

import verify

# A claim whose first case is recorded wrongly (the mean of U(0, 1) is 1/2, recorded as refuted) and whose
# second is refuted as recorded: a run of it changes its first row (exit 1) and keeps its second.
MISRECORDED = textwrap.dedent('''
    import mpmath as mp
    import sympy as sp
    import torch

    from simulate.stats import estimate
    from theorems.core import Control, Finding, Parameter, Symbolic, Theorem
    from theorems.registry import register


    def check(theorem, params, run):
        c = float(params["c"])
        draws = torch.rand(run.trials_for(theorem), generator=run.rng(theorem, params), dtype=torch.float64)
        judge = run.judge(theorem)
        main = judge.mean(estimate(draws), float(theorem.formulas["mean"](c)), "E U vs c")
        return judge.outcome("the mean of U(0, 1) is c", main=main, sizes={"n": 1})


    register(Theorem(
        id="uniform-mean", title="The mean of U(0, 1)", source="a test", statement="E U = c", quantity="E U",
        assumptions=("U uniform on (0, 1)",), parameters=(Parameter("c", "the claimed mean", "1/2"),),
        symbolic=lambda: Symbolic("E U", sp.Eq(sp.Symbol("E_U"), sp.Symbol("c"))),
        evaluate=lambda params, dps: mp.mpf(sp.N(params["c"], dps)), check=check, formulas={"mean": mp.mpf},
        trials={"quick": 4000, "default": 4000, "paper": 4000}, verdict_rule="z-test", false_alarm=1e-3,
        cases=(), findings=(Finding("c == 1/2", "recorded as refuted by mistake", at={"c": "1/2"}),
                            Finding("c == 1/3", "the mean is 1/2, not 1/3", at={"c": "1/3"})),
        negative_controls=(Control("uniform-mean-wrong", {"mean": lambda c: mp.mpf(c) + 1}),),
    ))
''')


def _main(capsys, *args):
    code = verify.main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_a_dotted_module_on_sys_path_adds_its_claims(tmp_path, monkeypatch, own_claims, capsys):
    (tmp_path / "their_package").mkdir()
    (tmp_path / "their_package" / "__init__.py").write_text("")
    (tmp_path / "their_package" / "claims.py").write_text(MISRECORDED)
    monkeypatch.syspath_prepend(str(tmp_path))
    code, out, _ = _main(capsys, "list", "--ids", "--claims-from", "their_package.claims")
    assert code == 0 and out.splitlines()[-1] == "uniform-mean" and "double-descent" in out.splitlines()


def test_the_entry_point_group_adds_its_claims_to_every_command(tmp_path, monkeypatch, own_claims, capsys):
    # an installed distribution, as importlib.metadata finds it on sys.path: its metadata and its module
    info = tmp_path / "their_claims-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: their-claims\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[transfer_theorem_checker.claims]\nuniform = their_uniform_claim\n")
    (tmp_path / "their_uniform_claim.py").write_text(MISRECORDED)
    monkeypatch.syspath_prepend(str(tmp_path))
    code, out, _ = _main(capsys, "list", "--ids")
    assert code == 0 and "uniform-mean" in out.splitlines()
    code, out, _ = _main(capsys, "show", "uniform-mean")
    assert code == 0 and "uniform-mean-wrong" in out
    (tmp_path / "their_uniform_claim.py").write_text("raise RuntimeError('broken on purpose')\n")
    own_claims._loaded.clear()
    monkeypatch.delitem(sys.modules, "their_uniform_claim")
    code, _, err = _main(capsys, "list")
    assert code == 2 and err.count("\n") == 1
    assert err.startswith("verify.py: error: entry point 'uniform' of their-claims (transfer_theorem_checker.claims) "
                          "their_uniform_claim: RuntimeError: broken on purpose (")


def test_worker_processes_load_the_same_claims(tmp_path, own_claims, capsys):
    path = tmp_path / "misrecorded.py"
    path.write_text(MISRECORDED)
    rows = {}
    for workers in ("1", "2"):
        out = tmp_path / f"run-{workers}.json"
        assert verify.main(["--claims-from", str(path), "uniform-mean", "--quick", "--workers", workers,
                            "--json", str(out)]) == 1   # its first case is recorded wrongly
        rows[workers] = [(row["params"], row["mc"]["mean"], row["as_expected"])
                         for row in json.loads(out.read_text())["results"]]
    assert rows["1"] == rows["2"] and [r[2] for r in rows["1"]] == [False, True]


@pytest.mark.parametrize("failure, message", [
    # either point may be the first to come back from the two workers
    ("raise MemoryError()", r"verify.py: error: uniform-mean at c=(0\.5|0\.3333) cannot be simulated here: out of memory\n"),
    # the kernel's out-of-memory killer ends a worker without a word
    ("import os, signal; os.kill(os.getpid(), signal.SIGKILL)",
     r"verify.py: error: a worker process died during the run after 0 of the 2 points it was computing \(a process killed for memory"),
])
def test_a_worker_beyond_the_machines_memory_is_one_line_exit_2(failure, message, tmp_path, own_claims, capsys):
    path = tmp_path / "greedy.py"
    path.write_text(MISRECORDED.replace("    c = float(params[\"c\"])", f"    {failure}"))
    assert verify.main(["--claims-from", str(path), "uniform-mean", "--quick", "--workers", "2",
                        "--grid", "c=1/2,1/3", "--no-cache"]) == 2
    err = capsys.readouterr().err
    assert re.match(message, err) and err.count("\n") == 1


@pytest.mark.parametrize("code, message", [
    ("def broken(:\n", "SyntaxError: invalid syntax ({path}:1)"),
    ("import no_such_dependency_anywhere\n", "ModuleNotFoundError: No module named 'no_such_dependency_anywhere' ({path}:1)"),
    ("x = 1\n\nraise ValueError('no claim here')\n", "ValueError: no claim here ({path}:3)"),
    ("X = 1\n", "registers no claim"),
    (MISRECORDED.replace('id="uniform-mean"', 'id="double-descent"'),
     "ValueError: theorem id 'double-descent' registered twice ({path}:"),
    (MISRECORDED.replace('assumptions=("U uniform on (0, 1)",)', 'assumptions="U uniform on (0, 1)"'),
     "ValueError: uniform-mean: assumptions are a tuple of strings, not one string ({path}:"),
])
def test_a_bad_claim_file_is_one_line_exit_2(code, message, tmp_path, own_claims, capsys):
    path = tmp_path / "their_claims.py"
    path.write_text(textwrap.dedent(code))
    status, out, err = _main(capsys, "list", "--claims-from", str(path))
    assert status == 2 and out == "" and err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(f"verify.py: error: --claims-from {path}: ")
    assert message.format(path=path) in err
