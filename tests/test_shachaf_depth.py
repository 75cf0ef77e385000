"""theorems.shachaf_depth: Shachaf, Brutzkus & Globerson Sec. 5 (Thms 5.2, 5.3, 5.5) as registered claims.

Each claim's quick check gives its recorded verdict; a wrong formula swapped into the same check is
rejected (negative controls); out-of-domain parameters raise ParameterError; the sympy derivations hold.
"""

import importlib
import re

import mpmath as mp
import pytest
import sympy as sp
import torch

import theorems.shachaf_depth as shachaf_depth
from theorems.core import ParameterError, Run
from theorems.registry import REGISTRY
from claim_helpers import quick_check

IDS = ("depth-rescaling", "aligned-tasks", "frozen-layers")


# --- registration ----------------------------------------------------------------------------------

def test_claims_are_registered_once():
    again = importlib.import_module("theorems.shachaf_depth")        # cached: no second register()
    assert again is shachaf_depth
    for theorem_id, theorem in zip(IDS, (shachaf_depth.depth_rescaling, shachaf_depth.aligned_tasks,
                                         shachaf_depth.frozen_layers)):
        assert REGISTRY[theorem_id] is theorem
    with pytest.raises(ValueError, match="registered twice"):
        from theorems.registry import register
        register(shachaf_depth.depth_rescaling)


def test_fields_are_filled():
    for theorem_id in IDS:
        theorem = REGISTRY[theorem_id]
        assert "Thm 5." in theorem.source and theorem.statement and theorem.quantity and theorem.assumptions
        assert theorem.verdict_rule and set(theorem.trials) == {"quick", "default", "paper"}
        assert theorem.cases and all(theorem.points({}, tier) for tier in ("quick", "default"))
    assert [f.region for f in REGISTRY["frozen-layers"].findings] == ["balanced == 0"]


# (sympy derivations and precision stability: tests/test_theorems.py runs them for every registered claim)


def test_depth_rescaling_theory_value_is_eq5_at_the_mean_inputs():
    theorem = REGISTRY["depth-rescaling"]
    # unit tasks: E||P_par theta_T||^2 = E||P_par theta_S||^2, so the typical coefficient is exactly 1 ...
    assert theorem.theory(theorem.resolve({"L": "3"}, "quick"), 30) == 1
    # ... and a larger target is rescaled up, towards eq. (6)'s ||theta_T|| / ||theta_S|| = 3
    with mp.workdps(30):
        c3 = theorem.theory(theorem.resolve({"L": "3", "norm_t": "3"}, "quick"), 30)
        c100 = theorem.theory(theorem.resolve({"L": "6", "norm_t": "3", "balanced": "1"}, "quick"), 30)
        assert 1 < c3 < c100 < 3


def test_depth_rescaling_statement_is_eq5():
    # beta_oo = c P_perp theta_S + P_par theta_T with c = (r/s)^((L-1)/L), r = ||beta_oo||, s = ||theta_S||
    statement = REGISTRY["depth-rescaling"].symbolic().statement
    perp, par = sp.Symbol(r"P_\perp\theta_S"), sp.Symbol(r"P_\parallel\theta_T")
    r, s, L = sp.symbols("r s L", positive=True)
    assert sp.simplify(statement.rhs - ((r / s) ** ((L - 1) / L) * perp + par)) == 0


# --- recorded verdicts at the quick tier ---------------------------------------------------------------

def test_depth_rescaling_quick_agrees(run):
    theorem = REGISTRY["depth-rescaling"]
    outcome = quick_check(theorem, run)
    assert outcome.verdict == "agree" and not theorem.findings, outcome.detail
    assert outcome.extra["max_relative_distance"] < 1e-5
    table = outcome.extra["coefficient_vs_depth"]
    assert [row["L"] for row in table] == [1, 2, 3, 5, 10, 100, "inf"]
    assert table[0]["mean_c"] == 1
    gaps = [row["mean_abs_c_minus_c_inf"] for row in table]
    assert all(x > y for x, y in zip(gaps, gaps[1:]))                  # c_L -> eq. (6) monotonically


@pytest.mark.parametrize("overrides", [{"L": "1"}, {"L": "2", "sigma": "1/2"}])
def test_depth_rescaling_other_cases_agree(run, overrides):
    outcome = quick_check(REGISTRY["depth-rescaling"], run, **overrides)
    assert outcome.verdict == "agree", outcome.detail


def test_aligned_tasks_quick_agrees_and_depth_helps(run):
    theorem = REGISTRY["aligned-tasks"]
    outcome = quick_check(theorem, run, L="2")
    assert outcome.verdict == "agree" and not theorem.findings, outcome.detail
    rows = outcome.extra["by_depth"]
    assert rows[1]["mean_risk"] < rows[0]["mean_risk"]
    beyond = outcome.extra["eq5_beyond"]
    risks = [row["mean_predicted_risk"] for row in beyond]
    assert all(x > y for x, y in zip(risks, risks[1:])) and risks[-1] == 0       # Thm 5.3: 0 only as L -> oo
    assert beyond[5]["ratio_to_L1"] > 0.01                                      # ... and slowly (L = 100)
    assert f"R_L/R_1 = {beyond[4]['ratio_to_L1']:.3g} at L=10, {beyond[5]['ratio_to_L1']:.3g} at L=100" \
        in outcome.detail                                                       # the detail quotes those depths


def test_frozen_layers_quick_records_the_finding(outcomes):
    theorem = REGISTRY["frozen-layers"]
    outcome = outcomes("frozen-layers")
    assert outcome.verdict == theorem.recorded(theorem.resolve({}, "quick"))[0] == "disagree", outcome.detail
    ladder = outcome.extra["alpha_ladder"]
    # transient: at a fixed number of steps the off-line part shrinks like alpha^(2k) = alpha^2 ...
    slopes = outcome.extra["alpha_exponent_by_step"]
    assert slopes and all(1.5 < slope < 2.5 for slope in slopes.values()), slopes
    # ... but at the t -> oo limit it is O(1) for every alpha, and certified by the training loss
    assert all(row["off_line_at_limit_min"] > 0.05 and row["certified_off_line_min"] > 0 for row in ladder)


def test_frozen_layers_exactly_balanced_agrees(outcomes):
    outcome = outcomes("frozen-layers", balanced="1")
    assert outcome.verdict == "agree", outcome.detail
    row = outcome.extra["alpha_ladder"][0]
    assert row["loss_at_limit_max"] > 0                    # ... but zero training loss is out of reach
    assert row["coefficient_vs_line_fit_max"] < 1e-9      # it converges to the best c on the line


# --- frozen-layers along training: the order of limits ----------------------------------------------------

def _points_grow(curve):
    points = curve["points"]
    return (all(a["step"] < b["step"] and a["t_median"] < b["t_median"] for a, b in zip(points, points[1:]))
            and all(a["off_max"] <= b["off_max"] for a, b in zip(points[1:], points[2:])))


def test_frozen_layers_off_line_part_grows_like_alpha_2k_t_along_training(outcomes):
    """Fig. 3's approximately balanced init: from the same run's convergence checks (nothing retrained), the
    off-line part grows linearly in t at each alpha (linear response: ~ alpha^(2k) t), at a rate / alpha^(2k)
    that is the same for every alpha; so alpha -> 0 at a fixed t keeps the line, t -> oo at a fixed alpha does
    not."""
    outcome = outcomes("frozen-layers")
    rows = outcome.extra["alpha_ladder"]
    assert len(rows) == 3
    for row in rows:
        curve = row["off_line_curve"]
        assert _points_grow(curve) and curve["points"][0]["step"] == 0 and curve["points"][-1]["step"] == row["final_step"]
        assert abs(curve["t_exponent"]["mean"] - 1) < 0.1 and curve["t_exponent"]["draws"] == 8
    rates = [row["off_line_curve"]["rate_over_alpha_2k"] for row in rows]
    assert max(rates) < 1.2 * min(rates)
    growth = outcome.extra["off_line_growth"]
    assert abs(growth["alpha_exponent_of_rate"] - 2) < 0.2 and "t -> oo" in growth["order_of_limits"]
    assert "off-line part along training: alpha=1.0e-02" in outcome.detail


@pytest.mark.parametrize("growing, fitted", [(3, False), (4, True)])
def test_the_growth_is_fitted_only_when_more_than_half_the_draws_grow(growing, fitted):
    # 6 draws, 20 checks at t = 1 ... 20: `growing` of them move off the line like 1e-3 t, the rest stay at the
    # rounding floor; a fit to half of them or fewer would describe the draws that happen to grow
    from simulate.frozen_finetune import off_line_curve
    times = torch.arange(1, 21, dtype=torch.float64).unsqueeze(1).expand(20, 6)
    floor = 1e-12
    trajectory = torch.where(torch.arange(6) < growing, 1e-3 * times, floor)
    curve = off_line_curve(trajectory, times, list(range(20)), 1e-2, 1, floor)
    assert (curve["t_exponent"] is not None) == fitted and (curve["rate"] is not None) == fitted
    if fitted:
        assert curve["t_exponent"]["draws"] == growing and abs(curve["t_exponent"]["mean"] - 1) < 1e-12


def test_frozen_layers_exactly_balanced_stays_on_the_line_along_all_of_training(outcomes):
    outcome = outcomes("frozen-layers", balanced="1")
    curve = outcome.extra["alpha_ladder"][0]["off_line_curve"]
    assert curve["max_over_checks"] <= shachaf_depth.OFF_TOL
    assert all(point["off_max"] <= shachaf_depth.OFF_TOL for point in curve["points"])
    assert curve["t_exponent"] is None and curve["rate"] is None and curve["t_to_1pct"] is None
    assert outcome.extra["off_line_growth"]["alpha_exponent_of_rate"] is None


@pytest.mark.parametrize("multiple", [9.5, 10.5])
def test_the_growth_text_states_the_bound_it_tested(multiple):
    # a curve too flat (or too sparse) to fit: the text names the bound off_line_curve fits above, and holds
    largest = multiple * shachaf_depth.OFF_TOL
    curve = {"points": [{"off_max": largest, "t_median": 1.0}], "t_exponent": None, "max_over_checks": largest}
    text = shachaf_depth._growth_text([{"alpha": 1e-2, "off_line_curve": curve}], 1, None)
    said = re.search(r"(stays below|above) ([0-9.e+-]+)", text)
    assert said and (largest <= float(said[2]) if said[1] == "stays below" else largest > float(said[2]))
    assert said[1] == ("stays below" if multiple < shachaf_depth.GROWTH_FLOOR_FACTOR else "above")


def test_the_alpha_exponent_is_read_only_where_both_off_line_fractions_clear_the_floor():
    from simulate.frozen_finetune import alpha_exponents
    floor = shachaf_depth.OFF_TOL
    rows = [{"alpha": 1e-2, "off_line_max_by_step": {100: 1e-6, 200: 4e-6, 300: 0.5 * floor}},
            {"alpha": 1e-3, "off_line_max_by_step": {100: 0.5 * floor, 200: 4e-8, 300: 1e-7}}]
    slopes = alpha_exponents(rows, floor)       # at 100 and 300 one of the two is rounding, not growth
    assert list(slopes) == [200] and slopes[200] == pytest.approx(2.0)


def test_frozen_layers_two_frozen_layers_grow_like_alpha_4_t():
    run = Run(tier="quick", seed=0, device=torch.device("cpu"), trends=False)
    outcome = quick_check(REGISTRY["frozen-layers"], run, L="3", k="2")
    curve = outcome.extra["alpha_ladder"][0]["off_line_curve"]
    assert _points_grow(curve) and abs(curve["t_exponent"]["mean"] - 1) < 0.15
    assert curve["max_over_checks"] < 1e-3          # alpha^4 t: far smaller than with one frozen layer


# --- negative controls -------------------------------------------------------------------------------

def test_negative_controls_are_declared_on_the_claims():
    # tests/test_negative_controls.py runs them
    declared = {theorem_id: sorted(c.name for c in REGISTRY[theorem_id].negative_controls) for theorem_id in IDS}
    assert declared == {"depth-rescaling": ["dr-coefficient-one", "dr-limit-at-finite-L", "dr-noise-ignored",
                                            "dr-wrong-exponent"],
                        "aligned-tasks": ["at-eq8-missing-factor", "at-no-rescaling"],
                        "frozen-layers": ["fl-target-direction"]}


# --- domains ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("theorem_id, overrides, message", [
    ("depth-rescaling", {"L": "0"}, "outside its domain"),
    ("depth-rescaling", {"L": "7"}, "outside its domain"),
    ("depth-rescaling", {"L": "2.5"}, "must be an integer"),
    ("depth-rescaling", {"gamma": "1"}, "outside its domain"),
    ("depth-rescaling", {"gamma": "19/20", "d": "20"}, "n = round"),
    ("depth-rescaling", {"theta": "4"}, "outside its domain"),
    ("depth-rescaling", {"sigma": "-1"}, "outside its domain"),
    ("depth-rescaling", {"norm_t": "0"}, "outside its domain"),
    ("depth-rescaling", {"alpha": "1/2"}, "balanced only up to"),
    ("depth-rescaling", {"L": "4", "alpha": "1e-3"}, "pretraining depth 4"),
    ("frozen-layers", {"L": "5", "alpha": "1e-3"}, "pretraining depth 5"),
    ("depth-rescaling", {"L": "4", "alpha": "1/20"}, "tolerance grows"),
    ("depth-rescaling", {"L": "5", "alpha": "1/20"}, "no alpha serves the eq.-\\(22\\) init at L = 5"),
    ("aligned-tasks", {"L": "3", "alpha": "1/20"}, "tolerance grows"),
    ("depth-rescaling", {"balanced": "2"}, "outside its domain"),
    ("depth-rescaling", {"beta": "1"}, "has no parameter"),
    ("aligned-tasks", {"a": "1"}, "outside its domain"),
    ("aligned-tasks", {"a": "-2"}, "outside its domain"),
    ("aligned-tasks", {"L": "1"}, "outside its domain"),
    ("aligned-tasks", {"eps": "-0.1"}, "outside its domain"),
    ("frozen-layers", {"k": "2"}, "k <= L - 1"),
    ("frozen-layers", {"k": "0"}, "outside its domain"),
    ("frozen-layers", {"L": "1"}, "outside its domain"),
    ("frozen-layers", {"alpha": "1e-4", "L": "3", "k": "2"}, "pinv cutoff"),
])
def test_out_of_domain_parameters_are_rejected(theorem_id, overrides, message):
    with pytest.raises(ParameterError, match=message):
        REGISTRY[theorem_id].resolve(overrides, "quick")


@pytest.mark.parametrize("theorem_id, overrides", [
    ("depth-rescaling", {"L": "4", "alpha": "1/50"}),      # pretraining time ~ alpha^-(L-2) = 2500 <= 1e4
    ("depth-rescaling", {"L": "3", "alpha": "1e-6"}),      # L = 3: no time limit (the curvature step: ~100 steps)
    ("depth-rescaling", {"L": "6", "balanced": "1"}),      # balanced init: no time or imbalance limit
    ("aligned-tasks", {"L": "3", "alpha": "1/50"}),        # allowance 0.25 * 2 L^2 alpha^2 = 1.8e-3 <= 1e-2
])
def test_in_domain_depths_and_scales_are_accepted(theorem_id, overrides):
    assert REGISTRY[theorem_id].resolve(overrides, "quick")["L"] == int(overrides["L"])


@pytest.mark.parametrize("theorem_id, L, limit_text", [("depth-rescaling", 3, "0.0471"), ("aligned-tasks", 3, "0.0471"),
                                                      ("depth-rescaling", 4, "0.0353")])
def test_an_imbalance_refusal_names_the_alpha_it_applies(theorem_id, L, limit_text):
    # the eq.-(22) init's allowance 0.25 * 2 L^2 alpha^2 <= 1e-2 bounds alpha by sqrt(1e-2 / 0.5) / L (0.04714 at
    # L = 3, 0.03536 at L = 4): the refusal prints that bound rounded into the domain, and the alpha it names is
    # admitted while 1 % above the bound is refused
    theorem = REGISTRY[theorem_id]
    with pytest.raises(ParameterError, match=f"need alpha <= {limit_text} at L = {L}"):
        theorem.resolve({"L": str(L), "alpha": "1/10", "balanced": "0"}, "quick")
    assert theorem.resolve({"L": str(L), "alpha": limit_text, "balanced": "0"}, "quick")["L"] == L
    with pytest.raises(ParameterError, match="tolerance grows"):
        theorem.resolve({"L": str(L), "alpha": str(2 ** 0.5 / 10 / L * 1.01), "balanced": "0"}, "quick")


def test_a_pretraining_time_refusal_names_an_alpha_it_admits():
    # time ~ alpha^-(L-2) <= 1e4: alpha >= 0.01 at L = 4; at L = 5, alpha >= 1e-4^(1/3) = 0.04642, above eq. (5)'s
    # 0.02828, so depth-rescaling has no eq.-(22) init there and says so, where frozen-layers (no eq.-(5) test) admits it
    theorem = REGISTRY["depth-rescaling"]
    with pytest.raises(ParameterError, match=r"need alpha >= 0\.01, or"):
        theorem.resolve({"L": "4", "alpha": "0.0099", "balanced": "0"}, "quick")
    assert theorem.resolve({"L": "4", "alpha": "0.01", "balanced": "0"}, "quick")["L"] == 4
    for alpha in ("0.02", "0.0465", "0.08"):
        with pytest.raises(ParameterError, match=r"no alpha serves .* alpha <= 0\.0282 and pretraining time alpha >= 0\.0465"):
            theorem.resolve({"L": "5", "alpha": alpha, "balanced": "0"}, "quick")
    frozen = REGISTRY["frozen-layers"]
    with pytest.raises(ParameterError, match=r"need alpha >= 0\.0465, or"):
        frozen.resolve({"L": "5", "k": "1", "alpha": "0.04", "balanced": "0"}, "quick")
    assert frozen.resolve({"L": "5", "k": "1", "alpha": "0.0465", "balanced": "0"}, "quick")["L"] == 5


def test_frozen_layers_refuses_an_alpha_whose_trend_rung_would_reach_the_pinv_cutoff():
    # the default tier reruns the check at alpha x ALPHA_LADDER (down to alpha / 10); the frozen features' smallest
    # singular value there, ~ (alpha / 10)^k, must stay >= 1e-8: at k = 2 that is alpha >= 1e-3
    theorem = REGISTRY["frozen-layers"]
    assert min(shachaf_depth.ALPHA_LADDER) == pytest.approx(1 / 10)
    with pytest.raises(ParameterError, match=r"alpha\^k = 9e-09 \(at alpha/10\)"):
        theorem.resolve({"L": "3", "k": "2", "alpha": "0.00095", "balanced": "0"}, "default")
    assert theorem.resolve({"L": "3", "k": "2", "alpha": "0.00105", "balanced": "0"}, "default")["alpha"] > 0
    assert theorem.resolve({"L": "3", "k": "2", "alpha": "0.00095", "balanced": "1"}, "default")["alpha"] > 0
