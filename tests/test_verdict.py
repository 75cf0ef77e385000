"""The verdict engine: Bonferroni over the comparisons a check makes, the three-way trend test,
certified per-draw comparisons, the effect size and its interval, and the one-line detail."""

import math
from statistics import NormalDist

import pytest

from engine.verdict import Judge, effect_size, effect_text, row_effect
from simulate.stats import Estimate, z_critical
from theorems.core import Outcome


def test_the_critical_value_is_shared_by_the_counted_comparisons():
    judge = Judge(1e-3, family=4)
    for k in range(3):
        judge.mean(Estimate(1.0, 0.1, 100), 1.0, f"m{k}")
    judge.mean(Estimate(1.0, 0.1, 100), 1.0, "shown", counted=False)
    judge.per_draw(0.5, "per draw")
    assert judge.count == 3
    assert judge.critical() == pytest.approx(z_critical(1e-3 / 4, comparisons=3))
    assert judge.critical("above") == pytest.approx(z_critical(1e-3 / 4, comparisons=3, two_sided=False))


def test_a_mean_fails_beyond_the_bonferroni_critical_value_only():
    crit = z_critical(1e-3, comparisons=2)
    inside, outside = Judge(1e-3), Judge(1e-3)
    for judge, z in ((inside, crit - 0.01), (outside, crit + 0.01)):
        judge.fit(z * 0.1, 0.1, 0.0, "a")     # a fit: plain z, no skewness correction
        judge.fit(0.0, 0.1, 0.0, "b")
    assert inside.verdict() == "agree" and outside.verdict() == "disagree"
    assert "a: " in outside.detail("x") and "z=+" in outside.detail("x")


def test_one_sided_alarms_look_at_one_side():
    judge = Judge(1e-3)
    judge.fit(-10.0, 1.0, 0.0, "bound", alarm="above")   # far below a bound: fine
    assert judge.verdict() == "agree"
    judge.fit(10.0, 1.0, 0.0, "bound 2", alarm="above")
    assert judge.verdict() == "disagree"


def test_the_trend_test_has_three_outcomes():
    crit = z_critical(1e-3, two_sided=False)
    for mean, verdict in ((0.5 + (crit + 0.1) * 0.1, "agree"), (0.5, "inconclusive"), (0.5 - (crit + 0.1) * 0.1, "disagree")):
        judge = Judge(1e-3)
        judge.threshold(Estimate(mean, 0.1, 50), 0.5, "slope")
        assert judge.verdict() == verdict


def test_a_skewed_threshold_is_the_three_way_test_on_the_mean_z():
    est = Estimate(0.9, 0.1, 40, skewness=0.5)
    plain, skewed, mean = Judge(1e-3), Judge(1e-3), Judge(1e-3)
    reference = mean.mean(est, 0.5, "witness", alarm="below")
    comparison = skewed.threshold(est, 0.5, "witness", skewed=True)
    assert comparison.kind == "threshold" and comparison.z == reference.z != plain.threshold(est, 0.5, "w").z
    assert skewed.critical("below") == mean.critical("below") and skewed.count == 1
    for level, verdict in ((0.5, "agree"), (0.9, "inconclusive"), (1.5, "disagree")):
        judge = Judge(1e-3)
        judge.threshold(est, level, "witness", skewed=True)
        assert judge.verdict() == verdict


def test_a_simulation_beyond_float64_decides_nothing_but_a_zero_standard_error_does():
    judge = Judge(1e-3)
    judge.mean(Estimate(math.inf, math.nan, 100), math.inf, "overflowed")   # kl-divergence at sigma = 1e-300
    assert judge.verdict() == "inconclusive" and "not a number (NaN) in float64" in judge.detail("")
    nan_mean = Judge(1e-3)
    nan_mean.mean(Estimate(math.nan, math.nan, 100), 2.0, "inf - inf on the way")
    assert nan_mean.verdict() == "inconclusive"
    nan_draw = Judge(1e-3)
    nan_draw.per_draw(math.nan, "a draw that overflowed")
    assert nan_draw.verdict() == "inconclusive"
    exact = Judge(1e-3)   # finite numbers with se = 0: z is infinite, and that is a decision
    exact.mean(Estimate(1.5, 0.0, 100), 1.0, "exact")
    assert exact.verdict() == "disagree"
    # what a NaN test resolves is NaN: recorded, and the row is undecided for the test, not "not converged"
    judge.converged(1e-12, Judge.resolvable(Estimate(math.inf, math.nan, 100)), "training")
    assert judge.unconverged() == [] and judge.verdict() == "inconclusive"


def test_per_draw_and_facts_are_deterministic_and_not_counted():
    judge = Judge(1e-3)
    judge.per_draw(0.99, "within")
    judge.fact(True, "count")
    assert judge.count == 0 and judge.verdict() == "agree"
    judge.per_draw(1.01, "beyond")
    assert judge.verdict() == "disagree" and "beyond" in judge.detail("")
    assert judge.outcome("s").effect == {"estimate": 1.01, "low": 1.01, "high": 1.01, "unit": "tolerance"}


def test_the_effect_is_relative_with_its_interval_or_absolute_at_zero():
    effect = effect_size(1.02, 0.01, 1.0, 3.0)
    assert effect["unit"] == "relative"
    assert (effect["estimate"], effect["low"], effect["high"]) == pytest.approx((0.02, -0.01, 0.05))
    assert effect_text(effect) == "+2 % [-1, +5] %"
    at_zero = effect_size(0.003, 0.001, 0.0, 2.0)
    assert at_zero["unit"] == "absolute" and at_zero["low"] == pytest.approx(0.001)


def test_every_row_gets_an_effect_at_the_runs_false_alarm_level():
    outcome = Outcome("agree", "", mean=2.0, se=0.1, trials=10, reference=2.1)
    effect = row_effect(outcome, 1e-3)
    crit = z_critical(1e-3)
    assert effect["high"] - effect["low"] == pytest.approx(2 * crit * 0.1 / 2.1)
    assert row_effect(Outcome("agree", ""), 1e-3) is None
    assert row_effect(Outcome("agree", "", mean=1.0, se=math.inf, reference=1.0), 1e-3) is None


def test_the_outcome_carries_the_main_comparison_and_the_critical_value():
    judge = Judge(1e-3, family=2)
    main = judge.mean(Estimate(0.5, 0.01, 400, skewness=0.0), 0.49, "main")
    outcome = judge.outcome("matched", main=main, sizes={"n": 3})
    assert (outcome.mean, outcome.se, outcome.reference, outcome.trials) == (0.5, 0.01, 0.49, 400)
    assert outcome.z == pytest.approx(1.0) and outcome.extra["z_critical"] == pytest.approx(z_critical(5e-4))
    assert outcome.detail.startswith("matched (1 test, |z| <= ")
    assert outcome.effect["unit"] == "relative"


def test_a_deterministic_claim_gets_no_interval_and_an_undecided_fact_is_inconclusive():
    judge = Judge(0.0)                       # false-alarm probability 0: a deterministic claim
    judge.fact(True, "count")
    assert judge.verdict() == "agree"
    assert row_effect(Outcome("agree", "", mean=2.0, se=0.5, reference=1.0), 0.0)["low"] == pytest.approx(1.0)
    judge.fact(None, "second route", "decides otherwise")
    assert judge.verdict() == "inconclusive" and "not decided" in judge.detail("")
    judge.fact(False, "third")
    assert judge.verdict() == "disagree"     # a failure outranks an undecided comparison


def test_a_check_resting_on_per_draw_tolerances_reports_its_effect_in_tolerances():
    judge = Judge(0.0)
    judge.per_draw(0.3, "distance")
    outcome = judge.outcome("within", mean=1.7, se=0.1, reference=1.5, trials=8)   # the row still shows its estimate
    assert (outcome.mean, outcome.reference) == (1.7, 1.5)
    assert outcome.effect == {"estimate": 0.3, "low": 0.3, "high": 0.3, "unit": "tolerance"}
    tested = Judge(1e-3)
    tested.per_draw(0.3, "distance")
    tested.mean(Estimate(1.7, 0.1, 8), 1.5, "mean")
    assert tested.outcome("x", main=tested.comparisons[-1]).effect["unit"] == "relative"


def test_critical_for_is_the_critical_value_that_many_comparisons_get():
    judge = Judge(1e-3, family=4)
    planned = judge.critical_for(7)
    for _ in range(7):
        judge.fit(0.0, 1.0, 0.0, "a test")
    assert planned == judge.critical() and judge.critical_for(7, "above") == judge.critical("above")


def test_a_rate_is_tested_against_the_proofs_exponent_not_a_looser_threshold():
    # a biased slope 0.7 that the rule "exceeds 1/2" passed is rejected against the proof's exponent 1
    loose = Judge(1e-3)
    loose.threshold(Estimate(0.7, 0.01, 20), 0.5, "slope")
    tight = Judge(1e-3)
    tight.exponent(Estimate(0.7, 0.01, 20), Estimate(0.72, 0.01, 20), 1, "slope")
    assert loose.verdict() == "agree" and tight.verdict() == "disagree"


def test_the_ladders_remaining_higher_order_terms_are_allowed_for():
    # sparsification's balanced init at quick size: the last decade's slope 1 - 9.4e-8 with a standard error of
    # 4e-9 is 23 standard errors short of 1, and within what the previous decade (1 - 1.2e-5) leaves
    judge = Judge(1e-3)
    rate = judge.exponent(Estimate(1 - 9.4e-8, 4e-9, 20), Estimate(1 - 1.19e-5, 4e-9, 20), 1, "s2/s1", alarm="below")
    assert rate.se == pytest.approx(1.18e-5 / 9, rel=0.01) and abs(rate.z) < 0.1 and judge.verdict() == "agree"
    # an O() rate is met by a faster decay, an exact one is not
    assert Judge(1e-3).exponent(Estimate(2.0, 1e-3, 20), Estimate(2.0, 1e-3, 20), 1, "L = 3", alarm="below").z > 0
    exact = Judge(1e-3)
    exact.exponent(Estimate(2.0, 1e-3, 20), Estimate(2.0, 1e-3, 20), 1, "exact")
    assert exact.verdict() == "disagree"


def test_an_outcome_names_a_known_verdict_and_carries_its_estimate_with_its_error_bar():
    with pytest.raises(ValueError, match="verdict must be one of"):
        Outcome("refuted", "")
    for partial in ({"mean": 1.0}, {"se": 0.1}):
        with pytest.raises(ValueError, match="mean and se are given together"):
            Outcome("agree", "", **partial)
    assert Outcome("agree", "", mean=1.0, se=0.1).se == 0.1


def test_the_two_sided_chernoff_z():
    from numerics.binomial_bounds import chernoff_two_sided_z
    # 30 of 100 under p = 1/2: one side's bound exp(-N KL(0.3 || 0.5)), as a normal quantile, negative (below p)
    kl = 0.3 * math.log(0.3 / 0.5) + 0.7 * math.log(0.7 / 0.5)
    assert chernoff_two_sided_z(30, 100, 0.5) == pytest.approx(NormalDist().inv_cdf(math.exp(-100 * kl)), rel=1e-12)
    assert chernoff_two_sided_z(70, 100, 0.5) == pytest.approx(-chernoff_two_sided_z(30, 100, 0.5), rel=1e-12)
    assert chernoff_two_sided_z(50, 100, 0.5) == 0.0 and chernoff_two_sided_z(0, 100, 0.0) == 0.0
    # off a certain outcome: impossible under p, so an infinite z on the side the fraction lies
    assert chernoff_two_sided_z(1, 100, 0.0) == math.inf
    assert chernoff_two_sided_z(99, 100, 1.0) == -math.inf
