"""Findings are regions: what a point is expected to get follows from its claim's recorded regions and, inside a
region with a corrected statement, from what this run can resolve (engine.verdict.accepted_verdicts).  Moving a
parameter inside what the record explains is no change; a wrong region or a wrong corrected statement is."""

import dataclasses
from statistics import NormalDist

import mpmath as mp
import pytest

import verify
from engine.verdict import Judge, accepted_verdicts, detection_band
from simulate.stats import Estimate
from theorems import REGISTRY
from theorems.core import TIERS, Finding

WITH_FINDINGS = sorted(theorem.id for theorem in REGISTRY.values() if theorem.findings)


def test_every_finding_is_a_region_holding_its_evidence_at_every_tier():
    assert len(WITH_FINDINGS) == 10
    for theorem_id in WITH_FINDINGS:
        theorem = REGISTRY[theorem_id]
        for finding in theorem.findings:
            for tier in TIERS if finding.at is not None else ():    # a power limit may have no evidence point
                assert theorem.finding_at(theorem.resolve(finding.at, tier)) is finding
            assert finding.at is not None or finding.fair
            assert theorem.record.startswith("agree; ") and finding.region in theorem.record


@pytest.mark.parametrize("finding, message", [
    (Finding("delta >= 4", "a region that misses its own evidence", at={"delta": "3"}), "outside its region"),
    (Finding("lam >= 2", "a parameter the claim does not have", at={"delta": "3"}), "unknown name 'lam'"),
    (Finding("delta >= 2", "", at={"delta": "3"}), "one-line why"),
    (Finding("delta >= 2", "a power limit that lists its own verdict", at={"delta": "3"}, fair=("disagree",)), "fair"),
    (Finding("delta >= 2", "a refutation without evidence", at=None), "evidence point"),
])
def test_a_malformed_finding_is_refused_where_it_is_declared(finding, message):
    with pytest.raises(ValueError, match=message):
        dataclasses.replace(REGISTRY["dudley-distance"], findings=(finding,))


def test_a_power_limit_accepts_each_verdict_it_lists_and_adds_no_case():
    theorem = REGISTRY["dudley-distance"]
    limit = Finding("delta >= 5", "a power limit", at=None, verdict="inconclusive", fair=("agree",))
    both = dataclasses.replace(theorem, findings=(limit, *theorem.findings))    # the first region holding a point wins
    assert both.recorded(both.resolve({"delta": "6"}, "quick"))[0] == "inconclusive or agree"
    assert accepted_verdicts("inconclusive or agree", "", Judge(1e-3).outcome("x")) == (["inconclusive", "agree"], "")
    assert len(both.all_cases) == len(theorem.all_cases) and "inconclusive or agree where delta >= 5" in both.record


def test_the_detection_band_is_where_either_verdict_has_probability_above_the_rate():
    rate = 1e-3
    critical = NormalDist().inv_cdf(1 - rate / 2)
    low, high = detection_band(critical, rate)
    alarm = lambda shift: NormalDist().cdf(shift - critical) + NormalDist().cdf(-shift - critical)   # noqa: E731
    assert alarm(high) == pytest.approx(1 - rate, rel=1e-6)            # above: disagree with P >= 1 - rate
    assert NormalDist().cdf(low - critical) == pytest.approx(rate)    # below: the side the shift pushes, <= rate
    assert alarm(low) <= 1.5 * rate                                  # ... and both sides together
    assert detection_band(1.0, 1e-3)[0] == 0.0                        # never a negative shift


def _outcome(predicts, corrected_holds=True):
    judge = Judge(1e-3)
    main = judge.mean(Estimate(0.0, 1.0, 1000), 0.0, "paper")
    judge.corrected("the corrected formula", predicts).per_draw(0.5 if corrected_holds else 2.0, "per draw")
    return judge.outcome("x", main=main)


@pytest.mark.parametrize("shift, accepted", [(20.0, ["disagree"]), (0.05, ["agree"]), (3.0, ["agree", "disagree"])])
def test_inside_a_corrected_region_the_paper_verdict_follows_the_predicted_shift(shift, accepted):
    verdicts, why = accepted_verdicts("disagree", "the corrected formula", _outcome(shift))
    assert verdicts == accepted and f"{shift:.2f} standard errors" in why


def test_a_failing_corrected_statement_accepts_nothing_and_outside_a_region_the_record_stands():
    assert accepted_verdicts("disagree", "the corrected formula", _outcome(20.0, corrected_holds=False))[0] == []
    assert accepted_verdicts("agree", "", _outcome(20.0)) == (["agree"], "")     # outside: the paper must hold
    assert accepted_verdicts("agree", "", Judge(1e-3).outcome("x")) == (["agree"], "")


def _fraction_outcome(failures, claimed, predicted):
    """A check of one fraction test (2000 draws against a claimed failure probability) whose corrected statement
    predicts the probability behind it."""
    judge = Judge(1e-3)
    test = judge.fraction(failures, 2000, claimed, "paper")
    judge.corrected("the law", None, rates=[(test, predicted, True)]).fraction(failures, 2000, predicted, "law",
                                                                               alarm="both")
    return judge.outcome("x")


def test_a_fraction_test_alarms_exactly_at_its_smallest_alarming_count():
    from engine.verdict import fraction_band, fraction_power
    from numerics.binomial_bounds import binomial_survival
    judge = Judge(1e-3)
    test = judge.fraction(3, 2000, 1e-4, "paper")
    crit = judge.critical("above")
    counts = [k for k in range(0, 20) if Judge(1e-3).fraction(k, 2000, 1e-4, "x").z > crit]
    assert fraction_power(test, 0.002, crit) == pytest.approx(binomial_survival(counts[0], 2000, 0.002))
    low, high = fraction_band(test, crit, 1e-3)
    assert binomial_survival(counts[0], 2000, low) == pytest.approx(1e-3, rel=1e-6)
    assert binomial_survival(counts[0], 2000, high) == pytest.approx(1 - 1e-3, rel=1e-6)
    assert fraction_band(Judge(1e-3).fraction(0, 2000, 1.5, "x"), crit, 1e-3) == (0.0, 0.0)   # a "probability" >= 1


@pytest.mark.parametrize("predicted, accepted", [(0.02, ["disagree"]), (1e-7, ["agree"]), (1.5e-3, ["agree", "disagree"])])
def test_inside_a_corrected_region_the_fraction_tests_verdict_follows_their_predicted_power(predicted, accepted):
    failures = round(2000 * predicted)
    outcome = _fraction_outcome(failures, 1e-6, predicted)
    verdicts, why = accepted_verdicts("disagree", "the law", outcome)
    assert outcome.corrected["verdict"] == "agree" and verdicts == accepted
    assert "fraction tests alarm" in why and "either verdict is fair for probabilities from" in why


def test_a_predicted_fraction_the_draws_reject_accepts_nothing():
    outcome = _fraction_outcome(80, 1e-6, 0.01)          # 4 % of the draws fail where the law predicts 1 %
    assert outcome.corrected["verdict"] == "disagree" and accepted_verdicts("disagree", "the law", outcome)[0] == []


def test_a_corrected_statement_shares_the_checks_bonferroni_count():
    judge = Judge(1e-3)
    judge.mean(Estimate(0.0, 1.0, 1000), 0.0, "paper")
    fix = judge.corrected("c", 0.0)
    fix.mean(Estimate(0.0, 1.0, 1000), 0.0, "corrected")
    assert judge.count == fix.count == 2 and judge.critical() == fix.critical() > Judge(1e-3).critical()


# --- the command line: exploring around a finding is no change; a wrong record is -------------------------------

# Grids of 20 or more points around each finding, across the parameters' typical ranges (docs/findings.md lists
# them, and the records that do not yet explain their checks everywhere).
EXPLORING = {
    # 'for any delta > 0' fails exactly where delta >= 2: both sides of the edge
    "dudley-distance": ["--grid", "delta=1/2,1,3/2,19/10,2,21/10,5/2,4", "--grid", "sigma=1/5,1/2,1"],
    # three positive roots exactly where rho > 0, gamma m > 0 and the discriminant is positive
    "ptft-penalty": ["--grid", "m=1e-5,1e-4,1e-3,1e-1,1", "--grid", "gamma=-1/10,1/20,1/10", "--grid", "rho=1,1/2"],
    "ridge-optimal-lambda": ["--grid", "gamma=1/10,1/5,1/2,3/2", "--grid", "sigma=0,1/2,1", "--grid", "theta=0,pi/8,pi/3"],
    # inside sigma > 0 and gamma < 1 eq. (16) fails where this run resolves the difference, and the corrected
    # statement (Shachaf et al.'s eq. (5)) holds at every point
    "finetune": ["--param", "d=40", "--param", "theta=pi/2", "--trials", "40", "--grid", "sigma=0,1/4,1/2,1,2",
                 "--grid", "gamma=1/5,1/2,7/10,3/2"],
    # beta = c theta_S fails exactly where the init is not balanced, at every alpha and angle
    "frozen-layers": ["--grid", "balanced=0,1", "--grid", "alpha=1e-3,1e-2,1e-1", "--grid", "theta=pi/8,pi/4,pi/2,7*pi/8"],
    # three sharp edges, found by root finding: both sides of each
    "ptft-penalty-shape": ["--grid", "gamma=-1/100,-1/1000,0,1/100000,1/100", "--grid", "rho_l1=0,1/2,9/10,19/20,99/100"],
    # from eps = 1 on the law of R(beta) (the corrected statement) says how likely the paper's tests are to alarm, at
    # every gamma and theta: outside the region (eps = 1/2), the former gap eps in (2, 5/2), n = 1, 2 and 40 at the
    # smallest size, theta from pi/16 (the tail vanishing) to pi (no tail)
    "gaussian-depth-bound": ["--grid", "eps=1/2,9/4,8", "--grid", "gamma=1/20,1/10,1/2", "--grid",
                             "theta=pi/16,pi/2,7*pi/8,pi"],
    # Fig. 1's "Bottom beats Top" fails where the target keeps enough variance outside the top block (the Q region)
    "covariance-bound": ["--grid", "bottom_eig=1/10,1/5,3/10,3/5,1", "--grid", "top_frac=1/20,1/5", "--grid", "top_eig=3/2,2"],
    # a = 1/10: both sides of the recorded window; a = 1/2, 1: the power limits below rho = 7/10 (inconclusive or agree,
    # and disagree around the penalty's root), the resolved benefit above.  20-85 s a point: 18 min on a loaded
    # 2-core machine (6.3 min of CPU)
    "ptft-sample-efficiency": ["--grid", "rho=0,1/4,1/2,3/5,4/5,17/20,19/20", "--grid", "a=1/10,1/2,1"],
    # n_max = 128: both sides of the crossing's edge (mu = 9/16 runs the 4/8 ladder, 5/8 the 5/8 one) and the ladder's
    # power limit at mu = 1/4 (inconclusive or agree); n_max = 64 and 256: the scratch law's curvature at every mu.
    # 85-250 s a point on a loaded 2-core machine
    "relu-transfer": ["--grid", "mu=1/4,3/8,1/2,9/16,5/8,3/4,7/8", "--grid", "n_max=64,128,256"],
}
SLOW_EXPLORING = {"ptft-sample-efficiency", "relu-transfer"}


def test_every_exploring_grid_has_twenty_points_around_a_recorded_finding():
    import math
    for theorem_id, args in EXPLORING.items():
        grids = [value.split("=", 1)[1] for option, value in zip(args, args[1:]) if option == "--grid"]
        assert math.prod(len(grid.split(",")) for grid in grids) >= 20, theorem_id
        assert REGISTRY[theorem_id].findings, theorem_id
    assert {theorem.id for theorem in REGISTRY.values() if theorem.findings} == set(EXPLORING)   # every finding has one


@pytest.mark.parametrize("theorem_id", [pytest.param(theorem_id, marks=pytest.mark.slow) if theorem_id in SLOW_EXPLORING
                                        else theorem_id for theorem_id in EXPLORING])
def test_exploring_around_a_finding_is_no_change(theorem_id, capsys):
    assert verify.main([theorem_id, "--quick", *EXPLORING[theorem_id]]) == 0
    assert "CHANGED" not in capsys.readouterr().out


def test_a_wrong_region_is_a_change(monkeypatch, capsys):
    theorem = REGISTRY["dudley-distance"]
    wrong = Finding("delta >= 4", theorem.findings[0].why, at={"delta": "5"})
    monkeypatch.setitem(REGISTRY, theorem.id, dataclasses.replace(theorem, findings=(wrong,)))
    assert verify.main(["dudley-distance", "--quick", "--param", "delta=3"]) == 1
    assert "CHANGED" in capsys.readouterr().out


def test_a_wrong_law_of_the_risk_is_a_change(monkeypatch, capsys):
    # gaussian-depth-bound's corrected statement with half its tail (its negative control gdb-law-one-tail): the
    # failure fractions it predicts are rejected on the draws, so the record accepts no verdict there
    theorem = REGISTRY["gaussian-depth-bound"]
    control = next(c for c in theorem.negative_controls if c.name == "gdb-law-one-tail")
    monkeypatch.setitem(REGISTRY, theorem.id, dataclasses.replace(theorem, formulas={**theorem.formulas, **control.formulas}))
    assert verify.main(["gaussian-depth-bound", "--quick", *(f"--param={k}={v}" for k, v in control.params.items())]) == 1
    out = capsys.readouterr().out
    assert "CHANGED" in out and "corrected statement" in out


def test_a_wrong_corrected_statement_is_a_change(monkeypatch, capsys):
    theorem = REGISTRY["finetune"]
    coefficient = theorem.formulas["corrected"]
    wrong = dataclasses.replace(theorem, formulas={**theorem.formulas,
                                                   "corrected": lambda a, b, s, L: coefficient(a, b, s, L) * mp.mpf("1.01")})
    monkeypatch.setitem(REGISTRY, theorem.id, wrong)
    assert verify.main(["finetune", "--quick", "--param", "d=30", "--param", "sigma=1", "--param", "theta=pi/2",
                        "--trials", "20"]) == 1
    out = capsys.readouterr().out
    assert "CHANGED" in out and "corrected" in out
