"""Certified verdicts (``verify.py --certify``): proved, disproved or uncertified, from rigorous enclosures.

A deterministic claim declares a ``certify(theorem, params, run)`` function (``Theorem.certify``) that
encloses both sides of what it states at the point -- the claimed formulas, evaluated in ball arithmetic
or exactly, and the quantity they claim, from its defining integral, equation or expectation
(``numerics.enclosures``) -- and registers each comparison with a :class:`Certifier`, which decides, in one
place, what the enclosures establish:

- ``proved``: every comparison holds with certainty: an equality to within the claim's tolerance
  (10^-dps relative for formulas evaluated in balls or exactly; see ``Computed`` for computed values), an
  exact count, an inequality with a certified margin, an exact fact;
- ``disproved``: some comparison fails with certainty (the enclosures exclude the claim);
- ``uncertified (reason)``: nothing fails, but some enclosure is too wide to decide.

A claim without a ``certify`` is ``not certifiable: Monte-Carlo``: it is checked by sampling only (most such
statements are about what sampling or training produces).  The certificate is a JSON dict on the row (``certificate``): verdict, method, radius
(the largest radius of the enclosures used; 0 where everything was exact), detail, the enclosure of the
row's theory value, whether it matches the record, and its seconds.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import mpmath as mp
import sympy as sp

__all__ = ["CERTIFIED", "Computed", "Certifier", "certify_point", "check_available", "recorded_certificate"]

CERTIFIED = ("proved", "disproved", "uncertified", "not certifiable")
FLOAT64_ALLOWANCE = 2.0 ** -40   # a float64 formula's output against the exact value: ~4000 ulp of rounding
GUARD_DIGITS = 10                # a formula with no ball version is computed in mpmath with these extra digits


def check_available() -> None:
    """Raise numerics.certified.CertificationUnavailable (one line: how to install) without python-flint."""
    from numerics.certified import flint
    flint()


@dataclass(frozen=True)
class Computed:
    """A formula's computed value where it has no rigorous version (mpmath quadrature or root finding, a
    float64 torch function): an exact binary number, held to ``allowance`` (relative to max(1, |value|)).

    Comparing it with an enclosure is rigorous about the value *as the checker computes it*: 'proved' says
    that number is within the allowance of the truth, 'disproved' that it is farther."""

    value: Any
    source: str
    allowance: float


@dataclass
class _Item:
    label: str
    status: bool | None          # True: holds with certainty; False: fails with certainty; None: undecided
    text: str
    radius: float = 0.0


def _is_exact(x) -> bool:
    return isinstance(x, (int, sp.Basic)) and not isinstance(x, bool)


def _short(x) -> str:
    from numerics.certified import is_ball
    if isinstance(x, Computed):
        x = x.value
    if is_ball(x):
        return mp.nstr(mp.mpf(x.mid().str(30, radius=False)), 12)
    if isinstance(x, sp.Basic) and not x.is_Rational:
        return f"{x} = {sp.N(x, 12)}"
    return mp.nstr(x, 12) if isinstance(x, mp.mpf) else str(x)


@dataclass
class Certifier:
    """Collects one point's certified comparisons and decides the verdict (see the module docstring)."""

    theorem: Any
    dps: int
    items: list = field(default_factory=list)
    enclosure: Any = None
    sources: set = field(default_factory=set)

    @property
    def tolerance(self) -> float:
        return 10.0 ** -self.dps

    # --- the claimed side: formulas ---------------------------------------------------------------------

    def formula(self, name: str, *args, exact: bool = False):
        """``theorem.formulas[name]`` at ``args`` (exact numbers: sympy or int), evaluated exactly (``exact``)
        or in balls; where it has no such version (it calls a quadrature, a root finder), its mpmath value at
        dps + GUARD_DIGITS digits as a :class:`Computed` number."""
        from numerics.certified import BALLS, EXACT, NotInSpace, ball, in_space
        fn = self.theorem.formulas[name]
        try:
            if exact:
                value = in_space(fn, EXACT)(*(sp.sympify(a) for a in args))
                self.sources.add("exact")
                return value
            value = in_space(fn, BALLS)(*(a if isinstance(a, int) else ball(a) for a in args))
            ball(value)                       # a formula that returned something else is not ball-evaluable
            self.sources.add("arb balls")
            return value
        except NotInSpace as error:
            reason = str(error)
        except TypeError:
            reason = "it is not written for ball arithmetic"
        from theorems.core import mpf
        with mp.workdps(self.dps + GUARD_DIGITS):
            value = fn(*(a if isinstance(a, int) else mpf(a) for a in args))
        self.sources.add(f"computed mpmath value where a formula has no ball version ({reason})")
        return Computed(value, "mpmath", self.tolerance)

    def float64(self, value, source: str = "float64 torch formula") -> Computed:
        """A torch formula's float64 output, held to FLOAT64_ALLOWANCE."""
        self.sources.add(f"{source} (its float64 output, within 2^-40)")
        return Computed(float(value), source, FLOAT64_ALLOWANCE)

    # --- comparisons -----------------------------------------------------------------------------------

    def equal(self, claimed, truth, label: str) -> _Item:
        """The claimed value equals the truth: to within the tolerance (10^-dps relative to max(1, |truth|),
        or a Computed value's allowance), or exactly where both are exact numbers."""
        from numerics.certified import Undecided, ball, radius
        allowance = claimed.allowance if isinstance(claimed, Computed) else self.tolerance
        raw = claimed.value if isinstance(claimed, Computed) else claimed
        if _is_exact(raw) and _is_exact(truth):
            difference = sp.sympify(raw) - sp.sympify(truth)
            if not difference.is_Rational and sp.simplify(difference) == 0:
                difference = sp.Integer(0)
            if difference == 0:
                return self._add(label, True, f"{label}: {_short(truth)} exactly")
            if difference.is_Rational:
                return self._add(label, False, f"{label}: {_short(raw)} claimed, {_short(truth)} exactly")
        try:
            a, b = ball(raw), ball(truth)
        except Undecided as error:
            return self._add(label, None, f"{label}: {error}")
        width = max(radius(a), radius(b))
        gap = abs(a - b)
        scale = max(1.0, abs(float(b.mid())))
        limit = allowance * scale
        if not gap.is_finite():
            return self._add(label, None, f"{label}: an enclosure is not finite", width)
        if gap.upper() <= limit:
            return self._add(label, True, f"{label}: {_short(truth)}, |claimed - exact| <= {float(gap.upper()):.2g}",
                             width)
        if gap.lower() > limit:
            return self._add(label, False, f"{label}: {_short(raw)} claimed, {_short(b)} ± {radius(b):.1g} certified "
                                           f"(off by {float(gap.lower()):.3g})", width)
        return self._add(label, None, f"{label}: the enclosures (radius {width:.2g}) are too wide to decide equality "
                                      f"within {limit:.2g}", width)

    def at_least(self, value, bound, label: str, text: str = "") -> _Item:
        """value >= bound with certainty (holds), value < bound with certainty (fails), else undecided."""
        from numerics.certified import ball, radius
        margin = ball(value) - ball(bound)
        shown = text or f"{_short(value)} vs {_short(bound)}"
        if not margin.is_finite():
            return self._add(label, None, f"{label}: {shown} (an enclosure is not finite)")
        if margin >= 0:
            return self._add(label, True, f"{label}: {shown}, margin >= {float(margin.lower()):.3g}", radius(margin))
        if margin < 0:
            return self._add(label, False, f"{label}: {shown}, short by {float(-margin.upper()):.3g}", radius(margin))
        return self._add(label, None, f"{label}: {shown}, margin {margin.str(3, radius=True)} not decided", radius(margin))

    def count(self, found: int, claimed: int, label: str, where: str = "") -> _Item:
        """An exact count (roots isolated, say) against the claimed one."""
        text = f"{label}: {found}" + (f" ({where})" if where else "")
        return self._add(label, found == claimed, text + ("" if found == claimed else f", claimed {claimed}"))

    def fact(self, holds: bool | None, label: str, text: str = "", radius: float = 0.0) -> _Item:
        """A fact decided exactly (or undecided: None), with its one-line reason."""
        return self._add(label, holds, f"{label}" + (f": {text}" if text else ""), radius)

    def theory(self, enclosure) -> None:
        """The enclosure of the row's theory value (the quantity ``theorem.evaluate`` computes)."""
        self.enclosure = enclosure

    def _add(self, label, status, text, radius=0.0) -> _Item:
        item = _Item(label, status, text, radius)
        self.items.append(item)
        return item

    # --- the verdict -----------------------------------------------------------------------------------

    def outcome(self, summary: str) -> dict:
        """The certificate: disproved if a comparison fails, uncertified if one is undecided, else proved."""
        from numerics.certified import ball_text, radius
        failed = [i for i in self.items if i.status is False]
        open_ = [i for i in self.items if i.status is None]
        if failed:
            verdict, detail = "disproved", "; ".join(i.text for i in failed)
        elif open_ or not self.items:
            verdict = "uncertified"
            detail = "; ".join(i.text for i in open_) or "nothing was compared"
        else:
            verdict, detail = "proved", summary + " (" + "; ".join(i.text for i in self.items) + ")"
        widths = [i.radius for i in self.items] + ([radius(self.enclosure)] if self.enclosure is not None else [])
        method = self.theorem.certify_method + (f" [{'; '.join(sorted(self.sources))}]" if self.sources else "")
        return {"verdict": verdict, "method": method, "radius": max(widths, default=0.0), "detail": detail,
                "enclosure": None if self.enclosure is None else ball_text(self.enclosure, self.dps + 10)}


def certify_point(theorem, params, run) -> dict:
    """The claim's certificate at ``params``: its ``certify`` run at flint's precision for ``run.dps`` digits,
    or 'not certifiable: Monte-Carlo' for a claim without one.  Enclosures too wide to decide anything
    (numerics.certified.Undecided) give 'uncertified' with the reason."""
    start = time.perf_counter()
    if theorem.certify is None:
        certificate = {"verdict": "not certifiable", "method": "Monte-Carlo", "radius": None,
                       "detail": "not certifiable: Monte-Carlo (the claim declares no certify: it is checked by "
                                 "sampling only)", "enclosure": None}
    else:
        from numerics.certified import Undecided, precision
        try:
            with precision(run.dps):
                certificate = theorem.certify(theorem, params, run)
        except Undecided as error:
            certificate = {"verdict": "uncertified", "method": theorem.certify_method, "radius": None,
                           "detail": str(error), "enclosure": None}
    certificate["seconds"] = round(time.perf_counter() - start, 3)
    return certificate


def recorded_certificate(certificate: dict, expected: str) -> bool | None:
    """Whether a certificate matches the recorded verdict: proved where 'agree' is recorded, disproved where
    'disagree' is; None where it decides nothing (uncertified, not certifiable) or the record is inconclusive."""
    wanted = {"agree": "proved", "disagree": "disproved"}.get(expected)
    if wanted is None or certificate["verdict"] not in ("proved", "disproved"):
        return None
    return certificate["verdict"] == wanted
