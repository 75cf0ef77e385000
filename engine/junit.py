"""A run as JUnit XML (``--junit PATH``), the format CI services read test results in.

Input is the ``--json`` payload of a run, as for the Markdown report.  One ``testcase`` per row:
``classname`` the claim id, ``name`` its parameters (and design law, where not Gaussian).  A row has a
``failure`` exactly when it makes the command line exit 1: its verdict differs from the recorded one,
or ``--baseline`` found it changed; a ``--theory-only`` row is ``skipped`` (it has no verdict).  A run
cut short by Ctrl-C gets one more testcase with an ``error``.  The row's numbers are in the testcase's
``properties`` (for machines) and in its ``system-out`` (for the person reading a CI page).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from engine.render import format_params, row_text
from engine.verdict import effect_text

__all__ = ["junit_xml"]


def _case_name(row) -> str:
    law = row.get("data")
    return format_params(row["params"]) + (f" [{law}]" if law not in (None, "gaussian") else "")


def _numbers(row) -> list[tuple[str, str]]:
    """(name, text) of everything a row measured, in the order the table shows it."""
    mc = row.get("mc") or {}
    fields = [("theory", row["theory"]), ("theory_warning", row.get("theory_warning")),
              ("mc_mean", mc.get("mean")), ("mc_se", mc.get("se")), ("mc_trials", mc.get("trials")),
              ("mc_reference", mc.get("reference")),
              ("mc_sizes", format_params(mc["sizes"]) if mc.get("sizes") else None),
              ("z", row.get("z")), ("effect", effect_text(row.get("effect")) or None),
              ("verdict", row["verdict"]), ("expected", row["expected"]), ("detail", row.get("detail")),
              ("finding", row.get("finding")), ("seconds", row.get("seconds"))]
    return [(name, str(value)) for name, value in fields if value is not None]


def _row_key(theorem_id: str, params: dict) -> tuple:
    return theorem_id, tuple(sorted((name, float(value)) for name, value in params.items()))


def junit_xml(payload: dict, complete: bool = True, changes=()) -> str:
    """The run as a JUnit XML document; ``changes``: the ``--baseline`` differences that are changes
    (``engine.baseline.Change``), each a failure of its row."""
    env, results = payload["environment"], payload["results"]
    changed = {}
    for change in changes:
        changed.setdefault(_row_key(change.id, change.params), []).append(change.detail)
    suites = ET.Element("testsuites", name="transfer-theorem-checker")
    suite = ET.SubElement(suites, "testsuite", name=f"verify.py tier {env['tier']}")
    properties = ET.SubElement(suite, "properties")
    for name, value in env.items():
        ET.SubElement(properties, "property", name=name, value=str(value))
    failures = skipped = 0
    for row in results:
        case = ET.SubElement(suite, "testcase", classname=row["id"], name=_case_name(row),
                             time=f"{row.get('seconds') or 0:.3f}")
        numbers = ET.SubElement(case, "properties")
        for name, value in _numbers(row):
            ET.SubElement(numbers, "property", name=name, value=value)
        reasons = []
        if row["as_expected"] is False:
            reasons.append(f"CHANGED: {row['verdict']} (recorded: {row['expected']})")
        reasons += [f"baseline: {detail}" for detail in changed.get(_row_key(row["id"], row["params"]), [])]
        if reasons:
            failures += 1
            failure = ET.SubElement(case, "failure", message="; ".join(reasons), type="changed")
            failure.text = row["detail"]
        elif row["as_expected"] is None:
            skipped += 1
            ET.SubElement(case, "skipped", message="theory only (--theory-only): no Monte-Carlo check, no verdict")
        ET.SubElement(case, "system-out").text = row_text(row)
    errors = 0
    if not complete:
        errors = 1
        case = ET.SubElement(suite, "testcase", classname="verify.py", name="run complete", time="0")
        ET.SubElement(case, "error", message=f"interrupted: only {len(results)} cases finished", type="interrupted")
    total = len(results) + errors
    seconds = f"{sum(row.get('seconds') or 0 for row in results):.3f}"
    for element in (suites, suite):
        element.set("tests", str(total))
        element.set("failures", str(failures))
        element.set("errors", str(errors))
        element.set("time", seconds)
    suite.set("skipped", str(skipped))
    ET.indent(suites)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"
