"""How far a high-precision value can be trusted, and how far a float64 one could be.

Two questions about a value ``f(x)`` computed by an mpmath routine:

1. **Do its printed digits hold?**  :func:`agreeing_digits` compares the value at
   ``dps`` digits with the same routine at a higher precision (``2 dps``).  This sees
   every error that shrinks as the working precision grows -- cancellation, too few
   guard digits, a step done at a precision tied to (but below) the request -- and
   nothing else: an error that does not depend on the working precision (a constant
   typed with 15 digits, a fixed number of iterations, an intermediate rounded to a
   Python float) is the same at both precisions, so the two values agree.  Those are
   wrong *values*, for an independent route (symbolic, float64, Monte-Carlo) to catch.

2. **Would float64 get it right?**  :func:`relative_condition` estimates the relative
   condition number ``cond = sum_i |x_i df/dx_i| / |f|`` over the real inputs.
   Rounding the inputs to float64 moves each by a relative ``<= u = 2^-53``, which
   moves ``f`` by a relative ``<= cond u`` to first order: float64 keeps about
   ``-log10(cond u)`` digits however carefully the rest is done.  (Where ``f`` is
   stationary and small the second-order term ``|x^2 f''/f| u^2 / 2`` is added.)
   Integer inputs are exact in float64 and are not perturbed.

The derivatives are central differences of ``f`` at a relative step ``10^-(digits/2)``
with ``digits`` working digits, so that neither truncation (``~ step^2``) nor
rounding (``~ 10^-digits / step``) matters at the two significant digits a condition
number needs.  A parameter the value is not differentiable in -- it jumps when the
parameter moves by one part in ``10^20``, as when the parameter seeds a random draw,
or the value is undefined off the given point -- is listed, not differentiated.

This module knows nothing of theorems: ``f`` maps a dict of exact inputs to a number.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Callable, Iterable, Mapping

import mpmath as mp
import sympy

__all__ = [
    "UNIT_ROUNDOFF",
    "ILL_CONDITIONED",
    "CONDITION_DIGITS",
    "agreeing_digits",
    "is_real_number",
    "Conditioning",
    "relative_condition",
    "float64_digits",
]

UNIT_ROUNDOFF = 2.0 ** -53   # float64 round-to-nearest: |fl(x) - x| <= u |x|
ILL_CONDITIONED = 1e-8       # cond * u above this: float64 keeps fewer than 8 of its ~16 digits
CONDITION_DIGITS = 40        # working digits of the difference quotients (steps of 1e-20)


def is_real_number(value: Any) -> bool:
    """An mpf, int, float, Fraction or real sympy number (not None, not a tuple, not a string)."""
    if isinstance(value, bool):
        return False
    if isinstance(value, (mp.mpf, int, float, Fraction)):
        return True
    return isinstance(value, sympy.Basic) and bool(value.is_number) and value.is_real is not False


def _is_number(value: Any) -> bool:
    return is_real_number(value) or isinstance(value, (mp.mpc, complex))


def _as_mpf(value) -> mp.mpf:
    if isinstance(value, (mp.mpf, mp.mpc)):
        return value
    if isinstance(value, sympy.Basic):
        return mp.mpf(sympy.N(value, mp.mp.dps + 5))
    if isinstance(value, Fraction):
        return mp.mpf(value.numerator) / value.denominator
    return mp.mpmathify(value)


def _bits(value) -> int:
    """The significand bits an mpmath number carries (53 for anything else)."""
    if isinstance(value, mp.mpf):
        return value._mpf_[3]
    if isinstance(value, mp.mpc):
        return max(value.real._mpf_[3], value.imag._mpf_[3])
    return 53


def agreeing_digits(value: Any, reference: Any) -> float | None:
    """Decimal digits to which ``value`` agrees with the more precise ``reference``:
    ``-log10(|value - reference| / |reference|)``, ``inf`` when they are equal, ``0`` when
    nothing agrees (a nonzero value against a zero reference, or different objects).

    Sequences (tuples, lists, mpmath matrices) agree to the fewest digits of any entry;
    other objects (strings) either are equal (``inf``) or not (``0``).  ``None`` for
    ``None`` against ``None`` (a value that is not a number at all).
    """
    if value is None and reference is None:
        return None
    if _is_number(value) and _is_number(reference):
        # compare at the precision the numbers carry, not at the caller's
        with mp.workprec(max(mp.mp.prec, _bits(value), _bits(reference)) + 20):
            value, reference = _as_mpf(value), _as_mpf(reference)
            difference = abs(value - reference)
            if difference == 0:
                return math.inf
            if reference == 0:
                return 0.0
            return max(0.0, float(-mp.log10(difference / abs(reference))))
    if isinstance(value, mp.matrix) and isinstance(reference, mp.matrix):
        if (value.rows, value.cols) != (reference.rows, reference.cols):
            return 0.0
        value, reference = list(value), list(reference)
    if isinstance(value, (tuple, list)) and isinstance(reference, (tuple, list)):
        if len(value) != len(reference):
            return 0.0
        digits = [agreeing_digits(a, b) for a, b in zip(value, reference)]
        known = [d for d in digits if d is not None]
        return min(known) if known else None
    return math.inf if value == reference else 0.0


def float64_digits(relative_error: float) -> float:
    """Decimal digits kept under a relative error: ``-log10(max(error, u))``, at least 0 (an error
    below u does not buy more than the ~16 digits of the float64 result itself)."""
    if not math.isfinite(relative_error):
        return 0.0
    return max(0.0, -math.log10(max(relative_error, UNIT_ROUNDOFF)))


@dataclass(frozen=True)
class Conditioning:
    """The relative condition number of a value w.r.t. its real inputs, and what it means for float64.

    ``terms[name] = |x df/dx| / |f|`` (``inf`` for a nonzero derivative at a value that is 0);
    ``cond`` is their sum; ``curvature`` is the sum of ``|x^2 d^2f/dx^2| / |f|``, the second-order
    sensitivity that takes over where ``f`` is stationary and small (``sin^2`` near pi: the float64
    error of pi, squared); ``not_differentiable`` names the inputs left out, with the reason.
    """

    cond: float
    terms: Mapping[str, float] = field(default_factory=dict)
    not_differentiable: Mapping[str, str] = field(default_factory=dict)
    curvature: float = 0.0

    @property
    def float64_error(self) -> float:
        """The relative error float64 input rounding causes, to second order: cond u + curvature u^2 / 2."""
        return self.cond * UNIT_ROUNDOFF + self.curvature * UNIT_ROUNDOFF**2 / 2

    @property
    def float64_digits(self) -> float:
        return float64_digits(self.float64_error)

    @property
    def ill_conditioned(self) -> bool:
        """float64 would keep fewer than 8 digits: its rounding error above :data:`ILL_CONDITIONED`."""
        return not math.isfinite(self.float64_error) or self.float64_error > ILL_CONDITIONED

    def warning(self) -> str | None:
        """One short line when float64 would lose most of its digits here, else None."""
        if not self.ill_conditioned:
            return None
        if not math.isfinite(self.cond):
            return "value 0 where it varies: float64 keeps no relative digits"
        if self.cond * UNIT_ROUNDOFF >= self.curvature * UNIT_ROUNDOFF**2 / 2:
            return f"cond {self.cond:.2g}: float64 would keep ~{self.float64_digits:.0f} digits"
        return f"second-order cond {self.curvature:.2g}: float64 would keep ~{self.float64_digits:.0f} digits"

    def __repr__(self) -> str:
        parts = [f"cond={self.cond:.3g}"] + [f"{k}={v:.3g}" for k, v in self.terms.items()]
        parts += [f"curvature={self.curvature:.3g}"] * bool(self.curvature)
        parts += [f"{k}: {v}" for k, v in self.not_differentiable.items()]
        return f"Conditioning({', '.join(parts)})"


def relative_condition(f: Callable[[Mapping[str, Any]], Any], point: Mapping[str, Any], names: Iterable[str],
                       digits: int = CONDITION_DIGITS, center: Any = None) -> Conditioning:
    """The relative condition number of ``f`` at ``point`` w.r.t. the inputs ``names``.

    ``f(inputs)`` is called at ``digits`` working digits with ``point`` updated by one
    perturbed input at a time; inputs are perturbed *exactly* (``x (1 +- h)`` as sympy
    numbers, ``h = 10^-(digits // 2)``), so that a routine which turns its inputs into
    rationals or strings sees the perturbation too.  An input equal to 0 contributes 0
    (a relative perturbation does not move it).  ``f`` returning None (or raising
    ValueError / ArithmeticError) means "undefined there": at a domain edge the
    differences are taken on the side where ``f`` is defined.  ``center``, if given, is
    ``f(point)`` already computed at ``digits`` digits.

    The first difference ``g`` (central: ``f(x(1+h)) - f(x(1-h))``) gives ``x f'(x) ~ g / 2h``,
    the second ``s = f(x(1+h)) - 2 f(x) + f(x(1-h))`` gives ``x^2 f''(x) ~ s / h^2``.  They are
    trusted when ``f`` is smooth at the scale of the step: ``s`` is small against ``g`` (it is
    ``~ h x f''/f'`` of it) and ``g`` against ``f`` (cond up to 5e16).  Otherwise (near a pole,
    or where ``f' = 0``) the step is cut 1000-fold and both differences must shrink with it; if
    they do not, ``f`` jumps there (the input seeds a draw, or selects a branch) and the input
    is listed, not differentiated.  So is a value that moves by a tenth of itself at the first
    step (no second try: a singularity within 1e-19 of the input, which float64 cannot even
    resolve, is listed the same way).  Where ``f`` is 0 to working precision but moves off 0
    within a step, the term is ``inf``: no relative accuracy is possible there.
    """
    step = sympy.Rational(1, 10 ** (digits // 2))
    with mp.workdps(digits):
        center = _real(center) if center is not None else _value(f, dict(point))
        if center is None:
            raise ValueError("the value at the point is not a real number")
        noise = mp.mpf(10) ** (5 - digits)   # relative: what rounding leaves in f at `digits` digits
        terms, curvatures, skipped = {}, {}, {}
        for name in names:
            x = point[name]
            if x == 0:
                terms[name] = 0.0
                continue
            at = lambda t: _value(f, {**point, name: x * (1 + t)})
            previous = None
            for h in (step, step / 1000):
                difference = _differences(at, h, center)
                if isinstance(difference, str):
                    skipped[name] = difference
                    break
                first, second, width = difference
                floor = noise * (abs(center) + abs(first) + abs(second))
                if abs(first) <= floor and abs(second) <= floor:
                    terms[name] = 0.0
                    break
                if abs(center) * 1000 < max(abs(first), abs(second)):
                    terms[name] = math.inf                             # a zero of f to working precision
                    break
                if previous is None:
                    smooth = abs(second) <= abs(first) / 10 + floor and abs(first) <= abs(center) / 1000
                else:   # both differences shrank with the step, as they do for a smooth f
                    smooth = all(abs(now) <= abs(before) / 100 + floor for now, before in zip((first, second), previous))
                if smooth:
                    terms[name] = float(abs(first) / mp.mpf(width) / abs(center))         # |x f'(x) / f(x)|
                    curvatures[name] = float(abs(second) / mp.mpf(h) ** 2 / abs(center))  # |x^2 f''(x) / f(x)|
                    break
                if previous is not None or max(abs(first), abs(second)) > abs(center) / 10:
                    skipped[name] = JUMPS
                    break
                previous = first, second
        cond = sum(terms.values())
    return Conditioning(cond=cond, terms=terms, not_differentiable=skipped, curvature=sum(curvatures.values()))


def _differences(at, h, center):
    """(first difference, second difference, width of the first) at relative step h -- central, or
    one-sided at a domain edge -- or the reason there are none."""
    up, down = at(h), at(-h)
    if up is not None and down is not None:
        return up - down, up - 2 * center + down, 2 * h
    if up is None and down is None:
        return "the value is not defined (not a real number) off this point"
    sign = 1 if up is not None else -1
    near, far = (up if up is not None else down), at(2 * sign * h)
    if far is None:
        return "the value is not defined on either side of this point"
    return sign * (near - center), far - 2 * near + center, h


JUMPS = "not differentiable here: the value jumps or has a kink (a seeded draw, a branch, an edge)"


def _value(f, inputs) -> mp.mpf | None:
    try:
        return _real(f(inputs))
    except (ValueError, ArithmeticError):
        return None


def _real(value) -> mp.mpf | None:
    if not is_real_number(value):
        return None
    return _as_mpf(value)
