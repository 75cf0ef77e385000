"""The measured power of the checks: the smallest relative error in a claimed value each detects.

``engine/power.json`` is a generated table (its generator is ``scripts/power.py``, which says
how each entry was measured); this module only reads it, for ``verify.py show``.
"""

from __future__ import annotations

import json
import math
import os

__all__ = ["PATH", "load", "format_delta", "power_lines"]

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


def power_lines(theorem_id: str, path: str = PATH) -> list[str]:
    """One line per stored entry of a claim (tier, perturbation, case, minimal delta, method)."""
    table = load(path)
    entries = [e for e in (table or {}).get("entries", []) if e["id"] == theorem_id]
    if not entries:
        return ["power not measured"]
    lines = []
    for e in entries:
        if e["method"] == "n/a":
            lines.append(f"{e['tier']}: n/a — {e['reason']}")
            continue
        case = ", ".join(f"{k}={v}" for k, v in e["case_params"].items()) or "defaults"
        how = e["method"] + (f", {e['rule']}" if e["method"] != "analytic" and e.get("rule") else "")
        lines.append(f"{e['tier']}: {e['perturbation']} ({case}): detected with P >= 0.9 from delta = "
                     f"{format_delta(e['min_delta'], e['direction'])} ({how})")
    return lines
