import mpmath as mp
import pytest
import torch

from numerics.random_matrix import (inverse_wishart_trace, marchenko_pastur_density,
                                    marchenko_pastur_inverse_moment, projection_fraction)


@pytest.mark.parametrize("q", ["0.05", "0.5", "0.9"])
def test_mp_inverse_moment_quadrature_matches_closed_form_at_two_precisions(q):
    # The quadrature is an independent route to eq. (102)'s 1/(1 - gamma).
    for dps in (30, 60):
        with mp.workdps(dps):
            value = marchenko_pastur_inverse_moment(mp.mpf(q))
            assert abs(value - 1 / (1 - mp.mpf(q))) < mp.mpf(10) ** (-dps + 3)


def test_mp_density_integrates_to_one():
    with mp.workdps(30):
        q = mp.mpf("0.3")
        a, b = (1 - mp.sqrt(q)) ** 2, (1 + mp.sqrt(q)) ** 2
        assert abs(mp.quad(lambda x: marchenko_pastur_density(x, q), [a, b]) - 1) < mp.mpf(10) ** -12


def test_inverse_wishart_trace_domain_and_symmetry():
    assert inverse_wishart_trace(10, 30) == mp.mpf(10) / 19
    assert inverse_wishart_trace(30, 10) == mp.mpf(10) / 19
    with pytest.raises(ValueError):
        inverse_wishart_trace(10, 11)


def test_inverse_wishart_trace_against_sampling():
    gen = torch.Generator().manual_seed(1)
    n, d, trials = 6, 20, 20000
    X = torch.randn(trials, n, d, generator=gen, dtype=torch.float64)
    traces = torch.linalg.inv(X @ X.transpose(1, 2)).diagonal(dim1=1, dim2=2).sum(1)
    mean, se = traces.mean().item(), traces.std().item() / trials**0.5
    assert abs(mean - float(inverse_wishart_trace(n, d))) < 4 * se


def test_projection_fraction():
    assert projection_fraction(3, 12) == mp.mpf(1) / 4
    assert projection_fraction(20, 12) == 1


def test_relu_kernel_quadratures_hold_at_hundreds_of_digits():
    # The half-line is cut where the Gaussian weight is below 10^-(dps + 30): an infinite end made
    # mpmath's erfc overflow from about 130 digits on.
    from numerics.kernels import orthant_probability, relu_overlap
    with mp.workdps(200):
        u = mp.mpf(-4) / 5
        closed = (mp.sqrt(1 - u * u) + u * (mp.pi - mp.acos(u))) / (2 * mp.pi)
        assert abs(relu_overlap(u) - closed) < mp.mpf(10) ** -195
        assert abs(orthant_probability(u) - (mp.pi - mp.acos(u)) / (2 * mp.pi)) < mp.mpf(10) ** -195


def test_limit_matches_accepts_the_limit_and_rejects_a_value_a_thousandth_off():
    from numerics.limits import limit_matches, richardson_limit
    f = lambda N: mp.mpf(2) / 3 + mp.mpf(1) / N + mp.mpf(5) / N**2          # limit 2/3, 1/N and 1/N^2 terms
    holds, limit, tolerance = limit_matches(f, mp.mpf(2) / 3, 2**20)
    assert holds and abs(limit - mp.mpf(2) / 3) <= tolerance and tolerance < 1e-5
    assert not limit_matches(f, 1.001 * mp.mpf(2) / 3, 2**20)[0]
    with pytest.raises(ValueError):
        richardson_limit(f, 7)


def test_a_limit_at_fixed_ratio_runs_along_n_d_in_lowest_terms_with_denominator_at_most_a_million():
    from numerics.limit_links import LINK_SIZE, limit_link_at_ratio
    sizes = []

    def finite(n, d):
        sizes.append((n, d))
        return mp.mpf(n) / d + mp.mpf(1) / d                               # n/d + 1/d -> gamma

    for gamma, size, (p, q) in ((2, "d", (2, 1)), (mp.mpf(1) / 3, "d/3", (1, 3)),
                                (mp.sqrt(2) / 2, "d/941664", (665857, 941664))):   # the best fraction with q <= 10^6
        sizes.clear()
        link = limit_link_at_ratio(finite, lambda g: g, gamma)
        assert link.size == size
        assert sizes == [(LINK_SIZE * p, LINK_SIZE * q), (LINK_SIZE // 2 * p, LINK_SIZE // 2 * q)]   # N, then N/2
        assert link.holds and abs(link.claimed - mp.mpf(p) / q) < mp.mpf(10) ** -25


def test_the_marchenko_pastur_density_vanishes_off_its_support_and_its_inverse_moment_needs_q_below_one():
    from numerics.random_matrix import marchenko_pastur_density, marchenko_pastur_inverse_moment
    q = mp.mpf(1) / 4                                               # support [1/4, 9/4]
    assert marchenko_pastur_density(mp.mpf(1) / 4, q) == 0 and marchenko_pastur_density(mp.mpf(9) / 4, q) == 0
    assert marchenko_pastur_density(0.1, q) == 0 and marchenko_pastur_density(3, q) == 0
    assert marchenko_pastur_density(1, q) > 0
    for bad in (0, 1, 2):
        with pytest.raises(ValueError, match="0 < q < 1"):
            marchenko_pastur_inverse_moment(bad)
