"""The exact law of the L -> oo fine-tuned risk for a Gaussian design, and so the failure probability of bound (9).

Setting (Shachaf, Brutzkus & Globerson, Thm 5.4): Sigma = I, the rows of X (n x d) i.i.d. N(0, I_d), so that
row(X) is a uniformly random n-plane; P its projector, P_perp = I - P; theta_S, theta_T at angle theta.  Eqs.
(6)-(7): R(beta) = ||P_perp (theta_T - c theta_S)||^2 with c = ||P theta_T|| / ||P theta_S||.  This module gives
S(x) = P(R(beta) > x ||theta_T||^2), the probability that the risk exceeds a level, for every n <= d - 1.

Reduction to the plane of the tasks.  With e1 = theta_hat_S, T = theta_hat_T = cos(theta) e1 + sin(theta) e2 and
G the 2 x 2 Gram matrix of P on span(e1, e2) (G_ij = <P e_i, e_j>), kappa = c ||theta_S|| / ||theta_T|| =
sqrt(T^T G T / G_11), and T^T G T = kappa^2 G_11 gives

    R / ||theta_T||^2 = |T - kappa e1|^2 - |P (T - kappa e1)|^2
                      = (1 - 2 G_11) kappa^2 - 2 kappa (cos(theta) (1 - G_11) - sin(theta) G_12) + 1,     (R)

so the law of R / ||theta_T||^2 depends on n, d and theta only (not on the norms; (9) / ||theta_T||^2 neither).

n = 1 (``deep_risk_survival_n1``): G = g g^T with |g|^2 = tau ~ Beta(1, (d-2)/2) and the direction phi of g
uniform, independent.  v = <x, theta_hat_T> / <x, theta_hat_S> = cos(theta) + sin(theta) tan(phi) is Cauchy with
location cos(theta) and scale sin(theta) (so <x, theta_T>/<x, theta_S> is Cauchy(cos(theta) r, sin(theta) r),
r = ||theta_T|| / ||theta_S||), kappa = |v|, and (R) becomes

    R / ||theta_T||^2 = h(|v|) - 4 tau cos^2(phi - theta) [v < 0],     h(w) = 1 + w^2 - 2 w cos(theta):

when <x, theta_S> and <x, theta_T> have the same sign, P (theta_T - c theta_S) = 0.  Hence the closed form
S_C(x) = P(h(|v|) > x) (Cauchy: arctangents), an upper bound, minus a correction from the draws with v < 0, where
the risk exceeds x only if tau < rho(v) = (h(|v|) - x) / (4 cos^2(phi - theta)):

    S(x) = S_C(x) - integral over {v < 0, h(|v|) > x} of (1 - rho(v))_+^((d-2)/2) dF_Cauchy(v),

a one-dimensional integral (mpmath quadrature).  For x -> oo, S(x) ~ 2 sin(theta) / (pi sqrt(x)): the Cauchy
tail (numerics.depth_rescaling.eq9_tail_constant_n1 states the same limit for (9)).

n >= 2 (``deep_risk_survival``): with u1 = theta_hat_S rotated uniformly, G_11 = B ~ Beta(n/2, (d-n)/2); the
second direction, uniform on the sphere orthogonal to u1, contributes G_12 = sqrt(B (1 - B)) alpha and
G_22 = alpha^2 (1 - B) + b, where alpha (a coordinate of a uniform point of S^(d-2), density
proportional to (1 - alpha^2)^((d-4)/2)) and b = (1 - alpha^2) beta', beta' ~ Beta((n-1)/2, (d-n-1)/2), are
independent of B and of each other.  kappa^2 = (cos(theta) + sin(theta) alpha sqrt((1-B)/B))^2
+ sin^2(theta) b / B grows with b, and (R) is a quadratic in kappa, so given (B, alpha) the event R > x is
one or two intervals of beta', whose probability is a regularized incomplete beta function.  What is left is
a two-dimensional integral over (B, alpha), done by Gauss-Legendre in float64 (panels geometric in B towards 0,
where the tail lives: R > x needs kappa > sqrt(x) - 1, and kappa^2 <= 1/B).  The integrand has kinks (where
the interval ends cross the range of kappa), so the rule converges algebraically: its relative error is below
1e-3 (5e-4 at n = 2, d = 40 against an mpmath nested quadrature; within 1e-3 of a run with four times the
panels and twice the nodes over n = 2 ... 40, d = 3 ... 320; tests/test_deep_risk_law.py), ten times below
the binomial error of the failure fraction of 10000 draws even at a probability of 1/2.
"""

from __future__ import annotations

import math
from functools import lru_cache

import mpmath as mp
import numpy as np

__all__ = ["deep_risk_survival", "deep_risk_survival_n1", "deep_risk_survival_cauchy_n1", "regularized_beta"]

SINE_FLOOR = 1e-12           # below it theta is pi (kappa = 1 exactly; theta = 0 is outside the claim's domain)
GL_NODES = 12                # Gauss-Legendre nodes per panel (n >= 2), on B = G_11 in [0, the largest B at which
UNIFORM_PANELS = 16          # R > x is possible] and alpha in [-A, A], A = min(1, 12 / sqrt(d)) (the rest: < e^-70):
GEOMETRIC_PANELS = 12        # equal panels, refined by factors of 4 towards B = 0 (the tail) and a singular end


# --- n = 1: a Cauchy ratio ---------------------------------------------------------------------------------------

def _cauchy_cdf(v, theta):
    return mp.mpf(1) / 2 + mp.atan((v - mp.cos(theta)) / mp.sin(theta)) / mp.pi


def _within(theta, x):
    """W = {w >= 0 : h(w) = 1 + w^2 - 2 w cos(theta) <= x} as (low, high), or None where it is empty."""
    spread = x - mp.sin(theta) ** 2
    if spread < 0:
        return None
    low, high = mp.cos(theta) - mp.sqrt(spread), mp.cos(theta) + mp.sqrt(spread)
    if high < 0:
        return None
    return max(low, mp.mpf(0)), high


def deep_risk_survival_cauchy_n1(theta, x):
    """S_C(x) = P(h(|v|) > x) for v ~ Cauchy(cos theta, sin theta): the n = 1 survival function of
    |theta_hat_T - kappa theta_hat_S|^2, an upper bound on S(x) (the closed form; see the module docstring)."""
    theta, x = mp.mpf(theta), mp.mpf(x)
    window = _within(theta, x)
    if window is None:
        return mp.mpf(1)
    low, high = window
    inside = (_cauchy_cdf(high, theta) - _cauchy_cdf(low, theta)) + (_cauchy_cdf(-low, theta) - _cauchy_cdf(-high, theta))
    return 1 - inside


def _opposite_sign_correction(d, theta, x):
    """The integral over {v < 0, h(|v|) > x} of (1 - rho(v))_+^((d-2)/2) dF(v), in psi = atan((v - cos)/sin),
    dF = dpsi / pi; broken where rho = 1 (found on a grid and by bisection), where the integrand has a kink."""
    k = mp.mpf(d - 2) / 2
    cos_t, sin_t = mp.cos(theta), mp.sin(theta)
    top = theta - mp.pi / 2                              # v = 0
    bottom = -mp.pi / 2                                  # v = -oo

    def v_of(psi):
        return cos_t + sin_t * mp.tan(psi)

    def rho(psi):
        v = v_of(psi)
        if v == 0:                                       # the domain's end v -> 0-: rho -> +oo there
            return mp.inf
        w = -v
        h = 1 + w * w - 2 * w * cos_t
        u = mp.tan(psi)
        return (h - x) * (1 + u * u) / (4 * v * v)

    def integrand(psi):
        r = rho(psi)
        if r <= 0 or r >= 1:                             # r <= 0: no failure there (outside the domain below)
            return mp.mpf(0)
        return (1 - r) ** k if k > 0 else mp.mpf(1)

    # the domain: v < 0 and |v| outside W = [low, high], i.e. v < -high or -low < v < 0
    window = _within(theta, x)
    psi_of = lambda v: mp.atan((v - cos_t) / sin_t)     # noqa: E731
    pieces = [(bottom, top)] if window is None else [(bottom, psi_of(-window[1])), (psi_of(-window[0]), top)]
    total = mp.mpf(0)
    for a, b in pieces:
        if b <= a:
            continue
        grid = [a + (b - a) * i / 64 for i in range(65)]
        marks = [a]
        values = [(p, rho(p) - 1) for p in grid[1:-1]]      # rho is +oo, not a division by 0, where v = 0
        for (p, fp), (q, fq) in zip(values, values[1:]):
            if (fp < 0) != (fq < 0):
                lo, hi = p, q
                for _ in range(60):                       # bisection: rho is continuous between grid points
                    mid = (lo + hi) / 2
                    if (rho(mid) - 1 < 0) == (fp < 0):
                        lo = mid
                    else:
                        hi = mid
                marks.append((lo + hi) / 2)
        marks.append(b)
        total += mp.quad(integrand, marks)
    return total / mp.pi


def deep_risk_survival_n1(d, theta, x):
    """S(x) = P(R(beta) > x ||theta_T||^2) at n = 1, X a single N(0, I_d) row: the Cauchy closed form minus the
    opposite-sign correction (module docstring).  mpmath at the caller's precision (20 digits are plenty)."""
    d, theta, x = int(d), mp.mpf(theta), mp.mpf(x)
    if d < 2 or not (0 < theta <= mp.pi):
        raise ValueError("need d >= 2 and 0 < theta <= pi")
    if mp.sin(theta) < SINE_FLOOR:
        return _survival_at_pi(1, d, float(x))
    return deep_risk_survival_cauchy_n1(theta, x) - _opposite_sign_correction(d, theta, x)


# --- n >= 2: a two-dimensional integral ---------------------------------------------------------------------------

LENTZ_TINY = 1e-300   # modified Lentz: a denominator this close to 0 is replaced by it (Numerical Recipes' FPMIN)


def _away_from_zero(z):
    """z, with entries of magnitude below LENTZ_TINY replaced by LENTZ_TINY (so that 1/z stays finite)."""
    return np.where(np.abs(z) < LENTZ_TINY, LENTZ_TINY, z)


def regularized_beta(a: float, b: float, x) -> np.ndarray:
    """I_x(a, b), vectorised over x in [0, 1] (a, b > 0): the continued fraction of Numerical Recipes' betacf
    (modified Lentz), on the side of (a + 1)/(a + b + 2) where it converges fast; float64."""
    x = np.asarray(x, dtype=float)
    out = np.where(x <= 0, 0.0, 1.0)
    inside = (x > 0) & (x < 1)
    if not inside.any():
        return out
    xi = x[inside]
    swap = xi >= (a + 1) / (a + b + 2)
    aa, bb, xx = np.where(swap, b, a), np.where(swap, a, b), np.where(swap, 1 - xi, xi)
    log_front = (math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)) + a * np.log(xi) + b * np.log1p(-xi)
    qab, qap, qam = aa + bb, aa + 1, aa - 1
    c = np.ones_like(xx)
    dd = 1 / _away_from_zero(1 - qab * xx / qap)
    h = dd.copy()
    for m in range(1, 1000):
        m2 = 2 * m
        num = m * (bb - m) * xx / ((qam + m2) * (aa + m2))
        dd = 1 / _away_from_zero(1 + num * dd)
        c = _away_from_zero(1 + num / c)
        h = h * dd * c
        num = -(aa + m) * (qab + m) * xx / ((aa + m2) * (qap + m2))
        dd = 1 / _away_from_zero(1 + num * dd)
        c = _away_from_zero(1 + num / c)
        step = dd * c
        h = h * step
        if np.all(np.abs(step - 1) < 1e-15):
            break
    front = np.exp(log_front) * h / aa
    out[inside] = np.where(swap, 1 - front, front)
    return out


def _gauss_legendre(edges, nodes):
    x, w = np.polynomial.legendre.leggauss(nodes)
    points, weights = [], []
    for a, b in zip(edges[:-1], edges[1:]):
        points.append((b - a) / 2 * x + (a + b) / 2)
        weights.append((b - a) / 2 * w)
    return np.concatenate(points), np.concatenate(weights)


def _edges(low: float, high: float, *, toward_low: bool = True, toward_high: bool = False) -> np.ndarray:
    """Panel edges on [low, high]: UNIFORM_PANELS equal panels (the bulk), refined geometrically (by 4, GEOMETRIC_PANELS
    times) towards an end where the integrand may concentrate or the density be singular."""
    width = high - low
    edges = set(np.linspace(low, high, UNIFORM_PANELS + 1).tolist())
    first = width / UNIFORM_PANELS
    steps = [first * 4.0 ** -j for j in range(1, GEOMETRIC_PANELS + 1) if first * 4.0 ** -j > 1e-12 * width]
    if toward_low:
        edges.update(low + step for step in steps)
    if toward_high:
        edges.update(high - step for step in steps)   # nodes stay off the end: a float64 B = 1 would be singular
    return np.array(sorted(edges))


def _survival_at_pi(n, d, x) -> float:
    """theta = pi: theta_T = -r theta_S, kappa = 1 and R / ||theta_T||^2 = 4 (1 - G_11), G_11 ~ Beta(n/2, (d-n)/2)."""
    if x >= 4:
        return 0.0
    if x <= 0:
        return 1.0
    return float(regularized_beta(n / 2, (d - n) / 2, np.array([1 - x / 4]))[0])


def _survival_plane(n: int, d: int, theta: float, x: float) -> float:
    """S(x) for n >= 2 by the (B, alpha) integral of the module docstring, float64."""
    st, ct = math.sin(theta), math.cos(theta)
    reach = math.sqrt(x) - 1 if x > 0 else 0.0          # R > x needs kappa > sqrt(x) - 1, and kappa^2 <= 1 / B
    b_top = min(1.0, 1 / reach**2) if reach > 1 else 1.0
    # refined towards B = 0 always (the tail), towards B = 1 and alpha = +-1 where the density is not smooth there
    B, wb = _gauss_legendre(_edges(0.0, b_top, toward_high=b_top == 1.0 and d - n < 4), GL_NODES)
    top = min(1.0, 12 / math.sqrt(d))
    rough = top == 1.0 and d < 6
    alpha, wa = _gauss_legendre(_edges(-top, top, toward_low=rough, toward_high=rough), GL_NODES)
    B, wb = B[:, None], wb[:, None]
    al = alpha[None, :]
    log_beta_b = math.lgamma(n / 2) + math.lgamma((d - n) / 2) - math.lgamma(d / 2)
    log_beta_alpha = math.lgamma(0.5) + math.lgamma((d - 2) / 2) - math.lgamma((d - 1) / 2)
    weight_b = np.exp((n / 2 - 1) * np.log(B) + ((d - n) / 2 - 1) * np.log1p(-B) - log_beta_b)
    weight_alpha = np.exp((d - 4) / 2 * np.log1p(-al**2) - log_beta_alpha)
    g12 = np.sqrt(B * (1 - B)) * al
    k0 = np.abs(ct + st * al * np.sqrt((1 - B) / B))           # kappa at b = 0
    span = st**2 * (1 - al**2) / B                              # kappa^2 at b = 1 - alpha^2, minus k0^2
    kmax = np.sqrt(k0**2 + span)
    a2, m, c0 = 1 - 2 * B, ct * (1 - B) - st * g12, 1 - x      # (R) > x  <=>  a2 kappa^2 - 2 m kappa + c0 > 0
    disc = m * m - a2 * c0
    root = np.sqrt(np.maximum(disc, 0))
    with np.errstate(divide="ignore", invalid="ignore"):
        r1, r2 = (m - root) / a2, (m + root) / a2
    low = np.clip(np.nan_to_num(np.minimum(r1, r2)), k0, kmax)
    high = np.clip(np.nan_to_num(np.maximum(r1, r2)), k0, kmax)
    pa, pb = (n - 1) / 2, (d - n - 1) / 2

    def cdf(kappa):                                            # P(kappa(b) <= kappa) = P(beta' <= fraction)
        fraction = np.clip((kappa**2 - k0**2) / span, 0, 1)
        return regularized_beta(pa, pb, fraction.ravel()).reshape(fraction.shape)

    if pb == 0:                                                # n = d - 1: beta' = 1, b = 1 - alpha^2, kappa = kmax
        fails = (a2 * kmax**2 - 2 * m * kmax + c0 > 0).astype(float)
    else:
        f_low, f_high = cdf(low), cdf(high)
        opens_up = a2 > 0
        fails = np.where(disc > 0, np.where(opens_up, f_low + (1 - f_high), f_high - f_low),
                         np.where(opens_up, 1.0, 0.0))
    return float(np.sum(wb * wa[None, :] * weight_b * weight_alpha * fails))


@lru_cache(maxsize=4096)
def _cached(n: int, d: int, theta: float, x: float) -> float:
    if math.sin(theta) < SINE_FLOOR:
        return _survival_at_pi(n, d, x)
    if n == 1:
        with mp.workdps(20):
            return float(deep_risk_survival_n1(d, theta, x))
    return min(1.0, max(0.0, _survival_plane(n, d, theta, x)))


def deep_risk_survival(n, d, theta, x) -> float:
    """P(R(beta_{L -> oo}) > x ||theta_T||^2) for a Gaussian n x d design, 1 <= n <= d - 1, 0 < theta <= pi (a float).

    n = 1: the Cauchy closed form minus a one-dimensional correction (mpmath); n >= 2: a two-dimensional integral
    (float64 Gauss-Legendre).  The probability that bound (9) fails is this at x = (9) / ||theta_T||^2."""
    n, d, theta, x = int(n), int(d), float(theta), float(x)
    if not 1 <= n <= d - 1 or not 0 < theta <= math.pi + 1e-12:
        raise ValueError("need 1 <= n <= d - 1 and 0 < theta <= pi")
    return _cached(n, d, theta, x)
