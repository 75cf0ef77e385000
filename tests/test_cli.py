"""The command line: commands, exit codes, bad input, JSON, reproducibility, the README."""

import io
import json
import os
import re
import subprocess
import sys

import pytest

import theorems
import verify

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def cli(*args, env=None):
    """Run verify.py in a fresh interpreter, as a user does."""
    return subprocess.run([sys.executable, "verify.py", *args], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "COLUMNS": "200", **(env or {})}, timeout=600)


def run_json(capsys, *args):
    code = verify.main([*args, "--json", "-"])
    return code, json.loads(capsys.readouterr().out)


def test_list_shows_exactly_the_registry():
    # piped (not a terminal): one plain tab-separated row per claim, the id first, whatever the width
    result = cli("list", env={"COLUMNS": "80"})
    assert result.returncode == 0
    rows = [line.split("\t") for line in result.stdout.splitlines()]
    # the record: 'agree', then where each finding's region refutes the claim
    assert all(len(row) == 4 and row[1] == theorems.REGISTRY[row[0]].record for row in rows)
    assert dict(row[:2] for row in rows)["dudley-distance"] == "agree; disagree where delta >= 2"
    assert [row[0] for row in rows] == list(theorems.REGISTRY)
    assert set(theorems.REGISTRY) == {getattr(theorems, n).id for n in theorems.THEOREMS}
    assert "finetune-linear-regression\t" in result.stdout and "ntk-finetune-bound\t" in result.stdout


def test_the_run_table_never_wraps_an_id_in_a_pipe():
    result = cli("arccos-kernel", "--quick", env={"COLUMNS": "80"})
    assert result.returncode == 0
    assert any(re.search(r"│ arccos-kernel +│", line) for line in result.stdout.splitlines())


def test_list_ids_prints_the_ids_alone(capsys):
    assert verify.main(["list", "--ids"]) == 0
    assert capsys.readouterr().out.splitlines() == list(theorems.REGISTRY)


class _Terminal(io.StringIO):
    def isatty(self):
        return True


@pytest.mark.parametrize("width", [40, 80])
def test_list_on_a_narrow_terminal_never_wraps_or_cuts_an_id(width):
    from rich.console import Console
    from engine.render import render_list
    screen = _Terminal()
    render_list(theorems.REGISTRY.values(), Console(file=screen, width=width, force_terminal=True))
    plain = re.sub(r"\x1b\[[0-9;]*m", "", screen.getvalue())
    lines = plain.splitlines()
    assert "┃ id " in plain and max(len(line) for line in lines) <= width
    for theorem_id in theorems.REGISTRY:
        assert any(re.search(rf"│ {re.escape(theorem_id)} +│", line) for line in lines), theorem_id


def _show(theorem_id: str) -> list[str]:
    from rich.console import Console
    screen = io.StringIO()
    # wide enough that no line wraps: each printed field is one line
    assert verify.show_claim([theorem_id], False, Console(file=screen, width=10000)) == 0
    return screen.getvalue().splitlines()


def _section(lines: list[str], title: str) -> list[str]:
    """The indented lines under a heading of show's output, up to the next unindented line."""
    start = lines.index(title) + 1
    end = next((i for i in range(start, len(lines)) if not lines[i].startswith("  ")), len(lines))
    return lines[start:end]


@pytest.mark.parametrize("theorem_id", list(theorems.REGISTRY))
def test_show_renders_every_field_of_every_claim(theorem_id):
    theorem = theorems.REGISTRY[theorem_id]
    lines = _show(theorem_id)
    assert theorem_id in lines[0] and theorem.title[:20] in lines[0]
    fields = {line.split(None, 1)[0]: line for line in lines if line and not line[0].isspace()}
    assert fields["source"].split(None, 1)[1] == " ".join(theorem.source.split())
    assert fields["statement"].split(None, 1)[1] == theorem.statement
    assert fields["theory"].split(None, 1)[1].split(" at ")[0]
    assert lines[lines.index("sympy") + 1].strip()                       # the statement, pretty-printed
    assert len(fields["LaTeX"].split(None, 1)[1]) > 1
    bullets = _section(lines, "assumptions")
    assert bullets == [f"  • {' '.join(a.split())}" for a in theorem.assumptions]
    assert all(len(bullet) > len("  • ") + 1 for bullet in bullets)
    derivations = [line for line in _section(lines, "derived with sympy") if line.startswith(("  ✓ ", "  ✗ "))]
    assert len(derivations) == len(theorem.symbolic().derivations)   # a result may print over several lines
    assert all(len(line) > len("  ✓ ") + 1 for line in derivations)
    header = next(i for i, line in enumerate(lines) if re.match(r"┃ parameter +┃ domain +┃ default +┃ meaning", line))
    table = [line for line in lines[header:] if line.startswith("│")][:len(theorem.parameters)]
    assert [line.split("│")[1].strip() for line in table] == [p.name for p in theorem.parameters]
    assert any(line.startswith("┃ budget per tier") for line in lines)
    assert any(line.startswith("verdict rule ") and len(line) > len("verdict rule ") + 10 for line in lines)
    assert len(_section(lines, "cases run by 'all'")) == len(theorem.all_cases)
    if theorem.findings:   # each recorded region, one bullet each
        regions = _section(lines, "recorded findings (where the check refutes the claim; 'agree' is expected elsewhere)")
        assert [line for line in regions if line.startswith("  • ")] == [
            line for line in regions if any(line.startswith(f"  • where {f.region}:") for f in theorem.findings)]
        assert len([line for line in regions if line.startswith("  • ")]) == len(theorem.findings)
    if theorem.negative_controls:
        controls = _section(lines, "negative controls (wrong formulas the check must reject)")
        assert [line.split(":")[0] for line in controls] == [f"  • {c.name}" for c in theorem.negative_controls]


def test_show_prints_statement_derivations_and_parameters(capsys):
    assert verify.main(["show", "double-descent"]) == 0
    out = capsys.readouterr().out
    for fragment in ("Thm 3.6", "derived with sympy", "gamma", "false-alarm probability", "✓"):
        assert fragment in out
    assert verify.main(["show", "double-descent", "--latex"]) == 0
    assert r"\begin{cases}" in capsys.readouterr().out


def test_json_schema(quick_suite):
    payload = quick_suite
    assert payload["exit_code"] == 0
    assert {r["id"] for r in payload["results"]} == set(theorems.REGISTRY)
    for r in payload["results"]:
        assert isinstance(r["id"], str) and isinstance(r["theory"], str)
        assert r["verdict"] in ("agree", "disagree", "inconclusive")
        assert all(isinstance(v, (int, float)) for v in r["params"].values())
        assert isinstance(r["seconds"], float)
        assert r["mc"] is None or {"mean", "se", "trials"} <= set(r["mc"])
        assert isinstance(r["as_expected"], bool) and r["expected"] in ("agree", "disagree", "inconclusive")
    assert payload["environment"]["seed"] == 0


def test_same_seed_same_numbers_and_single_id_matches_all(capsys):
    _, first = run_json(capsys, "double-descent", "--quick", "--seed", "7")
    _, again = run_json(capsys, "double-descent", "--quick", "--seed", "7")
    _, other = run_json(capsys, "double-descent", "--quick", "--seed", "8")
    assert first["results"][0]["mc"] == again["results"][0]["mc"]
    assert first["results"][0]["mc"]["mean"] != other["results"][0]["mc"]["mean"]


def test_param_expressions_and_dps(capsys):
    _, payload = run_json(capsys, "finetune-linear-regression", "--theory-only", "--param", "theta=pi/2",
                          "--param", "gamma=1/4", "--dps", "40")
    r = payload["results"][0]
    assert r["params"]["theta"] == pytest.approx(1.5707963267948966)
    assert r["theory"] == "1.5" and r["mc"] is None  # 1 * (1 - 1/4) * (2 - 2 cos(pi/2))
    _, payload = run_json(capsys, "double-descent", "--theory-only", "--param", "gamma=1/3", "--dps", "50")
    assert payload["results"][0]["theory"].startswith("0.686666666666666666666666666666666666666666666")


def test_json_file_is_written_whole(tmp_path):
    target = tmp_path / "out.json"
    assert verify.main(["double-descent", "--theory-only", "--json", str(target)]) == 0
    assert json.loads(target.read_text())["results"][0]["id"] == "double-descent"
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]


def test_a_case_that_pins_sizes_the_overrides_do_not_fit_is_skipped_and_said(capsys):
    # finetune's sensitive case pins d = 13: with gamma = 1/2 it would have n = 6, d - n < 10; the other cases run
    code, payload = run_json(capsys, "finetune", "--quick", "--theory-only", "--param", "gamma=1/2",
                             "--param", "theta=pi/4", "--param", "sigma=1/5")
    assert code == 0 and [row["params"]["d"] for row in payload["results"]] == [60]
    assert payload["skipped"] == ["skipped finetune's case gamma=3/13, d=13, sigma=0, theta=pi with these parameters: "
                                  "need |d - n| >= 10 for a finite-variance scratch risk, got d = 13, n = 6"]


@pytest.mark.parametrize("args, message", [
    (["no-such-claim"], "unknown theorem id 'no-such-claim'"),
    (["double-descent", "--param", "gamma=1"], "gamma = 1 is outside its domain"),
    (["double-descent", "--param", "gamma=-2"], "outside its domain"),
    (["double-descent", "--param", "sigma=-0.1"], "sigma = -1/10 is outside its domain"),
    (["finetune-linear-regression", "--param", "theta=4"], "theta = 4 is outside its domain"),
    (["double-descent", "--param", "gamma=abc"], "unknown name 'abc'"),
    (["double-descent", "--param", "gamma=1/0"], "division by zero"),
    (["double-descent", "--param", "gamma"], "expects NAME=VALUE"),
    (["double-descent", "--param", "beta=1"], "unknown parameter 'beta'"),
    (["double-descent", "--param", "d=12.5"], "d must be an integer"),
    (["double-descent", "--quick", "--param", "gamma=1/1000", "--param", "d=100"], "gamma * d must be at least 1 sample"),
    (["double-descent", "--param", "gamma=__import__('os')"], "unexpected character"),
    (["double-descent", "--param", "gamma=1e999"], "gamma = 1.00000E+999 is beyond the range of float64"),
    (["kl-divergence", "--param", "sigma=1e-999"], "sigma = 1.00000E-999 is beyond the range of float64"),
    (["double-descent", "--param", "d=2**60"], "beyond the integers float64 holds exactly"),
    # in range, but the simulation's sizes are not: refused when the check asks for them, in one line
    (["double-descent", "--quick", "--param", "gamma=2**1000"], "cannot be simulated here: a tensor size beyond int64"),
    (["double-descent", "--quick", "--param", "d=10**8"], "d=100000000 cannot be simulated here: out of memory"),
    (["map", "double-descent", "--over", "gamma=1/5:4/5", "--theory-only"], "no --theory-only, which leaves nothing to map"),
    (["map", "double-descent", "--quick", "--over", "gamma=1e-300:1e300"], "no point of the map lies in the claim's domain"),
    (["double-descent", "--trials", "1"], "must be >= 2"),
    (["double-descent", "--trials", "1000001"], "--trials 1000001: double-descent runs at most 1000000 (100 times"),
    (["all", "--quick", "--trials", "10**12"], "expected an integer"),
    (["all", "--quick", "--trials", "1000000000000"], "--trials 1000000000000: double-descent runs at most"),
    (["map", "double-descent", "--quick", "--over", "gamma=1/5:4/5", "--trials", "10000000"], "runs at most 1000000"),
    (["stress", "double-descent", "--quick", "--trials", "10000000"], "runs at most 1000000"),
    (["compare", "--trials", "3201"], "--trials 3201: compare runs at most 3200 (100 times its default)"),
    (["finetune", "--quick", "--param", "gamma=19/20"], "need |d - n| >= 10"),   # invalid at the defaults too
    (["double-descent", "--dps", "abc"], "expected an integer"),
    (["double-descent", "--device", "tpu"], "unknown device 'tpu'"),
    (["double-descent", "--quick", "--paper"], "not allowed with argument"),
    (["all", "double-descent"], "cannot be combined"),
    (["show"], "show needs a claim id"),
    (["show", "nope"], "unknown theorem id 'nope'"),
    (["show", "double-descent", "--ids"], "--ids is an option of 'list'"),
    # an option that this command does not read is refused, not ignored
    (["double-descent", "--over", "gamma=1/5:4/5"], "--over is an option of 'map'"),
    (["double-descent", "--tolerance", "0.1"], "--tolerance is an option of 'map'"),
    (["stress", "double-descent", "--budget", "5"], "--budget is an option of 'map'"),
    (["double-descent", "--latex"], "--latex is an option of 'show'"),
    (["double-descent", "--from", "run.json"], "--from is an option of 'report'"),
    (["show", "double-descent", "--out", "x.md"], "'show' does not read --out"),
    (["show", "double-descent", "--quick"], "'show' does not read --quick or --paper"),
    (["list", "--json", "claims.json"], "'list' does not read --json"),
    (["cache", "info", "--trials", "10"], "'cache' does not read --trials"),
    (["compare", "--baseline", "run.json"], "'compare' does not read --baseline"),
    (["compare", "--data", "rademacher"], "'compare' does not read --data"),
    (["map", "double-descent", "--over", "gamma=1/5:4/5", "--json", "map.json"], "'map' does not read --json"),
    (["plot", "faf-fig2", "--baseline", "run.json"], "'plot' does not read --baseline"),
    (["report", "--from", "run.json", "--quick"], "'report --from' does not read --quick or --paper"),
    (["list", "extra"], "list takes no further arguments"),
    (["list", "--junit", "out.xml"], "--junit writes the rows of a run; 'list' has none"),
    (["show", "double-descent", "--junit", "out.xml"], "'show' has none"),
    (["double-descent", "--junit", "/no/such/folder/out.xml"], "--junit /no/such/folder/out.xml: no such folder"),
    (["double-descent", "--json", "-", "--junit", "-"], "cannot both write to stdout"),
    (["report", "--from", "/no/such/run.json", "--junit", "out.xml"], "--from /no/such/run.json"),
    (["double-descent", "--claims-from", "/no/such/claims.py"], "--claims-from /no/such/claims.py: no such file"),
    (["list", "--claims-from", "no_such_module_anywhere"], "no module named 'no_such_module_anywhere'"),
    (["list", "--claims-from", "not a module"], "neither a .py file nor a dotted module name"),
    (["list", "--claims-from", "json"], "--claims-from json: registers no claim"),
])
def test_bad_input_is_one_line_exit_2(args, message, capsys):
    assert verify.main(args) == 2
    err = capsys.readouterr().err
    assert message in err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_bad_input_from_a_real_process_has_no_traceback():
    result = cli("double-descent", "--param", "gamma=1")
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0 and "Traceback" not in result.stderr
    assert "gamma" in result.stderr


def test_exit_status_reports_changes_against_the_recorded_verdicts(monkeypatch, capsys):
    import dataclasses
    claim = theorems.REGISTRY["double-descent"]
    # A recorded refutation that now agrees is a change: exit 1 ...
    from theorems.core import Finding
    recorded_refuted = dataclasses.replace(claim, findings=(Finding("gamma > 0", "illustration"),))
    monkeypatch.setitem(theorems.REGISTRY, "double-descent", recorded_refuted)
    assert verify.main(["double-descent", "--quick"]) == 1
    assert "CHANGED" in capsys.readouterr().out
    # ... and a wrong formula whose refutation is recorded is shown as such: exit 0.
    wrong = dataclasses.replace(recorded_refuted, formulas={**claim.formulas, "asymptotic": lambda g, s: 2 * claim.formulas["asymptotic"](g, s)})
    monkeypatch.setitem(theorems.REGISTRY, "double-descent", wrong)
    code, payload = run_json(capsys, "double-descent", "--quick")
    assert code == 0
    assert all(r["verdict"] == "disagree" and r["as_expected"] for r in payload["results"])
    assert "refuted, as recorded" in verify.verdict_cell(payload["results"][0])


def test_readme_commands_are_the_ci_commands():
    readme = open(os.path.join(ROOT, "README.md")).read()
    blocks = re.findall(r"```sh\n(.*?)```", readme, flags=re.S)
    setup = [line for line in blocks[0].splitlines() if line.strip()]
    assert len(setup) == 2 and setup[0].endswith("python verify.py all") and "pytest" in setup[1]
    ci = open(os.path.join(ROOT, ".ci", "run")).read()
    assert setup[1] in ci


def test_readme_example_runs():
    result = cli("double-descent", "--param", "gamma=3/4", "--param", "sigma=0.5", "--trials", "400", "--quick")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "agree" in result.stdout


def test_grid_runs_every_point_and_skips_points_outside_the_domain(capsys):
    code, payload = run_json(capsys, "double-descent", "--theory-only", "--grid", "gamma=0:2:5", "--grid", "sigma=0,1/2")
    assert code == 0
    points = {(r["params"]["gamma"], r["params"]["sigma"]) for r in payload["results"]}
    assert points == {(g, s) for g in (0.5, 1.5, 2) for s in (0, 0.5)}
    assert len(payload["skipped"]) == 4 and all("outside its domain" in note for note in payload["skipped"])
    assert {r["theory"] for r in payload["results"] if r["params"] == {"gamma": 2, "sigma": 0.5, "d": 400}} == {"0.25"}


@pytest.mark.parametrize("args, message", [
    (["double-descent", "--grid", "gamma"], "--grid expects NAME"),
    (["double-descent", "--grid", "gamma=0:1"], "START:STOP:COUNT"),
    (["double-descent", "--grid", "gamma=0:1:0"], "COUNT must be an integer"),
    (["double-descent", "--grid", "gamma=1,abc"], "unknown name 'abc'"),
    (["double-descent", "--grid", "theta=0,1"], "has no parameter 'theta'"),
    (["double-descent", "--grid", "gamma=1,-1"], "no grid point lies in the domain"),
])
def test_bad_grids(args, message, capsys):
    assert verify.main(args) == 2
    assert message in capsys.readouterr().err


def test_a_log_gets_one_line_per_finished_row():
    # Not a terminal (CI, nohup): rich's live bar would print nothing until the end.
    result = cli("double-descent", "--quick", "--theory-only")
    assert result.returncode == 0
    lines = [line for line in result.stderr.splitlines() if line.startswith("[")]
    assert [line.split()[0] for line in lines] == ["[1/3]", "[2/3]", "[3/3]"]   # its cases, the sensitive one too
    assert all(" double-descent gamma=" in line for line in lines)


def test_ctrl_c_keeps_the_finished_rows_and_writes_whole_json(tmp_path, monkeypatch, capsys):
    import dataclasses
    claim = theorems.REGISTRY["double-descent"]
    calls = []

    def check_then_interrupt(theorem, params, run):
        calls.append(params)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return claim.check(theorem, params, run)

    monkeypatch.setitem(theorems.REGISTRY, "double-descent", dataclasses.replace(claim, check=check_then_interrupt))
    path = tmp_path / "partial.json"
    assert verify.main(["double-descent", "--quick", "--json", str(path)]) == 1   # incomplete: not "as recorded"
    assert "interrupted: showing the 1 finished rows" in capsys.readouterr().out
    payload = json.loads(path.read_text())
    assert [r["params"]["gamma"] for r in payload["results"]] == [0.5] and payload["results"][0]["verdict"] == "agree"
    assert not list(tmp_path.glob("*.tmp"))


_COLOUR = re.compile(r"\x1b\[([0-9;]*)m")


def _colours(text: str) -> set[int]:
    """The SGR colour codes (foreground and background, 8, 16, 256 and true colour) in ``text``."""
    codes = {int(code) for params in _COLOUR.findall(text) for code in params.split(";") if code}
    return {code for code in codes if 30 <= code <= 49 or 90 <= code <= 107}


def test_force_color_in_a_log_gives_colours_but_no_live_display():
    # CI services set FORCE_COLOR for colours in their logs; the output is still a pipe, not a terminal
    result = cli("linear-transfer", "--quick", env={"FORCE_COLOR": "1"})
    assert result.returncode == 0, result.stderr
    assert [line.split()[0] for line in result.stderr.splitlines()] == ["[1/3]", "[2/3]", "[3/3]"]   # its cases
    for frame in ("\r", "\x1b[2K", "\x1b[?25l", "\x1b[1A"):   # redrawn frames of a live bar or spinner
        assert frame not in result.stdout + result.stderr
    assert _colours(result.stdout) and "agree" in result.stdout


def test_no_color_means_no_colour_codes_even_when_colours_are_forced():
    result = cli("linear-transfer", "--quick", env={"FORCE_COLOR": "1", "NO_COLOR": "1"})
    assert result.returncode == 0, result.stderr
    assert "agree" in result.stdout and not _colours(result.stdout + result.stderr)
    assert [line.split()[0] for line in result.stderr.splitlines()] == ["[1/3]", "[2/3]", "[3/3]"]   # its cases


def test_python_dash_m_verify_is_the_same_command():
    plain, as_module = cli("list", "--ids"), subprocess.run(
        [sys.executable, "-m", "verify", "list", "--ids"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert as_module.returncode == plain.returncode == 0 and as_module.stdout == plain.stdout
    bad = subprocess.run([sys.executable, "-m", "verify", "show", "nope"], cwd=ROOT, capture_output=True, text=True,
                         timeout=600)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "unknown theorem id 'nope'" in bad.stderr


def test_the_console_script_is_verify_main():
    import tomllib
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as handle:
        project = tomllib.load(handle)["project"]
    assert project["scripts"] == {"transfer-check": "verify:main"}
    assert project["entry-points"]["pytest11"] == {"transfer_theorem_checker": "engine.pytest_plugin"}
