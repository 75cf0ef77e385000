"""Gaussian ReLU kernels and the RKHS of a ReLU layer: Features are fate eqs. (153)-(159), Liu et al. Sec. 6.1.

- ``arccos-kernel`` (eq. (153), Cho & Saul 2009): for x ~ N(0, I_d) and unit w_i, w_j at cosine u,
  E[relu(w_i.x) relu(w_j.x)] = k1(u) = (sqrt(1 - u^2) + u (pi - arccos u)) / (2 pi).
- ``ntk-gram`` (Liu et al. Sec. 6.1, after Du et al. 2019): for unit inputs,
  H^inf_ij = E_w[x_i.x_j 1{w.x_i >= 0, w.x_j >= 0}] = x_i.x_j (pi - arccos(x_i.x_j)) / (2 pi) = x_i.x_j k0(x_i.x_j),
  and the cross matrix H_PQ between two data sets in the same way.
- ``rkhs-projection`` (eqs. (154)-(159)): with K = G/m, K* = G*/m*, Kt = G~/sqrt(m m*) (G the L2 Gram matrices of the
  units' features relu(w.x)) and f* = (1/m*) sum_j c*_j relu(w*_j.x),
  ||P f*||^2 = c*^T Kt^T K^{-1} Kt c* / m*  and  ||P_perp f*||^2 = c*^T K* c* / m* - ||P f*||^2.

Reading of the paper (App. C, text extracted without spaces).  Eq. (153) is printed without the factor
||w_i|| ||w_j||, although u_ij is normalised by the norms: it is E[relu(w_i.x) relu(w_j.x)] for *unit* units, which
Sec. 4 has (w_i, w*_i on S^{d-1}); the claims here are stated for unit units.  In eq. (157) the sum runs over
"l = 1..m" but sums units i (a typo: psi_l = sum_i (z_l)_i relu(w_i.x) / sqrt(m lambda_l^2)).  The normalisations
of (158)-(159) are consistent: the factors 1/m, 1/m*, 1/sqrt(m m*) of K, K*, Kt and the 1/m* of f* combine to the
L2 projection (the sympy face derives it), so the catalogue's 1/m* is the paper's and is right.

The Monte-Carlo checks sample the defining expectations: relu products at random x (arccos-kernel); the NTK Gram
matrices of randomly initialised width-m networks by autograd (ntk-gram); least squares of a teacher on a
student's features with a ladder of sample sizes (rkhs-projection).

Measured (seed 0, CPU, one thread).  arccos-kernel, quick (2e5 samples per u): z = -0.96, -1.19, -0.70, +2.26, 0, +1.25
at u = 1/2, -4/5, 0, 1, -1, 0.99 (d = 2); default (2e6): |z| <= 0.68.  ntk-gram, quick (1000 networks of width 256,
55 entries, |z| <= 4.29): max |z| = 2.64, 2.24, 3.27, 2.24 at u = 1/2, 0.99, 1, -1; lambda_0(H_P) = 0.246, 0.0248,
5e-17 (duplicate inputs), 0.075 (antipodal inputs).  rkhs-projection, quick (d = 10, m = 20, m* = 5, n = 160/320/640):
extrapolation z = +1.35, +0.03, +0.61, 0.00 for config 0, config 1, shared = 1/2, shared = 1 (||P_perp f*||^2/||f*||^2 =
0.39, 0.41, 0.09, 0); default (d = 16, m = 32, m* = 8): z = -1.20, +1.63, +1.41, 0.00.  Along the ladder
n (in-sample - eq. (159)) and n (out-of-sample - eq. (159)) are nearly opposite (-0.59/+0.70, -0.55/+0.60, -0.53/+0.79
at d = 100, m = 200, m* = 50), the O(1/n) cancellation the extrapolation relies on.
"""

from __future__ import annotations

import math
import zlib

import mpmath as mp
import sympy as sp
import torch

from numerics import enclosures
from numerics.certified import ball
from numerics.feature_projection import norm_outside_span
from numerics.kernels import orthant_probability, relu_overlap
from numerics.symbolic import normal_density
from simulate.kernel_estimates import (block_gram, lowest_eigenvalues, normalised_relu_grams, ntk_gram_moments,
                                       projection_ladder, relu_teacher)
from simulate.kernel_sampling import relu_product_samples
from simulate.kernels import arccos0, arccos1, cosine_kernel, ntk_gram
from simulate.sphere_draws import inputs_with_cosine, seeded_student_teacher, unit_pair
from simulate.stats import estimate, rounding_floor
from theorems.core import Control, Derivation, Outcome, Parameter, Perturbation, Symbolic, Theorem, as_float, mpf
from theorems.registry import register

__all__ = ["arccos_kernel", "ntk_gram_claim", "rkhs_projection"]

PAPER = "Tahir, Ganguli & Rotskoff, Features are fate"
LIU = "Liu et al., transferability of deep representations"
FALSE_ALARM = 1e-3
ROUNDING = 1e-12  # float64 floor for standard errors of quantities of order one that can be exactly constant

COSINE = Parameter("u", "cosine between the two unit vectors", "1/2", lower="-1", upper="1", typical=("-1", "1"))

_u = sp.Symbol("u", real=True)
_theta = sp.Symbol("theta", positive=True)
_phi, _r, _z = sp.symbols("phi r z", real=True)
K1 = (sp.sqrt(1 - _u**2) + _u * (sp.pi - sp.acos(_u))) / (2 * sp.pi)    # eq. (153)
K0 = (sp.pi - sp.acos(_u)) / (2 * sp.pi)                                  # the order-0 kernel: P(both units active)
_GAUSS = normal_density(_z)


def _polar_moment(power):
    """E[(w_i.x)^p (w_j.x)^p 1{both >= 0}] in polar coordinates of the plane of w_i, w_j at angle theta:
    density r e^{-r^2/2} dr dphi / (2 pi), both units active for phi in [theta - pi/2, pi/2]."""
    radial = sp.integrate(_r ** (2 * power + 1) * sp.exp(-_r**2 / 2), (_r, 0, sp.oo))
    angular = sp.integrate((sp.cos(_phi) * sp.cos(_phi - _theta)) ** power, (_phi, _theta - sp.pi / 2, sp.pi / 2))
    return sp.simplify(radial * angular / (2 * sp.pi)).subs(_theta, sp.acos(_u))


# ---------------------------------------------------------------------------
# arccos-kernel: eq. (153)
# ---------------------------------------------------------------------------

def _k1(u):
    """Eq. (153) for unit units at cosine u (mpmath)."""
    return (mp.sqrt(1 - u * u) + u * (mp.pi - mp.acos(u))) / (2 * mp.pi)


def _ak_symbolic() -> Symbolic:
    polar = _polar_moment(1)
    relu_mean = sp.integrate(_z * _GAUSS, (_z, 0, sp.oo))
    relu_square = sp.integrate(_z**2 * _GAUSS, (_z, 0, sp.oo))
    derivative = sp.simplify(sp.diff(K1, _u) - K0)
    odd_part = sp.simplify((K1 - K1.subs(_u, -_u)).rewrite(sp.asin))   # arccos(-u) = pi - arccos(u)
    derivations = (
        Derivation("the Gaussian integral in polar coordinates (Cho & Saul's route) gives eq. (153)",
                   polar, sp.simplify(polar - K1) == 0),
        Derivation("u -> 1: k1 -> 1/2 = E relu(z)^2 (one unit with itself)", sp.limit(K1, _u, 1, "-"),
                   sp.limit(K1, _u, 1, "-") == relu_square == sp.Rational(1, 2)),
        Derivation("u -> -1: k1 -> 0 (opposite units are never both active)", sp.limit(K1, _u, -1, "+"),
                   sp.limit(K1, _u, -1, "+") == 0),
        Derivation("u = 0: k1 = (E relu z)^2 = 1/(2 pi) (independent units)", K1.subs(_u, 0),
                   sp.simplify(K1.subs(_u, 0) - relu_mean**2) == 0),
        Derivation("d k1/du = k0(u) = (pi - arccos u)/(2 pi), the order-0 kernel P(both active)",
                   sp.diff(K1, _u), derivative == 0),
        Derivation("k0 -> 1/2 as u -> 1 and -> 0 as u -> -1; k0(0) = 1/4",
                   (sp.limit(K0, _u, 1, "-"), sp.limit(K0, _u, -1, "+"), K0.subs(_u, 0)),
                   (sp.limit(K0, _u, 1, "-"), sp.limit(K0, _u, -1, "+"), K0.subs(_u, 0))
                   == (sp.Rational(1, 2), 0, sp.Rational(1, 4))),
        Derivation("k1(u) - k1(-u) = u/2 = E[relu(a) b] (relu(b) - relu(-b) = b)", odd_part,
                   sp.simplify(odd_part - _u / 2) == 0),
        Derivation("d^2 k1/du^2 = 1/(2 pi sqrt(1 - u^2)) > 0: k1 is convex", sp.diff(K1, _u, 2),
                   sp.simplify(sp.diff(K1, _u, 2) - 1 / (2 * sp.pi * sp.sqrt(1 - _u**2))) == 0),
    )
    return Symbolic("E[relu(w_i.x) relu(w_j.x)]", sp.Eq(sp.Symbol("k_1(u)"), K1), derivations)


def _ak_check(theorem, params, run) -> Outcome:
    p, trials, dtype = as_float(params), run.trials_for(theorem), run.dtype_for(theorem)
    run.progress(f"{trials} samples of relu(w_i.x) relu(w_j.x)")
    est = estimate(relu_product_samples(p["u"], p["d"], trials, run.rng(theorem, params), dtype))
    reference = float(theorem.formulas["kernel"](mpf(params["u"])))
    judge = run.judge(theorem)
    floor = max(ROUNDING, rounding_floor(dtype, reference))     # at u = -1 every product is exactly 0 (se = 0)
    kernel = judge.mean(est, reference, "sample mean vs eq. (153)", floor=floor)
    return judge.outcome("sample mean meets eq. (153)", main=kernel, se=est.se, sizes={"d": p["d"]})


def _ak_certify(theorem, params, run) -> dict:
    """Eq. (153) at u, proved or disproved: the claimed kernel in ball arithmetic against an enclosure of the
    defining Gaussian integral E[relu(a) relu(b)] (numerics.enclosures.relu_overlap)."""
    cert, u = run.certifier(theorem), params["u"]
    overlap = enclosures.relu_overlap(u)
    cert.theory(overlap)
    cert.equal(cert.formula("kernel", u), overlap, "eq. (153) vs the Gaussian integral")
    return cert.outcome(f"eq. (153) = E[relu(w_i.x) relu(w_j.x)] at u = {u}")


arccos_kernel = register(Theorem(
    id="arccos-kernel",
    title="Gaussian overlap of two ReLU units: the order-1 arc-cosine kernel",
    source=f"{PAPER}, App. C, eq. (153) (Cho & Saul 2009)",
    statement=r"\mathbb{E}_{x\sim\mathcal{N}(0,I_d)}[\sigma(w_i^\top x)\sigma(w_j^\top x)] = "
              r"\frac{1}{2\pi}\Big(\sqrt{1-u^2} + u(\pi - \arccos u)\Big),\quad u = w_i^\top w_j",
    quantity="E[relu(w_i.x) relu(w_j.x)] for unit w_i, w_j at cosine u",
    assumptions=(
        "x ~ N(0, I_d); w_i, w_j unit vectors (the paper's units live on S^{d-1}; for other norms the "
        "expectation is ||w_i|| ||w_j|| times eq. (153), a factor the printed formula omits)",
        "the value depends on w_i, w_j only through u: the check draws a fresh uniformly rotated pair per sample",
    ),
    parameters=(COSINE, Parameter("d", "input dimension", "10", lower="2", integer=True, typical=("2", "100"))),
    symbolic=_ak_symbolic,
    evaluate=lambda params, dps: relu_overlap(mpf(params["u"])),
    check=_ak_check,
    formulas={"kernel": _k1},
    trials={"quick": 200_000, "default": 2_000_000, "paper": 20_000_000},
    verdict_rule=("two-sided z-test at 1e-3 of the mean of relu(w_i.x) relu(w_j.x) over i.i.d. samples "
                  "(fresh x ~ N(0, I_d) and fresh rotated unit pair at cosine u each) against eq. (153)"),
    false_alarm=FALSE_ALARM,
    cases=({}, {"u": "-4/5"}, {"u": "0"}, {"u": "1"}, {"u": "-1"}, {"u": "99/100", "d": "2"}),
    negative_controls=(
        Control("ak-order-0-kernel", {"kernel": lambda u: (mp.pi - mp.acos(u)) / (2 * mp.pi)},
                why="eq. (153) with the order-0 kernel (the probability that both units are active) in its place"),
        Control("ak-dropped-sqrt", {"kernel": lambda u: u * (mp.pi - mp.acos(u)) / (2 * mp.pi)},
                why="eq. (153) without the sqrt(1 - u^2) term"),
        Control("ak-flipped-angle", {"kernel": lambda u: (mp.sqrt(1 - u * u) + u * mp.acos(u)) / (2 * mp.pi)},
                {"u": "-4/5"}, why="arccos u where pi - arccos u belongs"),
        Control("ak-wrong-constant", {"kernel": lambda u: 2 * _k1(u)}, {"u": "-4/5"}, why="1/pi for 1/(2 pi)"),
    ),
    float32=True,   # sample means of products of O(1) numbers: float32 rounding ~1e-7 << the SE (~1e-3)
    certify=_ak_certify,
    certify_method=("eq. (153) in arb ball arithmetic against the defining integral int_0^oo a phi(a) "
                    "E[relu(b) | a] da, integrated rigorously with a proved tail bound"),
    method=('mean of relu(w_i.x) relu(w_j.x) over fresh x and freshly rotated unit pairs at cosine u, z-test '
            'against (153); mpmath evaluates the defining Gaussian integral by quadrature; sympy: limits at u ->'
            ' +-1, dk1/du = k0'),
    power=(Perturbation("kernel", "up", "eq. (153), k1(u): one two-sided z-test of the sample mean (case u = -1: "
                        "k1 = 0 has no relative perturbation)", cases=(0, 1, 2, 3, 5), analytic=1),),
))


# ---------------------------------------------------------------------------
# ntk-gram: Liu et al. Sec. 6.1
# ---------------------------------------------------------------------------

PSD_TOLERANCE = 1e-12   # eigenvalues of a float64 Gram matrix of order one are exact to ~1e-15
CHUNK_UNITS = 2_000_000  # trials * width * d per autograd batch


def _ng_symbolic() -> Symbolic:
    orthant = _polar_moment(0)
    h = _u * K0
    two_point = lambda u: sp.Rational(1, 4) - h.subs(_u, u) ** 2    # det of H^inf for two inputs at cosine u
    derivations = (
        Derivation("P(w.x_i >= 0, w.x_j >= 0) in polar coordinates = (pi - arccos u)/(2 pi) = k0(u)",
                   orthant, sp.simplify(orthant - K0) == 0),
        Derivation("Sheppard's form: k0(u) = 1/4 + arcsin(u)/(2 pi)", K0.rewrite(sp.asin),
                   sp.simplify(K0.rewrite(sp.asin) - (sp.Rational(1, 4) + sp.asin(_u) / (2 * sp.pi))) == 0),
        Derivation("H^inf_ij = u k0(u) = u d k1/du: the NTK Gram is the arc-cosine kernel's derivative times u",
                   h, sp.simplify(h - _u * sp.diff(K1, _u)) == 0),
        Derivation("H^inf_ii = 1/2; H^inf_ij -> 0 as u -> -1; H^inf_ij = 0 at u = 0",
                   (h.subs(_u, 1), sp.limit(h, _u, -1, "+"), h.subs(_u, 0)),
                   (h.subs(_u, 1), sp.limit(h, _u, -1, "+"), h.subs(_u, 0)) == (sp.Rational(1, 2), 0, 0)),
        Derivation("two inputs: det H^inf = 1/4 - (u k0)^2 vanishes for duplicates (u = 1, lambda_0 = 0) and is 1/4 for "
                   "antipodal inputs (u = -1: H^inf is positive definite although Du et al. exclude parallel inputs)",
                   (two_point(1), sp.limit(two_point(_u), _u, -1, "+")),
                   (two_point(1), sp.limit(two_point(_u), _u, -1, "+")) == (0, sp.Rational(1, 4))),
    )
    statement = sp.Eq(sp.Symbol(r"H^\infty_{ij}"), h)
    return Symbolic("H^inf_ij at x_i.x_j = u", statement, derivations)


def _ng_certify(theorem, params, run) -> dict:
    """H^inf_12 = u k0(u) at u, proved or disproved: the closed form (sympy, in balls) against an enclosure of the
    orthant integral; and the check's formula (torch) at two float64 rows at cosine u, every entry of its 2 x 2
    Gram matrix against the same integral at those rows' exact entries."""
    cert, u = run.certifier(theorem), params["u"]
    entry = ball(u) * enclosures.orthant_probability(u)
    cert.theory(entry)
    cert.equal(ball((_u * K0).subs(_u, u)), entry, "u k0(u) vs u P(w.x_i >= 0, w.x_j >= 0)")
    rows = unit_pair(u)
    gram = theorem.formulas["gram"](rows, rows)
    for i, j in ((0, 0), (0, 1), (1, 1)):
        cert.equal(cert.float64(gram[i, j].item()), enclosures.gram_entry(rows[i].tolist(), rows[j].tolist()),
                   f"formula H({i},{j})")
    return cert.outcome(f"H^inf_ij = x_i.x_j (pi - arccos x_i.x_j)/(2 pi) at u = {u}")


def _ng_check(theorem, params, run) -> Outcome:
    p, trials = as_float(params), run.trials_for(theorem)
    n_p, n_q = p["n_p"], p["n_q"]
    gen = run.rng(theorem, params)
    X_P, X_Q = inputs_with_cosine(n_p, n_q, p["d"], p["u"], gen)   # x_P2 and x_Q1 at cosine u with x_P1
    X = torch.cat([X_P, X_Q])
    mean, se = ntk_gram_moments(X, p["m"], trials, p["kappa"], gen, CHUNK_UNITS, run.progress)
    claim = block_gram(theorem.formulas["gram"], X_P, X_Q)
    judge = run.judge(theorem)
    # H_P, H_Q (diagonals included) and all of H_PQ: the joint matrix's upper triangle, P indices before Q;
    # each a plain z (judge.fit), as it always was: the entries' means are not skewness-corrected
    entries = {(i, j): judge.fit(mean[i, j].item(), max(se[i, j].item(), ROUNDING), claim[i, j].item(),
                                 f"H({i},{j}) at x_i.x_j = {(X[i] @ X[j]).item():+.3f}")
               for i, j in zip(*torch.triu_indices(n_p + n_q, n_p + n_q).tolist())}
    lambda_all, lambda_p, lambda_q = lowest_eigenvalues(claim, n_p)
    judge.fact(not lambda_all < -PSD_TOLERANCE, "H^inf of P and Q together PSD",
               f"lambda_min = {lambda_all:.3g}, but every H(0) is a Gram matrix")
    assumption = (f"lambda_0(H_P) = {lambda_p:.3g}, lambda_0(H_Q) = {lambda_q:.3g} > 0 (Liu/Du's assumption holds)"
                  if min(lambda_p, lambda_q) > PSD_TOLERANCE else f"lambda_0(H_P) = {lambda_p:.2g}: Liu/Du's "
                  f"assumption lambda_0 > 0 fails (duplicate inputs), the identity holds regardless")
    worst = max(abs(c.z) for c in entries.values())
    summary = f"all {len(entries)} entries of H_P, H_Q, H_PQ match (max |z| = {worst:.2f}); H^inf PSD, {assumption}"
    # the entry reported in the table: H_P[0, 1], at x_P1.x_P2 = u (the mpmath face's value), with its unfloored se
    return judge.outcome(summary, main=entries[0, 1], se=se[0, 1].item(), trials=trials,
                         sizes={"n_P": n_p, "n_Q": n_q, "d": p["d"], "m": p["m"]},
                         extra={"max_abs_z": worst, "entries": len(entries), "lambda_min_all": lambda_all,
                                "lambda_0_P": lambda_p, "lambda_0_Q": lambda_q,
                                "lambda_min_mc_P": torch.linalg.eigvalsh(mean[:n_p, :n_p])[0].item()})


ntk_gram_claim = register(Theorem(
    id="ntk-gram",
    title="Infinite-width NTK Gram matrix of a two-layer ReLU network in closed form",
    source=f"{LIU}, Sec. 6.1 (H_P, H_Q, H_PQ; after Du et al. 2019)",
    statement=r"H^\infty_{ij} = \mathbb{E}_{w\sim\mathcal{N}(0,I)}\big[x_i^\top x_j\,\mathbb{I}\{w^\top x_i \ge 0, "
              r"w^\top x_j \ge 0\}\big] = \frac{x_i^\top x_j\,(\pi - \arccos(x_i^\top x_j))}{2\pi}",
    quantity="H^inf_{P,12} at x_P1.x_P2 = u (the check compares every entry of H_P, H_Q and H_PQ)",
    assumptions=(
        "||x|| = 1 for every input (Liu et al. Sec. 6.1)",
        "f(x) = a^T relu(W^T x)/sqrt(m), w_r ~ N(0, kappa^2 I), a_r uniform in {-1, 1}: H(0) = <df/dW(x_i), "
        "df/dW(x_j)> averages the indicator over m units, so E H(0) = H^inf at every width; kappa drops out "
        "(1{w.x >= 0} is scale-free)",
        "data: unit inputs uniform on S^{d-1}, with x_P2 and x_Q1 at cosine u with x_P1",
    ),
    parameters=(
        COSINE,
        Parameter("d", "input dimension", "4", lower="2", integer=True, typical=("2", "100")),
        Parameter("n_p", "number of pretraining inputs (P)", "6", lower="2", integer=True, typical=("2", "20")),
        Parameter("n_q", "number of target inputs (Q)", "4", lower="1", integer=True, typical=("1", "20")),
        Parameter("m", "width of each sampled network (units averaged per draw)", "256", lower="1", integer=True),
        Parameter("kappa", "initialisation scale of the hidden weights", "1", lower="0", lower_open=True),
    ),
    symbolic=_ng_symbolic,
    evaluate=lambda params, dps: mpf(params["u"]) * orthant_probability(mpf(params["u"])),
    check=_ng_check,
    formulas={"gram": ntk_gram},
    trials={"quick": 1000, "default": 5000, "paper": 50_000},
    verdict_rule=("per entry of H_P, H_Q (upper triangles) and H_PQ, a two-sided z-test of the mean over independent "
                  "networks of their autograd NTK Gram H(0) against the formula, Bonferroni over the entries; "
                  "and the formula's joint Gram matrix of P and Q must be PSD (lambda_min >= -1e-12)"),
    false_alarm=FALSE_ALARM,
    cases=({}, {"u": "99/100"}, {"u": "1"}, {"u": "-1", "kappa": "1/100"}),
    negative_controls=(
        Control("ng-dropped-inner-product", {"gram": cosine_kernel(arccos0)},
                why="H^inf without the x_i.x_j factor (the order-0 kernel alone)"),
        Control("ng-arccos-1", {"gram": cosine_kernel(arccos1)},
                why="the order-1 arc-cosine kernel (the NNGP of the readout layer) for the NTK Gram"),
        Control("ng-flipped-angle", {"gram": cosine_kernel(lambda u: u * torch.acos(u) / (2 * math.pi))},
                why="arccos for pi - arccos: zero diagonal, not PSD"),
        Control("ng-two-percent-high", {"gram": cosine_kernel(lambda u: 1.02 * (u * arccos0(u)))},
                why="the power of the entrywise test: every entry 2 % high"),
    ),
    certify=_ng_certify,
    certify_method=("u k0(u) (sympy) in arb balls, and the torch formula's float64 Gram matrix at two rows at cosine u, "
                    "against the orthant integral int_0^oo phi(a) Phi(u a / s) da enclosed with a tail bound"),
    method=('the Gram matrix of df/dW by autograd over many independent width-256 networks at init; z-test of '
            'every entry of H_P, H_Q, H_PQ (Bonferroni), PSD-ness and lambda_0 reported; mpmath: orthant '
            'probabilities by quadrature'),
    power=(Perturbation("gram", "up", "H^inf (a matrix, scaled): every entry z-tested, Bonferroni over the entries"),),
    limits=("none: E H(0) = H^inf at every width m, so the mean over independent networks is tested at a finite m; "
            "H^inf as the m -> oo limit of one network's H(0), at the rate of Liu et al.'s eq. (12), is checked in "
            "tests/test_coverage_checks.py"),
))


# ---------------------------------------------------------------------------
# rkhs-projection: eqs. (154)-(159)
# ---------------------------------------------------------------------------

RATIOS = (8, 16, 32)       # fitting samples n = ratio * m: the ladder extrapolated to n -> oo
TEST_SAMPLES = 2000        # fresh samples per trial for the out-of-sample residual
MERCER_MAX_WIDTH = 60      # the mpmath face (eigsy at m units) beyond this width would take minutes
CHUNK_ENTRIES = 4_000_000  # trials * n * m per least-squares batch


def _rkhs_norm(K_star, c_star, m_star):
    """||f*||^2 = c*^T K* c* / m*, the first term of eq. (159)."""
    return c_star @ K_star @ c_star / m_star


def _rkhs_projection(K, K_tilde, c_star, m_star):
    """Eq. (158): ||P f*||^2 = c*^T Kt^T K^{-1} Kt c* / m*."""
    b = K_tilde @ c_star
    return b @ torch.linalg.solve(K, b) / m_star


def _rkhs_symbolic() -> Symbolic:
    m, ms = sp.symbols("m m_star", positive=True)
    g11, g12, g22, l1, l2, t = sp.symbols("g11 g12 g22 lambda1 lambda2 t", positive=True)
    G = sp.Matrix([[g11, g12], [g12, g22]])                  # <relu_i, relu_k>, the student's L2 Gram
    C = sp.Matrix(2, 2, sp.symbols("C1:5", real=True))       # <relu_i, relu*_j>
    c = sp.Matrix(sp.symbols("c1:3", real=True))             # teacher readout c*
    K, Kt = G / m, C / sp.sqrt(m * ms)                       # eqs. (154), (156)
    b = C * c / ms                                           # <relu_i, f*> for f* = (1/m*) sum_j c*_j relu*_j
    eq158 = (c.T * Kt.T * K.inv() * Kt * c)[0] / ms
    l2_projection = (b.T * G.inv() * b)[0]                   # normal equations: ||P f*||^2 = b^T G^{-1} b
    # Eq. (157) with the paper's K = Z diag(lambda^2) Z^T: coefficients A of psi_l on the units
    Z = sp.Matrix([[sp.cos(t), -sp.sin(t)], [sp.sin(t), sp.cos(t)]])
    Lam = sp.diag(l1, l2)
    K_eig = Z * Lam * Z.T
    A = Z * sp.diag(1 / sp.sqrt(m * l1), 1 / sp.sqrt(m * l2))
    orthonormal = sp.simplify(A.T * (m * K_eig) * A)          # <psi_l, psi_k> = A^T G A with G = m K
    eigen = sp.simplify(K_eig * A - A * Lam)                  # T_k acts on unit coefficients as K
    mercer_sum = sp.simplify((b.T * A * A.T * b)[0] - (c.T * Kt.T * K_eig.inv() * Kt * c)[0] / ms)
    G_star = sp.Matrix([[sp.Rational(1, 2), sp.Symbol("gs12")], [sp.Symbol("gs12"), sp.Rational(1, 2)]])
    teacher_norm = sp.expand((c.T * G_star * c)[0] / ms**2 - (c.T * (G_star / ms) * c)[0] / ms)
    # the complement is a Schur complement of the joint Gram of student and teacher units (m = 2, m* = 1)
    Gs = sp.Symbol("gs", positive=True)
    col = sp.Matrix(sp.symbols("h1:3", real=True))
    joint = sp.Matrix(sp.BlockMatrix([[G, col], [col.T, sp.Matrix([[Gs]])]]))
    schur = Gs - (col.T * G.inv() * col)[0]
    derivations = (
        Derivation("eq. (158) with K = G/m, Kt = G~/sqrt(m m*) is the L2 projection norm b^T G^{-1} b, "
                   "b_i = <relu_i, f*> (the normalisations 1/m, 1/m*, 1/sqrt(m m*) cancel as printed)",
                   sp.simplify(eq158 - l2_projection), sp.simplify(eq158 - l2_projection) == 0),
        Derivation("first term of eq. (159): ||f*||^2 = c*^T G* c*/m*^2 = c*^T K* c*/m* with K* = G*/m* (eq. (155))",
                   teacher_norm, teacher_norm == 0),
        Derivation("eq. (157): psi_l are orthonormal in L2 (A^T G A = I, m = 2)", orthonormal,
                   orthonormal == sp.eye(2)),
        Derivation("eq. (157): K A = A diag(lambda^2), i.e. T_k psi_l = lambda_l^2 psi_l for k = (1/m) sum_i relu_i relu_i",
                   eigen, eigen == sp.zeros(2, 2)),
        Derivation("sum_l <f*, psi_l>^2 over the Mercer eigenfunctions equals eq. (158)", mercer_sum, mercer_sum == 0),
        Derivation("||P_perp f*||^2 (one teacher unit) is the Schur complement det(joint)/det(G) >= 0",
                   schur, sp.simplify(joint.det() / G.det() - schur) == 0),
    )
    statement = sp.Eq(sp.Symbol(r"\|P_\perp f^*\|^2"),
                      sp.Symbol(r"c^{*\top} K^* c^* / m^*") - sp.Symbol(r"c^{*\top}\tilde K^\top K^{-1}\tilde K c^* / m^*"))
    return Symbolic("||P_perp f*||^2", statement, derivations)


def _rkhs_configuration(params):
    """The claim's fixed student and teacher (W, W*, c*), a deterministic draw from d, m, m*, shared, config."""
    p = as_float(params)
    # not run.rng: the configuration is part of the claim (the mpmath face draws it too, with no Run), so it is
    # the same under every run seed and device: a CPU generator keyed by the point alone
    key = f"rkhs-projection|{p['d']}|{p['m']}|{p['m_star']}|{params['shared']}|{p['config']}"
    return seeded_student_teacher(p["d"], p["m"], p["m_star"], _shared_units(params), zlib.crc32(key.encode()))


def _shared_units(params) -> int:
    return round(float(params["shared"]) * int(params["m_star"]))


def _rkhs_evaluate(params, dps):
    """||P_perp f*||^2 for the configuration: Gram entries from eq. (153) (checked against quadrature by
    arccos-kernel), the projection through the Mercer eigenfunctions of eq. (157) (numerics), not K^{-1}."""
    if int(params["m"]) > MERCER_MAX_WIDTH:
        return None
    W, W_star, c_star = _rkhs_configuration(params)
    return norm_outside_span(_k1, W.tolist(), W_star.tolist(), c_star.tolist())


def _rkhs_claims(theorem, params, device):
    """(||f*||^2, ||P f*||^2) by the claimed formulas, and the networks, for the configuration."""
    W, W_star, c_star = (x.to(device) for x in _rkhs_configuration(params))
    K, K_star, K_tilde = normalised_relu_grams(W, W_star)          # eqs. (154)-(156)
    norm = theorem.formulas["norm"](K_star, c_star, W_star.shape[0]).item()
    projection = theorem.formulas["projection"](K, K_tilde, c_star, W_star.shape[0]).item()
    return norm, projection, W, relu_teacher(W_star, c_star)


def _rkhs_check(theorem, params, run) -> Outcome:
    p, trials = as_float(params), run.trials_for(theorem)
    gen = run.rng(theorem, params)
    norm, projection, W, teacher = _rkhs_claims(theorem, params, run.device)
    complement, floor = norm - projection, ROUNDING * norm           # eq. (159)
    ladder = projection_ladder(W, teacher, [ratio * p["m"] for ratio in RATIOS], TEST_SAMPLES, trials, gen,
                               CHUNK_ENTRIES, run.progress)
    judge = run.judge(theorem)
    for n, inside, outside in ((step.n, step.in_sample, step.out_of_sample) for step in ladder.steps):
        # exact for every n: E(in-sample) <= ||P_perp f*||^2 <= E(out-of-sample) (a minimum of means vs mean of minima)
        judge.mean(inside, complement, f"n={n}: in-sample residual above eq. (159)", floor=floor, alarm="above")
        judge.mean(outside, complement, f"n={n}: out-of-sample residual below eq. (159)", floor=floor, alarm="below")
    value, se, curvature = ladder.midpoint_limit(complement, floor)     # the in/out average, whose O(1/n) terms cancel
    limit = judge.fit(value, se, 0.0, "n -> oo residual minus eq. (159)")
    norm_check = judge.mean(ladder.teacher_norm, norm, "mean f*(x)^2 vs c*^T K* c*/m*", floor=floor)
    sizes = [step.n for step in ladder.steps]
    summary = (f"residual brackets eq. (159) at n = {', '.join(map(str, sizes))} and extrapolates to it "
               f"(z={limit.z:+.2f}); ||f*||^2 z={norm_check.z:+.2f}; ||P_perp f*||^2/||f*||^2 = {complement / norm:.3f}")
    return judge.outcome(summary, main=limit, mean=complement + limit.value, reference=complement, trials=trials,
                         sizes={"d": p["d"], "m": p["m"], "m_star": p["m_star"], "n": sizes, "test": TEST_SAMPLES},
                         extra={"ladder": ladder.rows(complement), "norm": norm, "norm_mc": ladder.teacher_norm.mean,
                                "norm_se": ladder.teacher_norm.se, "z_norm": norm_check.z, "projection": projection,
                                "midpoint_curvature": curvature})


def _rkhs_constraints(params):
    if _shared_units(params) > params["m"]:
        return f"the student (m = {params['m']}) cannot hold round(shared m*) = {_shared_units(params)} teacher units"
    return None


rkhs_projection = register(Theorem(
    id="rkhs-projection",
    title="A teacher's projection onto (and out of) the span of a ReLU layer's features",
    source=f"{PAPER}, App. C, eqs. (154)-(159)",
    statement=r"\|Pf^*\|_{L_2}^2 = \frac{1}{m^*} c^{*\top}\tilde K^\top K^{-1}\tilde K c^*,\quad "
              r"\|P_\perp f^*\|_{L_2}^2 = \frac{1}{m^*} c^{*\top} K^* c^* - \frac{1}{m^*} c^{*\top}\tilde K^\top K^{-1}\tilde K c^*",
    quantity="||P_perp f*||^2 in L2(N(0, I_d)) for the configuration (student m units, teacher m* units)",
    assumptions=(
        "x ~ N(0, I_d); student and teacher units on S^{d-1} (Sec. 4), drawn once per (d, m, m*, shared, config); "
        "teacher readout c*_j = +-1",
        "f*(x) = (1/m*) sum_j c*_j relu(w*_j.x); P projects onto span{relu(w_i.x)} (the student's features, any readout)",
        f"the residual of least squares on n = {', '.join(map(str, RATIOS))} x m samples, in-sample and on "
        f"{TEST_SAMPLES} fresh samples: sizes reduced from the paper's d = 100, m = 1000, m* = 100 below the paper tier "
        "so that n >> m least squares stays cheap",
    ),
    parameters=(
        Parameter("d", "input dimension", {"quick": "10", "default": "16", "paper": "100"}, lower="2", integer=True),
        Parameter("m", "student width", {"quick": "20", "default": "32", "paper": "1000"}, lower="1", integer=True),
        Parameter("m_star", "teacher width", {"quick": "5", "default": "8", "paper": "100"}, lower="1", integer=True),
        Parameter("shared", "fraction of the teacher's units that the student also has", "0", lower="0", upper="1"),
        Parameter("config", "which deterministic draw of the student and teacher", "0", lower="0", integer=True),
    ),
    symbolic=_rkhs_symbolic,
    evaluate=_rkhs_evaluate,
    check=_rkhs_check,
    formulas={"norm": _rkhs_norm, "projection": _rkhs_projection},
    trials={"quick": 200, "default": 1000, "paper": 20},
    verdict_rule=("Bonferroni at 1e-3 over 8 z-tests: at each n, one-sided, mean in-sample residual <= eq. (159) <= mean "
                  "out-of-sample residual (exact inequalities at every n); the average of the two, whose O(1/n) terms "
                  "cancel, extrapolated (weighted fit c0 + c2/n^2 over the ladder) to eq. (159); the mean of f*(x)^2 on "
                  "fresh samples against c*^T K* c*/m*"),
    false_alarm=FALSE_ALARM,
    constraints=_rkhs_constraints,
    cases=({}, {"config": "1"}, {"shared": "1/2"}, {"shared": "1"}),
    negative_controls=(
        Control("rk-norm-over-m-star-squared", {"norm": lambda Ks, c, ms: c @ Ks @ c / ms**2},
                why="||f*||^2 with 1/(m*)^2 for 1/m* (K* already carries 1/m*)"),
        Control("rk-projection-over-m-star-squared",
                {"projection": lambda K, Kt, c, ms: _rkhs_projection(K, Kt, c, ms) / ms}, why="eq. (158) with 1/(m*)^2 for 1/m*"),
        Control("rk-no-inverse", {"projection": lambda K, Kt, c, ms: (Kt @ c) @ K @ (Kt @ c) / ms}, why="K for K^{-1}"),
        Control("rk-projection-two-percent-low", {"projection": lambda K, Kt, c, ms: 0.98 * _rkhs_projection(K, Kt, c, ms)},
                why="the power of the ladder: eq. (158) 2 % low"),
        Control("rk-nothing-projected", {"projection": lambda K, Kt, c, ms: torch.zeros(())}, {"shared": "1/2"},
                why="nothing projected: the whole teacher outside the span, at shared = 1/2 (where it is mostly inside)"),
    ),
    method=("least squares of a random teacher on a random student's features at n = 8, 16, 32 x m: the exact "
            'bracket E(in-sample) <= eq. (159) <= E(out-of-sample), the in/out average extrapolated in 1/n^2, '
            "and the teacher's norm; mpmath: the projection through Mercer eigenfunctions (eq. 157)"),
    power=(Perturbation("projection", "up", "eq. (158), ||P f*||^2: the residual ladder must bracket ||f*||^2 - "
                        "eq. (158)"),
           Perturbation("norm", "up", "||f*||^2 = c*^T K* c* / m*: z-tested against the mean of f*(x)^2, and enters "
                        "eq. (159)", primary=False)),
))
