"""Every check can fail: each claim's negative controls (``Theorem.negative_controls``: the claim with a
formula deliberately wrong) must get their stated verdict from the same check, at the quick tier."""

import dataclasses
import importlib

import pytest

from theorems import REGISTRY
from theorems.core import parse_data

# Controls still kept beside a family's tests (name -> (claim id, formulas, overrides)); a claim's own
# declaration is the place for new ones.
LEGACY_MODULES = ("test_theorems", "test_shachaf_depth", "test_shachaf_bounds", "test_shachaf_covariance",
                  "test_relu_kernels", "test_ptft", "test_distances", "test_ntk_transfer", "test_relu_transfer",
                  "test_universality")


def _legacy():
    from theorems.core import Control
    found = []
    for name in LEGACY_MODULES:
        for control, (theorem_id, formulas, overrides) in getattr(importlib.import_module(name), "NEGATIVE_CONTROLS",
                                                                   {}).items():
            overrides = dict(overrides)
            trials = overrides.pop("trials", None)
            found.append((theorem_id, Control(control, formulas, overrides, trials=trials)))
    return found


CONTROLS = sorted([(theorem.id, control) for theorem in REGISTRY.values() for control in theorem.negative_controls]
                  + _legacy(), key=lambda pair: pair[1].name)


def test_control_names_are_unique():
    names = [control.name for _, control in CONTROLS]
    assert len(names) == len(set(names))


@pytest.mark.parametrize("theorem_id, control", CONTROLS, ids=[control.name for _, control in CONTROLS])
def test_negative_control_gets_its_verdict(theorem_id, control, quick_run):
    theorem = REGISTRY[theorem_id]
    wrong = dataclasses.replace(theorem, formulas={**theorem.formulas, **control.formulas})
    run = dataclasses.replace(quick_run, trials=control.trials) if control.trials else quick_run
    run = dataclasses.replace(run, data=parse_data(control.data))   # a law's recorded break has its own controls
    outcome = wrong.check(wrong, wrong.resolve(dict(control.params), "quick"), run)
    assert outcome.verdict == control.verdict, outcome.detail
    if control.corrected:                      # a wrong corrected statement fails on the draws it is tested on
        assert outcome.corrected and outcome.corrected["verdict"] == control.corrected, outcome.corrected


def test_every_claim_has_a_negative_control():
    # ridge-optimal-lambda is a recorded refutation: its control is the corrected claim, which must agree
    # (tests/test_theorems.py::test_recorded_refutation_agrees_once_corrected).
    assert {theorem_id for theorem_id, _ in CONTROLS} | {"ridge-optimal-lambda"} == set(REGISTRY)
