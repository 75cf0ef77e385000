"""The paired transfer procedures (simulate/paired_transfer.py) and the population pretraining ones
(simulate/population_pretraining.py): what they measure, and that they draw from the generator in the
order of the procedures they chain."""

import math

import pytest
import torch

from simulate.data import unit_vectors
from simulate.device import generator
from simulate.estimators import row_space_projector
from simulate.paired_transfer import (PairedFits, draw_and_pretrain, estimates_at_larger_alpha, excess_risk,
                                      fine_tune_against_eq5, fine_tune_certified, null_space_coefficient,
                                      paired_with_alpha_trend, ridge_risk_reduction, scratch_minus_fine_tune,
                                      scratch_minus_linear_transfer)
from simulate.population_pretraining import feature_ladder, recover_source
from simulate.transfer import draw_target, linear_transfer, pretrain, ridge_transfer, scratch


def gen(seed=0):
    return generator(seed, torch.device("cpu"))


def test_draw_and_pretrain_is_draw_target_then_an_init_draw_then_pretrain():
    setup = draw_and_pretrain(6, 5, 12, 0.7, 0.2, 2, 1e-3, "eq22", gen(3))
    g = gen(3)
    draws = draw_target(6, 5, 12, 0.7, 0.2, g)
    from simulate.linear_nets import balance_margin, init_weights
    margin = balance_margin(init_weights(1, 12, 2, 1.0, "eq22", g)).item()
    pre = pretrain(draws.beta_s, 2, 1e-3, "eq22", g)
    assert torch.equal(setup.draws.X, draws.X) and torch.equal(setup.draws.y, draws.y)
    assert setup.init_margin == margin and torch.equal(setup.pretrained.beta, pre.beta)
    assert torch.equal(excess_risk(draws.beta_t, draws), torch.zeros(6, dtype=torch.float64))


def test_a_fresh_pair_pretrains_first_then_trains_from_scratch():
    draws = draw_target(5, 6, 16, 0.5, 0.1, gen(1))
    pair = scratch_minus_linear_transfer(draws, 2, 1e-4, "eq22", gen(2))
    g = gen(2)
    pretrained = pretrain(draws.beta_s, 2, 1e-4, "eq22", g).weights
    sc = scratch(draws, 2, 1e-4, "eq22", g)
    lt, _ = linear_transfer(draws, pretrained)
    assert torch.equal(pair.gain, excess_risk(sc.beta, draws) - excess_risk(lt, draws))


def test_near_n_equals_d_both_flows_go_on_until_the_gain_is_certified_and_stay_inside_the_first_certificate():
    # d = 40, n = 50 (finetune at gamma = 5/4): stopped at relative gradient 1e-10, the certified distance
    # |grad| n / lambda_min^+(X X^T) leaves T_ft ~ 0 movable by more than the 1e-8 the check resolves there
    draws = draw_target(8, 50, 40, math.pi / 8, 0.2, gen(4))
    fits = scratch_minus_fine_tune(draws, 2, 1e-5, "eq22", gen(5))
    first = fits.gain_shift(draws)
    allowance = first.max().item() / 10
    certified = fine_tune_certified(fits, draws, allowance)
    assert certified.gain_shift(draws).max().item() <= allowance
    # the same flows, stopped later: each draw's gain moves by no more than the first stop's certificate
    assert bool(((certified.gain - fits.gain).abs() <= first).all())
    assert certified.history is fits.history
    # where the certificate already holds, nothing is trained again
    assert fine_tune_certified(fits, draws, first.max().item()) is fits
    # a round tightens the stop by what the certificate misses by, and by half again: the certificate is linear in
    # the gradient, so one round lands within half the allowance (unless TIGHTEST_ROUND caps the tightening), and
    # not far below it (the flows are not trained further than the allowance needs)
    for miss in (10, 100):
        allowance = first.max().item() / miss
        assert allowance / 10 <= fine_tune_certified(fits, draws, allowance, rounds=1).gain_shift(draws).max().item() \
            <= allowance / 2


def test_one_continuation_round_lands_within_half_the_allowance_below_the_interpolation_threshold():
    # n = 20 < d = 60: the trainers' tolerance is relative to ||X^T y|| / n, and so is the continuation's
    # target (with d in place of n it is three times looser and one round lands near the allowance itself)
    draws = draw_target(8, 20, 60, math.pi / 8, 0.2, gen(4))
    fits = scratch_minus_fine_tune(draws, 2, 1e-5, "eq22", gen(5))
    for miss in (10, 100):
        allowance = fits.gain_shift(draws).max().item() / miss
        assert allowance / 10 <= fine_tune_certified(fits, draws, allowance, rounds=1).gain_shift(draws).max().item() \
            <= allowance / 2


def test_ridge_risk_reduction_takes_lam_zero_as_linear_transfer():
    draws = draw_target(4, 6, 16, 0.5, 0.1, gen(1))
    pretrained = pretrain(draws.beta_s, 2, 1e-4, "eq22", gen(2)).weights
    at_lt = excess_risk(linear_transfer(draws, pretrained)[0], draws)
    at_ridge = excess_risk(ridge_transfer(draws, pretrained, 0.1), draws)
    assert torch.equal(ridge_risk_reduction(draws, pretrained, 0.0, 0.1), at_lt - at_ridge)
    assert torch.equal(ridge_risk_reduction(draws, pretrained, 0.1, 0.1), torch.zeros(4, dtype=torch.float64))


def test_null_space_coefficient_reads_the_coefficient_of_p_perp_beta_s():
    g = gen(5)
    X = torch.randn(3, 4, 10, generator=g, dtype=torch.float64)
    beta_s = unit_vectors(1, 10, g)[0]
    perp = beta_s - (row_space_projector(X) @ beta_s.unsqueeze(-1)).squeeze(-1)
    row = (row_space_projector(X) @ torch.randn(3, 10, 1, generator=g, dtype=torch.float64)).squeeze(-1)
    coefficient = null_space_coefficient(X, beta_s, 2.5 * perp + row)
    assert torch.allclose(coefficient, torch.full((3,), 2.5, dtype=torch.float64), atol=1e-12)


def test_estimates_at_larger_alpha_are_capped_and_skip_the_base():
    seen = []

    def sample(alpha):
        seen.append(alpha)
        return torch.tensor([alpha, alpha + 1e-3])

    rows = estimates_at_larger_alpha(0.005, sample, (100.0, 10.0), 0.1)
    assert seen == [0.1, 0.05] and [r["alpha"] for r in rows] == [0.1, 0.05]
    assert rows[1]["mean"] == pytest.approx(0.0505)
    assert estimates_at_larger_alpha(0.1, sample, (100.0, 10.0), 0.1) == []


def test_recovery_reaches_beta_s_and_the_ladder_measures_rank_one_features():
    rec = recover_source(3, 8, 2, 1e-3, "eq22", gen(0), lambda b: b)
    assert bool(rec.fit.converged.all()) and rec.distance.max().item() <= 1e-11
    assert rec.margin_start > 0 and rec.along and rec.along[0]["step"] == 0
    source = unit_vectors(1, 8, gen(1))[0]
    ladder = feature_ladder(source, 3 * source, 2, [1e-2, 1e-3], "eq22", gen(2), networks=3)
    assert ladder.unconverged is None and len(ladder.ratios) == 2 == len(ladder.rows)
    assert ladder.ratios[1].max().item() < 0.2 * ladder.ratios[0].min().item()          # s2/s1 ~ alpha (L = 2)
    assert ladder.misalignment[1].max().item() < 1e-12                                   # the direction is normalised
    assert feature_ladder(source, torch.roll(source, 1), 2, [1e-2], "eq22", gen(2), 3).misalignment[0].min() > 0.5


def test_the_alpha_trend_retrains_at_larger_alphas_capped_at_a_tenth():
    """The approach to alpha -> 0 is shown at 100 and 10 times the run's alpha, never above 0.1
    (a pretraining scale beyond it is no longer small), and never at or below the run's own alpha."""
    trained_at = []

    def paired(draws, depth, alpha, init, gen, pretrained=None):
        if pretrained is None:
            trained_at.append(alpha)
        return PairedFits(torch.tensor([alpha, alpha + 1e-3]), None, None)

    def trend(alpha, shown=True):
        return paired_with_alpha_trend(paired, None, 2, alpha, "eq22", None, ["pretrained"], shown)

    result = trend(0.005)
    assert trained_at == [0.1, 0.05]
    assert [r["alpha"] for r in result.trend] == [0.1, 0.05] and result.trend[0]["mean"] == pytest.approx(0.1005)
    assert result.text.startswith("as alpha shrinks: ") and "at alpha=1e-01" in result.text
    assert (trend(0.1).trend, trend(0.1).text) == ([], "")
    assert (trend(1e-5, shown=False).trend, trend(1e-5, shown=False).text) == ([], "")


@pytest.mark.parametrize("depth, setting", [
    (2, (20, 15, 30, 2.5, 2.0)),         # RKC2 at FLOW_RTOL (worst 3.1e-5)
    (3, (40, 3, 13, math.pi, 0.0)),      # RK4 at STEP_SCALE, at the corner where its path error is largest (1.7e-4)
])
def test_fine_tunings_integrator_tolerance_is_met_and_not_loose(depth, setting):
    """flow_tolerance(depth), the per-draw allowance for fine_tune's integrator error in the eq.-(5) comparison the
    checks make, at a setting where it was measured (draws, n, d, theta, sigma): every draw within the checks'
    tolerance, and the constant not so far above the largest distance that a loosened constant, or an
    integrator error far beyond its order, would pass."""
    from numerics.depth_rescaling import rescaling_coefficient
    from simulate.transfer import fine_tune, flow_tolerance
    g = gen(4)
    draws = draw_target(*setting, g)
    pre = pretrain(draws.beta_s, depth, 1e-3, "eq22", g)
    m = fine_tune_against_eq5(rescaling_coefficient, draws, pre, fine_tune(draws, pre.weights).beta, depth)
    worst, allowed = m["distance"].max().item(), flow_tolerance(depth)
    assert bool((m["distance"] <= m["tol"]).all()) and allowed <= 20 * worst, (worst, allowed)
