"""Tahir, Ganguli & Rotskoff, "Features are fate", Sec. 4: linear transfer in two-layer ReLU networks.

Setting (eqs. 18-20, App. D.2): student f(x) = (1/m) sum_i c_i relu(w_i . x), units on S^{d-1}
(initialised uniformly, readouts at 1e-7), x ~ N(0, I_d); target teacher f_t = (1/m*) sum_j c*_j
relu(w*_j . x); source teacher f_s = the target without a uniformly random fraction mu of its units,
rescaled by 1/((1 - mu) m*).  Pretraining: gradient descent on the exact population loss of f_s.
Linear transfer: only the readout retrained on n target samples (kernel interpolation with the
pretrained features).  Scratch: the whole student trained on the n samples from a fresh init.

The claims (Sec. 4, Fig. 4c-e):
  (i)   ||P_perp f_t||^2 (eqs. 154-159, P the projector on the pretrained features' span) grows with mu;
  (ii)  the scratch risk follows a power law R_sc ~ A n^-nu (nu = 1.18 fitted at d = 100, m = 1000, m* = 100);
  (iii) E R_lt = C(n) + ||P_perp f_t||^2 (eq. 21) with C(n) -> 0, so negative transfer (R_lt > R_sc) sets in
        near the n where ||P_perp f_t||^2 = A n^-nu (the grey circles of Fig. 4e).

Choices the paper leaves open, and why:
  * c*_j = 1 for every teacher unit.  The paper does not give c*; with equal positive readouts the
    normalised out-of-RKHS norm of a feature-sparsified student is ~0.02 at mu = 1/2 and m* = 100 (the
    idealised value below), the scale of Fig. 4d; zero-mean readouts would give ~mu, far above it.
  * Linear transfer runs gradient descent on the readout from c = 0 (kernel interpolation) with the
    paper's budget: step 0.01 m, 1e5 steps or loss 1e-6.  On the quadratic readout loss the GD iterates
    are computed exactly (simulate.teachers.readout_gd).  The budget matters: the exact least-norm
    interpolant (t -> oo) of a target outside the span has an interpolation peak at n = m, which the
    finite budget cuts off; the check reports the t -> oo risk beside it.
  * Pretraining and scratch training use the shared trainer (simulate.relu_nets) with step eta m and
    the paper's mean-field time horizon eta * steps = 0.01 * 1e5 = 1000 (or loss 1e-6), at eta = 2 instead
    of 0.01 (200x fewer steps; the trainer's autograd population loss costs ~2 ms per step at these
    sizes).  Scratch training on the n samples of the ladder runs as one batch: a loss with a 0/1 weight
    per sample is the empirical loss of each trial's first n samples.  At eta = 2 the paper's GD (step
    0.01, its iterates the flow's) is followed with Heun's method (SCRATCH_METHOD): GD at eta = 2 sat below
    the flow's scratch risk by 2.6 quick standard errors at n = 8, Heun's method at the same step within
    0.1-0.5 of one at every n (its error about a tenth of GD's across the loss's kinks; docs/trust.md).  Pretraining on the smooth population
    loss stays GD: half its step moves what the rows compare by less than they resolve.

The idealised value (the theory column and the mpmath face): if pretraining sparsifies the features
exactly onto the source units (the paper's Fig. 4a-b) and the m* teacher units are orthonormal (d >= m*),
the Gram matrix of the units is a I + b 11^T with a = k1(1) - k1(0) = 1/2 - 1/(2 pi), b = k1(0) = 1/(2 pi),
and with q = mu m* ablated units and k = m* - q kept ones
    ||P_perp f_t||^2 / ||f_t||^2 = (q a + q^2 a b / (a + k b)) / (m* a + m*^2 b),
increasing in mu.  The trained student's span is richer (m units, spread around the source units), so
the measured value lies below it; it is a reference, not the verdict.

What is checkable as stated, and how (Bonferroni over all tests, design false alarm 1e-3):
  (i)   as a trend: the paired difference of ||P_perp f_t||^2/||f_t||^2 between consecutive mu of the ladder
        0, mu/3, mu (same teachers) must be significantly positive at every step;
  (ii)  the power law as a form: log R_sc over the n ladder must have no significant quadratic term in log n;
        nu is fitted with its standard error and compared with 1.18 only at the paper's (d, m, m*);
  (iii) the crossing as a sign pattern: with A, nu from (ii) and P from (i), n_pred = (P/A)^(-1/nu); the paired
        T = R_sc - R_lt must not be significantly negative at ladder n below, nor positive above, the band
        [n_lo/2, 2 n_hi] ([n_lo, n_hi] n_pred's confidence interval; the factor 2 is the tolerance of
        "approximately identify"), and some point on each side must confirm the sign.  At mu = 0 every draw
        must satisfy ||P_perp f_s||^2 <= ||f_pre - f_s||^2 = 2 * final loss (f_pre is in the span), which
        certifies the projection formula itself.

Measured (seed 0).  Quick (d = m* = 8, m = 32, n = 8..128, 16 trials, 5-9 s): ratio 0.0002/0.011/0.068 at
mu = 0/0.25/0.75 (steps z = 15/9), nu = 1.50 +- 0.03, curvature z = -1.6; n_pred = 75/23 against measured sign
changes 52/< 8; 'agree' at seeds 0-4.  Default (d = m* = 16, m = 64, n = 16..256, 24 trials, ~70-110 s): ratio
0.001/0.011/0.058 (z = 17/19), nu = 1.13 +- 0.015 (the paper's 1.18 at 10x our sizes), curvature z = -3.1
(local slope 0.99 -> 1.23 from n = 16 to 256); n_pred = 191/44 against measured 140/< 16.
Negative transfer sets in before n_pred, more so at larger mu: eq. (21)'s C(n) is not small at these n
(R_lt - P ~ P near n_pred), because the out-of-span part of f_t acts as label noise for the readout fit, as
sin^2(theta) does in eq. (12); at mu = 3/4 the gap exceeds the factor 2 (T < 0 at n = 16, z = -2.3, below the
Bonferroni threshold 3.97).  The least-norm readout (t -> oo) peaks at n = m (R_lt up to 100 ||f_t||^2),
where the paper's GD budget gives 0.02.

Finding (the recorded verdict at mu = 3/4).  With enough draws the mu = 3/4 point below the crossing is refuted:
quick, 64 draws, seeds 0-22: z at n = 8 between -2.0 and -5.2 (R_lt(8) ~ 0.37 against R_sc(8) ~ 0.23 and the
heuristic's R_lt ~ P = 0.068); 320 draws (seed 3): z = -7.8; 256 draws, seed 5: z = -4.9.  Default, 128 draws
(seed 0): z = -6.3 at n = 16, and log R_sc curved in log n, z = -6.1 (GD scratch students; Heun's: -4.7 and -6.3).  So the quick tier runs 384 draws, the default 128, and the point is
recorded 'disagree'.  The negative controls run at 16 draws, seed 0, where the correct formulas agree.
"""

from __future__ import annotations

import math

import mpmath as mp
import sympy as sp
import torch

from numerics.convex_minimum import convex_minimum
from numerics.ptft_penalty import penalty_from_quartic
from numerics.relu_moments import orthogonal_relu_gram_entries
from simulate.kernels import relu_gram
from simulate.log_linear_fits import first_sign_change, log_linear_fit, log_linear_inverse
from simulate.relu_students import (finetune_against_single_task, pretrain_on_ablated_sources, pretrain_small_net,
                                    readout_transfer_risks, related_teachers, repeat_net, train_on_nested_samples)
from simulate.signed_estimates import floored, signed
from simulate.stats import estimate
from simulate.teachers import rkhs_split, sphere_teacher
from theorems.core import (Control, Derivation, Finding, Outcome, Parameter, Perturbation, Symbolic, Theorem,
                           as_float, mpf)
from theorems.registry import register

__all__ = ["relu_transfer", "ptft_sample_efficiency"]

PAPER = "Tahir, Ganguli & Rotskoff, Features are fate"
FALSE_ALARM = 1e-3
MU_FRACTIONS = (0, 1 / 3, 1)   # the mu ladder is 0, mu/3, mu: mu/3 puts a crossing late enough to see both sides
MU_STEPS = len(MU_FRACTIONS) - 1
N_LADDER = (16, 8, 4, 2, 1)  # scratch and transfer at n_max/16, ..., n_max/2, n_max
READOUT_INIT = 1e-7         # App. D.2
LOSS_TOL = 1e-6             # App. D.2: train until the loss reaches 1e-6 ...
HORIZON = 1000.0            # ... or for 1e5 steps of 0.01 m: mean-field time lr * steps / m = 1000
PAPER_ETA, PAPER_STEPS = 0.01, 100000
SCRATCH_METHOD = "heun"     # scratch students follow the flow ~10x closer than GD, two gradients a step (docstring)
CROSSING_FACTOR = 2.0       # tolerance of the crossing heuristic: a factor 2 in n beyond n_pred's interval
PAPER_SIZES = (100, 1000, 100)   # (d, m, m*) of Fig. 4
PAPER_EXPONENT = 1.18            # Fig. 4c's fitted nu, at PAPER_SIZES
CERTIFICATE_SLACK = 1e-9    # relative rounding floor of the mu = 0 certificate
RELU_FINDING_SMALL_N = (
    "mu = 3/4: below the predicted crossing (n_pred ~ 21 quick, 44 default) linear transfer loses to scratch "
    "(T < 0 at n = 8 / 16, z ~ -8 / -5): at small n R_lt is far above the limit ||P_perp f_t||^2 the heuristic "
    "puts in its place; at the quick tier from mu = 5/8 on (n = 8 against n_pred ~ 26, z = -4.4 ... -4.8 over seeds "
    "0-3), not on the 4/8 ladder (mu = 1/2, 9/16: T(8) z = -1.3 ... +2.5); and the scratch power law is a local "
    "fit: log R_sc is curved in log n at default sizes (z = -6) and at quick sizes wherever the ladder leaves "
    "n = 8 ... 128 (n_max = 64: z = -19, -23, concave; n_max = 256: z = +19, convex), at every mu")
# The crossing's edge at the quick tier is where the ladder's top rung round(mu m*) / m* (m* = 8) turns from 4/8 to
# 5/8: mu = 9/16 rounds to 4/8 (half to even) and agrees, every mu above it runs the 5/8 ladder (seeds 0-3: z = -4.4
# to -4.8 against 3.86; GD's scratch students, before Heun's, read -5.0 to -5.7).  The n_max pieces were measured at
# quick sizes, mu = 1/4 and 3/8 (docs/findings.md)
RELU_REGION = "mu > 9/16 or n_max <= 64 or n_max >= 256"
# ... where the 5/8 ladder's refutation at n_max = 128 sits near a grid's critical value: a power limit
RELU_FINDING_EDGE = (
    "the 5/8 ladder at n_max = 128 (quick sizes: 9/16 < mu < 11/16): linear transfer loses to scratch below the "
    "crossing by 4.4 ... 4.8 standard errors at n = 8 (384 draws, seeds 0-3), above one run's critical value (3.86) "
    "but not always a 21-point grid's (4.5), where the point may read inconclusive: the edge of the crossing's "
    "failure, resolved by a single run")
RELU_REGION_EDGE = "mu > 9/16 and mu < 11/16 and n_max > 64 and n_max < 256"
# A power limit of the n ladder, not a refutation: T is tested above the crossing only at ladder n beyond the band's
# upper end hi = 2 n_pred e^(c s), which at quick sizes is ~32/mu (n_pred ~ 15/mu for mu in [1/4, 3/4], the band
# factor ~2.15), so where n_max < ~32/mu no ladder point lies on the negative side and the check is inconclusive
RELU_FINDING_LADDER = (
    "mu n_max <= 40 (quick sizes): the ladder stops before the negative side of the crossing, n > hi ~ 32/mu "
    "(mu = 1/4: n_pred = 58 ... 62, hi = 125 ... 134 over seeds 0-3 and Bonferroni families 1 and 21, against "
    "n_max = 128): inconclusive where hi > n_max (seeds 0, 1, 3), agree where the top rung clears it (seed 2; "
    "z ~ -38 there); at n_max = 256 the same mu reaches it (n = 256: z = -41)")
RELU_REGION_LADDER = "mu * n_max <= 40"


# --- the claimed formulas -------------------------------------------------------------------------

def _out_of_rkhs(student_W, teacher):
    """Eqs. (154)-(159): (||P f*||^2, ||P_perp f*||^2, ||f*||^2) for the span of the student's units."""
    return rkhs_split(student_W, teacher)


def _crossing(P, A, nu):
    """The predicted onset of negative transfer: the n with A n^-nu = ||P_perp f_t||^2."""
    return (P / A) ** (-1 / nu)


def _trend_step(earlier, later):
    """The claimed direction: ||P_perp f_t||^2 grows with mu, so later - earlier > 0."""
    return later - earlier


def _scratch_exponent(d, m, m_star):
    """The fitted nu of Fig. 4c, a statement about the paper's sizes only (None elsewhere)."""
    return PAPER_EXPONENT if (d, m, m_star) == PAPER_SIZES else None


def _idealised_ratio(mu, m_star, k0, k1):
    """||P_perp f_t||^2 / ||f_t||^2 for orthonormal teacher units and a student spanning the source units
    exactly, from the Gaussian Gram entries k0 = E relu(u.x) relu(v.x) (u . v = 0) and k1 = E relu(u.x)^2."""
    q = mu * m_star
    k = m_star - q
    a, b = k1 - k0, k0
    return (q * a + q**2 * a * b / (a + k * b)) / (m_star * a + m_star**2 * b)


# --- symbolic face --------------------------------------------------------------------------------

def _symbolic() -> Symbolic:
    # eqs. (158)-(159) from the normal equations: P f = sum_i alpha_i relu_i with G alpha = <relu_i, f>
    m, ms = 2, 2
    G = sp.Matrix(m, m, lambda i, j: sp.Symbol(f"g{min(i, j)}{max(i, j)}", positive=True))
    Gc = sp.Matrix(m, ms, lambda i, j: sp.Symbol(f"h{i}{j}", real=True))
    cs = sp.Matrix(sp.symbols(f"c1:{ms + 1}", real=True))
    M, Ms = sp.symbols("m m_star", positive=True)
    b = Gc * cs / Ms                                          # <relu_i, f*> for f* = (1/m*) sum c*_j relu*_j
    projected = (b.T * G.inv() * b)[0]
    K, Kt = G / M, Gc / sp.sqrt(M * Ms)
    eq158 = (cs.T * Kt.T * K.inv() * Kt * cs)[0] / Ms
    # the idealised ratio and its monotonicity in the number q of ablated units (k = m* - q kept)
    q, mstar, a, bb = sp.symbols("q m_star a b", positive=True)
    ratio = (q * a + q**2 * a * bb / (a + (mstar - q) * bb)) / (mstar * a + mstar**2 * bb)
    # the same ratio from the normal equations on a 3 + 2 unit example (k = 3 kept, q = 2 ablated)
    k_num, q_num = 3, 2
    gram = lambda size: a * sp.eye(size) + bb * sp.ones(size, size)
    full = gram(k_num + q_num)
    kept = full[:k_num, :k_num]
    ones = sp.ones(k_num + q_num, 1)
    cross = full[:k_num, :] * ones
    perp = (ones.T * full * ones)[0] - (cross.T * kept.inv() * cross)[0]
    direct = sp.simplify(perp / (ones.T * full * ones)[0])
    slope = sp.factor(sp.together(sp.diff(ratio, q)))
    claimed_slope = a * (a + bb * mstar) / (mstar * (a + bb * (mstar - q)) ** 2)
    x, A, nu, P = sp.symbols("x A nu P", positive=True)
    n_cross = sp.solve(sp.Eq(A * x ** (-nu), P), x)
    crossing_claim = (P / A) ** (-1 / nu)
    return Symbolic(
        "r_perp = ||P_perp f_t||^2 / ||f_t||^2 (feature-sparsified student, orthonormal teacher units)",
        sp.Eq(sp.Symbol("r_perp"), ratio),
        (
            Derivation("eq. (158) is the normal-equations projection b^T G^{-1} b with K = G/m, Kt = G'/sqrt(m m*)",
                       sp.simplify(eq158 - projected), sp.simplify(eq158 - projected) == 0),
            Derivation("the idealised ratio equals the normal-equations residual for k = 3 kept, q = 2 ablated units",
                       direct, sp.simplify(direct - ratio.subs({q: q_num, mstar: k_num + q_num})) == 0),
            Derivation("it vanishes at mu = 0 (the source spans the target)", ratio.subs(q, 0), ratio.subs(q, 0) == 0),
            Derivation("d/dq of the ratio (k = m* - q) = a (a + b m*) / (m* (a + b k)^2) > 0: it grows with mu",
                       slope, sp.simplify(slope - claimed_slope) == 0),
            Derivation("A n^-nu = ||P_perp f_t||^2 solves to n = (P/A)^(-1/nu) (the grey circles of Fig. 4e)",
                       n_cross, len(n_cross) == 1 and sp.simplify(n_cross[0] - crossing_claim) == 0),
            Derivation("the predicted crossing moves to smaller n as ||P_perp f_t||^2 grows",
                       sp.diff(crossing_claim, P), sp.simplify(sp.diff(crossing_claim, P) * P * nu / crossing_claim) == -1),
        ),
    )


# --- mpmath face ----------------------------------------------------------------------------------

def _evaluate(params, dps):
    k0, k1 = orthogonal_relu_gram_entries()      # the Gram entries by quadrature, not the closed forms
    return _idealised_ratio(mpf(params["mu"]), mp.mpf(int(params["m_star"])), k0, k1)


# --- Monte-Carlo check ----------------------------------------------------------------------------

def _mu_ladder(p) -> list[float]:
    return [p["mu"] * f for f in MU_FRACTIONS]


def _n_ladder(p) -> list[int]:
    return [p["n_max"] // k for k in N_LADDER]


def _budget(p) -> int:
    """Steps of the shared trainer at step eta m: the paper's mean-field horizon lr * steps / m."""
    return max(1, round(HORIZON / p["eta"]))


def _check(theorem, params, run) -> Outcome:
    p = as_float(params)
    trials = run.trials_for(theorem)
    gen = run.rng(theorem, params)
    mus, ns = _mu_ladder(p), _n_ladder(p)
    removed = [round(mu * p["m_star"]) for mu in mus]
    teacher = sphere_teacher(trials, p["m_star"], p["d"], gen)
    X = torch.randn(trials, ns[-1], p["d"], generator=gen, device=gen.device, dtype=torch.float64)
    y = teacher(X)
    sizes = {"d": p["d"], "m": p["m"], "m_star": p["m_star"], "n": ns, "mu": [r / p["m_star"] for r in removed],
             "eta": p["eta"], "steps": _budget(p)}

    run.progress("pretraining on the ablated sources (population loss)")
    pre = pretrain_on_ablated_sources(teacher, removed, p["m"], gen, lr=p["eta"] * p["m"], max_steps=_budget(p),
                                      loss_tol=LOSS_TOL, readout_init=READOUT_INIT)
    target = repeat_net(teacher, len(mus))
    _, perp, total = theorem.formulas["out_of_rkhs"](pre.net.W, target)
    ratio = (perp / total).view(len(mus), trials)
    # mu = 0 certificate: f_pre lies in the span, so ||P_perp f_s||^2 <= ||f_pre - f_s||^2 = 2 * final loss
    _, perp0, total0 = theorem.formulas["out_of_rkhs"](pre.net.W[:trials], teacher)
    bound0 = 2 * pre.loss[:trials] + CERTIFICATE_SLACK * total0
    certificate = (perp0 / bound0).max().item()

    run.progress("scratch training on the n ladder")
    scratch, r_sc = train_on_nested_samples(teacher, X, y, ns, p["m"], gen, lr=p["eta"] * p["m"], max_steps=_budget(p),
                                            loss_tol=LOSS_TOL, readout_init=READOUT_INIT, method=SCRATCH_METHOD)

    run.progress("linear transfer (readout GD, exact iterates)")
    r_lt, r_lt_limit = readout_transfer_risks(pre.net.W, X, y, ns, target, total, scale=1.0 / p["m"],
                                              lr=PAPER_ETA * p["m"], max_steps=PAPER_STEPS, loss_tol=LOSS_TOL)

    judge = run.judge(theorem)

    # (i) trend in mu: paired differences on the same teachers
    trend = []
    for k in range(MU_STEPS):
        est = estimate(theorem.formulas["trend"](ratio[k], ratio[k + 1]))
        step = judge.threshold(floored(est), 0.0, f"||P_perp f_t||^2 from mu={mus[k]:.3g} to {mus[k + 1]:.3g}")
        trend.append({"mu": [mus[k], mus[k + 1]], "diff": est.mean, "se": est.se, "z": step.z})
    judge.per_draw(certificate, "mu=0: ||P_perp f_s||^2 <= ||f_pre - f_s||^2 (eqs. 158-159)")

    # (ii) power law of the scratch risk
    sc = [estimate(r_sc[i]) for i in range(len(ns))]
    fit = log_linear_fit([theorem.formulas["scratch_law"](n) for n in ns], [e.mean for e in sc], [e.se for e in sc])
    nu, nu_se = -fit["b"], fit["sb"]
    form = judge.fit(fit["curvature"], fit["curvature_se"], 0.0, "log R_sc is curved in the law's variable")
    nu_claim = theorem.formulas["scratch_exponent"](p["d"], p["m"], p["m_star"])
    nu_z = None if nu_claim is None else judge.fit(nu, nu_se, nu_claim, f"nu vs the paper's {nu_claim}").z

    # (iii) the crossing heuristic against the measured sign of R_sc - R_lt.  n_pred's interval decides which
    # ladder points are tested, so its critical value is that of every test the design may make (the trend steps,
    # the form and nu tests, every point), fixed before the points are judged.
    crit = judge.critical_for(MU_STEPS + 2 + len(ns) * MU_STEPS)
    crossing, tested = [], {"positive": [], "negative": []}
    for k in range(1, len(mus)):
        P = estimate(ratio[k])
        A = math.exp(fit["a"] - fit["b"] * fit["x_bar"])
        n_pred = float(theorem.formulas["crossing"](P.mean, A, nu))
        x_pred, var = log_linear_inverse(fit, P.mean, P.se / P.mean)     # the same n in the fit's coordinates
        half = crit * math.sqrt(var)
        lo, hi = n_pred * math.exp(-half) / CROSSING_FACTOR, n_pred * math.exp(half) * CROSSING_FACTOR
        row = {"mu": mus[k], "P": P.mean, "P_se": P.se, "n_pred": n_pred, "n_band": [lo, hi], "x_pred": x_pred,
               "points": []}
        for i, n in enumerate(ns):
            T = estimate(r_sc[i] - r_lt[i][k])
            side = "positive" if n < lo else "negative" if n > hi else "band"
            point = {"n": n, "T": T.mean, "se": T.se, "side": side,
                     "R_lt": r_lt[i][k].mean().item(), "R_lt_limit": r_lt_limit[i][k].mean().item()}
            label = (f"mu={mus[k]:.3g}, n={n}: transfer {'negative' if T.mean < 0 else 'positive'} where the crossing "
                     f"n_pred={n_pred:.3g} puts it {side}")
            if side == "band":          # either sign is allowed: shown, not judged
                point["z"] = judge.fit(T.mean, floored(T).se, 0.0, label, counted=False).z
            else:
                tested[side].append((point, T, label))
            row["points"].append(point)
        row["n_measured"] = first_sign_change(ns, [point["T"] for point in row["points"]])
        crossing.append(row)
    # no tested point may have the wrong sign significantly, and the most significant one on each side must confirm it
    for side, sign in (("positive", 1), ("negative", -1)):
        points = tested[side]
        if not points:
            judge.fact(None, f"no ladder point on the {side} side of the crossings", "the sign pattern is not confirmed")
            continue
        best = max(range(len(points)), key=lambda j: sign * points[j][1].mean / floored(points[j][1]).se)
        for j, (point, T, label) in enumerate(points):
            if j == best:
                point["z"] = sign * judge.threshold(signed(T, sign), 0.0, label + ("" if sign > 0 else ", as R_lt - R_sc")).z
            else:
                point["z"] = judge.fit(T.mean, floored(T).se, 0.0, label, alarm="below" if sign > 0 else "above").z
    judge.note("||P_perp f_t||^2/||f_t||^2 = " + ", ".join(f"{ratio[k].mean().item():.4g}" for k in range(len(mus)))
               + f" at mu = {', '.join(f'{m:.3g}' for m in mus)}; R_sc ~ n^-{nu:.3g}±{nu_se:.2g} "
               f"(paper: {PAPER_EXPONENT} at d=100, m=1000, m*=100, judged there only); crossings n_pred = "
               + ", ".join(f"{row['n_pred']:.3g}" for row in crossing) + ", measured sign changes "
               + ", ".join("none in the ladder" if row["n_measured"] is None else f"{row['n_measured']:.3g}" for row in crossing))
    idealised = float(theorem.theory(params, 15))
    top = estimate(ratio[-1])
    return judge.outcome("||P_perp f_t||^2 grows with mu, log R_sc is linear in log n, and T = R_sc - R_lt changes sign "
                         "across the predicted crossings", mean=top.mean, se=top.se, trials=trials, reference=idealised,
                         sizes=sizes,
                         extra={"ratio_by_mu": ratio.mean(1).tolist(), "trend": trend, "band_critical": crit,
                                "certificate_mu0": certificate, "pretraining_loss_max": pre.loss.max().item(),
                                "pretraining_steps": pre.steps,
                                "scratch_loss_max": scratch.loss.view(len(ns), trials).max(1).values.tolist(),
                                "scratch_risk": [e.mean for e in sc], "scratch_risk_se": [e.se for e in sc],
                                "nu": nu, "nu_se": nu_se, "nu_z": nu_z, "curvature_z": form.z, "crossing": crossing})


def _constraints(params):
    m_star, mu = int(params["m_star"]), float(params["mu"])
    removed = [round(mu * f * m_star) for f in MU_FRACTIONS]
    if len(set(removed)) < len(removed) or removed[-1] >= m_star:
        return f"the mu ladder 0, mu/3, mu must remove distinct unit counts < m* = {m_star}, got {removed}"
    if int(params["n_max"]) // N_LADDER[0] < 2:
        return f"need n_max/{N_LADDER[0]} >= 2 samples at the bottom of the ladder, got n_max = {params['n_max']}"
    return None


# --- wrong formulas the check must reject (negative controls, at CONTROL_DRAWS draws, where the correct ones agree)

CONTROL_DRAWS = 16


def _projection_without_inverse(student_W, teacher):
    """Eq. (158) with K^{-1} dropped: c*^T Kt^T Kt c* / m*, Kt = G'/sqrt(m m*)."""
    m, m_star = student_W.shape[-2], teacher.W.shape[-2]
    k_cross = relu_gram(student_W, teacher.W) / math.sqrt(m * m_star)
    inside = (k_cross @ (teacher.c * teacher.scale * m_star).unsqueeze(-1)).pow(2).sum((-1, -2)) / m_star
    _, _, total = rkhs_split(student_W, teacher)
    return inside, total - inside, total


relu_transfer = register(Theorem(
    id="relu-transfer",
    title="Linear transfer in two-layer ReLU nets: out-of-RKHS norm, scratch power law, crossing",
    source=f"{PAPER}, Sec. 4, eqs. (18)-(21), (154)-(159), Fig. 4, App. D.2",
    statement=(r"\|P_\perp f_t^*\|^2 \uparrow \mu,\quad R_{sc} \sim A n^{-\nu}\ (\nu \approx 1.18),\quad "
               r"R_{lt} > R_{sc} \text{ beyond } n^* : A n^{*-\nu} = \|P_\perp f_t^*\|^2"),
    quantity=("||P_perp f_t||^2/||f_t||^2 at the largest mu of the ladder; theory: the idealised value for a "
              "student spanning exactly the source units and orthonormal teacher units (a reference)"),
    assumptions=(
        "teacher readouts c*_j = 1 (not given in the paper; matches the scale of Fig. 4d)",
        "reduced sizes (paper: d = 100, m = 1000, m* = 100, n up to ~1000): quick d = m* = 8, m = 32; default d = m* = 16, m = 64",
        "pretraining by GD and scratch by Heun's method on the same flow, at step eta m with the paper's mean-field "
        "horizon 1000 (or loss 1e-6); eta = 2, not 0.01",
        "linear transfer: readout GD from 0 with the paper's budget (0.01 m, 1e5 steps or loss 1e-6), iterates exact",
        "mu ladder 0, mu/3, mu (paired: the same teachers), n ladder n_max/16 ... n_max (the same samples, nested)",
    ),
    parameters=(
        Parameter("mu", "largest ablated fraction (ladder 0, mu/3, mu)", "3/4", lower="0", upper="1",
                  lower_open=True, upper_open=True),
        Parameter("d", "input dimension", {"quick": "8", "default": "16", "paper": "100"}, lower="2", integer=True),
        Parameter("m_star", "teacher width m*", {"quick": "8", "default": "16", "paper": "100"}, lower="3", integer=True),
        Parameter("m", "student width", {"quick": "32", "default": "64", "paper": "1000"}, lower="2", integer=True),
        Parameter("n_max", "largest target sample size of the ladder", {"quick": "128", "default": "256", "paper": "1024"},
                  lower="16", integer=True),
        Parameter("eta", "step / m of pretraining (GD) and scratch (Heun) (paper's GD 0.01; horizon eta * steps = 1000)", "2",
                  lower="0", upper="8", lower_open=True),
    ),
    symbolic=_symbolic,
    evaluate=_evaluate,
    check=_check,
    formulas={"out_of_rkhs": _out_of_rkhs, "crossing": _crossing, "trend": _trend_step,
              "scratch_exponent": _scratch_exponent, "scratch_law": math.log},
    # quick 384 / default 128 draws: at 16 / 24 the verdict at mu = 3/4 turned on the seed (the n = 8 / 16 point
    # below the crossing sat at z ~ -3.4 / -2.3 against 3.97).  At 256 draws one seed of six (z = -4.9) missed the
    # critical value of an `all --quick` run (4.9, Bonferroni over its 82 points); 384 puts the mean z near -8
    trials={"quick": 384, "default": 128, "paper": 100},
    verdict_rule=(
        "Bonferroni over the trend steps, the form test and the crossing points (design false alarm 1e-3): "
        "(i) each step of the mu ladder raises ||P_perp f_t||^2/||f_t||^2 (paired one-sided z); "
        "(ii) log R_sc is linear in log n (z-test of a quadratic term; nu reported with its SE, compared with 1.18 only "
        "at the paper's sizes); (iii) at each mu > 0, T = R_sc - R_lt is positive at ladder n below and negative above "
        "the predicted crossing n_pred = (P/A)^(-1/nu), outside a band of a factor 2 beyond n_pred's confidence "
        "interval; at mu = 0, per draw, ||P_perp f_s||^2 <= ||f_pre - f_s||^2 (certificate of eqs. 158-159). "
        "A significant contradiction is 'disagree'; all steps significant and both sides of the crossings reached "
        "is 'agree'; else 'inconclusive'"),
    false_alarm=FALSE_ALARM,
    constraints=_constraints,
    cases=(),
    findings=(Finding(RELU_REGION_EDGE, RELU_FINDING_EDGE, at=None, fair=("inconclusive",)),
              Finding(RELU_REGION, RELU_FINDING_SMALL_N),
              Finding(RELU_REGION_LADDER, RELU_FINDING_LADDER, at=None, verdict="inconclusive", fair=("agree",))),
    negative_controls=(
        Control("relu-projection-no-inverse", {"out_of_rkhs": _projection_without_inverse}, trials=CONTROL_DRAWS,
                why="eq. (158) without K^{-1}: fails the mu = 0 certificate"),
        Control("relu-decreasing-in-mu", {"trend": lambda earlier, later: earlier - later}, trials=CONTROL_DRAWS,
                why="||P_perp f_t||^2 shrinks with mu"),
        Control("relu-crossing-too-late", {"crossing": lambda P, A, nu: 20 * (P / A) ** (-1 / nu)}, trials=CONTROL_DRAWS,
                why="a crossing far beyond A n^-nu = P: negative transfer seen where it predicts positive transfer"),
        Control("relu-exponential-scratch-law", {"scratch_law": float}, trials=CONTROL_DRAWS,
                why="an exponential law (log R_sc linear in n) in place of the power law"),
        Control("relu-paper-exponent-everywhere", {"scratch_exponent": lambda d, m, m_star: PAPER_EXPONENT}, trials=CONTROL_DRAWS,
                why="the paper's exponent claimed at the reduced sizes (nu = 1.50 ± 0.03 there)"),
    ),
    method=('per trial a teacher of m* unit-sphere units; mean-field students pretrained by GD on the exact '
            'population loss of the teacher with 0, mu/3 and mu of its units ablated; the out-of-RKHS norm (eqs.'
            ' 154-159) against mu (paired z-tests for the trend); scratch nets trained on nested samples, '
            "log-log fit of R_sc with a curvature test; linear transfer (readout-only GD, the paper's budget) "
            'and the sign of R_sc - R_lt against the predicted crossing, outside a factor-2 band'),
    power=(
        Perturbation('crossing', 'n/a', ("the claim's only case (mu = 3/4) is a recorded refutation: linear transfer already loses to "
             'scratch below the predicted crossing, so a perturbed crossing has no agreement to turn. Its '
             'negative controls (tests/test_relu_transfer.py, at 16 draws, where the correct formulas agree) '
             'claim the crossing later and perturb the projection, the trend in mu and the scratch law')),
    ),
))


# =====================================================================================================
# ptft-sample-efficiency: "Implicit regularization penalty of PT+FT in ReLU networks", Sec. 1.2, Fig. 1c
# =====================================================================================================
#
# Setting (reconstructed from the appendix; the main paper is Lippl & Lindsey, "Inductive biases of
# multi-task learning and finetuning"): f(x) = sum_h c_h relu(w_h . x) (no 1/m scaling, eq. 1), x ~ N(0, I).
# Auxiliary teacher: six units v_h with readout 1 (feature weight m_aux = 1); main teacher: units u_h with
# u_h . v_h = rho (rho is the cosine of eq. 8 between a fine-tuned unit and its pretrained weights) and
# readout a, the "fine-tuning task feature weight" (a < 1 is "m_aux much larger than m").  PT+FT: pretrain
# every weight on the auxiliary population loss from a small init, then reset the readouts to the small
# value gamma (Sec. 1.1) and train every weight on n main-task samples.  STL: the same net from a small
# init trained on the same n samples.  Compared: the population risk of the main task, over n.
#
# The penalty's prediction (Sec. 1.2): recruiting a pretrained unit (|w_0| = sqrt(m_aux) = 1 after
# min-norm pretraining) for a main feature of weight a costs r~(a; m0 = 1, rho) (eqs. 6-11); a fresh
# unit (m0 -> 0, gamma -> 0) costs min_u (a/u)^2 + u^2 = 2a, as does every unit of STL from a small init.
# PT+FT is predicted to help iff the advantage 2a - r~(a; 1, rho) > 0: at a = 1/10 it is +0.17 at rho = 1,
# -0.002 at rho = 0.9 (vanishes) and -0.59 at rho = 1/2 (reverses); at a = 1 it stays positive down to rho ~ 1/2.
#
# Sizes and budget (not in the appendix): d = 8 (quick) / 10 (default), 24 hidden units, n = 32 and 128,
# GD step 0.2 for 2000 pretraining and 2500 (quick) / 6000 (default) training steps; the networks then fit their
# samples to a relative loss of ~1e-5 (PT+FT, rho = 1) to ~2e-3 (STL), which is reported beside the risks.
#
# Measured.  Quick (12 trials, ~7 s CPU per case on the loaded 2-core box), seeds 0-2: rho = 1:
# R_STL - R_PTFT = +0.07..+0.10 at n = 32 and +0.009..+0.011 (z = +9..+12) at n = 128 (PT+FT risks ~1e-5);
# rho = 1/2: -0.007..-0.026 (n.s.) at n = 32 and -0.008..-0.010 (z = -5..-8) at n = 128: 'agree'.  Default
# (32 trials, seed 0, ~100 s per case): z = +18/+17 at rho = 1, -1.7/-8.5 at rho = 1/2.  Finding: at rho = 0.9
# (advantage -0.002) PT+FT is still better, +0.044..+0.058 (z = +4.5..+10) at n = 32 and +0.003 (z = +3.5..+5)
# at n = 128; default z = +13/+12.  At a = 1, rho = 1/2 (advantage +0.07) the two are indistinguishable
# (z = +0.6, -1.4 at 16 trials): not a case.  Calibration (seeds 1-24, 12 trials) lost the rho = 0.9 refutation
# at 4 seeds and the rho = 1/2 agreement at 2: the quick tier now runs 36 trials (z ~ +9..+14 at rho = 0.9, n = 32).

PTFT_SOURCE = "Implicit regularization penalty of PT+FT in ReLU networks (appendix), Sec. 1.2, Fig. 1c"
PTFT_UNITS = 6                 # "six teacher units"
PTFT_INIT = 1e-3               # small init of STL and of the fine-tuning readouts (gamma)
PTFT_LR = 0.2                  # GD step (stable for these widths: loss decreases monotonically)
PTFT_PRETRAIN_STEPS = 2000
PTFT_FINDING_RHO_09 = ("a = 0.1: for rho from 3/4 up to 0.901185 (where 2a - r~(a; 1, rho) turns positive) the penalty "
                       "predicts no benefit, yet PT+FT beats STL at n = 32: +0.026 / +0.053 (z = +4.1 / +9.8) at rho = "
                       "3/4 / 0.85 (quick), z = +5..+7 at rho = 0.9, still +3.5..+5 at n = 128; rho = 0 and 1/2 reverse "
                       "as predicted (z = -4.2, -5.0), as does 0.675 (a map), so the edge between 0.675 and 3/4 is "
                       "statistical")
# the upper edge is exact: the root in rho of the predicted benefit 2a - r~(a; m_aux = 1, rho) at a = 1/10 (mpmath);
# the lower one is statistical (the measured benefit at n = 32 crosses 0 between rho = 0.675 and 3/4: the quick runs
# and docs/maps/map-ptft-sample-efficiency-rho); only a = 1/10 is mapped
PTFT_REGION = "a == 1/10 and rho >= 3/4 and rho < 0.90118506"
# Off a = 1/10 (docs/findings.md: quick runs at seeds 0-6 and 288-draw runs, seed 0).  The same window at a = 1/4
# below the root 0.769800359 of 2a - r~ (a refutation; no evidence case: 36 draws resolve it at 3/4, not at 7/10)
PTFT_FINDING_A14 = ("a = 1/4: the window of a = 1/10 is there too, below the penalty's root 0.7698: PT+FT beats STL at n = 32 "
                    "where no benefit is predicted, at rho = 7/10 and 3/4 (quick: z = +4.5, +4.6; 288 draws: z = +9.5, "
                    "+17), while at n = 128 it loses (rho = 7/10, 288 draws: z = -9.2): the sign depends on n; 36 draws "
                    "leave agree (rho = 3/5: z = +3.0 at n = 32) and inconclusive fair draws at the window's lower end")
PTFT_REGION_A14 = "a == 1/4 and rho >= 3/5 and rho < 0.76980035"
# a in [1/2, 1], away from the root: the predicted reversal is there at 288 draws, but 36 draws resolve it at times only
PTFT_FINDING_SMALL = ("a in [1/2, 1], rho < 2/5: the predicted reversal is there (288 draws agree at (rho, a) = (0, 1/2), "
                      "(1/4, 1/2), (0, 1), (1/4, 1); R_STL - R_PTFT = -0.0011 ... -0.0027 at n = 128, z = -8 ... -16), "
                      "but small: 2 to 5 standard errors at the quick tier's 36 draws, which agree in 12 of 28 runs "
                      "(seeds 0-6) and are inconclusive in the others: a power limit, not a refutation")
PTFT_REGION_SMALL = "a >= 1/2 and a <= 1 and rho < 2/5"
# a in [1/2, 1] around the root (0.620 at a = 1/2, 0.469 at a = 1): the sign of the benefit depends on n there
PTFT_FINDING_ROOT = ("a in [1/2, 1], 2/5 <= rho < 7/10, around the penalty's root (0.62 at a = 1/2, 0.47 at a = 1): the "
                     "sign of R_STL - R_PTFT depends on n; at 288 draws PT+FT helps at n = 32 and loses at n = 128 at "
                     "(rho, a) = (0.6, 1/2) (z = +6.5, -5.2) and (1/2, 1) (z = +4.5, -4.3), so the check disagrees there "
                     "whichever sign the penalty predicts, while (0.55, 1/2), (1/2, 1/2), (0.4, 1) and (0.6, 1) agree; "
                     "at 36 draws these effects are 1 to 3 standard errors: inconclusive in 22 of 28 quick runs (seeds "
                     "0-6), agree in 5, disagree in 1")
PTFT_REGION_ROOT = "a >= 1/2 and a <= 1 and rho >= 2/5 and rho < 7/10"


def _advantage(a, rho):
    """Predicted benefit of PT+FT for one feature: fresh-unit cost 2a minus the reuse cost r~(a; 1, rho)."""
    a, rho = mp.mpf(a), mp.mpf(rho)
    return 2 * a - penalty_from_quartic(rho, 1, a, 0)[0]


def _ptft_symbolic() -> Symbolic:
    u, m, g, m0 = sp.symbols("u m gamma m_0", positive=True)
    rho = sp.Symbol("rho", real=True)
    p = (m / u - g) ** 2 + u**2 + m0**2 - 2 * u * m0 * rho                      # eq. (8)
    quartic = sp.expand(sp.diff(p, u) * u**3 / 2)
    fresh = (m / u) ** 2 + u**2
    u_fresh = sp.solve(sp.diff(fresh, u), u)
    reuse_at_rho1 = p.subs({rho: 1, m0: 1, g: 0})
    advantage = sp.Symbol("A")
    return Symbolic(
        "A = 2m - r~(m; m0 = sqrt(m_aux) = 1, rho), m = a the main-task feature weight",
        sp.Eq(advantage, 2 * m - sp.Symbol(r"\tilde r")),
        (
            Derivation("eq. (10): p'(u) u^3/2 = u^4 - m0 rho u^3 + gamma m u - m^2", quartic,
                       sp.simplify(quartic - (u**4 - m0 * rho * u**3 + g * m * u - m**2)) == 0),
            Derivation("a fresh unit (m0 -> 0, gamma -> 0) costs min_u (m/u)^2 + u^2 = 2m, at u = sqrt(m)",
                       sp.simplify(fresh.subs(u, u_fresh[0])), len(u_fresh) == 1
                       and sp.simplify(fresh.subs(u, u_fresh[0]) - 2 * m) == 0),
            Derivation("rho = 1: the reuse cost is at most p(1) = m^2 < 2m for m < 2 (PT+FT helps small weights)",
                       reuse_at_rho1.subs(u, 1), sp.simplify(reuse_at_rho1.subs(u, 1) - m**2) == 0),
            Derivation("rho < 1: the reuse cost tends to m0^2 (1 - rho^2) > 0 as m -> 0, above the fresh 2m -> 0",
                       sp.limit(p.subs({g: 0, u: m0 * rho}), m, 0),
                       sp.simplify(sp.limit(p.subs({g: 0, u: m0 * rho}), m, 0) - m0**2 * (1 - rho**2)) == 0),
        ),
    )


def _ptft_evaluate(params, dps):
    """The advantage by direct minimisation of p(u) (not through the quartic): p is convex on u > 0, so its
    minimiser is the zero of the increasing p'(u), which lies in [sqrt(a)/2, sqrt(a) + rho + 1] (p' < 0 at the
    left end, > 0 at the right); bisection to the working precision."""
    a, rho = mpf(params["a"]), mpf(params["rho"])
    p = lambda u: (a / u) ** 2 + u * u + 1 - 2 * u * rho
    dp = lambda u: -2 * a * a / u**3 + 2 * u - 2 * rho
    return 2 * a - convex_minimum(p, dp, mp.sqrt(a) / 2, mp.sqrt(a) + rho + 1)


def _ptft_check(theorem, params, run) -> Outcome:
    p = as_float(params)
    trials = run.trials_for(theorem)
    gen = run.rng(theorem, params)
    rhos, ns, H, d = [1.0, p["rho"]], _ptft_ladder(p), int(p["H"]), int(p["d"])
    steps = run.budget(theorem, "steps")
    aux, mains, X = related_teachers(trials, PTFT_UNITS, d, rhos, p["a"], ns[-1], gen)
    run.progress("pretraining on the auxiliary task (population loss)")
    pre = pretrain_small_net(aux, H, gen, init=PTFT_INIT, lr=PTFT_LR, max_steps=PTFT_PRETRAIN_STEPS)
    rel, rel_loss = [], []
    for n in ns:
        run.progress(f"fine-tuning and single-task training on n = {n}")
        risks, losses = finetune_against_single_task(pre.net, mains, X[:, :n], gen, init=PTFT_INIT, lr=PTFT_LR, steps=steps)
        rel.append(risks)
        rel_loss.append(losses)
    rel, rel_loss = torch.stack(rel, 1), torch.stack(rel_loss, 1)       # (rho, n, method, trial): 0 = PT+FT, 1 = STL

    judge = run.judge(theorem)
    rows = []
    for i, rho in enumerate(rhos):
        predicted = float(theorem.formulas["advantage"](p["a"], rho))
        sign = 1 if predicted > 0 else -1
        label = f"rho={rho:.3g}: predicted {'benefit' if sign > 0 else 'reversal'} ({predicted:+.3g})"
        benefits = [estimate(rel[i, j, 1] - rel[i, j, 0]) for j in range(len(ns))]   # R_STL - R_PTFT: > 0 is a benefit
        # no point may show the opposite sign significantly, and the most significant one must confirm the prediction
        best = max(range(len(ns)), key=lambda j: sign * benefits[j].mean / floored(benefits[j]).se)
        points = []
        for j, (n, est) in enumerate(zip(ns, benefits)):
            if j == best:
                z = sign * judge.threshold(signed(est, sign), 0.0, f"{label}, {'R_STL - R_PTFT' if sign > 0 else 'R_PTFT - R_STL'} at n={n}").z
            else:
                z = judge.fit(est.mean, floored(est).se, 0.0, f"{label}, measured the opposite at n={n}",
                              alarm="below" if sign > 0 else "above").z
            points.append({"n": n, "benefit": est.mean, "se": est.se, "z": z,
                           "R_ptft": rel[i, j, 0].mean().item(), "R_stl": rel[i, j, 1].mean().item(),
                           "final_loss_ptft": rel_loss[i, j, 0].max().item(),
                           "final_loss_stl": rel_loss[i, j, 1].max().item()})
        rows.append({"rho": rho, "predicted_advantage": predicted, "points": points})
    judge.note("; ".join(f"rho={r['rho']:.3g}: R_STL - R_PTFT = " + ", ".join(
        f"{pt['benefit']:+.3g}±{pt['se']:.2g}" for pt in r["points"]) for r in rows) + f" at n = {ns}")
    last = rows[-1]["points"][-1]
    return judge.outcome("the sign of R_STL - R_PTFT follows the penalty's prediction at each rho", mean=last["benefit"],
                         se=last["se"], trials=trials, reference=rows[-1]["predicted_advantage"], z=last["z"],
                         sizes={"d": d, "H": H, "teacher_units": PTFT_UNITS, "n": ns, "steps": steps, "lr": PTFT_LR,
                                "pretrain_steps": PTFT_PRETRAIN_STEPS},
                         extra={"rows": rows, "pretraining_loss_max": pre.loss.max().item()})


def _ptft_ladder(p) -> list[int]:
    return [int(p["n_max"]) // 4, int(p["n_max"])]


ptft_sample_efficiency = register(Theorem(
    id="ptft-sample-efficiency",
    title="PT+FT vs single-task learning in ReLU teacher-student nets as the feature correlation drops",
    source=PTFT_SOURCE,
    statement=(r"\rho = 1: R_{PT+FT}(n) < R_{STL}(n);\ \rho < 1,\ a \ll m^{aux}: "
               r"\text{the benefit vanishes and reverses}"),
    quantity="R_STL - R_PTFT (normalised by ||f_main||^2) at the largest n, rho = rho; theory: 2a - r~(a; 1, rho)",
    assumptions=(
        "setup reconstructed from the appendix: six auxiliary units (readout 1), main units at cosine rho (readout a)",
        "PT on the exact auxiliary population loss from a small init (1e-3); FT resets the readouts to gamma = 1e-3",
        f"full-batch GD, step {PTFT_LR}, fixed budgets (quick 2500, default 6000 steps): the paper's budget is not "
        "given; final relative training losses are reported",
        "predicted sign of the benefit from the penalty: 2a (fresh unit, STL) vs r~(a; m_aux = 1, rho) (eqs. 6-11)",
    ),
    parameters=(
        Parameter("rho", "cosine between corresponding auxiliary and main teacher units (the check runs 1 and rho)",
                  "1/2", lower="0", upper="1", upper_open=True),
        Parameter("a", "fine-tuning task feature weight (main-teacher readout; auxiliary = 1)", "1/10", lower="0",
                  upper="2", lower_open=True),
        Parameter("d", "input dimension", {"quick": "8", "default": "10", "paper": "20"}, lower="6", integer=True),
        Parameter("H", "student hidden units", {"quick": "24", "default": "24", "paper": "64"}, lower="6", integer=True),
        Parameter("n_max", "largest number of main-task samples (ladder n_max/4, n_max)",
                  {"quick": "128", "default": "128", "paper": "256"}, lower="4", integer=True),
    ),
    symbolic=_ptft_symbolic,
    evaluate=_ptft_evaluate,
    check=_ptft_check,
    formulas={"advantage": _advantage},
    budget={"steps": {"quick": 2500, "default": 6000, "paper": 20000}},    # GD steps on the n main-task samples
    # quick 36 draws: at 12 the rho = 0.9 refutation (z ~ 4.5 against 4.4) and the rho = 1/2 agreement each lost
    # significance at some seeds; at 36 they sit at z ~ 9-14 and ~ 20
    trials={"quick": 36, "default": 48, "paper": 64},
    verdict_rule=("per rho in (1, rho) and n in the ladder, a paired z-test of R_STL - R_PTFT (Bonferroni over the "
                  "points, design false alarm 1e-3): where the penalty predicts a benefit, no point may be "
                  "significantly negative and one must be significantly positive; where it predicts none, the "
                  "reverse; a significant opposite sign is 'disagree', no significant point 'inconclusive'"),
    false_alarm=FALSE_ALARM,
    cases=({},),
    findings=(Finding(PTFT_REGION, PTFT_FINDING_RHO_09, at={"rho": "9/10"}),
              Finding(PTFT_REGION_A14, PTFT_FINDING_A14, at=None, fair=("agree", "inconclusive")),
              Finding(PTFT_REGION_SMALL, PTFT_FINDING_SMALL, at=None, verdict="inconclusive", fair=("agree",)),
              Finding(PTFT_REGION_ROOT, PTFT_FINDING_ROOT, at=None, verdict="inconclusive", fair=("agree", "disagree"))),
    negative_controls=(
        # the penalty without its -2 u m0 rho term: a pretrained unit is never cheaper than a fresh one
        Control("ptft-no-reuse-term", {"advantage": lambda a, rho: 2 * mp.mpf(a) - (2 * mp.mpf(a) + 1)},
                why="reuse never pays, so a reversal is predicted at rho = 1, where PT+FT is measured to help"),
        Control("ptft-correlation-ignored", {"advantage": lambda a, rho: _advantage(a, 1)},
                why="correlation ignored (rho -> 1): a benefit predicted at rho = 1/2, where PT+FT is measured to hurt"),
    ),
    method=('six auxiliary teacher units and main units at cosine rho; PT+FT (pretrain on the exact auxiliary '
            'population loss, readouts reset small, train all on n samples) against single-task learning from a '
            'small init on the same samples; paired z-tests of R_STL - R_PTFT at two n against the sign the '
            'penalty predicts (2a - r~(a; m_aux = 1, rho))'),
    power=(
        Perturbation('advantage', 'n/a', ('the check reads only the sign of the predicted advantage 2a - r~, which (1 + delta) never changes;'
             ' its negative controls flip the sign')),
    ),
))
