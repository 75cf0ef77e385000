"""Design laws with matched moments, constant-step SGD, and the universality claim (with its controls)."""

import dataclasses
import math
from types import SimpleNamespace

import pytest
import torch

import theorems
import verify
from claim_helpers import quick_check
from simulate.data import DISTRIBUTIONS, GAUSSIAN, Distribution, design, rotated_sqrt, task_pair
from simulate.device import generator
from simulate.estimators import min_norm_solution
from simulate.law_comparison import certified_miss
from simulate.sgd import sgd_linear
from theorems.core import ParameterError, parse_data
from theorems.universality import ROUNDING

# the standardised laws (i.i.d. entries of mean 0, variance 1; the stress laws of whole rows: tests/test_stress.py)
LAWS = [Distribution(name) for name in DISTRIBUTIONS if Distribution(name).entrywise] + [Distribution("student-t", 7),
                                                                                       Distribution("sparse", 0.1)]


def gen(seed=0):
    return generator(seed, torch.device("cpu"))


@pytest.mark.parametrize("law", LAWS, ids=str)
def test_every_law_has_mean_0_variance_1_and_its_stated_kurtosis(law):
    z = law.sample((400_000,), gen(1))
    # 5 standard errors; the fourth moment's error uses the eighth moment, infinite for student-t:5 (skipped there)
    assert abs(z.mean().item()) < 5 / math.sqrt(z.numel())
    # E z^2 = 1 (the mean is 0 by construction); Var z^2 = 2 + excess kurtosis (0 for Rademacher: exact)
    assert abs(z.pow(2).mean().item() - 1) <= 5 * math.sqrt((2 + law.excess_kurtosis) / z.numel()) + 1e-12
    if law.name != "student-t" or law.parameter > 8:
        fourth = z.pow(4)
        assert abs(fourth.mean().item() - 3 - law.excess_kurtosis) <= 5 * fourth.std().item() / math.sqrt(z.numel()) + 1e-12


def test_gaussian_design_is_plain_randn_so_earlier_seeds_reproduce():
    assert torch.equal(design(3, 4, 5, gen(2)), torch.randn(3, 4, 5, generator=gen(2), dtype=torch.float64))


def test_designs_have_the_requested_covariance_for_every_law():
    eig = torch.linspace(0.5, 2.0, 6, dtype=torch.float64)
    for root in (eig.sqrt(), rotated_sqrt(eig, gen(3))):
        sigma = torch.diag(eig) if root.dim() == 1 else root @ root
        for law in LAWS[:5]:
            X = design(20_000, 1, 6, gen(4), law, root).squeeze(1)
            assert torch.allclose(X.T @ X / X.shape[0], sigma, atol=0.08), str(law)


def test_same_seed_same_draws_for_every_law():
    for law in LAWS:
        assert torch.equal(law.sample((50,), gen(5)), law.sample((50,), gen(5)))


@pytest.mark.parametrize("text, message", [
    ("cauchy", "unknown distribution"), ("student-t:4", "outside its domain"), ("student-t:5.5", "outside its domain"),
    ("sparse:0", "outside its domain"), ("sparse:2", "outside its domain"), ("rademacher:1", "takes no parameter"),
    ("sparse:abc", "unknown name"), ("sparse:1/0", "division by zero"),
    # the stress laws' domains at their edges (the inside edges: the next test)
    ("gamma:0", "outside its domain"), ("gamma:3/10", "outside its domain"), ("gamma:101/2", "outside its domain"),
    ("shifted:-1/10", "outside its domain"), ("shifted:1", "outside its domain"), ("zero-rows:0", "outside its domain"),
    ("zero-rows:1", "outside its domain"), ("anisotropic:-1/10", "outside its domain"),
    ("anisotropic:1", "outside its domain"),
])
def test_bad_data_laws_are_parameter_errors(text, message):
    with pytest.raises(ParameterError, match=message):
        parse_data(text)
    assert str(parse_data("sparse:1/10")) == "sparse:0.1" and parse_data("gaussian") == GAUSSIAN


@pytest.mark.parametrize("text", ["sparse:1", "student-t:5", "gamma:1/2", "gamma:50", "shifted:0", "anisotropic:0"])
def test_data_laws_take_the_inside_edges_of_their_domains(text):
    assert str(parse_data(text)).split(":")[0] == text.split(":")[0]


@pytest.mark.parametrize("args, message", [
    (["double-descent", "--data", "cauchy"], "unknown distribution"),
    (["arccos-kernel", "--data", "rademacher"], "arccos-kernel samples no design matrix"),
    (["universality-table", "--data", "uniform"], "runs every standard law"),
    (["universality-table", "arccos-kernel"], "arccos-kernel samples no design matrix"),
])
def test_bad_data_options_are_one_line_exit_2(args, message, capsys):
    assert verify.main(args) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_a_linear_check_reports_its_law_and_reproduces(capsys):
    verify.main(["double-descent", "--quick", "--theory-only"])
    capsys.readouterr()
    assert verify.main(["double-descent", "--quick", "--param", "gamma=1/2", "--data", "rademacher", "--json", "-"]) == 0
    import json
    row = json.loads(capsys.readouterr().out)["results"][0]
    assert row["data"] == "rademacher" and row["mc"]["sizes"]["data"] == "rademacher" and row["verdict"] == "agree"


# --- SGD ---------------------------------------------------------------------------------------------

def _problem(law, trials=6, n=8, d=40, seed=6):
    g = gen(seed)
    X = design(trials, n, d, g, law)
    w0, target = task_pair(trials, d, 1.0, g)
    y = (X @ target.unsqueeze(-1)).squeeze(-1) + 0.3 * torch.randn(trials, n, generator=g, dtype=torch.float64)
    return X, y, w0


@pytest.mark.parametrize("batch", [1, 3, 8])
def test_sgd_reaches_the_gd_limit_within_its_certificate(batch):
    for law in LAWS[:5]:
        X, y, w0 = _problem(law)
        fit = sgd_linear(X, y, w0, gen(7), batch=batch, tol=1e-9)
        limit = w0 + min_norm_solution(X, y - (X @ w0.unsqueeze(-1)).squeeze(-1))
        assert bool(fit.converged.all())
        assert bool((certified_miss(fit, limit, ROUNDING) <= 1).all())    # the certificate bounds the truth, as judged
        assert fit.distance.max() <= 1e-9


def test_a_certified_miss_is_measured_in_certificates_with_a_rounding_floor():
    # at a zero limit and a zero certificate only the floor is left: the miss counts roundings of an O(1) number
    fit = SimpleNamespace(w=torch.tensor([[3e-10, 0.0], [0.0, 2.0]]), distance=torch.tensor([0.0, 0.5]))
    miss = certified_miss(fit, torch.zeros(2, 2), 1e-10)
    assert miss[0].item() == pytest.approx(3.0, rel=1e-12) and miss[1].item() == pytest.approx(2 / (0.5 + 1e-10))


def test_sgd_dual_iterates_equal_the_plain_updates():
    # One epoch of single-sample SGD written out in d dimensions, in the order the simulator draws.
    X, y, w0 = _problem(GAUSSIAN, trials=2, n=5, d=9)
    fit = sgd_linear(X, y, w0, gen(8), batch=1, tol=0.0, max_epochs=1)
    order = torch.argsort(torch.rand(2, 5, generator=gen(8), dtype=torch.float64), dim=-1)
    w = w0.clone()
    for i in range(2):
        for j in order[i]:
            x = X[i, j]
            w[i] -= fit.step[i] * (x @ w[i] - y[i, j]) * x
    assert torch.allclose(fit.w, w, atol=1e-12)


def test_sgd_mini_batch_epoch_equals_the_batches_visited_one_by_one():
    # batches of 3 rows of 7 in the drawn order (the last one holds 1): each moves w by its mean gradient at the
    # w the batches before it left
    X, y, w0 = _problem(GAUSSIAN, trials=2, n=7, d=9)
    fit = sgd_linear(X, y, w0, gen(11), batch=3, tol=0.0, max_epochs=1)
    order = torch.argsort(torch.rand(2, 7, generator=gen(11), dtype=torch.float64), dim=-1)
    w = w0.clone()
    for i in range(2):
        for first in range(0, 7, 3):
            rows = order[i, first:first + 3]
            w[i] -= fit.step[i] * X[i, rows].T @ (X[i, rows] @ w[i] - y[i, rows]) / len(rows)
    assert torch.allclose(fit.w, w, atol=1e-12)


def test_sgd_step_is_stable_for_heavy_rows():
    X, y, w0 = _problem(Distribution("student-t"), trials=20)
    fit = sgd_linear(X, y, w0, gen(9), batch=1, tol=1e-9)
    assert bool((fit.step * X.pow(2).sum(-1).max(-1).values <= 1 + 1e-12).all()) and bool(fit.converged.all())


def test_sgd_does_not_pretend_to_converge():
    X, y, w0 = _problem(GAUSSIAN)
    fit = sgd_linear(X, y, w0, gen(10), batch=1, tol=1e-12, max_epochs=1)
    assert not bool(fit.converged.all()) and fit.epochs == 1


# --- the universality claim -----------------------------------------------------------------------

@pytest.fixture(scope="module")
def claim():
    return theorems.REGISTRY["universality"]


@pytest.fixture(scope="module")
def isotropic(claim, run):
    return quick_check(claim, run)


def test_universality_agrees_and_measures_finite_size_deviations(isotropic):
    assert isotropic.verdict == "agree", isotropic.detail
    limits = isotropic.extra["limits"]
    assert set(limits) == {"gaussian", "rademacher", "uniform", "student-t:5", "sparse:0.5"}
    assert all(row["max_miss_over_certified"] <= 1 for row in isotropic.extra["sgd"])
    identity = {row["law"]: row for row in isotropic.extra["inverse_norm_identity"]}
    # aligned Rademacher rows: ||z||^2 = n exactly, so (n - 2) E 1/||z||^2 - 1 = -2/n with no spread
    assert [round(v["deviation"], 12) for v in identity["rademacher"]["by_n"]] == [-2 / n for n in (8, 16, 32, 64, 128)]
    assert identity["sparse:0.5"]["infinite"]
    gaussian = identity["gaussian"]["by_n"]
    assert all(abs(v["deviation"]) < 4.5 * v["se"] for v in gaussian)


def test_universality_catches_a_law_whose_second_moment_is_off(claim, run, monkeypatch):
    # A "uniform" law with variance 1.25 breaks the premise (matched covariance): the check must see it
    # (the noise part of the risk shrinks by 1/1.25: -0.2 at sigma = 1, gamma = 1/2).
    plain = Distribution.sample

    def inflated(self, shape, generator, dtype=torch.float64):
        values = plain(self, shape, generator, dtype)
        return values * math.sqrt(1.25) if self.name == "uniform" else values
    monkeypatch.setattr(Distribution, "sample", inflated)
    outcome = quick_check(claim, dataclasses.replace(run, data=Distribution("uniform")), sigma="1", theta="pi/2")
    assert outcome.verdict == "disagree" and "uniform" in outcome.detail


def test_the_universality_table_holds_each_law_to_its_own_record(monkeypatch, capsys):
    from theorems.core import Case
    claim = theorems.REGISTRY["double-descent"]
    recorded = dataclasses.replace(claim, cases=(Case({"gamma": "1/2"}, laws={"uniform": ("disagree", "illustration")}),))
    monkeypatch.setitem(theorems.REGISTRY, "double-descent", recorded)
    assert verify.main(["universality-table", "double-descent", "--quick", "--json", "-"]) == 1
    import json
    rows = {r["data"]: r for r in json.loads(capsys.readouterr().out)["results"]}
    assert set(rows) == {"gaussian", "rademacher", "uniform", "student-t:5", "sparse:0.5"}
    assert rows["uniform"]["expected"] == "disagree" and rows["uniform"]["as_expected"] is False
    assert all(r["as_expected"] for law, r in rows.items() if law != "uniform")


def test_sgd_end_points_stop_after_the_first_uncertified_run_and_row_laws_have_no_column_law(monkeypatch):
    import simulate.law_comparison as lc
    gen = torch.Generator().manual_seed(3)
    X = design(2, 6, 10, gen)
    y, w0 = torch.randn(2, 6, generator=gen, dtype=X.dtype), torch.zeros(2, 10, dtype=X.dtype)
    real = lc.sgd_linear
    monkeypatch.setattr(lc, "sgd_linear", lambda *args, **kw: real(*args, **{**kw, "max_epochs": 2}))
    fits = lc.sgd_end_points(X, y, w0, torch.Generator().manual_seed(4), (1, 2, 3), tol=1e-12)
    assert [size for size, _ in fits] == [1] and not bool(fits[0][1].converged.all())
    monkeypatch.setattr(lc, "sgd_linear", real)
    fits = lc.sgd_end_points(X, y, w0, torch.Generator().manual_seed(4), (1, 2, 3), tol=1e-6)
    assert [size for size, _ in fits] == [1, 2, 3] and all(bool(fit.converged.all()) for _, fit in fits)
    rows = lc.inverse_norm_deviations([Distribution("sphere"), Distribution("sparse")], [8], 10, gen)
    assert rows == [{"law": "sphere", "infinite": False, "row_law": True}, {"law": "sparse:0.5", "infinite": True}]
