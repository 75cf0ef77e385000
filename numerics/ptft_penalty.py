"""The per-unit implicit penalty of pretraining + fine-tuning in two-layer ReLU networks
(PT+FT appendix, Sec. 1, eqs. (6)-(11)), in mpmath.

A hidden unit with pretrained first-layer weight w0 (norm m0) and readout re-initialised to
gamma represents the fine-tuned function (direction w_hat, signed magnitude m = ||w1|| w2) at
the least squared parameter deviation r~ = min_{u>0} p(u) (u = ||w1||, w2 = m/u), with

    p(u) = (m/u - gamma)^2 + u^2 + m0^2 - 2 u m0 rho,                                   (8)
    u^3 p'(u) / 2 = u^4 - m0 rho u^3 + gamma m u - m^2 = 0  at a stationary point.      (10)

Two routes to r~, so that they can check each other:

- ``penalty_from_quartic``: the paper's route, the positive real roots of the quartic (10)
  (``mp.polyroots``) and p at the best of them (eq. (11));
- ``penalty_by_minimisation``: p itself minimised on a log grid over a bracket that holds every
  stationary point, each grid minimum refined by golden section and then by ``mp.findroot`` on
  p' computed by ``mp.diff``; it never uses (9) or (10).

Where the positive stationary points lie (``stationary_bracket``).  p'(u) = 0 reads
u - m0 rho = (m/u - gamma) m / u^2.  If u >= U = 2 (m0 + |gamma m|^(1/3) + |m|^(1/2)), the left side
is >= u/2 and the right side <= m^2/u^3 + |gamma m|/u^2 <= u/16 + u/8: no stationary point.  If
u <= L = min(|m|/(2|gamma|), |m|^(1/2)/2, (m^2/(4 m0))^(1/3)), then |m/u - gamma| >= |m|/(2u), so the
right side is >= m^2/(2u^3) > u + m0 >= |left side|: none either.  (Terms with gamma = 0 or m0 = 0
are dropped from the minimum.)  Since p -> oo at both ends (m != 0), the global minimiser is
one of the stationary points in (L, U).

How many positive roots (``quartic_discriminant``, checked by sympy in theorems/ptft.py).  The
signs of eq. (10) are +, -rho, gamma m, -: Descartes' rule proves exactly one positive root when
rho <= 0 or gamma m <= 0.  When rho > 0 and gamma m > 0 they are + - + - (one or three positive
roots), while the quartic at -u has + + - - (exactly one negative root); with q(0) = -m^2 < 0 there
are then three positive roots exactly when the discriminant is positive (four real roots).
Convexity (p'' >= 2 - gamma^4/(8 m^2)) proves one for gamma^2 < 4|m|; as m -> 0 the discriminant
~ 4 m^3 gamma^3 (m0 rho)^3 > 0: three positive roots once |m| < ~ 4|gamma|^3/(27 m0 rho) (for
|gamma| << m0 rho).

Functions take mpmath numbers (ints, strings and floats are converted exactly) and work at the
caller's precision with guard bits; the global precision is never changed.
"""

from __future__ import annotations

import math

import mpmath as mp

__all__ = [
    "penalty",
    "quartic_coefficients",
    "quartic_discriminant",
    "positive_real_roots",
    "stationary_bracket",
    "penalty_from_quartic",
    "penalty_by_minimisation",
    "penalty_slope",
    "penalty_slope_by_differences",
    "stationary_residual",
    "certified_penalty",
    "certified_slope",
]

GUARD_BITS = 20


def _mpf(x):
    return x if isinstance(x, mp.mpf) else mp.mpf(x)


def penalty(u, rho, m0, m, gamma):
    """Eq. (8): p(u) = (m/u - gamma)^2 + u^2 + m0^2 - 2 u m0 rho (operators only: mpmath or torch)."""
    return (m / u - gamma) ** 2 + u * u + m0 * m0 - 2 * u * m0 * rho


def quartic_coefficients(rho, m0, m, gamma):
    """Eq. (10), highest degree first: u^4 - m0 rho u^3 + 0 u^2 + gamma m u - m^2."""
    return [1, -m0 * rho, 0, gamma * m, -m * m]


def quartic_discriminant(rho, m0, m, gamma):
    """The discriminant of eq. (10) (sympy's ``discriminant``, factored; a = m0 rho):
    -m^3 (27 gamma^4 m - 4 gamma^3 a^3 - 6 gamma^2 m a^2 - 192 gamma m^2 a + 256 m^3 + 27 m a^4).
    For rho > 0 and gamma m > 0, positive exactly when the quartic has three positive roots (module docstring)."""
    rho, m0, m, gamma = map(_mpf, (rho, m0, m, gamma))
    with mp.workprec(mp.mp.prec + GUARD_BITS):
        a = m0 * rho
        inner = (27 * gamma**4 * m - 4 * gamma**3 * a**3 - 6 * gamma**2 * m * a**2 - 192 * gamma * m**2 * a
                 + 256 * m**3 + 27 * m * a**4)
        value = -m**3 * inner
    return +value


def positive_real_roots(coefficients):
    """The positive real roots of a real polynomial (highest degree first), ascending.

    ``mp.polyroots`` runs at twice the caller's precision, so that even a double root (which
    loses half the digits) is resolved to the caller's precision; a root counts as real when its
    imaginary part is below 2^(-3 prec/4) (1 + |root|) (a complex pair closer to the axis than
    that is a double root at the caller's precision).
    """
    prec = mp.mp.prec
    with mp.workprec(2 * prec + GUARD_BITS):
        coefficients = [_mpf(c) for c in coefficients]
        roots = mp.polyroots(coefficients, maxsteps=400, extraprec=GUARD_BITS)
        floor = mp.mpf(2) ** (-(3 * prec) // 4)
        real = sorted(mp.re(r) for r in roots if abs(mp.im(r)) <= floor * (1 + abs(r)))
    return [+r for r in real if r > 0]


def stationary_bracket(rho, m0, m, gamma):
    """(L, U) holding every positive stationary point of eq. (8) (proof in the module docstring)."""
    rho, m0, m, gamma = map(_mpf, (rho, m0, m, gamma))
    if m == 0:
        raise ValueError("m = 0: p(u) does not diverge as u -> 0 and need not have a positive minimiser")
    with mp.workprec(mp.mp.prec + GUARD_BITS):
        upper = 2 * (m0 + mp.cbrt(abs(gamma * m)) + mp.sqrt(abs(m)))
        lower = [mp.sqrt(abs(m)) / 2]
        if gamma != 0:
            lower.append(abs(m) / (2 * abs(gamma)))
        if m0 != 0:
            lower.append(mp.cbrt(m * m / (4 * m0)))
        lo = min(lower)
    return +lo, +upper


def penalty_from_quartic(rho, m0, m, gamma, quartic=quartic_coefficients, penalty_fn=penalty):
    """Eq. (11): p at the positive roots of eq. (10); returns (r~, u*, all positive roots).

    With several positive roots (see the module docstring) r~ is the least p among them."""
    rho, m0, m, gamma = map(_mpf, (rho, m0, m, gamma))
    with mp.workprec(mp.mp.prec + GUARD_BITS):
        roots = positive_real_roots(quartic(rho, m0, m, gamma))
        if not roots:
            raise ValueError("the quartic has no positive root")
        values = [penalty_fn(u, rho, m0, m, gamma) for u in roots]
        best = min(range(len(roots)), key=values.__getitem__)
        value, u_star = values[best], roots[best]
    return +value, +u_star, [+r for r in roots]


def _golden_section(f, a, b, tol):
    """A minimiser of f on [a, b] (f unimodal there) to within tol."""
    ratio = (mp.sqrt(5) - 1) / 2
    c, d = b - ratio * (b - a), a + ratio * (b - a)
    fc, fd = f(c), f(d)
    while b - a > tol:
        if fc <= fd:
            b, d, fd = d, c, fc
            c = b - ratio * (b - a)
            fc = f(c)
        else:
            a, c, fc = c, d, fd
            d = a + ratio * (b - a)
            fd = f(d)
    return (a + b) / 2


def penalty_by_minimisation(rho, m0, m, gamma, penalty_fn=penalty, points_per_decade=24):
    """min_{u>0} p(u) by direct minimisation of p, without eqs. (9)-(10).

    A log grid over twice the stationary bracket locates every local minimum that is wider than
    the grid spacing (1/points_per_decade decades); each is refined by golden section in log u,
    then by ``mp.findroot`` on d p(e^x)/dx (``mp.diff``).  Returns (r~, u*, local minimisers).
    """
    rho, m0, m, gamma = map(_mpf, (rho, m0, m, gamma))
    lo, hi = stationary_bracket(rho, m0, m, gamma)
    prec = mp.mp.prec
    with mp.workprec(prec + GUARD_BITS):
        f = lambda x: penalty_fn(mp.exp(x), rho, m0, m, gamma)
        x_lo, x_hi = mp.log(lo / 2), mp.log(2 * hi)
        count = int(math.ceil(points_per_decade * float(x_hi - x_lo) / math.log(10))) + 3
        xs = mp.linspace(x_lo, x_hi, count)
        values = [f(x) for x in xs]
        minima = []
        for i in range(1, count - 1):
            if values[i] <= values[i - 1] and values[i] <= values[i + 1]:
                x = _golden_section(f, xs[i - 1], xs[i + 1], mp.mpf(2) ** (-prec // 2))
                try:
                    x = mp.findroot(lambda y: mp.diff(f, y), x, tol=mp.mpf(2) ** (-2 * prec))
                except ValueError:
                    pass  # findroot's own accuracy test failed: keep the golden-section point
                minima.append(mp.exp(x))
        if not minima:
            raise ValueError("no interior minimum on the grid (the bracket proof excludes this for eq. (8))")
        pairs = sorted((penalty_fn(u, rho, m0, m, gamma), u) for u in minima)
        value, u_star = pairs[0]
    return +value, +u_star, sorted(+u for u in minima)


def _quartic_value(coefficients, u):
    return mp.polyval(list(coefficients), u)


def penalty_slope(rho, m0, m, gamma, quartic=quartic_coefficients, penalty_fn=penalty):
    """d log r~ / d log m = m r~'(m) / r~ by implicit differentiation of the root u*(m) of eq. (10):
    du*/dm = -(dq/dm)/(dq/du), r~'(m) = dp/dm + dp/du du*/dm (partial derivatives by ``mp.diff``).
    Returns (slope, r~, u*)."""
    rho, m0, m, gamma = map(_mpf, (rho, m0, m, gamma))
    with mp.workprec(mp.mp.prec + GUARD_BITS):
        value, u, _ = penalty_from_quartic(rho, m0, m, gamma, quartic, penalty_fn)
        dq_du = mp.diff(lambda v: _quartic_value(quartic(rho, m0, m, gamma), v), u)
        dq_dm = mp.diff(lambda k: _quartic_value(quartic(rho, m0, k, gamma), u), m)
        dp_du = mp.diff(lambda v: penalty_fn(v, rho, m0, m, gamma), u)
        dp_dm = mp.diff(lambda k: penalty_fn(u, rho, m0, k, gamma), m)
        derivative = dp_dm - dp_du * dq_dm / dq_du
        slope = m * derivative / value
    return +slope, +value, +u


def penalty_slope_by_differences(rho, m0, m, gamma, step=None, penalty_fn=penalty):
    """d log r~ / d log m by a central difference of log r~ in log m, r~ from direct minimisation
    (an independent check of ``penalty_slope``).  The step defaults to 2^(-prec/3), which balances
    the O(step^2) truncation against rounding."""
    rho, m0, m, gamma = map(_mpf, (rho, m0, m, gamma))
    prec = mp.mp.prec
    with mp.workprec(prec + GUARD_BITS):
        h = _mpf(step) if step is not None else mp.mpf(2) ** (-prec // 3)
        log_r = lambda x: mp.log(penalty_by_minimisation(rho, m0, m * mp.exp(x), gamma, penalty_fn)[0])
        slope = (log_r(h) - log_r(-h)) / (2 * h)
    return +slope


# --- certified versions (``verify.py --certify``): balls and exact polynomials ---------------------------------

def stationary_residual(penalty_fn, quartic, rho, m, gamma, m_aux):
    """u^3 p'(u)/2 - q(u) with u and m0 symbols, the point's rho, m, gamma exact, then m0 = sqrt(m_aux) exactly
    (sympy): 0 exactly when the quartic's roots are the stationary points of p, a nonzero polynomial in u when
    they are not.  The formulas are operators only, so they take sympy symbols as they take mpmath numbers."""
    import sympy as sp
    from numerics.certified import EXACT, in_space
    u, m0 = sp.symbols("u m_0", positive=True)
    args = [sp.sympify(x) for x in (rho, m0, m, gamma)]
    p = in_space(penalty_fn, EXACT)(u, *args)
    coefficients = in_space(quartic, EXACT)(*args)
    q = sum(sp.sympify(c) * u ** (len(coefficients) - 1 - k) for k, c in enumerate(coefficients))
    residual = sp.expand(sp.simplify(u**3 * sp.diff(p, u) / 2 - q))
    return sp.expand(residual.subs(m0, sp.sqrt(sp.sympify(m_aux))))


def certified_penalty(rho, m0, m, gamma, quartic=quartic_coefficients, penalty_fn=penalty):
    """Eq. (11) in balls: (r~, u*, positive roots), the positive roots of ``quartic`` isolated
    (``numerics.certified.positive_real_roots``) and r~ = p at the root where p is certainly least.
    Raises numerics.certified.Undecided where the roots or the least p are not decided."""
    from numerics.certified import Undecided, ball, positive_real_roots
    rho, m0, m, gamma = (ball(x) for x in (rho, m0, m, gamma))
    roots = positive_real_roots(quartic(rho, m0, m, gamma))
    if not roots:
        raise Undecided("the quartic has no positive root")
    values = [penalty_fn(u, rho, m0, m, gamma) for u in roots]
    for i, value in enumerate(values):
        if all(value < other for j, other in enumerate(values) if j != i):
            return value, roots[i], roots
    raise Undecided(f"p at the {len(roots)} positive roots is not decided least at one of them")


def _derivative(value):
    """The first-order coefficient of an arb_series (0 when the series was constant)."""
    from numerics.certified import flint
    coefficients = value.coeffs() if isinstance(value, flint().arb_series) else []
    return coefficients[1] if len(coefficients) > 1 else flint().arb(0)


def certified_slope(rho, m0, m, gamma, quartic=quartic_coefficients, penalty_fn=penalty):
    """``penalty_slope`` in balls: (s, r~, u*), the partial derivatives by first-order Taylor arithmetic
    (arb_series) instead of ``mp.diff``'s differences.  s is not finite where r~'s ball holds 0."""
    from numerics.certified import ball, flint
    rho, m0, m, gamma = (ball(x) for x in (rho, m0, m, gamma))
    value, u, _ = certified_penalty(rho, m0, m, gamma, quartic, penalty_fn)
    series = lambda x: flint().arb_series([x, 1], prec=2)   # noqa: E731
    polynomial = lambda coefficients, x: _horner(coefficients, x)   # noqa: E731
    dq_du = _derivative(polynomial(quartic(rho, m0, m, gamma), series(u)))
    dq_dm = _derivative(polynomial(quartic(rho, m0, series(m), gamma), u))
    dp_du = _derivative(penalty_fn(series(u), rho, m0, m, gamma))
    dp_dm = _derivative(penalty_fn(u, rho, m0, series(m), gamma))
    derivative = dp_dm - dp_du * dq_dm / dq_du
    return m * derivative / value, value, u


def _horner(coefficients, x):
    total = 0
    for c in coefficients:
        total = total * x + c
    return total
