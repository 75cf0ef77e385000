"""A run as a Markdown report a person can read or attach to a paper's repository.

Input is the ``--json`` payload of a run (so a stored run can be reported later);
output is one Markdown string: the environment, the verdict counts, one table row
per case, then each refuted or changed case with its numbers and reason, and the
figures found beside the report.
"""

from __future__ import annotations

import os

from engine.render import format_params
from theorems.registry import REGISTRY

__all__ = ["markdown_report"]


def _cell(text) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _estimate(row) -> str:
    mc = row.get("mc")
    return "—" if not mc else f"{mc['mean']:.6g} ± {mc['se']:.2g} ({mc['trials']} trials)"


def _status(row) -> str:
    if row["as_expected"] is None:
        return "theory only"
    if row["as_expected"]:
        return row["verdict"] if row["verdict"] == "agree" else f"{row['verdict']}, as recorded"
    return f"**CHANGED**: {row['verdict']} (recorded: {row['expected']})"


def markdown_report(payload: dict, figures: list[str] = ()) -> str:
    """Markdown for a run; ``figures`` are image paths (relative to the report) to link."""
    env, rows = payload["environment"], payload["results"]
    lines = ["# Transfer-theorem checker: report", ""]
    lines += ["| environment | |", "|---|---|"]
    lines += [f"| {key} | {_cell(value)} |" for key, value in env.items()]
    counts = payload.get("summary", {}).get("verdicts", {})
    changed = [r for r in rows if r["as_expected"] is False]
    lines += ["", "## Summary", "",
              f"{len(rows)} cases of {len({r['id'] for r in rows})} claims: "
              + ", ".join(f"{count} {verdict}" for verdict, count in sorted(counts.items()))
              + f"; {len(changed)} changed from the recorded verdicts.", ""]
    lines += ["| # | claim | source | parameters | theory | Monte-Carlo | z | verdict |",
              "|---|---|---|---|---|---|---|---|"]
    for number, row in enumerate(rows, 1):
        source = REGISTRY[row["id"]].source if row["id"] in REGISTRY else ""
        z = row.get("z")
        lines.append(f"| {number} | `{row['id']}` | {_cell(source)} | {_cell(format_params(row['params']))} | "
                     f"{_cell(row['theory'])} | {_estimate(row)} | {'—' if z is None else f'{z:+.2f}' if isinstance(z, float) else z} | "
                     f"{_status(row)} |")
    certified = [(n, r) for n, r in enumerate(rows, 1) if r.get("certificate")]
    if certified:   # --certify: one line per row, the radius being the largest of the enclosures used
        lines += ["", "## Certificates", "", "| # | claim | certificate | radius | method |", "|---|---|---|---|---|"]
        for number, row in certified:
            c = row["certificate"]
            status = c["verdict"] + ("" if c.get("as_recorded") is not False else " (**CHANGED**: contradicts the record)")
            width = "—" if c["radius"] is None else f"{c['radius']:.1g}"
            lines.append(f"| {number} | `{row['id']}` | {status} | {width} | {_cell(c['method'])} |")
    notable = [(n, r) for n, r in enumerate(rows, 1) if r["verdict"] == "disagree" or r["as_expected"] is False]
    if notable:
        lines += ["", "## Refuted or changed", ""]
        for number, row in notable:
            theorem = REGISTRY.get(row["id"])
            lines += [f"### #{number} `{row['id']}` ({format_params(row['params'])})", ""]
            if theorem is not None:
                lines += [f"- claim: {theorem.title} ({theorem.source})", f"- test: {theorem.verdict_rule}"]
            lines += [f"- theory: {row['theory']}; Monte-Carlo: {_estimate(row)}"
                      + (f"; reference {row['mc']['reference']:.6g}" if row.get("mc") and row["mc"].get("reference") is not None else ""),
                      f"- result: {row['detail']}"]
            if row.get("finding"):
                lines.append(f"- recorded finding: {row['finding']}")
            lines.append("")
    if payload.get("skipped"):
        lines += ["", "## Skipped grid points", ""] + [f"- {note}" for note in payload["skipped"]]
    if figures:
        lines += ["", "## Figures", ""] + [f"![{os.path.basename(path)}]({path})" for path in figures]
    return "\n".join(lines).rstrip() + "\n"
