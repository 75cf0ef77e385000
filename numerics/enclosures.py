"""Rigorous enclosures of the quantities the deterministic claims are about, from their defining
representations (``verify.py --certify``).

Each function returns an arb ball (``numerics.certified``) guaranteed to contain the exact value, or an
exact sympy number.  The routes are the defining ones, not the closed forms the claims state:

- Gaussian expectations of ReLU units (``relu_overlap``, ``orthant_probability``): the integral along
  a of E[. | a] for a standard bivariate normal pair, as ``numerics.kernels`` takes it in mpmath, by
  arb's rigorous integration on [0, T] plus a proved bound on the tail beyond T;
- expectations over the label y of two linear teachers (``expected_cos_label``, ``tent_expectation``,
  ``l1_distance``): one-dimensional Gaussian integrals, by integration or in closed form;
- expectations over s ~ chi-square(n) (``chi_square_expectation``): the radial integral in v = sqrt(s/2),
  whose integrand is analytic for integer n, with a Chernoff bound on the tail;
- exact Gaussian random-matrix means (``inverse_chi_square_mean``, ``min_norm_risk``): the Gamma-function
  integral of 1/s against the chi-square density, in exact arithmetic.

Functions work at flint's current precision (``numerics.certified.precision``).
"""

from __future__ import annotations

import math

import sympy as sp

from functools import lru_cache

from numerics.certified import Undecided, ball, chi_square_tail, flint, gaussian_tail, increasing_root, real_integral

__all__ = ["relu_overlap", "orthant_probability", "gram_entry", "gaussian_cos_moment", "gaussian_sin_moment",
           "expected_cos_label", "tent_expectation", "tent_gap", "l1_distance", "chi_square_expectation",
           "inverse_chi_square_mean", "min_norm_risk", "min_norm_risk_limit", "ridge_transfer_risk",
           "ridge_transfer_risk_limit", "rescaling_root", "rescaling_limit_root"]


def _cut():
    """A truncation point T for a Gaussian weight: exp(-T^2/2) is below 2^-(prec + 40)."""
    return math.ceil(math.sqrt(2 * (flint().ctx.prec + 40) * math.log(2))) + 1


def _sqrt_two_pi():
    return (2 * flint().arb.pi()).sqrt()


def _phi(x):
    return (-x * x / 2).exp() / _sqrt_two_pi()


def _Phi(x):
    return (-x / flint().arb(2).sqrt()).erfc() / 2


def _with_tail(value, bound):
    """``value`` widened by +- ``bound`` (the integral's neglected tail)."""
    return value + flint().arb(0, bound)


def _correlation(u):
    u = ball(u)
    if u.is_exact() and abs(u) == 1:
        return u, None
    if not (u > -1 and u < 1):
        raise Undecided(f"the correlation {u} is not decided inside (-1, 1) or exactly +-1")
    return u, (1 - u * u).sqrt()


def relu_overlap(u):
    """E[relu(a) relu(b)] for standard normals a, b with correlation u: int_0^oo a phi(a) E[relu(b) | a] da,
    E[relu(b) | a] = mu Phi(mu/s) + s phi(mu/s) (mu = u a, s = sqrt(1 - u^2)); u = +-1: b = +-a, so 1/2 or 0.
    The tail beyond T is at most int_T^oo (a^2 + a) phi(a) da <= (T + 2) phi(T)."""
    u, s = _correlation(u)
    if s is None:
        return flint().arb(1) / 2 if u > 0 else flint().arb(0)
    cut = _cut()

    def integrand(a):
        mu = u * a
        return a * _phi(a) * (mu * _Phi(mu / s) + s * _phi(mu / s))

    return _with_tail(real_integral(integrand, 0, cut), ((cut + 2) * _phi(ball(cut))).upper())


def orthant_probability(u):
    """P(a >= 0, b >= 0) for standard normals with correlation u: int_0^oo phi(a) Phi(u a / s) da; the tail is
    at most Q(T).  u = +-1: 1/2 or 0."""
    u, s = _correlation(u)
    if s is None:
        return flint().arb(1) / 2 if u > 0 else flint().arb(0)
    cut = _cut()
    return _with_tail(real_integral(lambda a: _phi(a) * _Phi(u * a / s), 0, cut), gaussian_tail(cut))


def gram_entry(x, z):
    """H^inf = E_w[x.z 1{w.x >= 0, w.z >= 0}] for rows x, z (sequences of exact numbers, e.g. float64 entries):
    x.z times the orthant probability at their correlation x.z / (|x| |z|)."""
    x, z = [ball(v) for v in x], [ball(v) for v in z]
    inner = sum((a * b for a, b in zip(x, z)), flint().arb(0))
    xx, zz = sum((a * a for a in x), flint().arb(0)), sum((b * b for b in z), flint().arb(0))
    if x == z:
        correlation = flint().arb(1)
    elif x == [-b for b in z]:
        correlation = flint().arb(-1)
    else:
        correlation = inner / (xx * zz).sqrt()
    return inner * orthant_probability(correlation)


def gaussian_cos_moment(sd):
    """E cos(sd t) for t ~ N(0, 1): int_{-T}^{T} cos(sd t) phi(t) dt, the tail at most 2 Q(T)."""
    sd, cut = ball(sd), _cut()
    return _with_tail(real_integral(lambda t: (sd * t).cos() * _phi(t), -cut, cut), 2 * gaussian_tail(cut))


def gaussian_sin_moment(sd):
    """E sin(sd t) for t ~ N(0, 1) (0 by symmetry; integrated all the same, as the mpmath route does)."""
    sd, cut = ball(sd), _cut()
    return _with_tail(real_integral(lambda t: (sd * t).sin() * _phi(t), -cut, cut), 2 * gaussian_tail(cut))


def expected_cos_label(norm, sigma):
    """E_{p_f} cos(y) for ||beta_f|| = norm: y = u + e with u ~ N(0, norm^2), e ~ N(0, sigma^2) independent,
    cos(u + e) = cos u cos e - sin u sin e (eq. (26))."""
    return (gaussian_cos_moment(norm) * gaussian_cos_moment(sigma)
            - gaussian_sin_moment(norm) * gaussian_sin_moment(sigma))


def tent_expectation(r, sd):
    """E min(|y|/r, 1) for y ~ N(0, sd^2), in closed form: (2 sd / r)(phi(0) - phi(r/sd)) + P(|y| >= r)."""
    r, sd = ball(r), ball(sd)
    if sd == 0:
        return flint().arb(0)
    x = r / sd
    return 2 * sd / r * (_phi(flint().arb(0)) - _phi(x)) + (x / flint().arb(2).sqrt()).erfc()


def tent_gap(r, height, sd_f, sd_g):
    """E_{p_f} h - E_{p_g} h for the tent h(y) = height (1 - 2 min(|y|/r, 1)) when the label's marginals are
    N(0, sd_f^2) and N(0, sd_g^2)."""
    return 2 * ball(height) * (tent_expectation(r, sd_g) - tent_expectation(r, sd_f))


def l1_distance(spread, sigma):
    """||p_f - p_g||_1 = E_u 2 erf(|u| / (2 sqrt(2) sigma)) for u = (f - g)(x) ~ N(0, spread^2): twice the
    integral over u >= 0, the tail beyond T spread at most 4 Q(T)."""
    spread, sigma = ball(spread), ball(sigma)
    if spread == 0:
        return flint().arb(0)
    cut = _cut()
    scale = 2 * flint().arb(2).sqrt() * sigma
    value = 4 * real_integral(lambda t: (spread * t / scale).erf() * _phi(t), 0, cut)
    return _with_tail(value, 4 * gaussian_tail(cut))


def _chi_square_cut(n: int):
    """A truncation point V in v = sqrt(s/2) for s ~ chi-square(n), beyond x = n + 2 b log 2 + 4 sqrt(n b) for
    b = prec + 40 bits: ``chi_square_tail`` there is below 2^-prec (tests/test_certify.py, n from 1 to 3000)."""
    bits = flint().ctx.prec + 40
    x = n + 2 * bits * math.log(2) + 4 * math.sqrt(n * bits)
    return math.ceil(math.sqrt(x / 2)) + 1


def chi_square_expectation(n: int, integrand, bound):
    """E f(s) for s ~ chi-square(n), n a positive integer, given |f| <= ``bound`` on s >= 0.

    In v = sqrt(s/2) the density is 2 v^(n-1) e^(-v^2) / Gamma(n/2) dv, analytic for integer n; ``integrand``
    is f written with ball operations that also take complex balls (it must be analytic near [0, oo)).
    The tail beyond v = V is at most bound * P(chi2_n > x), x = 2 V^2 (``chi_square_tail``)."""
    if n < 1 or int(n) != n:
        raise ValueError(f"n must be a positive integer, got {n}")
    n = int(n)
    arb = flint().arb
    norm = (arb(n) / 2).gamma()
    cut = _chi_square_cut(n)
    tail = ball(bound) * chi_square_tail(n, arb(2 * cut * cut))
    value = real_integral(lambda v: 2 * integrand(2 * v * v) * v ** (n - 1) * (-v * v).exp(), 0, cut) / norm
    return _with_tail(value, tail.upper())


def inverse_chi_square_mean(k: int):
    """E[1/s] for s ~ chi-square(k), k > 2, exactly: int s^(k/2 - 2) e^(-s/2) ds / (2^(k/2) Gamma(k/2))
    = Gamma(k/2 - 1) / (2 Gamma(k/2)), simplified by sympy (= 1/(k - 2))."""
    if k <= 2:
        raise ValueError(f"E[1/s] is infinite for chi-square({k})")
    half = sp.Rational(k, 2)
    return sp.expand_func(sp.gamma(half - 1) / (2 * sp.gamma(half)))


def min_norm_risk(n: int, d: int, sigma):
    """E ||X^+ y - beta||^2 exactly, X n x d Gaussian, ||beta|| = 1, noise sigma: 1 - E||P_row b||^2 +
    sigma^2 E tr((X^+)^T X^+).  The first term is 1 - min(n, d)/d (the row space is a uniformly random
    min(n, d)-dimensional subspace); the second, for W = X X^T (n < d) or X^T X (n > d) Wishart of dimension
    k = min(n, d) with m = max(n, d) degrees of freedom, is k E[(W^-1)_11] = k E[1/chi2_(m - k + 1)]
    (Bartlett: (W^-1)_11 = 1/chi2_(m-k+1)); exact (sympy) for exact sigma."""
    small, large = min(n, d), max(n, d)
    return 1 - sp.Rational(small, d) + sp.sympify(sigma) ** 2 * small * inverse_chi_square_mean(large - small + 1)


def min_norm_risk_limit(gamma, sigma):
    """lim_{d -> oo} of ``min_norm_risk`` at n = gamma d (gamma != 1), exactly: the finite-size mean with its
    1/chi-square mean taken symbolically is a rational function of d, whose limit is the ratio of the leading
    coefficients of its numerator and denominator (sympy, exact)."""
    d = sp.Symbol("d", positive=True)
    gamma, sigma = sp.sympify(gamma), sp.sympify(sigma)
    small, large = (gamma * d, d) if gamma < 1 else (d, gamma * d)
    half = (large - small + 1) / 2
    inverse_mean = sp.expand_func(sp.gamma(half - 1) / (2 * sp.gamma(half)))   # Gamma(h) = (h - 1) Gamma(h - 1)
    numerator, denominator = (sp.Poly(part, d) for part in sp.fraction(sp.together(1 - small / d + sigma**2 * small
                                                                                      * inverse_mean)))
    if numerator.degree() > denominator.degree():
        raise ValueError("the finite-size mean diverges as d -> oo")
    if numerator.degree() < denominator.degree():
        return sp.Integer(0)
    return sp.nsimplify(numerator.LC() / denominator.LC())


def ridge_transfer_risk(n: int, lam, theta, sigma):
    """Exact finite-n E ||beta_hat - beta_t||^2 of ridge linear transfer on rank-one features (Features are fate
    App. B.7): E over s ~ chi-square(n) of the conditional risk sin^2 + (cos^2 c^2 + kappa s)/(s + c)^2,
    c = n lam > 0, kappa = sin^2 + sigma^2 (numerics.ridge_transfer's (*)); the fraction is at most
    cos^2 + kappa/(4c) on s >= 0."""
    lam, theta, sigma = ball(lam), ball(theta), ball(sigma)
    if not lam > 0:
        raise Undecided(f"lam = {lam} is not decided positive")
    c, cos2, sin2 = n * lam, theta.cos() * theta.cos(), theta.sin() * theta.sin()
    kappa = sin2 + sigma * sigma
    fluctuation = chi_square_expectation(n, lambda s: (cos2 * c * c + kappa * s) / ((s + c) * (s + c)),
                                         cos2 + kappa / (4 * c))
    return sin2 + fluctuation


@lru_cache(maxsize=None)
def _ridge_limit_expression():
    n, lam = sp.symbols("n lambda", positive=True)
    theta, sigma = sp.symbols("theta sigma", real=True)
    cos2, sin2 = sp.cos(theta) ** 2, sp.sin(theta) ** 2
    conditional = sin2 + (cos2 * (n * lam) ** 2 + (sin2 + sigma**2) * n) / (n + n * lam) ** 2   # at s = n
    return sp.limit(conditional, n, sp.oo), (lam, theta, sigma)


def ridge_transfer_risk_limit(lam, theta, sigma):
    """lim_{n -> oo} of ``ridge_transfer_risk``, exactly (sympy): s/n -> 1 almost surely and the conditional risk,
    a bounded continuous function of s/n (plus kappa s/(s + c)^2 <= kappa/(4 n lam) -> 0), converges with it
    (bounded convergence), so the limit is sympy's n -> oo limit of the conditional risk at s = n."""
    expression, symbols = _ridge_limit_expression()
    return expression.subs(dict(zip(symbols, (sp.sympify(lam), sp.sympify(theta), sp.sympify(sigma)))))


def rescaling_root(a, b, s, L: int):
    """The coefficient c = rho^((L-1)/L) of Shachaf et al.'s eq. (5), rho > 0 the root of
    s^2 rho^2 - a rho^(2 - 2/L) - b = 0, enclosed by bisection: divided by rho^(2 - 2/L) the equation reads
    s^2 rho^(2/L) - a - b rho^(-(2 - 2/L)) = 0, whose left side increases strictly (b > 0), so the root is unique.
    L = 1: c = rho^0 = 1 exactly."""
    if L == 1:
        return sp.Integer(1)
    a, b, s = ball(a), ball(b), ball(s)
    power = ball(2) / L

    def increasing(rho):
        return s * s * rho ** power - a - b * rho ** (power - 2)

    low, high = ball(1), ball(1)
    while not increasing(low) < 0:
        low = low / 2
    while not increasing(high) > 0:
        high = high * 2
    rho = increasing_root(increasing, low, high)
    return ball(rho ** (1 - ball(1) / L))


def rescaling_limit_root(a, b, s):
    """The L -> oo limit of eq. (5)'s coefficient: rho_inf > 0 with (s^2 - a) rho^2 = b, the limit of the
    equation (numerics.depth_rescaling.symbolic_depth_limit, implicit function theorem), by bisection."""
    a, b, s = ball(a), ball(b), ball(s)
    low, high = ball(1), ball(1)
    increasing = lambda rho: (s * s - a) * rho * rho - b   # noqa: E731
    while not increasing(low) < 0:
        low = low / 2
    while not increasing(high) > 0:
        high = high * 2
    return ball(increasing_root(increasing, low, high))
