"""What a command line asks for, turned into points to run, run, and summed up.

The command line (``verify.py``) parses its options and hands them here as plain values; this module
decides everything that is not rendering: which options a command takes, which claims a target
names, what a grid spec means, which points a run has and at what false-alarm share each is tested
(Bonferroni over the run), which design laws the universality table covers, what a stored run must
look like, and the exit status.  Bad input raises :class:`InputError` with one line naming the
problem.
"""

from __future__ import annotations

import itertools
import json
import os
import platform
import tempfile
from dataclasses import dataclass

import mpmath as mp
import sympy as sp

__all__ = ["InputError", "EXIT_OK", "EXIT_CHANGED", "EXIT_USAGE", "Request", "split_assignment", "parse_params",
           "parse_grid", "device_option", "select", "check_data", "check_law_options", "resolve_points", "theory_line",
           "build_tasks", "universality_ids", "summary", "environment", "load_run", "check_folder", "check_outputs",
           "check_options", "write_text", "write_json", "write_report", "exit_status", "check_trials"]

EXIT_OK, EXIT_CHANGED, EXIT_USAGE = 0, 1, 2
COMMANDS = ("list", "show", "compare", "plot", "universality-table", "stress", "cache")   # targets[0] names a command
MAX_GRID_COUNT = 1000


class InputError(ValueError):
    """Bad input: the command line reports it as one line on stderr and exits with status 2."""


@dataclass
class Request:
    """The options of a run, as the command line parsed them."""

    targets: list
    params: dict
    grid: dict
    tier: str = "default"
    trials: int | None = None
    seed: int = 0
    device: str = "cpu"
    dps: int = 30
    theory_only: bool = False
    data: str = "gaussian"
    dtype: str = "float64"
    claim_sources: tuple = ()   # what engine.claim_sources loaded: worker processes load the same
    cache: str | None = None    # the result cache's folder (engine.cache), None: off
    threads: int | None = None  # BLAS threads per process (engine.runner.threads_per_process when None)
    certify: bool = False       # --certify: certificates for the deterministic claims (engine.certify)

    def __post_init__(self):
        if self.certify:   # without the extra, one line and exit status 2 before anything runs
            from numerics.certified import CertificationUnavailable
            try:
                from engine.certify import check_available
                check_available()
            except CertificationUnavailable as error:
                raise InputError(str(error)) from None


# --- parsing values (never eval) -----------------------------------------------------------------

def positive_int(lowest: int, highest: int | None = None):
    """An argparse type: an integer in [lowest, highest]."""
    import argparse

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
    """'NAME=TEXT' -> (NAME, TEXT), or a one-line InputError naming the option and the form it takes."""
    name, sep, text = item.partition("=")
    name, text = name.strip(), text.strip()
    if not sep or not name or not text:
        raise InputError(f"{option} expects {form}, got {item!r}")
    return name, text


def parse_params(items: list[str]) -> dict[str, str]:
    return dict(split_assignment(item, "--param", "NAME=VALUE") for item in items)


def parse_grid(items: list[str]) -> dict[str, list[str]]:
    """NAME=START:STOP:COUNT[:log] or NAME=V1,V2,... -> {name: [value text, ...]} (exact values, no eval).

    A range has COUNT points, ends included, equally spaced (or in equal ratios with ``:log``; those
    values are rounded to 17 digits)."""
    from numerics.expr import ExpressionError, parse_number
    grid = {}
    for item in items:
        name, spec = split_assignment(item, "--grid", "NAME=START:STOP:COUNT or NAME=V1,V2,...")
        try:
            if ":" not in spec:
                grid[name] = [str(parse_number(v)) for v in spec.split(",")]
                continue
            parts = spec.split(":")
            geometric = len(parts) == 4 and parts[3] == "log"
            if len(parts) != 3 and not geometric:
                raise InputError(f"--grid {name}: a range is START:STOP:COUNT or START:STOP:COUNT:log, got {spec!r}")
            start, stop, count = (parse_number(part) for part in parts[:3])
            if not count.is_integer or count < 1 or count > MAX_GRID_COUNT:
                raise InputError(f"--grid {name}: COUNT must be an integer from 1 to {MAX_GRID_COUNT}, got {parts[2]!r}")
            count, last = int(count), max(int(count) - 1, 1)
            if geometric:
                if not (start > 0 and stop > 0):
                    raise InputError(f"--grid {name}: a :log range needs START and STOP > 0, got {spec!r}")
                values = [repr(float(start * (stop / start) ** sp.Rational(k, last))) for k in range(count)]
                values[0], values[-1] = str(start), str(stop)
                grid[name] = values
            else:
                grid[name] = [str(start + (stop - start) * k / last) for k in range(count)]
        except ExpressionError as error:
            raise InputError(f"--grid {name}: {error}") from None
    return grid


def device_option(text: str) -> str:
    """--device auto|cpu|cuda as the device a run uses, or a one-line InputError (no CUDA, a bad name)."""
    from simulate.device import DeviceError, resolve_device
    try:
        return str(resolve_device(text))
    except DeviceError as error:
        raise InputError(str(error)) from None


# --- what a run consists of ----------------------------------------------------------------------

def select(targets: list[str]):
    """The claims named by ``targets`` (``["all"]``: every registered claim), in order, without repeats."""
    import theorems
    if targets == ["all"]:
        return list(theorems.REGISTRY.values())
    chosen = []
    for target in targets:
        try:
            theorem = theorems.get(target)
        except theorems.UnknownTheorem as error:
            raise InputError(str(error)) from None
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
        raise InputError(str(error)) from None
    if explicit:
        fixed = [theorem.id for theorem in selected if not theorem.samples_design]
        if fixed:
            raise InputError(f"--data: {fixed[0]} samples no design matrix X (it has data of its own), "
                             f"so its data law cannot be chosen")
    return data


def check_law_options(command: str, laws: str, grid, data: str) -> None:
    """A command that chooses the cases and the design laws itself (universality-table) takes no --grid and no
    --data: a one-line InputError; ``laws`` says which laws the command runs instead."""
    if grid:
        raise InputError(f"{command} runs each claim's recorded cases; use a claim id with --data for grids")
    if data != "gaussian":
        raise InputError(f"{command} {laws}; use a claim id with --data for one law")


def _own(theorem, values: dict) -> dict:
    names = {p.name for p in theorem.parameters}
    return {k: v for k, v in values.items() if k in names}


def resolve_points(selected, overrides: dict[str, str], tier: str, grid: dict[str, list[str]] | None = None,
                   notes: list | None = None):
    """(claim, Point) pairs to run, every parameter validated before anything runs.

    Without a grid, each claim's cases with ``overrides`` on top (a case that pins parameters which do not
    combine with them skipped and listed in ``notes``); with a grid, each claim at every grid point (its cases
    are not used), points outside its domain skipped and listed in ``notes``."""
    from theorems.core import ParameterError
    known = {p.name for theorem in selected for p in theorem.parameters}
    unknown = sorted(set(overrides) - known)
    if unknown:
        raise InputError(f"unknown parameter {unknown[0]!r} for the selected claims (known: {', '.join(sorted(known))})")
    resolved = []
    for theorem in selected:
        mine = _own(theorem, overrides)
        if not grid:
            try:
                resolved.extend((theorem, point) for point in theorem.points(mine, tier, notes))
            except ParameterError as error:
                raise InputError(str(error) if str(error).startswith(theorem.id) else f"{theorem.id}: {error}") from None
            continue
        missing = sorted(set(grid) - {p.name for p in theorem.parameters})
        if missing:
            raise InputError(f"{theorem.id} has no parameter {missing[0]!r} to grid over")
        for combo in itertools.product(*grid.values()):
            try:
                params = theorem.resolve({**mine, **dict(zip(grid, combo))}, tier)
            except ParameterError as error:
                if notes is not None:
                    notes.append(f"skipped {theorem.id} at " + ", ".join(f"{k}={v}" for k, v in zip(grid, combo))
                                 + f": {error}")
                continue
            resolved.append((theorem, theorem.point(params)))
    if grid and not resolved:
        raise InputError("no grid point lies in the domain of the selected claims")
    return resolved


def theory_line(theorem, overrides: dict[str, str], dps: int) -> tuple[str, str | None]:
    """'VALUE at PARAMS (D of DPS digits hold at REF; cond C)' at the default point with the
    --param values this claim has, and the precision warning of that point (or None)."""
    from engine.runner import theory_fields
    from theorems.core import REFERENCE_EXTRA_DIGITS, ParameterError
    names = {p.name for p in theorem.parameters}
    try:
        params = theorem.resolve({k: v for k, v in overrides.items() if k in names})
    except ParameterError as error:
        raise InputError(str(error) if str(error).startswith(theorem.id) else f"{theorem.id}: {error}") from None
    fields = theory_fields(theorem, params, dps)
    facts = []
    if fields["theory_digits"] is not None:
        facts.append(f"{fields['theory_digits']} of {dps} digits hold at {dps + min(dps, REFERENCE_EXTRA_DIGITS)}")
    if fields["theory_cond"] is not None:
        cond = fields["theory_cond"]
        facts.append(f"cond {cond:.2g}" if isinstance(cond, float) else f"cond {cond}")
    where = ", ".join(f"{k}={v}" for k, v in params.items())
    return f"{fields['theory']} at {where}" + (f" ({'; '.join(facts)})" if facts else ""), fields["theory_warning"]


def build_tasks(resolved, request: Request, laws: list[str]):
    """One runner Task per point and design law.  Each point's check is tested at its claim's false-alarm
    rate split over every task of the run (Bonferroni), so the whole run alarms with probability <= that
    rate; grids and the quick tier skip the alpha-trend reruns that single default-tier checks make."""
    from engine.runner import Task
    family = len(resolved) * len(laws)
    trends = not request.grid and request.tier != "quick"
    tasks = []
    for theorem, point in resolved:
        check_trials(theorem, request.trials)
        for law in laws:
            own_law = law if theorem.samples_design else "gaussian"
            expected, finding, corrected = point.recorded(own_law)
            trials = request.trials if request.trials is not None else point.trials.get(request.tier)
            tasks.append(Task(theorem.id, point.params, expected, finding, request.tier, trials,
                              request.seed, request.device, request.dps, trends, request.theory_only, own_law,
                              request.dtype, family, corrected=corrected, claim_sources=request.claim_sources,
                              cache=request.cache, threads=request.threads, certify=request.certify,
                              departure=point.departure_for(own_law)))
    return tasks


def check_trials(theorem, trials: int | None) -> None:
    """Refuse --trials above 100 times the most any tier or case of ``theorem`` runs.  More is a typo, not a
    request: the checks draw trials in chunks, so a count like 10**12 would not run out of memory but run for
    days, silently."""
    counts = [*theorem.trials.values(), *(count for case in theorem.all_cases for count in case.trials.values())]
    cap = 100 * max(counts)
    if trials is not None and trials > cap:
        raise InputError(f"--trials {trials}: {theorem.id} runs at most {cap} (100 times the most any of its tiers "
                         f"or cases runs)")


def universality_ids(targets: list[str]) -> list[str]:
    """The claims of ``universality-table [IDS]``: those named, else every claim that samples a design
    (the universality claim itself excepted: it is the table's subject, checked on its own)."""
    import theorems
    return targets or [t.id for t in theorems.REGISTRY.values() if t.samples_design and t.id != "universality"]


def standard_laws() -> list[str]:
    from theorems.universality import STANDARD_LAWS
    return [str(law) for law in STANDARD_LAWS]


# --- the run's record ----------------------------------------------------------------------------

def cache_folder(option: str | None, off: bool) -> str | None:
    """The result cache's folder: --cache, else the environment's or the default (engine.cache); None when off."""
    from engine.cache import OFF, default_location
    if off:
        return None
    folder = option or default_location()
    if folder == OFF:
        return None
    if os.path.exists(folder) and not os.path.isdir(folder):
        raise InputError(f"--cache {folder}: not a folder")
    return folder


def cache_command(words: list[str], folder: str | None, console) -> int:
    """``cache info`` (what is stored, where, how big) or ``cache clear`` (remove the stored rows)."""
    from engine.cache import ResultCache
    if len(words) != 1 or words[0] not in ("info", "clear"):
        raise InputError("cache takes one word: info or clear")
    if folder is None:
        raise InputError("the cache is off (--no-cache or TRANSFER_CHECK_CACHE=off): nothing to show or clear")
    store = ResultCache(folder)
    if words[0] == "clear":
        console.print(f"removed {store.clear()} stored rows from {folder}", highlight=False)
        return EXIT_OK
    info = store.info()
    console.print(f"{info['rows']} stored rows ({info['bytes'] / 1e6:.1f} MB) in {info['location']}", highlight=False)
    for claim, rows in sorted(info["claims"].items()):
        console.print(f"  {claim}\t{rows}", highlight=False)
    return EXIT_OK


def summary(results) -> dict:
    counts, certified = {}, {}
    for r in results:
        counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
        if "certificate" in r:
            certified[r["certificate"]["verdict"]] = certified.get(r["certificate"]["verdict"], 0) + 1
    changed = [r["id"] for r in results if r["as_expected"] is False or certificate_changed(r)]
    return {"verdicts": counts, "changed": changed, **({"certificates": certified} if certified else {})}


def certificate_changed(row) -> bool:
    """A certificate that contradicts the record: proved where a refutation is recorded, or disproved where
    agreement is (engine.certify.recorded_certificate)."""
    return row.get("certificate", {}).get("as_recorded") is False


def environment(request: Request, device) -> dict:
    """Versions, device, seed, tier and precision: what it takes to reproduce the run."""
    import torch
    where = {"device": str(device)}
    if getattr(device, "type", device) == "cuda":   # CUDA random streams depend on the GPU model
        where.update(device_record(torch.device(device)))
    certify = {"certify": True} if request.certify else {}
    return {"tier": request.tier, "seed": request.seed, **where, "dps": request.dps, "trials": request.trials,
            "data": request.data, "dtype": request.dtype, **certify,
            "python": platform.python_version(), "torch": torch.__version__, "mpmath": mp.__version__,
            "sympy": sp.__version__, "platform": platform.platform()}


def device_record(device) -> dict:
    """What a CUDA run's numbers depend on beyond the seed: the GPU model and its generation (random
    streams and reduction orders differ between them), the CUDA and cuDNN builds, and whether torch was
    asked for deterministic kernels."""
    import torch
    props = torch.cuda.get_device_properties(device)
    return {"gpu": props.name, "compute_capability": f"{props.major}.{props.minor}",
            "multiprocessors": props.multi_processor_count, "cuda": torch.version.cuda,
            "cudnn": torch.backends.cudnn.version(),
            "deterministic_algorithms": torch.are_deterministic_algorithms_enabled(),
            "cudnn_deterministic": torch.backends.cudnn.deterministic}


def load_run(path: str, option: str = "--baseline") -> dict:
    """A stored ``--json`` run, or a one-line InputError saying what is wrong with the file."""
    try:
        with open(path) as handle:
            payload = json.load(handle)
    except OSError as error:
        raise InputError(f"{option} {path}: {error.strerror}") from None
    except json.JSONDecodeError as error:
        raise InputError(f"{option} {path}: not JSON ({error.msg}, line {error.lineno})") from None
    if not isinstance(payload, dict) or payload.get("version") != 1 or "results" not in payload:
        raise InputError(f"{option} {path}: not a verify.py --json run (version 1)")
    return payload


def check_folder(option: str, path: str | None) -> None:
    """Fail now, not after an hour of checks, when ``path``'s folder does not exist."""
    if path and path != "-" and not os.path.isdir(os.path.dirname(os.path.abspath(path))):
        raise InputError(f"{option} {path}: no such folder")


def check_outputs(json_path: str | None = None, junit_path: str | None = None, report_path: str | None = None) -> None:
    """check_folder for each file a run is to write: --json, --junit, --out (the Markdown report)."""
    for option, path in (("--json", json_path), ("--junit", junit_path), ("--out", report_path)):
        check_folder(option, path)


# Options that a command does not read are refused rather than ignored, by their names in the parsed arguments.
# These are read by one command alone:
ONE_COMMAND = {"ids": "list", "latex": "show", "from_run": "report", "over": "map", "tolerance": "map", "budget": "map"}
# these by the commands that run checks (list, show and cache run none):
RUN_OPTIONS = frozenset({"grid", "tier", "trials", "seed", "device", "theory_only", "certify", "data", "dtype", "workers",
                         "threads", "scheduler", "cache", "no_cache", "json", "junit", "out", "baseline"})
# and these each command leaves unread besides (a run of claim ids or all, and 'report', read every one; a command
# that refuses an option with a reason of its own, such as map's --grid, checks it itself)
UNREAD = {"list": RUN_OPTIONS | {"param", "dps"}, "show": RUN_OPTIONS,
          "cache": (RUN_OPTIONS - {"cache", "no_cache"}) | {"param", "dps"},
          "compare": {"dps", "theory_only", "certify", "data", "dtype", "workers", "threads", "scheduler", "cache",
                      "no_cache", "out", "baseline"},
          "map": {"json", "junit", "workers", "scheduler", "certify", "baseline"},
          "stress": {"certify", "out", "baseline"}, "universality-table": {"out", "baseline"}, "plot": {"baseline"}}
FLAGS = {"from_run": "--from", "tier": "--quick or --paper"}   # the rest are "--" + the name with "-" for "_"


def check_options(targets: list[str], json_path: str | None = None, junit_path: str | None = None,
                  given: set[str] = frozenset()) -> None:
    """Options that the command (``targets[0]``) cannot honour, and targets it cannot take: one-line InputError.
    ``given`` names the options set to something other than their defaults (their names in the parsed arguments)."""
    command = targets[0]
    if command == "list" and len(targets) > 1:
        raise InputError("list takes no further arguments")
    if junit_path and command in ("list", "show", "compare"):
        raise InputError(f"--junit writes the rows of a run; '{command}' has none")
    unread = UNREAD.get(command, set())
    if command == "report" and "from_run" in given:   # it reports a stored run: nothing runs
        unread = (RUN_OPTIONS - {"json", "junit", "out"}) | {"param", "dps"}
    for name in sorted(given):
        flag = FLAGS.get(name, "--" + name.replace("_", "-"))
        if name in ONE_COMMAND and command != ONE_COMMAND[name]:
            raise InputError(f"{flag} is an option of '{ONE_COMMAND[name]}'")
        if name in unread:
            raise InputError(f"'{command}{' --from' if command == 'report' else ''}' does not read {flag}")
    if json_path == junit_path == "-":
        raise InputError("--json - and --junit - cannot both write to stdout")
    claims = targets[1:] if command == "report" else targets
    if command not in COMMANDS and "all" in claims and len(claims) > 1:
        raise InputError("'all' cannot be combined with claim ids")


def write_text(path: str, text: str, stdout=None) -> None:
    """Write ``text`` to ``path`` ('-': ``stdout``), beside the target and renamed, never half-written."""
    if path == "-":
        import sys
        (stdout or sys.stdout).write(text)
        return
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise InputError(f"cannot write {path}: no folder {folder}")
    with tempfile.NamedTemporaryFile("w", dir=folder, delete=False, suffix=".tmp") as handle:
        handle.write(text)
    os.replace(handle.name, path)


def write_json(path: str, payload: dict) -> None:
    write_text(path, json.dumps(payload, indent=2, default=str) + "\n")


def write_report(path: str, payload: dict) -> None:
    """The run as Markdown, linking the figures (``verify.py plot``) found beside the report."""
    from engine.report import markdown_report
    write_text(path, markdown_report(payload, report_figures(path, payload)))


def report_figures(path: str, payload: dict) -> list[str]:
    """The ``ID.png`` figures (``verify.py plot``) beside a report, for the claims in the run."""
    folder = os.path.dirname(os.path.abspath(path))
    ids = {row["id"] for row in payload["results"]}
    return sorted(name for name in os.listdir(folder) if name.endswith(".png") and name.split(".")[0] in ids) \
        if os.path.isdir(folder) else []


def exit_status(results, complete: bool, changes=()) -> int:
    """0 when every verdict (and certificate) is as recorded and the run finished; 1 when a verdict changed, a
    certificate contradicts the record, a baseline comparison found a change, or the run was cut short."""
    changed = any(r["as_expected"] is False or certificate_changed(r) for r in results) or any(changes)
    return EXIT_CHANGED if changed or not complete else EXIT_OK
