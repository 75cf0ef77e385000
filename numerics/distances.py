"""Distances between the joint laws p_f(x, y) = p(x) N(y; f(x), sigma^2) of two linear
teachers (Features are fate, Thm 2.2, App. B.1, eqs. (23)-(34)), by mpmath quadrature.

Setting: x ~ N(0, I_d), f(x) = beta_f . x, g(x) = beta_g . x with ||beta_f|| = a,
||beta_g|| = b and angle theta between them.  Two facts of the setting are used, not
closed forms of the quantities:

- u = f(x) - g(x) = (beta_f - beta_g) . x is N(0, ||beta_f - beta_g||^2), so an
  expectation over x of a function of (f - g)(x) is a 1-D Gaussian integral;
- the y-marginal of p_f is N(0, a^2 + sigma^2), so an expectation over p_f of a
  function of y alone is E_u E_e h(u + e) with u = f(x) ~ N(0, a^2), e ~ N(0, sigma^2),
  or directly a 1-D integral against that marginal.

Every quantity is an integral evaluated by quadrature: smooth Gaussian integrals by
Gauss-Hermite rules whose node count is doubled until two rules agree to the working
precision (the inner integral over y given x nested inside the outer one over x where
the paper's derivation passes through both), integrands with kinks by ``mp.quad``
(tanh-sinh) split at the kinks.  Functions take and return mpmath numbers at the
caller's precision; the global precision is never changed.
"""

from __future__ import annotations

import functools

import mpmath as mp

__all__ = [
    "MAX_NODES",
    "difference_norm",
    "gaussian_expectation",
    "converged",
    "conditional_kl",
    "kl_divergence",
    "expected_cos_label",
    "cos_test_gap",
    "cos_test_gap_sup",
    "tent_expectation",
    "tent_test_gap",
    "tent_witness",
    "tent_witness_gap",
    "l1_distance",
    "smallest_scale_reaching",
]


def difference_norm(norm_f, norm_g, theta):
    """||beta_f - beta_g|| from the coordinates beta_f = (a, 0), beta_g = (b cos theta, b sin theta)."""
    return mp.hypot(norm_f - norm_g * mp.cos(theta), norm_g * mp.sin(theta))


@functools.lru_cache(maxsize=None)
def _hermite_rule(nodes, prec):
    with mp.workprec(prec):
        return mp.gauss_quadrature(nodes, "hermite")


def gaussian_expectation(fn, sd, nodes):
    """E fn(u) for u ~ N(0, sd^2) (sd = 0: fn(0)) by the Gauss-Hermite rule with ``nodes`` nodes."""
    if sd == 0:
        return fn(mp.mpf(0))
    points, weights = _hermite_rule(nodes, mp.mp.prec)
    scale = mp.sqrt(2) * sd
    return mp.fsum(w * fn(scale * t) for t, w in zip(points, weights)) / mp.sqrt(mp.pi)


MAX_NODES = 512


def converged(integral):
    """``integral(nodes)`` with 16, 32, ... Gauss-Hermite nodes per dimension until two
    successive rules agree to the working precision.  Raises ValueError if they still
    differ at MAX_NODES (an integrand that oscillates too fast for the rule, e.g. cos(y)
    against a Gaussian of standard deviation >~ 20)."""
    tolerance = mp.mpf(10) ** (5 - mp.mp.dps)
    previous, nodes = integral(16), 32
    while nodes <= MAX_NODES:
        value = integral(nodes)
        if abs(value - previous) <= tolerance * max(1, abs(value)):
            return value
        previous, nodes = value, 2 * nodes
    raise ValueError(f"Gauss-Hermite rules up to {MAX_NODES} nodes do not agree to {mp.mp.dps} digits")


def _log_normal_density(e, mean, sigma):
    return -((e - mean) / sigma) ** 2 / 2 - mp.log(sigma) - mp.log(2 * mp.pi) / 2


def conditional_kl(u, sigma, nodes):
    """KL(N(f, sigma^2) || N(g, sigma^2)) for f - g = u: the integral of eq. (31) over y,
    E_e [log N(e; 0, sigma^2) - log N(e; -u, sigma^2)] with e = y - f(x) ~ N(0, sigma^2)."""
    return gaussian_expectation(lambda e: _log_normal_density(e, 0, sigma) - _log_normal_density(e, -u, sigma),
                                sigma, nodes)


def kl_divergence(norm_f, norm_g, theta, sigma):
    """D_KL(p_f || p_g): eq. (31) with the inner integral over y (given x) nested in the
    expectation over x, which is one over u = (f - g)(x) ~ N(0, ||beta_f - beta_g||^2)."""
    spread = difference_norm(norm_f, norm_g, theta)
    return converged(lambda nodes: gaussian_expectation(lambda u: conditional_kl(u, sigma, nodes), spread, nodes))


def expected_cos_label(norm, sigma):
    """E_{p_f} cos(y) for ||beta_f|| = norm: the double integral of eq. (26) over x and y,
    E cos(u + e) with u = f(x) ~ N(0, norm^2) and e = y - f(x) ~ N(0, sigma^2) independent.
    cos(u + e) = cos u cos e - sin u sin e and Fubini split it into four 1-D integrals."""
    def expectation(fn, sd):
        return converged(lambda nodes: gaussian_expectation(fn, sd, nodes))
    return (expectation(mp.cos, norm) * expectation(mp.cos, sigma)
            - expectation(mp.sin, norm) * expectation(mp.sin, sigma))


def cos_test_gap(norm_f, norm_g, sigma):
    """E_{p_f} h - E_{p_g} h for the proof's test function h(x, y) = cos(y)/2 (eqs. (26)-(27), signed)."""
    return (expected_cos_label(norm_f, sigma) - expected_cos_label(norm_g, sigma)) / 2


def cos_test_gap_sup(norm_f, sigma):
    """sup over ||beta_g|| >= 0 of |E_{p_f} h - E_{p_g} h| for h = cos(y)/2.

    E_{p_g} cos(y) decreases from its value at beta_g = 0 to 0 as ||beta_g|| -> oo
    (the y-marginal spreads out), so the supremum is the larger of the two ends."""
    at_f = expected_cos_label(norm_f, sigma)
    at_zero = expected_cos_label(mp.mpf(0), sigma)
    return max(at_f, at_zero - at_f) / 2


def tent_expectation(r, sd):
    """E min(|y|/r, 1) for y ~ N(0, sd^2), by mp.quad split at the kinks -r, 0, r."""
    return mp.quad(lambda y: min(abs(y) / r, 1) * mp.npdf(y, 0, sd), [-mp.inf, -r, 0, r, mp.inf])


def tent_test_gap(r, height, sd_f, sd_g):
    """E_{p_f} h - E_{p_g} h for the tent h(y) = height (1 - 2 min(|y|/r, 1)) of the label,
    when the y-marginals are N(0, sd_f^2) and N(0, sd_g^2).

    h has sup norm ``height`` and Lipschitz constant 2 height / r (in y, hence in (x, y))."""
    return 2 * height * (tent_expectation(r, sd_g) - tent_expectation(r, sd_f))


def tent_witness(norm_f, sigma, target, height_for, max_doublings=60):
    """(r, b): a tent width and a scale ||beta_g|| = b at which the tent of unit norm
    (height ``height_for(r)``) has E_{p_f} h - E_{p_g} h >= target.

    As b -> oo the y-marginal of p_g spreads out and E_{p_g} h -> -height, so the gap tends
    to 2 height (1 - E min(|y_f|/r, 1)); r is doubled until that limit clears the target,
    then b until the gap does.  Raises ValueError if no width up to 2^max_doublings does.
    """
    sd_f = mp.sqrt(norm_f**2 + sigma**2)
    r = mp.mpf(1)
    for _ in range(max_doublings + 1):      # r = 1, 2, ..., 2^max_doublings
        if 2 * height_for(r) * (1 - tent_expectation(r, sd_f)) > target:
            break
        r *= 2
    else:
        raise ValueError(f"no tent of width up to 2^{max_doublings} separates by {target}")
    b = max(mp.mpf(1), mp.mpf(norm_f))
    while tent_test_gap(r, height_for(r), sd_f, mp.sqrt(b**2 + sigma**2)) < target:
        b *= 2
    return r, b


def tent_witness_gap(norm_f, sigma, target, height_for):
    """(r, b, height, gap): the width r and scale b of ``tent_witness``, the height ``height_for(r)`` of the
    tent of unit norm, and its exact gap E_{p_f} h - E_{p_g} h at ||beta_g|| = b (the y-marginals are
    N(0, ||beta||^2 + sigma^2))."""
    r, b = tent_witness(norm_f, sigma, target, height_for)
    height = height_for(r)
    return r, b, height, tent_test_gap(r, height, mp.sqrt(norm_f**2 + sigma**2), mp.sqrt(b**2 + sigma**2))


def l1_distance(norm_f, norm_g, theta, sigma):
    """||p_f - p_g||_1 = E_x ||N(f(x), sigma^2) - N(g(x), sigma^2)||_1.  Given u = (f - g)(x) the
    two conditional densities cross once, at the midpoint, so the y-integral is
    2 (P(e < |u|/2) - P(e < -|u|/2)) = 2 (2 Phi(|u| / (2 sigma)) - 1); the expectation over
    u ~ N(0, ||beta_f - beta_g||^2) has a kink at u = 0 and is taken by mp.quad on u >= 0.
    Every h with sup|h| <= 1 has |E_{p_f} h - E_{p_g} h| <= this, so it bounds the Dudley metric."""
    spread = difference_norm(norm_f, norm_g, theta)
    if spread == 0:
        return mp.mpf(0)
    return 2 * mp.quad(lambda u: 2 * (2 * mp.ncdf(u / (2 * sigma)) - 1) * mp.npdf(u, 0, spread), [0, mp.inf])


def smallest_scale_reaching(fn, target, max_doublings=400):
    """The smallest s >= 0 with fn(s) >= target, for fn continuous with at most one upward
    crossing of ``target`` on [0, oo) (a quadratic in s, as a divergence between two linear
    teachers is): 0 if fn(0) >= target, else the crossing, bracketed by doubling and found
    by bisection.  ValueError if fn stays below target up to 2^max_doublings."""
    if fn(mp.mpf(0)) >= target:
        return mp.mpf(0)
    low, high = mp.mpf(0), mp.mpf(1)
    for _ in range(max_doublings + 1):      # high = 1, 2, ..., 2^max_doublings
        if fn(high) >= target:
            break
        low, high = high, 2 * high
    else:
        raise ValueError(f"stays below {mp.nstr(target, 6)} for every scale up to 2^{max_doublings}")
    while high - low > mp.eps * high * 16:
        mid = (low + high) / 2
        low, high = (low, mid) if fn(mid) >= target else (mid, high)
    return high
