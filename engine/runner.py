"""Running points of claims: in this process, in a pool of local processes, or on a Dask cluster.

A point's random numbers come from a seed derived from the run seed, the claim and
the point's parameters (``Run.seed_for``), never from the order of execution, so
every way of running gives the same numbers (to the last bit where the worker uses
the same BLAS thread count as the serial run; otherwise to rounding, ~1e-15, since
summation order can change).

``run_points`` yields ``(index, row)`` as points finish; a row is the JSON result of
one point (what ``verify.py --json`` writes).
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass
from typing import Callable, Iterator

import mpmath as mp

__all__ = ["PointNotSimulable", "SchedulerUnavailable", "Task", "default_workers", "run_one", "run_point", "run_points",
           "run_task", "threads_per_process"]


class SchedulerUnavailable(RuntimeError):
    """--scheduler cannot be used: dask.distributed is missing or the scheduler cannot be reached (bad input,
    not a failure of a check: a check's own error is a bug and keeps its traceback)."""


class PointNotSimulable(ValueError):
    """A point asks for more than this machine or float64 can hold (a d of a million, gamma = 1e300): bad
    input, reported in one line with the claim and its parameters, not a failure of the check."""


@dataclass(frozen=True)
class Task:
    """Everything a worker needs to run one point (picklable: no callbacks, no tensors)."""

    theorem_id: str
    params: dict              # resolved parameters (sympy numbers)
    expected: str
    finding: str
    tier: str
    trials: int | None
    seed: int
    device: str
    dps: int
    trends: bool
    theory_only: bool
    data: str = "gaussian"    # the design law (--data) for claims that sample X
    dtype: str = "float64"    # --dtype: float32 is honoured by float32-safe claims only
    family: int = 1           # points in the run: each check's false-alarm rate is split over them
    corrected: str = ""       # the corrected statement of the finding whose region holds the point, if any
    claim_sources: tuple = ()  # modules or files that register claims from outside the package (--claims-from)
    cache: str | None = None  # the result cache's folder (engine.cache), or None: always compute
    threads: int | None = None  # BLAS threads of the process that runs it (--threads; threads_per_process)
    certify: bool = False     # --certify: add the claim's certificate (engine.certify) to the row
    departure: float | None = None  # the law's recorded departure at this point (Case.laws), if any


def _json_number(x):
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return None if x is None else str(x)
    return x


def theory_text(theorem, params, dps: int) -> str:
    return _value_text(theorem.theory(params, dps), dps)


def _value_text(value, dps: int) -> str:
    if value is None:
        return "n/a (per draw)"
    return mp.nstr(value, dps) if isinstance(value, mp.mpf) else str(value)


def theory_fields(theorem, params, dps: int) -> dict:
    """The row's theory value and what is known of its accuracy (``Theorem.theory_checked``):
    ``theory_digits``, how many of its ``dps`` digits a second evaluation at higher precision
    confirms (None: not a number, or not re-checked); ``theory_cond``, its relative condition
    number w.r.t. the real parameters, the ones listed in ``theory_cond_excludes`` left out (the
    value is not differentiable in them); ``theory_warning``, one short line when fewer than
    ``dps`` digits hold or float64 would keep fewer than 8 digits at this point."""
    check = theorem.theory_checked(params, dps)
    conditioning = check.conditioning
    return {"theory": _value_text(check.value, dps), "theory_digits": check.confirmed_digits,
            "theory_cond": None if conditioning is None else _json_number(float(f"{conditioning.cond:.3g}")),
            "theory_cond_excludes": [] if conditioning is None else sorted(conditioning.not_differentiable),
            "theory_warning": check.warning()}


def _checked(theorem, params, run):
    """The claim's check, or an inconclusive outcome when a sampled design was singular: the linear
    claims assume X X^T (or X^T X) invertible, which non-Gaussian laws (sparse, Rademacher) can
    violate at small sizes; the row says so instead of failing the run.  A point that asks for more memory
    or range than there is raises PointNotSimulable, which the command line reports in one line."""
    import torch
    from engine.render import format_params
    from simulate.device import exhausted_resource
    from theorems.core import Outcome, as_float
    try:
        return theorem.check(theorem, params, run)
    except torch.linalg.LinAlgError as error:
        if not theorem.samples_design:
            raise
        first = str(error).splitlines()[0]
        return Outcome("inconclusive", f"a sampled {run.data} design is singular, which the claim's full-rank "
                                       f"assumption excludes (raise d or the density): {first}")
    except (MemoryError, OverflowError, TypeError, RuntimeError) as error:
        reason = exhausted_resource(error)
        if reason is None:
            raise
        raise PointNotSimulable(f"{theorem.id} at {format_params(as_float(params))} cannot be simulated here: "
                                f"{reason}") from None


def run_one(theorem, point, run, theory_only: bool, certify: bool = False) -> dict:
    """One point: the claimed value, the Monte-Carlo check and its verdict, as a JSON row; with ``certify``,
    the claim's certificate too (``certificate``: engine.certify), timed apart from the row's ``seconds``."""
    from theorems.core import as_float
    start = time.perf_counter()
    params = point.params
    result = {"id": theorem.id, "params": as_float(params), **theory_fields(theorem, params, run.dps),
              "quantity": theorem.quantity, "limits": theorem.limits or None, "expected": point.expected,
              "finding": point.finding or None,
              "data": str(run.data) if theorem.samples_design else None,
              "dtype": str(run.dtype_for(theorem)).removeprefix("torch.")}
    if theory_only:
        result.update(verdict="inconclusive", mc=None, z=None, detail="Monte-Carlo not run (--theory-only)",
                      effect=None, as_expected=None)
    else:
        outcome = _checked(theorem, params, run)
        if theorem.samples_design:
            outcome.sizes = {**outcome.sizes, "data": str(run.data)}
        mc = None
        if outcome.mean is not None:
            mc = {"mean": outcome.mean, "se": outcome.se, "trials": outcome.trials, "reference": outcome.reference,
                  "sizes": outcome.sizes, **outcome.extra}
        from engine.verdict import accepted_verdicts, law_verdicts, row_effect
        accepted, expectation = accepted_verdicts(point.expected, point.corrected, outcome)
        if point.departure is not None:   # a law's recorded break with its size: expected where it is resolved
            accepted, expectation = law_verdicts(point.expected, point.departure, outcome,
                                                 run.alarm(theorem.false_alarm))
        result.update(verdict=outcome.verdict, mc=mc, z=_json_number(outcome.z), detail=outcome.detail,
                      effect=row_effect(outcome, run.alarm(theorem.false_alarm)),
                      as_expected=outcome.verdict in accepted, accepted=accepted, expectation=expectation or None,
                      corrected=outcome.corrected, convergence=outcome.convergence)
    result["seconds"] = round(time.perf_counter() - start, 3)
    if certify:
        from engine.certify import certify_point, recorded_certificate
        certificate = certify_point(theorem, params, run)
        result["certificate"] = {**certificate, "as_recorded": recorded_certificate(certificate, point.expected)}
    return result


def threads_per_process(requested: int | None = None) -> int:
    """BLAS threads for each process that runs checks: ``requested`` (--threads), else 1.

    One, because a second thread gains 1.3x on an idle machine and loses 2.4x beside one busy process (torch's
    pool busy-waits for the core the other holds; docs/scaling.md); the cores are used by running points in
    parallel processes instead (``default_workers``).  Fixed, not read from the machine's load: the thread
    count changes the last bits of a sum, and a seed must give the same numbers whatever else runs."""
    return requested or 1


def default_workers(tasks: list[Task]) -> int:
    """Processes for a run when --workers is not given: one per core, at most one per point, and one (this
    process) when a worker could not rebuild a claim the way this process has it: a claim registered or
    replaced here (a notebook cell, a test's monkeypatch) rather than by importing its module."""
    if not all(_rebuilt_by_import(task.theorem_id) for task in tasks):
        return 1
    return max(1, min(os.cpu_count() or 1, len(tasks)))


def _rebuilt_by_import(theorem_id: str) -> bool:
    """Whether a fresh process gets this process's claim by importing the package and the --claims-from
    sources: the claim is a global of its check's module, or that module is a loaded claim source."""
    import sys

    import theorems
    from engine.claim_sources import loaded_modules
    theorem = theorems.get(theorem_id)
    module = sys.modules.get(theorem.check.__module__)
    if module is None or module.__name__ == "__main__":
        return False
    return any(value is theorem for value in vars(module).values()) or any(m is module for m in loaded_modules())


def run_task(task: Task, progress: Callable[[str], None] = lambda message: None, threads: int | None = None) -> dict:
    """Run one point from scratch (in this process or a worker's)."""
    import torch

    import theorems
    from theorems.core import Point, Run, parse_data
    from simulate.device import keep_freed_host_memory, resolve_device
    torch.set_default_dtype(torch.float64)
    torch.set_num_threads(threads or threads_per_process(task.threads))
    keep_freed_host_memory()
    if task.claim_sources:   # a worker process starts with the built-in claims only
        from engine.claim_sources import load_claim_sources
        load_claim_sources(task.claim_sources, entry_points=False)
    theorem = theorems.get(task.theorem_id)
    run = Run(tier=task.tier, trials=task.trials, seed=task.seed, device=resolve_device(task.device), dps=task.dps,
              trends=task.trends, progress=progress, data=parse_data(task.data), dtype=task.dtype,
              family=task.family)
    row = run_one(theorem, Point(task.params, task.expected, task.finding, corrected=task.corrected,
                                 departure=task.departure), run, task.theory_only, task.certify)
    return {**row, "cached": False}


def _pool_task(task: Task, threads: int) -> dict:
    return run_task(task, threads=threads)


def run_points(tasks: list[Task], *, workers: int = 1, scheduler: str | None = None,
               progress: Callable[[str], None] = lambda message: None) -> Iterator[tuple[int, dict]]:
    """Yield ``(index, row)`` for each task as it finishes.

    Points the result cache holds (``Task.cache``; engine.cache) come first, read in this process; the
    others run and are stored as they finish.  ``workers`` > 1 runs them in that many local processes
    (each with ``threads_per_process`` BLAS threads); ``scheduler`` sends them to the Dask cluster at
    that address (uncached: its workers' machines are not this one).  Closing the iterator (Ctrl-C)
    cancels what has not started."""
    store = _cache(tasks) if not scheduler else None
    keys, todo = {}, []
    for index, task in enumerate(tasks):
        if store is not None:
            keys[index] = _cache_key(store, task)
            row = store.load(keys[index])
            if row is not None:
                yield index, row
                continue
        todo.append(index)
    pending = [tasks[index] for index in todo]
    if scheduler:
        computed = _run_dask(pending, scheduler)
    elif workers > 1 and len(pending) > 1:
        computed = _run_pool(pending, min(workers, len(pending)))
    else:
        computed = ((index, run_task(task, progress=progress)) for index, task in enumerate(pending))
    try:
        for local, row in computed:
            if store is not None:
                store.store(keys[todo[local]], row)
            yield todo[local], row
    finally:
        computed.close()


def run_point(task: Task, progress: Callable[[str], None] = lambda message: None) -> dict:
    """One point in this process, through the result cache."""
    return next(run_points([task], progress=progress))[1]


def _cache(tasks):
    if not tasks or not tasks[0].cache:
        return None
    from engine.cache import ResultCache
    return ResultCache(tasks[0].cache)


def _cache_key(store, task: Task) -> str:
    """The task's cache key, for the device and BLAS threads it will run with."""
    import theorems
    from simulate.device import resolve_device
    return store.key(task, theorems.get(task.theorem_id), resolve_device(task.device), threads_per_process(task.threads))


def _run_pool(tasks, workers):
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed
    from concurrent.futures.process import BrokenProcessPool
    threads = threads_per_process(tasks[0].threads if tasks else None)
    # spawn, not fork: a forked child inherits torch's thread pools in an undefined state
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"))
    done = 0
    try:
        futures = {pool.submit(_pool_task, task, threads): index for index, task in enumerate(tasks)}
        for future in as_completed(futures):
            yield futures[future], future.result()
            done += 1
    except BrokenProcessPool:   # the kernel's out-of-memory killer is the usual cause; the kill leaves no message
        raise PointNotSimulable(f"a worker process died during the run after {done} of the {len(tasks)} points it was "
                                "computing (a process killed for memory dies like this: fewer --trials, smaller sizes "
                                "or fewer --workers)") from None
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


def _run_dask(tasks, address):
    try:
        from dask.distributed import Client, as_completed
    except ImportError:
        raise SchedulerUnavailable("--scheduler needs dask.distributed: pip install -e '.[dask]'") from None
    try:
        client = Client(address, timeout="10s")
    except (OSError, TimeoutError) as error:
        raise SchedulerUnavailable(f"--scheduler {address}: cannot reach the scheduler ({error})") from None
    try:
        futures = client.map(run_task, tasks, pure=False)
        index = {future.key: i for i, future in enumerate(futures)}
        for future in as_completed(futures):
            yield index[future.key], future.result()
    finally:
        client.close()
