"""theorems.ntk_transfer: Liu et al. Thms 1-2 and Shachaf et al. Thm 6.1 (Cors. 6.2-6.3) in the NTK regime.

Each recorded case gives its recorded verdict at the quick tier, with the numbers behind it checked (the gaps
shrink along the width ladder); a wrong formula swapped into the same check is rejected (negative controls);
out-of-domain parameters raise ParameterError; the sympy and mpmath faces say what the module promises, and
the mpmath route (H^inf by quadrature) agrees with the float64 closed form the checks use.
"""

import dataclasses
import importlib
import math

import mpmath as mp
import pytest
import sympy as sp
import torch
from hypothesis import given, settings, strategies as st

import theorems.ntk_transfer as ntk
from claim_helpers import quick_check
from numerics.ntk_gram_quadrature import orthant_probability_by_plackett
from simulate.kernels import ntk_gram
from simulate.ntk import activation_gradient_sq, linear_labels, sphere_points
from simulate.data import task_pair
from simulate.ntk_ladder import Ladder, Stall, fixed_scale_path, ladder_kappas, paired_extrapolation, sphere_task_pair
from simulate.relu_nets import init_relu_net
from theorems.core import ParameterError, Run
from theorems.registry import REGISTRY

IDS = ("transfer-gradient-norm", "transfer-weight-distance", "ntk-finetune-bound")


# --- registration and faces ------------------------------------------------------------------------------

def test_claims_are_registered_once():
    again = importlib.import_module("theorems.ntk_transfer")
    assert again is ntk
    for theorem_id, name in zip(IDS, ntk.__all__):
        assert REGISTRY[theorem_id] is getattr(ntk, name)
    with pytest.raises(ValueError, match="registered twice"):
        from theorems.registry import register
        register(ntk.transfer_gradient_norm)


@pytest.mark.parametrize("theorem_id", IDS)
def test_fields_are_filled(theorem_id):
    theorem = REGISTRY[theorem_id]
    assert theorem.statement and theorem.quantity and theorem.assumptions and theorem.verdict_rule
    assert theorem.record.startswith("agree") and theorem.false_alarm == 1e-3
    assert set(theorem.trials) == {"quick", "default", "paper"}
    assert all(theorem.points({}, tier) for tier in ("quick", "default", "paper"))
    assert any("m = 64, 256, 1024" in a for a in theorem.assumptions)      # the reduced sizes are stated


@pytest.mark.parametrize("theorem_id", IDS)
def test_sympy_derivations_hold(theorem_id):
    symbolic = REGISTRY[theorem_id].symbolic()
    assert sp.latex(symbolic.statement) and symbolic.derivations
    assert all(x.holds for x in symbolic.derivations), [x.claim for x in symbolic.derivations if not x.holds]


def test_sympy_faces_carry_the_key_results():
    lam = sp.Symbol("lambda", positive=True)
    liu1 = REGISTRY[IDS[0]].symbolic().derivations
    assert sp.simplify(liu1[2].result - 1 / lam) == 0                          # GD sums to H^-1
    rho = sp.Symbol("rho", real=True)
    assert sp.simplify(liu1[-1].result - 1 / (2 * sp.pi * sp.sqrt(1 - rho**2))) == 0   # Plackett / Sheppard
    shachaf = REGISTRY[IDS[2]].symbolic().derivations
    assert shachaf[2].result == 2 and shachaf[3].result == 0                   # sharp constant 2 <= 3


def test_plackett_quadrature_is_the_closed_form():
    with mp.workdps(40):
        for rho in ("-0.9", "-0.2", "0", "0.35", "0.999"):
            r = mp.mpf(rho)
            assert abs(orthant_probability_by_plackett(r) - (mp.pi - mp.acos(r)) / (2 * mp.pi)) < mp.mpf(10) ** -38
        assert orthant_probability_by_plackett(1) == mp.mpf(1) / 2 and orthant_probability_by_plackett(-1) == 0


@pytest.mark.parametrize("theorem_id", IDS)
def test_mpmath_face_is_stable_across_precisions_and_matches_float64(theorem_id):
    """The quadrature route at 15/30 digits agrees with itself, and with the float64 closed form (ntk_gram) on the
    same seeded data up to float64's ~1e-9 on H^inf's diagonal (arccos at x.x = 1 - O(1e-16) is sqrt-sensitive)."""
    theorem = REGISTRY[theorem_id]
    params = theorem.resolve({"n_P": "4", "n_Q": "4"} if theorem_id != IDS[2] else {"n": "4"}, "quick")
    with mp.workdps(40):
        values = [theorem.theory(params, dps) for dps in (15, 30)]
        assert abs(values[0] - values[1]) <= mp.mpf(10) ** -13 * abs(values[1])
    if theorem_id == IDS[2]:
        data = ntk.reference_data(theorem_id, params, {"X": 4})
        X = data["X"].unsqueeze(0)
        y_tilde = linear_labels(X, (data["beta_t"] - data["beta_s"]).unsqueeze(0))
        closed = ntk.finetune_risk_bound(ntk_gram(X, X), y_tilde).item()
    else:
        data = ntk.reference_data(theorem_id, params, {"P": 4, "Q": 4})
        XP, XQ = data["P"].unsqueeze(0), data["Q"].unsqueeze(0)
        yP, yQ = linear_labels(XP, data["beta_s"].unsqueeze(0)), linear_labels(XQ, data["beta_t"].unsqueeze(0))
        y_PQ = ntk.transfer_labels(ntk_gram(XP, XP), ntk_gram(XP, XQ), yP)
        closed = (yQ - y_PQ).pow(2).sum().item() if theorem_id == IDS[0] else \
            ntk.weight_distance_bound(ntk_gram(XQ, XQ), yQ, y_PQ).item()
    assert abs(float(values[1]) - closed) <= 1e-7 * abs(closed)


# --- simulate-side helpers ---------------------------------------------------------------------------------

def test_activation_gradient_is_the_residual_norm():
    """eq. (13): ||dL/dX^1||_F^2 = ||u - y||^2 when a = +-1 (autograd against the closed form)."""
    gen = torch.Generator().manual_seed(3)
    net = init_relu_net(3, 50, 5, gen, scaling="ntk", hidden="gaussian", kappa=0.5, readout="signs")
    X = sphere_points(3, 4, 5, gen)
    y = torch.randn(3, 4, generator=gen, dtype=torch.float64)
    assert torch.allclose(activation_gradient_sq(net, X, y), (net(X) - y).pow(2).sum(-1), rtol=1e-12)


def test_sphere_task_pair_draws_the_inputs_in_order_then_the_teachers():
    gen_a, gen_b = torch.Generator().manual_seed(4), torch.Generator().manual_seed(4)
    points, beta_s, beta_t = sphere_task_pair(3, {"P": 5, "Q": 2}, 6, 0.5, gen_a)
    assert list(points) == ["P", "Q"]
    assert torch.equal(points["P"], sphere_points(3, 5, 6, gen_b)) and torch.equal(points["Q"], sphere_points(3, 2, 6, gen_b))
    expected_s, expected_t = task_pair(3, 6, 0.5, gen_b)
    assert torch.equal(beta_s, expected_s) and torch.equal(beta_t, expected_t)


def test_ladder_kappas_scale_like_m_to_the_minus_quarter():
    kappas = ladder_kappas((64, 256, 1024), 0.1)
    assert kappas[0] == 0.1 and kappas == pytest.approx([0.1, 0.1 / 2 ** 0.5, 0.05], rel=1e-15)


@settings(max_examples=15, deadline=None)
@given(n=st.integers(2, 8), d=st.integers(2, 10), seed=st.integers(0, 2**31))
def test_transfer_labels_reproduce_the_source_labels_on_the_source_inputs(n, d, seed):
    """y_{P->P} = H_P^T H_P^-1 y_P = y_P: on the pretraining inputs the transferred labels are the source labels."""
    gen = torch.Generator().manual_seed(seed)
    X = sphere_points(1, n, d, gen)
    y = torch.randn(1, n, generator=gen, dtype=torch.float64)
    H = ntk_gram(X, X)
    if torch.linalg.eigvalsh(H)[0, 0] < 1e-6:          # near-duplicate points: H^inf near-singular
        return
    assert torch.allclose(ntk.transfer_labels(H, H, y), y, atol=1e-6)


def test_the_kernel_norm_is_sqrt_of_v_h_inverse_v_down_to_zero():
    # every NTK bound (Thm 2, Thm 6.1, Cor. 6.2) is this norm; small and zero norms included, where a floor would hide
    H = torch.tensor([[[4.0, 0.0], [0.0, 9.0]], [[2.0, 1.0], [1.0, 2.0]]], dtype=torch.float64)
    v = torch.tensor([[0.3, 0.0], [1e-3, -1e-3]], dtype=torch.float64)
    norms = ntk._kernel_norm(H, v)
    assert torch.allclose(norms, torch.tensor([0.15, math.sqrt(2e-6)], dtype=torch.float64), rtol=1e-14, atol=0)
    assert ntk._kernel_norm(H, torch.zeros(2, 2, dtype=torch.float64)).tolist() == [0.0, 0.0]


@settings(max_examples=15, deadline=None)
@given(n=st.integers(1, 8), d=st.integers(2, 10), seed=st.integers(0, 2**31))
def test_corollary_6_2_holds_with_constant_two(n, d, seed):
    """The derivation's sharp form: sqrt(y~^T H^-1 y~) <= 2 ||dtheta|| for y~ = X dtheta, any unit rows (n <= d)."""
    gen = torch.Generator().manual_seed(seed)
    n = min(n, d)
    X = sphere_points(1, n, d, gen)
    dtheta = torch.randn(1, d, generator=gen, dtype=torch.float64)
    lhs = ntk._kernel_norm(ntk_gram(X, X), linear_labels(X, dtheta))
    assert lhs.item() <= 2 * dtheta.norm().item() * (1 + 1e-9)


@settings(max_examples=10, deadline=None)
@given(theta=st.sampled_from(["0", "pi/8", "pi/3", "pi/2", "pi"]), d=st.integers(3, 8))
def test_mpmath_faces_are_finite_and_positive_over_the_domain(theta, d):
    params = REGISTRY[IDS[1]].resolve({"theta": theta, "d": str(d), "n_P": "3", "n_Q": "3"}, "quick")
    with mp.workdps(20):
        value = REGISTRY[IDS[1]].theory(params, 15)
        assert mp.isfinite(value) and value >= 0
        assert REGISTRY[IDS[0]].theory(params, 15) >= 0


# --- recorded verdicts at the quick tier -----------------------------------------------------------------

def _decreasing_overall(rows, key):
    return rows[-1][key] < rows[0][key]


@pytest.mark.parametrize("theta", ["pi/6", "pi/2"])
def test_gradient_norm_gap_vanishes(outcomes, theta):
    outcome = outcomes(IDS[0], theta=theta)
    assert outcome.verdict == "agree", outcome.detail
    rows = outcome.extra["rungs"]
    assert [r["m"] for r in rows] == [64, 256, 1024]
    assert _decreasing_overall(rows, "mean_abs_gap")
    fit = outcome.extra["extrapolation"]
    assert fit["log_slope"] + 2 * fit["se_log_slope"] < 0                          # shrinking (seeded: 2.8 SE at pi/6)
    assert all(r["mean_abs_gap"] < 0.25 * r["mean_leading"] for r in rows)


@pytest.mark.parametrize("theta", ["pi/6", "pi/2"])
def test_weight_distance_excess_vanishes(outcomes, theta):
    outcome = outcomes(IDS[1], theta=theta)
    assert outcome.verdict == "agree", outcome.detail
    rows = outcome.extra["rungs"]
    assert _decreasing_overall(rows, "mean_excess") and rows[0]["mean_excess"] > 0   # violated at finite m, less so later
    assert outcome.extra["extrapolation"]["intercept"] < 3 * outcome.extra["extrapolation"]["se"]


def test_finetune_bound_holds_with_slack(outcomes):
    outcome = outcomes(IDS[2])
    assert outcome.verdict == "agree", outcome.detail
    rows = outcome.extra["rungs"]
    assert all(r["violations"] == 0 and r["min_slack"] > 0 for r in rows)
    assert outcome.extra["max_cor62_ratio"] <= 2                                    # the derived constant
    assert all(r["max_risk_se"] < 0.1 * r["min_slack"] for r in rows)                # R's own noise is negligible
    assert outcome.extra["slack_extrapolation"]["intercept"] > 0


# --- domains -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("theorem_id, overrides, message", [
    (IDS[0], {"n_P": "0"}, "outside its domain"),
    (IDS[0], {"n_Q": "2.5"}, "must be an integer"),
    (IDS[0], {"d": "1"}, "outside its domain"),
    (IDS[0], {"theta": "4"}, "outside its domain"),
    (IDS[0], {"kappa": "0"}, "outside its domain"),
    (IDS[1], {"kappa": "2"}, "outside its domain"),
    (IDS[1], {"theta": "-1/10"}, "outside its domain"),
    (IDS[1], {"m": "100"}, "has no parameter"),
    (IDS[2], {"n": "17"}, "Assumption 3.1"),
    (IDS[2], {"delta": "0"}, "outside its domain"),
    (IDS[2], {"delta": "1"}, "outside its domain"),
    (IDS[2], {"n_S": "0"}, "outside its domain"),
])
def test_out_of_domain_parameters_are_rejected(theorem_id, overrides, message):
    with pytest.raises(ParameterError, match=message):
        REGISTRY[theorem_id].resolve(overrides, "quick")


@settings(max_examples=20, deadline=None)
@given(n=st.integers(1, 30), d=st.integers(2, 30))
def test_assumption_3_1_is_the_boundary(n, d):
    theorem = REGISTRY[IDS[2]]
    if n <= d:
        assert theorem.resolve({"n": str(n), "d": str(d)}, "quick")["n"] == n
    else:
        with pytest.raises(ParameterError, match="n <= d"):
            theorem.resolve({"n": str(n), "d": str(d)}, "quick")


def test_the_paired_fit_extrapolates_per_draw_and_reports_a_log_slope_only_for_positive_means():
    """Values a + b m^(-1/4) per draw: the intercept is a's mean with the spread of a over draws; the
    log-log slope exists only where every width's mean is positive (log 0 is not a slope)."""
    widths = [64, 256, 1024, 4096]
    x = torch.tensor([m ** -0.25 for m in widths], dtype=torch.float64)
    a = torch.tensor([1.0, 2.0, 3.0, 6.0], dtype=torch.float64)
    fit = paired_extrapolation(widths, a[:, None] + 2.0 * x[None, :])
    assert fit["intercept"] == pytest.approx(3.0, rel=1e-12) and fit["coefficient"] == pytest.approx(2.0, rel=1e-12)
    assert fit["se"] == pytest.approx(a.std().item() / 2, rel=1e-12) and fit["log_slope"] < 0
    centred = torch.tensor([[1.0, -1.0, 0.5, 2.0], [-1.0, 1.0, 0.5, 2.0]], dtype=torch.float64)
    assert paired_extrapolation(widths, centred)["log_slope"] is None


# --- the other order of limits: m -> oo at a fixed kappa ----------------------------------------------------

def test_the_fixed_kappa_path_finds_a_floor_and_its_scaling_and_reuses_the_ladders_networks():
    """Values a(kappa) + b m^(-1/2) per draw with a linear in kappa: the m^(-1/2) fit's floor is a(kappa) exactly,
    halving kappa halves it (exponent 1), and the joint ladder's rungs at (64, kappa_0) and (1024, kappa_0 / 2)
    are taken from it, not measured again."""
    spread = torch.randn(20, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    calls = []

    def measure(widths, kappas):
        calls.append((tuple(widths), tuple(kappas)))
        values = [k * (3 + spread) + 0.5 * m ** -0.5 for m, k in zip(widths, kappas)]
        return Ladder([{"m": m, "kappa": k} for m, k in zip(widths, kappas)], torch.stack(values, 1))

    widths = (64, 256, 1024)
    ladder = measure(widths, ladder_kappas(widths, 0.1))
    calls.clear()
    path = fixed_scale_path(measure, widths, [0.1, 0.05], reuse=ladder)
    assert calls == [((256, 1024), (0.1, 0.1)), ((64, 256), (0.05, 0.05))]
    assert [[r["reused"] for r in leg["rows"]] for leg in path["paths"]] == [[True, False, False], [False, False, True]]
    for leg in path["paths"]:
        floor = leg["floors"]["m^-0.5"]
        assert floor["floor"] == pytest.approx(leg["kappa"] * (3 + spread.mean().item()), rel=1e-10)
        assert floor["se"] == pytest.approx(leg["kappa"] * spread.std().item() / 20 ** 0.5, rel=1e-8)
        assert len(leg["mean"]) == len(leg["se"]) == len(widths) and leg["log_slope"] < 0
    ratio = path["floor_ratios"]["kappa=0.1:0.05, m^-0.5"]
    assert ratio["ratio"] == pytest.approx(2, rel=1e-10) and ratio["exponent"] == pytest.approx(1, rel=1e-9)
    assert ratio["se"] < 1e-9


def test_the_fixed_kappa_path_is_reported_beside_the_verdict_without_moving_it():
    """At quick sizes with the path switched on (its budget is empty at the quick tier): two legs over the
    ladder's widths, at kappa_0 and kappa_0 / 2, each with a mean and SE per width and both floors; the reused
    rungs are the ladder's own numbers; the verdict's numbers are those of the run without the path."""
    theorem = REGISTRY[IDS[0]]
    with_path = dataclasses.replace(theorem, budget={**theorem.budget,
                                                     "path_widths": {**ntk.PATH_WIDTHS, "quick": (64, 256, 1024)}})
    run = Run(tier="quick", seed=0, device=torch.device("cpu"), trials=8)
    plain, reported = quick_check(theorem, run), quick_check(with_path, run)
    assert "fixed_kappa_path" not in plain.extra
    assert (reported.verdict, reported.mean, reported.se) == (plain.verdict, plain.mean, plain.se)
    path = reported.extra["fixed_kappa_path"]
    assert path["order_of_limits"] == "m -> oo at fixed kappa, then kappa -> 0"
    assert [leg["kappa"] for leg in path["paths"]] == [0.1, 0.05]
    rungs = reported.extra["rungs"]
    for leg in path["paths"]:
        assert leg["widths"] == [64, 256, 1024] and all(r["kappa"] == leg["kappa"] for r in leg["rows"])
        assert len(leg["mean"]) == 3 and all(se > 0 for se in leg["se"])
        assert set(leg["floors"]) == {"m^-0.5", "m^-0.25"} and all(f["se"] > 0 for f in leg["floors"].values())
    assert path["paths"][0]["mean"][0] == rungs[0]["mean_abs_gap"]                  # (64, kappa_0): the ladder's
    assert path["paths"][1]["mean"][2] == rungs[2]["mean_abs_gap"]                  # (1024, kappa_0 / 2): the ladder's
    assert set(path["floor_ratios"]) == {"kappa=0.1:0.05, m^-0.5", "kappa=0.1:0.05, m^-0.25"}
    assert "fixed kappa = 0.1 (m -> oo first)" in reported.detail and "floor ratio" in reported.detail


def test_a_stalled_kappa_is_reported_with_its_width_and_no_fit():
    def measure(widths, kappas):
        if kappas[0] < 0.1:
            return Ladder([{"m": 64, "kappa": kappas[0]}], stall=Stall(256, kappas[0], 3, (5000,)))
        return Ladder([{"m": m, "kappa": k} for m, k in zip(widths, kappas)],
                      torch.tensor([[1.0], [2.0], [3.0], [6.0]], dtype=torch.float64)
                      + torch.tensor([m ** -0.5 for m in widths], dtype=torch.float64))

    path = fixed_scale_path(measure, (64, 256, 1024), [0.1, 0.05])
    fitted, stalled = path["paths"]
    assert fitted["floors"]["m^-0.5"]["floor"] == pytest.approx(3, rel=1e-12)
    assert stalled["stall"] == {"m": 256, "draws": 3, "steps": [5000]} and "floors" not in stalled
    assert path["floor_ratios"] == {}


@pytest.mark.parametrize("theorem_id", IDS)
def test_a_width_whose_training_stalls_makes_the_check_inconclusive_and_names_it(theorem_id, monkeypatch):
    # no quick case stalls, so every ladder's stop is forced here: a step budget of one step at every width
    import simulate.ntk_ladder
    real = simulate.ntk_ladder.pretrain_finetune
    monkeypatch.setattr(simulate.ntk_ladder, "pretrain_finetune", lambda *args, **kw: real(*args, **kw, max_steps=1))
    theorem = REGISTRY[theorem_id]
    params = theorem.resolve({}, "quick")
    outcome = theorem.check(theorem, params, Run(tier="quick", trials=4, trends=False))
    first = theorem.budget["widths"]["quick"][0]
    assert outcome.verdict == "inconclusive"
    assert outcome.detail.startswith(f"m={first}: 4 draw(s) did not reach the training loss"), outcome.detail


@pytest.mark.parametrize("theorem_id", IDS)
def test_the_fixed_kappa_path_runs_at_the_default_and_paper_tiers_only(theorem_id):
    theorem = REGISTRY[theorem_id]
    assert theorem.budget["path_widths"] == {"quick": (), "default": ntk.WIDTHS["default"], "paper": ntk.WIDTHS["paper"]}
    assert "fixed_kappa_path" in theorem.limits and "joint path" in theorem.limits
