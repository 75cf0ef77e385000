"""Theorem.limits: which order of limits (or which joint path) each verdict is about.

A claim whose statement, quantity or verdict rule is a limit (lim, -> oo, -> 0) declares the order its check
takes; `show` prints it and every JSON row carries it.
"""

import io
import re

import pytest
import torch

import verify
from engine.runner import run_one
from theorems import REGISTRY, Run

LIMIT = re.compile(r"\\lim|\\to\s*\\infty|\\to\s*0|-> oo|-> 0")
# limit claims the pattern cannot see: linear-transfer's order is in its assumptions; ntk-gram says why it has none
ALSO = {"linear-transfer", "ntk-gram"}


def _is_limit(theorem) -> bool:
    return bool(LIMIT.search(" ".join([theorem.statement, theorem.quantity, theorem.verdict_rule])))


def test_every_limit_claim_says_which_order_of_limits_its_verdict_is_about():
    limit_claims = {theorem.id for theorem in REGISTRY.values() if _is_limit(theorem)} | ALSO
    for theorem_id in sorted(limit_claims):
        assert len(REGISTRY[theorem_id].limits) > 40, theorem_id
    # t -> oo along training is in its assumptions, not its statement
    assert "t -> oo" in REGISTRY["frozen-layers"].limits


@pytest.mark.parametrize("theorem_id", ["frozen-layers", "universality"])
def test_show_prints_the_order_of_limits(theorem_id):
    from rich.console import Console
    screen = io.StringIO()
    assert verify.show_claim([theorem_id], False, Console(file=screen, width=10000)) == 0
    lines = [line for line in screen.getvalue().splitlines() if line.startswith("order of limits ")]
    assert lines == [f"order of limits {' '.join(REGISTRY[theorem_id].limits.split())}"]


def test_show_says_nothing_of_limits_for_a_claim_that_is_not_one():
    from rich.console import Console
    screen = io.StringIO()
    assert verify.show_claim(["ptft-penalty-shape"], False, Console(file=screen, width=10000)) == 0
    assert "order of limits" not in screen.getvalue()


@pytest.mark.parametrize("theorem_id, expected", [("frozen-layers", True), ("relu-transfer", False)])
def test_the_json_row_carries_the_order_of_limits(theorem_id, expected):
    theorem = REGISTRY[theorem_id]
    point = theorem.points({}, "quick")[0]
    row = run_one(theorem, point, Run(tier="quick", device=torch.device("cpu")), theory_only=True)
    assert row["limits"] == (theorem.limits if expected else None)
