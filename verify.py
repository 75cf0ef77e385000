#!/usr/bin/env python
"""Check the claims of transfer-learning papers against the procedures they describe.

    python verify.py list [--ids]         ids, titles, sources (--ids: the ids alone)
    python verify.py show ID              statement, derivations, parameters, verdict rule
    python verify.py all [options]        run every check
    python verify.py ID [ID ...]          run some checks
    python verify.py compare [finetune]   two papers' predictions on one simulation
    python verify.py universality-table [ID ...]   every linear claim's verdict under each design law
    python verify.py stress ID|all        each linear claim with each assumption of its proof broken
    python verify.py plot FIGURE|ID       draw a paper's figure from the checks (--grid, --out DIR)
    python verify.py report [ID ...|all]  run the checks and write a Markdown report (--out, --from run.json)
    python verify.py map ID --over NAME=A:B[:N] [--over ...]   where the claim holds within --tolerance
    python verify.py cache info|clear     the stored rows that reruns reuse (see --cache)

Exit status: 0 when every verdict is as recorded with its claim, 1 when any
verdict changed, 2 for bad input.  This file only parses and renders; the
claims live in ``theorems/``.  Installed, it is also the command
``transfer-check`` and ``python -m verify``.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys

try:   # before the imports below reach numerics or simulate, which another project's package may shadow
    from engine import MixedInstallation, require_one_installation
    require_one_installation()
except ImportError as error:   # another project's package of one of our names comes first on sys.path
    print(f"verify.py: error: {error}" + ("" if "virtual environment" in str(error) else
          ": install transfer-theorem-checker into its own virtual environment"), file=sys.stderr)
    raise SystemExit(2) from None
from engine.session import (EXIT_CHANGED, EXIT_OK, EXIT_USAGE, InputError, Request, check_data, check_folder,  # noqa: F401
                            cache_folder, check_law_options, check_options, check_outputs, device_option, exit_status, load_run,
                            parse_grid, parse_params, positive_int, resolve_points, select, write_json, write_report, write_text)
from engine.render import verdict_cell  # noqa: F401  (tests and notebooks render a row's verdict through verify)

UsageError = InputError   # bad input: one line on stderr, exit status 2


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
    parser.add_argument("--trials", type=positive_int(2), help="independent Monte-Carlo trials (overrides the tier)")
    parser.add_argument("--seed", type=positive_int(0), default=0, help="run seed (default 0)")
    parser.add_argument("--device", default="auto", help="auto, cpu or cuda (default auto)")
    parser.add_argument("--dps", type=positive_int(5, 10000), default=30, help="decimal digits of the theory value (default 30)")
    parser.add_argument("--theory-only", action="store_true", help="evaluate the claims without Monte-Carlo")
    parser.add_argument("--certify", action="store_true", help="also prove or disprove the deterministic claims rigorously (arb ball arithmetic, exact sympy; needs the certify extra)")
    parser.add_argument("--data", default="gaussian", metavar="NAME",
                        help="law of the design entries in the linear claims' Monte-Carlo checks (mean 0, variance 1): "
                             "gaussian (default), rademacher, uniform, student-t[:NU] (NU > 4, default 5), "
                             "sparse[:P] (Bernoulli(P) x Gaussian, default P = 1/2); or a law that breaks an assumption "
                             "(see 'stress'): gamma[:K], shifted[:MU], sphere, zero-rows[:Q], anisotropic[:A]")
    parser.add_argument("--dtype", choices=("float64", "float32"), default="float64",
                        help="arithmetic of the Monte-Carlo checks: float32 is used by the claims declared "
                             "float32-safe (see 'show ID'); the others always compute in float64 (default float64)")
    parser.add_argument("--workers", type=positive_int(1, 256),
                        help="run the points in N local processes (default: one per core; same numbers as a serial run)")
    parser.add_argument("--threads", type=positive_int(1, 256), help="BLAS threads per process (default: 1 per "
                        "worker, since busy-waiting thread pools collapse on a shared machine; see docs/scaling.md)")
    cache = parser.add_mutually_exclusive_group()
    cache.add_argument("--cache", metavar="DIR", help="store and reuse finished points in DIR (default: "
                       "$TRANSFER_CHECK_CACHE, else ~/.cache/transfer-theorem-checker)")
    cache.add_argument("--no-cache", action="store_true", help="compute every point; store nothing")
    parser.add_argument("--scheduler", metavar="ADDRESS", help="run the points on the Dask cluster at ADDRESS "
                                                                "(e.g. tcp://host:8786; needs the dask extra)")
    parser.add_argument("--json", metavar="PATH", help="write results as JSON to PATH ('-' for stdout)")
    parser.add_argument("--junit", metavar="PATH", help="write results as JUnit XML to PATH ('-' for stdout): one testcase "
                                                       "per case, a failure where the verdict changed")
    parser.add_argument("--ids", action="store_true", help="with list: print the claim ids alone, one per line")
    parser.add_argument("--claims-from", action="append", default=[], metavar="MODULE_OR_PATH",
                        help="also load the claims that a module (dotted name) or a .py file registers (repeatable)")
    parser.add_argument("--latex", action="store_true", help="with show: print only the LaTeX statement")
    parser.add_argument("--out", metavar="PATH", help="write a Markdown report of the run to PATH ('-' for stdout); "
                                                     "'report' defaults it to report.md")
    parser.add_argument("--from", dest="from_run", metavar="PATH", help="with report: report a stored --json run "
                                                                         "instead of running the checks")
    parser.add_argument("--baseline", metavar="PATH", help="compare with a stored --json run; exit 1 if a verdict flipped, "
                                                          "a theory value or a Monte-Carlo mean moved")
    parser.add_argument("--over", action="append", default=[], metavar="NAME=A:B[:N][:log]",
                        help="with map: a mapped parameter, N coarse steps from A to B (default 5); at most two")
    parser.add_argument("--tolerance", type=float, metavar="TAU", help="with map: the claim holds "
                        "where its error (relative; absolute where the claim is 0) is within TAU (default 0.05)")
    parser.add_argument("--budget", type=positive_int(2, 2000), help="with map: the most points it "
                        "runs (default 40); each is tested at the false-alarm rate / budget")
    parser.set_defaults(tier="default")
    return parser


def _request(args, targets=None) -> Request:
    return Request(targets or args.targets, parse_params(args.param), parse_grid(args.grid), args.tier, args.trials,
                   args.seed, device_option(args.device), args.dps, args.theory_only, args.data, args.dtype,
                   args.claim_sources, cache_folder(args.cache, args.no_cache), args.threads, args.certify)


def run_checks(args, console, laws=None) -> tuple[dict, bool]:
    """The run as a --json payload, and whether every selected point finished (Ctrl-C keeps the rows so far).
    ``laws`` (the universality table) runs every point once per design law instead of once with --data."""
    import torch
    from engine import session
    request = _request(args)
    selected = select(request.targets)
    explicit = (request.targets != ["all"] and request.data != "gaussian") or laws is not None
    data = check_data(request.data, selected, explicit)
    notes = []
    resolved = resolve_points(selected, request.params, request.tier, request.grid, notes)
    tasks = session.build_tasks(resolved, request, laws or [str(data)])
    results, complete = execute_tasks(tasks, args, console)
    payload = {"version": 1, "environment": session.environment(request, torch.device(request.device)),
               "results": results, "skipped": notes, "summary": session.summary(results)}
    from engine.render import render_law_table, render_table
    render_law_table(payload, laws, console) if laws else render_table(payload, console)
    return payload, complete


def execute_tasks(tasks, args, console) -> tuple[list[dict], bool]:
    """Run the tasks (serially, in --workers processes or on --scheduler) with a progress bar and its ETA; the
    finished rows in task order, and whether all finished (Ctrl-C stops early and keeps what finished)."""
    from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn
    from engine.render import is_live, log_line
    from engine.runner import PointNotSimulable, SchedulerUnavailable, default_workers, run_points
    finished = {}
    live = is_live(console)   # a live bar on a terminal; in a log (CI, nohup, a pipe) one line per finished row
    progress = Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                        TimeElapsedColumn(), TextColumn("eta"), TimeRemainingColumn(), console=console, transient=True,
                        disable=not live)
    label = lambda index: tasks[index].theorem_id if index < len(tasks) else ""   # noqa: E731
    workers = args.workers or default_workers(tasks)
    serial = workers == 1 and not args.scheduler
    with progress:
        bar = progress.add_task(tasks[0].theorem_id, total=len(tasks))
        points = run_points(tasks, workers=workers, scheduler=args.scheduler,
                            progress=lambda message: progress.update(bar, description=f"{label(len(finished))}: {message}"))
        try:
            for index, row in points:
                finished[index] = row
                progress.advance(bar)
                progress.update(bar, description=label(len(finished)) if serial else f"{len(finished)} finished")
                if not live:
                    print(log_line(row, len(finished), len(tasks)), file=sys.stderr, flush=True)
        except KeyboardInterrupt:
            points.close()
            console.print(f"[yellow]interrupted: showing the {len(finished)} finished rows[/]")
        except (SchedulerUnavailable, PointNotSimulable) as error:
            points.close()
            raise UsageError(str(error)) from None
    return [finished[index] for index in sorted(finished)], len(finished) == len(tasks)


def execute(args, console) -> int:
    """Run the selected checks, render them, and write what was asked for; the exit status."""
    baseline = load_run(args.baseline) if args.baseline else None
    check_outputs(args.json, args.junit, args.out)
    payload, complete = run_checks(args, console)
    if args.out:
        write_report(args.out, payload)
    changes = []
    if baseline is not None:
        from engine.baseline import compare_runs
        from engine.render import render_baseline
        differences = compare_runs(baseline, payload)
        render_baseline(differences, args.baseline, console)
        changes = [d for d in differences if d.is_change]
    write_run(args, payload, complete, changes)
    return exit_status(payload["results"], complete, changes)


def write_run(args, payload: dict, complete: bool = True, changes=()) -> None:
    """The run's --json and --junit files (their folders were checked before the run by check_outputs)."""
    from engine.junit import junit_xml
    if args.json:
        write_json(args.json, payload)
    if args.junit:
        write_text(args.junit, junit_xml(payload, complete, changes))


def universality_table(args, console) -> int:
    """``universality-table [IDS]``: every linear claim's cases under every standard design law."""
    from engine.session import exit_status, standard_laws, universality_ids
    check_law_options("universality-table", "runs every standard law", args.grid, args.data)
    args.targets = universality_ids(args.targets[1:])
    check_outputs(args.json, args.junit)
    payload, complete = run_checks(args, console, laws=standard_laws())
    write_run(args, payload, complete)
    return exit_status(payload["results"], complete)


def stress(args, console) -> int:
    """``stress ID|all``: each claim under the law breaking each assumption of its proof (engine/stress.py)."""
    from engine.stress import stress_command
    return stress_command(args, _request(args, args.targets[1:] or ["all"]), console, execute_tasks, write_run)


def compare(args, console) -> int:
    """Render engine.compare: one row per setting, each paper's prediction against the trained networks."""
    import contextlib
    from engine.compare import run_comparison
    from engine.render import is_live, render_comparison
    if args.grid:
        raise UsageError("compare takes --param lists (e.g. --param sigmas=0,1), not --grid")
    status = console.status("comparing") if is_live(console) else None   # live on a terminal only
    with status or contextlib.nullcontext():
        title, rows, payload = run_comparison(args.targets[1:] or ["finetune"], _request(args), args.trials,
                                              status.update if status else (lambda message: None))
    render_comparison(title, rows, console)
    if args.json:
        write_json(args.json, payload)
    return EXIT_OK


def plot(args, console) -> int:
    """Run a figure's grid (or a claim over --grid) and draw it: PNG, SVG and the plotted data as JSON."""
    from engine.figures import FIGURES, draw, figure_for, layout, plotted_data
    from theorems.core import ParameterError
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
    check_outputs(args.json, args.junit)
    payload, complete = run_checks(args, console)
    write_run(args, payload, complete)
    data = plotted_data(figure, grid, parse_params(list(figure.params)), payload)
    write_json(os.path.join(out_dir, f"{figure.name}.json"), data)
    for path in draw(data, out_dir):
        console.print(f"wrote {path}", highlight=False)
    return exit_status(payload["results"], complete)


def map_claim(args, console) -> int:
    """``map ID --over ...``: the claim's validity map, drawn (PNG, SVG) and stored (JSON) in --out."""
    from rich.progress import Progress
    from engine import maps
    from engine.render import is_live, render_map
    if len(args.targets) != 2 or args.grid or args.theory_only:   # a map's cells are verdicts of the check
        raise UsageError("map takes one claim id and one or two --over NAME=A:B[:N] (no --grid; no --theory-only, "
                         "which leaves nothing to map)")
    theorem, request = select(args.targets[1:])[0], _request(args, targets=args.targets[1:])
    try:
        axes, tolerance, budget = maps.parse_map(theorem, args.over, request.params, args.tolerance, args.budget)
        stem = os.path.join(args.out or "maps", maps.stem(theorem, axes))
        os.makedirs(os.path.dirname(stem), exist_ok=True)
        with Progress(console=console, transient=True, disable=not is_live(console)) as progress:   # with its ETA
            bar = progress.add_task(f"{theorem.id} map", total=budget)
            data = maps.run_map(theorem, axes, request, tolerance, budget, stem + ".json",
                                lambda done, planned, row: progress.update(bar, completed=done, total=planned))
    except ValueError as error:   # a ParameterError too
        raise UsageError(f"map {theorem.id}: {error}") from None
    write_json(stem + ".json", data)
    render_map(data, console)
    for path in maps.draw_map(data, theorem, axes, stem) if importlib.util.find_spec("matplotlib") else ():
        console.print(f"wrote {path}", highlight=False)
    return EXIT_CHANGED if data["changed"] else EXIT_OK


def show_claim(targets, latex_only: bool, console, overrides: dict[str, str] | None = None, dps: int = 30) -> int:
    import sympy as sp
    from engine.power import power_lines
    from engine.render import render_claim
    from engine.session import theory_line
    if not targets:
        raise UsageError("show needs a claim id (see 'python verify.py list')")
    unknown = sorted(set(overrides or {}) - {p.name for theorem in select(targets) for p in theorem.parameters})
    if unknown:
        raise UsageError(f"unknown parameter {unknown[0]!r} for the claims shown")
    for theorem in select(targets):
        if latex_only:
            console.print(sp.latex(theorem.symbolic().statement), markup=False, highlight=False)
            continue
        render_claim(theorem, *theory_line(theorem, overrides or {}, dps), power_lines(theorem.id), console)
    return EXIT_OK


def main(argv=None) -> int:
    """The command line (also the console script ``transfer-check`` and ``python -m verify``): the exit status."""
    from rich.console import Console
    console = Console()   # rich honours NO_COLOR (no colours) and FORCE_COLOR (colours in a log)
    try:
        require_one_installation()
        parser = build_parser()
        args = parser.parse_args(argv)
        command = args.targets[0]
        check_options(args.targets, args.json, args.junit, {k for k, v in vars(args).items() if v != parser.get_default(k)})
        if "-" in (args.json, args.junit):
            console = Console(stderr=True)
        from engine.claim_sources import load_claim_sources
        args.claim_sources = load_claim_sources(args.claims_from)
        if command == "cache":
            from engine.session import cache_command
            return cache_command(args.targets[1:], cache_folder(args.cache, args.no_cache), console)
        if command == "list":
            from engine.render import render_list
            return render_list(select(["all"]), console, ids_only=args.ids) or EXIT_OK
        if command == "show":
            return show_claim(args.targets[1:], args.latex, console, parse_params(args.param), args.dps)
        if command in ("compare", "plot", "universality-table", "map", "stress"):
            return {"compare": compare, "plot": plot, "universality-table": universality_table, "map": map_claim,
                    "stress": stress}[command](args, console)
        if command == "report":
            args.targets = args.targets[1:] or ["all"]
            args.out = args.out or "report.md"
            if args.from_run:
                check_outputs(junit_path=args.junit, report_path=args.out)
                stored = load_run(args.from_run, "--from")
                write_report(args.out, stored)
                write_run(args, stored)
                return EXIT_OK
        return execute(args, console)
    except (UsageError, MixedInstallation) as error:
        print(f"verify.py: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("verify.py: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:   # `verify.py list | head`: the reader left; say nothing more (Python's own advice)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141


if __name__ == "__main__":
    sys.exit(main())
