"""Tahir, Ganguli & Rotskoff, "Features are fate", Sec. 3.1, 3.3, 3.4: pretraining and transfer.

One source task beta_s is learned by gradient descent on its population loss from
alpha * Wbar; the target task beta_t (beta_s . beta_t = cos theta) has n = gamma d
noisy samples.  Every check trains the networks (scratch, fine-tuning) or the
last layer (linear transfer) on sampled data; the ridge estimator is the closed
form the paper defines (eq. 121) on the trained features.  Risks are
||beta - beta_t||^2, the excess population risk for x ~ N(0, I).
"""

from __future__ import annotations

import math
from dataclasses import replace

import mpmath as mp
import sympy as sp
import torch

from numerics import enclosures
from numerics.depth_rescaling import rescaling_coefficient
from numerics.limit_links import limit_link, limit_link_at_ratio
from numerics.min_norm_risk import expected_risk, transfer_gap_with_zero_rows
from numerics.ridge_transfer import (ridge_transfer_expected_risk, ridge_transfer_limit,
                                     ridge_transfer_optimal_lambda)
from numerics.certified import ball
from simulate.convergence import feature_shift, population_path_length, ridge_shift, risk_shift
from simulate.data import unit_vectors
from simulate.paired_transfer import (draw_and_pretrain, eq5_prediction, excess_risk, fine_tune_certified,
                                      gain_along_training, null_space_coefficient, paired_with_alpha_trend,
                                      ridge_risk_reduction, scratch_minus_fine_tune, scratch_minus_linear_transfer)
from simulate.population_pretraining import feature_ladder, recover_source
from simulate.stats import Estimate, estimate
from simulate.transfer import feature_map, linear_transfer, linear_transfer_pinv, ridge_transfer
from theorems.core import (Case, Control, Derivation, Finding, Outcome, Parameter, Perturbation, Symbolic, Theorem, as_float,
                           mpf)
from theorems.registry import register

__all__ = ["pretraining_recovery", "sparsification", "linear_transfer_risk", "transferability_linear",
           "ridge_transfer_risk", "ridge_optimal_lambda", "finetune"]

PAPER = "Tahir, Ganguli & Rotskoff, Features are fate"
FALSE_ALARM = 1e-3
TRAINED = 1e-8     # floor on standard errors of trained quantities: GD stops at relative gradient 1e-10
MIN_GAP = 10       # |d - n| >= 10 keeps the scratch risk's moments finite to order > 4 (see double-descent)

# --- parameters shared by the claims of this module -------------------------------------------
GAMMA = Parameter("gamma", "target samples per dimension n/d", "1/2", lower="0", lower_open=True, excluded=("1",),
                  typical=("1/10", "2"))
THETA = Parameter("theta", "angle between beta_s and beta_t", "pi/4", lower="0", upper="pi")
SIGMA = Parameter("sigma", "target label-noise standard deviation", "1/5", lower="0", typical=("0", "1"))
DEPTH = Parameter("L", "depth of the linear network", "2", lower="2", upper="6", integer=True)
ALPHA = Parameter("alpha", "initialisation scale", "1e-5", lower="0", upper="1/10", lower_open=True)
EQ22 = Parameter("eq22", "1: init meeting eq. (22); 0: the paper's i.i.d. Gaussian N(0, 1/d)", "1",
                 lower="0", upper="1", integer=True)
DIM = Parameter("d", "input dimension", {"quick": "60", "default": "100", "paper": "500"}, lower="4", integer=True)
TRIALS = {"quick": 40, "default": 200, "paper": 20}
# ridge-transfer's per-draw risk is a one-dimensional fit's squared error: skewness ~3.3-3.9 at lam = 1/50, where
# the z-test's lower tail at 40 draws is ~40x nominal (|z| > 3.29: 0.022 against 5e-4), at 4 000 ~2x, at 20 000
# ~1.2x (scripts/skewed_ztest.py).  The draws are cheap (one ridge solve each), so the check runs many.  The paper
# tier keeps the paper's 20 draws: there the test is indicative only (README, "How far to trust a verdict").
RIDGE_TRIALS = {"quick": 10_000, "default": 20_000, "paper": 20}


def _init(p) -> str:
    return "eq22" if p["eq22"] else "gaussian"


def _setup(theorem, params, run):
    """Draw the target data sets and pretrain the network once (pretraining sees no target data)."""
    p = as_float(params)
    n = round(p["gamma"] * p["d"])
    gen = run.rng(theorem, params)
    setup = draw_and_pretrain(run.trials_for(theorem), n, p["d"], p["theta"], p["sigma"], p["L"], p["alpha"],
                              _init(p), gen, run.data, progress=run.progress)
    margin = setup.init_margin
    note = f"init {_init(p)}: eq.(22) margin {margin:.3g}" + ("" if margin > 0 else " (eq. 22 NOT met)")
    return p, n, gen, setup.draws, setup.pretrained, note


def _constraints(params):
    n = round(float(params["gamma"]) * int(params["d"]))
    if n < 3:
        return f"need n = round(gamma d) >= 3 target samples, got {n}"
    if abs(int(params["d"]) - n) < MIN_GAP:
        return f"need |d - n| >= {MIN_GAP} for a finite-variance scratch risk, got d = {params['d']}, n = {n}"
    return None


# ---------------------------------------------------------------------------------------------
# pretraining-recovery: Lemma 3.3
# ---------------------------------------------------------------------------------------------

def _pr_symbolic() -> Symbolic:
    # Population loss for x ~ N(0, I_2): E (x.(b - b_s))^2 / 2 = ||b - b_s||^2 / 2.
    x1, x2 = sp.symbols("x1 x2", real=True)
    b = sp.Matrix(sp.symbols("b1 b2", real=True))
    bs = sp.Matrix(sp.symbols("s1 s2", real=True))
    density = sp.exp(-(x1**2 + x2**2) / 2) / (2 * sp.pi)
    integrand = ((x1 * (b[0] - bs[0]) + x2 * (b[1] - bs[1])) ** 2 / 2) * density
    loss = sp.integrate(integrand, (x1, -sp.oo, sp.oo), (x2, -sp.oo, sp.oo))
    # Gradient flow conserves W_1^T W_1 - w_2 w_2^T (L = 2, eq. 35): check on 2 x 2 weights.
    W1 = sp.Matrix(2, 2, sp.symbols("a1:5", real=True))
    w2 = sp.Matrix(sp.symbols("c1:3", real=True))
    g = W1 * w2 - bs
    dW1, dw2 = -g * w2.T, -W1.T * g
    conserved = W1.T * dW1 + dW1.T * W1 - (dw2 * w2.T + w2 * dw2.T)
    return Symbolic(
        "lim_t beta(t)", sp.Eq(sp.Symbol("beta_inf"), sp.Symbol("beta_s")),
        (Derivation("population loss for x ~ N(0, I) is ||beta - beta_s||^2 / 2 (eq. 4)", sp.factor(loss),
                    sp.simplify(loss - ((b - bs).T * (b - bs))[0] / 2) == 0),
         Derivation("d/dt (W_1^T W_1 - w_2 w_2^T) = 0 under gradient flow (eq. 35, L = 2)", None,
                    sp.simplify(conserved) == sp.zeros(2, 2))))


def _pr_limit(beta_s):
    """Lemma 3.3: the pretrained end-to-end vector is beta_s."""
    return beta_s


def _pr_check(theorem, params, run) -> Outcome:
    p = as_float(params)
    trials = run.trials_for(theorem)
    run.progress("pretraining")
    rec = recover_source(trials, p["d"], p["L"], p["alpha"], _init(p), run.rng(theorem, params),
                         theorem.formulas["limit"])
    est = estimate(rec.distance)
    note = (f"init {_init(p)}: eq.(22) margin/alpha^2 {rec.margin_start:.3g} at start, {rec.margin_end:.3g} after "
            "training" + ("" if rec.margin_start > 0 else " (eq. 22 NOT met)"))
    if not bool(rec.fit.converged.all()):
        return Outcome("inconclusive", f"not converged after {rec.fit.steps} steps; {note}", mean=est.mean, se=est.se,
                       trials=trials, reference=0.0, sizes={"d": p["d"], "L": p["L"]})
    # The population gradient is beta - beta_s itself, so convergence certifies
    # ||beta - beta_s|| <= 1e-12; any other claimed limit is at a finite distance.
    bound = 1e-11 * rec.beta_s.norm().item()
    worst = rec.distance.max().item()
    judge = run.judge(theorem)
    judge.per_draw(worst / bound, "distance to the claimed limit", text=f"{worst:.3g} (certified <= {bound:.0e})")
    # the population gradient is beta - beta_s: its norm is the distance still to go, in the verdict's units
    judge.converged(rec.fit.grad_norm.max(), bound, "||beta - beta_s|| left by RK4")
    judge.note(note)
    return judge.outcome(f"all {trials} networks reach ||beta - claim|| <= {worst:.2g} in {rec.fit.steps} steps",
                         mean=est.mean, se=est.se, trials=trials, reference=0.0,
                         sizes={"d": p["d"], "L": p["L"], "steps": rec.fit.steps},
                         extra={"distance_along_training": rec.along})


pretraining_recovery = register(Theorem(
    id="pretraining-recovery",
    title="Gradient flow on the source population loss recovers beta_s",
    source=f"{PAPER}, Lemma 3.3; proof App. B.2",
    statement=r"\lim_{t\to\infty} W_1(t)\cdots W_L(t) = \beta_s",
    quantity="||beta(t_end) - beta_s|| after GD on the population loss 0.5 ||beta - beta_s||^2",
    assumptions=("x ~ N(0, I): the population loss is 0.5 ||beta - beta_s||^2 + const (eq. 4)",
                 "initialisation alpha * Wbar meeting eq. (22) (eq22 = 1), or the paper's Gaussian one (eq22 = 0)"),
    parameters=(DEPTH, replace(ALPHA, default="1e-3"), EQ22,
                Parameter("d", "input dimension", {"quick": "30", "default": "100", "paper": "500"}, lower="2", integer=True)),
    symbolic=_pr_symbolic,
    evaluate=lambda params, dps: mp.mpf(0),
    check=_pr_check,
    formulas={"limit": _pr_limit},
    trials={"quick": 8, "default": 16, "paper": 20},
    verdict_rule=("every trained network must end within 1e-11 of the claimed limit: the population gradient is "
                  "beta - beta_s, so GD's stopping rule (||grad|| <= 1e-12 ||beta_s||) certifies that distance to "
                  "beta_s; inconclusive if any network has not converged"),
    false_alarm=0.0,
    cases=({"eq22": "1"}, {"eq22": "0", "L": "3"}),
    negative_controls=(Control("pr-rescaled-limit", {"limit": lambda b: 1.001 * b}, why="a limit off by 0.1 %"),),
    method=('GD on the source population loss; every network must end within the distance its stopping rule '
            'certifies'),
    power=(
        Perturbation('limit', 'up', "Lemma 3.3's limit beta_s (a vector, scaled): every network must end within 1e-11 of it"),
    ),
    limits=("t -> oo at a fixed init scale alpha: GD on the population loss to ||grad|| <= 1e-12 ||beta_s||, which "
            "certifies the distance to the limit; no alpha -> 0 is needed (the limit is beta_s at every alpha)"),
))


# ---------------------------------------------------------------------------------------------
# sparsification: Thm 3.4
# ---------------------------------------------------------------------------------------------

SPARSE_LADDER = (1.0, 0.1, 0.01)
# The proof's rates, as O() bounds that a faster decay meets: s2(W_l)^2 <= ||W_l||_F^2 - ||W_l||_op^2 <= alpha^2 C
# (eq. 60; from a Gaussian init its constant needs lambda_min in step (58), docs/findings.md), so s2/s1 = O(alpha),
# and 1 - (v_l^T u_{l+1})^2 <= alpha^2 C_l / s^2 (eq. 69), O(alpha^2).  A feature that does not sparsify gives alpha^0.
PROOF_EXPONENTS = {"s2/s1": 1, "1 - cos^2(u1, claim)": 2}
FLOAT_FLOOR = 1e-12  # below this the measured misalignment is float64 rounding


def _sp_direction(beta_s):
    """Thm 3.4: the feature space of W_1 ... W_{L-1} is span(beta_s)."""
    return beta_s


def _sp_symbolic() -> Symbolic:
    a = sp.IndexedBase("a")
    l, L = sp.symbols("l L", integer=True, positive=True)
    telescoped = sp.summation(a[l] - a[l + 1], (l, 1, L - 1))
    u = sp.Matrix(sp.symbols("u1:4", real=True))
    v = sp.Matrix(sp.symbols("v1:4", real=True))
    rank_one = u * v.T
    return Symbolic(
        "lim_{alpha->0} lim_{t->oo} W_1...W_{L-1}", sp.Eq(sp.Symbol("Phi"), sp.Symbol("beta_s") * sp.Symbol("v^T")),
        (Derivation("eqs. (52)-(54): the conserved traces telescope, sum_l (a_l - a_{l+1}) = a_1 - a_L",
                    telescoped, sp.simplify(telescoped - (a[1] - a[L])) == 0),
         Derivation("beta_s v^T has rank one: every 2 x 2 minor vanishes", None,
                    all(sp.simplify(m) == 0 for m in [rank_one[i, j] * rank_one[k, m] - rank_one[i, m] * rank_one[k, j]
                                                      for i in range(3) for k in range(3) for j in range(3) for m in range(3)]))))


def _sp_check(theorem, params, run) -> Outcome:
    p = as_float(params)
    trials = run.trials_for(theorem)
    gen = run.rng(theorem, params)
    source = unit_vectors(1, p["d"], gen)[0]
    ladder = feature_ladder(source, theorem.formulas["direction"](source), p["L"],
                            [p["alpha"] * scale for scale in SPARSE_LADDER], _init(p), gen, trials, run.progress)
    if ladder.unconverged is not None:
        return Outcome("inconclusive", f"pretraining not converged at alpha={ladder.unconverged:.0e}", sizes={"d": p["d"]})
    ratios, misalign = ladder.ratios, ladder.misalignment
    judge = run.judge(theorem)
    decade = math.log(SPARSE_LADDER[-2] / SPARSE_LADDER[-1])
    trends, rates = [], []
    for name, series, shifts in (("s2/s1", ratios, ladder.ratio_shifts),
                                 ("1 - cos^2(u1, claim)", misalign, ladder.misalignment_shifts)):
        smallest = series[-1].mean().item()
        if smallest <= FLOAT_FLOOR:
            # already at float64 resolution: vanished, a passed test that keeps its share of the false-alarm rate
            judge.threshold(Estimate(math.inf, 0.0, trials), PROOF_EXPONENTS[name], f"{name} at the float64 floor")
            trends.append(f"{name} = {smallest:.1g} (float64 floor)")
            continue
        previous, slope = (estimate((near.log() - far.log()) / decade) for near, far in zip(series, series[1:]))
        rates.append(judge.exponent(slope, previous, PROOF_EXPONENTS[name], f"slope of log {name} vs log alpha",
                                    alarm="below"))
        # t -> oo first: how far the last decade's mean slope can still move from where GD stopped to its limit
        # (the mean of the per-network bounds; at L = 3 they sit at float64's floor, the stopping gradient ~1e-15
        # over s2 ~ 1e-8, within a few tenths of what the deterministic slopes resolve)
        left = ((shifts[-1] + shifts[-2]) / decade).mean().item()
        judge.converged(left, judge.resolvable(rates[-1]), f"slope of log {name} left by GD")
        trends.append(f"{name} ~ alpha^{slope.mean:.2f} ± {slope.se:.2g} (at alpha={p['alpha'] * SPARSE_LADDER[-1]:.0e}: {smallest:.2g})")
    last = estimate(ratios[-1])
    return judge.outcome(f"rank one along the claimed direction as alpha -> 0: {'; '.join(trends)}",
                         mean=last.mean, se=last.se, trials=trials, reference=0.0, z=rates[0].z if rates else None,
                         sizes={"d": p["d"], "L": p["L"], "init": _init(p)}, extra={"alpha_ladder": ladder.rows})


sparsification = register(Theorem(
    id="sparsification",
    title="Pretrained features sparsify to the source direction (rank one)",
    source=f"{PAPER}, Thm 3.4 (after Yun et al.); Lemma B.1, App. B.3",
    statement=r"\lim_{\alpha\to0}\lim_{t\to\infty} W_1\cdots W_{L-1} = \beta_s v_{L-1}^T",
    quantity="s2/s1 of W_1...W_{L-1} at the smallest alpha (z: slope of log(s2/s1) vs log alpha, minus 1/2)",
    assumptions=("pretraining by gradient flow on the source population loss (eq. 4)",
                 "initialisation alpha * Wbar with eq. (22) (eq22 = 1) or the paper's Gaussian one (eq22 = 0)"),
    parameters=(DEPTH, replace(ALPHA, default="1e-2"), EQ22,
                Parameter("d", "input dimension", {"quick": "20", "default": "50", "paper": "500"}, lower="2", integer=True)),
    symbolic=_sp_symbolic,
    evaluate=lambda params, dps: mp.mpf(0),
    check=_sp_check,
    formulas={"direction": _sp_direction},
    trials={"quick": 8, "default": 16, "paper": 20},
    verdict_rule=("alpha ladder alpha, alpha/10, alpha/100; per network the slopes over the last decade of "
                  "log(s2/s1) and of log(1 - cos^2(top left singular vector, beta_s)) against log alpha "
                  "(a quantity already below 1e-12, float64 resolution, counts as vanished); "
                  "each mean slope of the last decade against the proof's rate, one-sided (an O() bound: a faster decay "
                  "meets it) at a Bonferroni level: alpha^1 for s2/s1 (eq. 60 bounds s2^2 by alpha^2 C), alpha^2 for "
                  "the misalignment (eq. 69); the standard error floored by |last - previous decade's slope| / 9, the "
                  "most that higher-order corrections leave; disagree if either falls significantly short"),
    false_alarm=FALSE_ALARM,
    cases=({"eq22": "1"}, {"eq22": "0"}, {"L": "3", "eq22": "1"}),
    negative_controls=(Control("sp-wrong-direction", {"direction": lambda b: torch.roll(b, 1)},
                               why="features claimed along another direction"),),
    method=('pretrains at alpha, alpha/10, alpha/100; s2/s1 of W_1...W_{L-1} and its misalignment with beta_s '
            'must vanish as powers of alpha (L = 2, 3; both inits)'),
    power=(
        Perturbation('direction', 'rotate', ("Thm 3.4's feature direction beta_s; the check normalises it, so a scale factor has no effect: the "
             'direction is turned by the angle delta (radians) instead'), max_delta=1.5),
    ),
    limits=("t -> oo first (pretraining by gradient flow to convergence at each init scale), then alpha -> 0 along "
            "alpha, alpha/10, alpha/100, the last decade's slopes judged against the proof's rates: the paper's "
            "lim_{alpha -> 0} lim_{t -> oo}"),
))


# ---------------------------------------------------------------------------------------------
# linear-transfer: Thm 3.7, eq. (12)
# ---------------------------------------------------------------------------------------------

def _lt_risk(n, theta, sigma):
    """Eq. (12): E_D R_lt = sin^2(theta) + (sigma^2 + sin^2(theta)) / (n - 2), exact in n."""
    return mp.sin(theta) ** 2 + (sigma**2 + mp.sin(theta) ** 2) / (n - 2)


def _lt_symbolic() -> Symbolic:
    n, r, th, s = sp.symbols("n r theta sigma", positive=True)
    sphere = 2 * sp.pi ** (n / 2) / sp.gamma(n / 2)                    # S_{n-1}
    radial = sp.integrate(r ** (n - 3) * sp.exp(-r**2 / 2), (r, 0, sp.oo), conds="none")
    inverse_moment = sp.gammasimp(sphere * radial / (2 * sp.pi) ** (n / 2))
    eb, eb2 = sp.cos(th), sp.cos(th) ** 2 + (sp.sin(th) ** 2 + s**2) / (n - 2)
    risk = 1 + eb2 - 2 * sp.cos(th) * eb                                   # eq. (111)
    claim = sp.sin(th) ** 2 + (s**2 + sp.sin(th) ** 2) / (n - 2)
    return Symbolic(
        "E_D R_lt", sp.Eq(sp.Symbol("ER_lt"), claim),
        (Derivation("eqs. (116)-(120): E 1/||z||^2 = 1/(n - 2) for z ~ N(0, I_n)", inverse_moment,
                    sp.simplify(inverse_moment - 1 / (n - 2)) == 0),
         Derivation("eq. (111) with E b = cos(theta) and E b^2 gives eq. (12)", sp.simplify(risk),
                    sp.simplify(risk - claim) == 0),
         Derivation("as n -> oo only the irreducible sin^2(theta) remains", sp.limit(claim, n, sp.oo),
                    sp.simplify(sp.limit(claim, n, sp.oo) - sp.sin(th) ** 2) == 0)))


def _lt_evaluate(params, dps):
    n = round(float(params["gamma"]) * int(params["d"]))
    return _lt_risk(n, mpf(params["theta"]), mpf(params["sigma"]))


def _lt_check(theorem, params, run) -> Outcome:
    p, n, gen, draws, pre, note = _setup(theorem, params, run)
    run.progress("linear transfer (W_L by GD)")
    beta, fit = linear_transfer(draws, pre.weights)
    if not bool(fit.converged.all()):
        return Outcome("inconclusive", f"last-layer GD not converged after {fit.steps} steps", sizes={"n": n, "d": p["d"]})
    risk = excess_risk(beta, draws)
    est = estimate(risk)
    reference = float(theorem.formulas["risk"](n, p["theta"], p["sigma"]))
    judge = run.judge(theorem)
    main = judge.mean(est, reference, f"E R_lt vs eq. (12) at n={n}", floor=TRAINED)
    judge.converged(risk_shift(fit.distance, risk).max(), judge.resolvable(main), "R_lt left by last-layer GD")
    other_order = estimate(excess_risk(linear_transfer_pinv(draws, pre.weights), draws))
    judge.note(f"the other order of limits, min-norm W_L at fixed alpha (t -> oo first), gives {other_order}")
    judge.note(note)
    return judge.outcome(f"E R_lt {est} = eq. (12) {reference:.6g} at n={n}", main=main, se=est.se,
                         sizes={"n": n, "d": p["d"], "L": p["L"], "alpha": p["alpha"]},
                         extra={"risk_min_norm_fixed_alpha": other_order.mean, "risk_min_norm_fixed_alpha_se": other_order.se})


SENSITIVE = {"gamma": "1/5", "d": "60", "theta": "pi/2", "sigma": "1"}   # n = 12: linear-transfer's small-n case

linear_transfer_risk = register(Theorem(
    id="linear-transfer",
    title="Risk of linear transfer (only the last layer retrained)",
    source=f"{PAPER}, Thm 3.7, eq. (12); proof App. B.6",
    statement=r"\mathbb{E}_D R_{lt} = \sin^2\theta + \frac{\sigma^2 + \sin^2\theta}{n - 2}",
    quantity="E_D ||Phi W_L - beta_t||^2 after pretraining and GD on W_L (exact in n)",
    assumptions=("features from pretraining in the limit alpha -> 0 (Thm 3.4): Phi = beta_s v^T",
                 "W_L min-norm on the rank-one features: alpha -> 0 is taken before the last layer's t -> oo; "
                 "GD from the pretrained W_L converges along the feature within any practical time, while the "
                 "exact min-norm solve at fixed alpha (the other order) is reported beside it"),
    parameters=(GAMMA, THETA, SIGMA, DIM, DEPTH, ALPHA, EQ22),
    symbolic=_lt_symbolic,
    evaluate=_lt_evaluate,
    check=_lt_check,
    formulas={"risk": _lt_risk},
    trials=TRIALS,
    verdict_rule="two-sided z-test of the mean risk of the trained networks against eq. (12) at the sampled n",
    false_alarm=FALSE_ALARM,
    constraints=_constraints,
    cases=({}, {"theta": "pi/2", "sigma": "1/2"},
           # the sensitive case: at n = 12 the finite-size term (sigma^2 + sin^2 theta)/(n - 2) is large enough that
           # an off-by-one, 1/(n - 1), moves the mean by 2/110 = 6.0 of its standard errors at 12 000 draws
           # (sd 0.33 per draw): detected with probability 0.95 at the critical value 4.38 of a whole quick run
           Case(SENSITIVE, trials={"quick": 12_000, "default": 12_000, "paper": 12_000})),
    samples_design=True,
    # App. B.6: z = X beta_s and w = X nu independent N(0, I_n) (eqs. 112-115), E 1/||z||^2 = 1/(n - 2) (eq.
    # 120)
    input_assumptions=("centred", "isotropic", "gaussian"),
    negative_controls=(
        Control("lt-off-by-one", {"risk": lambda n, th, s: mp.sin(th) ** 2 + (s**2 + mp.sin(th) ** 2) / (n - 1)},
                SENSITIVE, why="eq. (12)'s 1/(n - 2) as 1/(n - 1), at the sensitive case n = 12", trials=12_000),
        Control("lt-dropped-term", {"risk": lambda n, th, s: mp.sin(th) ** 2}, {"gamma": "1/10"},
                why="eq. (12) without its finite-sample term"),
        Control("lt-wrong-constant", {"risk": lambda n, th, s: mp.sin(th) ** 2 + 2 * (s**2 + mp.sin(th) ** 2) / (n - 2)},
                {"gamma": "1/10", "sigma": "1"}, why="the finite-sample term doubled (n = 6)", trials=400),
    ),
    method=('pretrains, retrains W_L by GD, z-test against eq. (12) (exact in n); also reports the other order '
            'of limits (min-norm W_L at fixed alpha)'),
    power=(
        Perturbation('risk', 'up', 'eq. (12), exact in n: one two-sided z-test of the mean risk', cases=(0, 1), analytic=1),
    ),
    limits=("alpha -> 0 before the last layer's t -> oo (rank-one features, then GD on W_L from the pretrained "
            "W_L); exact in n, so no size limit; the other order, the exact min-norm W_L at a fixed alpha (t -> oo "
            "first), is reported beside the verdict, not judged"),
))


# ---------------------------------------------------------------------------------------------
# transferability-linear: eq. (13) and its phase boundaries
# ---------------------------------------------------------------------------------------------

def _tl_asymptotic(gamma, theta, sigma):
    """Eq. (13)."""
    if gamma < 1:
        return ((1 - gamma) ** 2 + gamma * sigma**2) / (1 - gamma) - mp.sin(theta) ** 2
    return sigma**2 / (gamma - 1) - mp.sin(theta) ** 2


def _tl_finite(n, d, theta, sigma):
    """E R_sc(n, d) - E R_lt(n): eq. (13) before n, d -> oo."""
    return expected_risk(n, d, sigma) - _lt_risk(n, theta, sigma)     # E R_sc: see double-descent


ZERO_ROWS = mp.mpf(1) / 10   # zero-rows:0.1, the law that breaks full rank (theorems.core.INPUT_ASSUMPTIONS)


def _tl_zero_rows_departure(p):
    """The relative departure of E R_sc - E R_lt under zero rows from _tl_finite at a case (Case.laws)."""
    n, d, theta, sigma = round(float(p["gamma"]) * int(p["d"])), int(p["d"]), mpf(p["theta"]), mpf(p["sigma"])
    return transfer_gap_with_zero_rows(n, d, theta, sigma, ZERO_ROWS) / _tl_finite(n, d, theta, sigma) - 1


def _tl_symbolic() -> Symbolic:
    g, th, s, d = sp.symbols("gamma theta sigma d", positive=True)
    c2 = sp.cos(th) ** 2
    t_under = ((1 - g) ** 2 + g * s**2) / (1 - g) - sp.sin(th) ** 2
    t_over = s**2 / (g - 1) - sp.sin(th) ** 2
    # gamma < 1: T < 0  <=>  (1 - gamma) T < 0  <=>  a quadratic in gamma is negative.
    quadratic = sp.expand(sp.simplify(t_under * (1 - g)).subs(sp.sin(th) ** 2, 1 - c2))
    roots = sp.solve(sp.Eq(quadratic, 0), g)
    b = 1 + c2 - s**2
    printed = {b / 2 - sp.sqrt(b**2 - 4 * c2) / 2, b / 2 + sp.sqrt(b**2 - 4 * c2) / 2}
    roots_match = all(any(sp.simplify(r - q) == 0 for q in printed) for r in roots) and len(roots) == 2
    over_boundary = sp.solve(sp.Eq(t_over, 0), g)
    cth = sp.Symbol("c", positive=True)
    discriminant = sp.factor((1 + cth**2 - s**2) ** 2 - 4 * cth**2)
    plus_root = b / 2 + sp.sqrt(b**2 - 4 * c2) / 2
    minus_root = b / 2 - sp.sqrt(b**2 - 4 * c2) / 2
    # Sec. 3.3's noiseless case: the limits of the printed gamma_+- and T_lt itself at sigma = 0, two separate routes.
    noiseless_roots = (sp.simplify(sp.limit(minus_root, s, 0, "+")), sp.simplify(sp.limit(plus_root, s, 0, "+")))
    noiseless_t = sp.simplify(t_under.subs(s, 0))
    # gamma_+ <= 1: (b - 2)^2 - (b^2 - 4 c^2) = 4 sigma^2 >= 0 when b <= 2.
    plus_below_one = sp.simplify((2 - b) ** 2 - (b**2 - 4 * c2) - 4 * s**2) == 0
    strip = sp.solve(sp.Eq(quadratic.subs(c2, 0), 0), g)
    finite = (1 - g + s**2 * g * d / (d - g * d - 1)) - (sp.sin(th) ** 2 + (s**2 + sp.sin(th) ** 2) / (g * d - 2))
    return Symbolic(
        "T_lt", sp.Eq(sp.Symbol("T_lt"), sp.Piecewise((t_under, g < 1), (t_over, g > 1))),
        (Derivation("gamma < 1: T_lt = 0 at gamma_+- = [(1 + cos^2 - sigma^2) +- sqrt((1 + cos^2 - sigma^2)^2 - 4 cos^2)]/2, "
                    "as printed in Sec. 3.3", roots, roots_match),
         Derivation("gamma > 1: T_lt < 0 exactly when gamma - 1 > sigma^2 / sin^2(theta)", over_boundary,
                    len(over_boundary) == 1 and sp.simplify(over_boundary[0] - (1 + s**2 / sp.sin(th) ** 2)) == 0),
         Derivation("real gamma_+- need (1 - cos - sigma)(1 + cos - sigma)(1 - cos + sigma)(1 + cos + sigma) >= 0, "
                    "i.e. theta >= arccos(1 - sigma) for sigma < 1", discriminant,
                    sp.simplify(discriminant - (1 - cth - s) * (1 + cth - s) * (1 - cth + s) * (1 + cth + s)) == 0),
         Derivation("gamma_+ <= 1: the negative region for gamma < 1 stays below the interpolation peak",
                    plus_root, plus_below_one),
         Derivation("noiseless limit sigma -> 0: gamma_- -> cos^2(theta) and gamma_+ -> 1, and arccos(1 - sigma) -> 0, so "
                    "the negative region for gamma < 1 becomes theta in (0, pi/2), cos^2(theta) < gamma < 1 (Sec. 3.3)",
                    noiseless_roots, sp.simplify(noiseless_roots[0] - c2) == 0
                    and sp.simplify(noiseless_roots[1] - 1) == 0 and sp.acos(1 - s).subs(s, 0) == 0),
         Derivation("at sigma = 0, T_lt = cos^2(theta) - gamma for gamma < 1: negative exactly for "
                    "cos^2(theta) < gamma < 1, 'more data than target power in the pretrained direction'", noiseless_t,
                    sp.simplify(noiseless_t - (c2 - g)) == 0),
         Derivation("theta = pi/2: T_lt < 0 for gamma < 1 - sigma^2 and gamma > 1 + sigma^2; between them the "
                    "'anomalous positive transfer' strip", strip, 1 - s**2 in strip and all(r in (0, 1 - s**2) for r in strip)),
         Derivation("finite-size T_lt -> eq. (13) as d -> oo (n = gamma d, gamma < 1)",
                    sp.simplify(sp.limit(finite, d, sp.oo)), sp.simplify(sp.limit(finite, d, sp.oo) - t_under) == 0)))


def _tl_check(theorem, params, run) -> Outcome:
    p, n, gen, draws, pre, note = _setup(theorem, params, run)
    run.progress("scratch training and linear transfer")
    try:
        paired = paired_with_alpha_trend(scratch_minus_linear_transfer, draws, p["L"], p["alpha"], _init(p), gen,
                                         pre.weights, run.trends, run.progress)
    except ArithmeticError as error:
        return Outcome("inconclusive", str(error), sizes={"n": n, "d": p["d"]})
    est = estimate(paired.fits.gain)
    finite, asymptotic = theorem.formulas["finite"], theorem.formulas["asymptotic"]
    reference = float(finite(n, p["d"], p["theta"], p["sigma"]))
    limit = float(asymptotic(p["gamma"], p["theta"], p["sigma"]))
    judge = run.judge(theorem)
    main = judge.mean(est, reference, f"T = R_sc - R_lt vs the exact finite-size value at n={n}, d={p['d']}",
                      floor=TRAINED)
    judge.converged(paired.fits.gain_shift(draws).max(), judge.resolvable(main), "T left by training")
    link = limit_link_at_ratio(finite, asymptotic, p["gamma"], p["theta"], p["sigma"])
    judge.fact(link.holds, "eq. (13) as the n -> oo limit of the exact value", link.text)
    judge.note(f"eq. (13) predicts {'negative' if limit < 0 else 'positive'} transfer ({limit:.4g})")
    judge.note(paired.text)
    judge.note(note)
    return judge.outcome(f"T = R_sc - R_lt = {est} = the exact finite-size value {reference:.5g} at n={n}, d={p['d']}, "
                         f"whose n -> oo limit is eq. (13)", main=main, se=est.se, sizes={"n": n, "d": p["d"], "L": p["L"]},
                         extra={"finite_size": reference, "asymptotic": limit, "alpha_trend": paired.trend,
                                "max_final_loss": paired.fits.max_final_loss("linear_transfer"), **link.record()})


# transferability-linear's sensitive case: n = 14, d = 4, where the draws are cheap and n - d = MIN_GAP
TL_SENSITIVE = {"gamma": "7/2", "d": "4", "sigma": "1"}

transferability_linear = register(Theorem(
    id="transferability-linear",
    title="Linear-transfer transferability and its phase diagram",
    source=f"{PAPER}, eq. (13), Sec. 3.3, Figs. 1, 6, 7",
    statement=r"\mathcal{T}_{lt} = \begin{cases} \frac{(1-\gamma)^2+\gamma\sigma^2}{1-\gamma} - \sin^2\theta & \gamma<1 \\ "
              r"\frac{\sigma^2}{\gamma-1} - \sin^2\theta & \gamma > 1 \end{cases}",
    quantity="T = E_D (R_sc - R_lt), the two networks trained on the same draws; theory = eq. (13) (n, d -> oo)",
    assumptions=("scratch network: min-norm interpolator (Thm 3.5); linear transfer on rank-one features (Thm 3.4)",
                 "the Monte-Carlo mean is tested against the exact finite-(n, d) value E R_sc - E R_lt, which "
                 "tends to eq. (13) (derived with sympy)"),
    parameters=(GAMMA, THETA, SIGMA, DIM, DEPTH, ALPHA, EQ22),
    symbolic=_tl_symbolic,
    evaluate=lambda params, dps: _tl_asymptotic(mpf(params["gamma"]), mpf(params["theta"]), mpf(params["sigma"])),
    check=_tl_check,
    formulas={"asymptotic": _tl_asymptotic, "finite": _tl_finite},
    trials=TRIALS,
    verdict_rule=("two-sided z-test of the paired mean R_sc - R_lt against E R_sc(n, d) - E R_lt(n); and eq. (13) "
                  "must be that value's n, d -> oo limit (Richardson, deterministic)"),
    false_alarm=FALSE_ALARM,
    constraints=_constraints,
    cases=(Case({"gamma": "1/2", "theta": "pi/8"}, laws={           # positive transfer; the stress case
        "zero-rows:0.1": ("disagree", "a zero row carries no sample: the scratch risk's 1 - n/d counts the (1 - q) n "
                          "non-zero rows, T = 0.4294 (binomial average over them) instead of 0.3905 (+9.97 %; "
                          "measured 0.4289 ± 0.0049 at the default tier)", _tl_zero_rows_departure)}),
           {"gamma": "1/2", "theta": "3*pi/8"},                     # negative, gamma in (gamma_-, gamma_+)
           {"gamma": "2", "theta": "pi/4"},                         # negative, gamma - 1 > sigma^2 / sin^2
           {"gamma": "6/5", "theta": "pi/8"},                       # positive above the peak
           {"gamma": "4/5", "theta": "pi/2", "sigma": "1/2"},      # anomalous positive transfer strip
           # the sensitive case, at the corner of the domain (d = 4, n - d = MIN_GAP), where the draws are cheap: the
           # scratch half's finite-size term sigma^2 d/(n - d - 1) = 4/9 is large enough that an off-by-one, d/(n - d),
           # moves the mean by 2/45 = 6.4 of its standard errors at 4 000 draws (sd 0.44 per draw, measured): detected
           # with probability 0.98 at the critical value 4.38 of a whole quick run.  The linear-transfer half's
           # off-by-one, 1/(n - 1), moves it by only 1/104 here; at n = 14 it would take about 14 500 draws (sd 0.136
           # per draw at sigma = 0, theta = pi/2, 13 s): linear-transfer's sensitive case detects that one
           Case(TL_SENSITIVE, trials={"quick": 4_000, "default": 4_000, "paper": 4_000})),
    samples_design=True,
    # eq. (13) is Thm 3.6 minus Thm 3.7: the assumptions of both proofs
    input_assumptions=("centred", "isotropic", "rotation-invariant", "gaussian", "full-rank"),
    negative_controls=(
        Control("tl-off-by-one", {"finite": lambda n, d, th, s: s**2 * mp.mpf(d) / (n - d) - _lt_risk(n, th, s)},
                TL_SENSITIVE, why="E R_sc's inverse-Wishart mean sigma^2 d/(n - d - 1) as sigma^2 d/(n - d) (the "
                                  "sensitive case, n = 14 > d = 4)", trials=4_000),
        Control("tl-dropped-noise", {"finite": lambda n, d, th, s: expected_risk(n, d, 0) - _lt_risk(n, th, s)},
                {"sigma": "1/2"}, why="the scratch model's noise term dropped"),
        # the simulation still matches the exact finite-size value, but its n -> oo limit is not the claimed formula
        Control("tl-wrong-limit", {"asymptotic": lambda g, th, s: 1.001 * _tl_asymptotic(g, th, s)},
                why="eq. (13) 0.1 % off"),
        # the recorded break (Case.laws), under its law: the stated finite-size value counts n rows (400 draws)
        Control("tl-zero-rows-rank-n", {"finite": _tl_finite}, {"gamma": "1/2", "theta": "pi/8"}, trials=400,
                data="zero-rows:0.1", why="the stated finite-size T, which counts rank n, under zero rows"),
    ),
    method=('scratch and linear-transfer networks trained on the same draws; paired R_sc - R_lt against its '
            'exact finite-(n, d) value; sympy derives gamma_+-, the arccos(1 - sigma) threshold, the gamma > 1 '
            'boundary and the anomalous strip at theta = pi/2; cases inside each region of Fig. 1'),
    power=(
        Perturbation('finite', 'up', "eq. (13) at the sampled n, d (E R_sc - E R_lt, exact): the z-test's reference", analytic=1),
        Perturbation('asymptotic', 'up', ('eq. (13) itself (n, d -> oo): must be the Richardson limit of the exact finite-size value '
             '(deterministic, tolerance ~1e-6)'), primary=False),
    ),
    limits=("n, d -> oo at a fixed gamma = n/d, through the exact finite-(n, d) value (tested at the sampled n, d) "
            "and a deterministic Richardson link from it to eq. (13); the networks are trained at a small fixed "
            "alpha to convergence (t -> oo), standing for the alpha -> 0 after t -> oo limits of Thms 3.4 and 3.5"),
))



# ---------------------------------------------------------------------------------------------
# ridge-transfer: Thm 3.8, eq. (15); finite n from eqs. (127)-(130)
# ---------------------------------------------------------------------------------------------

LAM = Parameter("lam", "ridge penalty on W_L (eq. 14); lam = 0 is linear-transfer", "1/5", lower="0", lower_open=True,
                typical=("1/100", "3/5"))


def _rt_symbolic() -> Symbolic:
    lam, th, s, n = sp.symbols("lambda theta sigma n", positive=True)
    limit = 1 - sp.cos(th) ** 2 * (1 + 2 * lam) / (1 + lam) ** 2
    # eqs. (139)-(140): I_1(n) -> 0, I_1(n + 2) -> 1/(1 + lam)^2, I_2(n) -> 1/(1 + lam), plugged into (128).
    plugged = 1 + sp.cos(th) ** 2 / (1 + lam) ** 2 + 0 - 2 * sp.cos(th) ** 2 / (1 + lam)
    slope = sp.simplify(sp.diff(limit, lam))
    # finite n (exact, from E[R | s] of eqs. 127-130): d E[R|s] / d(n lam) = 2 s (cos^2 n lam - kappa) / (s + n lam)^3
    ss, c, kappa = sp.symbols("s c kappa", positive=True)
    conditional = sp.sin(th) ** 2 + (sp.cos(th) ** 2 * c**2 + kappa * ss) / (ss + c) ** 2
    d_conditional = sp.factor(sp.diff(conditional, c))
    return Symbolic(
        "lim_n E_D R_lt^lam", sp.Eq(sp.Symbol("ER_lt^lam"), limit),
        (Derivation("eqs. (139)-(140) in eq. (128) give eq. (141)", sp.simplify(plugged),
                    sp.simplify(plugged - limit) == 0),
         Derivation("d/dlam of eq. (15) = 2 lam cos^2(theta) / (1 + lam)^3 >= 0: increasing, so lam* = 0 as n -> oo",
                    slope, sp.simplify(slope - 2 * lam * sp.cos(th) ** 2 / (1 + lam) ** 3) == 0),
         Derivation("at finite n, dE[R | s]/dc has the sign of cos^2(theta) c - kappa (c = n lam, kappa = sin^2 + sigma^2): "
                    "the risk falls until lam* = kappa / (n cos^2 theta) > 0", d_conditional,
                    sp.simplify(d_conditional - 2 * ss * (sp.cos(th) ** 2 * c - kappa) / (ss + c) ** 3) == 0)))


def _rt_check(theorem, params, run) -> Outcome:
    p, n, gen, draws, pre, note = _setup(theorem, params, run)
    run.progress("ridge on the trained features")
    risk = excess_risk(ridge_transfer(draws, pre.weights, p["lam"]), draws)
    est = estimate(risk)
    finite_at = lambda size: theorem.formulas["finite"](size, p["lam"], p["theta"], p["sigma"])
    finite, limit = float(finite_at(n)), float(theorem.formulas["limit"](p["lam"], p["theta"]))
    judge = run.judge(theorem)
    main = judge.mean(est, finite, f"E R_lt^lam vs the exact finite-n value (eqs. 127-130, quadrature) at n={n}",
                      floor=TRAINED)
    # the features are pretraining's, stopped at a small population gradient: how far the ridge risks can move
    # on the rest of its path (simulate.convergence)
    features_left = feature_shift(population_path_length(pre.grad_norm, pre.weights), pre.weights)
    moved = ridge_shift(features_left, feature_map(pre.weights), draws.X, draws.y, p["lam"])
    judge.converged(risk_shift(moved, risk).max(), judge.resolvable(main), "risk moved by pretraining's stop")
    link = limit_link(finite_at, theorem.formulas["limit"](p["lam"], p["theta"]))
    judge.fact(link.holds, "eq. (15) as the n -> oo limit of the exact value", link.text)
    judge.note(note)
    return judge.outcome(f"E R_lt^lam {est} = the exact finite-n value {finite:.6g} at n={n}, whose n -> oo limit is "
                         f"eq. (15) = {limit:.6g}", main=main, se=est.se, sizes={"n": n, "d": p["d"], "L": p["L"]},
                         extra={"finite_n": finite, "limit": limit, **link.record()})


def _rt_certify(theorem, params, run) -> dict:
    """Eqs. (127)-(130) at the check's n, and eq. (15), proved or disproved as ``certify_method`` says."""
    cert = run.certifier(theorem)
    n = round(float(params["gamma"]) * int(params["d"]))     # the check's n (_setup)
    lam, theta, sigma = params["lam"], params["theta"], params["sigma"]
    cert.equal(cert.formula("finite", n, lam, theta, sigma), enclosures.ridge_transfer_risk(n, lam, theta, sigma),
               f"the finite-n formula at n = {n} vs the chi-square integral")
    limit = enclosures.ridge_transfer_risk_limit(lam, theta, sigma)
    cert.theory(ball(limit))
    cert.equal(cert.formula("limit", lam, theta), limit, "eq. (15) vs lim_n E R (sympy)")
    return cert.outcome(f"E R_lt^lam at n = {n} and its n -> oo limit eq. (15)")



def _rt_off_by_one(n, lam, theta, sigma):
    """A negative control: eqs. (127)-(130) at n + 1 for n, a 1/n^2 change (at lam = 0 it is eq. (12)'s 1/(n - 2)
    written 1/(n - 1)).  Only the degrees of freedom off by one, chi^2_{n+1} with c = n lam kept, would be a 1/n
    change at lam > 0, which the case lam = 3/5 at n = 30 already resolves."""
    return ridge_transfer_expected_risk(n + 1, lam, theta, sigma)


# n = 6: ridge-transfer's small-n case, at the claim's default lam and theta with unit noise
RT_SENSITIVE = {"lam": "1/5", "gamma": "1/10", "d": "60", "theta": "pi/4", "sigma": "1"}


def _rt_wrong_constant(n, lam, theta, sigma):
    """A negative control: eq. (15)'s 1 + 2 lambda written 1 + lambda (at every n)."""
    return 1 - mp.cos(theta) ** 2 * (1 + lam) / (1 + lam) ** 2


ridge_transfer_risk = register(Theorem(
    id="ridge-transfer",
    title="Ridge linear transfer: risk in the large-n limit",
    source=f"{PAPER}, Thm 3.8, eq. (15); proof App. B.7, eqs. (121)-(141); Fig. 2",
    statement=r"\lim_{n\to\infty}\mathbb{E}_D R^\lambda_{lt} = 1 - \cos^2\theta\,\frac{1 + 2\lambda}{(1 + \lambda)^2}",
    quantity="E_D ||beta_ridge - beta_t||^2 on the pretrained features; tested against the exact finite-n expectation",
    assumptions=("rank-one pretrained features (Thm 3.4); ridge solve of eq. (14) on them (eq. 121)",
                 "lam >> alpha^2: at fixed alpha, lam -> 0 crosses over (near lam ~ alpha^2) to the min-norm "
                 "interpolator on all d features, the other order of limits (see linear-transfer)",
                 "eq. (15) is the n -> oo limit: the estimate is tested against the exact finite-n value of eqs. "
                 "(127)-(130), evaluated by quadrature, which tends to eq. (15) like 1/n"),
    parameters=(LAM, GAMMA, THETA, SIGMA, DIM, DEPTH, ALPHA, EQ22),
    symbolic=_rt_symbolic,
    evaluate=lambda params, dps: ridge_transfer_limit(mpf(params["lam"]), mpf(params["theta"])),
    check=_rt_check,
    formulas={"finite": ridge_transfer_expected_risk, "limit": ridge_transfer_limit},
    trials=RIDGE_TRIALS,
    verdict_rule=("two-sided z-test of the mean risk against the exact finite-n expectation (eq. 128 by quadrature); "
                  "and eq. (15) must be its n -> oo limit (Richardson, deterministic)"),
    false_alarm=FALSE_ALARM,
    constraints=_constraints,
    cases=(Case({"lam": "1/50"}, laws={   # the first is the stress case
        "anisotropic:0.6": ("disagree", "the chi integrals (eqs. 129-130) take ||X beta_s||^2 ~ chi^2_n; under "
                            "N(0, diag(1 +- 0.6)) rows it is s^2 chi^2_n, s^2 = beta_s^T D beta_s of the drawn source "
                            "(and X beta_s, X nu correlate): +0.14 % at d = 100 (z = +6.1), a finite-size effect of "
                            "the source, s^2 -> tr D / d = 1 as d -> oo")}),
           {"lam": "1/5"}, {"lam": "3/5"},
           # the sensitive case: at n = 6 the finite-size part of eqs. (127)-(130) is large enough that their value
           # at n + 1 (_rt_off_by_one) lies 0.0316 below, 9.2 standard errors at 10 000 draws (sd 0.34 per draw,
           # measured): detected with probability > 0.9999 at the critical value 4.38 of a whole quick run (1e-3
           # over its 86 points); 3 800 draws would give 0.9.  At n = 30 the same slip is 0.0004-0.0006, which
           # takes 58 000 draws or more.  The default tier's 20 000 draws are more; the paper tier's 20 far fewer.
           Case(RT_SENSITIVE, trials={"quick": 10_000, "paper": 10_000})),
    samples_design=True,
    # App. B.7: z = X beta_s, w = X nu independent N(0, I_n); the chi integrals I_1, I_2 (eqs. 129-130)
    input_assumptions=("centred", "isotropic", "gaussian"),
    negative_controls=(
        Control("rt-off-by-one", {"finite": _rt_off_by_one}, RT_SENSITIVE, trials=10_000,
                why="eqs. (127)-(130) at n + 1 (at lam = 0: eq. (12)'s 1/(n - 2) as 1/(n - 1)), at the sensitive "
                    "case n = 6"),
        Control("rt-asymptotic-at-finite-n", {"finite": lambda n, lam, th, s: ridge_transfer_limit(lam, th)},
                {"gamma": "1/10", "sigma": "1"}, why="a finite n judged by the n -> oo formula"),
        Control("rt-wrong-constant", {"finite": _rt_wrong_constant}, {"lam": "3/5"}, why="a wrong constant in eq. (15)"),
        Control("rt-wrong-limit", {"limit": lambda lam, th: 1.001 * ridge_transfer_limit(lam, th)},
                why="eq. (15) 0.1 % off: only the Richardson limit link can see it"),
        # the recorded break (Case.laws): a wrong formula still fails under its law
        Control("rt-anisotropic-wrong-constant", {"finite": _rt_wrong_constant}, {"lam": "3/5"}, data="anisotropic:0.6",
                why="a wrong constant in eq. (15), under anisotropic rows"),
    ),
    certify=_rt_certify,
    certify_method=("the finite-n expectation (eqs. 127-130) enclosed by arb integration over chi-square(n) with a "
                    "Chernoff tail; eq. (15) in arb balls against the exact limit of the conditional risk (sympy)"),
    method=('ridge on the trained features (eq. 121) against the **exact finite-n expectation** of eqs. '
            '(127)-(130) by mpmath quadrature, which tends to eq. (15) like 1/n'),
    power=(
        Perturbation('finite', 'up', "eq. (15) at finite n (eqs. 127-130 by quadrature): the z-test's reference", analytic=1),
        Perturbation('limit', 'up', ('eq. (15) itself (n -> oo): must be the Richardson limit of the exact finite-n value '
             '(deterministic, tolerance ~1e-6)'), primary=False),
    ),
    limits=("n -> oo through the exact finite-n value (tested at the sampled n) and a deterministic Richardson link "
            "from it to eq. (15); the features are rank one (alpha -> 0 before lam -> 0, lam >> alpha^2): at a "
            "fixed alpha, lam -> 0 crosses over to the min-norm interpolator on all d features, the other order "
            "(see linear-transfer)"),
))


def _ro_optimal(n, theta, sigma):
    """The paper's conclusion from eq. (15): the optimal ridge is lam* = 0."""
    return mp.mpf(0)


RO_CORRECTED = "lam* = (sin^2 theta + sigma^2)/(n cos^2 theta), the minimiser of the exact finite-n risk (eqs. 127-130)"


def _ro_check(theorem, params, run) -> Outcome:
    p, n, gen, draws, pre, note = _setup(theorem, params, run)
    claimed = float(theorem.formulas["optimal"](n, p["theta"], p["sigma"]))
    exact = float(ridge_transfer_optimal_lambda(n, mpf(params["theta"]), mpf(params["sigma"])))
    run.progress("ridge at the claimed and the exact optimum")
    # Paired on the same draws: the claimed optimum must not be beaten by the exact finite-n one.
    left = []                                       # what GD leaves, where lam = 0 is trained (linear transfer)
    est = estimate(ridge_risk_reduction(draws, pre.weights, claimed, exact, shift=left))
    with mp.workdps(20):
        theta, sigma = mpf(params["theta"]), mpf(params["sigma"])
        expected_gain = float(ridge_transfer_expected_risk(n, mp.mpf(claimed), theta, sigma)
                              - ridge_transfer_expected_risk(n, mp.mpf(exact), theta, sigma))
    judge = run.judge(theorem)
    # one-sided: only a gain (the claimed optimum beaten) alarms; where claimed == exact the gain is exactly 0
    main = judge.mean(est, 0.0, f"risk reduction at n={n} by ridge lam={exact:.4g} = (sin^2 theta + sigma^2)/"
                      f"(n cos^2 theta) below lam={claimed:g}", floor=TRAINED, alarm="above")
    judge.converged(left[0].max(), judge.resolvable(main), "R(lam) left by last-layer GD")
    # the corrected statement, on the same draws: the gain is the one the exact finite-n risk gives
    judge.corrected(RO_CORRECTED, expected_gain).mean(est, expected_gain, "gain vs the exact finite-n gain",
                                                       floor=TRAINED)
    judge.note(f"exact finite-n gain {expected_gain:.4g}")
    return judge.outcome(f"no risk reduction beyond lam={claimed:g} detected: R(lam*) - R(lam={exact:.4g}) = {est}",
                         main=main, se=est.se, sizes={"n": n, "d": p["d"]},
                         extra={"claimed_optimum": claimed, "finite_n_optimum": exact, "exact_expected_gain": expected_gain})


ridge_optimal_lambda = register(Theorem(
    id="ridge-optimal-lambda",
    title="Ridge cannot help linear transfer: the optimal penalty is lam* = 0",
    source=f"{PAPER}, Thm 3.8 and Sec. 3.3.1 ('strictly increasing ... optimal regularization lam* = 0'); Fig. 2",
    statement=r"\lambda^* = \arg\min_\lambda \mathbb{E}_D R^\lambda_{lt} = 0",
    quantity="paired risk difference R(lam = 0) - R(lam = kappa / (n cos^2 theta)) on the same draws (> 0: ridge helps)",
    assumptions=("as for ridge-transfer; the claim is read at the finite n of an experiment, where the paper's "
                 "Fig. 2 applies it",),
    parameters=(GAMMA, THETA, SIGMA, DIM, DEPTH, ALPHA, EQ22),
    symbolic=_rt_symbolic,       # the same derivations: eq. (15) and its finite-n slope in lam
    evaluate=lambda params, dps: mp.mpf(0),
    check=_ro_check,
    formulas={"optimal": _ro_optimal},
    trials={"quick": 2000, "default": 4000, "paper": 4000},
    verdict_rule=("one-sided z-test that R(claimed lam*) - R(finite-n optimum (sin^2 + sigma^2)/(n cos^2)) > 0 on the "
                  "same draws: disagree if the claimed optimum is beaten"),
    false_alarm=FALSE_ALARM,
    constraints=_constraints,
    cases=(),
    findings=(Finding("sigma > 0 or theta > 0",
                      "lam* = 0 holds only as n -> oo: at finite n, E[R | ||z||] falls in lam until "
                      "lam* = (sin^2 theta + sigma^2)/(n cos^2 theta) > 0, so a small ridge always helps",
                      at={"gamma": "1/5", "theta": "pi/4", "sigma": "1"}, corrected=RO_CORRECTED),),
    samples_design=True,
    # as ridge-transfer (App. B.7)
    input_assumptions=("centred", "isotropic", "gaussian"),
    method=('paired risk at lam = 0 and at the finite-n optimum on the same draws (recorded finding: '
            '[findings.md](findings.md))'),
    power=(
        Perturbation('optimal', 'n/a', ('a recorded refutation (the check already disagrees), and the claimed value lam* = 0 has no '
             'relative perturbation; its control is the corrected claim, which must agree')),
    ),
))


# ---------------------------------------------------------------------------------------------
# finetune: Thm 3.9, eqs. (16)-(17)
# ---------------------------------------------------------------------------------------------

def _ft_transferability(n, d, theta):
    """Eq. (17) at finite size: T_ft = R_sc - R_ft = -E||P_perp beta_s||^2 (1 - 2 cos theta) = (n/d - 1)(1 - 2 cos theta)
    for n < d (the proof's E||(I - P_row) beta_s||^2 = 1 - n/d is exact), 0 for n > d."""
    if n >= d:
        return mp.mpf(0)
    return (mp.mpf(n) / d - 1) * (1 - 2 * mp.cos(theta))


def _ft_asymptotic(gamma, theta):
    """Eq. (17)."""
    return (gamma - 1) * (1 - 2 * mp.cos(theta)) if gamma <= 1 else mp.mpf(0)


def _ft_symbolic() -> Symbolic:
    g, th, s, c = sp.symbols("gamma theta sigma c", positive=True)
    t_ft = (g - 1) * (1 - 2 * sp.cos(th))
    boundary = sp.solve(sp.Eq(1 - 2 * sp.cos(th), 0), th)
    # If the null-space part is rescaled by c (Shachaf et al. Thm 5.2 with L = 2: c^2 = ||beta_ft||),
    # orthogonality of row(X) and its complement gives c^4 = c^2 (1 - gamma) + gamma (1 + sigma^2/(1 - gamma)).
    q = sp.Symbol("q")                                                # q = c^2
    quadratic = q**2 - q * (1 - g) - g * (1 + s**2 / (1 - g))
    one_positive_root = sp.simplify(quadratic.subs(q, 0) + g * (1 + s**2 / (1 - g))) == 0   # product of roots < 0
    noiseless = sp.simplify(quadratic.subs({q: 1, s: 0})) == 0
    noisy = sp.simplify(quadratic.subs({q: sp.Rational(3, 2), s: 1, g: sp.Rational(1, 2)})) == 0
    eq17 = sp.simplify(-(1 - g) * (1 - 2 * sp.cos(th)))      # the paper's eq. (17), shown as derived
    return Symbolic(
        "T_ft", sp.Eq(sp.Symbol("T_ft"), sp.Piecewise((t_ft, g <= 1), (0, True))),
        (Derivation("the sign of T_ft (gamma < 1) flips at theta = pi/3", boundary, sp.pi / 3 in boundary),
         Derivation("eq. (17) from eq. (16): T_ft = R_sc - R_ft", eq17, sp.simplify(eq17 - t_ft) == 0),
         Derivation("with Shachaf et al.'s rescaled null-space part (L = 2, gamma < 1), q = c^2 solves "
                    "q^2 - (1 - gamma) q - gamma (1 + sigma^2/(1 - gamma)) = 0, whose one positive root is 1 "
                    "for sigma = 0 and 3/2 at sigma = 1, gamma = 1/2: eq. (16) can only be exact for noiseless targets",
                    quadratic, one_positive_root and noiseless and noisy)))


# finetune's sensitive case: n = 3, d = 13 (the corner n >= 3, d - n >= MIN_GAP), sigma = 0 and theta = pi, where eq. (5)'s
# coefficient c is exactly 1 on every draw, so eq. (17) at finite size is exact; T_ft = -3 (1 - ||P_row beta_s||^2)
FT_SENSITIVE = {"gamma": "3/13", "d": "13", "sigma": "0", "theta": "pi"}
FT_STRESS = {"sigma": "0", "theta": "pi"}
FT_CORRECTED = "Shachaf et al.'s eq. (5): beta_ft = c P_perp beta_s + X^+ y, c from the depth-rescaling equation"


def _ft_zero_rows(n, d, theta, q=ZERO_ROWS):
    """Eq. (17) at finite size when each row is 0 with probability q: E||(I - P_row) beta_s||^2 = 1 - E rank/d with
    E rank = (1 - q) n (n < d), so T_ft = ((1 - q) n/d - 1)(1 - 2 cos theta)."""
    return ((1 - q) * mp.mpf(n) / d - 1) * (1 - 2 * mp.cos(theta)) if n < d else mp.mpf(0)


def _ft_zero_rows_departure(p):
    n, d = round(float(p["gamma"]) * int(p["d"])), int(p["d"])
    return _ft_zero_rows(n, d, mpf(p["theta"])) / _ft_transferability(n, d, mpf(p["theta"])) - 1


def _ft_wrong_boundary(n, d, theta):
    """A negative control: the sign of T_ft changing at pi/4 instead of pi/3 (sqrt 2 for 2)."""
    return (mp.mpf(n) / d - 1) * (1 - mp.sqrt(2) * mp.cos(theta))


def _ft_check(theorem, params, run) -> Outcome:
    p, n, gen, draws, pre, note = _setup(theorem, params, run)
    run.progress("scratch training and fine-tuning")
    try:
        paired = paired_with_alpha_trend(scratch_minus_fine_tune, draws, p["L"], p["alpha"], _init(p), gen,
                                         pre.weights, run.trends, run.progress)
    except ArithmeticError as error:
        return Outcome("inconclusive", str(error), sizes={"n": n, "d": p["d"]})
    judge = run.judge(theorem)
    # where the stop leaves more than the test below resolves (n just above d), both flows go on (fine_tune_certified)
    allowance = max(judge.resolvable(max(estimate(paired.fits.gain).se, TRAINED)), TRAINED)
    try:
        fits = fine_tune_certified(paired.fits, draws, allowance)
    except ArithmeticError as error:
        return Outcome("inconclusive", str(error), sizes={"n": n, "d": p["d"]})
    sc, ft = fits.scratch, fits.transfer
    est = estimate(fits.gain)
    finite, asymptotic = theorem.formulas["finite"], theorem.formulas["asymptotic"]
    reference = float(finite(n, p["d"], p["theta"]))
    main = judge.mean(est, reference, f"T_ft = R_sc - R_ft vs (n/d - 1)(1 - 2 cos theta) at n={n}, d={p['d']}",
                      floor=TRAINED)
    # where the standard error is the floor TRAINED (n > d: both networks reach the same least-squares solution and
    # T_ft = 0), that floor is the training allowance the test already makes; the certificate, a loose sum of both
    # risks' shifts (1.1e-9 at L = 3), is held to it, not to a tenth of it
    judge.converged(fits.gain_shift(draws).max(), max(judge.resolvable(main), TRAINED), "T_ft left by training")
    risk_sc = excess_risk(sc.beta, draws)
    along = [{"step": step, "T_ft": gain} for step, gain in gain_along_training(risk_sc, fits.history, draws)]
    extra = {"finite_size": reference, "asymptotic": float(asymptotic(p["gamma"], p["theta"])),
             "alpha_trend": paired.trend, "T_ft_along_fine_tuning": along,
             "max_final_loss": fits.max_final_loss("fine_tune")}
    link = limit_link_at_ratio(finite, asymptotic, p["gamma"], p["theta"])
    judge.fact(link.holds, "eq. (17) as the n -> oo limit of the exact value", link.text)
    extra.update(link.record())
    if n < p["d"]:
        # The proof's eq. (142): beta_ft = beta_sc + (I - P_row) beta_s, i.e. a coefficient 1 on P_perp beta_s.
        coefficient = estimate(null_space_coefficient(draws.X, draws.beta_s, ft.beta - sc.beta))
        rescaled = estimate(ft.beta.norm(dim=1).pow((p["L"] - 1) / p["L"]))   # Shachaf et al. Thm 5.2
        extra.update(null_space_coefficient=coefficient.mean, null_space_coefficient_se=coefficient.se,
                     shachaf_coefficient=rescaled.mean)
        judge.note(f"coefficient of P_perp beta_s in beta_ft - beta_sc: {coefficient} (eq. 142: 1; "
                   f"Shachaf et al. Thm 5.2: ||beta_ft||^((L-1)/L) = {rescaled.mean:.4f})")
        # the finding's corrected statement on these networks: per draw, eq. (5)'s c P_perp beta(0) + X^+ y (to
        # the integrator's accuracy and the pretrained weights' imbalance), and the T_ft it predicts
        eq5 = eq5_prediction(theorem.formulas["corrected"], draws, pre, ft.beta, p["L"], risk_sc)
        judge.corrected(FT_CORRECTED, eq5.gain).per_draw(eq5.worst, "eq. (5) per draw", text=(
            f"largest distance {eq5.largest:.2g} of ||c P_perp beta_s||, {eq5.worst:.2g}x its tolerance"))
        extra["corrected"] = {"predicted_T_ft": eq5.gain, "mean_c": eq5.mean_c, "worst_over_tolerance": eq5.worst}
    judge.note(paired.text)
    judge.note(note)
    return judge.outcome(f"T_ft = R_sc - R_ft = {est} = {reference:.5g} at n={n}, d={p['d']}, whose n -> oo limit is "
                         f"eq. (17)", main=main, se=est.se, sizes={"n": n, "d": p["d"], "L": p["L"]}, extra=extra)


finetune = register(Theorem(
    id="finetune",
    title="Fine-tuning transferability of a pretrained deep linear network",
    source=f"{PAPER}, Thm 3.9, eqs. (16)-(17); proof App. B.8; Fig. 3",
    statement=r"\mathcal{T}_{ft} = \begin{cases} (\gamma - 1)(1 - 2\cos\theta) & \gamma \le 1 \\ 0 & \gamma > 1\end{cases}",
    quantity="T_ft = E_D (R_sc - R_ft), both networks trained on the same draws; theory = eq. (17)",
    assumptions=("pretraining from alpha -> 0 (eq. 22), fine-tuning every layer by gradient flow to zero loss",
                 "the estimate is tested against eq. (17) at the sampled n/d, where the proof's "
                 "E||(I - P_row) beta_s||^2 = 1 - n/d is exact"),
    parameters=(GAMMA, THETA, SIGMA, DIM, DEPTH, ALPHA, EQ22),
    symbolic=_ft_symbolic,
    evaluate=lambda params, dps: _ft_asymptotic(mpf(params["gamma"]), mpf(params["theta"])),
    check=_ft_check,
    formulas={"finite": _ft_transferability, "asymptotic": _ft_asymptotic, "corrected": rescaling_coefficient},
    trials={"quick": 100, "default": 200, "paper": 20},
    verdict_rule=("two-sided z-test of the paired mean R_sc - R_ft against (n/d - 1)(1 - 2 cos theta) (0 for n > d); "
                  "and eq. (17) must be that value's n -> oo limit (Richardson, deterministic)"),
    false_alarm=FALSE_ALARM,
    constraints=_constraints,
    # the first is the stress case: at sigma = 0, theta = pi eq. (5)'s c is 1 on every draw, so eq. (17) at finite size
    # is exact there and a broken assumption shows alone (away from theta = 0, pi the finding's O(1/d) joins it)
    cases=(Case(FT_STRESS, laws={
        "zero-rows:0.1": ("disagree", "eq. (17) takes E||(I - P_row) beta_s||^2 = 1 - n/d, rank n: a zero row lowers "
                          "the rank to (1 - q) n on average, T_ft = ((1 - q) n/d - 1)(1 - 2 cos theta) (+10 % at "
                          "gamma = 1/2; measured +9.4 % +- 1.1 % at the default tier)", _ft_zero_rows_departure),
        "anisotropic:0.6": ("disagree", "eq. (17) takes E||P_row beta_s||^2 = n/d by rotation invariance; under "
                            "N(0, diag(1 +- 0.6)) rows row(X) leans to the high-variance half, so the mean is n/d + "
                            "(p+ - p-)(m - 1/2), m the drawn source's mass there (0.437 at seed 0): 0.481 for 0.5 on "
                            "the default tier's draws, T_ft 3.8 % larger in size (z = -3.8), a finite-size effect of the source "
                            "(m -> 1/2 as d -> oo)")}),
           {"sigma": "0", "theta": "pi/4"}, {"gamma": "2", "theta": "pi/2"},
           # the sensitive case: the rank off by one moves T_ft by 3/d = 0.231 against a per-draw sd of 0.46
           # (eq. (5)'s T_ft over 400 000 draws): 7.1 standard errors at 200 draws, detected with probability 0.999
           # at the critical value 4.38 of a whole quick run (scripts/power.py --off-by-one)
           Case(FT_SENSITIVE, trials={"quick": 200, "default": 200, "paper": 200})),
    findings=(Finding(
        "gamma < 1 and (sigma > 0 or (theta > 0 and theta < pi))",
        "eq. (142) keeps P_perp beta_s with coefficient 1, but gradient flow rescales it by c = ||beta_ft||^((L-1)/L) "
        "(Shachaf et al. Thm 5.2): for sigma > 0 c > 1 and eq. (16) underestimates R_ft; for sigma = 0 c varies "
        "per draw (it is 1 on every draw only at theta = 0, pi) and T_ft is off by O(1/d): -1.7 % at n = 3, d = 13, "
        "theta = pi/2, -1.0 % at n = 30, d = 60",
        at={"sigma": "1", "theta": "pi/2"}, corrected=FT_CORRECTED),),
    samples_design=True,
    # App. B.8: E||(I - P_row) beta_s||^2 = 1 - gamma and the vanishing cross term by rotation invariance (eqs.
    # 142-144), rank n; risk ||beta - beta_t||^2
    input_assumptions=("isotropic", "rotation-invariant", "full-rank"),
    negative_controls=(
        Control("ft-wrong-limit", {"asymptotic": lambda g, th: 1.001 * _ft_asymptotic(g, th)},
                why="eq. (17) 0.1 % off: only the Richardson limit link can see it"),
        Control("ft-wrong-boundary", {"finite": _ft_wrong_boundary}, FT_STRESS,
                why="the sign change at pi/4 instead of pi/3"),
        Control("ft-off-by-one", {"finite": lambda n, d, theta: _ft_transferability(n - 1, d, theta)}, FT_SENSITIVE,
                why="eq. (17) at finite size with the rank n - 1 for n (E||P_perp beta_s||^2 = 1 - (n - 1)/d), at the "
                    "sensitive case n = 3, d = 13", trials=200),
        # the recorded break (Case.laws): its explanation must agree under zero-rows:0.1, a wrong formula still fail
        Control("ft-zero-rows-rank", {"finite": _ft_zero_rows,
                                      "asymptotic": lambda g, th: _ft_asymptotic((1 - ZERO_ROWS) * mpf(g), th)},
                FT_STRESS, data="zero-rows:0.1", verdict="agree",
                why="eq. (17) at the expected rank (1 - q) n"),
        Control("ft-zero-rows-wrong-boundary", {"finite": _ft_wrong_boundary}, FT_STRESS,
                data="zero-rows:0.1", why="the sign change at pi/4 instead of pi/3, under zero rows"),
    ),
    method=('scratch networks (gradient descent; adaptive Runge-Kutta-Chebyshev steps when X X^T is ill-conditioned)'
            ' and fine-tuned ones (gradient flow: adaptive RKC at L = 2, RK4 at L >= 3) on the same draws; paired R_sc - R_ft'
            ' against eq. (17) at the sampled n/d; reports the coefficient of P_perp beta_s that eq. (142) fixes at 1'),
    power=(
        Perturbation('finite', 'up', ("eq. (17) at the sampled n/d: the z-test's reference (cases 3 and 4: T_ft = 0 has no relative "
             'perturbation, case 4 is a recorded refutation)'), analytic=1),
        Perturbation('asymptotic', 'up', ('eq. (17) as n, d -> oo: must be the Richardson limit of the exact finite-size value '
             '(deterministic)'), primary=False),
    ),
    limits=("n, d -> oo at a fixed gamma through eq. (17) at the sampled n/d (exact at finite size) and a "
            "Richardson link; pretraining's alpha -> 0 (a small fixed alpha) before fine-tuning's t -> oo (gradient "
            "flow to zero loss)"),
))
