"""One-sided tests of a failure probability from k failures in N draws, in plain floats.

The exact binomial upper tail, and the Chernoff-Hoeffding bound P(Bin(N, p) >= k) <= exp(-N KL(k/N || p)) for
p < k/N, KL the Bernoulli relative entropy: a lower confidence bound on p (slightly conservative next to
Clopper-Pearson, and cheap at any N) and a p-value for the hypothesis P(fail) <= p0.  A p-value becomes a
z-score (``z_of_p_value``) for a judge that compares z-scores against a critical value.
"""

from __future__ import annotations

import math
from statistics import NormalDist

__all__ = ["binomial_survival", "binomial_upper_tail", "chernoff_lower_bound", "chernoff_two_sided_z", "chernoff_z",
           "z_of_p_value"]


def chernoff_lower_bound(k: int, trials: int, alpha: float) -> float:
    """One-sided lower confidence bound for a binomial proportion (k failures in ``trials``).

    Chernoff-Hoeffding: P(Bin(N, p) >= k) <= exp(-N KL(k/N || p)) for p < k/N, so the p with
    N KL(k/N || p) = ln(1/alpha) is a lower bound of coverage >= 1 - alpha (slightly conservative
    next to Clopper-Pearson, and cheap at any N).  Found by bisection to float64 resolution."""
    if k == 0:
        return 0.0
    q = k / trials
    target = math.log(1 / alpha) / trials

    def kl(p):
        out = q * math.log(q / p)
        if q < 1:
            out += (1 - q) * math.log((1 - q) / (1 - p))
        return out

    lo, hi = 0.0, q                # kl is decreasing on (0, q), +inf at 0, 0 at q
    for _ in range(200):
        mid = (lo + hi) / 2
        if mid in (lo, hi):
            break
        if mid == 0 or kl(mid) > target:
            lo = mid
        else:
            hi = mid
    return lo


def chernoff_z(failures: int, trials: int, p0: float) -> float:
    """The one-sided Chernoff-Hoeffding test of P(fail) <= p0 after ``failures`` in ``trials``, as a normal quantile.

    Its p-value exp(-N KL(k/N || p0)) (1 when k/N <= p0) is returned as z = Phi^-1(1 - p): z exceeds the
    one-sided critical value of a level exactly when p is below that level, i.e. when chernoff_lower_bound at
    that level exceeds p0.  -inf where nothing failed beyond p0, +inf where p0 <= 0 < failures or p underflows."""
    q = failures / trials
    if failures == 0 or q <= p0 or p0 >= 1:
        return -math.inf
    if p0 <= 0:
        return math.inf
    kl = q * math.log(q / p0) + ((1 - q) * math.log((1 - q) / (1 - p0)) if q < 1 else 0.0)
    return z_of_p_value(math.exp(-trials * kl))


def chernoff_two_sided_z(failures: int, trials: int, p: float) -> float:
    """The two-sided Chernoff-Hoeffding test of P(fail) = p after ``failures`` in ``trials``, as a signed normal quantile.

    On the side the fraction k/N lies, exp(-N KL(k/N || p)) bounds the probability of a fraction at least as far
    out; doubled, it is a two-sided p-value.  Returned as z = sign(k/N - p) Phi^-1(1 - p_side) (0 where p_side >=
    1/2), so that |z| exceeds the two-sided critical value of a level exactly when 2 p_side is below that level."""
    q = failures / trials
    if q == p:
        return 0.0
    if p <= 0 or p >= 1:                       # a fraction off a certain outcome is impossible under p
        return math.copysign(math.inf, q - p)
    kl = (q * math.log(q / p) if q > 0 else 0.0) + ((1 - q) * math.log((1 - q) / (1 - p)) if q < 1 else 0.0)
    return math.copysign(max(0.0, z_of_p_value(math.exp(-trials * kl))), q - p)


def binomial_survival(k: int, trials: int, p: float) -> float:
    """P(Binomial(trials, p) >= k) at any size, as the regularized incomplete beta I_p(k, trials - k + 1)
    (mpmath, 30 digits); binomial_upper_tail's term sum overflows float64 from trials ~ 1000 on."""
    import mpmath as mp
    if k <= 0:
        return 1.0
    if k > trials:
        return 0.0
    if p <= 0 or p >= 1:
        return float(p >= 1)
    with mp.workdps(30):
        return float(mp.betainc(k, trials - k + 1, 0, p, regularized=True))


def binomial_upper_tail(k: int, trials: int, q: float) -> float:
    """P(Binomial(trials, q) >= k), exactly (a float sum of the terms)."""
    return math.fsum(math.comb(trials, j) * q**j * (1 - q) ** (trials - j) for j in range(k, trials + 1))


def z_of_p_value(p_value: float) -> float:
    """The normal quantile z with P(N(0, 1) > z) = p_value (-inf at p >= 1, +inf at p <= 0), so that a test
    alarming at z > z_crit alarms exactly when p < its per-test rate."""
    if p_value >= 1:
        return -math.inf
    return math.inf if p_value <= 0 else -NormalDist().inv_cdf(p_value)
