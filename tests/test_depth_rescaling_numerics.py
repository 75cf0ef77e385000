"""numerics.depth_rescaling: Shachaf, Brutzkus & Globerson Sec. 5, eqs. (5)-(10).

Pure-numerics checks (root existence/uniqueness, precision, L = 1, L -> oo, sympy)
plus a direct gradient-flow simulation of small deep linear networks (n = 5, d = 12).
"""

import itertools
import math

import mpmath as mp
import pytest
import sympy as sp
import torch

from numerics.depth_rescaling import (
    aligned_task_deep_limit_risk,
    aligned_task_linear_risk,
    aligned_task_risk,
    eq9_deep_risk_bound,
    eq9_tail_constant_n1,
    eq10_linear_risk_bound,
    finetune_risk_quadratic,
    finetune_risk_vectors,
    frozen_first_layer_coefficient,
    implicit_residual,
    linear_expected_risk_gaussian,
    linear_risk_ratio_variance,
    projection_tail,
    rescaling_bracket,
    rescaling_coefficient,
    rescaling_coefficient_first_order,
    rescaling_limit_coefficient,
    rescaling_norm,
    symbolic_depth_limit,
    thm54_admissible_c,
    thm54_failure_bound,
    thm54_probability,
)
from simulate.depth_finetune import STEP_SCALE, TOL_RK4, apply

A_FRACS = ["0", "1e-12", "0.3", "0.9", "0.999999999", "1"]       # a / s^2 = ||P_perp theta_S||^2 / ||theta_S||^2
B_VALUES = ["0", "1e-20", "0.5", "1e6"]
S_VALUES = ["1e-3", "1", "1e3"]
L_VALUES = [1, 2, 3, "7.5", 50, 10**6]


def _grid():
    for af, b, s, L in itertools.product(A_FRACS, B_VALUES, S_VALUES, L_VALUES):
        s_ = mp.mpf(s)
        a = mp.mpf(af) * s_ * s_
        b = mp.mpf(b)
        if a == 0 and b == 0:
            continue
        yield a, b, s_, mp.mpf(L)


# ----------------------------------------------------------------------------
# the implicit equation (5)
# ----------------------------------------------------------------------------

def test_root_exists_is_unique_and_bracketed_on_grid():
    with mp.workdps(30):
        count = 0
        for a, b, s, L in _grid():
            r = rescaling_norm(a, b, s, L)
            c = rescaling_coefficient(a, b, s, L)
            assert r > 0
            with mp.workdps(80):                                # residual of the 30-digit root, evaluated exactly
                p = (L - 1) / L
                lhs, rhs = r * r, a * (r / s) ** (2 * p) + b
                assert abs(lhs - rhs) <= mp.mpf("1e-28") * (lhs + rhs), (a, b, s, L)
                assert abs(c - (r / s) ** p) <= mp.mpf("1e-28") * c
            lo, hi = rescaling_bracket(a, b, s, L)
            assert lo * (1 - mp.mpf("1e-25")) <= r <= hi * (1 + mp.mpf("1e-25"))
            # uniqueness: residual / r^(2p) is increasing, so the sign changes exactly once,
            # at r, over a log grid spanning 60 decades around r
            signs = []
            for k in range(-30, 31):
                if k == 0:
                    continue
                rk = r * mp.mpf(10) ** (mp.mpf(k) / 3)
                signs.append(mp.sign(implicit_residual(rk, a, b, s, L)))
            assert signs[:30] == [-1] * 30 and signs[30:] == [1] * 30, (a, b, s, L, signs)
            for f in (1 - mp.mpf("1e-20"), 1 + mp.mpf("1e-20")):
                val = implicit_residual(r * f, a, b, s, L)
                assert mp.sign(val) == (-1 if f < 1 else 1) or val == 0
            # c lies between 1 (L = 1) and the L -> oo limit (eq. (6)) when P_par theta_S != 0
            if a < s * s and b > 0:
                c_inf = rescaling_limit_coefficient(a, b, s)
                assert min(1, c_inf) * (1 - mp.mpf("1e-25")) <= c <= max(1, c_inf) * (1 + mp.mpf("1e-25"))
            count += 1
        assert count == len(A_FRACS) * len(B_VALUES) * len(S_VALUES) * len(L_VALUES) - len(S_VALUES) * len(L_VALUES)


def test_extreme_magnitudes():
    """Huge/tiny norms and depths, incl. a case where h(x) at the bracket end is pure rounding noise
    (s = 1.36e93, a = 1.7e-4 s^2, b = 1.05e271, L = 2)."""
    import random

    rng = random.Random(7)
    cases = [(mp.mpf("0.000172554050448475") * mp.mpf("1.36025573040487e93") ** 2, mp.mpf("1.05192777157634e271"),
              mp.mpf("1.36025573040487e93"), 2)]
    for _ in range(40):
        s = mp.mpf(10) ** rng.uniform(-100, 100)
        af = rng.choice([mp.mpf(10) ** rng.uniform(-30, 0), 1 - mp.mpf(10) ** rng.uniform(-30, 0), mp.mpf(rng.random()), 1])
        b = rng.choice([mp.mpf(10) ** rng.uniform(-100, 100) * s * s, mp.mpf(rng.random()) * s * s, 0])
        cases.append((af * s * s, b, s, rng.choice([2, 3, 10, rng.uniform(1, 50), 10 ** rng.randint(2, 12)])))
    for a, b, s, L in cases:
        with mp.workdps(30):
            r30, c30 = rescaling_norm(a, b, s, L), rescaling_coefficient(a, b, s, L)
        with mp.workdps(60):
            r60, c60 = rescaling_norm(a, b, s, L), rescaling_coefficient(a, b, s, L)
        with mp.workdps(100):
            p = (mp.mpf(L) - 1) / L
            lhs, rhs = r30 * r30, a * (r30 / s) ** (2 * p) + b
            assert abs(lhs - rhs) <= mp.mpf("1e-28") * (lhs + rhs), (a, b, s, L)
            assert abs(r30 - r60) <= mp.mpf("1e-28") * r60 and abs(c30 - c60) <= mp.mpf("1e-28") * c60


def test_edge_cases_and_errors():
    with mp.workdps(30):
        # a = 0 (theta_S in row(X)): r = ||P_par theta_T||
        assert rescaling_norm(0, "0.49", 2, 5) == mp.mpf("0.7")
        # b = 0 (X theta_T = 0): r = s (a/s^2)^(L/2); r = 0 also solves (5) (spurious)
        a, s, L = mp.mpf("0.3"), mp.mpf(2), 4
        r = rescaling_norm(a, 0, s, L)
        assert abs(r - s * (a / s**2) ** 2) <= mp.mpf("1e-28") * r
        assert implicit_residual(0, a, 0, s, L) == 0
        # ... and c_L = (a/s^2)^((L-1)/2) -> 0: the limit and its 1/L expansion are 0, not 0 * ln 0
        assert rescaling_limit_coefficient(a, 0, s) == 0
        assert rescaling_coefficient_first_order(a, 0, s, L) == 0
        # b = s^2 - a (||P_par theta_T|| = ||P_par theta_S||): rho = 1, c = 1 at every depth
        for L in (2, 3, 100):
            assert rescaling_coefficient("0.36", "0.64", 1, L) == 1
        # theta_S orthogonal to row(X) with b = 0: c = 1 for all L, limit 1
        assert rescaling_coefficient(1, 0, 1, 7) == 1
        assert rescaling_limit_coefficient(1, 0, 1) == 1
        for bad in [(0, 0, 1, 2), (1, 1, 0, 2), (1, 1, -1, 2), (-1, 1, 1, 2), (1, -1, 1, 2),
                    (1, 1, 1, "0.5"), (1, 1, 1, mp.nan), (mp.inf, 1, 1, 2)]:
            with pytest.raises(ValueError):
                rescaling_norm(*bad)
            with pytest.raises(ValueError):
                rescaling_coefficient(*bad)
        with pytest.raises(ValueError):          # P_par theta_S = 0, b > 0: c_L -> oo
            rescaling_limit_coefficient(1, "0.5", 1)
        with pytest.raises(ValueError):
            rescaling_coefficient(1, "0.5", 1, mp.inf)
        # ... while every finite depth is fine and c_L grows without bound
        cs = [rescaling_coefficient(1, "0.5", 1, L) for L in (2, 10, 100, 1000)]
        assert all(x < y for x, y in zip(cs, cs[1:])) and cs[-1] > 5


def test_L1_is_theorem_4_1():
    with mp.workdps(40):
        for a, b, s, _ in _grid():
            assert rescaling_coefficient(a, b, s, 1) == 1
            r = rescaling_norm(a, b, s, 1)
            assert abs(r - mp.sqrt(a + b)) <= mp.mpf("1e-39") * r


def test_precision_30_vs_60_and_global_precision_untouched():
    prec0 = mp.mp.prec
    worst = mp.mpf(0)
    cases = list(_grid())[::7]
    for a, b, s, L in cases:
        with mp.workdps(30):
            c30 = rescaling_coefficient(a, b, s, L)
            r30 = rescaling_norm(a, b, s, L)
            assert mp.mp.dps == 30
        with mp.workdps(60):
            c60 = rescaling_coefficient(a, b, s, L)
            r60 = rescaling_norm(a, b, s, L)
            assert mp.mp.dps == 60
        worst = max(worst, abs(c30 - c60) / c60, abs(r30 - r60) / r60)
    assert worst <= mp.mpf("1e-28"), worst
    assert mp.mp.prec == prec0
    # the result is rounded to the caller's precision
    with mp.workdps(15):
        assert rescaling_coefficient("0.9", "0.4", 1, 3).context.prec == mp.mp.prec


# ----------------------------------------------------------------------------
# the L -> oo limit (6)
# ----------------------------------------------------------------------------

LIMIT_CASES = [("0.9", "0.4", "1"), ("0.5", "0.05", "1"), ("3", "7", "2"), ("0.99", "1e-4", "1")]


def test_limit_eq6_follows_from_eq5():
    with mp.workdps(40):
        for a, b, s in LIMIT_CASES:
            a, b, s = mp.mpf(a), mp.mpf(b), mp.mpf(s)
            c_inf = rescaling_limit_coefficient(a, b, s)
            # eq. (6) in the paper's form ||P_par theta_T|| / ||P_par theta_S||
            assert abs(c_inf - mp.sqrt(b) / mp.sqrt(s * s - a)) <= mp.mpf("1e-39") * c_inf
            assert rescaling_coefficient(a, b, s, mp.inf) == c_inf
            assert abs(rescaling_norm(a, b, s, mp.inf) - s * c_inf) <= mp.mpf("1e-38") * s * c_inf
            # monotone in L, from 1 towards c_inf
            cs = [rescaling_coefficient(a, b, s, L) for L in (1, 2, 3, 5, 10, 100, 10**4, 10**8)]
            diffs = [abs(c - c_inf) for c in cs]
            assert all(x > y for x, y in zip(diffs, diffs[1:]))
            # first-order rate: c_L = c_inf + C/L + O(1/L^2), C = -c_inf s^2 ln c_inf / (s^2 - a)
            C = -c_inf * s * s * mp.log(c_inf) / (s * s - a)
            assert diffs[-1] <= 2 * abs(C) / 10**8
            for L in (10**5, 10**6):
                err = rescaling_coefficient(a, b, s, L) - rescaling_coefficient_first_order(a, b, s, L)
                assert abs(err) * L**2 <= 10 * (1 + abs(C)) ** 2 * (s * s / (s * s - a)) ** 2, (a, b, s, L, err)
            assert abs((rescaling_coefficient(a, b, s, 10**8) - c_inf) * 10**8 - C) <= mp.mpf("1e-6") * (1 + abs(C)) * 1e2


def test_symbolic_depth_limit_matches_numerics():
    out = symbolic_depth_limit()
    a, b, s, L, rho, q = out["symbols"]
    assert out["check_paper_form"] is True
    assert sp.simplify(out["limit_paper_form"] - sp.sqrt(b) / sp.sqrt(q)) == 0
    with mp.workdps(30):
        for av, bv, sv in LIMIT_CASES:
            sub = {a: sp.Rational(av), b: sp.Rational(bv), s: sp.Rational(sv)}
            lim = mp.mpf(str(sp.N(out["limit"].subs(sub), 40)))
            first = mp.mpf(str(sp.N(out["first_order"].subs(sub), 40)))
            c_inf = rescaling_limit_coefficient(av, bv, sv)
            assert abs(lim - c_inf) <= mp.mpf("1e-28") * c_inf
            Lbig = 10**7
            numeric_first = (rescaling_coefficient(av, bv, sv, Lbig) - c_inf) * Lbig
            assert abs(numeric_first - first) <= mp.mpf("1e-4") * (1 + abs(first))


def test_slow_approach_to_limit_when_n_much_smaller_than_d():
    """a/s^2 = 1 - n/d for Gaussian X on average; with n/d = 0.1 and aligned tasks alpha = 2
    the coefficient is still far from eq. (6) at the depths used in experiments."""
    with mp.workdps(30):
        a, s, alpha = mp.mpf("0.9"), mp.mpf(1), mp.mpf(2)
        b = alpha**2 * (s * s - a)
        c7 = rescaling_coefficient(a, b, s, 7)
        assert rescaling_limit_coefficient(a, b, s) == 2
        assert mp.mpf("1.37") < c7 < mp.mpf("1.38")           # 1.3743 at L = 7, vs 2 at L = oo
        assert rescaling_coefficient(a, b, s, 100) < mp.mpf("1.9")


# ----------------------------------------------------------------------------
# risks: eq. (7), Thm 5.3 / eq. (8), Thm 5.4 / eqs. (9)-(10)
# ----------------------------------------------------------------------------

def test_risk_forms_agree_and_aligned_task():
    with mp.workdps(30):
        u = [mp.mpf(x) for x in ("0.3", "-1.2", "0.7", "2.0")]
        v = [mp.mpf(x) for x in ("1.1", "0.4", "-0.5", "0.25")]
        sig = [mp.mpf(x) for x in ("2", "1", "0.5", "0.1")]
        c = mp.mpf("1.37")
        q = lambda x, y: mp.fsum(si * xi * yi for si, xi, yi in zip(sig, x, y))
        r1 = finetune_risk_quadratic(q(u, u), q(u, v), q(v, v), c)
        r2 = finetune_risk_vectors(u, v, c, sig)
        assert abs(r1 - r2) <= mp.mpf("1e-28") * r2
        # c = 1 is eq. (2); Thm 5.3 aligned tasks: u = alpha v
        alpha = mp.mpf("2.5")
        ua = [alpha * x for x in v]
        r_eq8 = aligned_task_linear_risk(alpha, q(ua, ua))
        assert abs(finetune_risk_vectors(ua, v, 1, sig) - r_eq8) <= mp.mpf("1e-28") * r_eq8
        assert aligned_task_linear_risk(alpha, q(ua, ua)) > 0
        assert aligned_task_linear_risk(1, q(ua, ua)) == 0
        tiny = mp.mpf("1e-27") * alpha**2 * q(v, v)
        for al in (alpha, mp.mpf("0.1"), mp.mpf(7) / 3):
            assert aligned_task_deep_limit_risk(al, "0.9", 1, q(v, v)) <= tiny         # Thm 5.3: R(beta) = 0
        # alpha < 0 (outside Thm 5.3): c_inf = |alpha| and R = 4 alpha^2 ||P_perp theta_S||^2
        assert abs(aligned_task_deep_limit_risk(-alpha, "0.9", 1, q(v, v)) - 4 * alpha**2 * q(v, v)) <= tiny
        # finite depth: risk decreases monotonically in L towards 0
        a, s = mp.mpf("0.9"), mp.mpf(1)
        risks = [aligned_task_risk(alpha, q(v, v), rescaling_coefficient(a, alpha**2 * (s * s - a), s, L))
                 for L in (1, 2, 3, 7, 100, 10**6)]
        assert abs(risks[0] - r_eq8) <= mp.mpf("1e-28") * r_eq8
        assert all(x > y for x, y in zip(risks, risks[1:]))
        assert risks[-1] <= mp.mpf("1e-8") * risks[0]


def test_thm54_bounds_values():
    with mp.workdps(30):
        assert eq10_linear_risk_bound(40, 200, "0.2", 2) == mp.mpf("0.8") * mp.mpf("1.44") * 4
        assert eq9_deep_risk_bound(40, 200, "0.2", 2, "0.3") == (
            mp.mpf("0.8") * (mp.mpf("1.44") * 4 * mp.mpf("0.09") + mp.mpf("0.16")))
        assert eq9_deep_risk_bound(40, 200, "0.2", 2, "0.3", zeta=0) < eq9_deep_risk_bound(40, 200, "0.2", 2, "0.3")
        assert eq9_deep_risk_bound(50, 50, "0.2", 2, "0.3") == 0 and eq10_linear_risk_bound(50, 50, "0.2", 2) == 0
        assert thm54_probability(50, 50, "0.2", 1) < 0             # vacuous at n = d
        assert 0 < thm54_probability(400, 1000, "0.2", 1) < 1
        # the domain's edges: one dimension, no sample (the bound is then ||theta_T - theta_S||^2 (1 + eps)^2)
        assert eq10_linear_risk_bound(0, 1, "0.2", 2) == mp.mpf("1.44") * 4 and eq10_linear_risk_bound(1, 1, "0.2", 2) == 0
        for n, d in ((60, 50), (-1, 5), (0, 0)):
            with pytest.raises(ValueError, match="need 0 <= n <= d, d > 0"):
                eq10_linear_risk_bound(n, d, "0.2", 1)


def test_thm54_monte_carlo_gaussian():
    """Sigma = I, Gaussian X: eq. (7) and eq. (2) per draw vs the bounds (9), (10) at eps = 0.2,
    and E R(gamma) = (d-n)/d ||theta_T - theta_S||^2 (the centre of (10))."""
    gen = torch.Generator().manual_seed(5)
    d, n, draws, eps = 200, 40, 200, "0.2"
    u = torch.randn(d, generator=gen, dtype=torch.float64)
    u /= u.norm()
    w = torch.randn(d, generator=gen, dtype=torch.float64)
    w -= (w @ u) * u
    w /= w.norm()
    dh = 0.3                                                   # ||theta_hat_T - theta_hat_S||
    cphi = 1 - dh**2 / 2
    theta_s, theta_t = 0.5 * u, 2.0 * (cphi * u + math.sqrt(1 - cphi**2) * w)
    X = torch.randn(draws, n, d, generator=gen, dtype=torch.float64)
    gram = X @ X.transpose(1, 2)
    par = lambda v: (X.transpose(1, 2) @ torch.linalg.solve(gram, X @ v.view(1, d, 1))).squeeze(-1)   # P_par v
    par_t, par_s = par(theta_t), par(theta_s)
    c_inf = par_t.norm(dim=1) / par_s.norm(dim=1)
    r_deep = ((theta_t - par_t) - c_inf[:, None] * (theta_s - par_s)).pow(2).sum(1)      # eq. (7)
    r_lin = ((theta_t - par_t) - (theta_s - par_s)).pow(2).sum(1)                       # eq. (2)
    with mp.workdps(20):
        b9 = float(eq9_deep_risk_bound(n, d, eps, theta_t.norm().item(), dh))
        b10 = float(eq10_linear_risk_bound(n, d, eps, (theta_t - theta_s).norm().item()))
        mean10 = float(linear_expected_risk_gaussian(n, d, (theta_t - theta_s).pow(2).sum().item()))
    assert (r_deep <= b9).float().mean() >= 0.99
    assert (r_lin <= b10).float().mean() >= 0.99
    assert abs(r_lin.mean().item() - mean10) <= 4 * r_lin.std().item() / math.sqrt(draws)
    # (9) does not involve ||theta_S||: eq. (7) is exactly invariant under theta_S -> k theta_S
    c3 = (par_t.norm(dim=1) / (3 * par_s).norm(dim=1))[:, None]
    r3 = ((theta_t - par_t) - c3 * 3 * (theta_s - par_s)).pow(2).sum(1)
    assert torch.allclose(r3, r_deep, rtol=1e-12)
    # the deep predictor beats plain fine-tuning here (||theta_T - theta_S|| = 1.56 vs ||theta_T|| dh = 0.6)
    assert r_deep.mean() < 0.25 * r_lin.mean()


def test_linear_risk_ratio_variance():
    """Var[R(gamma)/E R(gamma)] from the Beta((d-n)/2, n/2) law, by mpmath quadrature of its density, and by
    Monte Carlo with Gaussian X (n = 5, d = 12)."""
    with mp.workdps(30):
        assert linear_risk_ratio_variance(40, 80) == mp.mpf(80) / (40 * 82)
        a, b = mp.mpf(7) / 2, mp.mpf(5) / 2                          # (d - n)/2, n/2 at n = 5, d = 12
        density = lambda x: x ** (a - 1) * (1 - x) ** (b - 1) / mp.beta(a, b)
        mean = mp.quad(lambda x: x * density(x), [0, 1])
        var = mp.quad(lambda x: (x - mean) ** 2 * density(x), [0, 1])
        assert abs(mean - mp.mpf(7) / 12) < mp.mpf(10) ** -25
        assert abs(var / mean**2 - linear_risk_ratio_variance(5, 12)) < mp.mpf(10) ** -25
        for bad in ((0, 10), (10, 10), (11, 10)):
            with pytest.raises(ValueError):
                linear_risk_ratio_variance(*bad)
    gen = torch.Generator().manual_seed(11)
    X = torch.randn(20000, 5, 12, generator=gen, dtype=torch.float64)
    z = torch.randn(12, generator=gen, dtype=torch.float64)
    par = (X.transpose(1, 2) @ torch.linalg.solve(X @ X.transpose(1, 2), X @ z.view(1, 12, 1))).squeeze(-1)
    ratio = (z - par).pow(2).sum(1) / z.pow(2).sum() / (7 / 12)
    assert abs(ratio.mean().item() - 1) < 4 * ratio.std().item() / math.sqrt(20000)
    assert abs(ratio.var().item() / float(linear_risk_ratio_variance(5, 12)) - 1) < 0.05


def test_projection_tail():
    """Exact tail of ||P z||^2/||z||^2 for a random m-plane: edge cases, the Beta density by quadrature,
    Monte Carlo, and Dasgupta-Gupta's bound exp(-eps^2 m/2) (Lemma 5.3.2 with c = 1/2)."""
    with mp.workdps(30):
        assert projection_tail(3, 10, -1) == 1 and projection_tail(3, 10, 1) == 0 and projection_tail(0, 10, 0) == 0
        assert projection_tail(10, 10, "0.5") == 1
        a, b, x = mp.mpf(3) / 2, mp.mpf(7) / 2, mp.mpf("0.45")
        quad = mp.quad(lambda t: t ** (a - 1) * (1 - t) ** (b - 1), [x, 1]) / mp.beta(a, b)
        assert abs(projection_tail(3, 10, x) - quad) < mp.mpf(10) ** -25
        # (10) cannot fail once (1+eps)^2 >= d/(d-n)
        assert projection_tail(40, 80, mp.mpf(2) * 40 / 80) == 0
        for m, d in ((1, 2), (5, 20), (40, 80), (60, 80), (100, 1000)):
            for eps in ("0.05", "0.25", "1", "3"):
                eps = mp.mpf(eps)
                assert projection_tail(m, d, (1 + eps) ** 2 * m / d) <= mp.exp(-eps ** 2 * m / 2)
    gen = torch.Generator().manual_seed(12)
    G = torch.randn(50000, 12, generator=gen, dtype=torch.float64)      # a random z against the fixed plane of
    frac = G[:, :5].pow(2).sum(1) / G.pow(2).sum(1)                    # the first 5 coordinates: same law
    with mp.workdps(20):
        exact = float(projection_tail(5, 12, "0.6"))
    assert abs((frac > 0.6).double().mean().item() - exact) < 4 * math.sqrt(exact * (1 - exact) / 50000)


def test_thm54_admissible_c_and_failure_bound():
    with mp.workdps(30):
        for n, d, eps, p in ((1, 20, 64, "0.0056"), (40, 80, "0.25", "0.3"), (10, 20, 2, "1e-6"), (3, 5, "0.1", "7.9")):
            c = thm54_admissible_c(n, d, eps, p)
            assert 0 < c < mp.inf
            assert abs(thm54_failure_bound(n, d, eps, c) - mp.mpf(p)) < mp.mpf(10) ** -25 * mp.mpf(p)
            assert thm54_failure_bound(n, d, eps, 2 * c) < mp.mpf(p) < thm54_failure_bound(n, d, eps, c / 2)
        assert thm54_admissible_c(40, 80, "0.25", 0) == mp.inf           # no failure: every c
        assert thm54_admissible_c(80, 80, 1, 3) == mp.inf               # n = d: the form stays >= 4
        assert thm54_admissible_c(40, 80, 1, 9) == 0                    # more than 8 is impossible to meet
        assert abs(thm54_failure_bound(40, 200, "0.2", 1) - (1 - thm54_probability(40, 200, "0.2", 1))) < mp.mpf(10) ** -28
        tiny = thm54_failure_bound(1, 20, 64, mp.mpf(1) / 50)            # no cancellation: ~ 4 exp(-81.92)
        assert abs(tiny / (4 * mp.exp(-mp.mpf(4096) / 50)) - 1) < mp.mpf(10) ** -20
        with pytest.raises(ValueError):
            thm54_admissible_c(40, 80, 0, "0.1")


def test_eq9_tail_constant_n1():
    """n = 1: eps P(R(beta) > (9)) -> 2 sin(theta) / (pi sqrt((d-1)/d (D^2 + z^2))) (a Cauchy tail), by Monte Carlo
    at eps = 200, where the O(1/eps) correction is < 2%."""
    with mp.workdps(30):
        A = eq9_tail_constant_n1(20, mp.pi / 2)
        assert abs(A - 2 / (mp.pi * mp.sqrt(mp.mpf(19) / 20 * 3))) < mp.mpf(10) ** -28
        assert eq9_tail_constant_n1(20, mp.pi) < mp.mpf(10) ** -25         # theta = pi: c_inf = 1, no heavy tail
        assert eq9_tail_constant_n1(20, mp.pi / 2, 2) < A                  # a larger zeta moves the tail, not its power
        with pytest.raises(ValueError):
            eq9_tail_constant_n1(20, 4)
    gen = torch.Generator().manual_seed(13)
    d, eps, draws = 20, 200.0, 400000
    x = torch.randn(draws, d, generator=gen, dtype=torch.float64)
    u = torch.zeros(d, dtype=torch.float64)
    u[0] = 1.0                                                             # theta_hat_T
    v = torch.zeros(d, dtype=torch.float64)
    v[1] = 1.0                                                             # theta_hat_S at theta = pi/2
    xh = x / x.norm(dim=1, keepdim=True)
    a, b = xh @ u, xh @ v
    kappa = (a.abs() / b.abs()).unsqueeze(-1)
    w = u - kappa * v                                                      # theta_T - c_inf theta_S, ||theta_T|| = 1
    risk = w.pow(2).sum(1) - (w * xh).sum(1).pow(2)                        # ||P_perp w||^2, eq. (7)
    with mp.workdps(20):
        bound = float(eq9_deep_risk_bound(1, d, eps, 1, mp.sqrt(2)))
    fraction = (risk > bound).double().mean().item()
    se = math.sqrt(fraction / draws)
    assert abs(eps * fraction - float(A)) < 4 * eps * se + 0.02 * float(A)


def test_frozen_coefficient():
    with mp.workdps(20):
        assert frozen_first_layer_coefficient(3, 4) == mp.mpf("0.75")
        with pytest.raises(ValueError):
            frozen_first_layer_coefficient(1, 0)


# ----------------------------------------------------------------------------
# direct gradient-flow simulation (n = 5, d = 12)
# ----------------------------------------------------------------------------

N, D, PAIRS = 5, 12, 3
NORMS_S = [0.7, 1.0, 1.8]                 # ||theta_S|| per draw (the same draw twice: random and aligned target)
ALPHAS = [0.5, 2.5, 4.0]                  # aligned targets theta_T = alpha theta_S


@pytest.fixture(scope="module")
def sim():
    """Pretrain depth-L nets (L = 1, 2, 3) on theta_S from a near-zero eq.-(22) init; 2*PAIRS trials:
    trials i and PAIRS + i share X and theta_S; the first PAIRS get a random theta_T, the rest
    theta_T = alpha theta_S."""
    from simulate.device import generator
    from simulate.linear_nets import init_weights, population, train

    gen = generator(0, torch.device("cpu"))
    X = torch.randn(PAIRS, N, D, generator=gen, dtype=torch.float64)
    ts = torch.randn(PAIRS, D, generator=gen, dtype=torch.float64)
    ts = ts / ts.norm(dim=1, keepdim=True) * torch.tensor(NORMS_S, dtype=torch.float64)[:, None]
    tt = torch.randn(PAIRS, D, generator=gen, dtype=torch.float64)
    X, ts = X.repeat(2, 1, 1), ts.repeat(2, 1)
    tt = torch.cat([tt, torch.tensor(ALPHAS, dtype=torch.float64)[:, None] * ts[:PAIRS]])
    T = 2 * PAIRS
    pre = {}
    for L in (1, 2, 3):
        res = train(population(ts), init_weights(T, D, L, 1e-4, "eq22", gen), method="rk4", tol=1e-12, max_steps=200000)
        assert bool(res.converged.all())
        pre[L] = res
    p_par = X.transpose(1, 2) @ torch.linalg.solve(X @ X.transpose(1, 2), X)
    return dict(X=X, theta_s=ts, theta_t=tt, y=(X @ tt.unsqueeze(-1)).squeeze(-1), pre=pre, p_par=p_par,
                fits={})


def _finetune(sim, L, step_scale):
    from simulate.linear_nets import empirical, train

    key = (L, step_scale)
    if key in sim["fits"]:
        return sim["fits"][key]
    fit = sim["fits"][key] = train(empirical(sim["X"], sim["y"]), sim["pre"][L].weights, method="rk4", tol=1e-12,
                max_steps=200000, step_scale=step_scale)
    assert bool(fit.converged.all())
    return fit


def _measured(sim, L, beta):
    """Per trial: (c_sim, c_pred, ||beta||, r_pred, off-line residual, row-space error, a, b, s)."""
    P = sim["p_par"]
    th_s = sim["pre"][L].beta                                   # the pretrained end-to-end vector (= theta_S)
    perp_s = th_s - apply(P, th_s)
    perp_b = beta - apply(P, beta)
    par_t = apply(P, sim["theta_t"])
    rows = []
    for i in range(beta.shape[0]):
        a = perp_s[i].pow(2).sum().item()
        b = par_t[i].pow(2).sum().item()
        s = th_s[i].norm().item()
        c_sim = (perp_b[i] @ perp_s[i]).item() / a
        with mp.workdps(30):
            c_pred = float(rescaling_coefficient(a, b, s, L))
            r_pred = float(rescaling_norm(a, b, s, L))
        rows.append(dict(c_sim=c_sim, c_pred=c_pred, norm=beta[i].norm().item(), r_pred=r_pred,
                         off=(perp_b[i] - c_sim * perp_s[i]).norm().item(),
                         row=(apply(P[i], beta[i]) - par_t[i]).norm().item(), a=a, b=b, s=s))
    return rows


@pytest.mark.parametrize("L", [1, 2, 3])
def test_simulation_matches_eq5_per_draw(sim, L):
    """RK4's limit differs from the flow's by O(h^4) (the limit is path dependent); at the trainer's
    default step_scale = 0.5 this is up to ~9e-5 here (L = 3, ||theta_S|| = 0.7), at 0.25 at most ~5e-6."""
    fit = _finetune(sim, L, 0.25)
    for m in _measured(sim, L, fit.beta):
        assert m["row"] <= 1e-9 * (1 + m["norm"])                   # zero training loss: P_par beta = P_par theta_T
        assert m["off"] <= 1e-6 * math.sqrt(m["a"])                  # P_perp beta is parallel to P_perp theta_S
        assert abs(m["c_sim"] - m["c_pred"]) <= 1e-5 * m["c_pred"], m
        assert abs(m["norm"] - m["r_pred"]) <= 1e-5 * m["r_pred"], m
        if L == 1:
            assert abs(m["c_sim"] - 1) <= 1e-10



def test_the_checks_integrator_tolerance_is_met_and_not_loose(sim):
    """TOL_RK4, the per-draw tolerance the checks allow RK4 at their STEP_SCALE, against the largest error measured
    here (L = 2, 3; the limit's coefficient c against eq. (5)): it must cover it, and not by so much that a
    loosened constant, or an integrator gone wrong by far more than its O(h^4), would pass."""
    worst = max(abs(m["c_sim"] - m["c_pred"]) / m["c_pred"]
                for L in (2, 3) for m in _measured(sim, L, _finetune(sim, L, STEP_SCALE).beta))
    assert worst <= TOL_RK4 <= 20 * worst, (worst, TOL_RK4)

def test_simulation_richardson_L2(sim):
    """Extrapolating RK4 step sizes h and h/2 (error ~ h^4) removes the discretisation error:
    gradient flow's limit then matches eq. (5) to a few 1e-7 (vs ~1e-6 at h/2, ~5e-5 at h)."""
    c_h = [m["c_sim"] for m in _measured(sim, 2, _finetune(sim, 2, 0.5).beta)]
    rows = _measured(sim, 2, _finetune(sim, 2, 0.25).beta)
    for c1, m in zip(c_h, rows):
        extrapolated = m["c_sim"] + (m["c_sim"] - c1) / 15
        assert abs(extrapolated - m["c_pred"]) <= 1e-6 * m["c_pred"], (c1, m)
        assert abs(extrapolated - m["c_pred"]) <= 0.25 * abs(m["c_sim"] - m["c_pred"])


def test_simulation_aligned_tasks_thm53(sim):
    """theta_T = alpha theta_S: L = 1 risk is eq. (8); depth-L risk is (alpha - c_L)^2 ||P_perp theta_S||^2,
    decreasing in L; L -> oo gives c = alpha and risk 0."""
    risks = {}
    for L in (1, 2, 3):
        beta = _finetune(sim, L, 0.25).beta[PAIRS:]
        theta_t = sim["theta_t"][PAIRS:]
        risk_sim = (theta_t - beta).pow(2).sum(1)                   # Sigma = I
        P = sim["p_par"][PAIRS:]
        th_s = sim["pre"][L].beta[PAIRS:]
        perp_s = th_s - apply(P, th_s)
        perp_t = theta_t - apply(P, theta_t)
        risks[L] = risk_sim
        for i, alpha in enumerate(ALPHAS):
            a = perp_s[i].pow(2).sum().item()
            s = th_s[i].norm().item()
            with mp.workdps(30):
                if L == 1:
                    pred = float(aligned_task_linear_risk(alpha, perp_t[i].pow(2).sum().item()))      # eq. (8)
                    assert abs(risk_sim[i].item() - pred) <= 1e-9 * pred
                b = alpha**2 * (s * s - a)
                c_L = rescaling_coefficient(a, b, s, L)
                pred = float(aligned_task_risk(alpha, a, c_L))
                assert abs(risk_sim[i].item() - pred) <= 2e-5 * pred + 1e-12, (L, alpha, risk_sim[i].item(), pred)
                assert min(1, alpha) <= float(c_L) <= max(1, alpha)
                assert aligned_task_deep_limit_risk(alpha, a, s, a) <= 1e-25 * pred   # Thm 5.3, L -> oo
                assert abs(rescaling_limit_coefficient(a, b, s) - alpha) <= 1e-15 * alpha   # b rounded in float64
                deep = aligned_task_risk(alpha, a, rescaling_coefficient(a, b, s, 10**8))
                assert deep <= 1e-12 * pred
    assert bool((risks[1] > risks[2]).all()) and bool((risks[2] > risks[3]).all())


def test_simulation_frozen_first_layer_thm55(sim):
    """Thm 5.5 (L = 2): with W_1 frozen, beta stays on the theta_S line and tends to the 1-d least-squares
    coefficient.  With approximate (not exact) balancedness, beta slowly drifts off the line, so this is
    checked after a fixed number of steps only."""
    from simulate.linear_nets import empirical, train

    pre = sim["pre"][2]
    fit = train(empirical(sim["X"], sim["y"]), pre.weights, tol=1e-10, method="rk4", max_steps=3000, step_scale=1.0, frozen=(0,))
    for i in range(fit.beta.shape[0]):
        th = pre.beta[i]
        u = sim["X"][i] @ th
        with mp.workdps(20):
            c = float(frozen_first_layer_coefficient((u @ sim["y"][i]).item(), (u @ u).item()))
        off = fit.beta[i] - (fit.beta[i] @ th) / (th @ th) * th
        assert off.norm().item() <= 1e-4 * th.norm().item()
        assert (fit.beta[i] - c * th).norm().item() <= 2e-4 * (1 + abs(c)) * th.norm().item()


def test_the_root_of_eq5_survives_every_guard_of_its_bracketing(monkeypatch):
    # the guards only rounding reaches, forced: a reversed bracket, a root on either end, a failed findroot
    import numerics.depth_rescaling as dr
    a, b, s, L = mp.mpf("0.3"), mp.mpf("0.5"), mp.mpf("1.1"), 3
    with mp.workdps(40):
        r = rescaling_norm(a, b, s, L)
        lo, hi = dr._bracket_log(a, b, s, L)
        monkeypatch.setattr(dr, "_bracket_log", lambda *args: (hi, lo))
        assert rescaling_norm(a, b, s, L) == r
        monkeypatch.setattr(dr.mp, "findroot", lambda *args, **kw: (_ for _ in ()).throw(ValueError("forced")))
        assert abs(rescaling_norm(a, b, s, L) / r - 1) < mp.mpf(10) ** -38       # bisection's root
        # b = s^2 - a puts the root at x = ln rho = 0 exactly: at either end of a bracket it is returned as is
        b_one = s * s - a
        for bracket in ((mp.mpf(0), mp.mpf(1)), (mp.mpf(-1), mp.mpf(0))):
            monkeypatch.setattr(dr, "_bracket_log", lambda *args, bracket=bracket: bracket)
            assert rescaling_norm(a, b_one, s, L) == s
        monkeypatch.setattr(dr, "_bracket_log", lambda *args: (mp.mpf(1), mp.mpf(2)))      # no sign change
        with pytest.raises(ValueError, match="does not enclose a sign change"):
            rescaling_norm(a, b, s, L)


@pytest.mark.parametrize("x", ["0", "-3", "10"])
def test_a_root_of_eq5_is_accepted_exactly_within_its_stated_noise_floor(x):
    # _converged's floor is (2 + 2|x|) ulps of eq. (5)'s terms with 2^8 ulps to spare: a residual just inside passes,
    # just outside fails, so a loosened floor (a root accepted further off) is seen
    import numerics.depth_rescaling as dr
    a, b, s2, L = mp.mpf("0.3"), mp.mpf("0.5"), mp.mpf("1.21"), 3
    with mp.workdps(40):
        x = mp.mpf(x)
        terms = s2 * mp.exp(2 * x / L) + b * mp.exp(-2 * mp.mpf(L - 1) / L * x) + a
        floor = terms * (2 + 2 * abs(x)) * mp.mpf(2) ** (8 - mp.mp.prec)
        for factor, accepted in ((mp.mpf("0.99"), True), (mp.mpf("1.01"), False), (1 + 1 / (2 + 2 * abs(x)), False)):
            assert dr._converged(lambda _: factor * floor, x, a, b, s2, L) is accepted, (x, factor)


def test_the_risk_formulas_refuse_what_they_are_not_defined_for():
    with pytest.raises(ValueError, match="same length"):
        finetune_risk_vectors([1, 2], [1], 0.5)
    with pytest.raises(ValueError, match="nonnegative"):
        finetune_risk_vectors([1, 2], [1, 0], 0.5, sigma_diag=[1, -1])
    with pytest.raises(ValueError, match="nonnegative and of the same length"):
        finetune_risk_vectors([1, 2], [1, 0], 0.5, sigma_diag=[1])
    assert finetune_risk_vectors([1, 2], [1, 0], 0.5, sigma_diag=[2, 3]) == 2 * mp.mpf("0.25") + 3 * 4
    assert finetune_risk_vectors([1, 2], [1, 0], 0.5) == mp.mpf("0.25") + 4            # Sigma = I by default
    with pytest.raises(ValueError, match="alpha = 0"):
        aligned_task_deep_limit_risk(0, 0.2, 1, 1)
    with pytest.raises(ValueError, match="alpha != 0"):
        aligned_task_linear_risk(0, 1)
    for bound in (lambda eps: eq9_deep_risk_bound(3, 10, eps, 1, 0.5),
                  lambda eps: eq10_linear_risk_bound(3, 10, eps, 1)):
        with pytest.raises(ValueError, match="eps must be > 0"):
            bound(0)


@pytest.mark.parametrize("prec", [53, 64, 100])
def test_bisection_reaches_full_precision_at_a_root_far_below_its_brackets_width(prec):
    # the step count allows for the bracket's width, the working precision and 64 bits of the root's own scale
    from numerics.depth_rescaling import _bisect
    with mp.workprec(prec):
        root = mp.mpf(1) / 3 * mp.mpf(10) ** -12
        found = _bisect(lambda t: t - root, mp.mpf(-1), mp.mpf(1), -1 - root)
        assert abs(found - root) <= 2 * mp.eps * root
