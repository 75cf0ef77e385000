"""The shape every claim takes: declared parameters, three routes, a verdict rule.

A :class:`Theorem` is a frozen dataclass *instance*; adding a claim is adding one
instance to a family module.  Its three faces are plain functions:

- ``symbolic()`` returns a :class:`Symbolic`: the statement as a sympy object and
  the derivations that sympy carries out about it (each with a truth value that
  the tests assert);
- ``evaluate(params, dps)`` returns the claimed value as an mpmath number;
- ``check(theorem, params, run)`` runs the real procedure (sampling, training,
  estimating) and returns an :class:`Outcome` with its verdict.

``check`` receives the theorem itself and reads the claimed formulas from
``theorem.formulas``; a negative control is the same theorem with one formula
replaced (``dataclasses.replace``), which the same check must reject.
"""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import mpmath as mp
import sympy

from engine import require_one_installation

# Before the imports below: numerics, simulate, theorems and engine must be this installation's.  Another
# project's package of the same name earlier on sys.path would break them obscurely, or quietly stand in for ours.
require_one_installation()

from numerics.conditioning import (CONDITION_DIGITS, Conditioning, agreeing_digits, is_real_number,  # noqa: E402
                                   relative_condition)
from numerics.expr import Condition, ExpressionError, parse_condition, parse_number  # noqa: E402
from simulate.data import DISTRIBUTIONS, GAUSSIAN, Distribution  # noqa: E402

__all__ = [
    "VERDICTS",
    "TIERS",
    "ParameterError",
    "Parameter",
    "Derivation",
    "Symbolic",
    "Case",
    "Finding",
    "Control",
    "InputAssumption",
    "INPUT_ASSUMPTIONS",
    "Perturbation",
    "Outcome",
    "Run",
    "Theorem",
    "TheoryCheck",
    "parse_data",
]

VERDICTS = ("agree", "disagree", "inconclusive")
TIERS = ("quick", "default", "paper")


@dataclass(frozen=True)
class InputAssumption:
    """One thing a proof may assume about the rows of the design X, and the design law (``--data``,
    simulate/data.py) that breaks it on purpose while keeping what can be kept: ``verify.py stress`` runs a
    claim under the law of each assumption its ``Theorem.input_assumptions`` lists."""

    word: str
    meaning: str         # what the proofs use it for
    law: str             # the --data law that breaks it (str of a Distribution: how Case.laws and rows name it)
    keeps: str           # what that law keeps of the papers' N(0, I) rows
    also_breaks: str     # what it cannot help breaking with it


# The fixed vocabulary of Theorem.input_assumptions.  Every law keeps independent rows; each keeps the second
# moment E x x^T = I but the one that breaks isotropy, so a check's risk ||w - theta||^2 stays the population
# risk of the law that drew the data.
INPUT_ASSUMPTIONS = {a.word: a for a in (
    InputAssumption("centred", "E x = 0", "shifted:0.9",
                    "Gaussian rows; the second moment E x x^T = I (mean 0.9 u, u = (1, ..., 1)/sqrt(d))",
                    "the covariance (I - 0.81 u u^T) and the rows' symmetry about 0"),
    InputAssumption("isotropic", "E x x^T = I, so that the risk is ||w - theta||^2 and the Gram matrix is an "
                    "identity-covariance Wishart", "anisotropic:0.6",
                    "centred, independent, symmetric Gaussian entries; the trace d (variances 1.6 and 0.4)",
                    "rotation invariance; the checks' risk ||w - theta||^2 becomes the parameter error (the risk on "
                    "isotropic test inputs)"),
    InputAssumption("rotation-invariant", "the rows' law is invariant under rotations, so row(X) is a uniformly "
                    "random subspace and every fixed direction is alike", "rademacher",
                    "centred, isotropic, independent symmetric entries, bounded (sub-Gaussian)", "Gaussianity"),
    InputAssumption("gaussian", "Gaussian rows: Gaussian projections (independent for orthogonal directions), "
                    "chi-square norms, Wishart moments", "sphere",
                    "centred, isotropic, rotation invariant, symmetric, bounded (rows uniform on the sphere of "
                    "radius sqrt(d))", "independent entries (the norm is fixed)"),
    InputAssumption("sub-gaussian", "sub-Gaussian rows, so that X^T X / n concentrates at the sub-Gaussian rate",
                    "student-t:5", "centred, isotropic, independent symmetric entries, a finite fourth moment",
                    "Gaussianity, rotation invariance"),
    InputAssumption("symmetric", "entries symmetric about 0 (with i.i.d. entries this alone gives "
                    "E P_row = (n/d) I)", "gamma:1", "centred, isotropic, independent entries (centred exponential, "
                    "skewness 2)", "Gaussianity, rotation invariance, sub-Gaussian tails"),
    InputAssumption("full-rank", "X X^T (n <= d) or X^T X (n > d) non-singular (Shachaf et al. Assumption 3.1): "
                    "row(X) has dimension min(n, d)", "zero-rows:0.1",
                    "centred, isotropic (each row 0 with probability 1/10, else N(0, I/0.9)), rotation invariant, "
                    "symmetric", "Gaussianity; a zero row carries no information, so the rank drops with it"),
)}


class ParameterError(ValueError):
    """A parameter is unknown, malformed or outside its declared domain."""


@dataclass(frozen=True)
class Parameter:
    """A named real parameter with its domain, default and typical range.

    Bounds and defaults are strings parsed by :func:`numerics.expr.parse_number`,
    so ``"pi"`` is exact.  ``default`` may be a mapping tier -> value for sizes
    that grow with the run tier (``d``, ``n``).
    """

    name: str
    description: str
    default: str | Mapping[str, str]
    lower: str | None = None
    upper: str | None = None
    lower_open: bool = False
    upper_open: bool = False
    excluded: tuple[str, ...] = ()
    integer: bool = False
    typical: tuple[str, str] | None = None

    def default_for(self, tier: str) -> sympy.Expr:
        text = self.default[tier] if isinstance(self.default, Mapping) else self.default
        return parse_number(text)

    def domain_text(self) -> str:
        left = "(" if self.lower_open or self.lower is None else "["
        right = ")" if self.upper_open or self.upper is None else "]"
        text = f"{left}{self.lower or '-inf'}, {self.upper or 'inf'}{right}"
        if self.integer:
            text = "integers in " + text
        if self.excluded:
            text += " except " + ", ".join(self.excluded)
        return text

    def validate(self, value: sympy.Expr) -> sympy.Expr:
        """Return ``value`` if it lies in the domain, else raise ParameterError."""
        shown = value if len(str(value)) <= 30 else sympy.N(value, 6)   # not a thousand digits of 1e999
        where = f"{self.name} = {shown} is outside its domain {self.domain_text()}"
        if self.integer and not value.is_integer:
            raise ParameterError(f"{self.name} must be an integer, got {value}")
        if self.lower is not None:
            lower = parse_number(self.lower)
            if value < lower or (self.lower_open and value == lower):
                raise ParameterError(where)
        if self.upper is not None:
            upper = parse_number(self.upper)
            if value > upper or (self.upper_open and value == upper):
                raise ParameterError(where)
        if any(sympy.simplify(value - parse_number(x)) == 0 for x in self.excluded):
            raise ParameterError(where)
        # the Monte-Carlo runs in float64, and a size is a count torch must index
        try:
            as_double = float(value)
        except OverflowError:   # an exact integer beyond float64's range
            as_double = math.inf
        if not math.isfinite(as_double) or (value != 0 and as_double == 0):
            raise ParameterError(f"{self.name} = {shown} is beyond the range of float64, in which the checks run")
        if self.integer and abs(value) > 2**53:
            raise ParameterError(f"{self.name} = {shown} is beyond the integers float64 holds exactly (2^53)")
        return value

    def parse(self, text: str) -> sympy.Expr:
        try:
            value = parse_number(text)
        except ExpressionError as error:
            raise ParameterError(f"{self.name}: {error}") from None
        return self.validate(value)


@dataclass(frozen=True)
class Derivation:
    """One thing sympy derives about a statement, and whether it came out as claimed."""

    claim: str                 # what is being derived, in words
    result: Any                # the sympy object obtained
    holds: bool                # did it come out as the paper says?


@dataclass(frozen=True)
class Symbolic:
    name: str                  # the quantity, e.g. "E_D R_sc"
    statement: Any             # sympy expression, equation or Piecewise
    derivations: tuple[Derivation, ...] = ()


@dataclass
class Outcome:
    """What a Monte-Carlo check found.

    ``mean``/``se``/``trials`` are the estimate that is compared with
    ``reference`` (its z-score is ``z``); ``sizes`` and ``extra`` record how it
    was obtained; ``detail`` is the one-line reason for the verdict.
    """

    verdict: str
    detail: str
    mean: float | None = None
    se: float | None = None
    trials: int | None = None
    reference: float | None = None
    z: float | None = None
    sizes: dict = field(default_factory=dict)
    extra: dict = field(default_factory=dict)
    # the claim's error with its interval at the run's false-alarm level (engine.verdict.effect_size):
    # {"estimate", "low", "high", "unit"}; None where the engine derives it from mean, se and reference
    effect: dict | None = None
    # a finding's corrected statement as tested on the same draws (engine.verdict.Judge.corrected), if any
    corrected: dict | None = None
    # the error its trainers or integrators reached against what the verdict resolves (engine.verdict.Judge.converged):
    # {"reached", "resolvable", "what"}; None for a check that neither trains nor integrates
    convergence: dict | None = None

    def __post_init__(self):
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {VERDICTS}, got {self.verdict!r}")
        if (self.mean is None) != (self.se is None):   # every reported estimate carries its error bar
            raise ValueError("an Outcome's mean and se are given together or not at all")


@dataclass
class Run:
    """How checks are run: tier, trials, seed, device, precision and a progress hook."""

    tier: str = "default"
    trials: int | None = None
    seed: int = 0
    device: Any = "cpu"
    dps: int = 30
    progress: Callable[[str], None] = lambda message: None
    trends: bool = True   # also show how a limit is approached (e.g. at larger alpha); off for grids
    data: Distribution = GAUSSIAN   # the law of the design entries, for claims that sample X (--data)
    dtype: str = "float64"          # --dtype; only claims declared float32-safe honour "float32"
    family: int = 1                 # points in this run: each tests at its rate / family (Bonferroni)

    def alarm(self, rate: float) -> float:
        """A check's false-alarm budget in this run: ``rate`` split over the run's points, so that a run
        of many points (``all``, a grid, the universality table) still alarms with probability <= rate."""
        return rate / self.family

    def dtype_for(self, theorem: "Theorem"):
        """The torch dtype the claim's check computes in: float32 only if asked for and the claim is
        declared float32-safe (``Theorem.float32``); float64 otherwise (see docs/trust.md's dtype policy)."""
        import torch
        return torch.float32 if self.dtype == "float32" and theorem.float32 else torch.float64

    def trials_for(self, theorem: "Theorem") -> int:
        return self.trials if self.trials is not None else theorem.trials[self.tier]

    def budget(self, theorem: "Theorem", name: str):
        """The claim's declared budget ``name`` (a size, a step count, a tolerance) at this run's tier."""
        return theorem.budget[name][self.tier]

    def rng(self, theorem: "Theorem", params: Mapping[str, Any], salt: str = ""):
        """The random stream of one check at one point: a torch generator on the run's device, seeded
        from the run seed, the claim and its parameters (``seed_for``), never from the run order."""
        from simulate.device import generator
        return generator(self.seed_for(theorem.id, params, salt), self.device)

    def judge(self, theorem: "Theorem"):
        """A fresh :class:`engine.verdict.Judge` for one check at one point: the claim's false-alarm
        rate, split over this run's points."""
        from engine.verdict import Judge
        return Judge(theorem.false_alarm, self.family)

    def certifier(self, theorem: "Theorem"):
        """A fresh :class:`engine.certify.Certifier` for one certificate at one point (``--certify``): the claim's
        certified comparisons at this run's precision, decided in one place."""
        from engine.certify import Certifier
        return Certifier(theorem, self.dps)

    def seed_for(self, theorem_id: str, params: Mapping[str, Any], salt: str = "") -> int:
        """A seed derived from the run seed, the claim and its parameters (not from run order),
        so that ``verify.py ID`` reproduces the numbers of ``verify.py all``."""
        key = f"{self.seed}|{theorem_id}|{sorted((k, str(v)) for k, v in params.items())}|{salt}"
        return zlib.crc32(key.encode()) + (self.seed << 32)


@dataclass(frozen=True)
class Finding:
    """A recorded refutation: the region of the claim's parameters where a faithful simulation refutes the
    paper's statement, why, the case that established it, and what holds there instead where it is known.

    ``region`` is a condition over the claim's parameters in the safe grammar of
    :func:`numerics.expr.parse_condition` (``"sigma > 0 and gamma < 1"``, ``"delta >= 2"``); ``why`` is
    the one-line finding; ``at`` is the evidence point, a case that ``verify.py all`` runs (it must lie in
    the region at every tier).

    ``corrected`` names the corrected statement.  The claim's check tests it at every point, on the
    draws it tests the paper's formula on, and tells its Judge what it predicts for the row's quantity
    (``judge.corrected``); inside the region the paper's formula is then expected to fail where this run
    can resolve the difference and either verdict is accepted where it cannot
    (``engine.verdict.accepted_verdicts``).  Without a corrected statement the region's edge is sharp:
    ``verdict`` is expected everywhere inside it, the recorded verdict everywhere outside.

    ``fair`` records a power limit without a formula to derive it from: further verdicts that are fair draws
    inside the region because the check's tests, at the tiers' sizes, do not resolve the effect there (the
    why says how far, with the measured power).  Such a finding records what the check cannot settle, not a
    refutation, and may have no evidence point (``at=None``): ``all`` has nothing to settle there.
    """

    region: str
    why: str
    at: Mapping[str, str] | None = field(default_factory=dict)
    corrected: str = ""
    verdict: str = "disagree"
    fair: tuple[str, ...] = ()

    def condition(self, names) -> Condition:
        return parse_condition(self.region, names)

    @property
    def verdicts(self) -> str:
        """What the record expects inside the region: ``verdict``, or 'VERDICT or FAIR ...' where other draws are fair."""
        return " or ".join((self.verdict, *self.fair))


@dataclass(frozen=True)
class Case:
    """A parameter point that ``verify.py all`` runs (what is expected there follows from the claim's
    findings), with the verdicts recorded under other design laws where they differ."""

    params: Mapping[str, str]
    # design law (str of a Distribution) -> (verdict, one-line finding[, departure]) where the check under that
    # --data law is recorded differently from the Gaussian (a finite-size non-universality, an assumption broken).
    # departure: what the law does to the row's quantity, in the row's effect unit (relative; absolute where the
    # claimed value is 0), a number or a function of the resolved parameters, derived where the law's effect is
    # known: the recorded verdict is then expected where the run resolves it, and agree is fair where it cannot
    # (engine.verdict.law_verdicts, as for a finding's corrected statement)
    laws: Mapping[str, tuple] = field(default_factory=dict)
    # tier -> draws at this case where it needs more than the claim's (a sensitive case: small n, where a
    # finite-size term is large enough that an off-by-one in it is detected); --trials overrides it
    trials: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Control:
    """A negative control: the claim with some formulas deliberately wrong (``formulas``), run at the quick
    tier at ``params`` (``trials`` overrides the tier's) under the design law ``data``, must get ``verdict``
    from its check, and, where ``corrected`` names one, that verdict for a finding's corrected statement too (a
    wrong corrected statement must fail on the draws it is tested on).  A check that cannot fail is a defect; the
    registry-driven test runs every claim's controls."""

    name: str
    formulas: Mapping[str, Callable]
    params: Mapping[str, str] = field(default_factory=dict)
    why: str = ""
    trials: int | None = None
    verdict: str = "disagree"
    data: str = "gaussian"     # the design law it runs under (--data): a law-specific record has its own controls
    corrected: str = ""


@dataclass(frozen=True)
class Perturbation:
    """How the power of a claim's check is measured (scripts/power.py): ``formula`` made wrong by a size delta.

    kind: "up" (value x (1 + delta)), "down" (value x (1 - delta): bounds), "rotate" (a claimed direction
    turned by the angle delta), "power" (value ** (1 + delta)), "n/a" (no perturbation; ``reason`` says why).
    ``cases``: indices into the claim's ``cases`` (recorded refutations are never used: a claim that already
    disagrees has no power to measure).  ``analytic``: the number of comparisons of the single z-test the
    verdict is, when it is one (None: empirical only).  ``primary``: the entry ``show`` reports first."""

    formula: str
    kind: str
    reason: str
    cases: tuple[int, ...] = (0,)
    primary: bool = True
    analytic: int | None = None
    max_delta: float | None = None


@dataclass(frozen=True)
class Point:
    """A resolved parameter point with the verdict recorded for it (per design law where it differs)."""

    params: dict
    expected: str
    finding: str
    laws: Mapping[str, tuple] = field(default_factory=dict)
    corrected: str = ""       # the corrected statement of the finding whose region holds the point, if it has one
    departure: float | None = None   # in a runner's point: the run law's recorded departure (Case.laws), if any
    trials: Mapping[str, int] = field(default_factory=dict)   # a case's own draws per tier (Case.trials)

    def recorded(self, law: str) -> tuple[str, str, str]:
        """(verdict, finding, corrected statement) recorded for this point when its design entries follow
        ``law`` (a law's own record has no corrected statement)."""
        return (*self.laws[law][:2], "") if law in self.laws else (self.expected, self.finding, self.corrected)

    def departure_for(self, law: str) -> float | None:
        """The departure recorded for ``law`` (Case.laws) at this point, or None."""
        record = self.laws.get(law, ())
        if len(record) < 3:
            return None
        return float(record[2](self.params) if callable(record[2]) else record[2])


GUARD_DIGITS = 10             # theory values are computed with 10 extra digits, then rounded
REFERENCE_EXTRA_DIGITS = 30   # ... and re-checked at dps + min(dps, 30) digits


@dataclass(frozen=True)
class TheoryCheck:
    """A theory value with what is known of its accuracy (``Theorem.theory_checked``).

    ``digits``: how many digits the value at ``dps`` shares with the same evaluator at
    ``reference_dps`` (``inf``: all); ``conditioning``: its relative condition number w.r.t.
    the claim's real parameters (None when the value is not a real number); ``problem``:
    why a part of the check could not be done (it is reported, never dropped).
    """

    value: Any
    dps: int
    reference_dps: int
    digits: float | None
    conditioning: Conditioning | None = None
    problem: str | None = None

    @property
    def confirmed_digits(self) -> int | None:
        """How many of the ``dps`` printed digits the higher precision confirms."""
        if self.digits is None:
            return None
        return self.dps if self.digits >= self.dps else int(self.digits)

    def warning(self) -> str | None:
        """One short line when the printed digits do not all hold or float64 would lose most of its digits."""
        notes = []
        if self.confirmed_digits is not None and self.confirmed_digits < self.dps:
            notes.append(f"only {self.confirmed_digits} of {self.dps} digits hold at {self.reference_dps}")
        if self.problem:
            notes.append(self.problem)
        # an exact 0 (the same at both precisions, e.g. from a branch) is printed exactly: its infinite
        # relative condition number says nothing about the digits shown, so it is in theory_cond only
        exact_zero = self.value == 0 and self.digits == math.inf
        if self.conditioning is not None and self.conditioning.warning() and not exact_zero:
            notes.append(self.conditioning.warning())
        return "; ".join(notes) or None


@dataclass(frozen=True)
class Theorem:
    """One checkable claim of a paper.  See the module docstring for the three routes."""

    id: str
    title: str
    source: str                               # paper + theorem/equation number
    statement: str                            # the claim in LaTeX, as the paper states it
    quantity: str                             # what the theory value and the estimate measure
    assumptions: tuple[str, ...]
    parameters: tuple[Parameter, ...]
    symbolic: Callable[[], Symbolic]
    evaluate: Callable[[Mapping[str, sympy.Expr], int], Any]
    check: Callable[["Theorem", Mapping[str, sympy.Expr], Run], Outcome]
    formulas: Mapping[str, Callable]
    trials: Mapping[str, int]                 # independent trials per tier
    verdict_rule: str                         # the stated test behind the verdict
    false_alarm: float                        # its design false-alarm probability
    constraints: Callable[[Mapping[str, sympy.Expr]], str | None] = lambda params: None
    cases: tuple[Case | Mapping[str, str], ...] = ({},)  # parameter points that `verify.py all` runs
    findings: tuple[Finding, ...] = ()        # where the checker refutes the claim (the regions), and why
    samples_design: bool = False              # the check samples a design X, whose entries' law --data chooses
    # sizes, step counts and tolerances per tier beyond ``trials``: {name: {tier: value}} (Run.budget; `show` prints them)
    budget: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    negative_controls: tuple[Control, ...] = ()   # wrong formulas the check must reject (tests/test_negative_controls.py)
    power: tuple[Perturbation, ...] = ()          # how its power is measured (scripts/power.py -> engine/power.json)
    method: str = ""                              # how the check works, in a sentence or two (docs/claims.md)
    float32: bool = False                     # its verdict survives float32 arithmetic (--dtype float32); else float64
    # --certify: certify(theorem, params, run) encloses both sides of the statement at the point rigorously and returns
    # run.certifier(theorem).outcome(...) (engine/certify.py); None: the claim is about sampling or training
    certify: Callable[["Theorem", Mapping[str, sympy.Expr], Run], dict] | None = None
    certify_method: str = ""                  # how it is certified, in a sentence (`show`, the certificate)
    # what its proof assumes about the rows of X, words of INPUT_ASSUMPTIONS (`show` prints them; `verify.py stress`
    # runs the claim under the law that breaks each)
    input_assumptions: tuple[str, ...] = ()
    # where the statement is a limit (alpha -> 0, t -> oo, n, d -> oo, m -> oo, kappa -> 0, L -> oo): the order of
    # the limits, or the joint path, that the verdict is about, in a sentence (`show`, the JSON row, docs/claims.md);
    # a paper's theorem and its check can take different orders, and a verdict about one says nothing about the other
    limits: str = ""

    def __post_init__(self):
        if isinstance(self.assumptions, str):
            raise ValueError(f"{self.id}: assumptions are a tuple of strings, not one string")
        for finding in self.findings:
            self._validate_finding(finding)
        if set(self.trials) != set(TIERS):
            raise ValueError(f"{self.id}: trials must be given for each tier {TIERS}")
        for name, per_tier in self.budget.items():
            if set(per_tier) != set(TIERS):
                raise ValueError(f"{self.id}: budget {name!r} must be given for each tier {TIERS}")
        for control in self.negative_controls:
            unknown = set(control.formulas) - set(self.formulas)
            if unknown or control.verdict not in VERDICTS or control.corrected not in ("", *VERDICTS):
                raise ValueError(f"{self.id}: negative control {control.name!r} replaces unknown formulas {unknown} "
                                 f"or expects a verdict not in {VERDICTS}")
            if control.data != "gaussian" and not self.samples_design:
                raise ValueError(f"{self.id}: negative control {control.name!r} names a design law, but the claim "
                                 f"samples no design")
            if str(parse_data(control.data)) != control.data:   # as rows and Case.laws name it
                raise ValueError(f"{self.id}: negative control {control.name!r}: write its law as "
                                 f"{str(parse_data(control.data))!r}")
        unknown = [word for word in self.input_assumptions if word not in INPUT_ASSUMPTIONS]
        if isinstance(self.input_assumptions, str) or unknown or len(set(self.input_assumptions)) != len(
                self.input_assumptions) or (self.input_assumptions and not self.samples_design):
            raise ValueError(f"{self.id}: input_assumptions are distinct words of INPUT_ASSUMPTIONS "
                             f"({', '.join(INPUT_ASSUMPTIONS)}) of a claim that samples a design; got "
                             f"{self.input_assumptions!r}")
        for case in self.cases:
            for law, record in (case.laws.items() if isinstance(case, Case) else ()):
                verdict, finding = record[:2]
                if verdict not in VERDICTS or not finding or not self.samples_design or len(record) not in (2, 3):
                    raise ValueError(f"{self.id}: the record for law {law!r} needs a verdict, a finding (and may give "
                                     f"a departure) of a claim that samples a design")

    def _validate_finding(self, finding: Finding) -> None:
        """A region in the safe grammar over declared parameters, holding its own evidence point at every tier."""
        if finding.verdict not in VERDICTS or finding.verdict == "agree" or not finding.why:
            raise ValueError(f"{self.id}: a finding needs a one-line why and a verdict other than agree "
                             f"(got {finding.verdict!r})")
        if any(v not in VERDICTS for v in finding.fair) or finding.verdict in finding.fair \
                or len(set(finding.fair)) != len(finding.fair):
            raise ValueError(f"{self.id}: a finding's fair verdicts are other verdicts than its own (got {finding.fair!r})")
        if finding.at is None and not finding.fair:
            raise ValueError(f"{self.id}: only a finding that records a power limit (fair verdicts) may go without "
                             f"an evidence point")
        try:
            finding.condition([p.name for p in self.parameters])
        except ExpressionError as error:
            raise ValueError(f"{self.id}: finding region {finding.region!r}: {error}") from None
        for tier in TIERS if finding.at is not None else ():
            if self.finding_at(self.resolve(finding.at, tier)) is not finding:
                raise ValueError(f"{self.id}: the evidence point {dict(finding.at)} of the finding {finding.region!r} "
                                 f"lies outside its region (or inside an earlier one) at the {tier} tier")

    def __repr__(self) -> str:
        return f"Theorem(id={self.id!r}, source={self.source!r})"

    def finding_at(self, params: Mapping[str, Any]) -> Finding | None:
        """The recorded finding whose region holds ``params`` (the first, where regions overlap), else None."""
        names = [p.name for p in self.parameters]
        return next((f for f in self.findings if f.condition(names).holds(params)), None)

    def recorded(self, params: Mapping[str, Any]) -> tuple[str, str, str]:
        """(verdict, finding, corrected statement) that the record predicts at ``params``: ("agree", "", "")
        outside every finding's region."""
        finding = self.finding_at(params)
        return ("agree", "", "") if finding is None else (finding.verdicts, finding.why, finding.corrected)

    @property
    def record(self) -> str:
        """The recorded verdict in a few words: 'agree', or where the claim is refuted."""
        if not self.findings:
            return "agree"
        return "agree; " + "; ".join(f"{f.verdicts} where {f.region}" for f in self.findings)

    def _repr_latex_(self) -> str:
        """Jupyter shows a claim as its statement."""
        return f"$\\displaystyle {self.statement}$"

    def _repr_html_(self) -> str:
        """Jupyter's rich view: the statement (MathJax), source, parameters and recorded verdict."""
        from html import escape
        rows = "".join(f"<tr><td><code>{escape(p.name)}</code></td><td>{escape(p.description)}</td>"
                       f"<td>{escape(p.domain_text())}</td></tr>" for p in self.parameters)
        verdict = escape(self.record)
        return (f"<div><b>{escape(self.id)}</b>: {escape(self.title)}<br><i>{escape(self.source)}</i>"
                f"<p>$${escape(self.statement)}$$</p>"
                f"<table><tr><th>parameter</th><th>meaning</th><th>domain</th></tr>{rows}</table>"
                f"<p>verdict rule: {escape(self.verdict_rule)}<br>recorded verdict: {verdict}</p></div>")

    def parameter(self, name: str) -> Parameter:
        for p in self.parameters:
            if p.name == name:
                return p
        known = ", ".join(p.name for p in self.parameters)
        raise ParameterError(f"{self.id} has no parameter {name!r} (it has: {known})")

    def resolve(self, overrides: Mapping[str, str], tier: str = "default") -> dict[str, sympy.Expr]:
        """Defaults for ``tier`` updated with parsed, validated ``overrides``."""
        params = {p.name: p.default_for(tier) for p in self.parameters}
        for name, text in overrides.items():
            params[name] = self.parameter(name).parse(text)
        problem = self.constraints(params)
        if problem:
            raise ParameterError(f"{self.id}: {problem}")
        return params

    @property
    def all_cases(self) -> tuple[Case, ...]:
        """The points ``verify.py all`` runs: the declared cases, then each finding's evidence point."""
        cases = [case if isinstance(case, Case) else Case(case) for case in self.cases]
        return tuple(cases + [Case(f.at) for f in self.findings if f.at is not None])

    def point(self, params: dict, laws: Mapping[str, tuple[str, str]] | None = None,
              trials: Mapping[str, int] | None = None) -> Point:
        """A resolved point with what the record predicts there (its findings' regions)."""
        expected, finding, corrected = self.recorded(params)
        return Point(params, expected, finding, laws or {}, corrected, trials=trials or {})

    def points(self, overrides: Mapping[str, str], tier: str = "default", skipped: list | None = None) -> list[Point]:
        """The points to run: each case with ``overrides`` on top, without repeats, each expected to behave
        as the record predicts there (so moving a parameter inside a finding's region is no change).  The
        verdicts recorded per design law, and a case's own draws, stay with a case's own parameters.

        A case that pins other parameters (a sensitive case's small sizes) may not combine with ``overrides``
        valid on their own (finetune's d = 13 with gamma = 1/2): given a ``skipped`` list, such a case is left
        out and said there, as a grid's out-of-domain points are; overrides invalid at the defaults raise."""
        points, refused = [], None
        for case in self.all_cases:
            try:
                params = self.resolve({**case.params, **overrides}, tier)
            except ParameterError as error:
                if skipped is None or not overrides or not set(case.params) - set(overrides):
                    raise
                self.resolve(dict(overrides), tier)     # the overrides themselves out of the domain: bad input
                refused = refused or error
                skipped.append(f"skipped {self.id}'s case " + ", ".join(f"{k}={v}" for k, v in case.params.items())
                               + f" with these parameters: {str(error).removeprefix(f'{self.id}: ')}")
                continue
            own = params == self.resolve({**case.params}, tier)
            if all(params != point.params for point in points):
                points.append(self.point(params, case.laws if own else {}, case.trials if own else {}))
        if not points and refused is not None:
            raise refused                               # no case combines with them: nothing would run
        return points

    def theory(self, params: Mapping[str, sympy.Expr], dps: int):
        """The claimed value at ``dps`` digits, computed with guard digits and rounded."""
        return self._rounded(self._guarded(params, dps), dps)

    def _guarded(self, params: Mapping[str, sympy.Expr], dps: int):
        """The evaluator's value with GUARD_DIGITS extra working digits, not yet rounded to ``dps``."""
        with mp.workdps(dps + GUARD_DIGITS):
            return self.evaluate(params, dps + GUARD_DIGITS)

    @staticmethod
    def _rounded(value, dps: int):
        with mp.workdps(dps):
            return +value if isinstance(value, mp.mpf) else value

    def theory_checked(self, params: Mapping[str, sympy.Expr], dps: int) -> TheoryCheck:
        """The claimed value at ``dps`` digits, re-evaluated at ``2 dps`` (``dps + 30`` above 30 digits)
        to count the digits that hold, with its conditioning for float64 when it is a real number.

        The re-evaluation sees errors that shrink with the working precision (cancellation, missing
        guard digits), not errors that do not depend on it (see numerics.conditioning).  Above 30
        digits ``dps + 30`` is as sound as ``2 dps``: the value at ``dps`` is computed with 10 guard
        digits, so a loss it cannot absorb leaves it with fewer than ``dps`` correct digits, while the
        reference keeps 30 more, and they disagree; a quadrature at ``2 dps`` costs 10-20 times the
        one at ``dps`` there (arccos-kernel: 22 s against 1 s at dps = 100).  An evaluator that fails
        at the higher precision or while being differentiated is reported in ``problem``.
        """
        guarded = self._guarded(params, dps)
        value = self._rounded(guarded, dps)
        reference_dps = dps + min(dps, REFERENCE_EXTRA_DIGITS)
        try:
            reference = self.theory(params, reference_dps)
        except Exception as error:   # noqa: BLE001 -- any failure is reported on the row, not raised mid-run
            return TheoryCheck(value, dps, reference_dps, None, problem=f"not re-checked at {reference_dps} digits "
                                                                        f"({type(error).__name__})")
        digits = agreeing_digits(value, reference)
        if not is_real_number(value):
            return TheoryCheck(value, dps, reference_dps, digits)
        try:   # the guarded value is the centre of the difference quotients when it has their precision
            conditioning = self.conditioning(params, guarded if dps + GUARD_DIGITS == CONDITION_DIGITS else None)
        except Exception as error:   # noqa: BLE001
            return TheoryCheck(value, dps, reference_dps, digits, problem=f"conditioning not found ({type(error).__name__})")
        return TheoryCheck(value, dps, reference_dps, digits, conditioning)

    def conditioning(self, params: Mapping[str, sympy.Expr], center: Any = None) -> Conditioning:
        """Relative condition number of the theory value w.r.t. the real (non-integer) parameters.

        Integers are exact in float64 and are left out.  A perturbed point outside the declared
        domain or the claim's constraints counts as undefined on that side, so a domain edge is
        differentiated one-sidedly.  ``center``: the value at ``params`` at CONDITION_DIGITS digits, if known.
        """
        names = [p.name for p in self.parameters if not p.integer]

        def value_at(point):
            try:
                for name in names:
                    if point[name] != params[name]:
                        self.parameter(name).validate(point[name])
            except ParameterError:
                return None
            if self.constraints(point):
                return None
            return self.evaluate(point, mp.mp.dps)

        return relative_condition(value_at, params, names, center=center)

    def float64_theory(self, params: Mapping[str, sympy.Expr]) -> float | None:
        """The claimed value as float64 computes it, or None when it is not a real number.

        The evaluator runs at mpmath's 53-bit precision (its ``mpf`` inputs are then the
        float64 roundings of the parameters): mpmath rounds each +, -, *, /, sqrt to nearest
        at 53 bits as IEEE binary64 does, and its elementary functions are correctly rounded
        where libm's are within an ulp, so closed forms get float64's value (tests/test_precision.py
        checks it bit for bit against the Python-float formula).  Routines that add guard bits of
        their own (quadrature, root finders) come out *more* accurate than a float64 code would,
        so for them this is "float64 inputs", not "a float64 library".  Unlike float64 there is
        no overflow or underflow.  This is the route the Monte-Carlo checks take when they call
        a formula with Python floats.
        """
        with mp.workprec(53):
            value = self.evaluate(params, 15)
            return float(value) if is_real_number(value) else None


def parse_data(text: str) -> Distribution:
    """``NAME`` or ``NAME:VALUE`` (``sparse:1/10``, ``student-t:6``; the value parsed without eval)
    as a design distribution, or a one-line ParameterError."""
    name, _, value = text.strip().partition(":")
    if name not in DISTRIBUTIONS:
        raise ParameterError(f"--data {text}: unknown distribution (choose {', '.join(DISTRIBUTIONS)}; "
                             f"student-t:NU, sparse:P, gamma:K, shifted:MU, zero-rows:Q and anisotropic:A take a "
                             f"parameter)")
    try:
        parameter = float(parse_number(value)) if value else None
        return Distribution(name, parameter)
    except (ExpressionError, ValueError, TypeError) as error:
        raise ParameterError(f"--data {text}: {error}") from None


def mpf(value: sympy.Expr) -> mp.mpf:
    """A parameter value as an mpmath number at the current working precision."""
    return mp.mpf(sympy.N(value, mp.mp.dps + 5)) if not isinstance(value, mp.mpf) else value


def as_float(params: Mapping[str, sympy.Expr]) -> dict[str, float]:
    """Parameter values as Python numbers (ints stay ints), for torch and for JSON."""
    out = {}
    for name, value in params.items():   # an int beyond int64 (sigma = 1e300 is exact) would overflow torch's scalars
        # sympy says is_integer as a property; a float's is_integer is a method (truthy), mpmath's mpf has none
        whole = (value.is_integer if isinstance(value, sympy.Basic) else isinstance(value, int)) and abs(value) < 2**63
        out[name] = int(value) if whole else float(value)
    return out


def finite(x: float) -> bool:
    return x is not None and math.isfinite(x)
