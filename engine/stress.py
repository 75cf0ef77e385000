"""``verify.py stress``: the linear claims with the assumptions of their proofs broken on purpose.

Each claim lists what its proof assumes about the rows of the design (``Theorem.input_assumptions``, words of
``theorems.core.INPUT_ASSUMPTIONS``); each word names the design law that breaks it while keeping what can be
kept.  ``stress`` runs every such claim once per listed assumption, under that law, and prints one row each:
the assumption broken, the law, the verdict, the effect (the claim's error with its interval at the run's
false-alarm level) and whether that is what the claim records for the law (``Case.laws``; unrecorded laws
are expected to behave as the Gaussian record says, so that a rerun flags only changes).

Which case: a claim's *stress case* is its first case whose recorded verdict is ``agree`` (its first case when
none is): a broken assumption shows as a departure from agreement, while a recorded refutation would mostly
stay refuted whatever the law.  One case per claim keeps the default tier in minutes; the universality table
(``universality-table``) runs every case under the standardised laws.

The rows form one run: each is tested at the claims' false-alarm rate split over the rows (Bonferroni).
Then the identities the proofs use along the way are measured under every law (``identity_table``).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from engine.session import InputError, check_trials

__all__ = ["IDENTITIES", "IDENTITY_SIZES", "IDENTITY_SAMPLES", "Identity", "StressRow", "stress_ids", "stress_case",
           "plan", "build_tasks", "identity_table", "stress_command"]


@dataclass(frozen=True)
class Identity:
    """A fact about Gaussian designs that a proof uses, as a quantity ``simulate.law_comparison.identity_draws``
    measures per draw, and its Gaussian value at the sizes of ``IDENTITY_SIZES``."""

    name: str              # the key of identity_draws
    label: str             # a short column header
    statement: str
    used_by: str           # where the proofs and the checks use it
    reference: object      # (n, d) -> its Gaussian expectation, an mpmath number (numerics.random_matrix)


def _fraction(n, d):
    from numerics.random_matrix import projection_fraction
    return projection_fraction(n, d)


def _inverse_wishart(n, d):
    from numerics.random_matrix import inverse_wishart_trace
    return inverse_wishart_trace(n, d)


def _inverse_chi2(n, d):
    import mpmath as mp
    return 1 / (mp.mpf(n) - 2)


IDENTITIES = (
    Identity("P_row e1", "P11", "E e1^T P_row e1 = n/d", "Features are fate eq. (96) (double-descent, finetune's "
             "E||P_perp beta_s||^2 = 1 - n/d); the mean of Shachaf et al. eq. (2) (finetune-linear-regression)", _fraction),
    Identity("P_row u", "u'Pu", "E u^T P_row u = n/d, u = (1, ..., 1)/sqrt(d)", "as above, along the direction shifted:MU "
             "moves the mean to", _fraction),
    Identity("P_row e1.e2", "P21", "E e2^T P_row e1 = 0", "with the two above, E P_row = (n/d) I (finetune's eq. (143)-(144))",
             lambda n, d: 0),
    Identity("tr (X X^T)^-1", "trG^-1", "E tr (X X^T)^-1 = n/(d - n - 1)", "inverse Wishart mean: double-descent's and "
             "transferability-linear's exact finite sizes (eqs. 97-102), depth-rescaling's theory column", _inverse_wishart),
    Identity("tr (X'^T X')^-1", "trG'^-1", "E tr (X'^T X')^-1 = n/(d - n - 1) for a d x n design X'", "the same for more samples "
             "than dimensions (double-descent at gamma > 1)", _inverse_wishart),
    Identity("1/||X e1||^2", "1/|Xe1|2", "E 1/||X e1||^2 = 1/(n - 2)", "E 1/chi^2_n, eq. (120): linear-transfer's eq. (12), "
             "ridge-transfer's chi integrals (eqs. 129-130)", _inverse_chi2),
    Identity("1/||X u||^2", "1/|Xu|2", "E 1/||X u||^2 = 1/(n - 2)", "as above, along u", _inverse_chi2),
)
IDENTITY_SIZES = (10, 30)   # n x d: small, where the finite-size departures are large enough to see
IDENTITY_SAMPLES = {"quick": 4000, "default": 20000, "paper": 100000}   # draws per law (20 000: ~2 s per law)
IDENTITY_ALARM = 1e-3       # false-alarm probability of the whole identity table (Bonferroni over its cells)


def stress_ids(targets: list[str]):
    """The claims ``stress`` runs: those named, each of which must list input assumptions, or with ``all``
    every claim that lists them."""
    from engine.session import select
    if "all" in targets and len(targets) > 1:
        raise InputError("'all' cannot be combined with claim ids")
    if targets == ["all"]:
        return [theorem for theorem in select(["all"]) if theorem.input_assumptions]
    chosen = select(targets)
    bare = [theorem.id for theorem in chosen if not theorem.input_assumptions]
    if bare:
        raise InputError(f"stress: {bare[0]} lists no input assumptions to break (see 'verify.py show ID'; "
                         f"'verify.py stress all' runs every claim that lists them)")
    return chosen


def stress_case(theorem, tier: str):
    """The claim's stress case (module docstring): the declared Case and its resolved Point, with what it records
    per law."""
    pairs = [(case, theorem.point(theorem.resolve(case.params, tier), case.laws)) for case in theorem.all_cases]
    return next((pair for pair in pairs if pair[1].expected == "agree"), pairs[0])


@dataclass(frozen=True)
class StressRow:
    theorem: object
    case: str           # the stress case's own parameters, as declared
    point: object
    assumption: str     # the word broken
    law: str            # the --data law that breaks it


def plan(selected, tier: str) -> list[StressRow]:
    """One row per claim and listed assumption, in the claims' order and their lists' order."""
    from theorems.core import INPUT_ASSUMPTIONS
    rows = []
    for theorem in selected:
        case, point = stress_case(theorem, tier)
        label = ", ".join(f"{k}={v}" for k, v in case.params.items()) or "defaults"
        rows.extend(StressRow(theorem, label, point, word, INPUT_ASSUMPTIONS[word].law)
                    for word in theorem.input_assumptions)
    return rows


def build_tasks(rows: list[StressRow], request):
    """A runner Task per row, expected to get what the claim records for its law at its stress case."""
    from engine.runner import Task
    tasks = []
    for row in rows:
        check_trials(row.theorem, request.trials)
        expected, finding, corrected = row.point.recorded(row.law)
        tasks.append(Task(row.theorem.id, row.point.params, expected, finding, request.tier, request.trials,
                          request.seed, request.device, request.dps, False, False, row.law, request.dtype, len(rows),
                          corrected=corrected, claim_sources=request.claim_sources, cache=request.cache,
                          threads=request.threads, departure=row.point.departure_for(row.law)))
    return tasks


def identity_table(seed: int, laws=None, samples: int = IDENTITY_SAMPLES["default"]) -> dict:
    """Every identity of ``IDENTITIES`` under every design law (``laws``: Distributions; default every law of
    simulate.data), as ``{"sizes", "samples", "legend", "cells"}``: one cell per identity and law, ``{"identity",
    "label", "law", "mean", "se", "reference", "effect", "z", "holds"}``, the effect the relative departure
    (absolute where the Gaussian value is 0) with its interval, ``holds`` False where a two-sided
    skewness-corrected z-test at IDENTITY_ALARM split over the cells rejects it, None where the expectation is
    infinite (a draw was singular: ``infinite_fraction`` of them)."""
    import torch

    from engine.verdict import effect_size
    from simulate.data import DISTRIBUTIONS, Distribution
    from simulate.device import generator
    from simulate.law_comparison import identity_draws
    from simulate.stats import estimate, mean_z, z_critical
    laws = laws or [Distribution(name) for name in DISTRIBUTIONS]
    n, d = IDENTITY_SIZES
    cells_total = len(laws) * len(IDENTITIES)
    critical = z_critical(IDENTITY_ALARM, comparisons=cells_total)
    cells = []
    for law in laws:
        # every law from the same stream: the laws built on Gaussian draws (sphere, shifted) share them
        draws = identity_draws(law, n, d, samples, generator(seed * 1000 + 23, torch.device("cpu")))
        for identity in IDENTITIES:
            values, reference = draws[identity.name], float(identity.reference(n, d))
            cell = {"identity": identity.name, "label": identity.label, "law": str(law), "reference": reference}
            if not bool(torch.isfinite(values).all()):
                singular = float((~torch.isfinite(values)).double().mean())
                cells.append({**cell, "mean": math.inf, "se": None, "effect": None, "z": None, "holds": None,
                              "infinite_fraction": singular})
                continue
            est = estimate(values)
            z = mean_z(est, reference)
            cells.append({**cell, "mean": est.mean, "se": est.se, "z": z, "holds": abs(z) <= critical,
                          "effect": effect_size(est.mean, est.se, reference, critical)})
    legend = [{"label": i.label, "statement": i.statement, "used_by": i.used_by} for i in IDENTITIES]
    return {"sizes": [n, d], "samples": samples, "legend": legend, "cells": cells}


def stress_command(args, request, console, execute_tasks, write_run) -> int:
    """The command: check the options, run the rows (``execute_tasks`` of verify.py: processes, progress),
    measure the identities, render, write --json/--junit; the exit status."""
    import torch

    from engine import session
    from engine.render import render_stress
    if args.grid or args.param or args.data != "gaussian" or args.theory_only:
        raise InputError("stress runs each claim's stress case under the laws that break its assumptions: it takes "
                         "no --param, --grid, --data or --theory-only (use a claim id with --data for one law)")
    session.check_outputs(args.json, args.junit)
    rows = plan(stress_ids(request.targets), request.tier)
    start = time.perf_counter()
    results, complete = execute_tasks(build_tasks(rows, request), args, console)
    broken = {(row.theorem.id, row.law): row for row in rows}   # a claim's words name distinct laws
    for result in results:
        row = broken[result["id"], result["data"]]
        result.update(assumption=row.assumption, case=row.case)
    identities = identity_table(request.seed, samples=IDENTITY_SAMPLES[request.tier]) if complete else None
    payload = {"version": 1, "environment": {**session.environment(request, torch.device(request.device)),
                                             "data": "per row (stress)"},
               "results": results, "identities": identities, "skipped": [], "summary": session.summary(results),
               "seconds": round(time.perf_counter() - start, 1)}
    render_stress(payload, console)
    write_run(args, payload, complete)
    return session.exit_status(results, complete)
