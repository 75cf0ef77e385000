"""The measured power of the checks: the smallest relative error in a claimed value each detects.

``engine/power.json`` is a generated table (its generator is ``scripts/power.py``, which says
how each entry was measured), with the column "off-by-one in n detected" per claim beside it
(``scripts/power.py --off-by-one``); this module only reads it, for ``verify.py show``.
"""

from __future__ import annotations

import json
import math
import os

__all__ = ["PATH", "load", "format_delta", "off_by_one_cell", "off_by_one_line", "power_lines"]

PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "power.json")


def load(path: str = PATH) -> dict | None:
    """The stored table, or None when it has not been generated."""
    try:
        with open(path) as handle:
            return json.load(handle)
    except FileNotFoundError:
        return None


def format_delta(delta, kind: str = "up") -> str:
    """A minimal detectable delta as text: a percentage, an angle in radians, or 'none'."""
    if delta is None or not math.isfinite(delta):
        return "not detected"
    if kind == "rotate":
        return f"{delta:.2g} rad"
    if delta >= 1:
        return f"{100 * delta:.0f} %"
    return f"{100 * delta:.2g} %" if delta >= 1e-4 else f"{delta:.1e}"


def off_by_one_cell(entry: dict | None) -> str:
    """The table's column "off-by-one in n detected": yes / no (with the probability) / n/a, or — when not computed."""
    if entry is None:
        return "—"
    if "via" in entry:       # the formula is another claim's, whose sensitive case detects its off-by-one
        shown = f"P {_probability(entry['probability'])}, " if entry.get("probability") is not None else ""
        return f"{entry['detected']} ({shown}via {entry['via']})"
    if "probability" not in entry:
        return "no (no control)" if entry["detected"] == "no" else entry["detected"]
    return f"{entry['detected']} (P {_probability(entry['probability'])})"


def _probability(p: float) -> str:
    return "> 0.999" if p > 0.999 else f"= {p:.2g}"


def off_by_one_line(entry: dict) -> str:
    """One line for ``show``: whether an off-by-one in n is detected, by which control, at which case and draws."""
    if "controls" not in entry:    # no control of its own: the reason says why (or whose case detects it)
        return f"off-by-one in n detected: {entry['detected']} ({entry['reason']})"
    parts = []
    for row in entry["controls"]:
        case = ", ".join(f"{k}={v}" for k, v in row["case_params"].items()) or "defaults"
        how = (f"analytic: effect {row['effect']:.3g} = {abs(row['effect']) / row['se']:.1f} standard errors, "
               f"critical value {row['z_critical']:.2f}" if row["method"] == "analytic"
               else f"empirical: {row['detections']}/{row['seeds']} seeds disagree")
        parts.append(f"{row['control']} ({case}; {row['trials']} draws): P {_probability(row['probability'])} ({how})")
    return f"off-by-one in n detected: {entry['detected']} — " + "; ".join(parts)


def power_lines(theorem_id: str, path: str = PATH) -> list[str]:
    """One line per stored entry of a claim (tier, perturbation, case, minimal delta, method)."""
    table = load(path)
    entries = [e for e in (table or {}).get("entries", []) if e["id"] == theorem_id]
    if not entries:
        return ["power not measured"]
    column = (table or {}).get("off_by_one", {}).get(theorem_id)
    lines = []
    for e in entries:
        if e["method"] == "n/a":
            lines.append(f"{e['tier']}: n/a — {e['reason']}")
            continue
        case = ", ".join(f"{k}={v}" for k, v in e["case_params"].items()) or "defaults"
        how = e["method"] + (f", {e['rule']}" if e["method"] != "analytic" and e.get("rule") else "")
        lines.append(f"{e['tier']}: {e['perturbation']} ({case}): detected with P >= 0.9 from delta = "
                     f"{format_delta(e['min_delta'], e['direction'])} ({how})")
    return lines + ([off_by_one_line(column)] if column else [])
