"""Helpers the claim tests share: run a quick check, swap a formula in (negative controls)."""

import dataclasses


def quick_check(theorem, run, **overrides):
    """The claim's Monte-Carlo check at the quick tier with ``overrides`` on its defaults."""
    return theorem.check(theorem, theorem.resolve(overrides, "quick"), run)


def with_formulas(theorem, **formulas):
    """The same claim with some of the formulas its check reads replaced (a deliberately wrong one)."""
    return dataclasses.replace(theorem, formulas={**theorem.formulas, **formulas})
