"""The verdict engine: every statistical decision of the checker is made here.

A check measures; it does not judge.  It hands its measurements to a :class:`Judge`
(``run.judge(theorem)``), each tagged with what it is compared to:

- ``judge.mean(est, reference, label)``: a Monte-Carlo mean against a claimed or exact value,
  by the skewness-corrected z-test (``simulate.stats.mean_z``, Hall 1992);
- ``judge.fit(value, se, reference, label)``: a fitted or extrapolated value with its propagated
  standard error (a plain z-test: it is not a sample mean, so there is no skewness to correct);
- ``judge.threshold(est, threshold, label)``: a trend that must clear a threshold (three-way:
  above it, below it, or not resolved), where the proof gives no rate; ``skewed=True`` for a Monte-Carlo
  mean, whose z is then skewness-corrected as in ``judge.mean``;
- ``judge.exponent(last, previous, exponent, label)``: a rate of approach against the exponent a proof gives,
  with the bound on the ladder's remaining higher-order terms;
- ``judge.per_draw(worst, label)``: the largest per-draw error as a multiple of its certified
  tolerance (deterministic: it fails above 1, and is not a statistical test);
- ``judge.fraction(failures, trials, probability, label)``: a count of failing draws against a failure
  probability, by the Chernoff-Hoeffding bound (one-sided where the probability is a claimed bound, two-sided
  where it is a prediction);
- ``judge.fact(holds, label)``: a deterministic comparison (an exact count, an identity);
- ``judge.note(text)``: something the row reports without judging it;
- ``judge.converged(reached, resolvable, what)``: the optimisation or integration error a trainer or integrator
  reached (the largest over the draws, in the units of the verdict's quantity where possible) against what the
  verdict can resolve (``judge.resolvable(main)``: a tenth of the main comparison's standard error); above it
  the row is inconclusive whatever its tests say, since an unconverged procedure decides nothing;
- ``judge.critical_for(k)``: the critical z that k comparisons will get, for a design fixed before them;
- ``judge.corrected(statement, predicts, rates=...)``: where a finding records a corrected statement, a Judge
  for the comparisons that test it on the same draws, and what it predicts for the paper's test: the value of
  the row's quantity, or the failure probability behind each of the paper's fraction tests (see
  :func:`accepted_verdicts`).

``judge.outcome(...)`` then counts the statistical comparisons, splits the check's false-alarm
rate over them (Bonferroni, whatever their dependence) on top of the run's split over its points
(``Run.alarm``), decides the verdict, writes the one-line detail in one form, and attaches the
effect size: the claim's error with its confidence interval at the run's false-alarm level.

What a point is *expected* to get is decided here too (:func:`accepted_verdicts`): the recorded
verdict, or, inside a finding's region with a corrected statement, whichever verdicts the paper's
test can fairly reach given how far the corrected prediction lies from the paper's value.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from numerics.binomial_bounds import binomial_survival, chernoff_two_sided_z, chernoff_z
from simulate.stats import Estimate, mean_z, z_critical, z_score

__all__ = ["Comparison", "Judge", "accepted_verdicts", "detection_band", "effect_size", "effect_text", "fraction_band",
           "fraction_power", "law_verdicts", "row_effect"]

ALARMS = ("both", "above", "below")   # which side of the reference raises the alarm
# The share of a z-test's standard error that a procedure's own error may reach: an error of a tenth of a
# standard error moves the test's z by at most 0.1, against critical values of 3.3 and above, so it cannot
# turn a verdict except at a z already within 0.1 of the critical value.
CONVERGENCE_SHARE = 0.1


@dataclass
class Comparison:
    """One measured quantity and what it is compared to.

    ``kind``: "mean" / "fit" (z-tests), "fraction" (a count of failing draws, its p-value as a z), "threshold"
    (three-way trend test), "per-draw" (certified tolerance), "fact" (deterministic).  ``alarm``: the side on
    which a z-test fails ("both": |z|; "above": z > crit, e.g. a bound exceeded; "below": z < -crit).  ``counted``: whether it takes a
    share of the false-alarm rate (False for a comparison that is shown but not judged)."""

    kind: str
    label: str
    value: float | None = None
    se: float | None = None
    reference: float | None = None
    z: float | None = None
    alarm: str = "both"
    counted: bool = True
    holds: bool | None = None        # per-draw and fact: known when measured
    trials: int | None = None
    text: str = ""                    # how the measurement reads in a detail line
    failures: int | None = None       # fraction: the failing draws (value = failures / trials, reference = the probability)

    @property
    def statistical(self) -> bool:
        return self.kind in ("mean", "fit", "fraction", "threshold")

    @property
    def decidable(self) -> bool:
        """Whether the comparison has numbers to decide on: a NaN value, se, reference or z (float64 overflow:
        inf - inf, inf / inf) decides nothing.  An infinite value or z is a decision (a slope at the float64
        floor, a zero standard error), as the checks that report one intend."""
        return not any(x is not None and math.isnan(x) for x in (self.value, self.se, self.reference, self.z))


def _critical(alarm_rate: float, comparisons: int, alarm: str) -> float:
    """The critical z; infinite for a claim declared deterministic (false-alarm probability 0)."""
    if alarm_rate <= 0:
        return math.inf
    return z_critical(alarm_rate, comparisons=max(1, comparisons), two_sided=alarm == "both")


def _interval_critical(rate: float) -> float:
    """The critical z of an effect's two-sided interval at ``rate``; 0 (no interval) for a deterministic claim."""
    return _critical(rate, 1, "both") if rate > 0 else 0.0


def effect_size(value: float, se: float | None, reference: float, critical: float) -> dict:
    """The claim's error, (value - reference) / |reference| (absolute where the reference is 0), with the
    interval value +- critical * se around it: ``{"estimate", "low", "high", "unit"}``."""
    relative = reference != 0 and math.isfinite(reference)
    scale = abs(reference) if relative else 1.0
    spread = critical * se if se is not None and math.isfinite(se) else 0.0
    return {"estimate": (value - reference) / scale, "low": (value - spread - reference) / scale,
            "high": (value + spread - reference) / scale, "unit": "relative" if relative else "absolute"}


def row_effect(outcome, rate: float) -> dict | None:
    """The effect of a row: the one its check's Judge attached, else derived from the row's estimate
    (mean, se against reference) with a two-sided interval at the run's false-alarm ``rate``."""
    if outcome.effect is not None:
        return outcome.effect
    numbers = (outcome.mean, outcome.se, outcome.reference)
    if any(x is None or not math.isfinite(x) for x in numbers):
        return None
    return effect_size(*numbers, _interval_critical(rate))


def effect_text(effect: dict | None) -> str:
    """'+1.2 % [-0.3, +2.7] %' (relative) or '+0.0012 [-0.0003, +0.0027]' (absolute); '' without an effect."""
    if not effect:
        return ""
    if effect["unit"] == "tolerance":
        return f"{effect['estimate']:.2g} x tol"
    if effect["unit"] == "relative":
        scale, fmt, unit = 100, "{:+.2g}", " %"
    else:
        scale, fmt, unit = 1, "{:+.2g}", ""
    est, low, high = (fmt.format(effect[k] * scale) for k in ("estimate", "low", "high"))
    return est + unit if low == high else f"{est}{unit} [{low}, {high}]{unit}"


@dataclass
class Judge:
    """The comparisons of one check at one point, and the decision on them (see the module docstring)."""

    false_alarm: float                 # the check's design false-alarm probability (Theorem.false_alarm)
    family: int = 1                    # points in the run (Run.family): each gets false_alarm / family
    comparisons: list[Comparison] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # the corrected statement's (name, predicted value of the row's quantity, its Judge, predicted failure
    # probabilities of the paper's fraction tests, summary); see corrected()
    correction: tuple | None = None
    parent: "Judge | None" = None      # a corrected statement's Judge shares its parent's Bonferroni count
    # what each trainer or integrator reached, against what the verdict resolves: see converged()
    convergence: list[dict] = field(default_factory=list)

    @property
    def rate(self) -> float:
        """This check's false-alarm budget in this run."""
        return self.false_alarm / self.family

    # --- measurements --------------------------------------------------------------------------

    def mean(self, est: Estimate, reference: float, label: str, *, floor: float = 0.0, alarm: str = "both",
             counted: bool = True) -> Comparison:
        """A Monte-Carlo mean against ``reference``; ``floor`` bounds its standard error from below
        (the rounding of the arithmetic, where the draws barely vary)."""
        se = max(est.se, floor)
        z = mean_z(est, reference, se)
        return self._add(Comparison("mean", label, est.mean, se, reference, z, alarm, counted, trials=est.trials,
                                    text=f"{est.mean:.6g} ± {se:.2g} vs {reference:.6g}"))

    def fit(self, value: float, se: float, reference: float, label: str, *, alarm: str = "both",
            counted: bool = True) -> Comparison:
        """A fitted or extrapolated value (``simulate.stats.weighted_poly_fit``) against ``reference``."""
        z = z_score(value, reference, se)
        return self._add(Comparison("fit", label, value, se, reference, z, alarm, counted,
                                    text=f"{value:+.3g} ± {se:.2g} vs {reference:.6g}"))

    def threshold(self, est: Estimate, threshold: float, label: str, *, skewed: bool = False) -> Comparison:
        """A trend that the claim says exceeds ``threshold``: agree when its one-sided lower bound
        clears it, disagree when its upper bound is below it, inconclusive in between.  ``skewed``: the
        z of a Monte-Carlo mean, corrected for the skewness of its draws (``mean_z``, as in ``mean``), for
        a mean of per-draw values that the claim says exceeds ``threshold``."""
        if skewed:
            return self._add(Comparison("threshold", label, est.mean, est.se, threshold, mean_z(est, threshold, est.se),
                                        "below", trials=est.trials,
                                        text=f"{est.mean:.6g} ± {est.se:.2g} vs {threshold:.6g}"))
        z = (est.mean - threshold) / est.se if est.se > 0 else math.copysign(math.inf, est.mean - threshold)
        return self._add(Comparison("threshold", label, est.mean, est.se, threshold, z, "below", trials=est.trials,
                                    text=f"{est.mean:.3f} ± {est.se:.2g} vs threshold {threshold:g}"))

    def exponent(self, last: Estimate, previous: Estimate, exponent: float, label: str, *,
                 alarm: str = "both") -> Comparison:
        """A rate of approach to a limit against the exponent a proof gives: ``last`` and ``previous`` are the
        mean local slopes of log(distance) against log(alpha) over the last and the previous decade of an alpha
        ladder.  A local slope is the exponent plus corrections of higher order in alpha; where they fall at
        least tenfold a decade (order alpha^1 or higher), what is left in the last decade is at most
        |last - previous| / 9, and that bound enters as a floor on the standard error: only a slope that
        departs from the proof's exponent by more than its sampling error and the bound alarms.  alarm="both"
        where the proof gives the exponent exactly, "below" where it gives a rate that may be beaten (an O())."""
        allowance = abs(last.mean - previous.mean) / 9
        se = max(last.se, allowance)
        gap = last.mean - exponent
        z = gap / se if se > 0 else (math.copysign(math.inf, gap) if gap else 0.0)
        return self._add(Comparison("mean", label, last.mean, se, exponent, z, alarm, trials=last.trials,
                                    text=f"{last.mean:.6g} ± {last.se:.2g} (+- {allowance:.2g} left by the previous "
                                         f"decade {previous.mean:.6g}) vs the proof's {exponent:g}"))

    def fraction(self, failures: int, trials: int, probability: float, label: str, *, alarm: str = "above",
                 text: str = "") -> Comparison:
        """``failures`` failing draws of ``trials`` against a failure probability, by the Chernoff-Hoeffding bound
        P(Bin(N, p) >= k) <= exp(-N KL(k/N || p)).  alarm="above": the probability is a claimed bound, tested
        one-sided (numerics.binomial_bounds.chernoff_z); alarm="both": it is a prediction, tested two-sided
        (chernoff_two_sided_z).  The p-value enters as a normal quantile, so the test alarms exactly when it is
        below its share of the false-alarm rate, and takes that share like a z-test; ``fraction_power`` gives the
        probability that it alarms when the draws fail with another probability."""
        if alarm not in ("above", "both"):
            raise ValueError(f"a fraction test alarms 'above' (a bound) or 'both' (a prediction), got {alarm!r}")
        z = (chernoff_z if alarm == "above" else chernoff_two_sided_z)(failures, trials, probability)
        return self._add(Comparison("fraction", label, failures / trials, None, probability, z, alarm, trials=trials,
                                    failures=failures, text=text or f"fails in {failures / trials:.2%} of {trials} "
                                                                    f"draws vs {probability:.2g}"))

    def per_draw(self, worst: float, label: str, *, text: str = "") -> Comparison:
        """The largest per-draw error over its certified tolerance: the comparison holds iff <= 1 (NaN, a draw
        that left float64's range, decides nothing)."""
        holds = None if math.isnan(worst) else bool(worst <= 1)
        return self._add(Comparison("per-draw", label, worst, holds=holds, counted=False,
                                    text=text or f"largest error {worst:.3g}x the certified tolerance"))

    def fact(self, holds: bool | None, label: str, text: str = "") -> Comparison:
        """A deterministic comparison that holds, fails, or (``holds=None``) cannot be decided here."""
        return self._add(Comparison("fact", label, holds=None if holds is None else bool(holds), counted=False,
                                    text=text))

    def note(self, text: str) -> None:
        if text:
            self.notes.append(text)

    def converged(self, reached: float, resolvable: float, what: str) -> dict:
        """Record that a procedure (training, integration) stopped ``reached`` away from what it computes, the
        largest over the draws, against ``resolvable``, the largest error the verdict cannot tell apart from
        none, in the same units (``resolvable(comparison)`` for a z-test's).  ``what`` names the error in a few
        words (e.g. "risk moved by the gradient left").  Reached above resolvable (or not a number) makes the row
        inconclusive: its verdict would rest on where the procedure stopped, not on the claim."""
        reached, resolvable = float(reached), float(resolvable)
        if not resolvable > 0 and not math.isnan(resolvable):   # NaN: the test it serves left float64's range
            raise ValueError(f"what a verdict resolves is positive, got {resolvable!r} for {what!r}")
        entry = {"reached": reached, "resolvable": resolvable, "what": what}
        self.convergence.append(entry)
        return entry

    @staticmethod
    def resolvable(measured, share: float = CONVERGENCE_SHARE) -> float:
        """What a z-test (a Comparison) or a Monte-Carlo estimate (an Estimate) resolves, for ``converged``:
        ``share`` of its standard error (CONVERGENCE_SHARE); for a per-draw check, ``measured`` is its certified
        tolerance (a number), and the share is of that."""
        scale = measured if isinstance(measured, (int, float)) else measured.se
        if scale is not None and math.isnan(scale):   # a simulation beyond float64's range: its test decides nothing
            return math.nan
        if scale is None or not scale > 0:
            raise ValueError(f"{measured!r}: without a standard error or a tolerance, what it resolves is not stated")
        return share * scale

    def unconverged(self) -> list[dict]:
        """The procedures, this check's and (for a corrected statement) its parent's, that stopped above what
        the verdict resolves."""
        own = [entry for entry in self.convergence   # a NaN resolution: the test itself is undecided (Comparison.decidable)
               if not entry["reached"] <= entry["resolvable"] and not math.isnan(entry["resolvable"])]
        return own + (self.parent.unconverged() if self.parent is not None else [])

    def convergence_record(self) -> dict | None:
        """The row's JSON field: the procedure closest to (or furthest past) what the verdict resolves, with
        the others under "parts" where the check has several."""
        if not self.convergence:
            return None
        def excess(entry):   # a reached error that is not a number is past every resolution
            ratio = entry["reached"] / entry["resolvable"]
            return math.inf if math.isnan(ratio) else ratio
        worst = dict(max(self.convergence, key=excess))
        if len(self.convergence) > 1:
            worst["parts"] = [dict(entry) for entry in self.convergence]
        return worst

    def corrected(self, statement: str, predicts: float | None, *, rates=(), summary: str = "") -> "Judge":
        """The Judge of a finding's corrected statement, tested by the check on the draws the paper's
        formula is tested on: register its comparisons there.  What it predicts for the paper's test:
        ``predicts``, the value it gives for the row's main quantity (a z-test's), or ``rates``, the failure
        probability behind each of the paper's fraction tests, as (comparison, probability, exact) with exact
        False where the probability only bounds the tested count's from above.  ``summary`` stands for the
        list of its measurements in the detail line.  Its verdict is decided apart from the paper's; its
        statistical comparisons share the check's Bonferroni count."""
        judge = Judge(self.false_alarm, self.family, parent=self)
        self.correction = (statement, predicts, judge, tuple(rates), summary)
        return judge

    def _add(self, comparison: Comparison) -> Comparison:
        if comparison.alarm not in ALARMS:
            raise ValueError(f"alarm must be one of {ALARMS}, got {comparison.alarm!r}")
        self.comparisons.append(comparison)
        return comparison

    # --- the decision --------------------------------------------------------------------------

    @property
    def count(self) -> int:
        """How many comparisons share the false-alarm rate (Bonferroni): the check's own and its corrected
        statement's."""
        if self.parent is not None:
            return self.parent.count
        own = sum(c.counted and c.statistical for c in self.comparisons)
        return own + (sum(c.counted and c.statistical for c in self.correction[2].comparisons) if self.correction else 0)

    def fraction_alarm(self, comparison: Comparison, probability: float) -> float:
        """The probability that a one-sided fraction test of this check alarms, at the critical value it has now,
        when each draw fails with ``probability``."""
        return fraction_power(comparison, probability, self.critical(comparison.alarm))

    def critical(self, alarm: str = "both") -> float:
        """The critical z of a counted comparison on that side, given every comparison made so far."""
        return _critical(self.rate, self.count, alarm)

    def critical_for(self, comparisons: int, alarm: str = "both") -> float:
        """The critical z a counted comparison on that side will get once ``comparisons`` are made: for a check
        whose design (e.g. a band around a crossing) must be fixed before the comparisons it selects exist."""
        return _critical(self.rate, comparisons, alarm)

    def failed(self, comparison: Comparison) -> bool | None:
        """True if the comparison alarms, False if it passes, None if a threshold test is not resolved."""
        if comparison.kind in ("per-draw", "fact"):
            return None if comparison.holds is None else not comparison.holds
        if not comparison.counted:
            return False
        if not comparison.decidable:   # a simulation that left float64's range decides nothing either way
            return None
        z = comparison.z
        if comparison.kind == "threshold":   # the one-sided interval mean +- crit se against the threshold
            crit = self.critical("below")
            return False if z > crit else (True if z < -crit else None)
        crit = self.critical(comparison.alarm)
        return {"both": abs(z) > crit, "above": z > crit, "below": z < -crit}[comparison.alarm]

    def verdict(self) -> str:
        if self.unconverged():
            return "inconclusive"
        states = [self.failed(c) for c in self.comparisons]
        if any(state is True for state in states):
            return "disagree"
        return "inconclusive" if any(state is None for state in states) else "agree"

    def effect(self, mean: float | None, se: float | None, reference: float | None) -> dict | None:
        """The row's effect.  A check whose verdict rests on certified per-draw tolerances alone (no statistical
        test) reports its largest per-draw error in units of its tolerance, whatever estimate the row shows;
        otherwise the error of the row's estimate with a two-sided interval at the run's false-alarm level."""
        worst = max((c.value for c in self.comparisons if c.kind == "per-draw"), default=None)
        if worst is not None and (not self.count or mean is None or reference is None):
            return {"estimate": worst, "low": worst, "high": worst, "unit": "tolerance"}
        if mean is None or reference is None:
            return None
        return effect_size(mean, se, reference, _interval_critical(self.rate))

    def detail(self, summary: str) -> str:
        """The one-line reason: the failing comparisons, else ``summary`` with the test that passed."""
        verdict = self.verdict()
        stopped = self.unconverged()
        if stopped:
            return "; ".join([f"not converged: {e['what']} {e['reached']:.2g} > {e['resolvable']:.2g} resolvable"
                              for e in stopped] + self.notes)
        if verdict == "disagree":
            parts = [f"{c.label}: {c.text}" + (f" (z={c.z:+.1f})" if c.z is not None and c.kind != "per-draw" else "")
                     for c in self.comparisons if self.failed(c)]
        elif verdict == "inconclusive":
            parts = [f"{c.label}: {c.text}: " + ("not a number (NaN) in float64, so not decided" if not c.decidable
                                                  else f"not resolved (|trend z| < {self.critical('below'):.2f})"
                                                  if c.kind == "threshold" else "not decided")
                     for c in self.comparisons if self.failed(c) is None]
        else:
            tests = ""
            own = [c for c in self.comparisons if c.counted and c.statistical]
            if own:
                bounds = []
                for c in own:
                    if c.kind == "threshold":
                        text = f"trend z >= {self.critical('below'):.2f}"
                    elif c.alarm == "both":
                        text = f"|z| <= {self.critical('both'):.2f}"
                    else:
                        sign = "" if c.alarm == "above" else "-"
                        text = f"z {'<=' if c.alarm == 'above' else '>='} {sign}{self.critical(c.alarm):.2f}"
                    if text not in bounds:
                        bounds.append(text)
                shared = f" of {self.count}" if self.count != len(own) else ""   # a corrected statement's tests count too
                tests = f" ({len(own)} test{'s' if len(own) > 1 else ''}{shared}, {' / '.join(bounds)})"
            parts = [summary + tests]
        reached = [f"{e['what']} {e['reached']:.2g} <= {e['resolvable']:.2g}" for e in self.convergence]
        return "; ".join(parts + self.notes + (["converged: " + ", ".join(reached)] if reached else []))

    def outcome(self, summary: str, *, main: Comparison | None = None, sizes: dict | None = None,
                extra: dict | None = None, mean: float | None = None, se: float | None = None,
                reference: float | None = None, z: float | None = None, trials: int | None = None,
                detail: str | None = None):
        """The check's :class:`theorems.core.Outcome`: verdict and detail decided here; the row's
        estimate is ``main``'s unless given (``mean``, ``se``, ...) explicitly."""
        from theorems.core import Outcome
        if main is not None:
            mean = main.value if mean is None else mean
            se = main.se if se is None else se
            reference = main.reference if reference is None else reference
            z = main.z if z is None else z
            trials = main.trials if trials is None else trials
        extra = dict(extra or {})
        counted = [c for c in self.comparisons if c.counted and c.statistical]
        if counted:   # the two-sided value where there is a two-sided test, else the first test's side
            sides = ["below" if c.kind == "threshold" else c.alarm for c in counted]
            extra.setdefault("z_critical", self.critical("both" if "both" in sides else sides[0]))
        if detail is None or self.unconverged():   # a row inconclusive for that reason says so, whatever the check wrote
            detail = self.detail(summary)
        return Outcome(self.verdict(), detail, mean=mean, se=se,
                       trials=trials, reference=reference, z=z, sizes=sizes or {}, extra=extra,
                       effect=self.effect(mean, se, reference), corrected=self._corrected_record(main, se, reference),
                       convergence=self.convergence_record())

    def _corrected_record(self, main: Comparison | None, se: float | None, reference: float | None) -> dict | None:
        """The corrected statement's verdict and detail, its prediction, and the paper verdicts that
        prediction makes fair (``detection_band``) when the row's main comparison is a z-test."""
        if self.correction is None:
            return None
        statement, predicts, judge, rates, summary = self.correction
        measured = summary or "; ".join(f"{c.label}: {c.text}" for c in judge.comparisons)
        record = {"statement": statement, "verdict": judge.verdict(), "detail": judge.detail(measured),
                  "predicts": predicts, "paper_verdicts": None, "shift": None, "band": None, "alarm": None}
        if rates:
            record["alarm"] = alarm = self._alarm_record(rates)
            record["paper_verdicts"] = (["disagree"] if alarm["low"] >= 1 - self.rate else
                                        ["agree"] if alarm["high"] <= self.rate else ["agree", "disagree"])
            return record
        z_test = main is not None and main.kind in ("mean", "fit") and main.counted
        if z_test and predicts is not None and se and reference is not None and math.isfinite(se) and se > 0:
            shift = abs(predicts - reference) / se
            band = detection_band(self.critical(main.alarm), self.rate)
            record.update(shift=shift, band=list(band), paper_verdicts=(
                ["disagree"] if shift >= band[1] else ["agree"] if shift <= band[0] else ["agree", "disagree"]))
        return record

    def _alarm_record(self, rates) -> dict:
        """How likely the paper's fraction tests are to alarm if the corrected statement's failure probabilities
        hold: each test's probability (fraction_power at its final critical value); the run alarms at least as
        often as the likeliest exact one ("low") and at most as often as all of them together ("high", Bonferroni
        the other way round).  The likeliest test's detection band (fraction_band) says where its verdict turns."""
        powers = [(self.fraction_alarm(c, p), c, p, exact) for c, p, exact in rates]
        low = max((power for power, _, _, exact in powers if exact), default=0.0)
        high = min(1.0, math.fsum(power for power, _, _, _ in powers))
        power, c, p, _ = max(powers, key=lambda entry: entry[0])
        return {"low": low, "high": high, "tests": len(powers), "test": c.label, "predicted": p, "claimed": c.reference,
                "trials": c.trials, "power": power, "band": list(fraction_band(c, self.critical(c.alarm), self.rate))}


def fraction_power(comparison: Comparison, probability: float, critical: float) -> float:
    """P(a one-sided fraction test alarms) when its draws fail independently with ``probability``: the smallest
    count k* whose Chernoff z exceeds ``critical`` (k/N > p0 and the z grows with k), then P(Bin(N, p) >= k*)."""
    k = _smallest_alarming_count(comparison, critical)
    return 0.0 if k is None else binomial_survival(k, comparison.trials, probability)


def _smallest_alarming_count(comparison: Comparison, critical: float) -> int | None:
    trials, claimed = comparison.trials, comparison.reference
    if comparison.kind != "fraction" or comparison.alarm != "above":
        raise ValueError("the power of a one-sided fraction test is what this computes")
    if chernoff_z(trials, trials, claimed) <= critical:
        return None
    lo, hi = min(trials, math.floor(trials * claimed)), trials      # z(lo) <= critical < z(hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if chernoff_z(mid, trials, claimed) > critical else (mid, hi)
    return hi


def fraction_band(comparison: Comparison, critical: float, rate: float) -> tuple[float, float]:
    """The failure probabilities for which a one-sided fraction test alarms with a probability between ``rate`` and
    1 - rate, i.e. where either verdict is a fair draw (the counterpart of ``detection_band`` for a count): below
    the band it alarms with probability < rate, above it with probability > 1 - rate.  (0, 0) if it cannot
    alarm.  By bisection in log p: P(Bin(N, p) >= k*) increases with p."""
    k = _smallest_alarming_count(comparison, critical)
    if k is None:
        return 0.0, 0.0

    def solve(target):
        lo, hi = -700.0, 0.0                          # log p
        for _ in range(200):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if binomial_survival(k, comparison.trials, math.exp(mid)) < target else (lo, mid)
            if hi - lo < 1e-9:
                break
        return math.exp(hi)

    return solve(rate), solve(1 - rate)


def detection_band(critical: float, rate: float) -> tuple[float, float]:
    """The shifts s (in standard errors of the estimate) of a z-test's true mean from its reference for which
    either verdict is a fair draw: the test alarms with probability Phi(s - critical) (its other tail is
    negligible there), which is below ``rate`` for s < critical - z and above 1 - rate for s > critical + z,
    z the one-sided normal quantile at ``rate``.  Outside the band one verdict has probability >= 1 - rate."""
    z = z_critical(rate, 1, two_sided=False)
    return max(0.0, critical - z), critical + z


def accepted_verdicts(recorded: str, corrected: str, outcome) -> tuple[list[str], str]:
    """The verdicts the record accepts at a point, and a line saying why ('' when it is the plain record).

    Outside every finding's region, or inside one without a corrected statement (a sharp edge): the
    recorded verdict; inside a finding that records a power limit ('inconclusive or agree'), each verdict it
    lists.  Inside a region with a corrected statement (``corrected`` names it): the verdicts that the corrected
    prediction makes fair for the paper's test (``detection_band``, or ``fraction_power`` for fraction tests).
    Wherever the check tests a corrected statement, it must hold: a corrected statement that fails accepts nothing."""
    record = getattr(outcome, "corrected", None)
    if record is not None and record["verdict"] != "agree":
        return [], f"the corrected statement ({record['statement']}) does not hold: {record['detail']}"
    if " or " in recorded:           # a finding's power limit (theorems.core.Finding.fair): each listed verdict is fair
        return recorded.split(" or "), ""
    if record is None:
        return [recorded], ""
    if not corrected or record["paper_verdicts"] is None:
        return [recorded], ""
    if record.get("alarm"):
        alarm = record["alarm"]
        where = ("certain" if record["paper_verdicts"] == ["disagree"] else
                 "negligible" if record["paper_verdicts"] == ["agree"] else "a fair draw either way")
        low, high = alarm["band"]
        return record["paper_verdicts"], (
            f"the corrected statement puts the chance that the paper's {alarm['tests']} fraction tests alarm at "
            f"{alarm['low']:.3g} to {alarm['high']:.3g}: {where}; the likeliest, {alarm['test']}, fails with "
            f"probability {alarm['predicted']:.3g} against {alarm['claimed']:.2g} claimed, and alarms with "
            f"probability {alarm['power']:.3g} (either verdict is fair for probabilities from {low:.3g} to {high:.3g} "
            f"at {alarm['trials']} draws)")
    low, high = record["band"]
    where = ("detectable" if record["paper_verdicts"] == ["disagree"] else
             "below what this run resolves" if record["paper_verdicts"] == ["agree"] else "in the detection band")
    return record["paper_verdicts"], (f"the corrected statement predicts {record['predicts']:.6g}, {record['shift']:.2f} "
                                      f"standard errors from the paper's value: {where} (either verdict is fair from "
                                      f"{low:.2f} to {high:.2f})")


def law_verdicts(recorded: str, departure: float, outcome, rate: float) -> tuple[list[str], str]:
    """The verdicts a law's recorded break accepts (``Case.laws`` with a departure): as for a finding's corrected
    statement (``accepted_verdicts``), the recorded verdict where the departure is resolved, agree where it is
    far below what the run resolves, either in the detection band.  ``departure`` is in the row's effect unit
    (relative to the claimed value, absolute where that is 0); the shift is counted in the row's standard errors
    against the critical z of its main test (``z_critical``, else one test at ``rate``)."""
    numbers = (outcome.mean, outcome.se, outcome.reference)
    if any(x is None or not math.isfinite(x) for x in numbers) or outcome.se <= 0:
        return [recorded], ""
    scale = abs(outcome.reference) if outcome.reference != 0 else 1.0
    shift = abs(departure) * scale / outcome.se
    critical = outcome.extra.get("z_critical") or _interval_critical(rate)
    low, high = detection_band(critical, rate)
    verdicts = [recorded] if shift >= high else ["agree"] if shift <= low else sorted({"agree", recorded})
    where = ("detectable" if verdicts == [recorded] else "below what this run resolves" if verdicts == ["agree"]
             else "in the detection band")
    size = f"{100 * departure:+.3g} %" if outcome.reference != 0 else f"{departure:+.4g}"
    return verdicts, (f"the law's recorded departure {size} is {shift:.2f} standard errors: {where} (either verdict "
                      f"is fair from {low:.2f} to {high:.2f})")
