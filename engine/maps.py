"""Validity maps: where a claim holds, where it fails and by how much (``verify.py map ID --over ...``).

A map runs a claim's check on a coarse grid over one or two of its parameters, then bisects every grid
line where two neighbouring points are classified differently, until the point budget is spent or the
step reaches the line's resolution.  Each point is classified from its effect, the claim's error with
its confidence interval at the map's false-alarm level (``engine.verdict.effect_size``):

- ``holds``: the interval lies inside [-tau, tau]: the claim is within tau of what the procedure does;
- ``fails``: the interval lies wholly outside it: the claim is off by more than tau;
- ``undecided``: the interval straddles +-tau: this run cannot tell at its power.

A check whose verdict rests on certified per-draw tolerances (no interval: a deterministic check) is
classified by its verdict: agree -> holds, disagree -> fails; so is a point whose check disagrees on a
comparison other than the row's estimate (a bound, a count, a limit link): its effect is not what failed.
An agreeing check is never read as failing: its interval can lie wholly outside +-tau only where its test
is one-sided, i.e. a bound that holds with room to spare.  tau is relative where the claimed value
is not 0, absolute where it is (the effect's unit).

The statistical budget: a map of budget B tests every point at the claim's false-alarm rate / B
(Bonferroni over the most points the map can hold, fixed before the first point runs), so the whole
map misclassifies a point as ``fails`` when the claim holds exactly there, or raises a false change,
with probability at most that rate.  A cell read as ``holds`` is an interval statement: the error is
within tau with that confidence, not that it is 0.

The boundary between two classes on a grid line is estimated as the midpoint of the last pair of
neighbours that differ there, with half their distance as its uncertainty.  A map's rows are kept in
its JSON file; a rerun with the same claim, tier, seed, trials, design law, dtype and budget reuses
every point already computed instead of simulating it again.
"""

from __future__ import annotations

import itertools
import json
import math
from dataclasses import dataclass

import sympy as sp

from engine.cache import code_identity
from numerics.expr import ExpressionError, parse_number

__all__ = ["Axis", "parse_axis", "parse_map", "stem", "classify", "next_points", "boundaries", "map_key", "load_reusable", "summarise",
           "draw_map", "run_map", "DEFAULT_STEPS", "DEFAULT_BUDGET", "DEFAULT_TOLERANCE"]

DEFAULT_STEPS = 5          # coarse points per axis
DEFAULT_BUDGET = 40        # points per map (the Bonferroni family); refinement stops there
DEFAULT_TOLERANCE = 0.05   # the claim holds where its error is within this (relative; absolute where it is 0)
RESOLUTION = 64            # a grid line is bisected down to 1/RESOLUTION of its range
CLASSES = ("holds", "fails", "undecided")


@dataclass(frozen=True)
class Axis:
    """One mapped parameter: its range, its coarse steps, log spacing, integers only."""

    name: str
    low: sp.Expr
    high: sp.Expr
    steps: int = DEFAULT_STEPS
    log: bool = False
    integer: bool = False

    def coarse(self) -> list[sp.Expr]:
        last = max(self.steps - 1, 1)
        values = [self._between(self.low, self.high, sp.Rational(k, last)) for k in range(self.steps)]
        return _unique(values)

    def midpoint(self, a: sp.Expr, b: sp.Expr) -> sp.Expr | None:
        """The point halfway between two values (geometric on a log axis), None below the line's resolution."""
        if self._distance(a, b) <= self._distance(self.low, self.high) / RESOLUTION:
            return None
        middle = self._between(a, b, sp.Rational(1, 2))
        return None if middle in (a, b) else middle

    def _between(self, a, b, fraction):
        if self.log:
            value = sp.Float(float(a) * (float(b) / float(a)) ** float(fraction), 17)
            value = sp.nsimplify(value, rational=True)
        else:
            value = a + (b - a) * fraction
        return sp.Integer(round(float(value))) if self.integer else sp.nsimplify(value) if value.is_Float else value

    def _distance(self, a, b) -> float:
        return abs(math.log(float(b) / float(a))) if self.log else abs(float(b) - float(a))


def _unique(values):
    seen = []
    for value in values:
        if all(value != v for v in seen):
            seen.append(value)
    return seen


def parse_axis(text: str, parameter) -> Axis:
    """'NAME=START:STOP[:STEPS][:log]' for a declared ``parameter`` -> Axis, or ValueError with one line."""
    name, _, spec = text.partition("=")
    parts = spec.split(":")
    log = parts[-1] == "log"
    if log:
        parts = parts[:-1]
    if len(parts) not in (2, 3):
        raise ValueError(f"--over {text}: expected NAME=START:STOP[:STEPS][:log]")
    try:
        low, high = (parameter.parse(part) for part in parts[:2])
        steps = int(parse_number(parts[2])) if len(parts) == 3 else DEFAULT_STEPS
    except ExpressionError as error:
        raise ValueError(f"--over {name}: {error}") from None
    if not 2 <= steps <= 33:
        raise ValueError(f"--over {name}: STEPS must be between 2 and 33, got {steps}")
    if not low < high:
        raise ValueError(f"--over {name}: START must be below STOP, got {parts[0]}:{parts[1]}")
    if log and not low > 0:
        raise ValueError(f"--over {name}: a log axis needs START > 0")
    return Axis(name.strip(), low, high, steps, log, parameter.integer)


def parse_map(theorem, items: list[str], fixed: dict, tolerance: float | None = None,
              budget: int | None = None) -> tuple[list[Axis], float, int]:
    """The --over items of a map of ``theorem`` as axes (one or two, each named once, none also fixed by
    --param), with its --tolerance and --budget (None: the defaults); or ValueError with one line."""
    tolerance = DEFAULT_TOLERANCE if tolerance is None else tolerance
    if not 1 <= len(items) <= 2:
        raise ValueError(f"a map has one or two --over NAME=A:B[:N] axes, got {len(items)}")
    if not tolerance > 0:
        raise ValueError(f"--tolerance must be > 0, got {tolerance:g}")
    axes = [parse_axis(item, theorem.parameter(item.partition("=")[0].strip())) for item in items]
    if len({axis.name for axis in axes}) < len(axes) or set(fixed) & {axis.name for axis in axes}:
        raise ValueError("each mapped parameter is named once, and not also by --param")
    return axes, tolerance, budget or DEFAULT_BUDGET


def stem(theorem, axes: list[Axis]) -> str:
    """The file name (without extension) of a map: map-ID-NAME[-NAME]."""
    return f"map-{theorem.id}-" + "-".join(axis.name for axis in axes)


def classify(row: dict, tolerance: float) -> str:
    """holds / fails / undecided from the row's effect interval against +-tolerance (see the module docstring)."""
    effect = row.get("effect")
    if row.get("verdict") == "inconclusive":
        return "undecided"
    if effect is None or effect["unit"] == "tolerance" or _failed_elsewhere(row):
        return {"agree": "holds", "disagree": "fails"}.get(row.get("verdict"), "undecided")
    low, high = effect["low"], effect["high"]
    if -tolerance <= low and high <= tolerance:
        return "holds"
    if low > tolerance or high < -tolerance:
        # an agreeing check whose interval excludes 0 tests one side only: a bound that holds with room
        return "holds" if row.get("verdict") == "agree" else "fails"
    return "undecided"


def _failed_elsewhere(row: dict) -> bool:
    """The check disagrees, but not on the row's own estimate (its z is within the critical value)."""
    if row.get("verdict") != "disagree":
        return False
    z, critical = row.get("z"), (row.get("mc") or {}).get("z_critical")
    return not (isinstance(z, (int, float)) and isinstance(critical, (int, float)) and abs(z) > critical)


def _lines(points: dict, axes: list[Axis], along: int):
    """The grid lines along axis ``along``: point keys grouped by their other coordinates, sorted along it."""
    groups = {}
    for key in points:
        groups.setdefault(tuple(v for i, v in enumerate(key) if i != along), []).append(key)
    return [sorted(keys, key=lambda k: float(k[along])) for keys in groups.values()]


def next_points(points: dict, axes: list[Axis]) -> list[tuple]:
    """Midpoints of neighbouring points that differ in class, widest gaps first (one bisection round)."""
    candidates = []
    for along, axis in enumerate(axes):
        for line in _lines(points, axes, along):
            for a, b in zip(line, line[1:]):
                if points[a] == points[b]:
                    continue
                middle = axis.midpoint(a[along], b[along])
                if middle is not None:
                    key = tuple(middle if i == along else v for i, v in enumerate(a))
                    width = axis._distance(a[along], b[along]) / axis._distance(axis.low, axis.high)
                    candidates.append((-width, key))
    return _unique([key for _, key in sorted(candidates, key=lambda c: c[0])])


def boundaries(points: dict, axes: list[Axis]) -> list[dict]:
    """Per grid line, each change of class: where (the midpoint of the closest differing neighbours) and
    how well it is known (half their distance)."""
    found = []
    for along, axis in enumerate(axes):
        for line in _lines(points, axes, along):
            for a, b in zip(line, line[1:]):
                if points[a] != points[b]:
                    lo, hi = float(a[along]), float(b[along])
                    at = {axes[i].name: float(v) for i, v in enumerate(a) if i != along}
                    estimate = math.sqrt(lo * hi) if axis.log else (lo + hi) / 2
                    found.append({"axis": axis.name, "at": at, "between": [lo, hi], "estimate": estimate,
                                  "uncertainty": (hi - lo) / 2, "classes": [points[a], points[b]]})
    return found


def map_key(theorem, request, budget: int, tolerance: float) -> dict:
    """What a stored map's points depend on: a rerun reuses them only if all of it is the same, the sources its
    check runs included (a changed trainer recomputes the map; ``engine.cache.code_identity``)."""
    return {"claim": theorem.id, "tier": request.tier, "seed": request.seed, "trials": request.trials,
            "data": request.data, "dtype": request.dtype, "device": request.device, "budget": budget,
            "fixed": dict(sorted(request.params.items())), **code_identity(theorem)}


def load_reusable(path: str, key: dict) -> dict:
    """Rows of a stored map at ``path`` computed under the same ``key``, by their parameters; {} otherwise."""
    try:
        with open(path) as handle:
            stored = json.load(handle)
    except (OSError, json.JSONDecodeError):
        return {}
    if stored.get("key") != key:
        return {}
    return {json.dumps(r["row"]["params"], sort_keys=True): r["row"] for r in stored.get("points", [])}


def summarise(theorem, axes: list[Axis], points: dict, rows: dict, tolerance: float, key: dict, seconds: float,
              rate: float, exact: dict) -> dict:
    """The map as JSON: its points (class, effect, verdicts), boundaries, and what the record says there
    (``exact``: each point's parameters as exact numbers, which the regions are decided on: a row's floats
    would put a = 0.1 outside ``a == 1/10``)."""
    listed = []
    for coordinates, cls in points.items():
        row = rows[coordinates]
        corrected = row.get("corrected") or {}
        listed.append({"at": {a.name: float(v) for a, v in zip(axes, coordinates)}, "class": cls,
                       "in_finding_region": theorem.finding_at(exact[coordinates]) is not None,
                       "corrected_verdict": corrected.get("verdict"), "row": row})
    counts = {c: sum(cls == c for cls in points.values()) for c in CLASSES}
    changed = sum(r["row"].get("as_expected") is False for r in listed)
    return {"version": 1, "key": key, "axes": [{"name": a.name, "low": float(a.low), "high": float(a.high),
                                                "log": a.log} for a in axes],
            "tolerance": tolerance, "rate_per_point": rate, "points": listed, "boundaries": boundaries(points, axes),
            "regions": [{"region": f.region, "why": f.why, "corrected": f.corrected} for f in theorem.findings],
            "counts": counts, "changed": changed, "seconds": seconds}


def _region_mask(theorem, fixed: dict, axes: list[Axis], mesh):
    """Which mesh points lie in a finding's region (for drawing only: sympy's lambdify of the conditions)."""
    import numpy as np
    names = [p.name for p in theorem.parameters]
    inside = np.zeros(mesh[0].shape, dtype=bool)
    for finding in theorem.findings:
        condition = finding.condition(names)
        values = {sp.Symbol(n, real=True): sp.sympify(fixed[n]) for n in condition.names
                  if n not in {a.name for a in axes}}
        expression = condition.expression.subs(values)
        symbols = [sp.Symbol(a.name, real=True) for a in axes]
        function = sp.lambdify(symbols, expression, modules="numpy")
        with np.errstate(all="ignore"):
            inside |= np.broadcast_to(np.asarray(function(*mesh), dtype=bool), inside.shape)
    return inside


COLOURS = {"holds": "#2a9d8f", "fails": "#e63946", "undecided": "#adb5bd"}


def draw_map(data: dict, theorem, axes: list[Axis], path_stem: str) -> list[str]:
    """PNG and SVG of a map: the points by class (a ring where the corrected statement holds), the estimated
    boundaries with their uncertainty, and the recorded regions' edges."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    fixed = data["fixed"]
    fig, ax = plt.subplots(figsize=(6.4, 4.8))
    tau = data["tolerance"]
    points = data["points"]
    if len(axes) == 1:
        name = axes[0].name
        xs = np.linspace(float(axes[0].low), float(axes[0].high), 400)
        if axes[0].log:
            xs = np.geomspace(float(axes[0].low), float(axes[0].high), 400)
        mask = _region_mask(theorem, data.get("fixed_exact", fixed), axes, [xs])
        if mask.any():
            ax.fill_between(xs, 0, 1, where=mask, transform=ax.get_xaxis_transform(), color="#f4a261", alpha=0.25,
                            label="recorded finding's region")
        ax.axhspan(-tau, tau, color="#2a9d8f", alpha=0.08, label=f"within tau = {tau:g}")
        for cls in CLASSES:
            chosen = [p for p in points if p["class"] == cls and (p["row"].get("effect") or {}).get("unit")
                      not in (None, "tolerance")]
            if chosen:
                x = [p["at"][name] for p in chosen]
                e = [p["row"]["effect"] for p in chosen]
                ax.errorbar(x, [v["estimate"] for v in e], yerr=[[v["estimate"] - v["low"] for v in e],
                                                                 [v["high"] - v["estimate"] for v in e]],
                            fmt="o", color=COLOURS[cls], ms=4, capsize=2, label=cls)
            flat = [p for p in points if p["class"] == cls and p not in chosen]
            if flat:
                ax.scatter([p["at"][name] for p in flat], [0] * len(flat), color=COLOURS[cls], marker="s",
                           label=f"{cls} (per-draw)")
        corrected = [p for p in points if p["corrected_verdict"] == "agree"]
        if corrected:
            ax.scatter([p["at"][name] for p in corrected], [(p["row"].get("effect") or {"estimate": 0})["estimate"]
                                                           for p in corrected],
                       facecolors="none", edgecolors="black", s=70, label="corrected statement holds")
        for b in data["boundaries"]:
            ax.axvspan(*b["between"], color="black", alpha=0.12)
            ax.axvline(b["estimate"], color="black", lw=0.8, ls="--")
        ax.set_xlabel(name)
        ax.set_ylabel("claim's error (effect) with its interval")
        if axes[0].log:
            ax.set_xscale("log")
    else:
        (xa, ya) = axes
        grid = [np.geomspace(float(a.low), float(a.high), 160) if a.log else np.linspace(float(a.low), float(a.high), 160)
                for a in axes]
        mesh = np.meshgrid(*grid)
        mask = _region_mask(theorem, data.get("fixed_exact", fixed), axes, mesh)
        if mask.any() and not mask.all():
            ax.contourf(mesh[0], mesh[1], mask.astype(float), levels=[0.5, 1.5], colors=["#f4a261"], alpha=0.25)
            ax.contour(mesh[0], mesh[1], mask.astype(float), levels=[0.5], colors=["#f4a261"], linewidths=1.5)
        elif mask.all():
            ax.set_facecolor("#fbe3cf")
        ax.plot([], [], color="#f4a261", lw=6, alpha=0.5, label="recorded finding's region")
        for cls in CLASSES:
            chosen = [p for p in points if p["class"] == cls]
            if chosen:
                ax.scatter([p["at"][xa.name] for p in chosen], [p["at"][ya.name] for p in chosen], color=COLOURS[cls],
                           s=36, label=cls, zorder=3)
        corrected = [p for p in points if p["corrected_verdict"] == "agree"]
        if corrected:
            ax.scatter([p["at"][xa.name] for p in corrected], [p["at"][ya.name] for p in corrected],
                       facecolors="none", edgecolors="black", s=90, label="corrected statement holds", zorder=4)
        for b in data["boundaries"]:
            if b["axis"] == xa.name:
                ax.errorbar([b["estimate"]], [b["at"][ya.name]], xerr=[b["uncertainty"]], fmt="|", color="black")
            else:
                ax.errorbar([b["at"][xa.name]], [b["estimate"]], yerr=[b["uncertainty"]], fmt="_", color="black")
        ax.set_xlabel(xa.name)
        ax.set_ylabel(ya.name)
        if xa.log:
            ax.set_xscale("log")
        if ya.log:
            ax.set_yscale("log")
    counts = data["counts"]
    ax.set_title(f"{theorem.id}: holds {counts['holds']}, fails {counts['fails']}, undecided {counts['undecided']}"
                 f" (tau {tau:g}; " + (f"each point at {data['rate_per_point']:.1g})" if data["rate_per_point"]
                                        else "deterministic)"), fontsize=9)
    ax.legend(fontsize=7, loc="best")
    from engine.figures import save_figure
    return save_figure(fig, path_stem)


def grid_keys(axes: list[Axis]) -> list[tuple]:
    """The coarse grid's points (coordinate tuples)."""
    return list(itertools.product(*(axis.coarse() for axis in axes)))


def run_map(theorem, axes: list[Axis], request, tolerance: float, budget: int, store_path: str,
            on_point=lambda done, planned, row: None) -> dict:
    """Run the map (coarse grid, then bisection where neighbours differ, at most ``budget`` points), reusing
    the points stored at ``store_path`` under the same key; the map as JSON (``summarise``)."""
    import time

    from types import SimpleNamespace

    from engine.runner import Task, run_point
    from engine.session import check_trials
    from engine.verdict import accepted_verdicts
    from theorems.core import ParameterError, as_float
    check_trials(theorem, request.trials)
    key = map_key(theorem, request, budget, tolerance)
    stored = load_reusable(store_path, key)
    fixed = theorem.resolve(request.params, request.tier)        # the other parameters, validated once
    points, rows, exact, notes, start = {}, {}, {}, [], time.perf_counter()
    pending = grid_keys(axes)
    if len(pending) > budget:
        raise ValueError(f"the coarse grid has {len(pending)} points, more than --budget {budget}")
    ran = lambda: sum(v is not None for v in points.values())   # noqa: E731 -- skipped points cost nothing
    while pending and ran() < budget:
        for coordinates in pending[:budget - ran()]:
            values = {axis.name: str(value) for axis, value in zip(axes, coordinates)}
            try:
                params = theorem.resolve({**request.params, **values}, request.tier)
            except ParameterError as error:
                shown = {k: v if len(v) <= 30 else f"{float(value):.6g}"   # 1e-300 written out is 300 digits
                         for (k, v), value in zip(values.items(), coordinates)}
                notes.append(f"skipped {', '.join(f'{k}={v}' for k, v in shown.items())}: {error}")
                points[coordinates] = None
                continue
            point, exact[coordinates] = theorem.point(params), params
            row = stored.get(json.dumps(as_float(params), sort_keys=True))
            if row is not None:   # a stored row, judged again against the record as it stands now
                accepted, why = accepted_verdicts(point.expected, point.corrected,
                                                  SimpleNamespace(corrected=row.get("corrected")))
                row = {**row, "expected": point.expected, "finding": point.finding or None, "accepted": accepted,
                       "expectation": why or None, "as_expected": row["verdict"] in accepted}
            else:
                row = run_point(Task(theorem.id, params, point.expected, point.finding, request.tier, request.trials,
                                    request.seed, request.device, request.dps, False, False, request.data,
                                    request.dtype, budget, point.corrected, cache=request.cache,
                                    threads=request.threads))
            rows[coordinates], points[coordinates] = row, classify(row, tolerance)
            on_point(ran(), ran() + len(pending), row)
        decided = {k: v for k, v in points.items() if v is not None}
        pending = [k for k in next_points(decided, axes) if k not in points]
    decided = {k: v for k, v in points.items() if v is not None}
    if not decided:   # an empty map would read as "nothing to see" (the grid's own rule: verify.py's resolve)
        raise ValueError(f"no point of the map lies in the claim's domain ({notes[0] if notes else 'no points'})")
    data = summarise(theorem, axes, decided, rows, tolerance, key, time.perf_counter() - start,
                     theorem.false_alarm / budget, exact)
    data["fixed"] = as_float(fixed)
    data["fixed_exact"] = {name: str(value) for name, value in fixed.items()}   # what the regions are decided on
    data["skipped"] = notes
    return data
