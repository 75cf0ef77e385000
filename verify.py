#!/usr/bin/env python
"""Check the claims of transfer-learning papers against the procedures they describe.

    python verify.py list                 ids, titles, sources
    python verify.py show ID              statement, derivations, parameters, verdict rule
    python verify.py all [options]        run every check
    python verify.py ID [ID ...]          run some checks
    python verify.py compare [finetune]   two papers' predictions on one simulation
    python verify.py universality-table [ID ...]   every linear claim's verdict under each design law
    python verify.py plot FIGURE|ID       draw a paper's figure from the checks (--grid, --out DIR)
    python verify.py report [ID ...|all]  run the checks and write a Markdown report (--out, --from run.json)

Exit status: 0 when every verdict is as recorded with its claim, 1 when any
verdict changed, 2 for bad input.  This file only parses and renders; the
claims live in ``theorems/``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import sys
import tempfile

import mpmath as mp
import sympy as sp

EXIT_OK, EXIT_CHANGED, EXIT_USAGE = 0, 1, 2


class UsageError(Exception):
    """Bad input: reported as one line on stderr, exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise UsageError(message)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="verify.py", description=__doc__.split("\n\n")[0],
                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__.split("\n\n", 1)[1])
    parser.add_argument("targets", nargs="+", metavar="COMMAND|ID", help="list, show ID, all, or claim ids")
    parser.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                        help="set a parameter; VALUE may be an expression such as pi/4 or 1e-3 (repeatable)")
    parser.add_argument("--grid", action="append", default=[], metavar="NAME=SPEC",
                        help="run over a grid: SPEC is START:STOP:COUNT (COUNT points, ends included), "
                             "START:STOP:COUNT:log (equal ratios) or a comma list such as 0,pi/8,pi/4; "
                             "repeat for a product grid")
    tier = parser.add_mutually_exclusive_group()
    tier.add_argument("--quick", action="store_const", dest="tier", const="quick", help="CI sizes: seconds per claim")
    tier.add_argument("--paper", action="store_const", dest="tier", const="paper", help="the papers' own sizes (GPU recommended)")
    parser.add_argument("--trials", type=_positive_int(2), help="independent Monte-Carlo trials (overrides the tier)")
    parser.add_argument("--seed", type=_positive_int(0), default=0, help="run seed (default 0)")
    parser.add_argument("--device", default="auto", help="auto, cpu or cuda (default auto)")
    parser.add_argument("--dps", type=_positive_int(5, 10000), default=30, help="decimal digits of the theory value (default 30)")
    parser.add_argument("--theory-only", action="store_true", help="evaluate the claims without Monte-Carlo")
    parser.add_argument("--data", default="gaussian", metavar="NAME",
                        help="law of the design entries in the linear claims' Monte-Carlo checks (mean 0, variance 1): "
                             "gaussian (default), rademacher, uniform, student-t[:NU] (NU > 4, default 5), "
                             "sparse[:P] (Bernoulli(P) x Gaussian, default P = 1/2)")
    parser.add_argument("--dtype", choices=("float64", "float32"), default="float64",
                        help="arithmetic of the Monte-Carlo checks: float32 is used by the claims declared "
                             "float32-safe (see 'show ID'); the others always compute in float64 (default float64)")
    parser.add_argument("--workers", type=_positive_int(1, 256), default=1,
                        help="run the points in N local processes (same numbers as a serial run)")
    parser.add_argument("--scheduler", metavar="ADDRESS", help="run the points on the Dask cluster at ADDRESS "
                                                                "(e.g. tcp://host:8786; needs the dask extra)")
    parser.add_argument("--json", metavar="PATH", help="write results as JSON to PATH ('-' for stdout)")
    parser.add_argument("--latex", action="store_true", help="with show: print only the LaTeX statement")
    parser.add_argument("--out", metavar="PATH", help="write a Markdown report of the run to PATH ('-' for stdout); "
                                                     "'report' defaults it to report.md")
    parser.add_argument("--from", dest="from_run", metavar="PATH", help="with report: report a stored --json run "
                                                                         "instead of running the checks")
    parser.add_argument("--baseline", metavar="PATH", help="compare with a stored --json run; exit 1 if a verdict flipped, "
                                                          "a theory value or a Monte-Carlo mean moved")
    parser.set_defaults(tier="default")
    return parser


def _positive_int(lowest, highest=None):
    def parse(text):
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < lowest or (highest is not None and value > highest):
            bound = f"between {lowest} and {highest}" if highest is not None else f">= {lowest}"
            raise argparse.ArgumentTypeError(f"must be {bound}, got {value}")
        return value
    return parse


def split_assignment(item: str, option: str, form: str) -> tuple[str, str]:
    """'NAME=TEXT' -> (NAME, TEXT), or a one-line UsageError naming the option and the form it takes."""
    name, sep, text = item.partition("=")
    name, text = name.strip(), text.strip()
    if not sep or not name or not text:
        raise UsageError(f"{option} expects {form}, got {item!r}")
    return name, text


def parse_grid(items: list[str]) -> dict[str, list[str]]:
    """NAME=START:STOP:COUNT or NAME=V1,V2,... -> {name: [value text, ...]} (exact values, no eval)."""
    from numerics.expr import ExpressionError, parse_number
    grid = {}
    for item in items:
        name, spec = split_assignment(item, "--grid", "NAME=START:STOP:COUNT or NAME=V1,V2,...")
        try:
            if ":" in spec:
                parts = spec.split(":")
                geometric = len(parts) == 4 and parts[3] == "log"
                if len(parts) != 3 and not geometric:
                    raise UsageError(f"--grid {name}: a range is START:STOP:COUNT or START:STOP:COUNT:log, got {spec!r}")
                parts = parts[:3]
                start, stop = parse_number(parts[0]), parse_number(parts[1])
                count = parse_number(parts[2])
                if not count.is_integer or count < 1 or count > 1000:
                    raise UsageError(f"--grid {name}: COUNT must be an integer from 1 to 1000, got {parts[2]!r}")
                count = int(count)
                if geometric:   # equal ratios; the values are rounded to 17 digits
                    if not (start > 0 and stop > 0):
                        raise UsageError(f"--grid {name}: a :log range needs START and STOP > 0, got {spec!r}")
                    values = [repr(float(start * (stop / start) ** (sp.Rational(k, max(count - 1, 1)))))
                              for k in range(count)]
                    values[0], values[-1] = str(start), str(stop)
                    grid[name] = values
                else:
                    grid[name] = [str(start + (stop - start) * k / max(count - 1, 1)) for k in range(count)]
            else:
                grid[name] = [str(parse_number(v)) for v in spec.split(",")]
        except ExpressionError as error:
            raise UsageError(f"--grid {name}: {error}") from None
    return grid


def parse_params(items: list[str]) -> dict[str, str]:
    return dict(split_assignment(item, "--param", "NAME=VALUE") for item in items)


# ---------------------------------------------------------------------------
# running
# ---------------------------------------------------------------------------

def select(targets: list[str]):
    import theorems
    if targets == ["all"]:
        return list(theorems.REGISTRY.values())
    chosen = []
    for target in targets:
        try:
            theorem = theorems.get(target)
        except theorems.UnknownTheorem as error:
            raise UsageError(str(error)) from None
        if theorem not in chosen:
            chosen.append(theorem)
    return chosen


def check_data(text: str, selected, explicit: bool):
    """The --data distribution; when it matters (claim ids named with a non-Gaussian law, or the
    universality table), each selected claim must sample a design (with 'all', those that do use it
    and the others keep their own data)."""
    from theorems.core import ParameterError, parse_data
    try:
        data = parse_data(text)
    except ParameterError as error:
        raise UsageError(str(error)) from None
    if explicit:
        fixed = [theorem.id for theorem in selected if not theorem.samples_design]
        if fixed:
            raise UsageError(f"--data: {fixed[0]} samples no design matrix X (it has data of its own), "
                             f"so its data law cannot be chosen")
    return data


def resolve_all(selected, overrides: dict[str, str], tier: str, grid: dict[str, list[str]] | None = None,
                notes: list | None = None):
    """Validate every parameter of every selected claim before anything runs.

    With a grid, each claim runs at every grid point (its cases are not used);
    points outside a claim's domain are skipped and listed in ``notes``.
    """
    import itertools
    from theorems import ParameterError
    from theorems.core import Point
    known = {p.name for theorem in selected for p in theorem.parameters}
    unknown = sorted(set(overrides) - known)
    if unknown:
        names = ", ".join(sorted(known))
        raise UsageError(f"unknown parameter {unknown[0]!r} for the selected claims (known: {names})")
    if grid:
        resolved = []
        for theorem in selected:
            names = {p.name for p in theorem.parameters}
            missing = sorted(set(grid) - names)
            if missing:
                raise UsageError(f"{theorem.id} has no parameter {missing[0]!r} to grid over")
            mine = {k: v for k, v in overrides.items() if k in names}
            for combo in itertools.product(*grid.values()):
                point = {**mine, **dict(zip(grid, combo))}
                try:
                    params = theorem.resolve(point, tier)
                except ParameterError as error:
                    if notes is not None:
                        notes.append(f"skipped {theorem.id} at " + ", ".join(f"{k}={v}" for k, v in zip(grid, combo))
                                     + f": {error}")
                    continue
                resolved.append((theorem, Point(params, theorem.expected, theorem.finding)))
        if not resolved:
            raise UsageError("no grid point lies in the domain of the selected claims")
        return resolved
    resolved = []
    for theorem in selected:
        mine = {k: v for k, v in overrides.items() if k in {p.name for p in theorem.parameters}}
        try:
            resolved.extend((theorem, point) for point in theorem.points(mine, tier))
        except ParameterError as error:
            raise UsageError(f"{theorem.id}: {error}" if not str(error).startswith(theorem.id) else str(error)) from None
    return resolved


def execute(args, console) -> int:
    """Run the selected checks, render them, and write what was asked for; the exit status."""
    baseline = load_run(args.baseline) if args.baseline else None
    for option, path in (("--json", args.json), ("--out", args.out)):
        if path and path != "-" and not os.path.isdir(os.path.dirname(os.path.abspath(path))):
            raise UsageError(f"{option} {path}: no such folder")  # found now, not after an hour of checks
    payload, complete = run_checks(args, console)
    if args.json:
        write_json(args.json, payload)
    if args.out:
        write_report(args.out, payload)
    changed = [r for r in payload["results"] if r["as_expected"] is False]
    if baseline is not None:
        from engine.baseline import compare_runs
        differences = compare_runs(baseline, payload)
        render_baseline(differences, args.baseline, console)
        changed += [d for d in differences if d.is_change]
    return EXIT_CHANGED if changed or not complete else EXIT_OK


def run_checks(args, console, laws=None) -> tuple[dict, bool]:
    """The run as a --json payload, and whether every selected point finished (Ctrl-C keeps the rows so far).

    ``laws`` (the universality table) runs every point once per design law instead of once with --data."""
    import torch
    from rich.markup import escape

    from simulate.device import DeviceError, resolve_device

    selected = select(args.targets)
    data = check_data(args.data, selected, explicit=(args.targets != ["all"] and args.data != "gaussian") or laws is not None)
    notes = []
    resolved = resolve_all(selected, parse_params(args.param), args.tier, parse_grid(args.grid), notes)
    try:
        device = resolve_device(args.device)
    except DeviceError as error:
        raise UsageError(str(error)) from None
    torch.set_default_dtype(torch.float64)
    from engine.runner import Task
    family = len(resolved) * len(laws or [data])   # Bonferroni over the run: it alarms with probability <= 1e-3
    tasks = [Task(theorem.id, point.params, *point.recorded(law if theorem.samples_design else "gaussian"), args.tier,
                  args.trials, args.seed, str(device), args.dps, not args.grid and args.tier != "quick", args.theory_only,
                  law if theorem.samples_design else "gaussian", args.dtype, family)
             for theorem, point in resolved for law in (laws or [str(data)])]
    results, complete = execute_tasks(tasks, args, console)
    if laws is None:
        render_table(results, args, device, console)
    else:
        render_law_table(results, laws, args, device, console)
    for note in notes:
        console.print(f"[yellow]{escape(note)}[/]", highlight=False)
    payload = {"version": 1, "environment": environment(args, device), "results": results, "skipped": notes,
               "summary": summary(results)}
    return payload, complete


def execute_tasks(tasks, args, console) -> tuple[list[dict], bool]:
    """Run the tasks (serially, in --workers processes or on --scheduler) with a progress bar; the finished
    rows in task order, and whether all finished (Ctrl-C stops early and keeps what finished)."""
    from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
    from engine.runner import run_points
    finished = {}
    progress = Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                        TimeElapsedColumn(), console=console, transient=True)
    with progress:
        bar = progress.add_task(tasks[0].theorem_id, total=len(tasks))
        serial_label = lambda index: tasks[index].theorem_id if index < len(tasks) else ""
        points = run_points(tasks, workers=args.workers, scheduler=args.scheduler,
                            progress=lambda message: progress.update(bar, description=f"{serial_label(len(finished))}: {message}"))
        try:
            for index, row in points:
                finished[index] = row
                progress.advance(bar)
                progress.update(bar, description=serial_label(len(finished)) if args.workers == 1 and not args.scheduler
                                else f"{len(finished)} finished")
                if not console.is_terminal:   # a log (CI, nohup): one line per finished row instead of a live bar
                    law = f" [{row['data']}]" if row.get("data") not in (None, "gaussian") else ""
                    print(f"[{len(finished)}/{len(tasks)}] {row['id']} {format_params(row['params'])}{law}: {row['verdict']} "
                          f"({row['seconds']:.1f} s)", file=sys.stderr, flush=True)
        except KeyboardInterrupt:
            points.close()
            console.print(f"[yellow]interrupted: showing the {len(finished)} finished rows[/]")
        except RuntimeError as error:   # a missing optional dependency or an unreachable scheduler
            raise UsageError(str(error)) from None
    return [finished[index] for index in sorted(finished)], len(finished) == len(tasks)


def load_run(path: str, option: str = "--baseline") -> dict:
    """A stored ``--json`` run, or a one-line UsageError saying what is wrong with the file."""
    try:
        with open(path) as handle:
            payload = json.load(handle)
    except OSError as error:
        raise UsageError(f"{option} {path}: {error.strerror}") from None
    except json.JSONDecodeError as error:
        raise UsageError(f"{option} {path}: not JSON ({error.msg}, line {error.lineno})") from None
    if not isinstance(payload, dict) or payload.get("version") != 1 or "results" not in payload:
        raise UsageError(f"{option} {path}: not a verify.py --json run (version 1)")
    return payload


def summary(results) -> dict:
    counts = {}
    for r in results:
        counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
    return {"verdicts": counts, "changed": [r["id"] for r in results if r["as_expected"] is False]}


def environment(args, device) -> dict:
    import torch
    return {"tier": args.tier, "seed": args.seed, "device": str(device), "dps": args.dps, "trials": args.trials,
            "data": args.data, "dtype": args.dtype,
            "python": platform.python_version(), "torch": torch.__version__, "mpmath": mp.__version__,
            "sympy": sp.__version__, "platform": platform.platform()}


def write_report(path: str, payload: dict) -> None:
    """The run as Markdown, linking the figures (``verify.py plot``) found beside the report."""
    from engine.report import markdown_report
    folder = os.path.dirname(os.path.abspath(path))
    ids = {row["id"] for row in payload["results"]}
    figures = sorted(name for name in os.listdir(folder) if name.endswith(".png") and name.split(".")[0] in ids) \
        if os.path.isdir(folder) else []
    write_text(path, markdown_report(payload, figures))


def write_json(path: str, payload: dict) -> None:
    write_text(path, json.dumps(payload, indent=2, default=str) + "\n")


def write_text(path: str, text: str) -> None:
    if path == "-":
        sys.stdout.write(text)
        return
    # Write beside the target and rename: the file is never left half-written.
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise UsageError(f"cannot write {path}: no folder {folder}")
    with tempfile.NamedTemporaryFile("w", dir=folder, delete=False, suffix=".tmp") as handle:
        handle.write(text)
    os.replace(handle.name, path)


# ---------------------------------------------------------------------------
# rendering
# ---------------------------------------------------------------------------

VERDICT_STYLE = {"agree": "green", "disagree": "red", "inconclusive": "yellow"}


def verdict_cell(result) -> str:
    verdict, expected = result["verdict"], result["expected"]
    if result["as_expected"] is None:
        return "[dim]theory only[/]"
    if verdict == expected == "agree":
        return "[green]agree[/]"
    if verdict == expected:
        return f"[magenta]{'refuted' if verdict == 'disagree' else verdict}, as recorded[/]"
    return f"[bold red]CHANGED: {verdict} (recorded: {expected})[/]"


def render_baseline(differences, path: str, console) -> None:
    from rich.markup import escape
    changes = [d for d in differences if d.is_change]
    listed = [d for d in differences if not d.is_change]
    if not changes:
        console.print(f"[green]no change against {escape(path)}[/]"
                      + (f" ({len(listed)} rows in only one of the runs)" if listed else ""))
    for d in changes:
        console.print(f"[bold red]CHANGED[/] {d.id} {escape(format_params(d.params))}: {escape(d.detail)}", highlight=False)
    for d in listed:
        console.print(f"[dim]{d.kind}[/] {d.id} {escape(format_params(d.params))}: {d.detail}", highlight=False)


def format_params(params: dict) -> str:
    return ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in params.items())


def render_law_table(results, laws, args, device, console) -> None:
    """One row per claim and case, one column per design law: the verdict (and z) of each run."""
    from rich.markup import escape
    from rich.table import Table
    table = Table(title=f"verdict per design law · tier {args.tier} · seed {args.seed} · {device}", show_lines=True)
    table.add_column("id", overflow="fold")
    table.add_column("parameters", overflow="fold")
    for law in laws:
        table.add_column(law, overflow="fold")
    cells = {}
    for r in results:
        key = (r["id"], format_params(r["params"]))
        z = r["z"]
        z_text = f"\n[dim]z={z:+.1f}[/]" if isinstance(z, float) else ""
        cells.setdefault(key, {})[r["data"] or "gaussian"] = verdict_cell(r) + z_text
    for (theorem_id, params), row in cells.items():
        table.add_row(theorem_id, params, *(row.get(law, "—") for law in laws))
    console.print(table)
    for r in results:
        if r["as_expected"] is False or (r["verdict"] != "agree" and r.get("data") not in (None, "gaussian")):
            console.print(f"[bold]{r['id']}[/] {format_params(r['params'])} [{r['data']}]: {escape(r['detail'])}",
                          highlight=False)
            if r.get("finding"):
                console.print(f"  [magenta]recorded finding: {escape(r['finding'])}[/]", highlight=False)


def universality_table(args, console) -> int:
    """``universality-table [IDS]``: every linear claim's cases under every standard design law."""
    import theorems
    from theorems.universality import STANDARD_LAWS
    if args.grid:
        raise UsageError("universality-table runs each claim's recorded cases; use a claim id with --data for grids")
    if args.data != "gaussian":
        raise UsageError("universality-table runs every standard law; use a claim id with --data for one law")
    ids = args.targets[1:] or [t.id for t in theorems.REGISTRY.values() if t.samples_design and t.id != "universality"]
    args.targets = ids
    payload, complete = run_checks(args, console, laws=[str(law) for law in STANDARD_LAWS])
    if args.json:
        write_json(args.json, payload)
    changed = any(r["as_expected"] is False for r in payload["results"])
    return EXIT_CHANGED if changed or not complete else EXIT_OK


def render_table(results, args, device, console) -> None:
    from rich.markup import escape
    from rich.table import Table
    dtype = "" if args.dtype == "float64" else " · float32 where declared safe"
    family = f" · false alarms split over {len(results)} points" if len(results) > 1 else ""
    table = Table(title=f"tier {args.tier} · seed {args.seed} · {device} · {args.dps} digits{dtype}{family}",
                  show_lines=True)
    for column in ("#", "id", "parameters", "theory", "Monte-Carlo (trials, sizes)", "z", "verdict", "s"):
        table.add_column(column, overflow="fold", justify="right" if column in ("#", "z", "s") else "left")
    for row, r in enumerate(results, 1):
        mc = r["mc"]
        if mc is None:
            mc_text = "—"
        else:
            sizes = ", ".join(f"{k}={' '.join(map(str, v)) if isinstance(v, list) else v}"
                              for k, v in (mc.get("sizes") or {}).items())
            spread = "" if mc.get("se") is None else f" ± {mc['se']:.2g}"
            mc_text = f"{mc['mean']:.6g}{spread}\n[dim]{mc['trials']} trials; {sizes}[/]"
        theory = r["theory"] if len(r["theory"]) <= 14 else r["theory"][:12] + "…"
        if r.get("theory_warning"):   # the line itself is printed under the table
            theory += "\n[yellow]⚠ precision[/]"
        z = r["z"]
        z_text = "—" if z is None else (f"{z:+.2f}" if isinstance(z, float) else str(z))
        table.add_row(str(row), r["id"], format_params(r["params"]), theory, mc_text, z_text, verdict_cell(r), f"{r['seconds']:.1f}")
    console.print(table)
    for row, r in enumerate(results, 1):
        console.print(f"#{row} [bold]{r['id']}[/]: {escape(r['detail'])}", highlight=False)
        if r.get("finding"):
            console.print(f"  [magenta]recorded finding: {escape(r['finding'])}[/]", highlight=False)
        if r.get("theory_warning"):
            console.print(f"  [yellow]⚠ theory: {escape(r['theory_warning'])}[/]", highlight=False)


def compare(args, console) -> int:
    """Render engine.compare: one row per setting, each paper's prediction against the trained networks."""
    from rich.table import Table
    from simulate.device import DeviceError, resolve_device
    from engine.compare import COMPARISONS
    from theorems.core import ParameterError, Run
    names = args.targets[1:] or ["finetune"]
    if len(names) > 1 or names[0] not in COMPARISONS:
        raise UsageError(f"unknown comparison {' '.join(names)!r} (choose {', '.join(COMPARISONS)})")
    if args.grid:
        raise UsageError("compare takes --param lists (e.g. --param sigmas=0,1), not --grid")
    title, simulate_rows, resolve = COMPARISONS[names[0]]
    try:
        kwargs = resolve(parse_params(args.param))
        device = resolve_device(args.device)
    except (ParameterError, DeviceError) as error:
        raise UsageError(str(error)) from None
    with console.status("comparing") as status:
        run = Run(tier=args.tier, seed=args.seed, device=device, progress=lambda message: status.update(message))
        rows = simulate_rows(trials=args.trials or 32, run=run, **kwargs)
    table = Table(title=title, caption="distance: max over draws of ||beta_ft - prediction|| / ||P_perp theta_S||; "
                  "verdict: per draw (within the integrator's tolerance), in risk (paired z-test, false alarm 1e-3), off")
    papers = list(rows[0].predictions)
    for column in ("init", "sigma", "L", "trained risk"):
        table.add_column(column, justify="right")
    for paper in papers:
        table.add_column(paper + ": risk, z, distance, verdict", overflow="fold")
    table.add_column("eq. (5)'s c", overflow="fold")
    payload = []
    for row in rows:
        cells = [f"{p['risk']:.4f}, " + ("" if p["verdict"] == "per draw" else f"z={p['z']:+.1f}, ")
                 + f"{p['distance']:.1e}, {p['verdict']}" for p in row.predictions.values()]
        table.add_row(row.setting["init"], f"{row.setting['sigma']:g}", str(row.setting["L"]), str(row.risk), *cells, row.note)
        payload.append({"setting": row.setting, "risk": row.risk.mean, "risk_se": row.risk.se,
                        "predictions": row.predictions, "note": row.note})
    console.print(table)
    if args.json:
        write_json(args.json, {"comparison": names[0], "seed": args.seed, "rows": payload})
    return EXIT_OK


def plot(args, console) -> int:
    """Run a figure's grid (or a claim over --grid) and draw it: PNG, SVG and the plotted data as JSON."""
    from theorems.core import ParameterError
    from engine.figures import FIGURES, draw, figure_for, layout, plotted_data
    from theorems.registry import UnknownTheorem
    if len(args.targets) != 2:
        raise UsageError(f"plot takes one figure or claim id (figures: {', '.join(FIGURES)})")
    out_dir = args.out or "figures"
    try:
        figure = figure_for(args.targets[1], tuple(args.grid), tuple(args.param))
        grid = parse_grid(list(figure.grid))
        layout(grid)
    except (ParameterError, UnknownTheorem) as error:
        raise UsageError(str(error)) from None
    if importlib.util.find_spec("matplotlib") is None:   # found now, not after an hour of checks
        raise UsageError("plot needs matplotlib: pip install -e '.[plot]'")
    os.makedirs(out_dir, exist_ok=True)
    args.targets, args.grid, args.param, args.out = [figure.claim], list(figure.grid), list(figure.params), None
    args.theory_only = args.theory_only or figure.slope   # a slope figure draws theory only
    payload, complete = run_checks(args, console)
    if args.json:
        write_json(args.json, payload)
    data = plotted_data(figure, grid, parse_params(list(figure.params)), payload)
    write_json(os.path.join(out_dir, f"{figure.name}.json"), data)
    for path in draw(data, out_dir):
        console.print(f"wrote {path}", highlight=False)
    changed = any(r["as_expected"] is False for r in payload["results"])
    return EXIT_CHANGED if changed or not complete else EXIT_OK


def list_claims(console) -> int:
    from rich.table import Table
    import theorems
    table = Table(title="registered claims")
    for column in ("id", "title", "source", "recorded verdict"):
        table.add_column(column, overflow="fold")
    for theorem in theorems.REGISTRY.values():
        table.add_row(theorem.id, theorem.title, theorem.source, theorem.expected)
    console.print(table)
    return EXIT_OK


def theory_line(theorem, overrides: dict[str, str], dps: int) -> tuple[str, str | None]:
    """'VALUE at PARAMS (D of DPS digits hold at REF; cond C)' at the default point with the
    --param values this claim has, and the precision warning of that point (or None)."""
    from theorems.core import REFERENCE_EXTRA_DIGITS, ParameterError
    from engine.runner import theory_fields
    names = {p.name for p in theorem.parameters}
    try:
        params = theorem.resolve({k: v for k, v in overrides.items() if k in names})
    except ParameterError as error:
        raise UsageError(str(error) if str(error).startswith(theorem.id) else f"{theorem.id}: {error}") from None
    fields = theory_fields(theorem, params, dps)
    facts = []
    if fields["theory_digits"] is not None:
        facts.append(f"{fields['theory_digits']} of {dps} digits hold at {dps + min(dps, REFERENCE_EXTRA_DIGITS)}")
    if fields["theory_cond"] is not None:
        cond = fields["theory_cond"]
        facts.append(f"cond {cond:.2g}" if isinstance(cond, float) else f"cond {cond}")
    where = ", ".join(f"{k}={v}" for k, v in params.items())
    return f"{fields['theory']} at {where}" + (f" ({'; '.join(facts)})" if facts else ""), fields["theory_warning"]


def show_claim(targets, latex_only: bool, console, overrides: dict[str, str] | None = None, dps: int = 30) -> int:
    from rich.markup import escape
    from rich.table import Table
    if not targets:
        raise UsageError("show needs a claim id (see 'python verify.py list')")
    overrides = overrides or {}
    unknown = sorted(set(overrides) - {p.name for theorem in select(targets) for p in theorem.parameters})
    if unknown:
        raise UsageError(f"unknown parameter {unknown[0]!r} for the claims shown")
    for theorem in select(targets):
        symbolic = theorem.symbolic()
        if latex_only:
            console.print(sp.latex(symbolic.statement), markup=False, highlight=False)
            continue
        console.rule(f"[bold]{theorem.id}[/]: {theorem.title}")
        console.print(f"[bold]source[/]      {theorem.source}")
        console.print(f"[bold]statement[/]   {escape(theorem.statement)}", highlight=False)
        console.print(f"[bold]quantity[/]    {theorem.quantity}")
        line, warning = theory_line(theorem, overrides, dps)
        console.print(f"[bold]theory[/]      {escape(line)}", highlight=False)
        if warning:
            console.print(f"  [yellow]⚠ {escape(warning)}[/]", highlight=False)
        console.print("[bold]sympy[/]")
        console.print(sp.pretty(symbolic.statement, use_unicode=True), markup=False, highlight=False)
        console.print("[bold]LaTeX[/]", end="       ")
        console.print(sp.latex(symbolic.statement), markup=False, highlight=False)
        console.print("[bold]derived with sympy[/]")
        for derivation in symbolic.derivations:
            mark = "[green]✓[/]" if derivation.holds else "[red]✗[/]"
            result = "" if derivation.result is None else f"  →  {derivation.result}"
            console.print(f"  {mark} {escape(derivation.claim + result)}", highlight=False)
        console.print("[bold]assumptions[/]")
        for assumption in theorem.assumptions:
            console.print(f"  • {escape(assumption)}", highlight=False)
        table = Table("parameter", "domain", "default", "meaning")
        for p in theorem.parameters:
            default = p.default if isinstance(p.default, str) else ", ".join(f"{k}: {v}" for k, v in p.default.items())
            table.add_row(p.name, p.domain_text(), default, p.description)
        console.print(table)
        trials = ", ".join(f"{tier}: {count}" for tier, count in theorem.trials.items())
        console.print(f"[bold]trials[/]      {trials}")
        console.print(f"[bold]verdict rule[/] {escape(theorem.verdict_rule)}", highlight=False)
        console.print(f"[bold]false-alarm probability[/] <= {theorem.false_alarm:g} per run of this check; a run of k "
                      f"points tests each at {theorem.false_alarm:g}/k (Bonferroni), so the whole run alarms with "
                      f"probability <= {theorem.false_alarm:g} (normal approximation; a z-test of a Monte-Carlo mean "
                      f"is corrected for the draws' skewness, Hall 1992: see the README's 'How far to trust a verdict')")
        console.print("[bold]arithmetic[/]  " + ("float64, or float32 with --dtype float32 (standard errors floored at "
                                                 "1e-5 relative)" if theorem.float32 else "float64 always"))
        if theorem.samples_design:
            console.print("[bold]design law[/]  --data NAME (gaussian by default); "
                          "'verify.py universality-table' runs every law")
        console.print(f"[bold]recorded verdict[/] {theorem.expected}" + (f" — {theorem.finding}" if theorem.finding else ""))
        console.print("[bold]cases run by 'all'[/]")
        for case in theorem.cases:
            params = getattr(case, "params", case)
            expected = getattr(case, "expected", None) or theorem.expected
            finding = getattr(case, "finding", "")
            text = ", ".join(f"{k}={v}" for k, v in params.items()) or "defaults"
            console.print(f"  • {escape(text)}: {expected}" + (f" — {escape(finding)}" if finding else ""), highlight=False)
        from engine.power import power_lines
        console.print("[bold]power[/] (smallest relative error in the claimed value detected with P >= 0.9)")
        for power in power_lines(theorem.id):
            console.print(f"  • {escape(power)}", highlight=False)
    return EXIT_OK


def main(argv=None) -> int:
    from rich.console import Console
    console = Console()
    try:
        args = build_parser().parse_args(argv)
        if args.json == "-":
            console = Console(stderr=True)
        command = args.targets[0]
        if command == "list":
            if len(args.targets) > 1:
                raise UsageError("list takes no further arguments")
            return list_claims(console)
        if command == "show":
            return show_claim(args.targets[1:], args.latex, console, parse_params(args.param), args.dps)
        if command == "compare":
            return compare(args, console)
        if command == "plot":
            return plot(args, console)
        if command == "universality-table":
            return universality_table(args, console)
        if command == "report":
            args.targets = args.targets[1:] or ["all"]
            args.out = args.out or "report.md"
            if args.from_run:
                write_report(args.out, load_run(args.from_run, "--from"))
                return EXIT_OK
        elif args.from_run:
            raise UsageError("--from is an option of 'report'")
        if "all" in args.targets and len(args.targets) > 1:
            raise UsageError("'all' cannot be combined with claim ids")
        return execute(args, console)
    except UsageError as error:
        print(f"verify.py: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("verify.py: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
