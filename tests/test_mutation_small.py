"""The small mutants of scripts/mutation.py (scripts/small_mutants.py): which literals, which edits, and the
file put back as it was."""

import ast
import importlib.util
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"
if not (SCRIPTS / "small_mutants.py").exists():      # the copy of the tree that scripts/mutation.py tests in
    pytest.skip("scripts/ is not beside tests/", allow_module_level=True)


def _script(name: str):
    """A module of scripts/, by its path: scripts/ stays off sys.path (its names are plain: power, generate)."""
    spec = importlib.util.spec_from_file_location(name, SCRIPTS / f"{name}.py")
    module = sys.modules[name] = importlib.util.module_from_spec(spec)     # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


sm = _script("small_mutants")
mutation = _script("mutation")       # its `import small_mutants` finds the module above

SOURCE = '''"""A module: 3 in a docstring is text."""
from __future__ import annotations

import mpmath as mp

GUARD_DIGITS = 10
LIMIT = 1e-5
TITLE = "n - 2 samples"


def risk(n: int, sigma: float = 0.2, *, dps: int = 30, rel_digits: int = 12) -> tuple[int, 2]:
    weights: list[3] = [1.0, 0.0, 0x1f]
    with mp.workdps(dps + 5):
        value = sigma ** 2 / (n - 2) + 2 * n
    i = 0
    i += 1
    label = mp.nstr(value, 6) + f"{value:>{8}}" + str(n + 1)
    series = arb_series([value, 1], prec=2)
    return value, True, 0 ** 2, mp.N(value, 40)
'''


def _mutations(source=SOURCE):
    return [(m.operator, m.line, m.text, m.replacement) for m in sm.small_mutations(source)]


@pytest.mark.parametrize("text, up, down", [
    ("7", "8", "6"), ("0", "1", "(-1)"), ("1", "2", "0"), ("0x1f", "0x20", "0x1e"), ("1_000", "1_001", "999"),
    ("0.2", "0.3", "0.1"), ("1.0", "1.1", "0.9"), ("100.0", "100.1", "99.9"), ("0.0", "0.1", "(-0.1)"),
    ("2e-5", "3e-5", "1e-5"), ("1.5e3", "1.6e3", "1.4e3"), ("1.", "2.", "0.9"), ("2j", "3j", "1j"),
    # a nonzero literal never steps down to zero: one unit of the next digit instead
    ("0.1", "0.2", "0.09"), ("1e-5", "2e-5", "0.9e-5"), ("0.01", "0.02", "0.009"), ("1e-12", "2e-12", "0.9e-12"),
])
def test_a_literal_moves_one_unit_of_its_last_written_digit(text, up, down):
    assert (sm.stepped(text, +1), sm.stepped(text, -1)) == (up, down)
    for written in (up, down):
        assert type(ast.literal_eval(written)) is type(ast.literal_eval(text))      # a float stays a float


def test_every_numeric_literal_twice_offsets_apart_and_the_rest_left_out():
    assert _mutations() == [
        ("small/Number_up", 7, "1e-5", "2e-5"), ("small/Number_down", 7, "1e-5", "0.9e-5"),
        ("small/Number_up", 11, "0.2", "0.3"), ("small/Number_down", 11, "0.2", "0.1"),
        ("small/Number_up", 11, "12", "13"), ("small/Number_down", 11, "12", "11"),      # a tolerance, not a precision
        ("small/Number_up", 12, "1.0", "1.1"), ("small/Number_down", 12, "1.0", "0.9"),
        ("small/Number_up", 12, "0.0", "0.1"), ("small/Number_down", 12, "0.0", "(-0.1)"),
        ("small/Number_up", 12, "0x1f", "0x20"), ("small/Number_down", 12, "0x1f", "0x1e"),
        ("small/Number_up", 14, "2", "3"), ("small/Number_down", 14, "2", "1"),            # sigma ** 2
        ("small/Offset_up", 14, "2", "3"), ("small/Offset_down", 14, "2", "1"),            # n - 2
        ("small/Number_up", 14, "2", "3"), ("small/Number_down", 14, "2", "1"),            # 2 * n: the left operand
        ("small/Number_up", 15, "0", "1"), ("small/Number_down", 15, "0", "(-1)"),
        ("small/Offset_up", 16, "1", "2"), ("small/Offset_down", 16, "1", "0"),            # i += 1
        ("small/Offset_up", 17, "1", "2"), ("small/Offset_down", 17, "1", "0"),            # printed, not a width
        ("small/Number_up", 18, "1", "2"), ("small/Number_down", 18, "1", "0"),
        ("small/Number_up", 18, "2", "3"), ("small/Number_down", 18, "2", "1"),            # flint's series length
        ("small/Number_up", 19, "0", "1"), ("small/Number_down", 19, "0", "(-1)"),
        ("small/Number_up", 19, "2", "3"), ("small/Number_down", 19, "2", "1"),
    ]
    # left out: list[3] and tuple[int, 2] (annotations); GUARD_DIGITS, dps = 30, workdps(dps + 5), N(value, 40)
    # (precision); nstr(value, 6) and the f-string's width 8 (display); the docstring, TITLE and True are no numbers
    assert sm.literals(SOURCE)[1] == {"annotation": 2, "precision": 4, "display": 2}


def test_occurrences_count_per_operator_in_source_order():
    mutations = sm.small_mutations(SOURCE)
    for operator in sm.OPERATORS:
        assert [m.occurrence for m in mutations if m.operator == operator] == \
            list(range(sum(m.operator == operator for m in mutations)))
    for mutation in mutations:
        assert sm.find(SOURCE, mutation.operator, mutation.occurrence) == mutation
    assert sm.find(SOURCE, "small/Offset_up", 99) is None


def test_the_edit_replaces_the_literal_and_nothing_else():
    original_lines = SOURCE.splitlines()
    for mutation in sm.small_mutations(SOURCE):
        mutated = sm.apply(SOURCE, mutation)
        lines = mutated.splitlines()
        assert lines[:mutation.line - 1] + lines[mutation.line:] == \
            original_lines[:mutation.line - 1] + original_lines[mutation.line:]
        line = original_lines[mutation.line - 1]
        assert lines[mutation.line - 1] == line[:mutation.column] + mutation.replacement + line[mutation.end_column:]
        compile(mutated, "<mutant>", "exec")
    zero, = [m for m in sm.small_mutations(SOURCE) if m.line == 19 and m.text == "0" and m.operator.endswith("down")]
    assert "(-1) ** 2" in sm.apply(SOURCE, zero)                         # not -1 ** 2 = -(1 ** 2)


def test_columns_count_characters_where_a_line_holds_more_than_ascii():
    source = 'label = "σ²"; x = n - 2\n'
    (mutation, *_), = [sm.small_mutations(source)]
    assert (mutation.column, mutation.text) == (22, "2")    # 25 bytes in
    assert sm.apply(source, mutation) == 'label = "σ²"; x = n - 3\n'


def test_the_file_is_mutated_inside_the_block_and_restored_byte_for_byte_after(tmp_path):
    path = tmp_path / "module.py"
    original = 'x = "é"\r\ny = n - 2\r\n'.encode("utf-8")
    path.write_bytes(original)
    with sm.use_mutation(path, "small/Offset_down", 0) as (before, mutated, mutation):
        assert path.read_bytes() == 'x = "é"\r\ny = n - 1\r\n'.encode("utf-8") == mutated.encode("utf-8")
        assert before.encode("utf-8") == original and mutation.text == "2"
    assert path.read_bytes() == original
    with pytest.raises(KeyboardInterrupt), sm.use_mutation(path, "small/Offset_up", 0):
        raise KeyboardInterrupt
    assert path.read_bytes() == original
    with sm.use_mutation(path, "small/Offset_up", 5) as (_, mutated, mutation):
        assert mutated is None is mutation and path.read_bytes() == original


def test_the_mutation_script_places_and_diffs_small_mutants(tmp_path):
    (tmp_path / "numerics").mkdir()
    (tmp_path / "numerics" / "m.py").write_text(SOURCE)
    population = mutation.enumerate_mutants(tmp_path, ("numerics",), tmp_path, "small")
    assert len(population) == len(sm.small_mutations(SOURCE))
    assert {m.mutant_class for m in population} == {"small"} and {m.package for m in population} == {"numerics"}
    limit = next(m for m in population if m.line == 7)
    offset = next(m for m in population if m.operator == "small/Offset_down" and m.line == 14)
    assert (limit.kind, limit.read_lines, offset.kind, offset.statement_lines) == ("constant", [], "def", [14])
    assert mutation._diff(tmp_path / offset.path, offset) == \
        "-        value = sigma ** 2 / (n - 2) + 2 * n\n+        value = sigma ** 2 / (n - 1) + 2 * n"
    with mutation.applied(offset, tmp_path) as diff:
        assert "(n - 1)" in (tmp_path / offset.path).read_text() and diff.startswith("-")
    assert (tmp_path / "numerics" / "m.py").read_text() == SOURCE
    assert mutation.left_out_literals(tmp_path, ("numerics",)) == {"numerics": {"annotation": 2, "precision": 4,
                                                                                "display": 2}}


def test_each_class_is_sampled_from_its_own_streams_and_core_draws_as_before():
    population = [mutation.Mutant(f"{package}/m.py", "core/X", i, i, 0, package=package)
                  for package in ("numerics", "simulate") for i in range(50)]
    chosen = mutation.sample(population, 10, seed=3)
    # the draw of the script before it had classes: a stored core run's sample is drawn again by the same seed
    assert [(m.package, m.occurrence) for m in chosen] == [
        ("numerics", 36), ("simulate", 24), ("simulate", 20), ("numerics", 9), ("simulate", 42), ("numerics", 49),
        ("simulate", 49), ("numerics", 28), ("simulate", 36), ("numerics", 3)]
    small = mutation.sample(population, 10, seed=3, stream="small")
    assert small != chosen and sum(m.package == "numerics" for m in small) == 5


def test_the_report_gives_each_class_its_own_kill_share_and_interval(capsys):
    def mutant(operator, outcome, package="numerics"):
        return mutation.Mutant(f"{package}/m.py", operator, 0, 1, 0, package=package, outcome=outcome)
    mutants = [mutant("core/NumberReplacer", "killed"), mutant("core/ZeroIterationForLoop", "survived"),
               *[mutant("small/Offset_down", "killed")] * 3, mutant("small/Number_up", "timeout", "simulate"),
               mutant("small/Number_up", "survived", "simulate")]
    population = {"core": {"numerics": 900, "simulate": 100}, "small": {"numerics": 60, "simulate": 40}}
    payload = mutation.report(mutants, population, SimpleNamespace(seed=0, out=None), {})
    small, core = payload["summary"]["small"], payload["summary"]["core"]
    assert (small["packages"]["overall"]["sampled"], small["packages"]["overall"]["kill_share"]) == (5, 4 / 5)
    assert small["packages"]["overall"]["interval_95"] == list(mutation.clopper_pearson(4, 5))
    assert small["operators"]["small/Offset"]["kill_share"] == 1 and core["packages"]["overall"]["kill_share"] == 1 / 2
    assert payload["version"] == 2 and payload["population"] == population
    printed = capsys.readouterr().out
    assert "small mutants: kill share per package" in printed
    assert "core mutants: kill share per operator family" in printed


def test_a_stopped_run_goes_on_where_its_processes_stopped_and_refuses_another_run(tmp_path):
    def draw():
        population = [mutation.Mutant("numerics/m.py", "core/X", i, i + 1, 0, package="numerics") for i in range(40)]
        return mutation.sample(population, 12, seed=5)
    first = draw()
    for mutant, outcome in zip(first[:3], ("killed", "survived", "killed")):
        mutant.outcome = outcome
    stored = {"seed": 5, "fingerprint": "tree", "mutants": [mutation.asdict(m) for m in first[:4]]}
    (tmp_path / "run.json").write_text(mutation.json.dumps(stored))

    chosen = draw()
    assert mutation.resume(chosen, [str(tmp_path / "run.json")], 5, "tree") == ""
    assert [m.outcome for m in chosen[:4]] == ["killed", "survived", "killed", ""]
    assert [m for m in chosen if not m.outcome] == chosen[3:]       # the rest of the same shuffled order
    assert "another run" in mutation.resume(draw(), [str(tmp_path / "run.json")], 6, "tree")
    assert "another run" in mutation.resume(draw(), [str(tmp_path / "run.json")], 5, "changed tree")
    stored["mutants"].append(mutation.asdict(mutation.Mutant("numerics/m.py", "core/Y", 0, 1, 0)))
    (tmp_path / "other.json").write_text(mutation.json.dumps(stored))
    assert "not in this sample" in mutation.resume(draw(), [str(tmp_path / "other.json")], 5, "tree")
    assert mutation.shard("1/2") == (1, 2)
    for text in ("2/2", "1", "a/2", "-1/2"):
        with pytest.raises(mutation.argparse.ArgumentTypeError):
            mutation.shard(text)


def test_a_kept_quick_suite_cache_reports_the_cpu_time_of_the_suite_uncached(tmp_path, monkeypatch):
    cache, runs = tmp_path / "kept", []

    def fake_suite(command, tree, env):         # the first run fills the cache, the next reads it back
        runs.append(command)
        filled = Path(command[command.index("--cache") + 1]) / "ab"
        cost = 9.0 if filled.exists() else 400.0
        filled.mkdir(parents=True, exist_ok=True)
        (filled / "abc.row.pkl").write_bytes(b"row")
        return 0, cost, 1.0
    monkeypatch.setattr(mutation, "run_measured", fake_suite)
    assert mutation.warm_quick_suite_cache(tmp_path, tmp_path, cache, "tree") == (cache, 400.0)
    assert mutation.warm_quick_suite_cache(tmp_path, tmp_path, cache, "tree") == (cache, 400.0)
    assert mutation.warm_quick_suite_cache(tmp_path, tmp_path, None, "tree") == (tmp_path / "quick-suite-cache", 400.0)
    assert len(runs) == 3 and all("--quick" in command for command in runs)


def test_shards_started_together_fill_the_kept_quick_suite_cache_once(tmp_path, monkeypatch):
    import threading
    import time
    cache, costs = tmp_path / "kept", []

    def fake_suite(command, tree, env):
        filled = Path(command[command.index("--cache") + 1]) / "ab"
        costs.append(9.0 if filled.exists() else 400.0)
        time.sleep(0.2)                          # long enough for the other shard to arrive while this one runs
        filled.mkdir(parents=True, exist_ok=True)
        (filled / "abc.row.pkl").write_bytes(b"row")
        return 0, costs[-1], 1.0
    monkeypatch.setattr(mutation, "run_measured", fake_suite)
    results = []
    shards = [threading.Thread(target=lambda: results.append(mutation.warm_quick_suite_cache(
        tmp_path, tmp_path, cache, "tree"))) for _ in range(2)]
    for shard in shards:
        shard.start()
    for shard in shards:
        shard.join()
    assert costs == [400.0, 9.0] and results == [(cache, 400.0)] * 2


def test_pins_recorded_on_another_machine_are_held_to_this_machine_s_unmutated_suite(tmp_path, monkeypatch):
    import json
    generate = _script("generate")                   # what `import generate` in the script then finds
    here, there = {"cpu": "this one"}, {"cpu": "the recorder's"}
    monkeypatch.setattr(generate, "numbers_environment", lambda: here)
    tree, work, cache = tmp_path / "tree", tmp_path / "work", tmp_path / "cache"
    for folder in (tree / "tests", work, cache):
        folder.mkdir(parents=True)
    row = {"id": "c", "params": {"n": 3}, "verdict": "agree", "theory": 1.5, "theory_digits": 15, "mc": 1.25,
           "z": 0.5, "convergence": None, "detail": "words", "seconds": 2.0}
    (work / "quick-suite.json").write_text(json.dumps({"environment": {"seed": 0, "tier": "quick"}, "results": [row]}))
    pinned = tree / "tests" / "quick_numbers.json"
    pinned.write_text(json.dumps({"environment": there, "rows": []}))
    assert mutation.pin_quick_numbers_here(tree, work, cache) == there
    rewritten = json.loads(pinned.read_text())
    assert rewritten["environment"] == here and rewritten["rows"] == [{k: row[k] for k in ("id", "params",
                                                                      *generate.PINNED)}]
    assert mutation.pin_quick_numbers_here(tree, work, cache) is None          # recorded here: kept as they are
    monkeypatch.setattr(generate, "numbers_environment", lambda: there)       # the same cache on another machine
    with pytest.raises(RuntimeError, match="filled on"):
        mutation.pin_quick_numbers_here(tree, work, cache)


def test_a_baseline_is_stored_and_read_back_alike_plain_or_compressed(tmp_path):
    # a run in pieces keeps its baseline (hours of CPU) compressed beside its results, for the next sitting
    baseline = {"failed": [], "tests": {"t": {"lines": {"a.py": [1, 2]}, "entered": {"a.py": [1]}, "failed": False}}}
    for name in ("baseline.json", "baseline.json.gz"):
        mutation.store_baseline(baseline, "tree", tmp_path / name)
        assert mutation.read_json(tmp_path / name)["fingerprint"] == "tree"
        assert mutation.load_baseline(tmp_path / name)["tests"]["t"]["lines"] == {"a.py": {1, 2}}
    assert (tmp_path / "baseline.json.gz").read_bytes()[:2] == b"\x1f\x8b"          # gzip's magic


def test_the_parallel_baseline_keeps_the_quick_suite_files_together_and_every_file_once(tmp_path):
    tests = tmp_path / "tests"
    tests.mkdir()
    for name, size in [("test_cli", 50), ("test_theorems", 40), ("test_a", 300), ("test_b", 200), ("test_c", 100),
                       ("test_d", 90), ("test_e", 10)]:
        uses = "quick_suite" if name in ("test_cli", "test_theorems") else ""
        (tests / f"{name}.py").write_text(uses.ljust(size))
    (tests / "conftest.py").write_text("quick_suite")
    groups = mutation._baseline_groups(tmp_path, 2)
    assert groups[0] == ["tests/test_cli.py", "tests/test_theorems.py"]
    assert sorted(name for group in groups for name in group) == sorted(f"tests/{p.name}" for p in tests.glob("test_*.py"))
    assert groups[1] == ["tests/test_a.py"] and groups[2] == ["tests/test_b.py"]     # largest first, one per group


PLACED = '''import functools

from numerics.helpers import register

STEPS = 100
SCALE, OFFSET = 2.0, 1
TOLERANCE = 1e-8
HEADER = f"{TOLERANCE:g}"
RATES = (0.5, register(0.25))
UNUSED = 3


@functools.lru_cache(maxsize=None)
def solve(x, tol=1e-6):
    for _ in range(STEPS):
        x = x / SCALE
    return x


square = lambda v: v * OFFSET
'''


def test_a_module_constant_runs_the_tests_that_read_it_and_a_default_those_that_call_its_function(tmp_path):
    (tmp_path / "numerics").mkdir()
    (tmp_path / "numerics" / "placed.py").write_text(PLACED)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_placed.py").write_text("from numerics.placed import SCALE\n")
    (tmp_path / "tests" / "test_other.py").write_text("SCALE = 3  # another module's\n")
    population = mutation.enumerate_mutants(tmp_path, ("numerics",), tmp_path, "small")
    at = {(m.line_text.split("=")[0].strip(), m.operator): m for m in population}
    steps, scale = at["STEPS", "small/Number_up"], at["SCALE, OFFSET", "small/Number_up"]
    default = next(m for m in population if "tol=1e-6" in m.line_text)
    # read in a def body: the statements that load it; bound with another name: the readers of either
    assert (steps.kind, steps.read_lines, steps.read_scopes, steps.read_files) == ("constant", [15], [], [])
    assert (scale.kind, scale.read_lines, scale.read_scopes) == ("constant", [16], [20])
    assert scale.read_files == ["tests/test_placed.py"]          # names the module and the constant
    # the default: the tests that enter the function (its code object starts at the decorator)
    assert (default.kind, default.scope_line) == ("default", 13)
    # read at import (HEADER's f-string), a call that may do more than compute, a name no code reads
    assert at["TOLERANCE", "small/Number_up"].kind == "import"
    assert {m.kind for m in population if m.line_text.startswith("RATES")} == {"import"}
    assert (at["UNUSED", "small/Number_up"].kind, at["UNUSED", "small/Number_up"].read_lines) == ("constant", [])

    def test(file, lines=(), entered=()):
        return {"file": file, "lines": {"numerics/placed.py": set(lines)},
                "entered": {"numerics/placed.py": set(entered)}}
    assert mutation.executes(test("tests/test_a.py", lines=[15]), steps)
    assert not mutation.executes(test("tests/test_a.py", lines=[16, 17], entered=[13]), steps)
    assert mutation.executes(test("tests/test_a.py", entered=[20]), scale)
    assert mutation.executes(test("tests/test_placed.py"), scale)
    assert mutation.executes(test("tests/test_a.py", entered=[13]), default)
    assert not mutation.executes(test("tests/test_a.py", lines=[15, 16]), default)
    assert mutation.executes(test("tests/test_a.py"), at["TOLERANCE", "small/Number_up"])

    # a file outside the tests that names the module and the constant may read it: every test runs the mutant
    (tmp_path / "numerics" / "user.py").write_text("from numerics import placed\nLIMIT = placed.STEPS\n")
    population = mutation.enumerate_mutants(tmp_path, ("numerics",), tmp_path, "small")
    assert {m.kind for m in population if m.line_text.startswith("STEPS")} == {"import"}


def test_calibration_runs_of_disjoint_seeds_merge_and_shared_seeds_are_refused():
    calibration = _script("calibration")
    entry = lambda runs, z: {"runs": runs, "alarms": 0, "max_abs_z": z, "points_per_run": 89}   # noqa: E731
    first = {"seeds": [1, 2], "alarms": [], "per_check": {"a": entry(2, 3.1), "b": entry(4, 1.0)}}
    second = {"seeds": [3], "alarms": [{"seed": 3, "id": "a"}], "per_check": {"a": entry(1, 2.0), "c": entry(1, 0.5)}}
    merged = calibration.merge([first, second])
    assert merged["seeds"] == [1, 2, 3] and merged["alarms"] == [{"seed": 3, "id": "a"}]
    assert merged["per_check"] == {"a": entry(3, 3.1), "b": entry(4, 1.0), "c": entry(1, 0.5)}
    with pytest.raises(SystemExit, match="share seeds"):
        calibration.merge([first, first])
