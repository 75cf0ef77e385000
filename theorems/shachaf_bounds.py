"""Shachaf, Brutzkus & Globerson, fine-tuning with linear teachers, Thm 5.4: the Gaussian bounds (9), (10).

Claim (Sigma = I, rows of X i.i.d. N(0, I), n <= d, noiseless y = X theta_T, the conditions of
Thm 5.2): there is a constant c > 0 such that for any eps > 0, with probability at least
1 - 4 exp(-c eps^2 n) - 4 exp(-c eps^2 (d - n)) over X,

  (9)  R(beta)  <= (d-n)/d (1+eps)^2 ||theta_T||^2 ||theta_hat_T - theta_hat_S||^2 + (d-n)/d zeta^2
       for the L -> oo fine-tuned network beta (eqs. (6)-(7)), zeta = zeta(||theta_T||) "~ eps ||theta_T||";
  (10) R(gamma) <= (d-n)/d (1+eps)^2 ||theta_T - theta_S||^2 for the L = 1 solution gamma (eqs. (1)-(2)).

What is simulated.  At each size of a ladder d, d/2, d/4 (n = round(gamma d_k)), ``trials`` draws of
X and of a task pair (||theta_S||, ||theta_T|| fixed, angle theta, uniformly rotated):
  * L = 1: a linear model is trained from theta_S by gradient descent on the first draws of the
    smallest size (where training is cheap); per draw it must land on theta_S + X^+(y - X theta_S)
    within the error its final loss certifies, and R(gamma) of every draw of every size is that
    limit's risk ||P_perp (theta_T - theta_S)||^2.
  * L -> oo: R(beta) per draw is eq. (7), ||P_perp (theta_T - c_inf theta_S)||^2 with eq. (6)'s
    c_inf = ||P_par theta_T|| / ||P_par theta_S|| computed by mpmath.  Bound (9) is about this limit,
    which no network reaches; it is tied to trained networks twice: (i) depth-L networks (L >= 2,
    exactly 0-balanced rank-one init as in depth-rescaling, pretrained and fine-tuned by RK4 gradient
    flow) on the first draws of the smallest size must land on eq. (5) at their depth, whose
    L -> oo limit is eq. (6) (sympy, depth-rescaling); (ii) eq. (5)'s risk at L = 2, 3, 5, 10, 100 is
    set against (9) on the first draws of the largest size: (9) is an L -> oo statement, and finite
    depths can exceed it (by how much depends on ||theta_S||, which (9) does not contain).

What is compared (per bound, per size, on the same draws): the slack bound - risk; the fraction of
draws where the bound fails, at eps and at 2, 4, 8 eps, with a one-sided lower confidence bound;
and the ratio risk / centre, where the centre is the bound at eps -> 0+ ((d-n)/d ||theta_T - theta_S||^2
for (10), exactly E R(gamma); (d-n)/d ||theta_T||^2 ||theta_hat_T - theta_hat_S||^2 for (9)): Lemma 5.3.2
puts the risk there, and the (1+eps)^2 band is a band around it.

The constant c.  It is unspecified, and each finite experiment is compatible with some small enough
c (the form is >= 1 for c -> 0), so "there is a c > 0" is only refuted by a sequence.  The check:
  * reports, per point, c_U: every c <= c_U is compatible with the observed failures (1e-3 level);
  * tests what holds whatever c is: the centre is where the risk concentrates (mean ratio 1, spread
    shrinking like 1/sqrt(d) along the ladder: exactly for (10), extrapolated in 1/d for (9)), and a
    bound sitting below the bulk of the risk (failing in more than half the draws at the largest size,
    and not less often than at the smallest) fails with probability -> 1, which no c allows;
  * holds the form to a declared floor C_FLOOR = 1/50.  Lemma 5.3.2, which the paper's proof invokes,
    holds with the explicit c = 1/2 (Dasgupta & Gupta 2003; see numerics.depth_rescaling.projection_tail),
    and the 4 + 4 terms are four uses of it, so the theorem's c is that constant up to how the proof
    rescales eps; 1/50 allows a rescaling by 5.  A refutation at the floor is reported with c_U, so
    the reader sees how far below any floor the data go.

zeta.  The paper leaves it at "zeta(||theta_T||) ~ eps ||theta_T||"; here zeta = z eps ||theta_T|| with the
parameter z (default 1, the printed form).

Note on (10): R(gamma) <= ||theta_T - theta_S||^2 always, so (10) cannot fail once (1+eps)^2 >= d/(d-n)
(eps >= 0.414 at gamma = 1/2); the default eps = 1/4 keeps it a real test.

The proof.  The supplementary proofs are not in the paper's text.  The route the text names (Lemma
5.3.2 for P_par theta_T, P_par theta_S and P_perp) gives kappa = c_inf ||theta_S|| / ||theta_T|| in
[(1-eps)/(1+eps), (1+eps)/(1-eps)] and sqrt R(beta) <= (1+eps) sqrt((d-n)/d) ||theta_T|| (D + 2 eps/(1-eps)),
D = ||theta_hat_T - theta_hat_S||.  It needs eps < 1 (for eps >= 1 the lemma's lower side bounds
||P_par theta_S|| away from 0 no longer, and kappa is unbounded), and squared it has a cross term
4 eps (1+eps)^2 ||theta_T||^2 D / (1-eps) that the printed sum of squares lacks.  The simulation shows the
cross term is a worst-case artefact (the printed form with zeta = eps ||theta_T|| holds in the bulk), but
"for any eps > 0" fails at large eps: at n = 1, kappa is a ratio of correlated Gaussians, P(fail (9)) ~ A/eps
(numerics.depth_rescaling.eq9_tail_constant_n1), a polynomial tail that no sub-Gaussian 8 exp(-c eps^2)
bounds, and at every n the tail is ~ eps^-n (the recorded finding, from eps = 1 on).  Its corrected statement is
the exact law of R(beta) for Gaussian X (numerics.deep_risk_law): the check tests the failure probability it
gives at every size and eps against the failing draws (two-sided), and the engine derives from it how likely
the paper's fraction tests are to alarm, hence which verdicts the record accepts at each point.

Measured (quick tier, seed 0, d = 80/40/20, n = d/2, eps = 1/4, theta = pi/4, unit norms, 2000 draws per
size): R(gamma)/centre 1.008/0.997/1.000 with sd*sqrt(d) 1.41/1.38/1.34 (exact 1.40/1.38/1.35); (10) fails
in 0.00/0.10/2.40 % of the draws (exact 0.01/0.32/2.85 %), (9) in 0.70/3.85/11.55 %; R(beta)/centre
1.048/1.076/1.189 -> 1.04 ± 0.018 as 1/d -> 0; every c <= 3.4 compatible; trained L = 2 networks within
5e-7 of eq. (5).  Finding case (n = 4/2/1): (9) fails at n = 1 in 4.4/2.7/1.8/1.1 % at eps = 8/16/32/64,
only c <= 2e-3 compatible at eps = 64; (10) never fails there.
"""

from __future__ import annotations

import math

import mpmath as mp
import sympy as sp

from numerics.binomial_bounds import chernoff_lower_bound
from numerics.deep_risk_law import deep_risk_survival
from numerics.depth_rescaling import (eq9_deep_risk_bound, eq9_tail_constant_n1, eq10_linear_risk_bound,
                                      linear_risk_ratio_variance, projection_tail, rescaling_coefficient,
                                      rescaling_limit_coefficient, symbolic_depth_limit, thm54_admissible_c,
                                      thm54_failure_bound)
from simulate.depth_finetune import interpolating_row_part
from simulate.finetune_limits import finite_depth_risks, risk_against_bounds, simulate_limits, trained_depth_row
from simulate.stats import weighted_poly_fit
from theorems.core import (Case, Control, Derivation, Finding, Outcome, Parameter, Perturbation, Symbolic, Theorem,
                           as_float, mpf)
from theorems.registry import register

__all__ = ["gaussian_depth_bound"]

FALSE_ALARM = 1e-3
SIZE_LADDER = (1, 2, 4)            # the check runs d, d/2, d/4 at fixed gamma
EPS_LADDER = (1, 2, 4, 8)          # failure fractions also at these multiples of eps (same draws)
C_FLOOR = 1 / 50                   # the smallest c the form is held to (see the module docstring)
EPS_CENTRE = 1e-15                 # the centre of a bound is its value at eps -> 0+, taken at this eps
MIN_N_CENTRE = 10                  # the (9) centre test needs n >= 10 at a size: E R(beta) is infinite for
                                   # n <= 2 and Var R(beta) for n <= 4 (1/||P_par theta_S||^2 has a heavy tail)
CHUNK = 500                        # draws per tensor batch (memory)
DEEP_ALPHA = 0.5                   # exactly 0-balanced rank-one init (depth-rescaling's balanced = 1 case)
DEPTH_DRAWS = 100                  # eq. (5)'s risk at finite depths on the first draws of the largest size
DEPTHS_EQ5 = (2, 3, 5, 10, 100)
GD_MAX_STEPS = 200000
PAPER = "Shachaf, Brutzkus & Globerson, fine-tuning with linear teachers"
ROUNDING = 1e-10                   # relative float64 floor for the L = 1 certificate


# --- parameters ---------------------------------------------------------------------------------

PARAMETERS = (
    Parameter("gamma", "n/d (n = round(gamma d_k) at each size d_k of the ladder d, d/2, d/4)", "1/2", lower="0",
              upper="1", lower_open=True, upper_open=True),
    Parameter("eps", "the bounds' eps (failure fractions are also reported at 2, 4, 8 eps)", "1/4", lower="0",
              lower_open=True, typical=("1/10", "1")),
    Parameter("theta", "angle between theta_S and theta_T (theta = 0 is Thm 5.3: R(beta) = 0)", "pi/4", lower="0",
              upper="pi", lower_open=True),
    Parameter("norm_s", "||theta_S||", "1", lower="0", lower_open=True, typical=("1/3", "3")),
    Parameter("norm_t", "||theta_T||", "1", lower="0", lower_open=True, typical=("1/3", "3")),
    Parameter("zeta", "zeta / (eps ||theta_T||) in (9): the paper leaves zeta at '~ eps ||theta_T||'", "1",
              lower="0", typical=("1/2", "2")),
    Parameter("d", "largest input dimension of the ladder d, d/2, d/4",
              {"quick": "80", "default": "160", "paper": "320"}, lower="8", upper="2000", integer=True),
)


def _ladder(params) -> list[tuple[int, int]]:
    """(n, d) at each size, largest first."""
    d, gamma = int(params["d"]), float(params["gamma"])
    sizes = []
    for m in SIZE_LADDER:
        dk = round(d / m)
        sizes.append((round(gamma * dk), dk))
    return sizes


def _constraints(params) -> str | None:
    for n, d in _ladder(params):
        if not 1 <= n <= d - 1:
            return f"need 1 <= n <= d - 1 at every size of the ladder, got n = round(gamma d) = {n} at d = {d}"
    return None


# --- the bounds as numbers ------------------------------------------------------------------------

def _task_norms(p) -> tuple[mp.mpf, mp.mpf, mp.mpf]:
    """||theta_T||, D = ||theta_hat_T - theta_hat_S|| = 2 sin(theta/2), ||theta_T - theta_S|| (mpmath)."""
    s, t, theta = mp.mpf(p["norm_s"]), mp.mpf(p["norm_t"]), mp.mpf(p["theta"])
    return t, 2 * mp.sin(theta / 2), mp.sqrt(s * s + t * t - 2 * s * t * mp.cos(theta))


def _bound_values(formulas, p, n, d, eps) -> dict[str, float]:
    """(9) and (10) at one size and eps (the same for every draw: the norms are fixed)."""
    with mp.workdps(30):
        norm_t, dist_hat, dist = _task_norms(p)
        eps = mp.mpf(eps)
        zeta = mp.mpf(p["zeta"]) * eps * norm_t
        return {"9": float(formulas["eq9"](n, d, eps, norm_t, dist_hat, zeta=zeta)),
                "10": float(formulas["eq10"](n, d, eps, dist))}


# --- the check ------------------------------------------------------------------------------------

def _at_eps(row: dict, name: str) -> dict:
    """A size's failure entry for bound ``name`` ("10" or "9") at the claimed eps, the first of eps, 2 eps, 4 eps,
    8 eps: what the centre, bulk (B) and report read."""
    return row[name]["by_eps"][0]


def _report(p, trials, per_size, centre9, deep_rows, depth_rows, depth_draws, tail) -> list[str]:
    """The check's numbers as short clauses (sizes separated by '/', largest first)."""
    def joined(values, fmt):
        return "/".join(format(v, fmt) for v in values)

    def first(name, key):                   # at the check's eps, per size
        return [_at_eps(row, name)[key] for row in per_size]

    largest, smallest = per_size[0], per_size[-1]
    c_up = min(min(first("10", "c_upper")), min(first("9", "c_upper")))
    text = [
        f"d={joined([r['d'] for r in per_size], 'd')} (n={joined([r['n'] for r in per_size], 'd')}), eps={p['eps']:g}, "
        f"{trials} draws per size",
        f"(10): R(gamma)/centre {joined([r['10']['mean_ratio'] for r in per_size], '.3f')} (exactly 1), sd*sqrt(d) "
        f"{joined([r['10']['sd_ratio_sqrt_d'] for r in per_size], '.2f')} (exact "
        f"{joined([r['10']['sd_ratio_sqrt_d_exact'] for r in per_size], '.2f')}); fails in {joined(first('10', 'fraction'), '.2%')} "
        f"(exact {joined(first('10', 'exact'), '.2%')}); min slack {joined([s['min'] for s in first('10', 'slack')], '+.3g')}",
        f"(9): R(beta)/centre median {joined([r['9']['median_ratio'] for r in per_size], '.3f')}, mean "
        + "/".join(f"{r['9']['mean_ratio']:.3f}" if r["n"] >= MIN_N_CENTRE else "-" for r in per_size)
        + (f" -> {centre9['limit']:.3f} ± {centre9['se']:.2g} as 1/d -> 0" if centre9 else "")
        + ", sd*sqrt(d) " + "/".join(f"{r['9']['sd_ratio_sqrt_d']:.2f}" if r["n"] >= MIN_N_CENTRE else "-" for r in per_size)
        + f"; fails in {joined(first('9', 'fraction'), '.2%')}; min slack {joined([s['min'] for s in first('9', 'slack')], '+.3g')}",
        f"at d={largest['d']} and eps x {joined(EPS_LADDER, 'd')}: (10) fails in "
        f"{joined([e['fraction'] for e in largest['10']['by_eps']], '.2%')}, (9) in "
        f"{joined([e['fraction'] for e in largest['9']['by_eps']], '.2%')}",
        f"compatible with every c <= {c_up:.3g} at eps={p['eps']:g}" if math.isfinite(c_up)
        else f"no failure at eps={p['eps']:g} is significant: compatible with every c",
        f"L=1 GD on {smallest['gd']['draws']} draws at d={smallest['d']}: within {smallest['gd']['excess']:.2g}x its certified "
        f"error of theta_S + X^+(y - X theta_S) after {smallest['gd']['steps']} steps",
        "trained L=" + ", ".join(f"{r['L']}: within {r['max_relative_distance']:.1g} of eq. (5), mean risk {r['mean_risk']:.4g} "
                                 f"({r['within_eq9']:.0%} within (9))" for r in deep_rows) + f" at d={smallest['d']}",
        f"eq. (5) mean risk at L={joined([r['L'] for r in depth_rows], '')}: {joined([r['mean_risk'] for r in depth_rows], '.3g')}, "
        f"within (9): {joined([r['within_eq9'] for r in depth_rows], '.0%')} ({depth_draws} draws at d={largest['d']}, "
        f"(9) being an L -> oo bound)",
    ]
    if tail:
        text.append(f"n=1 tail of (9): eps*P(fail) = {joined([t['eps_times_fraction'] for t in tail], '.3f')} at eps="
                    f"{joined([t['eps'] for t in tail], 'g')} (derived limit {tail[-1]['derived_limit']:.3f}: polynomial in eps)")
    return text


def _gdb_corrected(judge, F, p, per_size, trials, bulk, form) -> None:
    """The finding's corrected statement on the check's draws: at every size and eps, the failure probability of
    (9) that the exact law of R(beta) gives (``F["failure"]``), tested two-sided against the failing draws; and,
    for the engine's expectation of the paper's verdict, the probability behind each of the paper's fraction
    tests: that one for (9), the exact Beta tail for (10) (both exact), and for (B), which counts the largest
    size's failures only where they are not fewer than the smallest's, its upper bound."""
    rates = []
    for row in per_size:
        for entry in row["9"]["by_eps"]:
            entry["predicted"] = float(F["failure"](row["n"], row["d"], p["theta"], entry["bound"] / p["norm_t"] ** 2))
            rates.append((form[row["d"], "9", entry["eps"]], entry["predicted"], True))
        for entry in row["10"]["by_eps"]:
            rates.append((form[row["d"], "10", entry["eps"]], entry["exact"], True))
    largest = per_size[0]
    rates += [(bulk[name], _at_eps(largest, name)["predicted" if name == "9" else "exact"], False) for name in ("10", "9")]
    predicted = " / ".join(", ".join(f"{e['predicted']:.3g}" for e in row["9"]["by_eps"]) for row in per_size)
    observed = " / ".join(", ".join(f"{e['fraction']:.3g}" for e in row["9"]["by_eps"]) for row in per_size)
    fix = judge.corrected(GDB_CORRECTED, None, rates=rates,
                          summary=f"(9) fails in {observed} of the draws (sizes by '/', eps x 1, 2, 4, 8) against the "
                                  f"law of R(beta)'s {predicted}")
    for row in per_size:
        for entry in row["9"]["by_eps"]:
            fix.fraction(entry["failures"], trials, entry["predicted"],
                         f"(9) at n={row['n']}, d={row['d']}, eps={entry['eps']:g} against the law of R(beta)", alarm="both")


def _gdb_check(theorem, params, run) -> Outcome:
    p = as_float(params)
    F = theorem.formulas
    sizes = _ladder(params)
    trials = run.trials_for(theorem)
    eps_values = [p["eps"] * m for m in EPS_LADDER]
    judge = run.judge(theorem)
    gen = run.rng(theorem, params)
    gd_trials, deep_trials = run.budget(theorem, "gd_trials"), run.budget(theorem, "deep_trials")
    per_size, notes = [], []
    kept_small = kept_large = None
    for index, (n, d) in enumerate(sizes):
        smallest_size = index == len(sizes) - 1
        run.progress(f"n={n}, d={d}: {trials} draws" + (f", L = 1 by gradient descent on {gd_trials}" if smallest_size else ""))
        keep = max(deep_trials if smallest_size else 0, DEPTH_DRAWS if index == 0 else 0)
        linear, deep, gd, kept = simulate_limits(F["limit"], n, d, trials, p["theta"], p["norm_s"], p["norm_t"], gen,
                                                 run.data, gd_trials=gd_trials if smallest_size else 0, keep=keep,
                                                 chunk=CHUNK, gd_max_steps=GD_MAX_STEPS, rounding=ROUNDING)
        if gd is not None and not gd["converged"]:
            return Outcome("inconclusive", f"L = 1 gradient descent not converged after {gd['steps']} steps at d={d}",
                           sizes={"ladder": [f"{n}x{d}" for n, d in sizes]})
        if gd is not None:
            worst = max(gd["excess"], gd["risk_excess"])
            judge.per_draw(worst, f"L=1 at d={d}", text=f"GD misses theta_S + X^+(y - X theta_S) by {worst:.3g}x its "
                                                         f"certified error")
        if index == 0:
            kept_large = dict(kept, linear=linear[:keep], deep=deep[:keep])
        if index == len(sizes) - 1:
            kept_small = dict(kept, deep=deep[:keep])
        row = {"n": n, "d": d, "gd": gd}
        for name, risk in (("10", linear), ("9", deep)):
            summary, by_bound = risk_against_bounds(risk, _bound_values(F, p, n, d, EPS_CENTRE)[name],
                                                    [_bound_values(F, p, n, d, eps)[name] for eps in eps_values], d)
            row[name] = dict(summary, by_eps=[dict(eps=eps, **entry) for eps, entry in zip(eps_values, by_bound)])
            # the failure probability the claim allows at c = C_FLOOR; for (10) also the exact one (Beta law)
            for entry in row[name]["by_eps"]:
                with mp.workdps(20):
                    entry["claimed_at_c_floor"] = float(thm54_failure_bound(n, d, entry["eps"], C_FLOOR))
                    if name == "10":
                        entry["exact"] = float(projection_tail(d - n, d, entry["bound"] / float(_task_norms(p)[2]) ** 2))
        with mp.workdps(20):
            row["10"]["sd_ratio_sqrt_d_exact"] = math.sqrt(float(linear_risk_ratio_variance(n, d)) * d)
        per_size.append(row)

    # Bonferroni over every comparison below: the z-tests of (A) and the one-sided binomial bounds of (B) and (C).
    # (A) the centres: E R(gamma) / centre(10) = 1 exactly at every size; R(beta) / centre(9) -> 1 like 1/d
    for row in per_size:
        row["10"]["z"] = judge.fit(row["10"]["mean_ratio"], row["10"]["se_ratio"], 1.0,
                                   f"(10) is not a band around E R(gamma): mean R(gamma)/centre at d={row['d']}").z
    # E R(beta)/centre(9) = 1 + A/d + B/d^2 + ... at fixed n/d (measured: A ~ 3, B ~ 16 at gamma = 1/2), so with
    # three sizes the extrapolation is quadratic in 1/d (a straight line through d = 20, 40, 80 is biased by ~ -0.01,
    # 1.4 standard errors at the quick tier); with two, linear
    usable = [row for row in per_size if row["n"] >= MIN_N_CENTRE]
    centre9 = None
    if len(usable) >= 2:
        degree = min(2, len(usable) - 1)
        coefficients, errors = weighted_poly_fit([1 / r["d"] for r in usable], [r["9"]["mean_ratio"] for r in usable],
                                                 [r["9"]["se_ratio"] for r in usable], degree=degree)
        limit = judge.fit(coefficients[0], errors[0], 1.0, "(9) is not a band around where R(beta) concentrates: "
                          "R(beta)/centre extrapolated to 1/d -> 0")
        centre9 = {"limit": limit.value, "se": limit.se, "coefficients": coefficients, "degree": degree, "z": limit.z,
                   "sizes": [r["d"] for r in usable]}
    else:   # still takes its share: the per-test level is fixed in advance, not by which sizes have n >= 10
        judge.fit(0.0, 1.0, 0.0, "(9) centre (skipped)")
        notes.append(f"(9) centre test skipped: it needs n >= {MIN_N_CENTRE} at two sizes (R(beta) is heavy-tailed at small n)")

    # (B) a bound below the bulk of the risk fails with probability -> 1, which no c allows: more than half of the
    # draws at the largest size, and not fewer than at the smallest (else the test cannot refute: p = 1)
    # (B) and (C) are one-sided Chernoff-Hoeffding tests of a failure count against a failure probability
    largest, smallest = per_size[0], per_size[-1]
    bulk = {}
    for name in ("10", "9"):
        top, bottom = _at_eps(largest, name), _at_eps(smallest, name)
        bulk[name] = judge.fraction(top["failures"] if top["fraction"] >= bottom["fraction"] else 0, trials, 0.5,
                                    f"({name}) sits below the bulk of the risk",
                                    text=f"fails in {top['fraction']:.1%} of the draws at d={largest['d']} "
                                         f"({bottom['fraction']:.1%} at d={smallest['d']}) vs at most half")

    # (C) the probability form, held to c >= C_FLOOR at every size and eps
    form = {}
    for row in per_size:
        for name in ("10", "9"):
            for entry in row[name]["by_eps"]:
                form[row["d"], name, entry["eps"]] = judge.fraction(
                    entry["failures"], trials, entry["claimed_at_c_floor"],
                    f"({name}) at n={row['n']}, d={row['d']}, eps={entry['eps']:g}",
                    text=f"fails in {entry['fraction']:.2%} of the draws vs {entry['claimed_at_c_floor']:.2g} claimed at "
                         f"c = {C_FLOOR:g}")
    if run.data.name == "gaussian":
        _gdb_corrected(judge, F, p, per_size, trials, bulk, form)
    else:
        notes.append(f"the corrected statement (the law of R(beta)) is for Gaussian X: not tested on {run.data} designs")
    # every c <= c_U is compatible with the failures, at each test's share of the false-alarm rate
    alpha = judge.rate / judge.count
    for row in per_size:
        for name in ("10", "9"):
            for entry in row[name]["by_eps"]:
                entry["lower"] = chernoff_lower_bound(entry["failures"], trials, alpha)
                with mp.workdps(20):
                    entry["c_upper"] = float(thm54_admissible_c(row["n"], row["d"], entry["eps"], entry["lower"]))
    row, name, entry = min(((row, name, entry) for row in per_size for name in ("10", "9") for entry in row[name]["by_eps"]),
                           key=lambda b: b[2]["c_upper"])
    if entry["c_upper"] < C_FLOOR:
        notes.append(f"only c <= {entry['c_upper']:.2g} is compatible with ({name}) at n={row['n']}, d={row['d']}, "
                     f"eps={entry['eps']:g} (failure fraction >= {entry['lower']:.2%})")

    # the n = 1 tail: derived A / eps (polynomial) against the measured fractions
    tail = []
    for row in per_size:
        if row["n"] == 1:
            with mp.workdps(20):
                A = float(eq9_tail_constant_n1(row["d"], p["theta"], p["zeta"]))
            for entry in row["9"]["by_eps"]:
                se = math.sqrt(max(entry["fraction"] * (1 - entry["fraction"]), 1 / trials) / trials)
                tail.append({"d": row["d"], "eps": entry["eps"], "eps_times_fraction": entry["eps"] * entry["fraction"],
                             "se": entry["eps"] * se, "derived_limit": A})

    # deep networks: trained at the smallest size, and eq. (5) at finite depth at the largest
    bound9_small = _bound_values(F, p, smallest["n"], smallest["d"], p["eps"])["9"]
    deep_rows = []
    for L in run.budget(theorem, "deep_depths"):
        run.progress(f"depth {L}: pretraining and fine-tuning (n={smallest['n']}, d={smallest['d']})")
        deep_row, risk, problem = trained_depth_row(F["coefficient"], F["row_part"], kept_small, L, DEEP_ALPHA, gen)
        if problem:
            return Outcome("inconclusive", problem, sizes={"ladder": [f"{n}x{d}" for n, d in sizes]})
        deep_rows.append(dict(deep_row, within_eq9=(risk <= bound9_small).float().mean().item()))
    for r in deep_rows:
        judge.per_draw(r["max_distance_over_tolerance"], f"trained depth-{r['L']} networks",
                       text=f"{r['max_relative_distance']:.3g} (relative) from eq. (5): eq. (7) is not their limit")
    if deep_rows:
        judge.converged(max(r["max_left_over_tolerance"] for r in deep_rows), judge.resolvable(1.0),
                        "distance to eq. (5) left by fine-tuning, in tolerances")
    bound9_large = _at_eps(largest, "9")["bound"]
    depth_rows = finite_depth_risks(F["coefficient"], kept_large, kept_large["linear"], kept_large["deep"], bound9_large,
                                    DEPTHS_EQ5)

    # --- report ------------------------------------------------------------------------------------
    for note in _report(p, trials, per_size, centre9, deep_rows, depth_rows, len(kept_large["deep"]), tail) + notes:
        judge.note(note)
    for row in per_size:                     # JSON has no infinity: c_upper = None means every c is compatible
        for name in ("10", "9"):
            for entry in row[name]["by_eps"]:
                entry["c_upper"] = entry["c_upper"] if math.isfinite(entry["c_upper"]) else None
    return judge.outcome("bounds (9) and (10) hold with c >= 1/50 and are bands around where the risks concentrate",
                         mean=largest["9"]["mean_risk"], se=largest["9"]["se_risk"], trials=trials, reference=bound9_large,
                         sizes={"ladder": [f"{n}x{d}" for n, d in sizes], "eps": eps_values},
                         extra={"per_size": per_size, "centre9_extrapolation": centre9, "deep_networks": deep_rows,
                                "eq5_depths": depth_rows, "n1_tail": tail, "c_floor": C_FLOOR, "comparisons": judge.count})


# --- sympy and mpmath faces ---------------------------------------------------------------------

def _gdb_symbolic() -> Symbolic:
    from sympy.stats import Beta, E, variance

    n, d, eps, zeta = sp.symbols("n d epsilon zeta", positive=True)
    T, S = sp.Symbol(r"\|\theta_{T}\|", positive=True), sp.Symbol(r"\|\theta_{S}\|", positive=True)
    D = sp.Symbol(r"\|\hat\theta_{T} - \hat\theta_{S}\|", positive=True)
    dist = sp.Symbol(r"\|\theta_{T} - \theta_{S}\|", positive=True)
    frac = (d - n) / d
    bound9 = frac * (1 + eps) ** 2 * T**2 * D**2 + frac * zeta**2
    bound10 = frac * (1 + eps) ** 2 * dist**2
    R_beta, R_gamma = sp.symbols(r"R(\beta) R(\gamma)", nonnegative=True)
    # (10): ||P_perp Delta_hat||^2 ~ Beta((d-n)/2, n/2) for a uniformly random row space
    ratio = Beta("B", (d - n) / 2, n / 2)
    mean, var = sp.simplify(E(ratio)), sp.simplify(variance(ratio))
    expected_risk = mean * dist**2
    spread = sp.simplify(var / mean**2)
    # (9): eq. (6)'s coefficient where Lemma 5.3.2 concentrates ||P_par w||^2 = (n/d) ||w||^2
    limit = symbolic_depth_limit()
    a_, b_, s_ = limit["symbols"][:3]
    c_conc = sp.simplify(limit["limit"].subs({a_: frac * S**2, b_: n / d * T**2, s_: S}))
    k = sp.Symbol("k", positive=True)
    c_scaled = sp.simplify(limit["limit"].subs({a_: k**2 * a_, s_: k * s_}) * k - limit["limit"])
    # ... so theta_T - c theta_S = ||theta_T|| (theta_hat_T - theta_hat_S), and E||P_perp w||^2 = (d-n)/d ||w||^2
    centre9 = frac * (T * D) ** 2
    # n = 1: b/a for (a, b) standard bivariate normal with correlation cos(theta) is Cauchy(cos theta, sin theta)
    t, a, rho, K, theta = sp.Symbol("t", real=True), sp.Symbol("a", real=True), sp.Symbol("rho", real=True), \
        sp.Symbol("K", positive=True), sp.Symbol("theta", positive=True)
    phi2 = sp.exp(-(a**2 - 2 * rho * a * (t * a) + (t * a) ** 2) / (2 * (1 - rho**2))) / (2 * sp.pi * sp.sqrt(1 - rho**2))
    ratio_density = sp.simplify(2 * sp.integrate(a * phi2, (a, 0, sp.oo), conds="none"))
    cauchy = sp.sqrt(1 - rho**2) / (sp.pi * ((t - rho) ** 2 + 1 - rho**2))
    scale = sp.Symbol("s", positive=True)                  # sqrt(1 - rho^2) = sin(theta) > 0
    cauchy_s = scale / (sp.pi * ((t - rho) ** 2 + scale**2))
    tail = sp.simplify(sp.limit(K * sp.integrate(cauchy_s, (t, -1 / K, 1 / K)), K, sp.oo).subs(
        {rho: sp.cos(theta), scale: sp.sin(theta)}))
    # eq. (7) in the plane of the tasks: with G the Gram matrix of P on span(theta_hat_S, theta_hat_T) and
    # kappa^2 = T^T G T / G_11, R / ||theta_T||^2 is a quadratic in kappa (numerics.deep_risk_law's (R))
    g11, g12, kap = sp.symbols("G_11 G_12 kappa", positive=True)
    tv, e1 = sp.Matrix([sp.cos(theta), sp.sin(theta)]), sp.Matrix([1, 0])
    g22 = (kap**2 * g11 - sp.cos(theta) ** 2 * g11 - 2 * sp.sin(theta) * sp.cos(theta) * g12) / sp.sin(theta) ** 2
    gram = sp.Matrix([[g11, g12], [g12, g22]])
    w = tv - kap * e1
    plane = sp.simplify((w.T * w - w.T * gram * w)[0])
    quadratic = (1 - 2 * g11) * kap**2 - 2 * kap * (sp.cos(theta) * (1 - g11) - sp.sin(theta) * g12) + 1
    # kappa in [(1-eps)/(1+eps), (1+eps)/(1-eps)]: the larger deviation from 1 is the upper one
    upper, lower = (1 + eps) / (1 - eps) - 1, 1 - (1 - eps) / (1 + eps)
    proof_gap = sp.simplify(upper - 2 * eps / (1 - eps)) == 0 and sp.simplify(lower - 2 * eps / (1 + eps)) == 0
    m = sp.Symbol("m", positive=True)                      # d - n
    no_failure = sp.sqrt(d / m) - 1                        # the root of (d-n)/d (1+eps)^2 = 1 with eps > -1
    roots = sp.solve(sp.Eq(m / d * (1 + eps) ** 2, 1), eps)
    return Symbolic(
        "R(beta_{L->oo}), R(gamma) with probability >= 1 - 4 exp(-c eps^2 n) - 4 exp(-c eps^2 (d-n))",
        sp.And(sp.Le(R_beta, bound9), sp.Le(R_gamma, bound10)),
        (Derivation("row(X) is a uniformly random n-plane: ||P_perp Delta_hat||^2 ~ Beta((d-n)/2, n/2) has mean (d-n)/d, "
                    "so E R(gamma) = (d-n)/d ||theta_T - theta_S||^2", expected_risk, sp.simplify(mean - frac) == 0),
         Derivation("(10) is (1+eps)^2 times that exact expectation: a band around E R(gamma)",
                    sp.simplify(bound10 / expected_risk), sp.simplify(bound10 / expected_risk - (1 + eps) ** 2) == 0),
         Derivation("Var[R(gamma) / E R(gamma)] = 2n/((d-n)(d+2)): the ratio concentrates at 1 like 1/sqrt(d) at fixed n/d",
                    spread, sp.simplify(spread - 2 * n / ((d - n) * (d + 2))) == 0),
         Derivation("R(gamma)/||Delta||^2 <= 1, so (10) cannot fail once (1+eps)^2 >= d/(d-n), i.e. eps >= sqrt(d/(d-n)) - 1",
                    no_failure.subs(m, d - n), sp.simplify(m / d * (1 + no_failure) ** 2 - 1) == 0
                    and any(sp.simplify(root - no_failure) == 0 for root in roots)),
         Derivation("eq. (6) at the concentration point ||P_par w||^2 = (n/d)||w||^2: c_inf = ||theta_T|| / ||theta_S||",
                    c_conc, sp.simplify(c_conc - T / S) == 0),
         Derivation("... so eq. (7) there is (d-n)/d ||theta_T||^2 ||theta_hat_T - theta_hat_S||^2 = (9) at eps -> 0 "
                    "(zeta -> 0 with eps)", centre9, sp.simplify(bound9.subs({eps: 0, zeta: 0}) - centre9) == 0),
         Derivation("c_inf(k theta_S) = c_inf(theta_S) / k: eq. (7) and hence (9) do not involve ||theta_S||", c_scaled,
                    c_scaled == 0),
         Derivation("the text's proof route bounds |1 - c_inf ||theta_S||/||theta_T||| by 2 eps/(1 - eps) (Lemma 5.3.2 on "
                    "both row-space norms), which diverges at eps = 1: it covers eps < 1, the theorem says any eps > 0",
                    2 * eps / (1 - eps), proof_gap and sp.limit(2 * eps / (1 - eps), eps, 1, "-") == sp.oo),
         Derivation("eq. (7) in the plane of the tasks: R/||theta_T||^2 = (1 - 2 G_11) kappa^2 - 2 kappa (cos theta (1 - G_11) "
                    "- sin theta G_12) + 1, kappa = c_inf ||theta_S||/||theta_T||, G the Gram matrix of P_par on the plane: "
                    "the law of R(beta) (the finding's corrected statement) depends on n, d, theta only",
                    quadratic, sp.simplify(plane - quadratic) == 0),
         Derivation("n = 1: b/a for (a, b) = (<x, theta_hat_T>, <x, theta_hat_S>) is Cauchy(cos theta, sin theta) ...",
                    ratio_density, sp.simplify(ratio_density - cauchy) == 0),
         Derivation("... so P(c_inf ||theta_S||/||theta_T|| > K) ~ 2 sin(theta)/(pi K): (9) fails with probability ~ A/eps, "
                    "a polynomial tail no 4 exp(-c eps^2) + 4 exp(-c eps^2 (d-1)) dominates, whatever c > 0",
                    tail, sp.simplify(tail - 2 * sp.sin(theta) / sp.pi) == 0)),
    )


def _gdb_evaluate(params, dps):
    """Bound (9) at the largest size (n, d) = (round(gamma d), d), zeta = z eps ||theta_T||."""
    n, d = _ladder(params)[0]
    eps = mpf(params["eps"])
    norm_t, theta, z = mpf(params["norm_t"]), mpf(params["theta"]), mpf(params["zeta"])
    return eq9_deep_risk_bound(n, d, eps, norm_t, 2 * mp.sin(theta / 2), zeta=z * eps * norm_t)


# --- negative controls: the bounds with a factor dropped or the band tightened -------------------------

def _eq10_missing_fraction(n, d, eps, dist):
    return (1 + mp.mpf(eps)) ** 2 * mp.mpf(dist) ** 2


def _eq10_tight_band(n, d, eps, dist):
    return (mp.mpf(d) - n) / d * (1 - mp.mpf(eps)) ** 2 * mp.mpf(dist) ** 2


def _eq9_missing_fraction(n, d, eps, norm_t, dist_hat, zeta=None):
    return eq9_deep_risk_bound(n, d, eps, norm_t, dist_hat, zeta=zeta) * d / (mp.mpf(d) - n)


def _eq9_tight_band(n, d, eps, norm_t, dist_hat, zeta=None):
    return (mp.mpf(d) - n) / d * (1 - mp.mpf(eps)) ** 2 * mp.mpf(norm_t) ** 2 * mp.mpf(dist_hat) ** 2


FINDING_TAIL = ("'for any eps > 0' fails for (9): R(beta) has a polynomial tail, P(R(beta) > x ||theta_T||^2) ~ C x^(-n/2) (at "
                "n = 1 the Cauchy ratio <x, theta_hat_T>/<x, theta_hat_S> gives 2 sin(theta)/(pi sqrt(x))), so (9) fails "
                "with probability ~ eps^-n, which 4 exp(-c eps^2 n) + 4 exp(-c eps^2 (d-n)) bounds for no c > 0 (only "
                "c <= 2e-3 is compatible at n = 1, eps = 64); the check resolves it where the ladder's smallest sizes "
                "have n = 1 or 2 and 8 eps is past ~16; the text's proof route needs eps < 1")
# From eps = 1 on (where the text's proof route stops) the check tests the law of R(beta) on its draws, and the
# paper's verdict is expected wherever that law makes it likely: every (gamma, d, theta, norms, zeta), no sharp edge.
# Below eps = 1 no fraction test of the ladder can alarm (the claimed probability exceeds the law's at 8 eps).
TAIL_REGION = "eps >= 1"
GDB_CORRECTED = ("the law of R(beta) for Gaussian X: (9) fails with probability P(R(beta) > (9)), from the Cauchy(cos theta, "
                 "sin theta) ratio <x, theta_hat_T>/<x, theta_hat_S> at n = 1 (a closed form less a one-dimensional "
                 "correction) and a two-dimensional integral at n >= 2 (numerics.deep_risk_law)")


def _half_the_law(n, d, theta, x):
    """A wrong law of R(beta): half its tail, as if <x, theta_hat_T>/<x, theta_hat_S> had only its positive tail."""
    return deep_risk_survival(n, d, theta, x) / 2


gaussian_depth_bound = register(Theorem(
    id="gaussian-depth-bound",
    title="Gaussian X: the L -> oo risk is bounded via ||theta_T|| and the alignment (9), the L = 1 risk via the distance (10)",
    source=f"{PAPER}, Thm 5.4, eqs. (9)-(10)",
    statement=(r"\Pr\Big[R(\beta_{L\to\infty}) \le \tfrac{d-n}{d}(1+\epsilon)^2\|\theta_T\|^2\|\hat\theta_T-\hat\theta_S\|^2"
               r" + \tfrac{d-n}{d}\zeta(\|\theta_T\|)^2,\ R(\gamma) \le \tfrac{d-n}{d}(1+\epsilon)^2\|\theta_T-\theta_S\|^2\Big]"
               r" \ge 1 - 4e^{-c\epsilon^2 n} - 4e^{-c\epsilon^2(d-n)}"),
    quantity=("R(beta) of the L -> oo predictor (eq. 7) at the largest size: mean over draws (Monte-Carlo column) next to "
              "bound (9) (theory column); the verdict comes from the failure fractions, the centre tests and the "
              "trained networks in the verdict rule"),
    assumptions=(
        "Sigma = I, rows of X i.i.d. N(0, I), n <= d - 1 at each size of the ladder d, d/2, d/4 (n = round(gamma d_k))",
        "noiseless y = X theta_T; theta_S, theta_T of fixed norms at angle theta, uniformly rotated per draw",
        "L = 1: gradient descent from theta_S (trained on the first draws of the smallest size, certified against "
        "theta_S + X^+(y - X theta_S), the limit used for every draw)",
        "L -> oo: eq. (7) with eq. (6)'s c_inf per draw (mpmath); trained depth-L networks (exactly 0-balanced init, "
        "RK4 gradient flow) must follow eq. (5), whose L -> oo limit it is",
        "zeta = z eps ||theta_T|| (the paper: 'zeta ~ eps ||theta_T||'); c unspecified: held to c >= 1/50 "
        "(Lemma 5.3.2's explicit constant is 1/2), with the compatible range c <= c_U reported",
    ),
    parameters=PARAMETERS,
    symbolic=_gdb_symbolic,
    evaluate=_gdb_evaluate,
    check=_gdb_check,
    formulas={"eq9": eq9_deep_risk_bound, "eq10": eq10_linear_risk_bound, "limit": rescaling_limit_coefficient,
              "coefficient": rescaling_coefficient, "row_part": interpolating_row_part, "failure": deep_risk_survival},
    trials={"quick": 2000, "default": 4000, "paper": 10000},
    # L = 1 trained by GD, and deep networks of these depths, on the first draws of the smallest size
    budget={"gd_trials": {"quick": 24, "default": 100, "paper": 200},
            "deep_trials": {"quick": 4, "default": 6, "paper": 8},
            "deep_depths": {"quick": (2,), "default": (2, 3), "paper": (2, 3, 4)}},
    limits=("L -> oo after t -> oo (eq. (7), lim_L lim_t, in mpmath; trained depth-L networks checked against eq. "
            "(5)) at finite n, d on the size ladder d, d/2, d/4 with n = round(gamma d): the failure fractions at "
            "each finite size, the centre tests extrapolated in 1/d (n, d -> oo at a fixed n/d)"),
    verdict_rule=(
        "Bonferroni at 1e-3 over every comparison below (z-tests two-sided; failure fractions by a one-sided "
        "Chernoff-Hoeffding lower confidence bound).  Disagree if (A) the mean of R(gamma)/centre(10) differs from its "
        "exact value 1 at some size, or R(beta)/centre(9), extrapolated in 1/d over the sizes with n >= 10 (quadratic "
        "through three sizes, linear through two), "
        "differs from 1 (centre = the bound at eps -> 0+); (B) a bound fails in more than half of the draws at the "
        "largest size (lower bound > 1/2) and not less often than at the smallest: it lies below the bulk of a risk "
        "whose spread shrinks, so it fails with probability -> 1, which no c allows; (C) at some size and eps, 2 eps, "
        "4 eps, 8 eps the failure fraction's lower bound exceeds the claimed failure probability at c = 1/50; (D) GD "
        "(L = 1) misses theta_S + X^+(y - X theta_S) by more than its final loss certifies, or trained depth-L networks "
        "miss eq. (5) by more than depth-rescaling's tolerance.  Inconclusive if training does not converge"),
    false_alarm=FALSE_ALARM,
    constraints=_constraints,
    cases=(Case({}, laws={   # the first is the stress case
        "zero-rows:0.1": ("inconclusive", "the check's Cholesky solves need X X^T invertible (Assumption 3.1), and a "
                          "zero row makes it singular: it cannot run there (the bounds' (d - n)/d would count rank n)")}),
           {"norm_s": "3"}, {"theta": "3*pi/4", "norm_t": "2", "eps": "1/10"}),
    findings=(Finding(TAIL_REGION, FINDING_TAIL, at={"gamma": "1/20", "d": "80", "eps": "8", "theta": "pi/2"},
                      corrected=GDB_CORRECTED),),
    samples_design=True,
    # Thm 5.4: eq. (7) with Sigma = I and Vershynin's Lemma 5.3.2 for a uniformly random n-plane (rank n);
    # Gaussianity enters only through that
    input_assumptions=("isotropic", "rotation-invariant", "full-rank"),
    negative_controls=(
        Control("gdb-eq10-missing-fraction", {"eq10": _eq10_missing_fraction},
                why="(10) without its (d - n)/d: a true but loose bound, no longer a band around E R(gamma)"),
        Control("gdb-eq10-tight-band", {"eq10": _eq10_tight_band},
                why="(10) with (1 - eps)^2: a band that claims too much (below E R(gamma))"),
        Control("gdb-eq9-missing-fraction", {"eq9": _eq9_missing_fraction}, why="(9) without its (d - n)/d"),
        Control("gdb-eq9-tight-band", {"eq9": _eq9_tight_band}, why="(9) with (1 - eps)^2 and no zeta term"),
        Control("gdb-no-depth-rescaling", {"limit": lambda a, b, s: mp.mpf(1)}, {"norm_s": "3"},
                why="no depth effect: the L = 1 coefficient in place of eq. (6), at ||theta_S|| = 3 (where the two differ)"),
        Control("gdb-law-one-tail", {"failure": _half_the_law}, {"gamma": "1/20", "d": "80", "eps": "8", "theta": "pi/2"},
                why="the finding's corrected statement with half its tail (the ratio's negative tail dropped): the law "
                    "of R(beta) must then fail on the finding's own draws", corrected="disagree"),
    ),
    method=('Gaussian X on a ladder d, d/2, d/4: R(gamma) of GD-trained L = 1 (certified against theta_S + X^+(y'
            " - X theta_S)) and eq. (7)'s R(beta), tied to RK4-trained depth-L nets via eq. (5); per draw the "
            'slack, failure fractions at eps..8 eps against the claimed probability (c unspecified: compatible '
            "range reported, form held to c >= 1/50), and z-tests that each bound's eps -> 0 value is where the "
            'risk concentrates (exact for (10), extrapolated in 1/d for (9))'),
    power=(
        Perturbation('eq10', 'down', 'bound (10) on R(gamma), an upper bound: only a smaller bound can be false'),
        Perturbation('eq9', 'down', 'bound (9) on R(beta), an upper bound: only a smaller bound can be false', primary=False),
    ),
))
