"""Fine-tuning a linear model to zero training loss under a two-level covariance, measured per draw.

Rows of X are drawn with covariance Sigma = diag(eig) (``eig`` a spiked spectrum: the first m
coordinates form the "top span", the others the "bottom span"); noiseless labels y = X theta_T;
fine-tuning from theta_S by gradient descent on the squared loss ends at theta_S + X^+ (y - X theta_S),
which is computed in this exact closed form.  The risk of w is (w - theta_T)^T Sigma (w - theta_T).

What is measured: risks for Delta = theta_T - theta_S in the top span, in the bottom span and on the
whole sphere (all on the same X), their averages over Delta's direction inside each span, the
deviation ||Sigma~ - Sigma|| of the sample covariance Sigma~ = X^T X / n (also for n far above d, by an
exact Wishart reformulation), per-draw slack of an upper bound written in ||Sigma~ - Sigma||, and the
n-exponents of moments of ||Sigma~ - Sigma||.  Every function consumes the generator it is given in a
fixed order, so that the same seed gives the same numbers.
"""

from __future__ import annotations

import math
from fractions import Fraction

import torch

from simulate.data import design, spiked_spectrum, unit_vectors
from simulate.depth_finetune import apply
from simulate.device import decompose
from simulate.estimators import min_norm_solution
from simulate.regression import chunks
from simulate.stats import Estimate, estimate, paired_estimate, weighted_poly_fit

__all__ = ["span_unit_vectors", "fine_tuned_limit", "weighted_risk", "spectral_norm", "deviation_norm", "block_risks",
           "alignment_risks", "alignment_summary", "standard_gamma", "wishart_deviation_norm", "deviation_norms",
           "deviation_moment_exponents", "block_risk_means", "bound_slack", "mean_power_law",
           "order_statistics", "sign_change_crossing"]


def span_unit_vectors(trials, d, m, top, gen):
    """Unit vectors uniform in the top span (first m coordinates) or in the bottom span."""
    v = torch.randn(trials, d, generator=gen, device=gen.device, dtype=torch.float64)
    mask = torch.zeros(d, dtype=torch.bool, device=gen.device)
    mask[:m] = True
    v = v * (mask if top else ~mask)
    return v / v.norm(dim=1, keepdim=True)


def fine_tuned_limit(X, theta_s, theta_t):
    """GD on the squared loss from theta_S, to zero training loss, on y = X theta_T: its limit
    theta_S + X^+ (y - X theta_S) (Shachaf et al., Thm 4.1), computed in this exact closed form."""
    y = apply(X, theta_t)
    return theta_s + min_norm_solution(X, y - apply(X, theta_s))


def weighted_risk(w, theta_t, eig):
    """(w - theta_T)^T diag(eig) (w - theta_T) per draw."""
    return (eig * (w - theta_t).pow(2)).sum(1)


def spectral_norm(S):
    """Largest singular value of each matrix in the batch, = max |eigenvalue| for symmetric S.

    svdvals, not eigvalsh: on a CPU shared with other processes torch's multithreaded batched eigvalsh
    was measured 1000x slower than single-threaded (22 s vs 0.02 s for 20 matrices of size 200), svdvals 6x."""
    return decompose(torch.linalg.svdvals, S)[..., 0]


def deviation_norm(X, eig):
    """||Sigma~ - Sigma|| per draw, Sigma~ = X^T X / n."""
    return spectral_norm(X.transpose(-1, -2) @ X / X.shape[-2] - torch.diag(eig))


def block_risks(X, eig, m):
    """E[R | X] for Delta uniform on the unit sphere of the top span, and of the bottom span; and
    ||P_perp V_<=m||, P_perp the projector off the row space of X, V_<=m the top span's basis.

    Averaging the per-draw risk over Delta's direction inside an eigenspace (Rao-Blackwell) leaves the
    mean unchanged and removes the direction's variance: (1/m) ||Sigma^1/2 P_perp V_<=m||_F^2 and
    (tr(Sigma P_perp) - m r_top)/(d - m), since tr(P_perp Sigma P_perp) = tr(Sigma P_perp)."""
    d = X.shape[-1]
    chol = torch.linalg.cholesky(X @ X.transpose(-1, -2))
    p_par_v = X.transpose(-1, -2) @ torch.cholesky_solve(X[..., :m], chol)            # P_par V_<=m, (trials, d, m)
    p_perp_v = -p_par_v
    p_perp_v[..., torch.arange(m), torch.arange(m)] += 1
    r_top = (eig[:, None] * p_perp_v.pow(2)).sum((-2, -1)) / m
    tr_sigma_p_par = torch.cholesky_solve((X * eig) @ X.transpose(-1, -2), chol).diagonal(dim1=-2, dim2=-1).sum(-1)
    r_bottom = (eig.sum() - tr_sigma_p_par - m * r_top) / (d - m)
    # ||P_perp V_<=m||^2 = 1 - lambda_min(V^T P_par V), V^T P_par V = X_m^T (X X^T)^-1 X_m
    vpv = X[..., :m].transpose(-1, -2) @ torch.cholesky_solve(X[..., :m], chol)
    # vpv is PSD: its smallest singular value is its smallest eigenvalue
    dk = (1 - decompose(torch.linalg.svdvals, vpv)[..., -1]).clamp(min=0).sqrt()
    return r_top, r_bottom, dk


def alignment_risks(n, d, m, eig, trials, gen, bound_draws, data):
    """One sample size n: per draw the fine-tuned risks for Delta uniform in the top span ("bea", Bottom Eigen
    Align in Shachaf et al.'s words: theta_S agrees with theta_T on the bottom span), in the bottom span ("tea")
    and on the whole sphere ("mix", with its squared top- and bottom-span norms), all on the same X and theta_S;
    the block-averaged risks and ||P_perp V_<=m|| (see block_risks); and, for the first ``bound_draws`` draws,
    ||Sigma~ - Sigma|| ("E").  Tensors on the CPU, one entry per draw."""
    out = {k: [] for k in ("bea", "tea", "mix", "block_top", "block_bottom", "dk", "E", "mix_top2", "mix_bottom2")}
    done = 0
    for size in chunks(trials, n * d):
        X = design(size, n, d, gen, data, cov_sqrt=eig.sqrt())
        theta_s = unit_vectors(size, d, gen)
        for key, delta in (("bea", span_unit_vectors(size, d, m, True, gen)),
                           ("tea", span_unit_vectors(size, d, m, False, gen)), ("mix", unit_vectors(size, d, gen))):
            theta_t = theta_s + delta
            out[key].append(weighted_risk(fine_tuned_limit(X, theta_s, theta_t), theta_t, eig))
            if key == "mix":
                out["mix_top2"].append(delta[:, :m].pow(2).sum(1))
                out["mix_bottom2"].append(delta[:, m:].pow(2).sum(1))
        r_top, r_bottom, dk = block_risks(X, eig, m)
        out["block_top"].append(r_top)
        out["block_bottom"].append(r_bottom)
        out["dk"].append(dk)
        take = max(0, min(size, bound_draws - done))
        if take:
            out["E"].append(deviation_norm(X[:take], eig))
        done += size
    return {k: torch.cat(v).cpu() if v else torch.empty(0, dtype=torch.float64) for k, v in out.items()}


def alignment_summary(sim) -> dict:
    """Means (and standard errors) of alignment_risks' draws: both alignments, their paired difference, the
    generic direction and the block averages."""
    bea, tea, diff = estimate(sim["bea"]), estimate(sim["tea"]), paired_estimate(sim["bea"], sim["tea"])
    return {"R_BEA": bea.mean, "se_BEA": bea.se, "R_TEA": tea.mean, "se_TEA": tea.se,
            "diff_BEA_minus_TEA": diff.mean, "se_diff": diff.se, "R_generic": sim["mix"].mean().item(),
            "block_top": sim["block_top"].mean().item(), "block_bottom": sim["block_bottom"].mean().item()}


def standard_gamma(shape: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """Gamma(shape, 1) draws for shape >= 1 by Marsaglia & Tsang's exact rejection method, with ``gen``
    (torch's own gamma sampler takes no generator)."""
    dd = shape - 1.0 / 3.0
    c = 1.0 / torch.sqrt(9.0 * dd)
    out = torch.empty_like(shape)
    todo = torch.ones_like(shape, dtype=torch.bool)
    while bool(todo.any()):
        x = torch.randn(shape.shape, generator=gen, device=gen.device, dtype=torch.float64)
        u = torch.rand(shape.shape, generator=gen, device=gen.device, dtype=torch.float64)
        v = (1 + c * x) ** 3
        accept = (v > 0) & (torch.log(u) < 0.5 * x * x + dd - dd * v + dd * torch.log(v.clamp(min=1e-300))) & todo
        out[accept] = (dd * v)[accept]
        todo &= ~accept
    return out


def wishart_deviation_norm(n, eig, trials, gen):
    """||Sigma~ - Sigma|| per draw for n >= d Gaussian rows, without drawing the n x d design.

    Bartlett: X^T X ~ Wishart_d(n, Sigma) = Sigma^1/2 A A^T Sigma^1/2, A lower triangular with
    A_ii^2 ~ chi-square(n - i + 1) and A_ij ~ N(0, 1) below the diagonal: an exact reformulation whose
    cost does not grow with n."""
    d = eig.shape[0]
    idx = torch.arange(d, device=gen.device)
    shape = ((n - idx).to(torch.float64) / 2).expand(trials, d).contiguous()
    A = torch.randn(trials, d, d, generator=gen, device=gen.device, dtype=torch.float64).tril(-1)
    A[:, idx, idx] = (2 * standard_gamma(shape, gen)).sqrt()
    root = eig.sqrt()
    S = root[:, None] * (A @ A.transpose(-1, -2)) * root[None, :] / n - torch.diag(eig)
    return spectral_norm(S).cpu()


def deviation_norms(n, d, eig, trials, gen, data):
    """||Sigma~ - Sigma|| for ``trials`` designs of n rows drawn with covariance diag(eig), on the CPU."""
    return torch.cat([deviation_norm(design(size, n, d, gen, data, cov_sqrt=eig.sqrt()), eig).cpu()
                      for size in chunks(trials, n * d + d * d)])


def deviation_moment_exponents(d, m, top, bottom, powers, moments, trials, gen):
    """The n -> oo exponents of E[||Sigma~ - Sigma||^p], p in ``moments``, for Gaussian rows in dimension d with
    the two-level spectrum (m eigenvalues ``top``, the rest ``bottom``).

    ||Sigma~ - Sigma|| is Wishart-sampled (exact, any n) at n = r 4^k, k in ``powers``, r = tr Sigma / lam_1;
    consecutive rungs are paired (k, k+1) into independent local exponents log(mean ratio) / log(n ratio), each
    with its delta-method standard error, and these are extrapolated linearly in sqrt(r/n) to n -> oo.
    Returns r, the ns, and per moment p: the limit, its standard error, the slope and the local exponents."""
    eig = spiked_spectrum(d, m, float(top), float(bottom), gen.device)
    r = eig.sum().item() / eig.max().item()
    ns = [round(r * 4**k) for k in powers]
    samples = [wishart_deviation_norm(n, eig, trials, gen) for n in ns]
    fits = {}
    for power in moments:
        xs, ps, ses = [], [], []
        for i in range(0, len(ns) - 1, 2):                     # disjoint pairs: independent local exponents
            a, b = estimate(samples[i].pow(power)), estimate(samples[i + 1].pow(power))
            span = math.log(ns[i + 1] / ns[i])
            xs.append(math.sqrt(r / math.sqrt(ns[i] * ns[i + 1])))
            ps.append(math.log(b.mean / a.mean) / span)
            ses.append(math.hypot(a.se / a.mean, b.se / b.mean) / span)
        coef, coef_se = weighted_poly_fit(xs, ps, ses, 1)
        fits[power] = {"exponent": coef[0], "se": coef_se[0], "slope_in_sqrt_r_over_n": coef[1],
                       "local": [{"sqrt_r_over_n": x, "exponent": p, "se": s} for x, p, s in zip(xs, ps, ses)]}
    return r, ns, fits


def block_risk_means(frac: Fraction, top, bottom, base, gammas, trials, gen, data):
    """Mean block-averaged risks (see block_risks) at d = base, 2 base, 4 base and n = gamma d, m = frac d, for
    each gamma in ``gammas``: per gamma, the dimensions and the top- and bottom-span Estimates, one per d."""
    out = []
    for gamma in gammas:
        means = {"top": [], "bottom": []}
        dims = [base * 2**k for k in range(3)]
        for d in dims:
            m, n = int(frac * d), int(gamma * d)
            eig = spiked_spectrum(d, m, float(top), float(bottom), gen.device)
            tops, bottoms = [], []
            for size in chunks(trials, n * d):
                X = design(size, n, d, gen, data, cov_sqrt=eig.sqrt())
                r_top, r_bottom, _ = block_risks(X, eig, m)
                tops.append(r_top)
                bottoms.append(r_bottom)
            means["top"].append(estimate(torch.cat(tops)))
            means["bottom"].append(estimate(torch.cat(bottoms)))
        out.append({"gamma": gamma, "dims": dims, **means})
    return out


def bound_slack(sim, bound, davis_kahan, lam_m, zero_sample, rounding):
    """An upper bound on the fine-tuned risk written in E = ||Sigma~ - Sigma||, per draw, on the draws of
    alignment_risks that have E: ``bound(E, ||P_top Delta||^2, ||P_bottom Delta||^2, lam_m)`` for each Delta,
    and the bound ``davis_kahan(E, lam_m)`` on ||P_perp V_<=m||.

    Returns the draws that break them beyond the float64 slack ``rounding`` (relative and absolute) -- "dk": the
    largest ||P_perp V_<=m||; per direction: the largest risk and the bound at that draw -- and the slack: medians
    of E, bound / risk and bound / zero-sample risk (``zero_sample``: per span direction), and the fraction of
    draws with E < lam_m."""
    k = sim["E"].numel()
    E = sim["E"]
    broken = {}
    dk_bound = davis_kahan(E, lam_m)
    if bool((sim["dk"][:k] > dk_bound * (1 + rounding) + rounding).any()):
        broken["dk"] = sim["dk"][:k].max().item()
    ones, zeros = torch.ones_like(E), torch.zeros_like(E)
    ratios = {}
    for key, top2, bottom2 in (("bea", ones, zeros), ("tea", zeros, ones),
                               ("mix", sim["mix_top2"][:k], sim["mix_bottom2"][:k])):
        value = bound(E, top2, bottom2, lam_m)
        risk = sim[key][:k]
        if bool((risk > value * (1 + rounding) + rounding).any()):
            broken[key] = (risk.max().item(), value[risk.argmax()].item())
        ratios[key] = (value / risk.clamp(min=1e-300)).median().item()
    slack = {"E_median": E.median().item(), "E_mean": E.mean().item(), "bound_over_risk_median": ratios,
             "bound_over_zero_sample_risk_median": {
                 key: (bound(E, ones if key == "bea" else zeros, zeros if key == "bea" else ones, lam_m)
                       / zero_sample[key]).median().item() for key in ("bea", "tea")},
             "fraction_E_below_lam_m": (E < lam_m).double().mean().item()}
    return broken, slack


def mean_power_law(xs, samples):
    """The exponent p of mean ~ x^p through (x_i, mean of samples_i), with its standard error: a straight line
    through (log x_i, log mean_i) weighted by the means' relative standard errors."""
    points = [(x, s.mean().item(), s.std().item() / math.sqrt(max(1, s.numel()))) for x, s in zip(xs, samples)]
    coef, coef_se = weighted_poly_fit([math.log(x) for x, _, _ in points], [math.log(y) for _, y, _ in points],
                                      [s / y for _, y, s in points], 1)
    return coef[1], coef_se[1]


def order_statistics(samples, scale, k, q):
    """The k-th smallest of samples / scale (None where k is None or 0: too few draws for the bound that chose
    k) and the empirical q-quantile of samples / scale (torch.quantile's linear interpolation)."""
    ratio = (samples / scale).sort().values
    return (ratio[k - 1].item() if k else None), torch.quantile(ratio, float(q)).item()


def sign_change_crossing(xs, diffs: list[Estimate]):
    """x where the mean difference first turns negative (from > 0 to <= 0), by linear interpolation between the
    bracketing points, with its delta-method standard error (interpolation bias not included); (None, None)
    without a sign change."""
    for i in range(1, len(xs)):
        a, b = diffs[i - 1], diffs[i]
        if a.mean > 0 >= b.mean:
            ga, gb = float(xs[i - 1]), float(xs[i])
            denom = a.mean - b.mean
            value = ga + (gb - ga) * a.mean / denom
            se = (gb - ga) * math.hypot(-b.mean * a.se, a.mean * b.se) / denom**2
            return value, se
    return None, None
