"""theorems.shachaf_bounds: Shachaf, Brutzkus & Globerson Thm 5.4 (bounds (9), (10)) as a registered claim.

Each recorded case gives its recorded verdict at the quick tier (with the numbers behind it checked); a wrong
formula swapped into the same check is rejected (negative controls); out-of-domain parameters raise
ParameterError; the sympy and mpmath faces say what the module promises.
"""

import importlib
import math

import mpmath as mp
import pytest
import sympy as sp

import theorems.shachaf_bounds as shachaf_bounds
from numerics.binomial_bounds import chernoff_lower_bound
from numerics.depth_rescaling import eq9_deep_risk_bound, eq9_tail_constant_n1, eq10_linear_risk_bound
from theorems.core import ParameterError
from theorems.registry import REGISTRY

ID = "gaussian-depth-bound"
FINDING_CASE = {"gamma": "1/20", "d": "80", "eps": "8", "theta": "pi/2"}


# --- registration and faces ------------------------------------------------------------------------

def test_claim_is_registered_once():
    again = importlib.import_module("theorems.shachaf_bounds")       # cached: no second register()
    assert again is shachaf_bounds
    assert REGISTRY[ID] is shachaf_bounds.gaussian_depth_bound
    with pytest.raises(ValueError, match="registered twice"):
        from theorems.registry import register
        register(shachaf_bounds.gaussian_depth_bound)


def test_fields_are_filled():
    theorem = REGISTRY[ID]
    assert "Thm 5.4" in theorem.source and theorem.statement and theorem.quantity and theorem.assumptions
    assert theorem.verdict_rule and set(theorem.trials) == {"quick", "default", "paper"}
    assert theorem.record.startswith("agree") and theorem.false_alarm == 1e-3
    assert all(theorem.points({}, tier) for tier in ("quick", "default", "paper"))
    findings = theorem.findings
    assert len(findings) == 1 and dict(findings[0].at) == FINDING_CASE and "eps" in findings[0].why


def test_sympy_face_states_the_band_the_centre_and_the_tail():
    symbolic = REGISTRY[ID].symbolic()
    assert isinstance(symbolic.statement, sp.And) and sp.latex(symbolic.statement)
    band = next(x for x in symbolic.derivations if x.claim.startswith("(10) is (1+eps)^2"))
    assert band.holds and sp.simplify(band.result - (1 + sp.Symbol("epsilon", positive=True)) ** 2) == 0
    centre = next(x for x in symbolic.derivations if x.claim.startswith("eq. (6) at the concentration point"))
    assert centre.holds and "theta_{T}" in str(centre.result) and "theta_{S}" in str(centre.result)
    tail = symbolic.derivations[-1]
    assert tail.holds and sp.simplify(tail.result - 2 * sp.sin(sp.Symbol("theta", positive=True)) / sp.pi) == 0
    assert all(x.holds for x in symbolic.derivations)


def test_sympy_face_shows_where_the_texts_proof_route_stops():
    # Lemma 5.3.2 on both row-space norms bounds |1 - c_inf ||theta_S|| / ||theta_T||| by 2 eps / (1 - eps):
    # slope 2 at eps = 0, divergent at eps = 1.
    route = next(x for x in REGISTRY[ID].symbolic().derivations if x.claim.startswith("the text's proof route"))
    eps = sp.Symbol("epsilon", positive=True)
    assert route.holds and sp.simplify(route.result - 2 * eps / (1 - eps)) == 0


def test_mpmath_face_is_bound_9_at_any_precision():
    theorem = REGISTRY[ID]
    params = theorem.resolve({}, "quick")                                 # gamma = 1/2, d = 80, eps = 1/4, theta = pi/4
    with mp.workdps(50):
        expected = mp.mpf(40) / 80 * ((mp.mpf(5) / 4) ** 2 * 4 * mp.sin(mp.pi / 8) ** 2 + mp.mpf(1) / 16)
        for dps in (15, 30, 50):
            assert abs(theorem.theory(params, dps) - expected) <= mp.mpf(10) ** (1 - dps) * expected
    # zeta = z eps ||theta_T||: z = 0 drops the second term of (9)
    with mp.workdps(30):
        no_zeta = theorem.theory(theorem.resolve({"zeta": "0"}, "quick"), 30)
        assert abs(no_zeta - eq9_deep_risk_bound(40, 80, mp.mpf(1) / 4, 1, 2 * mp.sin(mp.pi / 8), zeta=0)) < mp.mpf(10) ** -28


def test_failure_lower_bound_has_its_coverage():
    """The Chernoff-Hoeffding bound is a valid one-sided lower confidence bound: at p = bound, observing k or more
    failures has probability <= alpha (exact binomial tail), and it is not far below Clopper-Pearson's (a factor
    ~3 at a single failure, where any failure already refutes a claimed probability of 1e-35)."""
    alpha = 1e-3 / 30
    with mp.workdps(30):
        for k, trials in ((1, 2000), (11, 2000), (100, 2000), (1990, 2000), (2000, 2000), (112, 20000)):
            lower = chernoff_lower_bound(k, trials, alpha)
            assert 0 < lower < k / trials
            tail = mp.betainc(k, trials - k + 1, 0, lower, regularized=True)        # P(Bin(N, lower) >= k)
            assert tail <= alpha
            clopper_pearson = mp.findroot(lambda q: mp.betainc(k, trials - k + 1, 0, q, regularized=True) - alpha,
                                          (lower, mp.mpf(k) / trials), solver="bisect")
            assert lower >= (0.3 if k == 1 else 0.6) * clopper_pearson
        assert chernoff_lower_bound(0, 2000, alpha) == 0


# --- recorded verdicts at the quick tier -------------------------------------------------------------

def test_default_case_agrees_and_shows_the_concentration(outcomes):
    outcome = outcomes(ID)
    assert outcome.verdict == "agree", outcome.detail
    rows = outcome.extra["per_size"]
    assert [(r["n"], r["d"]) for r in rows] == [(40, 80), (20, 40), (10, 20)]
    for r in rows:
        # (10): E R(gamma) / centre = 1 exactly; its spread matches the exact Beta law within 10 %
        assert abs(r["10"]["z"]) < outcome.extra["z_critical"]
        assert abs(r["10"]["sd_ratio_sqrt_d"] / r["10"]["sd_ratio_sqrt_d_exact"] - 1) < 0.1
        # failures of (10) against the exact Beta tail probability (within 4 binomial standard errors)
        e = shachaf_bounds._at_eps(r, "10")
        assert abs(e["fraction"] - e["exact"]) <= 4 * math.sqrt(max(e["exact"], 1e-4) / 2000)
    # both bounds fail less often as the sizes grow (the claim's exponential decay in n, d - n)
    for name in ("10", "9"):
        assert all(shachaf_bounds._at_eps(r, name)["eps"] == 0.25 for r in rows)      # the claimed eps (default 1/4)
        fractions = [shachaf_bounds._at_eps(r, name)["fraction"] for r in rows]
        assert fractions[0] < fractions[-1] and fractions[-1] < 0.5
    centre9 = outcome.extra["centre9_extrapolation"]
    assert centre9["degree"] == 2 and abs(centre9["z"]) < outcome.extra["z_critical"]
    assert all(r["9"]["mean_ratio"] > 1 for r in rows)                    # R(beta)/centre = 1 + O(1/d) from above
    deep = outcome.extra["deep_networks"]
    assert [r["L"] for r in deep] == [2] and deep[0]["max_relative_distance"] < 1e-5
    assert outcome.reference > outcome.mean > 0                              # mean R(beta) sits below bound (9)


def test_source_norm_moves_finite_depths_only(outcomes):
    """(9) does not contain ||theta_S||: at ||theta_S|| = 3 the L -> oo risk still obeys it, but eq. (5)'s risk at
    finite depth (and the trained L = 2 networks) does not: the bound is for L -> oo only."""
    outcome = outcomes(ID, norm_s="3")
    assert outcome.verdict == "agree", outcome.detail
    within = {r["L"]: r["within_eq9"] for r in outcome.extra["eq5_depths"]}
    assert within[1] == 0 and within[2] == 0 and within[100] > 0.9 and within["inf"] > 0.9
    risks = [r["mean_risk"] for r in outcome.extra["eq5_depths"]]
    assert all(x > y for x, y in zip(risks, risks[1:]))                    # depth helps monotonically here
    assert outcome.extra["deep_networks"][0]["within_eq9"] == 0


def test_anti_aligned_small_eps_case_agrees(outcomes):
    outcome = outcomes(ID, theta="3*pi/4", norm_t="2", eps="1/10")
    assert outcome.verdict == "agree", outcome.detail
    largest = outcome.extra["per_size"][0]
    assert 0.02 < largest["10"]["by_eps"][0]["fraction"] < 0.3            # (10) does fail at eps = 1/10 ...
    assert largest["10"]["by_eps"][1]["fraction"] < largest["10"]["by_eps"][0]["fraction"]   # ... less at 2 eps


def test_finding_large_eps_at_n1_is_recorded(outcomes):
    outcome = outcomes(ID, **FINDING_CASE)
    assert outcome.verdict == "disagree", outcome.detail
    # rule C on (9) only, not (10) or the centres: every failing comparison (before the report's first clause) is
    # (9)'s failure probability at some size and eps, the worst at n = 1 and eps = 64
    failing = outcome.detail.split("; d=80/40/20")[0].split("; ")
    assert failing and all(part.startswith("(9) at n=") for part in failing), outcome.detail
    assert any(part.startswith("(9) at n=1, d=20, eps=64:") for part in failing)
    assert all(e["fraction"] == 0 for r in outcome.extra["per_size"] for e in r["10"]["by_eps"])
    smallest = outcome.extra["per_size"][-1]
    assert smallest["n"] == 1
    top = smallest["9"]["by_eps"][-1]
    assert top["eps"] == 64 and top["c_upper"] < shachaf_bounds.C_FLOOR / 5
    # the measured tail is the derived Cauchy tail A/eps (within 4 standard errors at the two largest eps)
    for entry in outcome.extra["n1_tail"][-2:]:
        assert abs(entry["eps_times_fraction"] - entry["derived_limit"]) < 4 * entry["se"]
    with mp.workdps(20):
        assert abs(outcome.extra["n1_tail"][0]["derived_limit"] - float(eq9_tail_constant_n1(20, mp.pi / 2))) < 1e-12


# --- negative controls -------------------------------------------------------------------------------

def test_negative_controls_are_declared_on_the_claim():
    # tests/test_negative_controls.py runs them
    assert sorted(c.name for c in REGISTRY[ID].negative_controls) == [
        "gdb-eq10-missing-fraction", "gdb-eq10-tight-band", "gdb-eq9-missing-fraction", "gdb-eq9-tight-band",
        "gdb-law-one-tail", "gdb-no-depth-rescaling"]


def test_negative_controls_are_wrong_where_the_claim_is_right():
    """The controls change the bounds' values, not the machinery: at the default point they differ from the claim."""
    with mp.workdps(30):
        dist, eps = mp.mpf("0.7"), mp.mpf(1) / 4
        assert shachaf_bounds._eq10_missing_fraction(40, 80, eps, dist) == 2 * eq10_linear_risk_bound(40, 80, eps, dist)
        assert shachaf_bounds._eq10_tight_band(40, 80, eps, dist) < eq10_linear_risk_bound(40, 80, eps, dist) / (1 + eps) ** 2
        assert abs(shachaf_bounds._eq9_missing_fraction(40, 80, eps, 1, dist)
                   - 2 * eq9_deep_risk_bound(40, 80, eps, 1, dist)) < mp.mpf(10) ** -25


# --- domains ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("overrides, message", [
    ({"gamma": "0"}, "outside its domain"),
    ({"gamma": "1"}, "outside its domain"),
    ({"eps": "0"}, "outside its domain"),
    ({"eps": "-1/4"}, "outside its domain"),
    ({"theta": "0"}, "outside its domain"),
    ({"theta": "4"}, "outside its domain"),
    ({"norm_s": "0"}, "outside its domain"),
    ({"norm_t": "-1"}, "outside its domain"),
    ({"zeta": "-1"}, "outside its domain"),
    ({"d": "7"}, "outside its domain"),
    ({"d": "80.5"}, "must be an integer"),
    ({"gamma": "1/100"}, "need 1 <= n"),                  # n = round(20/100) = 0 at d = 20
    ({"gamma": "99/100"}, "need 1 <= n <= d - 1"),        # n = 20 = d at d = 20
    ({"L": "2"}, "has no parameter"),
])
def test_out_of_domain_parameters_are_rejected(overrides, message):
    with pytest.raises(ParameterError, match=message):
        REGISTRY[ID].resolve(overrides, "quick")



# --- the L = 1 certificate -----------------------------------------------------------------------------

def test_linear_gd_certificate_is_a_bound_within_the_condition_number():
    # w - w* lies in row(X), so lam_min ||w - w*||^2 <= ||X (w - w*)||^2 = 2 n loss <= lam_max ||w - w*||^2:
    # sqrt(2 n loss / lam_min) is at least the distance and at most sqrt(cond) times it.  Stopped after 30
    # steps, the loss is far above rounding, so the ratio (max over draws) lies in [max sqrt(1/cond), 1].
    import torch

    from simulate.data import gaussian_design, task_pair
    from simulate.device import generator
    from simulate.finetune_limits import linear_gd_certificate

    gen = generator(3, torch.device("cpu"))
    X = gaussian_design(4, 20, 40, gen)
    theta_s, theta_t = task_pair(4, 40, 0.7, gen)
    fit = linear_gd_certificate(X, (X @ theta_t.unsqueeze(-1)).squeeze(-1), theta_s, theta_t, max_steps=30,
                                rounding=shachaf_bounds.ROUNDING)
    eigenvalues = torch.linalg.eigvalsh(X @ X.transpose(-1, -2))
    assert not fit["converged"]
    assert (eigenvalues[:, 0] / eigenvalues[:, -1]).sqrt().max().item() <= fit["excess"] <= 1


def test_the_finding_is_the_law_of_the_risk_from_eps_1_on():
    # the region starts where the text's proof route stops (eps < 1) and covers every gamma, d, theta, norm and zeta:
    # inside, what the paper's tests get follows from the law of R(beta), not from an edge
    theorem = REGISTRY[ID]
    finding = theorem.findings[0]
    assert finding.region == "eps >= 1" and finding.corrected == shachaf_bounds.GDB_CORRECTED
    recorded = lambda **p: theorem.recorded(theorem.resolve({"d": "80", "theta": "pi/2", **p}, "quick"))   # noqa: E731
    assert recorded(gamma="1/20", eps="99/100")[0] == "agree"
    for point in ({"gamma": "1/20", "eps": "1"}, {"gamma": "1/2", "eps": "8", "theta": "pi"}, {"gamma": "1/10", "eps": "9/4"}):
        assert recorded(**point)[2] == finding.corrected


def test_the_corrected_statement_holds_and_predicts_the_papers_verdict(outcomes):
    # at the finding's point: the law's failure probabilities pass their two-sided tests on the same draws, and make the
    # paper's tests alarm with certainty (the n = 1 size at 8 eps = 64 fails in ~1 % of the draws, ~1e-35 claimed)
    record = outcomes(ID, **FINDING_CASE).corrected
    assert record["verdict"] == "agree" and record["paper_verdicts"] == ["disagree"], record
    assert record["alarm"]["low"] > 1 - 1e-6 and record["alarm"]["test"].startswith("(9) at n=1, d=20")
    smallest = outcomes(ID, **FINDING_CASE).extra["per_size"][-1]["9"]["by_eps"]
    assert [e["predicted"] for e in smallest] == pytest.approx([0.0435, 0.0226, 0.0115, 0.00583], rel=0.01)
    # at the default case (outside the region) it is tested too, and the paper's tests cannot alarm there
    record = outcomes(ID).corrected
    assert record["verdict"] == "agree" and record["alarm"]["high"] < 1e-12


def test_between_the_certain_verdicts_either_is_accepted(capsys):
    # eps = 9/4 at gamma = 1/20 (the old region's gap): the law puts the paper's chance of alarming at 0.78 ... 0.92 at
    # theta = pi/2 and near 1e-4 at 7 pi/8; both verdicts are fair draws, and the row says so.  Outside the region
    # (eps = 1/2) and at theta = pi (no tail) only agree is
    import json

    import verify
    assert verify.main([ID, "--quick", "--param", "gamma=1/20", "--param", "eps=9/4", "--grid", "theta=pi/2,7*pi/8,pi",
                        "--json", "-"]) == 0
    rows = json.loads(capsys.readouterr().out)["results"]
    assert [r["accepted"] for r in rows] == [["agree", "disagree"], ["agree", "disagree"], ["agree"]]
    assert all(r["corrected"]["verdict"] == "agree" for r in rows)
    assert "fair draw either way" in rows[0]["expectation"]
