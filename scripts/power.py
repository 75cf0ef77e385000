#!/usr/bin/env python
"""Power of every check: the smallest relative error in a claimed value that it detects with P >= 0.9.

A check reads the paper's formulas from ``theorem.formulas``; a claim with one of them multiplied by
(1 + delta) is a wrong claim, and the power at delta is P(verdict == "disagree") over independent run
seeds.  Each claim's ``power`` (``Theorem.power``) says which formula carries the claimed value, in which
direction it is perturbed (for an upper bound only a smaller bound can be false) and why; a claim
for which a relative perturbation makes no sense gets another one (a rotation of a claimed
direction, a power of a penalty whose log-slopes are claimed) or is marked n/a with the reason.

How the power is estimated.

* Per seed, the verdict is a function of delta (the random draws come from the run seed, the claim
  and its parameters, never from the formulas), and it is monotone in delta wherever it was looked
  at: so each seed has a threshold t_s, the smallest delta it detects, found by bisection in log
  delta (to 3 %).  The power at delta is then #{s : t_s <= delta} / seeds, and the minimal detectable
  delta is the k-th smallest threshold, k = ceil(0.9 seeds): 18 of 20 seeds detect it.  At that delta
  18/20 gives a one-sided 95 % Clopper-Pearson lower bound of 0.717 on the detection probability
  (and a delta whose true power is below 0.7 passes the rule with probability <= 0.035).
* Each perturbed run of a seed re-runs the whole check with the perturbed formula, but the
  simulation is replayed: every call of a ``simulate.*`` function (and of a few formula-free helpers
  of the claim modules) is memoised under a fingerprint of all its arguments -- tensor contents,
  generator states, closures -- and replays its result, the generator states after it, and its
  in-place effects on list and tensor arguments.  A call whose arguments depend on the perturbed
  formula has a new fingerprint and runs for real.  So a replayed run computes exactly what a fresh
  run computes, at the cost of the verdict logic; ``--verify-replay`` checks this against fresh runs.
* Where the verdict is one two-sided z-test of an estimate (standard error se) against the claimed
  value v at critical value z_c, the analytic minimal delta solves
  Phi(|delta v|/se - z_c) + Phi(-|delta v|/se - z_c) = 0.9 (about (z_c + 1.2816) se / |v|) from the
  seed-0 run; it is confirmed by running the perturbed check at that delta on every seed.  Where the seeds
  detect far smaller errors (below half the analytic delta: another part of the verdict, such as a limit link,
  holds the formula tighter), or fewer seeds than the rule requires detect the analytic delta, the empirical
  delta is reported instead.
* Default tier: measured the same way for the claims of DEFAULT_SEEDS (affordable there); every other
  default entry is derived from the quick tier without a default run (cost): a per-draw tolerance keeps
  its value ("tolerance"), anything else is scaled by sqrt(quick / default trials) ("scaled", which
  ignores sizes that also grow between the tiers; where both exist it was never below the measured value
  by more than the bisection step).

* The column "off-by-one in n detected" (``--off-by-one``, stored beside the entries): for a claim that
  declares a negative control whose id ends with "-off-by-one" (an exact finite-size formula off by one in n,
  at a sensitive case with its own draws), the probability that the control disagrees in a whole
  ``all --quick`` run (critical value at false_alarm / the run's points): analytic from seed 0's z-test,
  Phi(|effect|/se - z_c) + Phi(-|effect|/se - z_c), where the control moves that test's reference, else the
  share of the seeds whose run of the control disagrees.  "yes" when one control reaches 0.9; "no" otherwise,
  and for a claim of FINITE_SIZE without such a control; "n/a" for the other claims.  Seconds per control.

    nice -n 19 python scripts/power.py                              # both tiers, every claim -> engine/power.json
    python scripts/power.py --off-by-one --threads 1                # only the off-by-one column, every claim
    nice -n 19 python scripts/power.py --tier quick --ids double-descent --merge
    python scripts/power.py --readme                                # the README table from engine/power.json
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import datetime
import functools
import hashlib
import inspect
import json
import math
import os
import sys
import time
import types
from fractions import Fraction
from statistics import NormalDist

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import mpmath as mp  # noqa: E402
import sympy as sp  # noqa: E402
import torch  # noqa: E402

OUT = os.path.join(ROOT, "engine", "power.json")
TARGET = 0.9                 # the detection probability the minimal delta is defined by
SEEDS = 20                   # independent run seeds per entry and tier
FLOOR = 1e-13                # the smallest delta looked at (below float64 rounding of most claims)
PRECISION = 1.03             # per-seed thresholds are bracketed to this ratio
Z90 = NormalDist().inv_cdf(TARGET)


# ---------------------------------------------------------------------------------------------------
# the perturbations: which formula carries the claimed value, and why (data)
# ---------------------------------------------------------------------------------------------------

# Each claim declares how its power is measured: ``Theorem.power``, a tuple of theorems.core.Perturbation
# (which formula carries the claimed value, how it is made wrong, and why).
from numerics.binomial_bounds import binomial_upper_tail  # noqa: E402
from theorems.core import Perturbation  # noqa: E402

UP, DOWN = "up", "down"


NOT_MEMOISED = {"per_draw_values", "eq5_compare", "eq5_tolerance", "apply", "generator", "estimate", "paired_estimate", "z_critical", "z_score", "weighted_poly_fit", "chunks", "batches",
                "empirical", "population", "population_loss", "empirical_loss", "spiked_spectrum"}


# ---------------------------------------------------------------------------------------------------
# replaying the simulation
# ---------------------------------------------------------------------------------------------------

def _feed(h, x, path):
    """Hash everything a call's result can depend on: values, tensor contents, generator states, closures."""
    if isinstance(x, torch.Tensor):
        t = x.detach()
        h.update(f"T{t.dtype}{tuple(t.shape)}{t.device}".encode())
        h.update(t.cpu().contiguous().reshape(-1).numpy().tobytes() if t.dtype != torch.bfloat16 else repr(t.tolist()).encode())
        return
    if isinstance(x, torch.Generator):
        h.update(b"G" + x.get_state().numpy().tobytes())
        return
    if x is None or isinstance(x, (bool, int, float, complex, str, bytes, Fraction, mp.mpf, mp.mpc, torch.device, torch.dtype)):
        h.update(f"{type(x).__name__}:{x!r}".encode())
        return
    if isinstance(x, sp.Basic):
        h.update(b"S" + sp.srepr(x).encode())
        return
    if id(x) in path:
        h.update(b"<cycle>")
        return
    path = path | {id(x)}
    if isinstance(x, (list, tuple)):
        h.update(f"{type(x).__name__}[{len(x)}]".encode())
        for item in x:
            _feed(h, item, path)
        return
    if isinstance(x, (dict, types.MappingProxyType)):
        h.update(f"dict[{len(x)}]".encode())
        for key in sorted(x, key=repr):
            _feed(h, key, path)
            _feed(h, x[key], path)
        return
    if isinstance(x, (set, frozenset)):
        h.update(b"set")
        for item in sorted(x, key=repr):
            _feed(h, item, path)
        return
    if isinstance(x, types.FunctionType):
        # the code object lives as long as its module, so its id is a stable name; then what it closes over
        h.update(f"F{x.__module__}.{x.__qualname__}#{id(x.__code__)}".encode())
        _feed(h, x.__defaults__, path)
        _feed(h, x.__kwdefaults__, path)
        for cell in x.__closure__ or ():
            try:
                _feed(h, cell.cell_contents, path)
            except ValueError:          # an empty cell
                h.update(b"<empty>")
        return
    if isinstance(x, types.MethodType):
        _feed(h, x.__func__, path)
        _feed(h, x.__self__, path)
        return
    if isinstance(x, functools.partial):
        _feed(h, (x.func, x.args, x.keywords), path)
        return
    if isinstance(x, (types.BuiltinFunctionType, type, types.ModuleType)):
        h.update(f"B{getattr(x, '__module__', '')}.{getattr(x, '__qualname__', getattr(x, '__name__', ''))}".encode())
        return
    if hasattr(x, "__dict__") or hasattr(type(x), "__slots__"):
        h.update(f"O{type(x).__module__}.{type(x).__qualname__}".encode())
        state = dict(vars(x)) if hasattr(x, "__dict__") else {}
        for slot in getattr(type(x), "__slots__", ()):
            if hasattr(x, slot):
                state[slot] = getattr(x, slot)
        _feed(h, state, path)
        return
    text = repr(x)
    if " at 0x" in text:
        raise TypeError(f"cannot fingerprint {type(x)}")
    h.update(f"R{type(x).__qualname__}:{text}".encode())


def fingerprint(x) -> str:
    h = hashlib.blake2b(digest_size=20)
    _feed(h, x, frozenset())
    return h.hexdigest()


def _restore(target, value):
    """Put ``value`` (a recorded post-call state) into the caller's object ``target`` in place."""
    if isinstance(target, torch.Tensor):
        with torch.no_grad():
            target.copy_(value)
    elif isinstance(target, list):
        if len(target) == len(value):
            for i, (old, new) in enumerate(zip(target, value)):
                if isinstance(old, torch.Tensor) and isinstance(new, torch.Tensor) and old.shape == new.shape:
                    _restore(old, new)
                elif isinstance(old, (list, dict)) and type(old) is type(new):
                    _restore(old, new)
                else:
                    target[i] = copy.deepcopy(new)
        else:
            target[:] = copy.deepcopy(value)
    elif isinstance(target, dict):
        target.clear()
        target.update(copy.deepcopy(value))


class Replay:
    """Memoises simulation calls (see the module docstring).  ``store`` is per (case, seed)."""

    def __init__(self):
        self.store = {}
        self.enabled = False
        self.hits = self.misses = 0
        self.installed = []

    def wrap(self, fn):
        name = f"{fn.__module__}.{fn.__qualname__}"

        @functools.wraps(fn)
        def memoised(*args, **kwargs):
            if not self.enabled:
                return fn(*args, **kwargs)
            inputs = list(args) + [kwargs[k] for k in sorted(kwargs)]
            before = [fingerprint(a) for a in inputs]
            key = (name, fingerprint(sorted(kwargs)), tuple(before))
            if key in self.store:
                self.hits += 1
                result, gens, mutated = self.store[key]
                for index, state in gens.items():
                    inputs[index].set_state(state)
                for index, value in mutated.items():
                    _restore(inputs[index], value)
                return copy.deepcopy(result)
            self.misses += 1
            result = fn(*args, **kwargs)
            gens = {i: a.get_state() for i, a in enumerate(inputs) if isinstance(a, torch.Generator)}
            mutated = {i: copy.deepcopy(a) for i, a in enumerate(inputs)
                       if isinstance(a, (torch.Tensor, list, dict)) and fingerprint(a) != before[i]}
            self.store[key] = (copy.deepcopy(result), gens, mutated)
            return result

        memoised.__wrapped_by_power__ = fn
        return memoised

    def install(self):
        """Wrap every simulate.* function the claim modules call (the claims keep no procedures of their own)."""
        import theorems
        modules = {m: sys.modules[m] for m in sorted({t.check.__module__ for t in theorems.REGISTRY.values()})}
        targets = {}
        for mod in modules.values():
            for name, value in vars(mod).items():
                if not inspect.isfunction(value) or hasattr(value, "__wrapped_by_power__"):
                    continue
                if value.__module__.startswith("simulate.") and name not in NOT_MEMOISED:
                    targets[id(value)] = value
        wrappers = {key: self.wrap(fn) for key, fn in targets.items()}
        for mod in modules.values():
            for name, value in list(vars(mod).items()):
                if id(value) in wrappers and targets[id(value)] is value:
                    setattr(mod, name, wrappers[id(value)])
                    self.installed.append((mod, name, value))

    def uninstall(self):
        for mod, name, value in self.installed:
            setattr(mod, name, value)
        self.installed.clear()

    def clear(self):
        self.store.clear()


REPLAY = Replay()


# ---------------------------------------------------------------------------------------------------
# perturbed claims
# ---------------------------------------------------------------------------------------------------

def _scaled(value, factor):
    if isinstance(value, torch.Tensor):
        return value * factor
    if isinstance(value, (mp.mpf, mp.mpc)):
        return value * mp.mpf(factor)
    if isinstance(value, (tuple, list)):
        return type(value)(_scaled(v, factor) for v in value)
    if isinstance(value, (int, float, Fraction)):
        return float(value) * factor
    if isinstance(value, sp.Basic):
        return value * sp.Float(factor, 30)
    raise TypeError(f"cannot scale a {type(value).__name__}")


def _powered(value, exponent):
    if isinstance(value, torch.Tensor):
        return value.clamp(min=0) ** exponent
    if isinstance(value, (mp.mpf,)):
        return value ** mp.mpf(exponent) if value > 0 else value
    if isinstance(value, (int, float)):
        return float(value) ** exponent if value > 0 else float(value)
    raise TypeError(f"cannot raise a {type(value).__name__} to a power")


def _rotated(value, angle):
    """Turn each claimed direction (last axis) by ``angle`` towards a fixed orthogonal direction."""
    v = value
    unit = v / v.norm(dim=-1, keepdim=True)
    other = torch.roll(unit, 1, dims=-1)
    other = other - (other * unit).sum(-1, keepdim=True) * unit
    other = other / other.norm(dim=-1, keepdim=True)
    return v.norm(dim=-1, keepdim=True) * (math.cos(angle) * unit + math.sin(angle) * other)


def perturbed(theorem, spec: Perturbation, delta: float):
    """The claim with ``spec.formula`` perturbed by ``delta`` (delta = 0: the claim itself)."""
    if delta == 0:
        return theorem
    original = theorem.formulas[spec.formula]
    if spec.kind == UP:
        wrong = lambda *a, **k: _scaled(original(*a, **k), 1 + delta)
    elif spec.kind == DOWN:
        wrong = lambda *a, **k: _scaled(original(*a, **k), 1 - delta)
    elif spec.kind == "power":
        wrong = lambda *a, **k: _powered(original(*a, **k), 1 + delta)
    elif spec.kind == "rotate":
        wrong = lambda *a, **k: _rotated(original(*a, **k), delta)
    else:
        raise ValueError(spec.kind)
    return dataclasses.replace(theorem, formulas={**theorem.formulas, spec.formula: wrong})


def max_delta(spec: Perturbation) -> float:
    if spec.max_delta is not None:
        return spec.max_delta
    return {UP: 10.0, DOWN: 0.999}[spec.kind]


# ---------------------------------------------------------------------------------------------------
# statistics of the rule
# ---------------------------------------------------------------------------------------------------

def clopper_pearson_lower(k: int, n: int, confidence: float = 0.95) -> float:
    """One-sided lower confidence bound for a binomial proportion (k of n)."""
    if k == 0:
        return 0.0
    lo, hi = 0.0, 1.0
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if binomial_upper_tail(k, n, mid) < 1 - confidence else (lo, mid)
    return lo


def required(seeds: int) -> int:
    return math.ceil(TARGET * seeds - 1e-9)


def rule_text(seeds: int) -> str:
    k = required(seeds)
    return (f"the smallest delta detected by >= {k} of {seeds} seeds (per-seed thresholds, bisected to "
            f"{(PRECISION - 1) * 100:.0f} %): there a one-sided 95 % lower bound on the detection probability is "
            f"{clopper_pearson_lower(k, seeds):.3f}; a delta whose power is only 0.7 passes with probability "
            f"{binomial_upper_tail(k, seeds, 0.7):.3f}, one with power 0.9 with {binomial_upper_tail(k, seeds, 0.9):.2f}")


def analytic_delta(se: float, value: float, z_c: float) -> float:
    """delta with Phi(k - z_c) + Phi(-k - z_c) = TARGET, k = |delta value| / se."""
    phi = NormalDist().cdf
    lo, hi = 0.0, z_c + 10
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if phi(mid - z_c) + phi(-mid - z_c) < TARGET else (lo, mid)
    return hi * se / abs(value)


# ---------------------------------------------------------------------------------------------------
# measuring one entry
# ---------------------------------------------------------------------------------------------------

def _run(tier: str, seed: int):
    from theorems.core import Run
    return Run(tier=tier, seed=seed, device=torch.device("cpu"), dps=30, trends=False)


class Seed:
    """One seed of one case: the recorded (unperturbed) run, and perturbed runs replayed from it."""

    def __init__(self, theorem, params, tier, seed, log):
        self.theorem, self.params, self.tier, self.seed = theorem, params, tier, seed
        self.log = log
        self.evaluations = 0
        REPLAY.clear()
        REPLAY.enabled = True
        start, cpu = time.perf_counter(), time.process_time()
        self.base = theorem.check(theorem, params, _run(tier, seed))
        self.seconds, self.cpu = time.perf_counter() - start, time.process_time() - cpu

    def verdict(self, spec, delta):
        self.evaluations += 1
        wrong = perturbed(self.theorem, spec, delta)
        return wrong.check(wrong, self.params, _run(self.tier, self.seed)).verdict

    def detects(self, spec, delta) -> bool:
        return self.verdict(spec, delta) == "disagree"

    def threshold(self, spec, hint=None) -> float:
        """The smallest delta this seed detects (inf: none up to max_delta; 0: the claim itself disagrees).

        Bisected in log u, u = delta, or u = -ln(1 - delta) for a lowered bound (so that a bound off by
        a large factor 1/(1 - delta) is resolved as finely as a small delta)."""
        if self.base.verdict == "disagree":
            return 0.0
        to_u, to_delta = _size_maps(spec)
        detects = lambda u: self.detects(spec, to_delta(u))
        top = to_u(max_delta(spec))
        if not detects(top):
            return math.inf
        lo, hi = to_u(FLOOR), top
        if hint is not None and math.isfinite(hint) and hint > 0:
            a, b = max(lo, to_u(hint) / 4), min(top, to_u(hint) * 4)
            if a > lo and not detects(a):
                lo = a
            if b < top and detects(b):
                hi = b
        if detects(lo):
            return to_delta(lo)
        while hi / lo > PRECISION:
            mid = math.sqrt(lo * hi)
            lo, hi = (lo, mid) if detects(mid) else (mid, hi)
        return to_delta(hi)


def _size_maps(spec):
    if spec.kind == DOWN:
        return (lambda delta: -math.log1p(-delta)), (lambda u: -math.expm1(-u))
    return (lambda delta: delta), (lambda u: u)


CHECKPOINT = {"path": None, "records": {}}   # per-seed results, so that a stopped run resumes (see --out)


def _checkpoint_key(theorem, case_index, specs, tier, seed):
    return "|".join([theorem.id, tier, str(case_index), str(seed)] + [f"{s.formula}/{s.kind}/{max_delta(s)}" for s in specs])


def _analytic(theorem, spec, outcome):
    """The analytic minimal delta of a single two-sided z-test, from one run's outcome (None if not one)."""
    if not (spec.analytic and outcome["se"] and outcome["reference"]):
        return None
    from simulate.stats import z_critical
    z_c = z_critical(theorem.false_alarm, spec.analytic)
    return {"min_delta": analytic_delta(outcome["se"], outcome["reference"], z_c), "se": outcome["se"],
            "value": outcome["reference"], "z_critical": z_c, "detections": 0}


def _analytic_stands(empirical, analytic: dict, seeds: int) -> bool:
    """Whether the z-test's analytic delta is the one to report.  Not when the seeds detect far smaller errors
    (e.g. a limit link that holds the finite-size formula to 1e-6: the analytic delta understates the check),
    nor when fewer seeds than the rule requires detect the analytic delta itself (the normal approximation it
    rests on overstates the power there): then the empirical delta is reported."""
    far_below = empirical is not None and empirical < analytic["min_delta"] / 2
    return not far_below and analytic["detections"] >= required(seeds)


def _seed_record(theorem, params, specs, tier, seed, log, hints, analytic):
    """One seed: the recorded run, each perturbation's threshold, the monotonicity probes, the analytic delta."""
    s = Seed(theorem, params, tier, seed, log)
    outcome = {"mean": s.base.mean, "se": s.base.se, "reference": s.base.reference, "z": s.base.z,
               "verdict": s.base.verdict}
    record = {"seconds": s.seconds, "cpu": s.cpu, "outcome": outcome, "specs": []}
    for i, spec in enumerate(specs):
        if seed == 0 and i not in analytic:
            found = _analytic(theorem, spec, outcome)
            if found:
                analytic[i] = found
        before = s.evaluations
        t = s.threshold(spec, hints[i])
        mono = 0
        if 0 < t < math.inf:                   # monotone around the threshold? (the curve assumes it)
            to_u, to_delta = _size_maps(spec)
            probes = [(to_delta(to_u(t) / 1.5), False), (to_delta(to_u(t) * 1.5), True), (to_delta(to_u(t) * 10), True)]
            mono = sum(s.detects(spec, d) != expected for d, expected in probes if FLOOR <= d <= max_delta(spec))
        hit = s.detects(spec, analytic[i]["min_delta"]) if i in analytic else None
        record["specs"].append({"threshold": t if math.isfinite(t) else None, "monotone_violations": mono,
                                "analytic_hit": hit, "evaluations": s.evaluations - before,
                                "scale_key": _scale_key(theorem.id, spec, s.base)})
    REPLAY.clear()
    log(f"    seed {seed}: run {s.seconds:.1f} s wall, {s.cpu:.1f} s CPU; {s.evaluations} replays; thresholds "
        + ", ".join(f"{spec.formula}/{spec.kind}={_fmt(r['threshold'])}" for spec, r in zip(specs, record["specs"]))
        + f" (replay hits {REPLAY.hits}, misses {REPLAY.misses})")
    return record


def measure_case(theorem, case_index, specs, tier, seeds, log):
    """Every perturbation of ``specs`` on one case of a claim: per-seed thresholds over ``seeds`` seeds."""
    case = theorem.all_cases[case_index]
    case_params = dict(getattr(case, "params", case))
    params = theorem.resolve(case_params, tier)
    records, analytic = [], {}
    for seed in range(seeds):
        key = _checkpoint_key(theorem, case_index, specs, tier, seed)
        record = CHECKPOINT["records"].get(key)
        if record is None:
            hints = []
            for i in range(len(specs)):
                done = sorted(r["specs"][i]["threshold"] for r in records if r["specs"][i]["threshold"])
                hints.append(done[len(done) // 2] if done else None)
            record = _seed_record(theorem, params, specs, tier, seed, log, hints, analytic)
            CHECKPOINT["records"][key] = record
            if CHECKPOINT["path"]:
                with open(CHECKPOINT["path"], "a") as handle:
                    handle.write(json.dumps({"key": key, "record": _finite(record)}) + "\n")
        else:
            log(f"    seed {seed}: from the checkpoint")
            if seed == 0:
                for i, spec in enumerate(specs):
                    found = _analytic(theorem, spec, record["outcome"])
                    if found:
                        analytic[i] = found
        records.append(record)
    out = []
    for i, spec in enumerate(specs):
        thresholds = [math.inf if r["specs"][i]["threshold"] is None else r["specs"][i]["threshold"] for r in records]
        k = required(len(thresholds))
        minimal = sorted(thresholds)[k - 1]
        entry = {"min_delta": minimal if math.isfinite(minimal) else None, "thresholds": thresholds,
                 "detected_at_min": sum(t <= minimal for t in thresholds) if math.isfinite(minimal) else 0,
                 "false_alarms": sum(r["outcome"]["verdict"] == "disagree" for r in records),
                 "curve": [[d, sum(t <= d for t in thresholds)] for d in _grid(spec)],
                 "base_outcome": records[0]["outcome"], "base_z": [r["outcome"]["z"] for r in records],
                 "run_seconds_mean": sum(r["seconds"] for r in records) / len(records),
                 "run_cpu_seconds_mean": sum(r["cpu"] for r in records) / len(records),
                 "replays": sum(r["specs"][i]["evaluations"] for r in records),
                 "monotone_violations": sum(r["specs"][i]["monotone_violations"] for r in records),
                 "scale_key": records[0]["specs"][i]["scale_key"]}
        if i in analytic:
            entry["analytic"] = dict(analytic[i], detections=sum(bool(r["specs"][i]["analytic_hit"]) for r in records))
        out.append(entry)
    return case_params, params, out


def _grid(spec):
    top = max_delta(spec)
    values = [1e-12, 1e-10, 1e-8, 1e-6, 1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 0.1, 0.3]
    values += [0.5, 0.9, 0.97, 0.99, 0.999] if spec.kind == DOWN else [1.0, 3.0, 10.0]
    return [v for v in values if v <= top]


def _fmt(x):
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "none"
    return f"{x:.3g}"


# ---------------------------------------------------------------------------------------------------
# the table
# ---------------------------------------------------------------------------------------------------

def _perturbation_text(spec):
    return {UP: f"{spec.formula} x (1 + delta)", DOWN: f"{spec.formula} x (1 - delta)",
            "power": f"{spec.formula} ** (1 + delta)", "rotate": f"{spec.formula} turned by the angle delta",
            "n/a": "none"}[spec.kind]


def _recorded(theorem, index):
    case = theorem.all_cases[index]
    return theorem.recorded(theorem.resolve(case.params, "quick"))[0]


# Seeds per claim and tier where fewer than SEEDS (cost: seconds to minutes per run at nice 19 on a
# shared 2-core CPU).  With fewer than 10 seeds a "default" entry is not an empirical curve but the
# quick tier's minimal delta scaled by SCALE_KEY (the standard error that drives the verdict),
# except for the claims of TOLERANCE, whose verdict is a per-draw tolerance (no standard error):
# there the few default seeds are reported as they are.
QUICK_SEEDS: dict[str, int] = {}
# The claims run at the default tier, with their seeds: one default run costs 2-35 s CPU for these
# (seed 0, one thread), against minutes for the training-heavy claims.
DEFAULT_SEEDS = {"double-descent": 20, "arccos-kernel": 20, "linear-transfer": 10, "ridge-transfer": 10,
                 "transferability-linear": 10, "kl-divergence": 10, "ntk-gram": 10, "rkhs-projection": 10,
                 "finetune-linear-regression": 10, "dudley-distance": 10}
DEFAULT_CASES = "primary"   # the default tier measures each claim's first listed case of each formula only


def default_plan(theorem_id: str) -> str | None:
    """How a claim's default-tier entry is made: None (measured, DEFAULT_SEEDS), or derived from the quick tier
    without a default run (cost): "sqrt" scales the quick value by sqrt(quick trials / default trials) (the
    standard error's trial count only: sizes that also grow between the tiers are not accounted for, which
    overstates the default value where the per-draw spread shrinks with size), and a formula of TOLERANCE keeps
    the quick value of its per-draw tolerance (the tolerance is the same at every tier)."""
    return None if theorem_id in DEFAULT_SEEDS else "sqrt"


TOLERANCE = {"finetune-linear-regression:risk", "finetune-linear-regression:limit", "pretraining-recovery:limit",
             "sparsification:direction", "depth-rescaling:coefficient", "aligned-tasks:linear_risk",
             "aligned-tasks:coefficient", "frozen-layers:direction", "covariance-bound:bound", "ptft-penalty:penalty",
             "ptft-penalty:m0", "ptft-penalty-shape:penalty", "universality:limit",
             # detected by the deterministic limit link (Richardson, tolerance 1e-12), not by a standard error
             "finetune:finite", "finetune:asymptotic"}
SCALE_KEY = {   # (claim, formula) -> the quantity whose ratio between the tiers scales the minimal delta
    ("gaussian-depth-bound", "eq10"): lambda o: o.extra["per_size"][0]["10"]["se_ratio"],
    ("gaussian-depth-bound", "eq9"): lambda o: (o.extra.get("centre9_extrapolation") or {}).get("se"),
    ("min-norm-bias", "limit"): lambda o: o.mean,      # a wrong limit shows once it exceeds the distance at alpha/100
    ("ntk-gram", "gram"): lambda o: o.se / abs(o.reference),
}
DETERMINISTIC = {"ptft-penalty-shape"}   # no random draws: the verdict does not depend on the seed


def _scale_key(theorem_id, spec, outcome):
    key = SCALE_KEY.get((theorem_id, spec.formula))
    try:
        return key(outcome) if key else outcome.se
    except (KeyError, TypeError, IndexError):
        return None


def measure(theorem_id, tier, seeds, log, stored=()):
    """The entries of one claim at one tier (``stored``: the table so far, for the scaled default entries)."""
    import theorems
    theorem = theorems.REGISTRY[theorem_id]
    specs = list(theorem.power)
    if not specs:
        raise KeyError(f"{theorem_id}: no perturbation declared (Theorem.power)")
    stamp = {"date": datetime.date.today().isoformat(), "torch": torch.__version__}
    entries = []
    by_case = {}
    for spec in specs:
        if spec.kind == "n/a":
            entries.append({"id": theorem_id, "tier": tier, "case": None, "params": None, "formula": spec.formula,
                            "perturbation": "none", "direction": "n/a", "reason": spec.reason, "primary": spec.primary,
                            "min_delta": None, "method": "n/a", "seeds": 0, **stamp})
            continue
        cases = spec.cases[:1] if tier == "default" and DEFAULT_CASES == "primary" else spec.cases
        for index in cases:
            if _recorded(theorem, index) != "agree":
                raise ValueError(f"{theorem_id} case {index} is a recorded {_recorded(theorem, index)}: no power to measure")
            by_case.setdefault(index, []).append(spec)
    if tier == "default" and default_plan(theorem_id):
        return entries + _unrun_default(theorem, by_case, default_plan(theorem_id), stored, stamp, log)
    if tier == "quick":
        n = min(seeds, QUICK_SEEDS.get(theorem_id, seeds))
    else:
        n = min(seeds, DEFAULT_SEEDS.get(theorem_id, 1))
    if theorem_id in DETERMINISTIC:
        n = 1
    for index, case_specs in sorted(by_case.items()):
        log(f"  {theorem_id} case {index} ({tier}, {n} seed{'s' * (n > 1)}): "
            + ", ".join(_perturbation_text(s) for s in case_specs))
        start, cpu = time.perf_counter(), time.process_time()
        case_params, params, results = measure_case(theorem, index, case_specs, tier, n, log)
        elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
        for spec, r in zip(case_specs, results):
            method, minimal, rule = "empirical", r["min_delta"], f">= {required(n)}/{n} seeds"
            if theorem_id in DETERMINISTIC:
                rule = "deterministic: one run per delta"
            scalable = f"{theorem_id}:{spec.formula}" not in TOLERANCE and theorem_id not in DETERMINISTIC
            quick = next((e for e in stored if e["id"] == theorem_id and e["tier"] == "quick" and e["case"] == index
                          and e["formula"] == spec.formula and e["direction"] == spec.kind), None)
            if tier == "default" and scalable and quick and quick.get("min_delta") and quick.get("scale_key") \
                    and r["scale_key"]:
                r["scaled_min_delta"] = quick["min_delta"] * r["scale_key"] / quick["scale_key"]
            if "analytic" in r and _analytic_stands(r["min_delta"], r["analytic"], n):
                method, minimal = "analytic", r["analytic"]["min_delta"]
            elif tier == "default" and n < 10 and "scaled_min_delta" in r:
                method, minimal = "scaled", r["scaled_min_delta"]
                rule = (f"quick-tier minimal delta x (default / quick) of the standard error that drives the verdict "
                        f"({r['scale_key']:.3g} / {quick['scale_key']:.3g}); {n} default seed(s) measured beside it")
            entry = {**r, "id": theorem_id, "tier": tier, "case": index, "case_params": case_params,
                     "params": {k: (int(v) if getattr(v, "is_integer", False) else float(v)) for k, v in params.items()},
                     "formula": spec.formula, "perturbation": _perturbation_text(spec), "direction": spec.kind,
                     "reason": spec.reason, "primary": spec.primary, "min_delta": minimal, "method": method,
                     "seeds": n, "rule": rule, "seconds": round(elapsed, 1), "cpu_seconds": round(cpu, 1), **stamp}
            if method != "empirical":
                entry["empirical_min_delta"] = r["min_delta"]
            entries.append(entry)
            log(f"    -> {spec.formula} {spec.kind}: min delta {_fmt(minimal)} ({method}"
                + (f"; {r['analytic']['detections']}/{n} seeds detect the analytic delta" if method == "analytic" else "")
                + f"; empirical {_fmt(r['min_delta'])}, detected by {r['detected_at_min']}/{n})"
                + f", {elapsed:.0f} s wall, {cpu:.0f} s CPU")
    return entries


def _unrun_default(theorem, by_case, plan, stored, stamp, log):
    """Default-tier entries derived from the quick tier without a default run (see ``default_plan``)."""
    entries = []
    ratio = math.sqrt(theorem.trials["quick"] / theorem.trials["default"])
    for index, case_specs in sorted(by_case.items()):
        for spec in case_specs:
            tolerance = plan == "tolerance" or f"{theorem.id}:{spec.formula}" in TOLERANCE
            quick = next((e for e in stored if e["id"] == theorem.id and e["tier"] == "quick" and e["case"] == index
                          and e["formula"] == spec.formula and e["direction"] == spec.kind), None)
            if quick is None:
                raise KeyError(f"{theorem.id}: the default tier is derived from the quick tier, which is not stored")
            base = quick["min_delta"]
            if tolerance:
                method, value = "tolerance", base
                rule = "quick-tier value: a per-draw tolerance, the same at every tier (no default run: cost)"
            else:
                method, value = "scaled", None if base is None else base * ratio
                rule = (f"quick-tier value x sqrt(quick / default trials) = x {ratio:.3g} (no default run: cost; sizes "
                        f"that also change between the tiers are not accounted for)")
            entry = {key: quick[key] for key in ("case", "case_params", "formula", "perturbation", "direction", "reason",
                                                 "primary")}
            entry.update(id=theorem.id, tier="default", params=None, min_delta=value, method=method, seeds=0, rule=rule,
                         derived_from_quick=base, **stamp)
            if method == "scaled":
                entry["scaled_min_delta"] = value
            entries.append(entry)
            log(f"    -> {spec.formula} {spec.kind}: min delta {_fmt(value)} ({method}: {rule})")
    return entries


# ---------------------------------------------------------------------------------------------------
# the column "off-by-one in n detected"
# ---------------------------------------------------------------------------------------------------

OFF_BY_ONE = "-off-by-one"   # a negative control whose id ends so puts an exact finite-size formula off by one in n
# The claims whose verdict compares with an exact finite-size formula in n (the formula's name in
# ``theorem.formulas``): an off-by-one in n is a natural slip there.  Every other claim's column is "n/a".
FINITE_SIZE = {"double-descent": "finite", "linear-transfer": "risk", "transferability-linear": "finite",
               "ridge-transfer": "finite", "finetune-linear-regression": "mean_risk", "finetune": "finite",
               "universality": "finite_gaussian"}


def quick_family() -> int:
    """The points of ``verify.py all --quick``: each of its checks tests at false_alarm / this (Bonferroni)."""
    import theorems
    return sum(len(theorem.points({}, "quick")) for theorem in theorems.REGISTRY.values())


def detection_probability(effect: float, se: float, z_c: float) -> float:
    """P(|z| > z_c) of a two-sided z-test whose reference is off by ``effect`` (standard error ``se``)."""
    phi, k = NormalDist().cdf, abs(effect) / se
    return phi(k - z_c) + phi(-k - z_c)


def _off_by_one_control(theorem, control, family, seeds, log):
    """One control at its case and draws: analytic from the check's z-test where the control moves the z-test's
    reference (seed 0: the effect, the standard error, the critical value of a whole quick run), else the share
    of ``seeds`` run seeds whose run of the control disagrees."""
    from theorems.core import Run, parse_data
    params = theorem.resolve(dict(control.params), "quick")
    wrong = dataclasses.replace(theorem, formulas={**theorem.formulas, **control.formulas})
    run = lambda seed: Run(tier="quick", trials=control.trials, seed=seed, device=torch.device("cpu"), dps=30,
                           trends=False, data=parse_data(control.data), family=family)
    start = time.perf_counter()
    right, off = theorem.check(theorem, params, run(0)), wrong.check(wrong, params, run(0))
    row = {"control": control.name, "why": control.why,
           "case_params": {k: str(v) for k, v in control.params.items()},
           "trials": run(0).trials_for(theorem), "family": family, "verdict_seed_0": off.verdict}
    z_c = right.extra.get("z_critical")
    if right.z is not None and right.se and z_c and off.reference is not None and off.reference != right.reference:
        effect = off.reference - right.reference
        row.update(method="analytic", reference=right.reference, effect=effect, se=right.se, z_critical=z_c,
                   probability=detection_probability(effect, right.se, z_c))
    else:
        hits = sum(wrong.check(wrong, params, run(seed)).verdict == "disagree" for seed in range(seeds))
        row.update(method="empirical", seeds=seeds, detections=hits, probability=hits / seeds,
                   lower_95=clopper_pearson_lower(hits, seeds))
    row["seconds"] = round(time.perf_counter() - start, 1)
    log(f"  {theorem.id}: {control.name} ({row['method']}): P = {row['probability']:.3g}, {row['seconds']} s")
    return row


# Claims whose exact finite-size formula calls another claim's (one implementation, numerics/): an off-by-one in
# it fails that claim's sensitive case in the same run.  tests/test_power.py holds the sharing.
SHARED_FINITE_SIZE = {"universality": ("double-descent", "numerics.min_norm_risk.expected_risk")}


def off_by_one_entry(theorem, family, seeds=SEEDS, log=lambda message: None, column=None) -> dict:
    """The column for one claim: "yes" when one of its ``-off-by-one`` controls is detected with P >= TARGET at
    its case and draws in a whole quick run (``all`` then fails), "no" otherwise (also where an exact finite-size
    formula has no such control), "n/a" for a claim without an exact finite-size formula in n.  A claim of
    SHARED_FINITE_SIZE takes the entry of the claim it shares its formula with (from ``column``)."""
    controls = [c for c in theorem.negative_controls if c.name.endswith(OFF_BY_ONE)]
    if not controls and theorem.id in SHARED_FINITE_SIZE:
        owner, function = SHARED_FINITE_SIZE[theorem.id]
        entry = (column or {}).get(owner, {})
        return {"detected": entry.get("detected", "no"), "probability": entry.get("probability"), "via": owner,
                "reason": f"its formula {FINITE_SIZE[theorem.id]!r} is {function}, whose off-by-one {owner}'s "
                          f"sensitive case detects"}
    if not controls:
        if theorem.id in FINITE_SIZE:
            return {"detected": "no", "reason": f"no control {OFF_BY_ONE!r} declared for its exact finite-size "
                                                f"formula {FINITE_SIZE[theorem.id]!r}"}
        return {"detected": "n/a", "reason": "no exact finite-size formula in n"}
    rows = [_off_by_one_control(theorem, control, family, seeds, log) for control in controls]
    best = max(row["probability"] for row in rows)
    return {"detected": "yes" if best >= TARGET else "no", "probability": best, "controls": rows,
            "date": datetime.date.today().isoformat(), "torch": torch.__version__}


def measure_off_by_one(ids, path, seeds, log) -> None:
    """Compute the column for ``ids`` and store it in the table at ``path`` beside the entries (kept as they are)."""
    import theorems
    table = load(path)
    column = dict((table or {}).get("off_by_one", {}))
    family = quick_family()
    log(f"off-by-one column: {len(ids)} claims, a whole quick run has {family} points")
    for theorem_id in sorted(ids, key=lambda claim: claim in SHARED_FINITE_SIZE):   # the owners first
        column[theorem_id] = off_by_one_entry(theorems.REGISTRY[theorem_id], family, seeds, log, column)
    save(path, (table or {}).get("entries", []), column)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ids", nargs="*", help="claim ids (default: every registered claim)")
    parser.add_argument("--tier", choices=("quick", "default", "both"), default="both")
    parser.add_argument("--seeds", type=int, default=SEEDS)
    parser.add_argument("--out", default=OUT)
    parser.add_argument("--merge", action="store_true", help="keep the stored entries of claims/tiers not measured now")
    parser.add_argument("--threads", type=int, help="torch threads (1 on a contended machine: no spin-waiting)")
    parser.add_argument("--checkpoint", metavar="JSONL", help="append each seed's results here and reuse those found "
                                                             "(to resume a stopped run; only valid for unchanged code)")
    parser.add_argument("--readme", action="store_true", help="print the README table from --out and exit")
    parser.add_argument("--off-by-one", action="store_true", help="compute only the column 'off-by-one in n "
                                                                  "detected' for --ids (default: every claim) and exit")
    parser.add_argument("--combine", nargs="+", metavar="JSON", help="merge tables written by separate runs into --out "
                                                                      "(later files win) and exit")
    args = parser.parse_args(argv)
    if args.readme:
        print(readme_table(load(args.out)))
        return 0
    if args.combine:
        entries = {}
        for path in args.combine:
            for e in load(path)["entries"]:
                entries[(e["id"], e["tier"], e["case"], e["formula"], e["direction"])] = e
        save(args.out, list(entries.values()))
        return 0
    torch.set_default_dtype(torch.float64)
    if args.threads:
        torch.set_num_threads(args.threads)
    CHECKPOINT["path"] = args.checkpoint
    if args.checkpoint and os.path.exists(args.checkpoint):
        with open(CHECKPOINT["path"]) as handle:
            for line in handle:
                item = json.loads(line)
                CHECKPOINT["records"][item["key"]] = item["record"]
    import theorems
    log = lambda message: print(message, file=sys.stderr, flush=True)
    if args.off_by_one:
        measure_off_by_one(args.ids or sorted(theorems.REGISTRY), args.out, args.seeds, log)
        return 0
    REPLAY.install()
    ids = args.ids or sorted(theorems.REGISTRY)
    tiers = ("quick", "default") if args.tier == "both" else (args.tier,)
    table = load(args.out) if args.merge else None
    entries = [] if table is None else table["entries"]
    start, failed = time.perf_counter(), []
    for tier in tiers:
        for theorem_id in ids:
            log(f"[{time.perf_counter() - start:7.0f} s wall, {time.process_time():7.0f} s CPU] {theorem_id} ({tier})")
            try:
                new = measure(theorem_id, tier, args.seeds, log, entries)
            except Exception:                          # one claim's failure must not lose the others
                import traceback
                log(traceback.format_exc())
                failed.append(f"{theorem_id} ({tier})")
                continue
            entries = [e for e in entries if not (e["id"] == theorem_id and e["tier"] == tier)] + new
            save(args.out, entries)
    log(f"done in {time.perf_counter() - start:.0f} s wall, {time.process_time():.0f} s CPU"
        + (f"; FAILED: {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0


def load(path=OUT):
    if not os.path.exists(path):
        return None
    with open(path) as handle:
        table = json.load(handle)
    _reported(table["entries"])
    return table


def _reported(entries):
    """The reported value of an entry is the one its method names (the others stay beside it)."""
    for e in entries:
        if e["method"] == "analytic":
            e["min_delta"] = e["analytic"]["min_delta"]
        elif e["method"] == "empirical" and "empirical_min_delta" in e:
            e["min_delta"] = e["empirical_min_delta"]
        elif e["method"] == "scaled":
            e["min_delta"] = e["scaled_min_delta"]


def save(path, entries, off_by_one=None):
    """Write the table; ``off_by_one`` (claim -> its column entry) replaces the stored column, None keeps it."""
    if off_by_one is None:
        off_by_one = (load(path) or {}).get("off_by_one", {})
    _reported(entries)
    order = {tier: i for i, tier in enumerate(("quick", "default"))}
    entries = sorted(entries, key=lambda e: (e["id"], order[e["tier"]], not e["primary"], e["case"] or 0, e["formula"],
                                             e["direction"]))
    payload = {"version": 1, "generated_by": "scripts/power.py", "target_probability": TARGET,
               "rule": rule_text(SEEDS), "entries": entries}
    if off_by_one:
        payload["off_by_one"] = dict(sorted(off_by_one.items()))
    text = json.dumps(_finite(payload), indent=1, default=str) + "\n"
    tmp = path + ".tmp"
    with open(tmp, "w") as handle:
        handle.write(text)
    os.replace(tmp, path)


def _finite(x):
    """JSON has no infinity: a threshold that is never reached is stored as null."""
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {k: _finite(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_finite(v) for v in x]
    return x


def readme_table(table) -> str:
    """The README's table: one row per claim and perturbation, quick and default tier side by side."""
    from engine.power import format_delta
    rows = {}
    for e in table["entries"]:
        key = (e["id"], e["formula"], e["direction"], e["case"])
        rows.setdefault(key, {})[e["tier"]] = e
    from engine.power import off_by_one_cell
    lines = ["| id | perturbed (case) | quick | default | off-by-one in n detected |", "|---|---|---|---|---|"]
    extra = ["| id | perturbed (case) | quick | default |", "|---|---|---|---|"]
    column, shown = table.get("off_by_one", {}), set()

    def cell(e):
        if e is None:
            return "—"
        if e["method"] == "n/a":
            return "n/a"
        text = format_delta(e["min_delta"], e["direction"])
        if e["min_delta"] is None:
            top = e.get("curve", [[None]])[-1][0]
            text = f"none up to {format_delta(top, e['direction'])}" if top else "none"
        return f"{text} ({e['method']})"

    for (theorem_id, formula, direction, case), tiers in rows.items():
        e = tiers.get("quick") or tiers.get("default")
        if e["method"] == "n/a":
            what = f"n/a: {e['reason']}"
        else:
            params = ", ".join(f"{k}={v}" for k, v in e["case_params"].items()) or "defaults"
            what = f"`{e['perturbation']}` ({params})"
        line = f"| `{theorem_id}` | {what} | {cell(tiers.get('quick'))} | {cell(tiers.get('default'))} |"
        if e["primary"]:      # the claim's column once, on its first row
            line += f" {off_by_one_cell(column.get(theorem_id)) if theorem_id not in shown else ''} |"
            shown.add(theorem_id)
        (lines if e["primary"] else extra).append(line)
    return "\n".join(lines) + "\n\nOther formulas of the same checks:\n\n" + "\n".join(extra)


if __name__ == "__main__":
    sys.exit(main())
