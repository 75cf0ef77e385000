"""The result cache (engine/cache.py): a rerun reads what a run stored and gets the same row, a changed
source recomputes exactly the claims that import it, and every input of a row is part of its key."""

import json
import textwrap

import pytest

import verify
from engine.cache import ResultCache, default_location, source_files
from engine.runner import Task

# A claim with a helper module beside it: editing the helper must recompute the claim, editing a file it does not
# import must not.
CLAIM = textwrap.dedent('''
    import mpmath as mp
    import sympy as sp
    import torch

    from cached_claim_helper import SHIFT
    from simulate.stats import estimate
    from theorems.core import Control, Parameter, Symbolic, Theorem
    from theorems.registry import register


    def check(theorem, params, run):
        draws = torch.rand(run.trials_for(theorem), generator=run.rng(theorem, params), dtype=torch.float64) + SHIFT
        judge = run.judge(theorem)
        main = judge.mean(estimate(draws), float(theorem.formulas["mean"](float(params["c"]))), "E U vs c")
        return judge.outcome("the mean of U(0, 1) is c", main=main, sizes={"n": 1})


    register(Theorem(
        id="cached-uniform-mean", title="The mean of U(0, 1)", source="a test", statement="E U = c", quantity="E U",
        assumptions=("U uniform on (0, 1)",), parameters=(Parameter("c", "the claimed mean", "1/2"),),
        symbolic=lambda: Symbolic("E U", sp.Eq(sp.Symbol("E_U"), sp.Symbol("c"))),
        evaluate=lambda params, dps: mp.mpf(sp.N(params["c"], dps)), check=check, formulas={"mean": mp.mpf},
        trials={"quick": 4000, "default": 4000, "paper": 4000}, verdict_rule="z-test", false_alarm=1e-3,
        cases=({"c": "1/2"},), negative_controls=(Control("cached-uniform-mean-wrong", {"mean": lambda c: c + 1}),),
    ))
''')


@pytest.fixture
def claim_file(tmp_path, own_claims, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "cached_claim_helper.py").write_text("SHIFT = 0.0\n")
    (tmp_path / "unrelated.py").write_text("X = 1\n")
    path = tmp_path / "cached_claim.py"
    path.write_text(CLAIM)
    source_files.cache_clear()
    yield path
    source_files.cache_clear()


def _run(tmp_path, claim_file, name, *extra, status=0):
    """verify.py on the claim file, loaded afresh (as a new process would: edited files are read again)."""
    import sys
    from engine import cache, claim_sources
    from theorems.registry import REGISTRY
    cache._sources_hash.cache_clear()
    claim_sources._loaded.pop(str(claim_file), None)
    REGISTRY.pop("cached-uniform-mean", None)
    for module in ("cached_claim", "cached_claim_helper"):
        sys.modules.pop(module, None)
    out = tmp_path / f"{name}.json"
    code = verify.main(["cached-uniform-mean", "--quick", "--claims-from", str(claim_file), "--cache",
                        str(tmp_path / "store"), "--json", str(out), "--workers", "1", *extra])
    assert code == status
    return json.loads(out.read_text())["results"]


def test_a_rerun_reads_the_stored_row_and_gets_the_fresh_one(tmp_path, claim_file, capsys):
    fresh = _run(tmp_path, claim_file, "fresh")
    again = _run(tmp_path, claim_file, "again")
    assert [r["cached"] for r in fresh] == [False] and [r["cached"] for r in again] == [True]
    assert [{**r, "cached": None} for r in fresh] == [{**r, "cached": None} for r in again]   # seconds too: stored
    assert verify.main(["cache", "info", "--cache", str(tmp_path / "store")]) == 0
    assert "1 stored rows" in capsys.readouterr().out


def test_a_changed_source_recomputes_exactly_the_claims_that_import_it(tmp_path, claim_file):
    first = _run(tmp_path, claim_file, "first")[0]
    (claim_file.parent / "unrelated.py").write_text("X = 2\n")           # not imported: still stored
    assert _run(tmp_path, claim_file, "unrelated")[0]["cached"] is True
    (claim_file.parent / "cached_claim_helper.py").write_text("SHIFT = 0.25\n")   # imported: computed again
    moved = _run(tmp_path, claim_file, "moved", status=1)[0]   # the claim now fails: exit 1, CHANGED
    assert moved["cached"] is False and moved["mc"]["mean"] == pytest.approx(first["mc"]["mean"] + 0.25)


def test_every_input_of_a_row_is_part_of_its_key(claim_file, own_claims):
    import theorems
    own_claims.load_claim_sources([str(claim_file)])
    theorem = theorems.get("cached-uniform-mean")
    store = ResultCache("unused")
    base = dict(theorem_id=theorem.id, params={"c": "1/2"}, expected="agree", finding="", tier="quick", trials=None,
                seed=0, device="cpu", dps=30, trends=False, theory_only=False)
    key = store.key(Task(**base), theorem, "cpu", 1)
    changes = [dict(seed=1), dict(trials=50), dict(tier="default"), dict(params={"c": "1/3"}), dict(dps=40),
               dict(family=2), dict(data="rademacher"), dict(dtype="float32"), dict(trends=True), dict(theory_only=True)]
    for change in changes:
        assert store.key(Task(**{**base, **change}), theorem, "cpu", 1) != key, change
    assert store.key(Task(**base), theorem, "cpu", 2) != key           # BLAS threads change the summation order
    assert store.key(Task(**base), theorem, "cpu", 1) == key


def test_a_claim_depends_on_its_own_modules_and_not_on_other_families():
    import sys
    from theorems.registry import REGISTRY
    files = {i: {p.name for p in source_files(sys.modules[REGISTRY[i].check.__module__].__file__)}
             for i in ("ptft-penalty", "finetune-linear-regression")}
    assert {"ptft.py", "ptft_penalty.py", "core.py", "verdict.py", "stats.py"} <= files["ptft-penalty"]
    assert "shachaf.py" not in files["ptft-penalty"] and "ptft_penalty.py" not in files["finetune-linear-regression"]


def test_a_damaged_entry_is_computed_again(tmp_path, claim_file):
    _run(tmp_path, claim_file, "first")
    for entry in ResultCache(tmp_path / "store").entries():
        entry.write_bytes(b"not a pickle")
    assert _run(tmp_path, claim_file, "again")[0]["cached"] is False


def test_clear_removes_the_rows_and_the_cache_can_be_turned_off(tmp_path, claim_file, capsys, monkeypatch):
    _run(tmp_path, claim_file, "first")
    capsys.readouterr()
    assert verify.main(["cache", "clear", "--cache", str(tmp_path / "store")]) == 0
    assert ResultCache(tmp_path / "store").entries() == []
    assert verify.main(["cache", "info", "--no-cache"]) == 2
    assert verify.main(["cache", "drop", "--cache", str(tmp_path / "store")]) == 2
    monkeypatch.setenv("TRANSFER_CHECK_CACHE", "off")
    assert verify.main(["cache", "info"]) == 2
    errors = capsys.readouterr().err.strip().splitlines()
    assert len(errors) == 3 and all(line.startswith("verify.py: error: ") for line in errors)   # one line each


def test_the_default_location_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.delenv("TRANSFER_CHECK_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert default_location() == str(tmp_path / "transfer-theorem-checker")
    monkeypatch.setenv("TRANSFER_CHECK_CACHE", str(tmp_path / "mine"))
    assert default_location() == str(tmp_path / "mine")


def test_runs_use_one_process_per_core_unless_a_worker_could_not_rebuild_the_claim(monkeypatch):
    import dataclasses
    import os
    import theorems
    from engine.runner import default_workers
    tasks = [Task(i, {}, "agree", "", "quick", None, 0, "cpu", 30, False, False) for i in ("double-descent", "ptft-penalty")]
    assert default_workers(tasks) == min(os.cpu_count() or 1, 2)
    assert default_workers(tasks[:1]) == 1
    monkeypatch.setitem(theorems.REGISTRY, "double-descent", dataclasses.replace(theorems.get("double-descent")))
    assert default_workers(tasks) == 1      # replaced in this process: a worker would run the registered one
