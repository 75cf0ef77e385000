"""The dtype policy: float32-safe claims give the float64 verdicts in float32; the rest stay float64."""

import dataclasses
import json
import math

import pytest
import torch

import theorems
import verify
from claim_helpers import quick_check, with_formulas
from simulate.device import generator
from simulate.kernel_sampling import relu_product_samples
from simulate.regression import min_norm_risk_samples

FLOAT32_SAFE = sorted(t.id for t in theorems.REGISTRY.values() if t.float32)


def test_the_float32_safe_claims_are_the_sampling_checks():
    assert FLOAT32_SAFE == ["arccos-kernel", "double-descent", "kl-divergence"]


def test_the_float32_path_really_computes_in_float32():
    gen = generator(0, torch.device("cpu"))
    assert relu_product_samples(0.3, 5, 10, gen, torch.float32).dtype == torch.float32
    assert min_norm_risk_samples(4, 20, 0.5, 6, gen, dtype=torch.float32).dtype == torch.float32


@pytest.mark.parametrize("theorem_id", FLOAT32_SAFE)
def test_float32_gives_the_float64_verdict_and_a_consistent_mean(theorem_id, run):
    theorem = theorems.REGISTRY[theorem_id]
    single = quick_check(theorem, dataclasses.replace(run, dtype="float32"))
    double = quick_check(theorem, run)
    assert single.verdict == double.verdict == "agree"
    # different random numbers (float32 draws are not rounded float64 draws): a two-sample test
    assert abs(single.mean - double.mean) <= 4.5 * math.hypot(single.se, double.se)


def test_a_wrong_formula_is_still_rejected_in_float32(run):
    claim = theorems.REGISTRY["double-descent"]
    wrong = with_formulas(claim, asymptotic=lambda g, s: 1.2 * claim.formulas["asymptotic"](g, s))
    outcome = quick_check(wrong, dataclasses.replace(run, dtype="float32"), gamma="2", sigma="1")
    assert outcome.verdict == "disagree"


def test_other_claims_compute_in_float64_whatever_is_asked(capsys):
    assert verify.main(["finetune-linear-regression", "arccos-kernel", "--quick", "--dtype", "float32",
                        "--param", "u=1/2", "--json", "-"]) == 0
    rows = json.loads(capsys.readouterr().out)["results"]
    assert {r["id"]: r["dtype"] for r in rows} == {"finetune-linear-regression": "float64", "arccos-kernel": "float32"}


def test_bad_dtype_is_one_line_exit_2(capsys):
    assert verify.main(["double-descent", "--dtype", "float16"]) == 2
    assert "invalid choice: 'float16'" in capsys.readouterr().err
