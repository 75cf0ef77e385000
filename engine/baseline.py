"""What changed between a stored run and this one (``verify.py ... --baseline old.json``).

Rows are matched by claim id and parameter values.  A matched row has changed when

- its verdict differs;
- its theory value moved by more than its precision: the two values disagree in
  the digits both runs printed (the smaller ``dps`` of the two, less one for rounding);
- its Monte-Carlo mean moved beyond the joint standard error: |m1 - m0| /
  sqrt(se0^2 + se1^2) above the two-sided critical value for a false-alarm
  probability of 1e-3 over all the rows compared (Bonferroni).  With the same seed
  on the same kind of device the means are identical, so this only bites when
  something in the procedure changed, or across seeds, where it is a proper test.

Rows found in only one of the runs are listed but are not changes: a run of a few
claims against a stored ``all`` run is a normal thing to do.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import mpmath as mp

from simulate.stats import z_critical

__all__ = ["FALSE_ALARM", "Change", "compare_runs"]

FALSE_ALARM = 1e-3


@dataclass(frozen=True)
class Change:
    id: str
    params: dict
    kind: str          # "verdict", "theory", "estimate" (changes); "new", "missing" (listed only)
    detail: str

    @property
    def is_change(self) -> bool:
        return self.kind in ("verdict", "theory", "estimate")


def _key(row) -> tuple:
    return row["id"], tuple(sorted((name, float(value)) for name, value in row["params"].items()))


def _number(text):
    try:
        return mp.mpf(text)
    except (TypeError, ValueError):
        return None


def _theory_change(old: str, new: str, digits: int) -> str | None:
    a, b = _number(old), _number(new)
    if a is None or b is None:
        return None if old == new else f"theory {old} -> {new}"
    with mp.workdps(digits + 10):
        tolerance = mp.mpf(10) ** (1 - digits) * max(1, abs(b))
        if abs(a - b) > tolerance:
            return f"theory {mp.nstr(a, 12)} -> {mp.nstr(b, 12)} (moved beyond {digits} digits)"
    return None


def _estimate_z(old_mc, new_mc) -> float | None:
    if not old_mc or not new_mc or old_mc.get("se") is None or new_mc.get("se") is None:
        return None
    gap = new_mc["mean"] - old_mc["mean"]
    joint = math.hypot(old_mc["se"], new_mc["se"])
    if joint == 0:
        return 0.0 if gap == 0 else math.copysign(math.inf, gap)
    return gap / joint


def compare_runs(old: dict, new: dict) -> list[Change]:
    """The differences between two ``--json`` payloads (old = the baseline)."""
    old_rows = {_key(row): row for row in old["results"]}
    new_rows = {_key(row): row for row in new["results"]}
    digits = min(old["environment"]["dps"], new["environment"]["dps"])
    matched = [(old_rows[key], row) for key, row in new_rows.items() if key in old_rows]
    estimated = sum(_estimate_z(a.get("mc"), b.get("mc")) is not None for a, b in matched)
    critical = z_critical(FALSE_ALARM, comparisons=max(estimated, 1))
    changes = []
    for before, after in matched:
        where = dict(id=after["id"], params=after["params"])
        if before["verdict"] != after["verdict"]:
            changes.append(Change(**where, kind="verdict", detail=f"verdict {before['verdict']} -> {after['verdict']}"))
        moved = _theory_change(before["theory"], after["theory"], digits)
        if moved:
            changes.append(Change(**where, kind="theory", detail=moved))
        z = _estimate_z(before.get("mc"), after.get("mc"))
        if z is not None and abs(z) > critical:
            changes.append(Change(**where, kind="estimate",
                                  detail=f"estimate {before['mc']['mean']:.6g} -> {after['mc']['mean']:.6g} "
                                         f"(z = {z:+.1f}, |z| > {critical:.2f})"))
    changes += [Change(row["id"], row["params"], "new", "not in the baseline")
                for key, row in new_rows.items() if key not in old_rows]
    changes += [Change(row["id"], row["params"], "missing", "in the baseline, not in this run")
                for key, row in old_rows.items() if key not in new_rows]
    return changes
