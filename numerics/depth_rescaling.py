"""Depth rescaling of the null-space part in fine-tuned deep linear networks
(Shachaf, Brutzkus & Globerson, fine-tuning with linear teachers, Sec. 5,
Thms 5.2-5.5, eqs. (5)-(10)), in mpmath.

Setting (Sec. 3, 5): X is n x d (n < d, XX^T invertible), P_par projects onto
the row space of X, P_perp = I - P_par.  A depth-L linear network
beta = W_1 ... W_L, 0-balanced before pretraining, is pretrained perfectly to
beta(0) = theta_S and fine-tuned by gradient flow on y = X theta_T to zero loss.

Notation used throughout (all scalars; the module knows nothing of matrices):

    a = ||P_perp theta_S||^2      b = ||P_par theta_T||^2      s = ||theta_S|| > 0
    ||P_par theta_S||^2 = s^2 - a
    r = ||beta_inf||,   rho = r / s,   p = (L - 1) / L,   c = rho^p.

Eq. (5):  beta_inf = c P_perp theta_S + P_par theta_T.  The two parts are
orthogonal, so r^2 = c^2 a + b, i.e. the implicit equation

    s^2 rho^2 = a rho^(2p) + b.                                        (E)

Why eq. (5) holds (the supplementary proofs are not in the paper text; this is
the argument sketched after Thm 5.2, filled in): balancedness (4) is conserved
by gradient flow, and with d_L = 1 a balanced network is rank one,
W_1 = ||beta||^(1/L) beta_hat u^T with W_2 ... W_L = ||beta||^((L-1)/L) u,
u a unit vector.  Every gradient of W_1 is X^T (...), so P_perp W_1(t) =
P_perp W_1(0) = s^(1/L) P_perp theta_hat_S u(0)^T and
P_perp beta(t) = P_perp W_1(0) W_2...W_L(t)
             = s^(1/L) ||beta(t)||^((L-1)/L) (u(0).u(t)) P_perp theta_hat_S.
Rank one forces |u(0).u(t)| = 1 whenever P_perp theta_S != 0, and continuity
(beta(t) never reaches the fixed point 0: ||beta|| = ||W_1||^L >=
||P_perp W_1(0)||^L > 0) forces u(0).u(t) = +1.  Zero loss gives
P_par beta_inf = P_par theta_T.  Hence (5), with c > 0.

Functions take and return mpmath numbers (Python ints/floats/strings are
accepted and converted exactly at the caller's precision).  Work is done with
guard bits inside ``mp.workprec`` blocks and results are rounded back to the
caller's precision; the global precision is never changed.
``symbolic_depth_limit`` is the only function that uses sympy (imported lazily).

Consistency of the printed equations (checked in tests/test_depth_rescaling_numerics.py):
  (5)  matches gradient flow of depth-2/3 networks per draw (n = 5, d = 12) to the
       integrator's O(h^4) error; c lies between 1 and c_inf and is monotone in L.
  (6)  follows from (5) (implicit function theorem), but only at rate O(1/L) with
       c_L = c_inf - c_inf ln(c_inf) s^2 / ((s^2 - a) L) + O(1/L^2); for n << d the
       constant ~ (d/n) ln c_inf is large (alpha = 2, n/d = 0.1: c_7 = 1.374, c_100 = 1.883
       vs c_inf = 2).  Needs P_par theta_S != 0.
  (7)  = ||Sigma^{1/2} P_perp (theta_T - c_inf theta_S)||^2 exactly (x centred); invariant
       under theta_S -> k theta_S, which finite-L risks are not.
  (8)  exact; the L -> oo risk 0 of Thm 5.3 is exact (c_inf = alpha), alpha > 0 needed
       (alpha < 0 gives c_inf = |alpha|, risk 4 alpha^2 ||Sigma^{1/2} P_perp theta_S||^2).
  (9)  zeta(||theta_T||) "~ eps ||theta_T||" is not defined, and the constant c of the
       probability is unspecified, so (9) is only checkable as a plausibility statement
       (Monte Carlo: holds in >= 99% of Gaussian draws at eps = 0.2 with zeta = eps ||theta_T||).
       At n = 1 its failure probability falls only like A/eps (eq9_tail_constant_n1), which no
       8 exp(-c eps^2) dominates for large eps (theorems/shachaf_bounds.py records it).
  (10) consistent: E R(gamma) = (d-n)/d ||theta_T - theta_S||^2 and (10) is its (1+eps)^2 band;
       its exact failure probability is projection_tail(d - n, d, (1+eps)^2 (d-n)/d).
"""

from __future__ import annotations

import mpmath as mp

__all__ = [
    "eq9_deep_risk_bound",
    "eq9_tail_constant_n1",
    "eq10_linear_risk_bound",
    "aligned_task_deep_limit_risk",
    "aligned_task_linear_risk",
    "aligned_task_risk",
    "finetune_risk_quadratic",
    "finetune_risk_vectors",
    "frozen_first_layer_coefficient",
    "implicit_residual",
    "linear_expected_risk_gaussian",
    "linear_risk_ratio_variance",
    "projection_tail",
    "rescaling_bracket",
    "rescaling_coefficient",
    "rescaling_coefficient_first_order",
    "rescaling_limit_coefficient",
    "rescaling_norm",
    "symbolic_depth_limit",
    "thm54_admissible_c",
    "thm54_failure_bound",
    "thm54_probability",
]


# ----------------------------------------------------------------------------
# helpers
# ----------------------------------------------------------------------------

def _mpf(x):
    return x if isinstance(x, mp.mpf) else mp.mpf(x)


def _guard_bits(L):
    # The root's relative condition number is <= L/2 (see rescaling_norm), so
    # log2(L) bits can be lost; add them plus a fixed margin.
    if L == mp.inf:
        return 30
    return 30 + int(mp.log(L + 2, 2))


def _check_inputs(a, b, s, L, allow_inf_L=False):
    a, b, s, L = _mpf(a), _mpf(b), _mpf(s), _mpf(L)
    for name, v in (("a", a), ("b", b), ("s", s)):
        if not mp.isfinite(v):
            raise ValueError(f"{name} must be finite, got {v}")
    if s <= 0:
        raise ValueError("s = ||theta_S|| must be > 0")
    if a < 0 or b < 0:
        raise ValueError("a = ||P_perp theta_S||^2 and b = ||P_par theta_T||^2 must be >= 0")
    if mp.isnan(L) or L < 1 or (L == mp.inf and not allow_inf_L):
        raise ValueError(f"depth L must be a real number >= 1{' or mp.inf' if allow_inf_L else ''}, got {L}")
    if a == 0 and b == 0:
        raise ValueError("a = b = 0: eq. (5) gives beta_inf = 0 (theta_S in row(X) and X theta_T = 0); "
                         "there is no positive root r = ||beta_inf||")
    return a, b, s, L


def _h(x, a, b, s2, L):
    """Residual of (E) in log variables x = ln rho, divided by rho^(2p):
    h(x) = s^2 e^(2x/L) - b e^(-2 p x) - a.  Strictly increasing (see rescaling_norm)."""
    p = (L - 1) / L
    return s2 * mp.exp(2 * x / L) - b * mp.exp(-2 * p * x) - a


def _log_rho(a, b, s, L):
    """ln(r/s) at working precision (caller has added guard bits).  Inputs validated, 1 <= L < inf."""
    s2 = s * s
    if L == 1:
        return mp.log(a + b) / 2 - mp.log(s)
    if a == 0:                      # theta_S in row(X): r = ||P_par theta_T|| exactly
        return mp.log(b) / 2 - mp.log(s)
    if b == 0:                      # X theta_T = 0: s^2 rho^(2/L) = a exactly
        return (L / 2) * (mp.log(a) - 2 * mp.log(s))
    lo, hi = _bracket_log(a, b, s, L)
    if lo > hi:                     # only by rounding, when the two bounds coincide
        lo, hi = hi, lo
    if lo == hi:                    # e.g. b = s^2 - a: rho = 1 for every L
        return lo
    f = lambda x: _h(x, a, b, s2, L)
    flo, fhi = f(lo), f(hi)
    if flo == 0:
        return lo
    if fhi == 0:
        return hi
    if not (flo < 0 < fhi):         # excluded by the bracket proof; guards against rounding
        if _converged(f, lo, a, b, s2, L):
            return lo
        if _converged(f, hi, a, b, s2, L):
            return hi
        raise ValueError(f"bracket [{lo}, {hi}] does not enclose a sign change ({flo}, {fhi})")
    try:
        x = mp.findroot(f, (lo, hi), solver="anderson", verify=False)
    except (ZeroDivisionError, ValueError):
        x = None
    if x is None or not (lo <= x <= hi) or not _converged(f, x, a, b, s2, L):
        x = _bisect(f, lo, hi, flo)  # bisection-safe fallback
    if not (lo <= x <= hi) or not _converged(f, x, a, b, s2, L):
        raise ValueError("root finding for eq. (5) failed to converge")
    return x


def _converged(f, x, a, b, s2, L):
    """|h(x)| within a few rounding errors of its evaluation: each exponential has relative
    error ~ (1 + |argument|) ulp, so the noise floor is ~ (2 + 2|x|) * (sum of the terms) ulp."""
    p = (L - 1) / L
    scale = (s2 * mp.exp(2 * x / L) + b * mp.exp(-2 * p * x) + a) * (2 + 2 * abs(x))
    return abs(f(x)) <= scale * mp.mpf(2) ** (-(mp.mp.prec - 8))


def _bracket_log(a, b, s, L):
    """[ln rho_lo, ln rho_hi] (working precision, inputs validated, a, b > 0, L > 1); see
    ``rescaling_bracket`` for the proof."""
    s2 = s * s
    lo = max(mp.log(b) / 2 - mp.log(s), (L / 2) * (mp.log(a) - mp.log(s2)))
    hi = max(mp.mpf(0), (L / 2) * (mp.log(a + b) - mp.log(s2)))
    if a < s2:                      # the root lies between 1 and rho_inf = sqrt(b / (s^2 - a))
        x_inf = (mp.log(b) - mp.log(s2 - a)) / 2
        lo = max(lo, min(mp.mpf(0), x_inf))
        hi = min(hi, max(mp.mpf(0), x_inf))
    return lo, hi


def _bisect(f, lo, hi, flo):
    """Plain bisection to full working precision; f(lo) = flo < 0 < f(hi)."""
    steps = int(mp.log(hi - lo + 1, 2)) + mp.mp.prec + 64 + int(abs(mp.log(abs(lo) + abs(hi) + 1, 2)))
    for _ in range(steps):
        mid = (lo + hi) / 2
        if mid == lo or mid == hi:
            break
        fm = f(mid)
        if fm == 0:
            return mid
        if (fm < 0) == (flo < 0):
            lo, flo = mid, fm
        else:
            hi = mid
    return (lo + hi) / 2


# ----------------------------------------------------------------------------
# eq. (5): the implicit norm, its coefficient, and the L -> oo limit (6)
# ----------------------------------------------------------------------------

def rescaling_bracket(a, b, s, L):
    """Closed-form bracket [r_lo, r_hi] for the positive root r of eq. (5):

        r_lo = max( sqrt(b),  s (a/s^2)^(L/2) ),
        r_hi = max( s,        s ((a+b)/s^2)^(L/2) ),
    and, when a < s^2, r lies between s and s rho_inf, rho_inf = sqrt(b/(s^2 - a))
    (= the L -> oo value, eq. (6)), so the bracket is intersected with that range.

    Proof (rho = r/s, p = (L-1)/L).  From (E), r^2 >= b, and s^2 rho^2 >= a rho^(2p)
    gives rho^(2/L) >= a/s^2.  If rho <= 1 then r <= s; if rho > 1 then
    s^2 rho^2 = a rho^(2p) + b <= (a+b) rho^(2p), so rho^(2/L) <= (a+b)/s^2.
    If a < s^2: for rho > 1, rho^(2p) <= rho^2 so s^2 rho^2 <= a rho^2 + b, i.e.
    rho <= rho_inf; for rho < 1, rho^(2p) >= rho^2 so rho >= rho_inf.  Hence rho is
    between 1 and rho_inf (both included).  Consequently c = rho^p also lies
    between 1 (L = 1, eq. (1)) and c_inf = rho_inf (eq. (6)).  It is moreover
    monotone in L: with x = ln rho, at the root dh/dL = -2 a x / L^2, so
    dx/dL = 2 a x / (L^2 h'(x)) has the sign of x and |x|, |p x| grow with L.
    L = 1 returns r_lo = r_hi = sqrt(a + b).
    """
    a, b, s, L = _check_inputs(a, b, s, L)
    with mp.workprec(mp.mp.prec + _guard_bits(L)):
        if L == 1:
            r = mp.sqrt(a + b)
            lo = hi = r
        elif a == 0 or b == 0:
            lo = hi = s * mp.exp(_log_rho(a, b, s, L))
        else:
            xlo, xhi = _bracket_log(a, b, s, L)
            lo, hi = s * mp.exp(xlo), s * mp.exp(xhi)
    return +lo, +hi


def implicit_residual(r, a, b, s, L):
    """Residual of eq. (5) in norm form: r^2 - a (r/s)^(2(L-1)/L) - b.

    Zero at r = ||beta_inf||; for L >= 2 and b = 0 it also vanishes at the
    spurious r = 0 (see ``rescaling_norm``)."""
    a, b, s, L = _check_inputs(a, b, s, L)
    r = _mpf(r)
    with mp.workprec(mp.mp.prec + _guard_bits(L)):
        p = (L - 1) / L
        value = r * r - a * (r / s) ** (2 * p) - b
    return +value


def rescaling_norm(a, b, s, L):
    """r = ||beta_inf||, the positive root of eq. (5):  r^2 = a (r/s)^(2(L-1)/L) + b.

    Arguments: a = ||P_perp theta_S||^2 >= 0, b = ||P_par theta_T||^2 >= 0
    (not both 0), s = ||theta_S|| > 0, depth L >= 1 (any real; L = mp.inf gives
    the limit s * rescaling_limit_coefficient).  Physically a <= s^2, but the
    root is well defined for any a >= 0 and it is not required.

    Existence and uniqueness.  Put rho = r/s, x = ln rho, p = (L-1)/L in [0, 1).
    Dividing (E) by rho^(2p) > 0, positive roots of (E) are exactly the roots of

        h(x) = s^2 e^(2x/L) - b e^(-2px) - a,     x in R.

    h is continuous and strictly increasing: h'(x) = (2/L) s^2 e^(2x/L)
    + 2 p b e^(-2px) > 0 (first term > 0 for every finite L).  As x -> +oo,
    h -> +oo; as x -> -oo, h -> -oo if b > 0 and p > 0, and h -> -a < 0 if
    b = 0 < a.  (For L = 1, p = 0: h = s^2 e^(2x) - (a + b), root
    r = sqrt(a + b), c = 1 -- Thm 4.1.)  Hence exactly one positive root
    whenever a + b > 0; if a = b = 0, h > 0 everywhere, there is no positive
    root (beta_inf = 0) and ValueError is raised.  Closed-form bracket: see
    ``rescaling_bracket``; the root is found in x by ``mp.findroot`` (Anderson's
    bracketing method, bisection fallback) and checked to lie in the bracket
    with a residual at working precision; ValueError otherwise.

    Edge cases.  a = 0 (theta_S in row(X)): r = sqrt(b).  b = 0 (X theta_T = 0)
    and L >= 2: r = s (a/s^2)^(L/2) > 0; note that r = 0 then *also* solves
    eq. (5) (c = 0), so eq. (5) alone does not pin beta_inf.  Gradient flow
    picks the positive root: ||beta(t)|| = ||W_1(t)||^L >= ||P_perp W_1(0)||^L
    = s (a/s^2)^(L/2) for balanced weights, which is exactly this root.

    Accuracy: at the root s^2 e^(2x/L) = a + b e^(-2px), so
    h'(x) >= (1/L) (s^2 e^(2x/L) + a + b e^(-2px)): a relative residual eta moves
    x (= the relative error of r) by at most L eta.  Working precision carries
    30 + log2(L) guard bits, and the convergence test allows for the (1 + |x|)
    amplification of rounding in the exponentials (huge or tiny r/s).
    """
    a, b, s, L = _check_inputs(a, b, s, L, allow_inf_L=True)
    if L == mp.inf:
        with mp.workprec(mp.mp.prec + 30):
            r = s * _limit(a, b, s)
        return +r
    with mp.workprec(mp.mp.prec + _guard_bits(L)):
        r = s * mp.exp(_log_rho(a, b, s, L))
    return +r


def rescaling_coefficient(a, b, s, L):
    """c = (||beta_inf|| / ||theta_S||)^((L-1)/L), the coefficient of P_perp theta_S in eq. (5).

    Same arguments and domain as ``rescaling_norm``.  L = 1 gives exactly 1
    (Thm 4.1); L = mp.inf gives ``rescaling_limit_coefficient`` (eq. (6)).
    Computed as exp(p ln rho) from the log-space root, so it is accurate even
    when r/s under- or overflows ordinary floats (huge L).
    """
    a, b, s, L = _check_inputs(a, b, s, L, allow_inf_L=True)
    if L == 1:
        return mp.mpf(1)
    if L == mp.inf:
        return rescaling_limit_coefficient(a, b, s)
    with mp.workprec(mp.mp.prec + _guard_bits(L)):
        c = mp.exp((L - 1) / L * _log_rho(a, b, s, L))
    return +c


def _limit(a, b, s):
    q = s * s - a                   # ||P_par theta_S||^2
    if q <= 0:
        if b == 0 and q == 0:
            return mp.mpf(1)        # a = s^2, b = 0: rho = 1 for every L
        raise ValueError("eq. (6) needs P_par theta_S != 0, i.e. a < s^2: with a = s^2 and b > 0 the "
                         "coefficient (r/s)^((L-1)/L) diverges as L -> oo")
    return mp.sqrt(b / q)


def rescaling_limit_coefficient(a, b, s):
    """lim_{L -> oo} c_L = sqrt(b / (s^2 - a)) = ||P_par theta_T|| / ||P_par theta_S||  (eq. (6)).

    Derivation from eq. (5).  Let rho_L be the root of (E) and
    F(rho, eps) = s^2 rho^2 - a rho^(2 - 2 eps) - b with eps = 1/L.  F is smooth
    near eps = 0 and F_rho(rho, 0) = 2 (s^2 - a) rho > 0 when
    ||P_par theta_S||^2 = s^2 - a > 0, so by the implicit function theorem
    rho(eps) -> rho_inf solving (s^2 - a) rho^2 = b, i.e.
    rho_inf = ||P_par theta_T|| / ||P_par theta_S||, and c_L = rho_L^(1 - 1/L) -> rho_inf.
    So eq. (6) *does* follow from eq. (5).  The approach is only O(1/L); see
    ``rescaling_coefficient_first_order``.

    Degenerate cases: a = s^2 (theta_S orthogonal to row(X)) and b > 0: c_L -> oo,
    ValueError; a = s^2 and b = 0: c_L = 1 for all L, returns 1.
    """
    a, b, s, _ = _check_inputs(a, b, s, 2)
    with mp.workprec(mp.mp.prec + 30):
        c = _limit(a, b, s)
    return +c


def rescaling_coefficient_first_order(a, b, s, L):
    """c_inf * (1 - s^2 ln(c_inf) / ((s^2 - a) L)), the O(1/L) expansion of c_L.

    From the implicit function theorem on F(rho, eps) of
    ``rescaling_limit_coefficient``: F_eps = 2 a rho^2 ln rho,
    d rho/d eps = -a rho ln rho / (s^2 - a), and c = rho^(1 - eps) gives
    dc/d eps = -rho ln rho * s^2 / (s^2 - a) at eps = 0 (sympy check in
    ``symbolic_depth_limit``).  The expansion is informative only once
    L >> 2 a |ln c_inf| / (s^2 - a) ~ 2 (d/n) |ln c_inf| for Gaussian X: the limit (6)
    is approached slowly when n << d.
    """
    a, b, s, L = _check_inputs(a, b, s, L)
    with mp.workprec(mp.mp.prec + 30):
        c = _limit(a, b, s)
        s2 = s * s
        value = c * (1 - s2 * mp.log(c) / ((s2 - a) * L)) if c > 0 else mp.mpf(0)
    return +value


def symbolic_depth_limit():
    """The L -> oo limit of eq. (5)'s coefficient, and its 1/L correction, by sympy.

    sympy cannot take the limit of an implicitly defined root directly, so:
    (i) ``sp.limit`` of the defining equation s^2 rho^2 - a rho^(2 - 2/L) - b as
    L -> oo (with a = s^2 - q, q > 0) gives q rho^2 - b; solving for rho > 0 gives rho_inf;
    (ii) ``sp.limit`` of the coefficient rho^((L-1)/L) as L -> oo at fixed rho
    gives rho, so c_inf = rho_inf (justified by the implicit function theorem,
    F_rho = 2 (s^2 - a) rho != 0, see ``rescaling_limit_coefficient``);
    (iii) implicit differentiation in eps = 1/L gives the first-order term.

    Returns a dict of sympy objects:
      "symbols": (a, b, s, L, rho, q) with q = ||P_par theta_S||^2 = s^2 - a,
      "limit_equation": the L -> oo equation (s^2 - a) rho^2 - b,
      "limit": c_inf in terms of a, b, s,
      "limit_paper_form": c_inf with s^2 - a = q, i.e. sqrt(b)/sqrt(q) = ||P_par theta_T||/||P_par theta_S||,
      "first_order": C with c_L = c_inf + C / L + O(1/L^2),
      "check_paper_form": bool, "limit" equals sqrt(b/q) after substituting a = s^2 - q.
    """
    import sympy as sp

    a, b, s, L, rho, q, eps = sp.symbols("a b s L rho q epsilon", positive=True)
    # write a = s^2 - q with q = ||P_par theta_S||^2 > 0 so that sympy knows the sign of s^2 - a
    eq = s**2 * rho**2 - (s**2 - q) * rho**(2 - 2 / L) - b
    eq_inf = sp.expand(sp.limit(eq, L, sp.oo))
    sols = [r for r in sp.solve(sp.Eq(eq_inf, 0), rho) if r.is_positive]
    if len(sols) != 1:
        raise RuntimeError(f"unexpected solutions of the L -> oo equation: {sols}")
    rho_inf = sp.simplify(sols[0])
    paper = sp.simplify(sp.limit(rho**((L - 1) / L), L, sp.oo).subs(rho, rho_inf))
    check = sp.simplify(paper - sp.sqrt(b) / sp.sqrt(q)) == 0
    c_lim = paper.subs(q, s**2 - a)
    F = s**2 * rho**2 - (s**2 - q) * rho**(2 - 2 * eps) - b
    drho = -sp.diff(F, eps) / sp.diff(F, rho)                 # d rho / d eps on F = 0
    c_eps = rho**(1 - eps)
    dc = (sp.diff(c_eps, eps) + sp.diff(c_eps, rho) * drho).subs(eps, 0)
    derived = dc.subs(rho, rho_inf)
    closed = -rho_inf * s**2 * sp.log(rho_inf) / q          # the hand-derived form
    # proved symbolically (a numerical fallback here would let a failing proof pass as a spot check)
    same = sp.simplify(sp.expand_log(derived - closed, force=True)) == 0
    if not same:
        raise RuntimeError(f"first-order term mismatch: {derived} vs {closed}")
    first = closed.subs(q, s**2 - a)
    return {
        "symbols": (a, b, s, L, rho, q),
        "limit_equation": eq_inf.subs(q, s**2 - a),
        "limit": c_lim,
        "limit_paper_form": paper,
        "first_order": first,
        "check_paper_form": bool(check),
    }


# ----------------------------------------------------------------------------
# risk: eq. (7) (and its finite-L analogue), Thm 5.3 / eq. (8)
# ----------------------------------------------------------------------------

def finetune_risk_quadratic(q_tt, q_ts, q_ss, coefficient):
    """R = ||Sigma^{1/2} P_perp (theta_T - c theta_S)||^2 = q_tt - 2 c q_ts + c^2 q_ss.

    q_tt = (P_perp theta_T)^T Sigma (P_perp theta_T), q_ts = (P_perp theta_T)^T Sigma
    (P_perp theta_S), q_ss = (P_perp theta_S)^T Sigma (P_perp theta_S) (any PSD Sigma;
    Sigma = I gives plain squared norms).  With c = rescaling_coefficient(.., L)
    this is the exact population risk of eq. (5)'s predictor at depth L
    (theta_T - beta_inf = P_perp (theta_T - c theta_S), E x x^T = Sigma); with
    c = rescaling_limit_coefficient it is eq. (7); with c = 1 it is eq. (2).
    Cancels catastrophically when the risk is tiny relative to q_tt (aligned
    tasks); prefer ``finetune_risk_vectors`` there.
    """
    q_tt, q_ts, q_ss, c = map(_mpf, (q_tt, q_ts, q_ss, coefficient))
    with mp.workprec(mp.mp.prec + 20):
        value = q_tt - 2 * c * q_ts + c * c * q_ss
    return +value


def finetune_risk_vectors(perp_theta_T, perp_theta_S, coefficient, sigma_diag=None):
    """R = sum_i sigma_i (u_i - c v_i)^2 with u = P_perp theta_T, v = P_perp theta_S
    (sequences of numbers, in the eigenbasis of a diagonal Sigma = diag(sigma); None -> I).
    Cancellation-free form of ``finetune_risk_quadratic``."""
    u = [_mpf(x) for x in perp_theta_T]
    v = [_mpf(x) for x in perp_theta_S]
    if len(u) != len(v):
        raise ValueError("P_perp theta_T and P_perp theta_S must have the same length")
    w = [mp.mpf(1)] * len(u) if sigma_diag is None else [_mpf(x) for x in sigma_diag]
    if len(w) != len(u) or any(x < 0 for x in w):
        raise ValueError("sigma_diag must be nonnegative and of the same length")
    c = _mpf(coefficient)
    with mp.workprec(mp.mp.prec + 20):
        value = mp.fsum(wi * (ui - c * vi) ** 2 for wi, ui, vi in zip(w, u, v))
    return +value


def aligned_task_risk(alpha, q_ss, coefficient):
    """theta_T = alpha theta_S: R = (alpha - c)^2 ||Sigma^{1/2} P_perp theta_S||^2 (q_ss).

    Exact at any depth given c; the aligned-case inputs of eq. (5) are
    b = alpha^2 (s^2 - a)."""
    alpha, q_ss, c = map(_mpf, (alpha, q_ss, coefficient))
    with mp.workprec(mp.mp.prec + 20):
        value = (alpha - c) ** 2 * q_ss
    return +value


def aligned_task_deep_limit_risk(alpha, a, s, q_ss):
    """Thm 5.3, L -> oo: R(beta) via eq. (7) with theta_T = alpha theta_S, alpha > 0.

    c_inf = ||P_par alpha theta_S|| / ||P_par theta_S|| = |alpha| = alpha, so
    R = (alpha - alpha)^2 q_ss = 0 (needs P_par theta_S != 0, i.e. a < s^2).
    For alpha < 0 (outside the theorem) c_inf = |alpha| and R = 4 alpha^2 q_ss.
    Computed, not hard-coded: returns (|alpha| - alpha)^2 q_ss via the limit of eq. (5).
    """
    alpha, a, s, q_ss = map(_mpf, (alpha, a, s, q_ss))
    if alpha == 0:
        raise ValueError("alpha = 0 gives theta_T = 0 (b = 0) and a degenerate limit")
    with mp.workprec(mp.mp.prec + 20):
        c = rescaling_limit_coefficient(a, alpha ** 2 * (s * s - a), s)
        value = (alpha - c) ** 2 * q_ss
    return +value


def aligned_task_linear_risk(alpha, q_tt):
    """Eq. (8): R(gamma) = ((alpha - 1)/alpha)^2 ||Sigma^{1/2} P_perp theta_T||^2 (q_tt), alpha != 0."""
    alpha, q_tt = _mpf(alpha), _mpf(q_tt)
    if alpha == 0:
        raise ValueError("eq. (8) needs alpha != 0")
    with mp.workprec(mp.mp.prec + 20):
        value = ((alpha - 1) / alpha) ** 2 * q_tt
    return +value


# ----------------------------------------------------------------------------
# Thm 5.4: bounds (9), (10) as printed (Sigma = I, Gaussian X, n <= d)
# ----------------------------------------------------------------------------

def _nd(n, d):
    n, d = _mpf(n), _mpf(d)
    if not (0 <= n <= d) or d <= 0:
        raise ValueError("need 0 <= n <= d, d > 0")
    return n, d


def eq9_deep_risk_bound(n, d, eps, norm_theta_T, dist_hat, zeta=None):
    """Eq. (9) as printed:
    (d-n)/d (1+eps)^2 ||theta_T||^2 ||theta_hat_T - theta_hat_S||^2 + (d-n)/d zeta^2,
    with zeta = zeta(||theta_T||) "~ eps ||theta_T||" (the paper does not define it
    further; default zeta = eps ||theta_T||).  ``dist_hat`` = ||theta_hat_T - theta_hat_S||."""
    n, d = _nd(n, d)
    eps, nt, dh = _mpf(eps), _mpf(norm_theta_T), _mpf(dist_hat)
    if eps <= 0:
        raise ValueError("eps must be > 0")
    with mp.workprec(mp.mp.prec + 20):
        z = eps * nt if zeta is None else _mpf(zeta)
        f = (d - n) / d
        value = f * (1 + eps) ** 2 * nt ** 2 * dh ** 2 + f * z ** 2
    return +value


def eq10_linear_risk_bound(n, d, eps, dist):
    """Eq. (10) as printed: (d-n)/d (1+eps)^2 ||theta_T - theta_S||^2 (``dist`` = ||theta_T - theta_S||)."""
    n, d = _nd(n, d)
    eps, dist = _mpf(eps), _mpf(dist)
    if eps <= 0:
        raise ValueError("eps must be > 0")
    with mp.workprec(mp.mp.prec + 20):
        value = (d - n) / d * (1 + eps) ** 2 * dist ** 2
    return +value


def thm54_probability(n, d, eps, c):
    """1 - 4 exp(-c eps^2 n) - 4 exp(-c eps^2 (d - n)), Thm 5.4's success probability.
    The constant c > 0 is unspecified in the paper, so it must be supplied.  Note it is
    < 0 (vacuous) whenever n or d - n is small, e.g. always at n = d."""
    n, d = _nd(n, d)
    eps, c = _mpf(eps), _mpf(c)
    with mp.workprec(mp.mp.prec + 20):
        value = 1 - 4 * mp.exp(-c * eps ** 2 * n) - 4 * mp.exp(-c * eps ** 2 * (d - n))
    return +value


def thm54_failure_bound(n, d, eps, c):
    """4 exp(-c eps^2 n) + 4 exp(-c eps^2 (d - n)): Thm 5.4's failure probability, 1 - thm54_probability,
    computed without the cancellation of 1 - (1 - tiny) (it is ~1e-35 at c = 1/50, eps = 64, n = 1)."""
    n, d = _nd(n, d)
    eps, c = _mpf(eps), _mpf(c)
    with mp.workprec(mp.mp.prec + 20):
        value = 4 * mp.exp(-c * eps ** 2 * n) + 4 * mp.exp(-c * eps ** 2 * (d - n))
    return +value


def linear_expected_risk_gaussian(n, d, dist_sq):
    """E_X R(gamma) = (d-n)/d ||theta_T - theta_S||^2 for Sigma = I, Gaussian X (row(X) is a
    uniformly random n-plane), the centre around which (10) puts its (1+eps)^2 band."""
    n, d = _nd(n, d)
    dist_sq = _mpf(dist_sq)
    with mp.workprec(mp.mp.prec + 20):
        value = (d - n) / d * dist_sq
    return +value


def linear_risk_ratio_variance(n, d):
    """Var[R(gamma) / E R(gamma)] = 2 n / ((d - n)(d + 2)) for Sigma = I, Gaussian X, 0 < n < d.

    R(gamma) = ||P_perp Delta||^2 (eq. 2, Delta = theta_T - theta_S) with P_perp the projection
    onto a uniformly random (d-n)-plane, so R / ||Delta||^2 ~ Beta((d-n)/2, n/2) (the ratio
    chi^2_{d-n} / (chi^2_{d-n} + chi^2_n) of a Gaussian vector's squared parts): mean (d-n)/d,
    variance 2 n (d-n) / (d^2 (d+2)).  The ratio to the mean therefore has standard deviation
    sqrt(2 gamma / ((1 - gamma)(d + 2))) at n = gamma d: it concentrates at 1 like 1/sqrt(d)."""
    n, d = _nd(n, d)
    if not 0 < n < d:
        raise ValueError("need 0 < n < d")
    with mp.workprec(mp.mp.prec + 20):
        value = 2 * n / ((d - n) * (d + 2))
    return +value


def projection_tail(m, d, x):
    """P(||P z||^2 > x ||z||^2) for a fixed z != 0 and P the projection onto a uniformly random
    m-plane of R^d: the upper tail of Beta(m/2, (d-m)/2) at x (1 for x < 0, 0 for x >= 1).

    Eq. (10) fails exactly when ||P_perp Delta_hat||^2 > (1+eps)^2 (d-n)/d, so with m = d - n this
    is its exact failure probability (and it is 0 once (1+eps)^2 >= d/(d-n): (10) cannot fail).
    It is also Lemma 5.3.2 of Vershynin's book, which the paper's proof invokes, made exact: by
    Dasgupta & Gupta (2003, Lemma 2.2) projection_tail(m, d, beta m/d) <= exp(m/2 (1 - beta + ln beta))
    <= exp(-eps^2 m / 2) at beta = (1+eps)^2, i.e. the lemma's upper side holds with c = 1/2."""
    m, d = _nd(m, d)
    x = _mpf(x)
    if x < 0:
        return mp.mpf(1)
    if x >= 1 or m == 0:
        return mp.mpf(0)
    if m == d:
        return mp.mpf(1)
    with mp.workprec(mp.mp.prec + 20):
        value = mp.betainc(m / 2, (d - m) / 2, x, 1, regularized=True)
    return +value


def thm54_admissible_c(n, d, eps, failure):
    """sup{c > 0 : 4 exp(-c eps^2 n) + 4 exp(-c eps^2 (d-n)) >= failure}.

    Thm 5.4's failure probability is decreasing in its unspecified constant c, so a failure
    probability p (exact, or a lower confidence bound of an observed fraction) is compatible with
    exactly the constants c in (0, thm54_admissible_c(n, d, eps, p)].  Returns mp.inf when p <= 0
    (every c) or when the form cannot fall below p (a term with exponent 0, e.g. n = d, keeps it
    >= 4), and 0 when p > 8 is impossible to meet."""
    n, d = _nd(n, d)
    eps, p = _mpf(eps), _mpf(failure)
    if eps <= 0:
        raise ValueError("eps must be > 0")
    with mp.workprec(mp.mp.prec + 20):
        rates = [eps ** 2 * n, eps ** 2 * (d - n)]
        floor = 4 * sum(1 for r in rates if r == 0)       # terms that do not decay with c
        if p <= floor:
            return mp.inf
        if p > 8:
            return mp.mpf(0)
        g = lambda c: sum(4 * mp.exp(-c * r) for r in rates) - p     # strictly decreasing in c
        lo, hi = mp.mpf(0), 1 / max(rates)
        while g(hi) > 0:
            lo, hi = hi, 2 * hi
        for _ in range(mp.mp.prec + 10):                  # bisection to working precision
            mid = (lo + hi) / 2
            if mid in (lo, hi):
                break
            lo, hi = (mid, hi) if g(mid) > 0 else (lo, mid)
        value = (lo + hi) / 2
    return +value


def eq9_tail_constant_n1(d, theta, zeta_ratio=1):
    """lim_{eps -> oo} eps P(R(beta) > bound (9)) for n = 1 (Sigma = I, Gaussian x), with
    zeta = zeta_ratio * eps * ||theta_T||:

        A = 2 sin(theta) / (pi k),   k = sqrt((d-1)/d (D^2 + zeta_ratio^2)),   D = 2 sin(theta/2),

    theta the angle between theta_S and theta_T (A does not depend on their norms).

    Derivation.  With one row x, P_par = x_hat x_hat^T and eq. (6)'s coefficient is
    (||theta_T|| / ||theta_S||) kappa, kappa = |a| / |b|, a = <x, theta_hat_T>, b = <x, theta_hat_S>
    (jointly normal, correlation cos(theta)).  Eq. (7) is then
    R / ||theta_T||^2 = ||P_perp(theta_hat_T - kappa theta_hat_S)||^2 = kappa^2 - 2 kappa cos(theta) + O(1),
    and bound (9) / ||theta_T||^2 = (d-1)/d (D^2 + zeta_ratio^2) eps^2 (1 + O(1/eps)), so (9) fails when
    kappa > k eps (1 + O(1/eps)).  b/a is Cauchy with location cos(theta) and scale sin(theta), whose
    density at 0 is sin(theta)/pi, so P(kappa > K) = P(|b/a| < 1/K) = 2 sin(theta)/(pi K) + O(K^-2).
    Hence P(fail) ~ A / eps: a polynomial tail in eps, while Thm 5.4's failure probability
    4 exp(-c eps^2) + 4 exp(-c eps^2 (d-1)) is sub-Gaussian in eps, for every c > 0."""
    d, theta, z = _mpf(d), _mpf(theta), _mpf(zeta_ratio)
    if d < 2 or not (0 <= theta <= mp.pi) or z < 0:
        raise ValueError("need d >= 2, 0 <= theta <= pi, zeta_ratio >= 0")
    with mp.workprec(mp.mp.prec + 20):
        k = mp.sqrt((d - 1) / d * (4 * mp.sin(theta / 2) ** 2 + z ** 2))
        value = 2 * mp.sin(theta) / (mp.pi * k) if k > 0 else mp.inf
    return +value


# ----------------------------------------------------------------------------
# Thm 5.5: frozen first layer
# ----------------------------------------------------------------------------

def frozen_first_layer_coefficient(xs_dot_xt, xs_norm2):
    """Thm 5.5: with W_1 frozen, beta(t) = c(t) theta_S (W_1(0) = s^(1/L) theta_hat_S u^T is rank
    one under balancedness).  If fine-tuning converges to a minimiser of the training loss
    along that line, c = <X theta_S, X theta_T> / ||X theta_S||^2 (arguments: that inner
    product and ||X theta_S||^2 > 0).  Zero training loss (Assumption 3.3) then generally fails."""
    num, den = _mpf(xs_dot_xt), _mpf(xs_norm2)
    if den <= 0:
        raise ValueError("||X theta_S||^2 must be > 0")
    with mp.workprec(mp.mp.prec + 10):
        value = num / den
    return +value
