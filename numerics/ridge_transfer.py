"""Ridge linear transfer on a rank-one pretrained feature map (Features are fate,
Thm 3.8, App. B.7, eqs. (121)-(141)), by mpmath quadrature.

Setting: x ~ N(0, I_d), unit beta_s, beta_t with beta_s . beta_t = cos(theta),
y = X beta_t + eps, eps ~ N(0, sigma^2 I_n).  With the rank-one feature map
Phi = (X beta_s) v^T, ridge linear transfer gives (eq. 126)

    beta_hat = b beta_s,   b = z^T y / (||z||^2 + n lam),   z = X beta_s ~ N(0, I_n),

and R = ||beta_hat - beta_t||^2 = 1 - 2 cos(theta) b + b^2.

Notation used throughout: s = ||z||^2 ~ chi-square(n), c = n lam >= 0,
kappa = sin^2(theta) + sigma^2.  Conditioning on z, with y = cos z + sin w + eps
(w = X nu independent of z), z^T y = cos s + N(0, kappa s), so

    E[b | s]   = cos(theta) s / (s + c),
    E[b^2 | s] = (cos^2(theta) s^2 + kappa s) / (s + c)^2,
    E[R | s]   = sin^2(theta) + (cos^2(theta) c^2 + kappa s) / (s + c)^2.     (*)

All functions take and return mpmath numbers and work at the caller's
precision: guard digits are added only inside ``mp.workprec`` blocks and the
result is rounded back to the caller's precision.  The global precision is never
changed.
"""

from __future__ import annotations

import mpmath as mp

__all__ = [
    "chi_moment_ratio",
    "chi_square_expectation",
    "paper_eq128",
    "ridge_transfer_conditional_risk",
    "ridge_transfer_expected_risk",
    "ridge_transfer_integrals",
    "ridge_transfer_large_n_gap_coefficient",
    "ridge_transfer_limit",
    "ridge_transfer_optimal_lambda",
    "transfer_risk_lambda0",
]


def _guard_bits(n):
    # The log-density (n - 1) log v - v^2 - lgamma(n/2) cancels terms of size
    # ~ n log n; keep enough extra bits so that exp() of it is accurate.
    return 20 + 2 * int(mp.log(mp.mpf(n) + 2, 2)) + 10


def chi_square_expectation(n, f, extra_points=()):
    """E f(s) for s ~ chi-square with n degrees of freedom, by mp.quad.

    Radial form of eqs. (129)-(130): with s = r^2 = 2 v^2 (v = r / sqrt 2),

        E f(s) = int_0^inf f(2 v^2) 2 exp((n - 1) log v - v^2 - lgamma(n/2)) dv,

    i.e. S_{n-1}/(2 pi)^{n/2} r^{n-1} e^{-r^2/2} dr rewritten in log-space so
    there is no overflow for n up to 10^6 and beyond.  Using v rather than
    u = s/2 makes the endpoint behaviour at 0 an integer power of v for integer
    n and the usual f = s^a/(s+c)^k, which tanh-sinh integrates to full
    precision (u^(-1/2)-type endpoint singularities cost it ~10 digits).
    The range is split at u = n/2 - 1 (mode of u = s/2) plus/minus multiples of
    sqrt(n/2) (mapped to v = sqrt(u)), then [last, inf].  ``f`` is called with
    an mpf s > 0 at working precision (caller's precision plus guard bits).
    ``extra_points`` are additional s-values to split at (e.g. s = n lam).
    """
    n = mp.mpf(n)
    if n <= 0:
        raise ValueError("need n > 0 degrees of freedom")
    with mp.workprec(mp.mp.prec + _guard_bits(n)):
        p = n / 2
        lg = mp.loggamma(p)

        def integrand(v):
            if v <= 0:
                return mp.mpf(0)
            return 2 * f(2 * v * v) * mp.exp((n - 1) * mp.log(v) - v * v - lg)

        mode = max(p - 1, mp.mpf(0))
        sd = mp.sqrt(p)
        pts = {mp.mpf(0)}
        for j in (-60, -30, -15, -8, -4, -2, -1, 0, 1, 2, 4, 8, 15, 30, 60, 120):
            u = mode + j * sd
            if u > 0:
                pts.add(mp.sqrt(u))
        for s0 in extra_points:
            if s0 > 0:
                pts.add(mp.sqrt(mp.mpf(s0) / 2))
        pts = sorted(pts) + [mp.inf]
        value = mp.quad(integrand, pts)
    return +value


def chi_moment_ratio(n, a, c, k):
    """E[ s^a / (s + c)^k ] for s = ||z||^2 ~ chi-square(n), c >= 0, by quadrature.

    Finiteness: the tail at s -> inf is always fine (Gaussian-type decay).  Near
    s = 0 the integrand behaves like s^(n/2 + a - 1) if c > 0 and like
    s^(n/2 + a - k - 1) if c = 0, so the expectation is finite iff
    n + 2a > 0 (c > 0) or n + 2(a - k) > 0 (c = 0).  A ValueError is raised
    otherwise (and for c < 0, where s + c can vanish).
    """
    n, a, c, k = mp.mpf(n), mp.mpf(a), mp.mpf(c), mp.mpf(k)
    if c < 0:
        raise ValueError("c = n lam must be >= 0")
    if (c > 0 and n + 2 * a <= 0) or (c == 0 and n + 2 * (a - k) <= 0):
        raise ValueError("E[s^a/(s+c)^k] is infinite for these n, a, c, k")
    return chi_square_expectation(n, lambda s: s ** a / (s + c) ** k,
                                  extra_points=(c,) if c > 0 else ())


def ridge_transfer_integrals(n, lam):
    """(I1(n, lam), I1(n+2, lam), I2(n, lam)) of eqs. (129)-(130), by quadrature.

    With s = ||z||^2 ~ chi-square(n) and c = n lam:
        I1(n,   lam) = E[ s   / (s + c)^2 ]
        I1(n+2, lam) = E[ s^2 / (s + c)^2 ]
        I2(n,   lam) = E[ s   / (s + c)   ]
    (the paper's ||z||^(m-n+2) is s for m = n and s^2 for m = n + 2).

    Finite for every n >= 1 when lam > 0.  At lam = 0 they are 1/(n-2), 1, 1,
    so I1(n, 0) needs n > 2 (ValueError otherwise).  lam < 0 is rejected.
    """
    c = mp.mpf(n) * mp.mpf(lam)
    return (chi_moment_ratio(n, 1, c, 2),
            chi_moment_ratio(n, 2, c, 2),
            chi_moment_ratio(n, 1, c, 1))


def paper_eq128(n, lam, theta, sigma):
    """Eq. (128) as printed:
    1 + cos^2 I1(n+2, lam) + (sin^2 + sigma^2) I1(n, lam) - 2 cos^2 I2(n, lam).

    Evaluated from ``ridge_transfer_integrals`` (three quadratures).  This is
    exactly equal to the finite-n expectation (*) (see
    ``ridge_transfer_expected_risk``).  Finite for lam > 0 and all n >= 1;
    for lam = 0 needs n > 2.
    """
    i1n, i1n2, i2n = ridge_transfer_integrals(n, lam)
    co2 = mp.cos(theta) ** 2
    kappa = mp.sin(theta) ** 2 + mp.mpf(sigma) ** 2
    return 1 + co2 * i1n2 + kappa * i1n - 2 * co2 * i2n


def ridge_transfer_conditional_risk(s, c, theta, sigma):
    """E[R | ||z||^2 = s] = sin^2 + (cos^2 c^2 + (sin^2 + sigma^2) s) / (s + c)^2.

    Derived from E[b|s] = cos s/(s+c), E[b^2|s] = (cos^2 s^2 + kappa s)/(s+c)^2,
    R = 1 - 2 cos b + b^2, using z^T w | z ~ N(0, s), z^T eps | z ~ N(0, sigma^2 s).
    """
    co2 = mp.cos(theta) ** 2
    si2 = mp.sin(theta) ** 2
    kappa = si2 + mp.mpf(sigma) ** 2
    return si2 + (co2 * c * c + kappa * s) / (s + c) ** 2


def ridge_transfer_expected_risk(n, lam, theta, sigma):
    """Exact finite-n E_{X,eps} ||beta_hat - beta_t||^2 for ridge linear transfer.

    Computed by one quadrature of the conditional risk (*) against the
    chi-square(n) density:

        E R = sin^2(theta) + E[ (cos^2(theta) (n lam)^2 + (sin^2(theta) + sigma^2) s)
                                / (s + n lam)^2 ],   s ~ chi-square(n).

    Note on eq. (128): expanding the numerator, (cos^2 c^2 + kappa s)/(s+c)^2
    = cos^2 (1 - s/(s+c))^2 + kappa s/(s+c)^2, so this is *identical* to eq. (128)
    with the paper's I1(n), I1(n+2), I2(n): eq. (128) is exactly right at finite n
    (no missing term or coefficient).  ``paper_eq128`` evaluates the printed form
    by three separate quadratures for comparison.

    Domain: lam >= 0.  For lam > 0 finite for every n >= 1; for lam = 0 it needs
    n > 2 (E 1/s = 1/(n-2)) and then equals eq. (12):
    sin^2 + (sigma^2 + sin^2)/(n - 2) (see ``transfer_risk_lambda0``).
    """
    n, lam = mp.mpf(n), mp.mpf(lam)
    if lam < 0:
        raise ValueError("lam must be >= 0")
    if lam == 0 and n <= 2:
        raise ValueError("at lam = 0 the expected risk is infinite for n <= 2")
    with mp.workprec(mp.mp.prec + 10):
        c = n * lam
        co2 = mp.cos(theta) ** 2
        si2 = mp.sin(theta) ** 2
        kappa = si2 + mp.mpf(sigma) ** 2
        fluct = chi_square_expectation(
            n, lambda s: (co2 * c * c + kappa * s) / (s + c) ** 2,
            extra_points=(c,) if c > 0 else ())
        value = si2 + fluct
    return +value


def transfer_risk_lambda0(n, theta, sigma):
    """Eq. (12) (Thm 3.7): sin^2 + (sigma^2 + sin^2)/(n - 2), closed form, n > 2."""
    n = mp.mpf(n)
    if n <= 2:
        raise ValueError("eq. (12) needs n > 2")
    si2 = mp.sin(theta) ** 2
    return si2 + (mp.mpf(sigma) ** 2 + si2) / (n - 2)


def ridge_transfer_limit(lam, theta):
    """Eq. (15) / (141): lim_{n->oo} E R = 1 - cos^2(theta) (1 + 2 lam)/(1 + lam)^2.

    d/dlam = 2 lam cos^2(theta)/(1 + lam)^3 >= 0: strictly increasing on lam >= 0
    when cos(theta) != 0 (derivative 0 at lam = 0); constant (= 1) at
    theta = pi/2, so 'strictly increasing for any theta in [0, pi/2]' fails there.
    Computed as sin^2(theta) + cos^2(theta) (lam / (1 + lam))^2, the same number without the
    cancellation of 1 - (...) where it is small (theta near 0 or pi with a small lam: at
    theta = 0, lam = 1e-9 the printed form kept 22 of 30 digits and float64 none).
    """
    lam = mp.mpf(lam)
    return mp.sin(theta) ** 2 + mp.cos(theta) ** 2 * (lam / (1 + lam)) ** 2


def ridge_transfer_large_n_gap_coefficient(lam, theta, sigma):
    """c1 in E R(n) = eq.(15) + c1/n + O(1/n^2) (delta method on s/n, Var = 2/n):

        c1 = (sin^2 + sigma^2)/(1 + lam)^2 + 6 lam^2 cos^2/(1 + lam)^4.

    At lam = 0 this is sin^2 + sigma^2, matching eq. (12).
    """
    lam = mp.mpf(lam)
    co2 = mp.cos(theta) ** 2
    kappa = mp.sin(theta) ** 2 + mp.mpf(sigma) ** 2
    return kappa / (1 + lam) ** 2 + 6 * lam ** 2 * co2 / (1 + lam) ** 4


def ridge_transfer_optimal_lambda(n, theta, sigma):
    """Exact finite-n minimiser of E R over lam >= 0:
    lam* = (sin^2 + sigma^2) / (n cos^2).

    d/dc of (cos^2 c^2 + kappa s)/(s + c)^2 is 2 s (cos^2 c - kappa)/(s + c)^3,
    whose sign does not depend on s, so c* = kappa / cos^2 minimises the
    conditional risk (*) for every s, hence the expectation.  The minimum is
    sin^2 + kappa E[1/(s + c*)].  So at finite n (and kappa > 0, cos != 0) the
    optimal ridge is strictly positive; lam* -> 0 only as n -> oo.  Returns
    mp.inf when cos(theta) = 0.
    """
    co2 = mp.cos(theta) ** 2
    kappa = mp.sin(theta) ** 2 + mp.mpf(sigma) ** 2
    if co2 == 0:
        return mp.inf
    return kappa / (mp.mpf(n) * co2)
