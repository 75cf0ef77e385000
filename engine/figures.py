"""The papers' figures, redrawn from the checks (``verify.py plot NAME|ID``).

A figure is a claim run over a grid: one grid parameter gives curves (theory line,
Monte-Carlo means with 2-SE error bars, one curve per value of a second, short grid
parameter); two long grid parameters give a phase diagram (the theory value shaded
on a fine mesh, its zero contour as the boundary between positive and negative
transfer, and the sign of each simulated grid cell on top).  The plotted data go to a
JSON file beside the images, so what is drawn can be compared with what was run.

matplotlib is imported only here, and only when a figure is drawn.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Callable

import mpmath as mp

from theorems.core import ParameterError
from theorems.registry import get

__all__ = ["Figure", "FIGURES", "figure_for", "layout", "plotted_data", "draw", "save_figure"]

PHASE_MIN_VALUES = 4     # a second grid parameter with fewer values gives curves, not a phase diagram
THEORY_POINTS = 120      # theory evaluations along a curve
MESH_POINTS = 48         # per axis of a phase diagram's theory mesh


@dataclass(frozen=True)
class Figure:
    """A claim over a grid (``grid``), or a claim whose check measures a whole curve itself (``extract``
    turns one result row into series; no grid), with the axes the paper uses."""

    name: str                       # what the user types: "faf-fig1c"
    claim: str                      # the claim it is drawn from
    caption: str                    # the paper's figure, in words
    grid: tuple[str, ...] = ()      # --grid items, the first is the x axis
    params: tuple[str, ...] = ()    # --param items
    extract: Callable[[dict], list[dict]] | None = None
    x_label: str = ""
    y_label: str = ""
    log_x: bool = False
    log_y: bool = False
    slope: bool = False             # draw d log(theory) / d log(x) instead of the theory (Fig. 1b of PT+FT)


def _fig1_ladder(row) -> list[dict]:
    """Shachaf Fig. 1: risk against n/d for the two alignments, with the deterministic equivalents."""
    ladder = row["mc"]["ladder"]
    x = [r["n_over_d"] for r in ladder]
    return [{"label": label, "x": x, "mean": [r["R_" + key] for r in ladder], "se": [r["se_" + key] for r in ladder],
             "theory_x": x if "deq_" + key in ladder[0] else [], "theory": [r.get("deq_" + key) for r in ladder]}
            for key, label in (("TEA", "Top Eigen Align"), ("BEA", "Bottom Eigen Align"))]


def _fig2a_depths(row) -> list[dict]:
    """Shachaf Fig. 2a: fine-tuned risk against depth, with eq. (5)'s prediction per depth."""
    rows = row["mc"]["by_depth"]
    x = [r["L"] for r in rows]
    return [{"label": "trained networks; line: eq. (5)", "x": x, "mean": [r["mean_risk"] for r in rows],
             "se": [r["se"] for r in rows], "theory_x": x, "theory": [r["mean_predicted"] for r in rows]}]


def _fig3_frozen(row) -> list[dict]:
    """Shachaf Fig. 3 (as the checker measures it): the fine-tuned model's departure from the line
    c theta_S along training, per init scale; Thm 5.5 says it stays 0."""
    series = []
    for rung in row["mc"]["alpha_ladder"]:
        steps = sorted(rung["off_line_max_by_step"], key=float)
        series.append({"label": f"alpha = {rung['alpha']:g}", "x": [float(s) for s in steps],
                       "mean": [rung["off_line_max_by_step"][s] for s in steps], "se": [0.0] * len(steps),
                       "theory_x": [], "theory": []})
    return series


FAF = "Features are fate"
SHACHAF = "Shachaf et al."
PTFT = "PT+FT penalty"
FIGURES = {f.name: f for f in (
    Figure("faf-fig1ab", "transferability-linear", f"{FAF}, Fig. 1a-b: T_lt phase diagram, sigma = 0.2",
           ("gamma=0.1:2:8", "theta=0:pi/2:6")),
    Figure("faf-fig1c", "transferability-linear", f"{FAF}, Fig. 1c: slices of T_lt, sigma = 0.2",
           ("gamma=0.1:2:20", "theta=pi/8,pi/4,3*pi/8")),
    Figure("faf-fig2", "ridge-transfer", f"{FAF}, Fig. 2: ridge linear transfer at gamma = 1/2",
           ("lam=0.01:0.6:12",), ("gamma=1/2", "theta=pi/8")),
    Figure("faf-fig3ab", "finetune", f"{FAF}, Fig. 3a-b: T_ft phase diagram", ("gamma=0.1:2:8", "theta=0:pi/2:6")),
    Figure("faf-fig3c", "finetune", f"{FAF}, Fig. 3c: slices of T_ft", ("gamma=0.1:2:20", "theta=pi/8,pi/4,3*pi/8")),
    Figure("faf-fig6", "transferability-linear", f"{FAF}, Fig. 6: T_lt slices, sigma = 0",
           ("gamma=0.1:2:20", "theta=pi/8,pi/4,3*pi/8"), ("sigma=0",)),
    Figure("faf-fig7", "transferability-linear", f"{FAF}, Fig. 7: T_lt theory vs experiment, sigma = 0",
           ("gamma=0.1:2:8", "theta=0:pi/2:6"), ("sigma=0",)),
    Figure("shachaf-fig1", "covariance-bound", f"{SHACHAF}, Fig. 1: Top vs Bottom Eigen Align",
           params=("top_eig=3/2", "bottom_eig=3/10"), extract=_fig1_ladder, x_label="n/d",
           y_label="risk (line: deterministic equivalent)"),
    Figure("shachaf-fig2a", "aligned-tasks",
           f"{SHACHAF}, Fig. 2a: depth and aligned tasks theta_T = a theta_S + noise (eps = 1/2)",
           params=("eps=1/2", "L=4", "alpha=1e-2"), extract=_fig2a_depths, x_label="depth L", y_label="fine-tuned risk"),
    Figure("shachaf-fig3", "frozen-layers", f"{SHACHAF}, Fig. 3: first layer frozen", extract=_fig3_frozen,
           x_label="fine-tuning step", y_label="max off-line fraction (Thm 5.5: 0)", log_x=True, log_y=True),
    Figure("ptft-fig1a", "ptft-penalty", f"{PTFT}, Fig. 1a: per-unit penalty, rho = 1",
           ("m=1/100:100:9:log", "m_aux=1/100,1,100"), ("rho=1", "gamma=0"), x_label="m", y_label="r~(m)",
           log_x=True, log_y=True),
    Figure("ptft-fig1b", "ptft-penalty", f"{PTFT}, Fig. 1b: d log r~ / d log m, m_aux = 1",
           ("m=1/100:100:9:log", "rho=9/10,99/100,1"), ("m_aux=1", "gamma=0"), x_label="m",
           y_label="d log r~ / d log m (1: l1-like, 2: l2-like)", log_x=True, slope=True),
)}


def figure_for(name: str, grid: tuple[str, ...] = (), params: tuple[str, ...] = ()) -> Figure:
    """A named figure (``grid``/``params`` override its own), or any claim id with a grid."""
    if name in FIGURES:
        known = FIGURES[name]
        if known.extract is not None and grid:
            raise ParameterError(f"plot {name}: the figure is one check's own curve; it takes --param, not --grid")
        return replace(known, grid=tuple(grid) or known.grid, params=known.params + tuple(params))
    theorem = get(name)  # UnknownTheorem for anything else
    if not grid:
        raise ParameterError(f"plot {name}: give --grid NAME=SPEC (or a figure: {', '.join(FIGURES)})")
    return Figure(name, name, f"{theorem.id}: {theorem.title}", tuple(grid), tuple(params))


def layout(grid: dict[str, list]) -> str:
    """"curves" or "phase", from the grid's shape (no grid: a check's own curves)."""
    if not grid:
        return "curves"
    if len(grid) > 2:
        raise ParameterError("plot takes one or two --grid parameters")
    lengths = [len(values) for values in grid.values()]
    return "phase" if len(lengths) == 2 and min(lengths) >= PHASE_MIN_VALUES else "curves"


def _theory(theorem, overrides: dict, tier: str) -> float:
    """The claimed value at a point given by parameter texts, or nan outside the domain."""
    try:
        value = theorem.theory(theorem.resolve(overrides, tier), 15)
    except ParameterError:
        return math.nan
    return float(value) if isinstance(value, mp.mpf) else math.nan


def plotted_data(figure: Figure, grid: dict[str, list], fixed: dict[str, str], payload: dict) -> dict:
    """What the figure shows: the run's rows grouped into series, and the theory line or mesh."""
    theorem = get(figure.claim)
    tier = payload["environment"]["tier"]
    rows = [r for r in payload["results"] if r["id"] == figure.claim]
    data = {"figure": figure.name, "claim": figure.claim, "caption": figure.caption, "layout": layout(grid),
            "quantity": theorem.quantity, "fixed": fixed, "series": [], "x": figure.x_label or (list(grid) or [""])[0],
            "y_label": figure.y_label, "log_x": figure.log_x, "log_y": figure.log_y}
    if figure.extract is not None:
        varying = [k for k in (rows[0]["params"] if rows else {}) if len({r["params"][k] for r in rows}) > 1]
        for row in rows:
            if not row.get("mc"):
                continue
            prefix = ", ".join(f"{k}={row['params'][k]:g}" for k in varying) + (": " if varying else "")
            for series in figure.extract(row):
                data["series"].append({**series, "label": prefix + series["label"], "group": None,
                                       "verdict": [row["verdict"]], "as_expected": [row["as_expected"]],
                                       "reference": [None] * len(series["x"]), "theory_at_x": series["theory"]})
        return data
    names = list(grid)
    x_name = names[0]
    x_values = [float(theorem.parameter(x_name).parse(v)) for v in grid[x_name]]
    data["x"] = figure.x_label or x_name
    groups = grid[names[1]] if len(names) == 2 else [None]
    for value in groups:
        label = None if value is None else f"{names[1]} = {value}"
        chosen = [r for r in rows if value is None or math.isclose(
            r["params"][names[1]], float(theorem.parameter(names[1]).parse(value)), rel_tol=1e-12, abs_tol=1e-12)]
        chosen.sort(key=lambda r: r["params"][x_name])
        series = {"label": label, "group": None if value is None else float(theorem.parameter(names[1]).parse(value)),
                  "x": [r["params"][x_name] for r in chosen],
                  "mean": [r["mc"]["mean"] if r.get("mc") else None for r in chosen],
                  "se": [r["mc"]["se"] if r.get("mc") else None for r in chosen],
                  "reference": [r["mc"].get("reference") if r.get("mc") else None for r in chosen],
                  "verdict": [r["verdict"] for r in chosen],
                  "as_expected": [r["as_expected"] for r in chosen]}
        if data["layout"] == "curves":
            lo, hi = min(x_values), max(x_values)
            dense = ([lo * (hi / lo) ** (k / (THEORY_POINTS - 1)) for k in range(THEORY_POINTS)] if figure.log_x
                     else [lo + (hi - lo) * k / (THEORY_POINTS - 1) for k in range(THEORY_POINTS)])
            if hi == lo or theorem.parameter(x_name).integer:
                dense = sorted(x_values)
            extra = {} if value is None else {names[1]: value}
            series["theory_x"] = dense
            series["theory"] = [_theory(theorem, {**fixed, **extra, x_name: repr(x)}, tier) for x in dense]
            series["theory_at_x"] = [_theory(theorem, {**fixed, **extra, x_name: repr(x)}, tier) for x in series["x"]]
            if figure.slope:
                series["theory"] = _log_slope(dense, series["theory"])
                series["theory_at_x"] = [None] * len(series["x"])
                series["mean"] = [None] * len(series["x"])   # the checks measure r~, not its slope
        data["series"].append(series)
    if data["layout"] == "phase":
        y_name = names[1]
        y_values = [float(theorem.parameter(y_name).parse(v)) for v in grid[y_name]]
        xs = [min(x_values) + (max(x_values) - min(x_values)) * k / (MESH_POINTS - 1) for k in range(MESH_POINTS)]
        ys = [min(y_values) + (max(y_values) - min(y_values)) * k / (MESH_POINTS - 1) for k in range(MESH_POINTS)]
        data.update(y=y_name, mesh_x=xs, mesh_y=ys,
                    mesh=[[_theory(theorem, {**fixed, x_name: repr(x), y_name: repr(y)}, tier) for x in xs] for y in ys])
    return data


def _log_slope(x: list[float], y: list[float]) -> list[float]:
    """Central differences of log y against log x (one-sided at the ends); nan where y <= 0."""
    logs = [math.log(v) if v == v and v > 0 else math.nan for v in y]
    slope = []
    for k in range(len(x)):
        a, b = max(k - 1, 0), min(k + 1, len(x) - 1)
        slope.append((logs[b] - logs[a]) / (math.log(x[b]) - math.log(x[a])) if b > a else math.nan)
    return slope


def draw(data: dict, out_dir: str) -> list[str]:
    """Draw ``data`` (from :func:`plotted_data`) as PNG and SVG in ``out_dir``; the paths written."""
    import matplotlib
    matplotlib.use("Agg")   # no display needed
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.8))
    agree = sum(v == "agree" for s in data["series"] for v in s["verdict"])
    total = sum(len(s["verdict"]) for s in data["series"])
    changed = sum(e is False for s in data["series"] for e in s["as_expected"])
    simulated = any(m is not None for s in data["series"] for m in s["mean"])
    summary = (f"Monte-Carlo: {agree}/{total} agree" + (f", {changed} CHANGED" if changed else
                                                        ", the rest as recorded" if agree < total else "")
               if simulated else "theory only (no Monte-Carlo run)")
    if data["layout"] == "curves":
        drew_reference = False
        for number, s in enumerate(data["series"]):
            colour = f"C{number}"
            if s["theory_x"]:
                ax.plot(s["theory_x"], s["theory"], color=colour,
                        label=f"theory{'' if s['label'] is None else ', ' + s['label']}")
            elif s["label"]:
                ax.plot([], [], "o", color=colour, label=s["label"])
            points = [(x, m, se) for x, m, se in zip(s["x"], s["mean"], s["se"]) if m is not None]
            if points:
                xs, ms, ses = zip(*points)
                ax.errorbar(xs, ms, yerr=[2 * e for e in ses], fmt="o", color=colour, ms=4, capsize=2)
            references = [(x, r) for x, r, t in zip(s["x"], s["reference"], s["theory_at_x"]) if r is not None
                          and (t is None or not math.isclose(r, t, rel_tol=1e-6, abs_tol=1e-9))]
            if references:
                ax.scatter(*zip(*references), marker="s", facecolors="none", edgecolors=colour, s=30)
                drew_reference = True
        ax.errorbar([], [], yerr=[], fmt="o", color="k", label=f"{summary} (± 2 SE)" if simulated else summary)
        if drew_reference:
            ax.scatter([], [], marker="s", facecolors="none", edgecolors="k",
                       label="finite-size value the test compares with (where it differs)")
        ax.set_xlabel(data["x"])
        ax.set_ylabel(data["y_label"] or data["quantity"].split(";")[0][:60], fontsize=8)
        ax.set_xscale("log" if data["log_x"] else "linear")
        ax.set_yscale("log" if data["log_y"] else "linear")
    else:
        import numpy as np
        mesh = np.array(data["mesh"], dtype=float)
        scale = np.nanmax(np.abs(mesh)) or 1.0
        image = ax.pcolormesh(data["mesh_x"], data["mesh_y"], mesh, cmap="RdBu", vmin=-scale, vmax=scale, shading="auto")
        fig.colorbar(image, ax=ax, label="theory")
        if np.nanmin(mesh) < 0 < np.nanmax(mesh):
            ax.contour(data["mesh_x"], data["mesh_y"], mesh, levels=[0.0], colors="k", linewidths=1)
        for s in data["series"]:
            for x, m, se in zip(s["x"], s["mean"], s["se"]):
                if m is not None:
                    sign = "+" if m > 2 * se else "_" if m < -2 * se else "o"
                    ax.scatter([x], [s["group"]], marker=sign, c="k", s=40)
        ax.scatter([], [], marker="+", c="k", label=f"simulated sign (+, -, o: within 2 SE); {summary}")
        ax.set_xlabel(data["x"])
        ax.set_ylabel(data["y"])
    ax.set_title(f"{data['figure']} (claim {data['claim']})\n{data['caption']}", fontsize=9)
    ax.legend(fontsize=7)
    return save_figure(fig, f"{out_dir}/{data['figure']}")


def save_figure(fig, path_stem: str) -> list[str]:
    """Write ``fig`` as PATH_STEM.png and PATH_STEM.svg, close it; the paths written."""
    import matplotlib.pyplot as plt
    fig.tight_layout()
    paths = []
    for suffix in ("png", "svg"):
        fig.savefig(f"{path_stem}.{suffix}", dpi=120)
        paths.append(f"{path_stem}.{suffix}")
    plt.close(fig)
    return paths
