"""Shachaf, Brutzkus & Globerson, fine-tuning with linear teachers, Sec. 4-5.

Setting: rows of X (n < d) i.i.d. with covariance Sigma, noiseless labels
y = X theta_T, perfect pretraining (the model starts at theta_S), fine-tuning by
gradient descent on the empirical squared loss to zero training loss.
"""

from __future__ import annotations

import mpmath as mp
import sympy as sp

from simulate.linear_finetune import certified_gaps, finetune_from_source, row_space_part
from simulate.stats import estimate
from theorems.core import Case, Control, Derivation, Outcome, Parameter, Perturbation, Symbolic, Theorem, as_float, mpf
from theorems.registry import register

__all__ = ["finetune_linear_regression"]

PAPER = "Shachaf, Brutzkus & Globerson, fine-tuning with linear teachers"
FALSE_ALARM = 1e-3
ROUNDING = 1e-10  # relative float64 floor for per-draw identities


def _ftl_limit(X, theta_s, theta_t):
    """Eq. (1): gamma = P_perp theta_S + P_par theta_T = theta_S + P_par (theta_T - theta_S)."""
    return theta_s + row_space_part(X, theta_t - theta_s)


def _ftl_risk(X, eig, theta_s, theta_t):
    """Eq. (2): R = ||Sigma^{1/2} P_perp (theta_T - theta_S)||^2 for diagonal Sigma = diag(eig)."""
    delta = theta_t - theta_s
    return (eig * (delta - row_space_part(X, delta)).pow(2)).sum(1)


def _ftl_mean_risk(n, d, c, theta, q=0):
    """E_X of eq. (2) for Sigma = c I and Gaussian X: row(X) is a uniformly random
    n-plane, so E ||P_perp delta||^2 = (1 - n/d) ||delta||^2 with ||delta||^2 = 2 - 2 cos(theta),
    computed as 4 sin^2(theta/2): 2 - 2 cos(theta) cancels for small theta (theta = 1e-9 kept
    23 of 30 digits, float64 none).  When each row is 0 with probability q, row(X) is a uniformly random plane
    of dimension the number of non-zero rows, (1 - q) n on average: c (1 - (1 - q) n/d) ||delta||^2 (eqs. (1)-(2)
    still hold per draw with P_par the projector onto row(X): GD from theta_S never leaves theta_S + row(X))."""
    return c * (1 - (1 - q) * mp.mpf(n) / d) * 4 * mp.sin(mp.mpf(theta) / 2) ** 2


ZERO_ROWS = mp.mpf(1) / 10   # zero-rows:0.1, the law that breaks Assumption 3.1 (theorems.core.INPUT_ASSUMPTIONS)


def _ftl_zero_rows_departure(p):
    n, d = round(float(p["gamma"]) * int(p["d"])), int(p["d"])
    return _ftl_mean_risk(n, d, 1, mpf(p["theta"]), ZERO_ROWS) / _ftl_mean_risk(n, d, 1, mpf(p["theta"])) - 1


def _ftl_symbolic() -> Symbolic:
    x = sp.Matrix(2, 3, sp.symbols("x1:7", real=True))
    ts = sp.Matrix(sp.symbols("s1:4", real=True))
    tt = sp.Matrix(sp.symbols("t1:4", real=True))
    p_par = x.T * (x * x.T).inv() * x
    p_perp = sp.eye(3) - p_par
    w = p_perp * ts + p_par * tt
    zero = lambda m: sp.simplify(m) == sp.zeros(*m.shape)
    theta = sp.Symbol("theta", real=True)
    chord = 4 * sp.sin(theta / 2) ** 2          # ||theta_T - theta_S||^2: shown and proved as one expression
    return Symbolic(
        "lim_t w(t)",
        sp.Eq(sp.Symbol(r"\gamma"), sp.Symbol(r"P_\perp") * sp.Symbol(r"\theta_S") + sp.Symbol(r"P_\parallel") * sp.Symbol(r"\theta_T")),
        (
            Derivation("eq. (1) interpolates: X (P_perp theta_S + P_par theta_T) = X theta_T (2x3 X)", None, zero(x * w - x * tt)),
            Derivation("eq. (1) - theta_S lies in row(X), where every GD step X^T r lies: P_perp (w - theta_S) = 0",
                       None, zero(p_perp * (w - ts))),
            Derivation("hence w - theta_T = P_perp (theta_S - theta_T), which gives eq. (2)", None, zero(w - tt - p_perp * (ts - tt))),
            Derivation("||theta_T - theta_S||^2 = 2 - 2 cos(theta) = 4 sin^2(theta/2) for unit vectors",
                       sp.trigsimp(chord), sp.simplify(2 - 2 * sp.cos(theta) - chord) == 0),
        ),
    )


def _ftl_evaluate(params, dps):
    if params["top_eig"] != params["bottom_eig"]:
        return None  # eq. (2) is per draw; E over X has no closed form for a spiked Sigma
    d = int(params["d"])
    n = round(float(params["gamma"]) * d)
    return _ftl_mean_risk(n, d, mpf(params["top_eig"]), mpf(params["theta"]))


def _ftl_check(theorem, params, run) -> Outcome:
    p, trials = as_float(params), run.trials_for(theorem)
    d, theta, n = p["d"], p["theta"], round(p["gamma"] * p["d"])
    run.progress("gradient descent from theta_S")
    ft = finetune_from_source(trials, n, d, theta, max(1, round(p["top_frac"] * d)), p["top_eig"], p["bottom_eig"],
                              run.rng(theorem, params), run.data, run.device)
    sizes = {"n": n, "d": d, "steps": ft.fit.steps}
    if not bool(ft.fit.converged.all()):
        return Outcome("inconclusive", f"gradient descent not converged after {ft.fit.steps} steps", sizes=sizes)
    # Per draw, eq. (1) and eq. (2) against the trained w, within the error certified by GD's final loss
    # (simulate.linear_finetune): a wrong limit or risk violates the certificate.
    risk_claim = theorem.formulas["risk"](ft.X, ft.eig, ft.theta_s, ft.theta_t)
    gaps = certified_gaps(ft, theorem.formulas["limit"](ft.X, ft.theta_s, ft.theta_t), risk_claim, ROUNDING)
    worst_limit, worst_risk = gaps["limit"].max().item(), gaps["risk"].max().item()
    judge = run.judge(theorem)
    judge.per_draw(worst_limit, "eq. (1) per draw", text=f"missed by {worst_limit:.3g}x the certified GD error")
    judge.per_draw(worst_risk, "eq. (2) per draw", text=f"missed by {worst_risk:.3g}x the certified GD error")
    est = estimate(gaps["population_risk"])
    summary = f"per draw within certified GD error ({trials} draws)"
    if p["top_eig"] == p["bottom_eig"]:       # isotropic: E_X eq. (2) in closed form
        mean = judge.mean(est, float(theorem.formulas["mean_risk"](n, d, p["top_eig"], theta)),
                          "mean risk vs E eq. (2)", floor=ROUNDING)
        reference, z = mean.reference, mean.z
        summary += "; mean risk = E eq. (2)"
    else:
        reference, z, mean = estimate(risk_claim).mean, None, est
        summary += "; spiked Sigma: no closed-form mean"
    judge.converged(gaps["risk_shift"].max(), judge.resolvable(max(mean.se, ROUNDING)), "risk left by GD")   # se 0 at theta = 0
    return judge.outcome(summary, mean=est.mean, se=est.se, trials=trials, reference=reference, z=z, sizes=sizes,
                         extra={"max_dist_over_certified": worst_limit, "max_risk_gap_over_certified": worst_risk,
                                "max_final_loss": ft.fit.loss.max().item()})


def _ftl_constraints(params):
    n = round(float(params["gamma"]) * int(params["d"]))
    if n < 1 or n >= params["d"]:
        return f"need 1 <= n = round(gamma d) = {n} < d = {params['d']}"
    return None


# n = 2 of d = 10: where an error of one in the rank n of row(X) is largest against the spread of the risk
FTL_SENSITIVE = {"gamma": "1/5", "d": "10"}

finetune_linear_regression = register(Theorem(
    id="finetune-linear-regression",
    title="GD fine-tuning of a linear model keeps the source's null-space part",
    source=f"{PAPER}, Thm 4.1, eqs. (1)-(2)",
    statement=r"\lim_t w(t) = P_\perp\theta_S + P_\parallel\theta_T,\quad R = \|\Sigma^{1/2}P_\perp(\theta_T - \theta_S)\|^2",
    quantity="population risk of the GD-trained w; theory E_X eq. (2) = c (1 - n/d)(2 - 2 cos theta) for Sigma = c I",
    assumptions=(
        "X X^T non-singular (Assumption 3.1): Gaussian rows, n < d",
        "perfect pretraining: fine-tuning starts at w(0) = theta_S (Assumption 3.2)",
        "noiseless labels y = X theta_T; GD run to zero training loss (Assumption 3.3)",
        "Sigma = diag(top_eig on the first top_frac*d coordinates, bottom_eig elsewhere); tasks uniformly rotated",
    ),
    parameters=(
        Parameter("gamma", "n/d, fine-tuning samples per dimension", "1/2", lower="0", upper="1", lower_open=True, upper_open=True),
        Parameter("theta", "angle between theta_S and theta_T (unit norms)", "pi/4", lower="0", upper="pi"),
        Parameter("d", "dimension", {"quick": "40", "default": "100", "paper": "1000"}, lower="2", integer=True),
        Parameter("top_eig", "eigenvalue of Sigma on the top span", "1", lower="0", lower_open=True),
        Parameter("bottom_eig", "eigenvalue of Sigma elsewhere", "1", lower="0", lower_open=True),
        Parameter("top_frac", "fraction of the d directions in the top span", "1/20", lower="0", upper="1", lower_open=True),
    ),
    symbolic=_ftl_symbolic,
    evaluate=_ftl_evaluate,
    check=_ftl_check,
    formulas={"limit": _ftl_limit, "risk": _ftl_risk, "mean_risk": _ftl_mean_risk},
    trials={"quick": 100, "default": 400, "paper": 1000},
    verdict_rule=("per draw, ||w_GD - eq.(1)|| must be within the error certified by GD's final loss "
                  "(sqrt(2 n loss / lambda_min(X X^T)), valid when the difference lies in row(X)) and the risk within "
                  "the matching bound; for Sigma = c I also a two-sided z-test of the mean risk against "
                  "c (1 - n/d)(2 - 2 cos theta)"),
    false_alarm=FALSE_ALARM,
    constraints=_ftl_constraints,
    cases=(Case({}, laws={   # isotropic (the stress case), and the spectrum of the paper's Fig. 1
        "zero-rows:0.1": ("disagree", "eqs. (1)-(2) hold per draw with P_par the projector onto row(X), but the mean "
                          "risk c (1 - n/d) ||delta||^2 counts rank n: a zero row lowers it to (1 - q) n on average "
                          "(+10 % at gamma = 1/2)", _ftl_zero_rows_departure)}),
           {"top_eig": "3/2", "bottom_eig": "3/10"},
           # the sensitive case: a rank off by one moves E eq. (2) by c ||delta||^2 / d = 0.0586, against a spread
           # of sqrt(2 n (d - n) / (d^2 (d + 2))) ||delta||^2 = 0.094 per draw (Beta((d - n)/2, n/2); measured 0.094):
           # at 200 draws 8.8 standard errors, detected with probability > 0.999 at the critical value 4.40 of a
           # whole quick run.  The default and paper tiers' 400 and 1000 draws are more.
           Case(FTL_SENSITIVE, trials={"quick": 200})),
    samples_design=True,
    # Thm 4.1 needs Assumption 3.1 only; the theory column E_X eq. (2) = c (1 - n/d) ||delta||^2 takes row(X)
    # uniformly random
    input_assumptions=("full-rank", "rotation-invariant"),
    negative_controls=(
        Control("ftl-swapped-projectors", {"limit": lambda X, s, t: t + row_space_part(X, s - t)},
                why="eq. (1) with P_perp and P_par swapped"),
        Control("ftl-risk-on-row-space", {"risk": lambda X, eig, s, t: (eig * row_space_part(X, t - s).pow(2)).sum(1)},
                {"gamma": "1/4"}, why="eq. (2) on the row space instead of its complement"),
        Control("ftl-mean-wrong-fraction", {"mean_risk": lambda n, d, c, th: c * (mp.mpf(n) / d) * (2 - 2 * mp.cos(th))},
                {"gamma": "1/4"}, why="the mean risk with n/d for 1 - n/d"),
        Control("ftl-off-by-one", {"mean_risk": lambda n, d, c, th: _ftl_mean_risk(n - 1, d, c, th)}, FTL_SENSITIVE,
                trials=200, why="E eq. (2) with rank n - 1 for row(X): c (1 - (n - 1)/d) ||delta||^2, at the "
                                "sensitive case n = 2, d = 10"),
        Control("ftl-mean-wrong-constant", {"mean_risk": lambda n, d, c, th: 1.15 * _ftl_mean_risk(n, d, c, th)},
                why="the mean risk 15 % off"),
        # the recorded break (Case.laws): its explanation must agree under zero-rows:0.1, the stated mean still fail
        Control("ftl-zero-rows-rank", {"mean_risk": lambda n, d, c, th: _ftl_mean_risk(n, d, c, th, ZERO_ROWS)},
                data="zero-rows:0.1", verdict="agree", why="the mean risk at the expected rank (1 - q) n"),
        Control("ftl-zero-rows-rank-n", {"mean_risk": _ftl_mean_risk}, data="zero-rows:0.1",
                why="the stated mean risk, which counts rank n, under zero rows"),
    ),
    method=("GD on a linear model from theta_S to zero loss; per draw the limit and the risk must match within the "
            "error **certified by the final training loss**; for Sigma = cI also a z-test of the mean risk against "
            "c (1 - n/d)(2 - 2 cos theta); run with Sigma = I and with the spectrum of the paper's Fig. 1"),
    power=(Perturbation("risk", "up", "eq. (2), the per-draw risk, held to the error certified by GD's final loss"),
           Perturbation("mean_risk", "up", "E_X eq. (2) = c (1 - n/d)(2 - 2 cos theta), the theory column: one "
                        "two-sided z-test", primary=False, analytic=1),
           Perturbation("limit", "up", "eq. (1), the per-draw limit (a vector, scaled), held to the certified GD "
                        "error", primary=False)),
    limits=("t -> oo at finite n and d: GD from theta_S to zero training loss, the end point's distance to the "
            "limit certified per draw by its final loss (sqrt(2 n loss / lambda_min(X X^T)))"),
))
