"""Fine-tuning risk under a non-isotropic target covariance (Shachaf, Brutzkus &
Globerson, fine-tuning with linear teachers, Sec. 4, Thm 4.2, bound (3), Fig. 1),
in mpmath.

Setting: rows of X (n < d) i.i.d. N(0, Sigma), P_perp projects onto the null space
of X, Delta = theta_T - theta_S.  By Thm 4.1 the fine-tuned risk is

    R = ||Sigma^{1/2} P_perp Delta||^2 = Delta^T P_perp Sigma P_perp Delta,

the bias of the min-norm interpolator with "true" vector Delta.

Spectra are given per dimension: a sequence of pairs (w, lam), the fraction w of
the d eigenvalues equal to lam (the w sum to 1).  Fig. 1: ((1/20, 3/2), (19/20, 3/10)).

**Expected risk at finite n.**  For Sigma = lam I, row(X) is a uniformly random
n-plane, so E R = lam (d - n)/d ||Delta||^2 exactly (``isotropic_expected_risk``).
For a general Sigma there is no closed form at finite (n, d); we use the
deterministic equivalent of the ridgeless bias (Hastie, Montanari, Rosset &
Tibshirani, Ann. Statist. 2022, the paper's ref. [26]; Bach, SIAM J. Math. Data
Sci. 2024): with gamma = n/d and kappa > 0 the root of

    sum_j w_j lam_j / (lam_j + kappa) = gamma,                                   (K)

    E[P_perp Sigma P_perp] ~ kappa^2 Sigma (Sigma + kappa)^{-2} / (1 - df2/gamma),
    df2 = sum_j w_j lam_j^2 / (lam_j + kappa)^2,

so for Delta inside an eigenspace of eigenvalue lam_b (any direction in it)

    E R ~ ||Delta||^2 kappa^2 lam_b / (lam_b + kappa)^2 / (1 - df2/gamma).       (D)

(D) is exact for Sigma = lam I (kappa = lam (d - n)/n gives lam (d - n)/d) and
holds as n, d -> oo at fixed gamma and spectrum shape; at finite d the
Monte-Carlo mean differs by O(1/d).  The checker verifies (D) by extrapolating
simulated means over d, 2d, 4d to 1/d -> 0 (theorems/shachaf_covariance.py).  For a
two-level spectrum (K) is a quadratic with the closed-form root
``deq_kappa_two_level``; ``deq_kappa`` solves (K) for any spectrum by bracketed root
finding (the two are independent routes and agree to working precision).

**Crossover.**  At equal ||Delta||, (D) for Delta in the top span (eigenvalue lam_t,
"Bottom Eigen Align") equals (D) for Delta in the bottom span (lam_b, "Top Eigen
Align") iff lam_t (lam_b + kappa)^2 = lam_b (lam_t + kappa)^2, i.e. kappa =
sqrt(lam_t lam_b); by (K) that is at

    n*/d = w_t sqrt(lam_t)/(sqrt(lam_t) + sqrt(lam_b)) + w_b sqrt(lam_b)/(sqrt(lam_t) + sqrt(lam_b)),

0.3281 for Fig. 1 (``crossover_fraction``).

**Bound (3) and its proof.**  The supplementary proof is not in the paper text; the
sketch (split Delta into its top-m and bottom parts, Davis-Kahan for the former)
fills in as follows, with E = ||Sigma~ - Sigma||, Sigma~ = X^T X / n:

  (i)  X P_perp = 0 gives P_perp Sigma~ = 0, so for any v
       ||Sigma^{1/2} P_perp v||^2 = v^T P_perp (Sigma - Sigma~) P_perp v <= E ||P_perp v||^2;
  (ii) Davis-Kahan with gap lam_m - 0 (the null space of Sigma~ has eigenvalue 0):
       P_perp (Sigma~ - Sigma) V_m = -P_perp V_m Lambda_m, so ||P_perp V_m|| <= E / lam_m;
  (iii) (a + b)^2 <= 2 a^2 + 2 b^2 with a, b the top and bottom parts.

Hence R <= 2 E^3 ||P_<=m Delta||^2 / lam_m^2 + 2 E ||P_>m Delta||^2 for every X: bound (3)
with g replaced by the realized E, an inequality with explicit constants.  Thm 4.2
then uses ||Sigma~ - Sigma|| <= g = c lam_1 max{sqrt(r/n), r/n, sqrt(delta/n), delta/n}
(r = tr(Sigma)/lam_1) with probability >= 1 - e^-delta (Koltchinskii & Lounici 2017,
the paper's ref. [44]), with c unspecified: ``g_shape`` is g / (c lam_1).

**What the constant decides.**  At equal ||Delta||, bound (3) is 2 g^3 ||Delta||^2/lam_m^2
for Delta in the top span and 2 g ||Delta||^2 for Delta in the bottom span; their ratio is
g^2 / lam_m^2, so the bound ranks "Bottom Eigen Align" first only where g < lam_m.  For
n < d, g >= c lam_1 sqrt(max(r, delta)/n) > c lam_1 sqrt(max(r, delta)/d), so every
c >= ``ranking_threshold_constant`` = (lam_m/lam_1) sqrt(d / max(r, delta)) keeps
g > lam_m at every n < d (2.04 for Fig. 1 at delta = 1).

All functions take mpmath numbers (ints, strings and Fractions are converted at the
caller's precision) and return mpmath numbers rounded to the caller's precision;
work is done with guard bits inside ``mp.workprec``; the global precision is never
changed.
"""

from __future__ import annotations

import mpmath as mp

__all__ = [
    "crossover_fraction",
    "deq_block_risk",
    "deq_kappa",
    "deq_kappa_two_level",
    "deq_min_norm_risk",
    "effective_rank_fraction",
    "g_shape",
    "isotropic_expected_risk",
    "order_statistic_lower_index",
    "ranking_threshold_constant",
    "two_level_spectrum",
    "zero_risk_fraction",
]

GUARD_BITS = 30


def _mpf(x):
    if isinstance(x, mp.mpf):
        return x
    if hasattr(x, "numerator") and hasattr(x, "denominator"):      # Fraction, sympy Rational
        return mp.mpf(int(x.numerator)) / int(x.denominator)
    return mp.mpf(x)


def _spectrum(spectrum):
    pairs = [(_mpf(w), _mpf(lam)) for w, lam in spectrum]
    if not pairs or any(w <= 0 or lam <= 0 for w, lam in pairs):
        raise ValueError("a spectrum is a non-empty sequence of (fraction > 0, eigenvalue > 0) pairs")
    total = sum(w for w, _ in pairs)
    if abs(total - 1) > mp.mpf("1e-12"):
        raise ValueError(f"spectrum fractions must sum to 1, got {total}")
    return [(w / total, lam) for w, lam in pairs]      # exact when given exactly; else renormalized


def _gamma(gamma):
    gamma = _mpf(gamma)
    if not 0 < gamma < 1:
        raise ValueError(f"gamma = n/d must lie in (0, 1), got {gamma}")
    return gamma


def two_level_spectrum(top_frac, top_eig, bottom_eig):
    """((top_frac, top_eig), (1 - top_frac, bottom_eig)): Fig. 1's shape (m/d = 1/20, 3/2 vs 3/10).

    Values are kept as given (a Fraction stays exact) and converted where they are used."""
    if not 0 < top_frac < 1:
        raise ValueError(f"top_frac must lie in (0, 1), got {top_frac}")
    return ((top_frac, top_eig), (1 - top_frac, bottom_eig))


def effective_rank_fraction(spectrum):
    """r/d = tr(Sigma) / (d lam_1): the effective rank of Koltchinskii & Lounici, per dimension."""
    with mp.workprec(mp.mp.prec + GUARD_BITS):
        pairs = _spectrum(spectrum)
        value = sum(w * lam for w, lam in pairs) / max(lam for _, lam in pairs)
    return +value


def _k_residual(kappa, gamma, pairs):
    return sum(w * lam / (lam + kappa) for w, lam in pairs) - gamma


def _kappa(gamma, pairs):
    """Root of (K) at the working precision (inputs validated; the caller holds the guard bits)."""
    lo = min(lam for _, lam in pairs) * (1 - gamma) / gamma
    hi = max(lam for _, lam in pairs) * (1 - gamma) / gamma
    if lo == hi:                                         # one eigenvalue, Sigma = lam I: exact
        return lo
    f = lambda k: _k_residual(k, gamma, pairs)
    try:
        kappa = mp.findroot(f, (lo, hi), solver="anderson", verify=False)
    except (ZeroDivisionError, ValueError):
        kappa = None
    if kappa is not None and lo <= kappa <= hi and abs(f(kappa)) <= mp.mpf(2) ** (-(mp.mp.prec - 12)):
        return kappa
    for _ in range(mp.mp.prec + 64):                     # bisection-safe fallback; f(lo) >= 0 >= f(hi)
        mid = (lo + hi) / 2
        if mid in (lo, hi):
            break
        lo, hi = (mid, hi) if f(mid) > 0 else (lo, mid)
    return (lo + hi) / 2


def deq_kappa(gamma, spectrum):
    """The root kappa > 0 of (K), by bracketed root finding (any spectrum).

    The left side of (K) falls strictly from 1 (kappa = 0) to 0, so the root is
    unique, and each term lam/(lam + kappa) lies between its values at lam_min and
    lam_max, which brackets it: kappa in [lam_min (1-gamma)/gamma, lam_max (1-gamma)/gamma]."""
    with mp.workprec(mp.mp.prec + GUARD_BITS):
        kappa = _kappa(_gamma(gamma), _spectrum(spectrum))
    return +kappa


def deq_kappa_two_level(gamma, top_frac, top_eig, bottom_eig):
    """The root of (K) for a two-level spectrum in closed form.

    Clearing denominators, (K) is gamma k^2 + b k - (1 - gamma) lam_t lam_b = 0 with
    b = gamma (lam_t + lam_b) - (w_t lam_t + w_b lam_b); its positive root, written
    without cancellation for either sign of b."""
    with mp.workprec(mp.mp.prec + GUARD_BITS):
        gamma = _gamma(gamma)
        (wt, lt), (wb, lb) = _spectrum(two_level_spectrum(top_frac, top_eig, bottom_eig))
        b = gamma * (lt + lb) - (wt * lt + wb * lb)
        c = (1 - gamma) * lt * lb
        root = mp.sqrt(b * b + 4 * gamma * c)
        kappa = (root - b) / (2 * gamma) if b <= 0 else 2 * c / (b + root)
    return +kappa


def deq_block_risk(gamma, spectrum, block_eig, kappa=None):
    """(D): E R per unit ||Delta||^2 for Delta in the eigenspace of ``block_eig``."""
    with mp.workprec(mp.mp.prec + GUARD_BITS):
        gamma, pairs, lam = _gamma(gamma), _spectrum(spectrum), _mpf(block_eig)
        if all(lam != l for _, l in pairs):
            raise ValueError(f"{lam} is not an eigenvalue of the spectrum")
        kappa = _kappa(gamma, pairs) if kappa is None else _mpf(kappa)
        df2 = sum(w * (l / (l + kappa)) ** 2 for w, l in pairs)
        value = kappa**2 * lam / (lam + kappa) ** 2 / (1 - df2 / gamma)
    return +value


def deq_min_norm_risk(gamma, spectrum, delta2, sigma):
    """Deterministic equivalent of E R for w = w0 + X^+ (y - X w0), y = X theta + noise (std sigma), with
    Delta = theta - w0 isotropic (E Delta Delta^T = delta2 I / d): the fine-tuned interpolator's
    excess risk, averaged over the task's direction,

        E R ~ delta2 kappa^2 sum_j w_j lam_j / (lam_j + kappa)^2 / (1 - df2/gamma) + sigma^2 df2 / (gamma - df2),

    bias (the block formula (D) averaged over the spectrum) plus variance.  It depends on the design
    only through Sigma's spectrum: the two-moment (universal) prediction.  For Sigma = I it is
    (1 - gamma) delta2 + sigma^2 gamma / (1 - gamma) (Features-are-fate eq. (10) and Shachaf eq. (2))."""
    with mp.workprec(mp.mp.prec + GUARD_BITS):
        gamma, pairs = _gamma(gamma), _spectrum(spectrum)
        delta2, sigma = _mpf(delta2), _mpf(sigma)
        kappa = _kappa(gamma, pairs)
        df2 = sum(w * (l / (l + kappa)) ** 2 for w, l in pairs)
        bias = delta2 * kappa**2 * sum(w * l / (l + kappa) ** 2 for w, l in pairs) / (1 - df2 / gamma)
        value = bias + sigma**2 * df2 / (gamma - df2)
    return +value


def isotropic_expected_risk(n, d, lam=1):
    """E R / ||Delta||^2 = lam (d - n)/d for Sigma = lam I, exact at every 1 <= n <= d
    (row(X) is a uniformly random n-plane: E ||P_perp Delta||^2 = (d - n)/d ||Delta||^2)."""
    n, d = int(n), int(d)
    if not 0 <= n <= d:
        raise ValueError(f"need 0 <= n <= d, got n = {n}, d = {d}")
    with mp.workprec(mp.mp.prec + GUARD_BITS):
        value = _mpf(lam) * (d - n) / d
    return +value


def crossover_fraction(top_frac, top_eig, bottom_eig):
    """n*/d at which (D) is the same for Delta in the top and in the bottom span (kappa = sqrt(lam_t lam_b))."""
    with mp.workprec(mp.mp.prec + GUARD_BITS):
        (wt, lt), (wb, lb) = _spectrum(two_level_spectrum(top_frac, top_eig, bottom_eig))
        if lt == lb:
            raise ValueError("Sigma = lam I: the two alignments have the same risk at every n")
        st, sb = mp.sqrt(lt), mp.sqrt(lb)
        value = (wt * st + wb * sb) / (st + sb)
    return +value


def zero_risk_fraction(fraction, top_frac, top_eig, bottom_eig):
    """The n/d at which (D) for Delta in the top span ("Bottom Eigen Align") falls to
    ``fraction`` of its zero-sample value lam_t ||Delta||^2 (it falls strictly with n)."""
    with mp.workprec(mp.mp.prec + GUARD_BITS):
        fraction = _mpf(fraction)
        spectrum = _spectrum(two_level_spectrum(top_frac, top_eig, bottom_eig))
        lt = spectrum[0][1]
        f = lambda g: deq_block_risk(g, spectrum, lt) / lt - fraction
        lo, hi = mp.mpf(2) ** -40, 1 - mp.mpf(2) ** -40
        if f(lo) <= 0 or f(hi) >= 0:
            raise ValueError(f"fraction {fraction} is not reached inside (0, 1)")
        for _ in range(mp.mp.prec + 64):
            mid = (lo + hi) / 2
            if mid in (lo, hi):
                break
            lo, hi = (mid, hi) if f(mid) > 0 else (lo, mid)
        value = (lo + hi) / 2
    return +value


def g_shape(n, r, delta=1):
    """g(lambda, delta, n) / (c lam_1) = max{sqrt(r/n), r/n, sqrt(delta/n), delta/n}, r = tr(Sigma)/lam_1."""
    with mp.workprec(mp.mp.prec + GUARD_BITS):
        n, r, delta = _mpf(n), _mpf(r), _mpf(delta)
        if n <= 0 or r <= 0 or delta < 1:
            raise ValueError("need n > 0, r > 0 and delta >= 1 (Thm 4.2)")
        value = max(mp.sqrt(r / n), r / n, mp.sqrt(delta / n), delta / n)
    return +value


def ranking_threshold_constant(d, r, lam_1, lam_m, delta=1):
    """(lam_m/lam_1) sqrt(d / max(r, delta)): for every c at least this, g > lam_m at every n < d,
    so bound (3) ranks Delta in the bottom span ahead of Delta in the top span at every n < d."""
    with mp.workprec(mp.mp.prec + GUARD_BITS):
        d, r, lam_1, lam_m, delta = (_mpf(x) for x in (d, r, lam_1, lam_m, delta))
        value = (lam_m / lam_1) * mp.sqrt(d / max(r, delta))
    return +value


def order_statistic_lower_index(count, q, alpha):
    """The largest k in 1..count with P(Binomial(count, q) >= k) >= 1 - alpha, or None.

    For i.i.d. continuous draws, P(X_(k) <= xi_q) = P(#{X_i < xi_q} >= k) =
    P(Binomial(count, q) >= k), so the k-th smallest draw is a lower confidence bound
    for the q-quantile xi_q at level 1 - alpha (distribution-free)."""
    count = int(count)
    with mp.workprec(mp.mp.prec + GUARD_BITS):
        q, alpha = _mpf(q), _mpf(alpha)
        best = None
        for k in range(1, count + 1):
            # P(Bin(count, q) >= k) = I_q(k, count - k + 1), the regularized incomplete beta
            tail = mp.betainc(k, count - k + 1, 0, q, regularized=True)
            if tail >= 1 - alpha:
                best = k
            else:
                break
    return best
