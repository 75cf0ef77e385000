"""What a person sees on the terminal: rich tables of a run, of a claim (``show``), of the registry.

Input is always the ``--json`` payload of a run (or a registered claim), never live objects of a check,
so a stored run renders as the live one did.
"""

from __future__ import annotations

import sympy as sp
from rich.markup import escape
from rich.table import Table

from engine.verdict import effect_text

__all__ = ["is_live", "format_params", "row_text", "verdict_cell", "certificate_cell", "render_table", "render_law_table",
           "render_stress", "render_baseline", "render_list", "render_claim", "render_map", "render_comparison"]


def is_live(console) -> bool:
    """Whether a person is watching: the console writes to a real terminal, not to a pipe or a file.

    Not ``console.is_terminal``: rich says yes to that whenever FORCE_COLOR is set, which CI services set
    to get colours in their logs, where a live display would write a stream of redrawn frames."""
    try:
        return console.file.isatty()
    except (AttributeError, ValueError):   # no isatty, or a closed file
        return False


def format_params(params: dict) -> str:
    return ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in params.items())


def log_line(row: dict, done: int, total: int) -> str:
    """One finished row as a log line (a run whose console is not a terminal has no live bar)."""
    law = f" [{row['data']}]" if row.get("data") not in (None, "gaussian") else ""
    return f"[{done}/{total}] {row['id']} {format_params(row['params'])}{law}: {row['verdict']} ({row['seconds']:.1f} s)"


def verdict_cell(result) -> str:
    verdict, expected = result["verdict"], result["expected"]
    accepted = result.get("accepted", [expected])
    if result["as_expected"] is None:
        return "[dim]theory only[/]"
    if result["as_expected"] and " or " in expected:
        # inside a finding that records a power limit: one of the verdicts that are fair draws there
        colour = "green" if verdict == "agree" else "magenta"
        return f"[{colour}]{'refuted' if verdict == 'disagree' else verdict}[/][dim], a fair draw as recorded[/]"
    if result["as_expected"] and verdict == "agree":
        # inside a finding's region with a corrected statement, below what this run resolves
        return "[green]agree[/]" if expected == "agree" else "[green]agree[/][dim], below detection as recorded[/]"
    if result["as_expected"]:
        return f"[magenta]{'refuted' if verdict == 'disagree' else verdict}, as recorded[/]"
    recorded = " or ".join(accepted) if accepted else "the corrected statement to hold"
    return f"[bold red]CHANGED: {verdict} (recorded: {recorded})[/]"


def certificate_cell(certificate) -> str:
    """A row's certificate (``--certify``): its verdict against the record and the largest enclosure radius."""
    verdict, recorded = certificate["verdict"], certificate.get("as_recorded")
    if verdict == "not certifiable":
        return "[dim]not certifiable: Monte-Carlo[/]"
    width = certificate.get("radius")
    spread = "" if width is None else ("\n[dim]exact[/]" if width == 0 else f"\n[dim]radius {width:.1g}[/]")
    if recorded is False:
        return f"[bold red]CHANGED: {verdict} (recorded: {'disproved' if verdict == 'proved' else 'proved'})[/]{spread}"
    colour = {"proved": "green", "disproved": "magenta"}.get(verdict, "yellow")
    return f"[{colour}]{verdict}{', as recorded' if verdict == 'disproved' else ''}[/]{spread}"


def _certificate_line(certificate) -> str:
    text = f"certificate: {certificate['verdict']}"
    if certificate["verdict"] != "not certifiable":
        text += f" ({certificate['seconds']:.2f} s): {certificate['detail']}"
    return text


def row_text(row) -> str:
    """A row as plain lines (theory, Monte-Carlo, z, effect, verdict, detail, finding): what a JUnit report and
    ``pytest --claims`` show of a case, where there is no table."""
    mc = row.get("mc")
    lines = [f"theory: {row['theory']}" + (f" (warning: {row['theory_warning']})" if row.get("theory_warning") else "")]
    if mc:
        spread = "" if mc.get("se") is None else f" ± {mc['se']:.2g}"
        sizes = f"; {format_params(mc['sizes'])}" if mc.get("sizes") else ""
        lines.append(f"Monte-Carlo: {mc['mean']:.6g}{spread} ({mc['trials']} trials{sizes})")
    if row.get("z") is not None:
        lines.append(f"z: {row['z']:+.2f}" if isinstance(row["z"], float) else f"z: {row['z']}")
    if row.get("effect"):
        lines.append(f"effect: {effect_text(row['effect'])}")
    lines.append(f"verdict: {row['verdict']} (recorded: {row['expected']})")
    lines.append(f"detail: {row['detail']}")
    if row.get("finding"):
        lines.append(f"recorded finding: {row['finding']}")
    if row.get("certificate"):
        lines.append(_certificate_line(row["certificate"]))
    return "\n".join(lines) + "\n"


def _mc_cell(mc) -> str:
    if mc is None:
        return "—"
    sizes = ", ".join(f"{k}={' '.join(map(str, v)) if isinstance(v, list) else v}" for k, v in (mc.get("sizes") or {}).items())
    spread = "" if mc.get("se") is None else f" ± {mc['se']:.2g}"
    return f"{mc['mean']:.6g}{spread}\n[dim]{mc['trials']} trials; {sizes}[/]"


def render_table(payload: dict, console) -> None:
    """The run's table, then one detail line per row (with its recorded finding and precision warning)."""
    env, results = payload["environment"], payload["results"]
    dtype = "" if env["dtype"] == "float64" else " · float32 where declared safe"
    family = f" · false alarms split over {len(results)} points" if len(results) > 1 else ""
    table = Table(title=f"tier {env['tier']} · seed {env['seed']} · {env['device']} · {env['dps']} digits{dtype}{family}",
                  show_lines=True)
    longest = max((len(r["id"]) for r in results), default=2)
    certified = any("certificate" in r for r in results)
    for column in ("#", "id", "parameters", "theory", "Monte-Carlo (trials, sizes)", "z", "effect", "verdict",
                   *(("certified",) if certified else ()), "s"):
        # an id is never wrapped or cut (a log is grepped for it), nor the word CHANGED: the other columns fold
        table.add_column(column, overflow="fold", justify="right" if column in ("#", "z", "s") else "left",
                         no_wrap=column == "id", min_width={"id": longest, "verdict": 9}.get(column))
    for row, r in enumerate(results, 1):
        theory = r["theory"] if len(r["theory"]) <= 14 else r["theory"][:12] + "…"
        if r.get("theory_warning"):   # the line itself is printed under the table
            theory += "\n[yellow]⚠ precision[/]"
        z = r["z"]
        z_text = "—" if z is None else (f"{z:+.2f}" if isinstance(z, float) else str(z))
        cells = (certificate_cell(r["certificate"]) if "certificate" in r else "—",) if certified else ()
        table.add_row(str(row), r["id"], format_params(r["params"]), theory, _mc_cell(r["mc"]), z_text,
                      effect_text(r.get("effect")) or "—", verdict_cell(r), *cells, f"{r['seconds']:.1f}")
    console.print(table)
    for row, r in enumerate(results, 1):
        console.print(f"#{row} [bold]{r['id']}[/]: {escape(r['detail'])}", highlight=False)
        if r.get("finding"):
            console.print(f"  [magenta]recorded finding: {escape(r['finding'])}[/]", highlight=False)
        if r.get("corrected"):
            c = r["corrected"]
            console.print(f"  [cyan]corrected statement ({escape(c['statement'])}): {c['verdict']}: "
                          f"{escape(c['detail'])}[/]", highlight=False)
        if r.get("expectation"):
            console.print(f"  [dim]expected: {escape(r['expectation'])}[/]", highlight=False)
        if r.get("theory_warning"):
            console.print(f"  [yellow]⚠ theory: {escape(r['theory_warning'])}[/]", highlight=False)
        if r.get("certificate") and r["certificate"]["verdict"] != "not certifiable":
            console.print(f"  [cyan]{escape(_certificate_line(r['certificate']))}[/]", highlight=False)
    for note in payload.get("skipped", []):
        console.print(f"[yellow]{escape(note)}[/]", highlight=False)


def render_law_table(payload: dict, laws: list[str], console) -> None:
    """One row per claim and case, one column per design law: the verdict (and z) of each run."""
    env, results = payload["environment"], payload["results"]
    table = Table(title=f"verdict per design law · tier {env['tier']} · seed {env['seed']} · {env['device']}",
                  show_lines=True)
    table.add_column("id", overflow="fold")
    table.add_column("parameters", overflow="fold")
    for law in laws:
        table.add_column(law, overflow="fold")
    cells = {}
    for r in results:
        z = r["z"]
        z_text = f"\n[dim]z={z:+.1f}[/]" if isinstance(z, float) else ""
        cells.setdefault((r["id"], format_params(r["params"])), {})[r["data"] or "gaussian"] = verdict_cell(r) + z_text
    for (theorem_id, params), row in cells.items():
        table.add_row(theorem_id, params, *(row.get(law, "—") for law in laws))
    console.print(table)
    for r in results:
        if r["as_expected"] is False or (r["verdict"] != "agree" and r.get("data") not in (None, "gaussian")):
            console.print(f"[bold]{r['id']}[/] {format_params(r['params'])} [{r['data']}]: {escape(r['detail'])}",
                          highlight=False)
            if r.get("finding"):
                console.print(f"  [magenta]recorded finding: {escape(r['finding'])}[/]", highlight=False)


def render_stress(payload: dict, console) -> None:
    """``stress``: one row per claim and broken assumption, then the identities' table (law by law)."""
    env, results = payload["environment"], payload["results"]
    table = Table(title=f"assumptions broken · tier {env['tier']} · seed {env['seed']} · {env['device']} · false "
                        f"alarms split over {len(results)} rows", show_lines=True)
    for column in ("#", "id", "case", "assumption broken", "law (--data)", "verdict", "effect", "s"):
        table.add_column(column, overflow="fold", justify="right" if column in ("#", "s") else "left",
                         no_wrap=column == "id")
    for number, r in enumerate(results, 1):
        table.add_row(str(number), r["id"], r.get("case", ""), r["assumption"], r["data"], verdict_cell(r),
                      effect_text(r.get("effect")) or "—", f"{r['seconds']:.1f}")
    console.print(table)
    for number, r in enumerate(results, 1):
        if r["verdict"] != "agree" or r["as_expected"] is False:
            law = escape("[" + r["data"] + "]")
            console.print(f"#{number} [bold]{r['id']}[/] {law}: {escape(r['detail'])}", highlight=False)
            if r.get("finding"):
                console.print(f"  [magenta]recorded: {escape(r['finding'])}[/]", highlight=False)
            if r.get("expectation"):
                console.print(f"  [dim]expected: {escape(r['expectation'])}[/]", highlight=False)
    changed = sum(r["as_expected"] is False for r in results)
    console.print(f"{len(results)} rows in {payload['seconds']:.0f} s; {changed} not as recorded", highlight=False)
    identities = payload.get("identities")
    if not identities:
        return
    cells, (n, d) = identities["cells"], identities["sizes"]
    labels = list(dict.fromkeys(cell["label"] for cell in cells))
    grid = Table(title=f"identities the proofs use, n x d = {n} x {d}, {identities['samples']} draws per law: departure "
                       f"from the Gaussian value (red: rejected)", show_lines=False)
    grid.add_column("law", no_wrap=True)
    for label in labels:
        grid.add_column(label, justify="right")
    by_law = {}
    for cell in cells:
        effect = cell["effect"]
        if cell["holds"] is None:
            text = f"[red]oo ({100 * cell['infinite_fraction']:.2g}%)[/]"
        else:
            number = f"{100 * effect['estimate']:+.1f}%" if effect["unit"] == "relative" else f"{effect['estimate']:+.4f}"
            text = f"[{'green' if cell['holds'] else 'red'}]{number}[/]"
        by_law.setdefault(cell["law"], {})[cell["label"]] = text
    for law, row in by_law.items():
        grid.add_row(law, *(row.get(label, "—") for label in labels))
    console.print(grid)
    for identity in identities["legend"]:
        console.print(f"  [dim]{identity['label']}: {escape(identity['statement'])} ({escape(identity['used_by'])})[/]",
                      highlight=False)
    console.print("  [dim]oo (f): a fraction f of the draws is singular, so the expectation is infinite[/]",
                  highlight=False)


def render_baseline(differences, path: str, console) -> None:
    changes = [d for d in differences if d.is_change]
    listed = [d for d in differences if not d.is_change]
    if not changes:
        console.print(f"[green]no change against {escape(path)}[/]"
                      + (f" ({len(listed)} rows in only one of the runs)" if listed else ""))
    for d in changes:
        console.print(f"[bold red]CHANGED[/] {d.id} {escape(format_params(d.params))}: {escape(d.detail)}", highlight=False)
    for d in listed:
        console.print(f"[dim]{d.kind}[/] {d.id} {escape(format_params(d.params))}: {d.detail}", highlight=False)


def render_list(claims, console, ids_only: bool = False) -> None:
    """``list``: a table on a terminal; elsewhere (a pipe, a file) one plain line per claim, tab-separated
    (id, recorded verdict, title, source), so that scripts can cut, grep and read it; ``--ids``: the ids alone."""
    if ids_only or not is_live(console):
        for theorem in claims:
            fields = (theorem.id,) if ids_only else (theorem.id, theorem.record, theorem.title, theorem.source)
            print("\t".join(" ".join(field.split()) for field in fields), file=console.file)
        return
    table = Table(title="registered claims")
    longest = max((len(theorem.id) for theorem in claims), default=2)
    for column in ("id", "title", "source", "recorded verdict"):
        # an id is never wrapped or cut, however narrow the terminal: the other columns fold instead
        table.add_column(column, overflow="fold", no_wrap=column == "id", min_width=longest if column == "id" else None)
    for theorem in claims:
        table.add_row(theorem.id, theorem.title, theorem.source, theorem.record)
    console.print(table)


def render_claim(theorem, theory: str, warning: str | None, power: list[str], console) -> None:
    """``show ID``: statement, derivations, assumptions, parameters, budgets, verdict rule, controls, power."""
    symbolic = theorem.symbolic()
    say = lambda text: console.print(text, highlight=False)   # noqa: E731
    console.rule(f"[bold]{theorem.id}[/]: {theorem.title}")
    say(f"[bold]source[/]      {escape(theorem.source)}")
    say(f"[bold]statement[/]   {escape(theorem.statement)}")
    say(f"[bold]quantity[/]    {escape(theorem.quantity)}")
    say(f"[bold]theory[/]      {escape(theory)}")
    if warning:
        say(f"  [yellow]⚠ {escape(warning)}[/]")
    console.print("[bold]sympy[/]")
    console.print(sp.pretty(symbolic.statement, use_unicode=True), markup=False, highlight=False)
    console.print("[bold]LaTeX[/]", end="       ")
    console.print(sp.latex(symbolic.statement), markup=False, highlight=False)
    console.print("[bold]derived with sympy[/]")
    for derivation in symbolic.derivations:
        mark = "[green]✓[/]" if derivation.holds else "[red]✗[/]"
        result = "" if derivation.result is None else f"  →  {derivation.result}"
        say(f"  {mark} {escape(derivation.claim + result)}")
    console.print("[bold]assumptions[/]")
    for assumption in theorem.assumptions:
        say(f"  • {escape(assumption)}")
    table = Table("parameter", "domain", "default", "meaning")
    for p in theorem.parameters:
        default = p.default if isinstance(p.default, str) else ", ".join(f"{k}: {v}" for k, v in p.default.items())
        table.add_row(p.name, p.domain_text(), default, p.description)
    console.print(table)
    budgets = Table("budget per tier", "quick", "default", "paper")
    budgets.add_row("trials", *(str(theorem.trials[tier]) for tier in ("quick", "default", "paper")))
    for name, per_tier in theorem.budget.items():
        budgets.add_row(name, *(str(per_tier[tier]) for tier in ("quick", "default", "paper")))
    console.print(budgets)
    say(f"[bold]verdict rule[/] {escape(theorem.verdict_rule)}")
    if theorem.limits:
        say(f"[bold]order of limits[/] {escape(theorem.limits)}")
    say(f"[bold]false-alarm probability[/] <= {theorem.false_alarm:g} per run of this check; a run of k points "
        f"tests each at {theorem.false_alarm:g}/k and a check of m comparisons each of those at 1/m of that "
        f"(Bonferroni), so the whole run alarms with probability <= {theorem.false_alarm:g} (normal approximation; a "
        f"z-test of a Monte-Carlo mean is corrected for the draws' skewness, Hall 1992: see docs/trust.md)")
    say("[bold]certifiable[/] " + (f"yes (--certify): {escape(theorem.certify_method)}" if theorem.certify else
                                   "no (--certify says: not certifiable: Monte-Carlo; it is checked by sampling only)"))
    say("[bold]arithmetic[/]  " + ("float64, or float32 with --dtype float32 (standard errors floored at 1e-5 "
                                   "relative)" if theorem.float32 else "float64 always"))
    if theorem.samples_design:
        say("[bold]design law[/]  --data NAME (gaussian by default); 'verify.py universality-table' runs every law")
    if theorem.input_assumptions:
        from theorems.core import INPUT_ASSUMPTIONS
        say("[bold]input assumptions[/] (what its proof uses about the rows of X; 'verify.py stress' breaks each)")
        for word in theorem.input_assumptions:
            assumption = INPUT_ASSUMPTIONS[word]
            say(f"  • {word}: {escape(assumption.meaning)} [dim](broken by --data {assumption.law})[/]")
    for case in (c for c in theorem.all_cases if c.laws):
        for law, (verdict, finding, *_) in case.laws.items():
            where = ", ".join(f"{k}={v}" for k, v in case.params.items()) or "defaults"
            say(f"  [magenta]recorded under --data {law} at {escape(where)}: {verdict}: {escape(finding)}[/]")
    if theorem.findings:
        console.print("[bold]recorded findings[/] (where the check refutes the claim; 'agree' is expected elsewhere)")
        for finding in theorem.findings:
            edge = (f"corrected statement: {finding.corrected}; inside, the paper's formula is expected to fail where "
                    f"this run resolves the difference" if finding.corrected else
                    f"a power limit: {finding.verdicts} inside" if finding.fair else f"a sharp edge: {finding.verdict} inside")
            say(f"  • where {escape(finding.region)}: {escape(finding.why)} [dim]({escape(edge)})[/]")
    else:
        say("[bold]recorded verdict[/] agree over the whole domain")
    console.print("[bold]cases run by 'all'[/]")
    for case in theorem.all_cases:
        text = ", ".join(f"{k}={v}" for k, v in case.params.items()) or "defaults"
        say(f"  • {escape(text)}")
    if theorem.negative_controls:
        console.print("[bold]negative controls[/] (wrong formulas the check must reject)")
        for control in theorem.negative_controls:
            where = ", ".join(f"{k}={v}" for k, v in control.params.items()) or "defaults"
            say(f"  • {escape(control.name)}: {escape(control.why or ', '.join(control.formulas))} at {escape(where)}"
                f" → {control.verdict}")
    console.print("[bold]power[/] (smallest relative error in the claimed value detected with P >= 0.9)")
    for line in power:
        say(f"  • {escape(line)}")


def render_map(data: dict, console) -> None:
    """A validity map as a table (one row per point, ordered along the axes) and its boundaries."""
    axes = [axis["name"] for axis in data["axes"]]
    colours = {"holds": "green", "fails": "red", "undecided": "yellow"}
    rate = f"each point at {data['rate_per_point']:.2g}" if data["rate_per_point"] else "deterministic"
    table = Table(title=f"{data['key']['claim']}: where it holds within tau = {data['tolerance']:g} · tier "
                        f"{data['key']['tier']} · {rate}", show_lines=False)
    for column in (*axes, "effect", "class", "verdict", "corrected", "s"):
        table.add_column(column, justify="right" if column in (*axes, "s") else "left")
    for point in sorted(data["points"], key=lambda p: tuple(p["at"][a] for a in axes)):
        row = point["row"]
        table.add_row(*(f"{point['at'][a]:.4g}" for a in axes), effect_text(row.get("effect")) or "—",
                      f"[{colours[point['class']]}]{point['class']}[/]", verdict_cell(row),
                      point["corrected_verdict"] or "—", f"{row['seconds']:.1f}")
    console.print(table)
    for b in data["boundaries"]:
        where = ", ".join(f"{k}={v:.4g}" for k, v in b["at"].items())
        console.print(f"boundary {b['classes'][0]} -> {b['classes'][1]} at {b['axis']} = {b['estimate']:.4g} "
                      f"± {b['uncertainty']:.2g}" + (f" ({where})" if where else ""), highlight=False)
    for finding in data["regions"]:
        console.print(f"[magenta]recorded finding where {escape(finding['region'])}[/]", highlight=False)
    for note in data.get("skipped", []):
        console.print(f"[yellow]{escape(note)}[/]", highlight=False)
    console.print(f"{data['counts']['holds']} hold, {data['counts']['fails']} fail, {data['counts']['undecided']} "
                  f"undecided; {data['changed']} not as the record predicts; {data['seconds']:.0f} s")


def render_comparison(title: str, rows, console) -> None:
    """``compare``: one row per setting, each paper's prediction against the trained networks."""
    table = Table(title=title, caption="distance: max over draws of ||beta_ft - prediction|| / ||P_perp theta_S||; "
                  "verdict: per draw (within the integrator's tolerance), in risk (paired z-test, false alarm 1e-3), off")
    for column in ("init", "sigma", "L", "trained risk"):
        table.add_column(column, justify="right")
    for paper in rows[0].predictions:
        table.add_column(paper + ": risk, z, distance, verdict", overflow="fold")
    table.add_column("eq. (5)'s c", overflow="fold")
    for row in rows:
        cells = [f"{p['risk']:.4f}, " + ("" if p["verdict"] == "per draw" else f"z={p['z']:+.1f}, ")
                 + f"{p['distance']:.1e}, {p['verdict']}" for p in row.predictions.values()]
        table.add_row(row.setting["init"], f"{row.setting['sigma']:g}", str(row.setting["L"]), str(row.risk), *cells,
                      row.note)
    console.print(table)
