"""Mutation testing of theorems/, numerics/ and simulate/: an estimate of the share of mutants the tests kill.

A verdict is only as trustworthy as the tests that would notice a wrong formula, so this script
changes the code one small edit at a time and counts how often the test suite notices.

Two classes of mutants, chosen with ``--class core|small|both`` (default core):

- *core*: cosmic-ray's (``pip install -e ".[mutation]"``): its ``init`` command enumerates every
  (operator, occurrence) of its core operators in each module, and ``cosmic_ray.mutating.use_mutation``
  applies one and puts the file back;
- *small*: every numeric literal moved one unit of its last written digit up and down (``n - 2`` ->
  ``n - 1``, ``0.2`` -> ``0.3``), the integer right operands of ``+`` and ``-`` as the family
  ``small/Offset``; enumerated with ``ast`` and applied the same way, as an edit of the module's text
  that is put back after the run (scripts/small_mutants.py says which literals and why).

Mutants inside type annotations are left out of both populations: the packages use ``from __future__
import annotations``, so an annotation is never evaluated and its mutants are equivalent by construction
(mutmut skips them for the same reason).  ``--count`` prints each class's population per package.

The whole population (tens of thousands of mutants, a six-minute suite) cannot be run, so the run
is a sample: ``--sample N`` mutants of each class drawn uniformly without replacement with ``--seed``,
stratified per package with allocation proportional to each package's population.  The pooled sample of
a class is then self-weighting, and the 95 % Clopper-Pearson interval of a simple random sample is a
(slightly conservative) interval for the class's whole-tree kill share; each package gets its own
interval.  The classes are separate populations (an integer literal is in both: cosmic-ray's number
replacer also moves it by one), so each is reported on its own and never pooled; with ``both`` their
mutants run interleaved in a random order, so a stopped run is still a uniform sample of each.

Which tests run for a mutant comes from coverage, not from imports (every test imports every
theorem module through ``theorems/__init__``, so imports would select the whole suite for any
mutant).  Before mutating, the unmutated suite runs once under ``coverage run --branch`` with
subprocess measurement (the CLI and notebook tests start interpreters) and the pytest plugin
scripts/mutation_plugin.py, which gives every test its own coverage context; this records, per test, the
lines it executes and the code objects it enters (coverage's arcs ``(-first_line, line)``).  A test
runs the mutant when

- the mutant sits in a ``def`` body and the test executes a line of the mutated statement;
- the mutant sits in a ``lambda`` body and the test calls that lambda (enters a code object that
  starts on the lambda's line): the claims' lambdas live in module-level ``Theorem(...)`` calls,
  whose lines every import executes;
- the mutant sits in a function's default value: the test enters that function (a default is read
  only by a call that omits the argument, and the function's code object is what coverage sees);
- the mutant sits in the value of a top-level ``NAME = value`` that only computes (builtins' and maths
  libraries' calls, nothing like ``register(Theorem(...))``): the test executes a statement of a def
  body, or enters a lambda, that loads NAME, or its file names both the module and NAME (``from
  theorems.x import NAME`` in a test).  Where NAME is loaded at import too (another declaration, an
  f-string, a default), bound again, declared ``global``, or named with the module by any file that is
  not a test file (the engine, a script, another module), the mutant is treated as the next case;
- any other mutant that runs at import (module level, class bodies, decorators): every test, since
  declarations are read without calling the module (``Parameter(..., lower_open=True)`` is read by
  ``Theorem.resolve`` in core.py), and every test imports every module.

A missed reader can only let a mutant survive (the tests it skips might have killed it), so the
selection errs towards understating the kill share, and the triage of survivors is where it would show.

The mutant's relevant tests are those, together with every test that shares a module- or
session-scoped fixture from tests/ with one of them (``outcomes`` caches a claim's check for the
whole module, ``quick_suite`` runs ``verify.py all --quick`` once for the session: coverage sees
their code in the first test that uses them only).  The module -> test-files map is the union of
this over a module's mutants.  A mutant no test runs survives without a run.  Otherwise its
relevant tests run in one ``pytest -x`` in a copy of the repository, grouped by file, the mutated
module's namesake test file first and the others by increasing baseline CPU time, so a kill
usually costs seconds.  Tests that already fail on the unmutated tree are left out (and
reported), so they cannot kill anything.  ``quick_suite`` reads a result cache filled once by the
unmutated tree (``$QUICK_SUITE_CACHE``; the cache's key hashes the sources each claim's check imports),
so under a mutant it recomputes exactly the claims whose sources the mutant changed.

Outcomes: *killed* (pytest exit status 1, 2 or 3: a failing test, or a mutant that breaks import or
collection), *survived* (status 0 or 5), *timed out* (counted as killed).  Time is CPU time of the
whole pytest process tree, because the machine is shared and wall time says more about the other
jobs than about the mutant: a mutant is stopped when it uses ``--timeout-factor`` (3) times the CPU
time the unmutated relevant tests took under coverage (which is slower than a plain run) plus 60 s.
So the unmutated tests pass within a third of the budget, and a timeout means the mutant made them
at least three times slower, usually a loop that no longer terminates.  A run that exceeds ten
times that budget in wall time is stopped as *stalled* and counted as survived, since the cause
may be the load rather than the mutant.  Every run uses ``OMP_NUM_THREADS=1`` so that CPU times
are comparable and a contended machine does not burn them in spin-waits.

The working tree is never written: it is copied to a temporary directory, mutants are applied
there one at a time and restored after each run (also on Ctrl-C or SIGTERM, which end the run with
the results so far), and the copy is deleted at the end.

``--rerun results.json`` runs the survivors of a stored run again on the current tree (after new
tests were written) and reports the figure over the same sample; a mutant whose module changed in
the meantime is found again by its operator and the text of its line.  On an unchanged tree only
the survivors whose relevant tests changed (a change of this script's selection) run again.  With
``--tests NODEID ...`` the survivors run against those tests only (tests written since the stored run), with no
coverage baseline: a survivor they kill was a gap those tests close.

A sample too large for one sitting is run in pieces.  ``--shard K/N`` runs every N-th mutant of the sample
from the K-th, so N processes started with the same arguments (K = 0 ... N-1; the first stores the baseline,
start the others once it has) run one sample side by side.  ``--resume RESULTS_JSON ...`` goes on with a stopped
run: given the results every earlier process wrote (same ``--seed``, ``--sample`` and ``--class``, and the same
tree: the fingerprint of its modules, tests and verify.py), the mutants they ran keep their outcomes and the
rest of the same shuffled order runs, sharded again if asked.  Each process reports the stored mutants with its
own; ``--resume ... --merge --out FILE`` reports them all as one run and runs nothing.  The tree is fixed for
the whole run (a git worktree of one commit, with this script copied in: scripts/ is not fingerprinted), so
tests written meanwhile count only through ``--rerun --tests``.  ``--quick-suite-cache DIR`` keeps the unmutated
quick suite's result cache in DIR, so that later pieces read it instead of running the suite again (~6 CPU minutes).

    nice -n 19 python scripts/mutation.py --sample 100 --seed 0 --baseline results-mutation-baseline.json \
        --out results-mutation.json
    nice -n 19 python scripts/mutation.py --rerun results-mutation.json --out results-mutation-rerun.json
    python scripts/mutation.py --class both --count
    nice -n 19 python scripts/mutation.py --class both --sample 400 --seed 14 --shard 1/2 \
        --baseline baseline.json --quick-suite-cache quick-suite --resume run-a1.json run-b1.json --out run-b2.json

On the 2-core reference machine (2026-11-26) the baseline took 2 567 s of CPU, and 68 mutants 5 920 s (median 14 s;
a mutant whose relevant tests are the whole suite, ~1 700 s); ``--baseline`` keeps the former for the next run of
the same tree, and runs of different seeds can share it, one per core.  ``--jobs 2`` measures the baseline as
groups of test files on both cores (start the second seed once the first has stored it).
"""

from __future__ import annotations

import argparse
import ast
import difflib
import fcntl
import gzip
import hashlib
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path

import mpmath as mp

import small_mutants        # scripts/, beside this file

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("theorems", "numerics", "simulate")
# tests failed; interrupted (import or collection error); internal error; usage error -- which is how pytest
# reports a conftest that fails to import, i.e. a mutant that breaks ``import theorems`` (the same command
# ran cleanly on the unmutated tree in the baseline, so it is not a usage error of this script)
KILLED_STATUSES = (1, 2, 3, 4)
SURVIVED_STATUSES = (0, 5)        # all passed; nothing left to run
# what the tests read: the engine that runs the claims, the scripts and benchmarks some tests call or scan, the
# docs that the generated-files tests compare
COPIED = (*PACKAGES, "engine", "tests", "scripts", "benchmarks", "docs", "examples", "verify.py", "pyproject.toml",
          "README.md", ".ci")
CLASSES = ("core", "small")
STOPPING = threading.Event()      # set when the main thread is interrupted while workers run tests


@dataclass
class Mutant:
    """One mutation, cosmic-ray's or a small one: ``operator`` applied at its ``occurrence``-th position in ``path``."""

    path: str                      # relative to the repository root
    operator: str
    occurrence: int
    line: int
    column: int
    package: str = ""
    kind: str = ""                 # "def", "lambda", "default", "constant" or "import": how its tests are found
    scope_line: int = 0            # first line of the enclosing lambda or of the defaulted function's code
    read_lines: list = field(default_factory=list)    # kind "constant": the statements in def bodies that read it,
    read_scopes: list = field(default_factory=list)   # the lambdas that read it,
    read_files: list = field(default_factory=list)    # and the test files that name it
    statement_lines: list = field(default_factory=list)
    line_text: str = ""
    diff: str = ""
    outcome: str = ""              # killed, survived, timeout, stalled, not-run
    status: int | None = None
    killed_by: str = ""
    tests: int = 0                 # how many tests ran (the relevant ones)
    test_ids: list = field(default_factory=list)
    test_files: list = field(default_factory=list)
    cpu_seconds: float = 0.0
    wall_seconds: float = 0.0
    cpu_budget: float = 0.0

    @property
    def name(self) -> str:
        return f"{self.path}:{self.line} {self.operator}#{self.occurrence}"

    @property
    def mutant_class(self) -> str:
        """``core`` (cosmic-ray's operators are all ``core/...``) or ``small`` (scripts/small_mutants.py)."""
        return self.operator.split("/")[0]


# --- the population -------------------------------------------------------------------------------------


def copy_repository(destination: Path) -> Path:
    tree = destination / "tree"
    tree.mkdir()
    for name in COPIED:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, tree / name, ignore=shutil.ignore_patterns("__pycache__", ".hypothesis"))
        elif source.exists():
            shutil.copy2(source, tree / name)
    return tree


def modules(tree: Path, packages) -> list[Path]:
    return sorted(path for package in packages for path in (tree / package).glob("*.py"))


def enumerate_mutants(tree: Path, packages, work_dir: Path, mutant_class: str = "core") -> list[Mutant]:
    """Every mutant of the class in the packages' modules, in a fixed order, annotations left out."""
    mutants = (core_mutants(tree, packages, work_dir) if mutant_class == "core"
               else small_class_mutants(tree, packages))
    mutants.sort(key=lambda m: (m.path, m.operator, m.occurrence))
    by_path = {}
    for mutant in mutants:
        by_path.setdefault(mutant.path, []).append(mutant)
    kept, texts, elsewhere = [], {}, {}

    def outside(path, names):
        """named_elsewhere, the tree's files read once and each answer kept."""
        if not texts:
            texts.update(_sources(tree))
        if (path, names) not in elsewhere:
            elsewhere[path, names] = named_elsewhere(path, names, texts)
        return elsewhere[path, names]

    for path, group in by_path.items():
        structure = ModuleStructure((tree / path).read_text(encoding="utf-8"))
        for mutant in group:
            if not structure.in_annotation(mutant.line, mutant.column):
                structure.place(mutant, lambda names, path=path: outside(path, names))
                kept.append(mutant)
    return kept


def _sources(tree: Path) -> dict[str, str]:
    """The text of every Python file and notebook the tests may run, by path relative to ``tree``."""
    files = [tree / name for name in COPIED if (tree / name).is_file() and name.endswith(".py")]
    files += [path for name in COPIED if (tree / name).is_dir()
              for pattern in ("*.py", "*.ipynb") for path in (tree / name).rglob(pattern)]
    return {path.relative_to(tree).as_posix(): path.read_text(encoding="utf-8", errors="replace") for path in files}


def named_elsewhere(path: str, names, texts: dict[str, str]) -> list[str] | None:
    """The test files that may read module ``path``'s top-level ``names`` from outside it: those that name both
    the module and one of the names (words of the text, comments included: a cheap over-approximation), or None
    when a file that is not a test file does (an engine, a script or another module reading it: every test may)."""
    module = re.compile(rf"\b{re.escape(Path(path).stem)}\b")
    name = re.compile(r"\b(" + "|".join(map(re.escape, names)) + r")\b")
    files = []
    for other, text in sorted(texts.items()):
        if other == path or not (module.search(text) and name.search(text)):
            continue
        if not re.fullmatch(r"tests/test_\w+\.py", other):
            return None
        files.append(other)
    return files


def core_mutants(tree: Path, packages, work_dir: Path) -> list[Mutant]:
    """cosmic-ray's mutants (its ``init`` enumerates every operator and occurrence of each module)."""
    from cosmic_ray.commands import init
    from cosmic_ray.work_db import WorkDB, use_db

    mutants = []
    with use_db(str(work_dir / "cosmic-ray.sqlite"), WorkDB.Mode.create) as work_db:
        init(modules(tree, packages), work_db, {})
        for item in work_db.pending_work_items:
            for spec in item.mutations:
                path = Path(spec.module_path).relative_to(tree).as_posix()
                mutants.append(Mutant(path, spec.operator_name, spec.occurrence, *spec.start_pos,
                                      package=path.split("/")[0]))
    return mutants


def small_class_mutants(tree: Path, packages) -> list[Mutant]:
    """Every literal moved one unit up and down (scripts/small_mutants.py), found with ``ast``."""
    mutants = []
    for module in modules(tree, packages):
        path = module.relative_to(tree).as_posix()
        for mutation in small_mutants.small_mutations(module.read_bytes().decode("utf-8")):
            mutants.append(Mutant(path, mutation.operator, mutation.occurrence, mutation.line, mutation.column,
                                  package=path.split("/")[0]))
    return mutants


def left_out_literals(tree: Path, packages) -> dict[str, dict[str, int]]:
    """Per package, how many literals the small class leaves out, per reason (small_mutants.left_out)."""
    counts = {}
    for module in modules(tree, packages):
        package = counts.setdefault(module.relative_to(tree).parts[0], {})
        for reason, number in small_mutants.literals(module.read_bytes().decode("utf-8"))[1].items():
            package[reason] = package.get(reason, 0) + number
    return counts


class ModuleStructure:
    """Where a position sits in a module: annotation, def body, lambda body or import-time code."""

    def __init__(self, source: str):
        self.lines = source.splitlines()
        self.tree = tree = ast.parse(source)
        self.annotations, self.defs, self.lambdas, self.statements = [], [], [], []
        self.defaults = []          # (span of a default value, first line of its function's code object)
        # top-level ``NAME = value`` (or ``A, B = value``) whose value does nothing but compute (no call with a
        # possible side effect, such as ``register(Theorem(...))``): (span of the value, the names it binds)
        self.bindings = [(self._span(node.value), _bound_names(node)) for node in tree.body
                         if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None
                         and _bound_names(node) and _computes_only(node.value)]
        self._readers = {}
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.defs.append([self._span(s) for s in node.body])
                self.annotations += [self._span(node.returns)] if node.returns else []
                code_line = min([node.lineno] + [d.lineno for d in node.decorator_list])   # co_firstlineno
                self.defaults += [(self._span(d), code_line)
                                  for d in [*node.args.defaults, *node.args.kw_defaults] if d is not None]
            elif isinstance(node, ast.Lambda):
                self.lambdas.append((self._span(node.body), node.lineno))
            elif isinstance(node, ast.arg) and node.annotation is not None:
                self.annotations.append(self._span(node.annotation))
            elif isinstance(node, ast.AnnAssign):
                self.annotations.append(self._span(node.annotation))
            if isinstance(node, ast.stmt):
                nested = [s for name in ("body", "orelse", "finalbody") for s in getattr(node, name, [])
                          if isinstance(s, ast.stmt)]
                nested += [s for handler in getattr(node, "handlers", []) for s in handler.body]
                nested += [s for case in getattr(node, "cases", []) for s in case.body]
                own = set(range(node.lineno, node.end_lineno + 1))
                for inner in nested:
                    own -= set(range(inner.lineno, inner.end_lineno + 1))
                self.statements.append((self._span(node), sorted(own)))

    def _column(self, line: int, byte_offset: int) -> int:
        return small_mutants.character_column(self.lines[line - 1], byte_offset)

    def _span(self, node):
        return ((node.lineno, self._column(node.lineno, node.col_offset)),
                (node.end_lineno, self._column(node.end_lineno, node.end_col_offset)))

    @staticmethod
    def _inside(span, position) -> bool:
        return span[0] <= position < span[1]

    def in_annotation(self, line: int, column: int) -> bool:
        return any(self._inside(span, (line, column)) for span in self.annotations)

    def _scope(self, position):
        """The innermost def body or lambda body holding ``position``: (kind, lambda's first line), or None."""
        scopes = [(body[0][0], "def", 0) for body in self.defs
                  if any(self._inside(span, position) for span in body)]
        scopes += [(span[0], "lambda", first) for span, first in self.lambdas if self._inside(span, position)]
        return max(scopes)[1:] if scopes else None

    def _own_lines(self, position) -> list[int]:
        """The lines of the innermost statement holding ``position``, less those of the statements nested in it
        (the lines coverage reports when that statement runs)."""
        containing = [(span, own) for span, own in self.statements if self._inside(span, position)]
        return max(containing)[1] if containing else [position[0]]

    def place(self, mutant: Mutant, outside=lambda names: []) -> None:
        """Set the mutant's kind, enclosing lambda and statement lines (see the module docstring).  ``outside(names)``:
        the test files that name the module's top-level ``names``, or None if another file may read them."""
        position = (mutant.line, mutant.column)
        scope = self._scope(position)
        if scope:
            mutant.kind, mutant.scope_line = scope
        else:
            mutant.kind = "import"
            defaulted = [line for span, line in self.defaults if self._inside(span, position)]
            bound = [names for span, names in self.bindings if self._inside(span, position)]
            if defaulted:
                mutant.kind, mutant.scope_line = "default", defaulted[0]
            elif bound and (readers := self.readers(bound[0])) is not None and \
                    (files := outside(tuple(bound[0]))) is not None:
                mutant.kind = "constant"
                (mutant.read_lines, mutant.read_scopes), mutant.read_files = readers, files
        mutant.statement_lines = self._own_lines(position)
        mutant.line_text = self.lines[mutant.line - 1]

    def readers(self, names) -> tuple[list[int], list[int]] | None:
        """Where the module reads the top-level ``names`` after import: (the lines of the statements in def bodies
        that load one, the first lines of the lambdas that do), or None where one is read or bound again at import
        (module level, a class body, a default, a decorator) or declared ``global``: then every test reads it."""
        key = tuple(names)
        if key not in self._readers:
            self._readers[key] = self._find_readers(names)
        return self._readers[key]

    def _find_readers(self, names):
        lines, scopes = set(), set()
        bindings = {id(target) for node in self.tree.body if isinstance(node, (ast.Assign, ast.AnnAssign))
                    for target in ast.walk(node) if isinstance(target, ast.Name) and isinstance(target.ctx, ast.Store)}
        for node in ast.walk(self.tree):
            if isinstance(node, (ast.Global, ast.Nonlocal)) and set(node.names) & set(names):
                return None
            if not isinstance(node, ast.Name) or node.id not in names:
                continue
            if not isinstance(node.ctx, ast.Load):
                if id(node) in bindings:
                    continue               # the top-level binding itself (read afterwards in the same way)
                return None
            position = (node.lineno, self._column(node.lineno, node.col_offset))
            scope = self._scope(position)
            if scope is None:
                return None
            if scope[0] == "def":
                lines.update(self._own_lines(position))
            else:
                scopes.add(scope[1])
        return sorted(lines), sorted(scopes)


def _bound_names(node) -> list[str]:
    """The names a top-level assignment binds, or [] unless every target is a plain name (or a tuple of them)."""
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    names = []
    for target in targets:
        parts = target.elts if isinstance(target, (ast.Tuple, ast.List)) else [target]
        if not all(isinstance(part, ast.Name) for part in parts):
            return []
        names += [part.id for part in parts]
    return names


PURE_CALLS = {"float", "int", "complex", "str", "tuple", "list", "dict", "set", "frozenset", "range", "len", "round",
              "min", "max", "sum", "sorted", "Fraction"}
PURE_MODULES = {"math", "mp", "mpmath", "sp", "sympy", "np", "numpy", "torch", "re"}


def _computes_only(value) -> bool:
    """Does the expression only compute a value (builtins' and maths libraries' calls, no other)?"""
    for node in ast.walk(value):
        if isinstance(node, ast.Call):
            function = node.func
            if not (isinstance(function, ast.Name) and function.id in PURE_CALLS
                    or isinstance(function, ast.Attribute) and isinstance(function.value, ast.Name)
                    and function.value.id in PURE_MODULES):
                return False
    return True


def sample(population: list[Mutant], size: int, seed: int, stream: str = "") -> list[Mutant]:
    """``size`` mutants, stratified per package with proportional allocation, in a random run order.

    ``stream`` names the class for any class but core, whose draws stay those of the runs before classes.
    """
    strata = {}
    for mutant in population:
        strata.setdefault(mutant.package, []).append(mutant)
    total = len(population)
    quotas = {package: size * len(group) / total for package, group in strata.items()}
    counts = {package: int(quota) for package, quota in quotas.items()}
    for package in sorted(quotas, key=lambda p: counts[p] - quotas[p])[:size - sum(counts.values())]:
        counts[package] += 1                                  # largest remainders
    chosen = []
    for package, group in sorted(strata.items()):
        key = f"{seed}:{stream}:{package}" if stream else f"{seed}:{package}"
        chosen += random.Random(key).sample(group, min(counts[package], len(group)))
    random.Random(f"{seed}:{stream}" if stream else seed).shuffle(chosen)
    return chosen


# --- the baseline: which test executes what -------------------------------------------------------------


def fingerprint(tree: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted([*modules(tree, PACKAGES), *(tree / "tests").glob("*.py"), tree / "verify.py"]):
        digest.update(path.relative_to(tree).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def child_environment(work_dir: Path, extra: dict | None = None) -> dict:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "PYTHONDONTWRITEBYTECODE": "1",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT / "scripts"), os.environ.get("PYTHONPATH")])),
           "MUTATION_FAILED_TESTS": str(work_dir / "failed.json")}
    for name in ("COVERAGE_PROCESS_CONFIG", "COVERAGE_PROCESS_START", "COVERAGE_FILE", "MUTATION_BASELINE"):
        env.pop(name, None)
    return {**env, **(extra or {})}


def pytest_arguments(tests) -> list[str]:
    return ["-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "mutation_plugin", "--hypothesis-seed=0", *tests]


def run_measured(command, tree: Path, env: dict, cpu_budget: float | None = None, wall_budget: float | None = None):
    """Run ``command`` in its own session; return (status or "timeout"/"stalled", cpu seconds, wall seconds).

    CPU time is summed over the live process tree and the children it has reaped.
    """
    import psutil

    shutil.rmtree(tree / ".hypothesis", ignore_errors=True)     # no examples carried over between mutants
    start = time.monotonic()
    process = subprocess.Popen(command, cwd=tree, env=env, start_new_session=True,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    root = psutil.Process(process.pid)
    cpu, outcome = 0.0, None
    try:
        while process.poll() is None:
            try:
                cpu = max(cpu, sum(_cpu(p) for p in [root, *root.children(recursive=True)]))
            except psutil.Error:
                pass
            wall = time.monotonic() - start
            if STOPPING.is_set():         # another thread was interrupted: stop, do not wait for the tests
                _kill_session(process)
                raise KeyboardInterrupt
            if cpu_budget is not None and cpu > cpu_budget:
                outcome = "timeout"
            elif wall_budget is not None and wall > wall_budget:
                outcome = "stalled"
            if outcome:
                _kill_session(process)
                break
            time.sleep(0.5)
    except BaseException:
        _kill_session(process)
        raise
    wall = time.monotonic() - start
    status = process.wait()
    return (outcome or status), cpu, wall


def _cpu(process) -> float:
    times = process.cpu_times()
    return times.user + times.system + times.children_user + times.children_system


def _kill_session(process) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait()


def measure_baseline(tree: Path, work_dir: Path, jobs: int = 1) -> dict:
    """Run the suite once under coverage with one context per test: cost, failures, lines, code objects entered.

    With ``jobs`` > 1 the test files are cut into groups that ``jobs`` workers take from a queue, each worker in its
    own copy of the tree (tests write beside the code); the files that use the session-scoped ``quick_suite``
    fixture form one group, so that it runs once, as in a whole-suite run.  A test's record does not depend on
    its neighbours (the plugin clears the packages' caches before each test), and a module-scoped fixture stays
    with its file."""
    if jobs <= 1:
        return _measure_tests(tree, work_dir, ["tests"])
    groups = _baseline_groups(tree, jobs)
    queue = list(range(len(groups)))
    parts = {}

    def worker(number: int) -> None:
        worker_tree = tree if number == 0 else Path(shutil.copytree(tree, work_dir / f"worker-{number}" / "tree"))
        while True:
            try:
                index = queue.pop(0)
            except IndexError:          # the other workers took the rest
                return
            part_dir = work_dir / f"baseline-{index}"
            part_dir.mkdir()
            parts[index] = _measure_tests(worker_tree, part_dir, groups[index])

    started = time.monotonic()
    with ThreadPoolExecutor(jobs) as pool:
        try:
            list(pool.map(worker, range(jobs)))
        except BaseException:           # Ctrl-C or SIGTERM reach this thread only: the workers' runs stop too
            STOPPING.set()
            raise
    merged = {"status": max(part["status"] for part in parts.values()),
              "cpu": sum(part["cpu"] for part in parts.values()), "wall": time.monotonic() - started,
              "failed": sorted(name for part in parts.values() for name in part["failed"]), "tests": {}}
    for index in sorted(parts):
        merged["tests"].update(parts[index]["tests"])
    print(f"  baseline: {len(groups)} groups on {jobs} workers, {merged['cpu']:.0f} s CPU, {merged['wall']:.0f} s wall",
          file=sys.stderr, flush=True)
    return merged


def _baseline_groups(tree: Path, jobs: int) -> list[list[str]]:
    """The test files in 3 x ``jobs`` groups of about equal size in bytes (a rough proxy for their cost), the
    ``quick_suite`` files together in the first, largest first so that the queue ends with small groups."""
    files = sorted((tree / "tests").glob("test_*.py"), key=lambda path: (-path.stat().st_size, path.name))
    shared = [path for path in files if "quick_suite" in path.read_text(encoding="utf-8")]
    groups = [list(shared)] + [[] for _ in range(3 * jobs - 1)]
    sizes = [sum(path.stat().st_size for path in shared)] + [0] * (3 * jobs - 1)
    for path in files:
        if path not in shared:
            smallest = sizes.index(min(sizes[1:]), 1)
            groups[smallest].append(path)
            sizes[smallest] += path.stat().st_size
    return [[path.relative_to(tree).as_posix() for path in group] for group in groups if group]


def _measure_tests(tree: Path, work_dir: Path, tests: list[str]) -> dict:
    """One pytest run of ``tests`` under coverage in ``tree``, its records kept in ``work_dir``."""
    import coverage

    sources = ", ".join(str(tree / package) for package in PACKAGES)
    rcfile = work_dir / "coveragerc"
    rcfile.write_text(f"[run]\nsource = {sources}\nbranch = true\nparallel = true\npatch = subprocess\n")
    data_dir = work_dir / "coverage"
    data_dir.mkdir()
    record = work_dir / "baseline-tests.json"
    env = child_environment(work_dir, {"COVERAGE_FILE": str(data_dir / ".coverage"), "MUTATION_BASELINE": str(record)})
    command = [sys.executable, "-m", "coverage", "run", f"--rcfile={rcfile}", *pytest_arguments(tests)]
    status, cpu, wall = run_measured(command, tree, env)
    print(f"  baseline {' '.join(Path(name).stem for name in tests)}: status {status}, {cpu:.0f} s CPU, "
          f"{wall:.0f} s wall", file=sys.stderr, flush=True)
    if not record.exists():
        raise RuntimeError(f"the unmutated test suite did not finish (status {status})")
    recorded = json.loads(record.read_text())
    failed = set(json.loads((work_dir / "failed.json").read_text()))
    tests = recorded["tests"]
    for nodeid, test in tests.items():
        test.update(failed=nodeid in failed, lines={}, entered={})
    owner = {name: nodeid for nodeid, test in tests.items() for name in test.pop("subprocess_files")}
    for path in sorted(data_dir.iterdir()):
        data = coverage.CoverageData(basename=str(path))
        data.read()
        if re.search(rf"\.(pid)?{recorded['pid']}\.", path.name):      # the pytest process itself
            contexts = [context for context in data.measured_contexts() if context in tests]
        elif owner.get(path.name) in tests:
            contexts = [None]
        else:
            continue                                  # a subprocess that outlived its test
        for context in contexts:
            test = tests[context or owner[path.name]]
            if context:
                data.set_query_context(context)
            for measured in data.measured_files():
                arcs = data.arcs(measured) or []
                relative = Path(measured).resolve().relative_to(tree.resolve()).as_posix()
                lines = {line for arc in arcs for line in arc if line > 0}
                entered = {-start for start, _ in arcs if start < 0}
                test["lines"][relative] = sorted(lines | set(test["lines"].get(relative, ())))
                test["entered"][relative] = sorted(entered | set(test["entered"].get(relative, ())))
    return {"status": status, "cpu": cpu, "wall": wall, "failed": sorted(failed), "tests": tests}


def executes(test: dict, mutant: Mutant) -> bool:
    """Does the unmutated ``test`` run the mutated code?  (The cases of the module docstring.)"""
    if mutant.kind == "def":
        return not test["lines"].get(mutant.path, set()).isdisjoint(mutant.statement_lines)
    if mutant.kind in ("lambda", "default"):
        return mutant.scope_line in test["entered"].get(mutant.path, set())
    if mutant.kind == "constant":
        return test["file"] in mutant.read_files or \
            not test["lines"].get(mutant.path, set()).isdisjoint(mutant.read_lines) or \
            not test["entered"].get(mutant.path, set()).isdisjoint(mutant.read_scopes)
    return True


def relevant_tests(mutant: Mutant, baseline: dict) -> list[str]:
    """The tests that run the mutant, with those sharing a cached fixture with them, grouped by file.

    The mutated module's namesake test file comes first, then files by the CPU time of their chosen
    tests; within a file the tests keep the baseline's order, so fixtures are built as often as there.
    """
    tests = {nodeid: test for nodeid, test in baseline["tests"].items() if not test["failed"]}
    hits = {nodeid for nodeid, test in tests.items() if executes(test, mutant)}
    shared = {key for nodeid in hits for key in tests[nodeid]["fixtures"]}
    chosen = hits | {nodeid for nodeid, test in tests.items() if shared.intersection(test["fixtures"])}
    cost = {}
    for nodeid in chosen:
        cost[tests[nodeid]["file"]] = cost.get(tests[nodeid]["file"], 0) + tests[nodeid]["cpu"]
    stem = Path(mutant.path).stem
    files = sorted(cost, key=lambda name: (Path(name).stem != f"test_{stem}", cost[name]))
    return sorted(chosen, key=lambda nodeid: (files.index(tests[nodeid]["file"]), tests[nodeid]["index"]))


def read_json(path: Path):
    """A JSON file, gzip-compressed where its name ends in .gz (what a run in pieces keeps in the repository for
    its next sitting: the baseline, the results so far)."""
    return json.loads(gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_text())


def load_baseline(path: Path) -> dict:
    return load_baseline_from(read_json(path))


def load_baseline_from(baseline: dict) -> dict:
    """Line lists as sets, for the membership tests of :func:`executes`."""
    for test in baseline["tests"].values():
        test["lines"] = {name: set(lines) for name, lines in test["lines"].items()}
        test["entered"] = {name: set(lines) for name, lines in test["entered"].items()}
    return baseline


def store_baseline(baseline: dict, tree_fingerprint: str, path: Path) -> None:
    text = json.dumps({**baseline, "fingerprint": tree_fingerprint}, default=sorted)
    if path.suffix == ".gz":
        path.write_bytes(gzip.compress(text.encode(), mtime=0))
    else:
        path.write_text(text)


# --- running mutants ------------------------------------------------------------------------------------


def operator_instance(name: str):
    import cosmic_ray.plugins
    return cosmic_ray.plugins.get_operator(name)()


@contextmanager
def applied(mutant: Mutant, tree: Path):
    """The mutant applied to its module in ``tree`` for the with-block, the file restored after; yields the diff."""
    path = tree / mutant.path
    if mutant.mutant_class == "small":
        with small_mutants.use_mutation(path, mutant.operator, mutant.occurrence) as (original, mutated, mutation):
            if mutation is not None and (mutation.line, mutation.column) != (mutant.line, mutant.column):
                mutated = None                         # the module changed under the enumerated mutant
            if mutated is None:
                raise RuntimeError(f"{mutant.name}: no such small mutation")
            yield _unified(original, mutated)
        return
    from cosmic_ray.mutating import use_mutation
    with use_mutation(path, operator_instance(mutant.operator), mutant.occurrence) as (original, mutated):
        if mutated is None:
            raise RuntimeError(f"{mutant.name}: cosmic-ray found no such mutation")
        yield _unified(original, mutated)


def warm_quick_suite_cache(tree: Path, work_dir: Path, cache: Path | None = None,
                           tree_fingerprint: str = "") -> tuple[Path, float]:
    """``verify.py all --quick`` on the unmutated tree into a result cache that every mutant's ``quick_suite`` fixture
    reads (``$QUICK_SUITE_CACHE``, tests/conftest.py).  The cache's key hashes the sources each claim's check
    imports, transitively (engine/cache.py), so under a mutant the fixture recomputes exactly the claims whose
    sources the mutant changed and reads the others' unmutated rows: the same verdicts a full run would give,
    for a fraction of its time (the quick suite is the costliest test most mutants of simulate/ and numerics/ run).
    A ``cache`` kept from an earlier piece of the run (``--quick-suite-cache``) is filled already: the suite reads
    it back, and the CPU time of the uncached suite (keyed by ``tree_fingerprint``) is read from beside it.
    The shards of a piece start together and share the cache: one fills it while the others wait, then read it.
    Returns the cache and the CPU seconds the quick suite took uncached."""
    cache = cache or work_dir / "quick-suite-cache"
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / "warming.lock", "w") as lock:      # names the result cache never uses (its rows are in xx/)
        fcntl.flock(lock, fcntl.LOCK_EX)
        uncached = cache / "uncached-cpu-seconds.json"
        known = json.loads(uncached.read_text()) if uncached.exists() else {}
        empty = not any(cache.glob("*/*.row.pkl"))      # engine.cache.SUFFIX: the suite runs uncached
        status, cpu, wall = run_measured([sys.executable, "verify.py", "all", "--quick", "--cache", str(cache),
                                          "--json", str(work_dir / "quick-suite.json")], tree,
                                         child_environment(work_dir))
        if status == 0 and empty and tree_fingerprint not in known:
            uncached.write_text(json.dumps({**known, tree_fingerprint: cpu}))
    print(f"quick suite cache: status {status}, {cpu:.0f} s CPU, {wall:.0f} s wall", file=sys.stderr, flush=True)
    if status != 0:
        raise RuntimeError(f"the unmutated quick suite did not give its recorded verdicts (status {status})")
    return cache, known.get(tree_fingerprint, cpu)


def pin_quick_numbers_here(tree: Path, work_dir: Path, cache: Path) -> str | None:
    """The test that holds the quick suite to its pinned numbers (tests/quick_numbers.json) runs only on the
    machine they were recorded on (its torch build and CPU model); elsewhere it skips, and a mutant that moves a
    number but no verdict would survive on this machine and die on that one.  So where the environments differ,
    the pins in the run's copy of the tree are rewritten from the unmutated quick suite just run here
    (``warm_quick_suite_cache``'s JSON), as ``scripts/generate.py --quick-numbers`` would.  A kept cache filled on
    another machine would mix its numbers with this one's: refused.  Returns the recorded environment where the
    pins were rewritten, else None."""
    import generate                                  # scripts/generate.py: the pins' own writer
    here = generate.numbers_environment()
    filled_on = cache / "filled-on.json"             # a name the result cache never uses (its rows are in xx/)
    if filled_on.exists() and json.loads(filled_on.read_text()) != here:
        raise RuntimeError(f"the quick-suite cache {cache} was filled on {filled_on.read_text()}, this is {here}: "
                           "give this machine its own --quick-suite-cache")
    filled_on.write_text(json.dumps(here))
    pinned = tree / "tests" / "quick_numbers.json"
    stored = json.loads(pinned.read_text())
    recorded = stored["environment"]
    # the tree's own rule (a tree older than holds_here: the recorder's machine only)
    if getattr(generate, "holds_here", lambda stored: recorded == here)(stored):
        return None
    pinned.write_text(generate.quick_numbers(work_dir / "quick-suite.json"))
    print(f"pinned quick numbers: recorded on {recorded}; held to this machine's unmutated quick suite instead",
          file=sys.stderr, flush=True)
    return recorded


def run_mutant(mutant: Mutant, tree: Path, work_dir: Path, baseline: dict, factor: float,
               quick_suite_cache: Path | None = None, fixed: tuple[list[str], float] | None = None) -> None:
    """Run the mutant's relevant tests (or, with ``fixed`` = (tests, CPU seconds they took unmutated), those)."""
    tests = fixed[0] if fixed else relevant_tests(mutant, baseline)
    mutant.tests, mutant.test_ids = len(tests), tests
    mutant.test_files = sorted({nodeid.split("::")[0] for nodeid in tests})
    if not tests:
        mutant.outcome, mutant.killed_by = "survived", ""
        mutant.diff = _diff(tree / mutant.path, mutant)
        return
    cost = fixed[1] if fixed else sum(baseline["tests"][nodeid]["cpu"] for nodeid in tests)
    mutant.cpu_budget = factor * cost + 60
    (work_dir / "failed.json").unlink(missing_ok=True)
    with applied(mutant, tree) as diff:
        mutant.diff = diff
        status, mutant.cpu_seconds, mutant.wall_seconds = run_measured(
            [sys.executable, *pytest_arguments(["-x", *tests])], tree,
            child_environment(work_dir, {"QUICK_SUITE_CACHE": str(quick_suite_cache)} if quick_suite_cache else None),
            cpu_budget=mutant.cpu_budget, wall_budget=10 * mutant.cpu_budget)
    failed = json.loads((work_dir / "failed.json").read_text()) if (work_dir / "failed.json").exists() else []
    mutant.killed_by = failed[0] if failed else ""
    if status in ("timeout", "stalled"):
        mutant.outcome, mutant.status = status, None
    elif status in KILLED_STATUSES:
        mutant.outcome, mutant.status = "killed", status
    elif status in SURVIVED_STATUSES:
        mutant.outcome, mutant.status = "survived", status
    else:
        raise RuntimeError(f"{mutant.name}: pytest exited with status {status} (a usage error of this script)")


def _unified(original: str, mutated: str) -> str:
    lines = difflib.unified_diff(original.splitlines(), mutated.splitlines(), lineterm="", n=0)
    return "\n".join(line for line in lines if line[:1] in "+-" and line[:3] not in ("+++", "---"))


def _diff(path: Path, mutant: Mutant) -> str:
    """The mutant's diff, computed in memory (a mutant that no test runs is never written)."""
    original = path.read_bytes().decode("utf-8")
    if mutant.mutant_class == "small":
        mutation = small_mutants.find(original, mutant.operator, mutant.occurrence)
        return _unified(original, small_mutants.apply(original, mutation))
    from cosmic_ray.mutating import mutate_code
    return _unified(original, mutate_code(original, operator_instance(mutant.operator), mutant.occurrence))


# --- statistics and the report --------------------------------------------------------------------------


def clopper_pearson(successes: int, trials: int, level: float = 0.95) -> tuple[float, float]:
    """The exact binomial interval: beta quantiles found by bisection on the regularized incomplete beta."""
    if trials == 0:
        return 0.0, 1.0
    tail = (1 - level) / 2

    def quantile(probability, a, b):
        low, high = mp.mpf(0), mp.mpf(1)
        for _ in range(60):
            middle = (low + high) / 2
            if mp.betainc(a, b, 0, middle, regularized=True) < probability:
                low = middle
            else:
                high = middle
        return float((low + high) / 2)

    lower = 0.0 if successes == 0 else quantile(tail, successes, trials - successes + 1)
    upper = 1.0 if successes == trials else quantile(1 - tail, successes + 1, trials - successes)
    return lower, upper


def summarize(mutants: list[Mutant], key) -> dict:
    groups = {}
    for mutant in mutants:
        groups.setdefault(key(mutant), []).append(mutant)
    groups["overall"] = list(mutants)
    summary = {}
    for name, group in groups.items():
        counts = {outcome: sum(m.outcome == outcome for m in group)
                  for outcome in ("killed", "timeout", "survived", "stalled")}
        if not group:
            continue
        killed = counts["killed"] + counts["timeout"]
        low, high = clopper_pearson(killed, len(group))
        summary[name] = {"sampled": len(group), **counts, "kill_share": killed / len(group) if group else None,
                         "interval_95": [low, high]}
    return summary


def print_summary(title: str, summary: dict, population: dict | None = None) -> None:
    print(f"\n{title}")
    print(f"{'':26} {'population':>10} {'sampled':>7} {'killed':>6} {'timeout':>7} {'survived':>8} "
          f"{'stalled':>7}  kill share [95 % CI]")
    for name, row in summary.items():
        size = (population or {}).get(name, sum((population or {}).values()) if name == "overall" else "")
        share = f"{100 * row['kill_share']:.1f} % [{100 * row['interval_95'][0]:.1f}, {100 * row['interval_95'][1]:.1f}]"
        print(f"{name:26} {size!s:>10} {row['sampled']:>7} {row['killed']:>6} {row['timeout']:>7} "
              f"{row['survived']:>8} {row['stalled']:>7}  {share}")


def print_population(sizes: dict, population: dict, left_out: dict) -> None:
    """The populations per class and package, the small class per operator family, and what it leaves out."""
    packages = list(next(iter(sizes.values())))
    print(f"{'':28}" + "".join(f"{p:>10}" for p in packages) + f"{'all':>10}")
    for mutant_class, row in sizes.items():
        print(f"{mutant_class:28}" + "".join(f"{row[p]:>10}" for p in packages) + f"{sum(row.values()):>10}")
        if mutant_class == "small":
            for name in sorted({family(m.operator) for m in population["small"]}):
                counts = [sum(m.package == p and family(m.operator) == name for m in population["small"])
                          for p in packages]
                print(f"  {name:26}" + "".join(f"{n:>10}" for n in counts) + f"{sum(counts):>10}")
    if left_out:
        print("literals the small class leaves out (2 mutants each):")
        for reason in sorted({r for counts in left_out.values() for r in counts}):
            counts = [left_out.get(p, {}).get(reason, 0) for p in packages]
            print(f"  {reason:26}" + "".join(f"{n:>10}" for n in counts) + f"{sum(counts):>10}")


def family(operator: str) -> str:
    return operator.split("_")[0]


def report(mutants, population, args, extra) -> dict:
    """Per class, the kill share per package and per operator family: each class is a population of its own,
    sampled on its own, so its intervals are those of a simple random sample of it and are not pooled."""
    summary = {}
    for mutant_class, sizes in population.items():
        group = [m for m in mutants if m.mutant_class == mutant_class]
        by_package = summarize(group, key=lambda m: m.package)
        by_operator = summarize(group, key=lambda m: family(m.operator))
        print_summary(f"{mutant_class} mutants: kill share per package", by_package, sizes)
        print_summary(f"{mutant_class} mutants: kill share per operator family", by_operator)
        summary[mutant_class] = {"packages": by_package, "operators": by_operator}
    survivors = [m for m in mutants if m.outcome in ("survived", "stalled")]
    if survivors:
        print("\nsurvivors:")
        for mutant in sorted(survivors, key=lambda m: (m.path, m.line)):
            print(f"  {mutant.name}  [{mutant.kind}; {', '.join(mutant.test_files) or 'no test executes it'}]")
            print("    " + mutant.diff.replace("\n", "\n    "))
    payload = {"version": 2, "seed": args.seed, "sample": len(mutants), "population": population,
               **extra, "summary": summary,
               "mutants": [asdict(m) for m in mutants]}
    if args.out:
        Path(args.out).write_text(json.dumps(payload, indent=1))
    return payload


# --- the command line -----------------------------------------------------------------------------------


def relocate(stored: Mutant, population: list[Mutant]) -> Mutant | None:
    """The current mutant that is ``stored``: same operator, same line text, nearest line."""
    candidates = [m for m in population if m.path == stored.path and m.operator == stored.operator
                  and m.line_text == stored.line_text and m.column == stored.column]
    return min(candidates, key=lambda m: abs(m.line - stored.line), default=None)


def shard(text: str) -> tuple[int, int]:
    """``K/N`` -> (K, N), 0 <= K < N."""
    index, _, count = text.partition("/")
    if not (index.isdigit() and count.isdigit() and int(index) < int(count)):
        raise argparse.ArgumentTypeError(f"{text!r} is not K/N with 0 <= K < N")
    return int(index), int(count)


def resume(chosen: list[Mutant], paths: list[str], seed: int, tree_fingerprint: str) -> str:
    """Give the sampled mutants the outcomes that stored runs of the same sample reached; return what is wrong, if
    anything.  A run is the same when its seed and tree are, and every mutant it ran is in this sample (so the same
    --sample and --class); the mutants still to run are then the rest of the same shuffled order, and a run stopped
    anywhere is still a uniform sample of each class."""
    sampled = {mutant.name: mutant for mutant in chosen}
    for path in paths:
        try:
            run = read_json(Path(path))
        except (OSError, ValueError) as error:
            return f"--resume {path}: {error}"
        if run.get("seed") != seed or run.get("fingerprint") != tree_fingerprint:
            return f"--resume {path}: another run (seed {run.get('seed')}, or another tree than this one)"
        for stored in run.get("mutants", []):
            name = Mutant(**stored).name
            mutant = sampled.get(name)
            if mutant is None:
                return f"--resume {path}: {name} is not in this sample (another --sample or --class?)"
            if stored["outcome"]:
                mutant.__dict__.update(stored)
    return ""


def _interrupt(signum, frame):
    raise KeyboardInterrupt


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sample", type=int, default=200,
                        help="mutants to run of each class (stratified per package)")
    parser.add_argument("--class", dest="mutant_class", choices=(*CLASSES, "both"), default="core",
                        help="core: cosmic-ray's operators; small: every numeric literal one unit up and down "
                        "(scripts/small_mutants.py); both: each sampled and reported on its own (default core)")
    parser.add_argument("--count", action="store_true",
                        help="print each class's population per package (and the literals the small class "
                        "leaves out), run nothing")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--package", action="append", choices=PACKAGES, help="restrict to a package (repeatable)")
    parser.add_argument("--out", help="write the results as JSON")
    parser.add_argument("--timeout-factor", type=float, default=3.0,
                        help="CPU budget per mutant, in multiples of the unmutated relevant tests' CPU time")
    parser.add_argument("--rerun", metavar="RESULTS_JSON", help="run the survivors of a stored run again")
    parser.add_argument("--tests", nargs="+", metavar="NODEID",
                        help="with --rerun: run each survivor against these tests only (tests written since the "
                        "stored run), without a coverage baseline; they must pass on the unmutated tree")
    parser.add_argument("--dry-run", action="store_true",
                        help="show each sampled mutant's relevant tests and CPU budget, run none")
    parser.add_argument("--baseline", metavar="JSON", help="reuse (or store) the per-test coverage baseline here "
                        "(gzip-compressed where the name ends in .gz); it is measured again when a module or a "
                        "test changed")
    parser.add_argument("--resume", nargs="+", metavar="RESULTS_JSON",
                        help="go on with a stopped run: the stored results of the same --seed, --sample and --class "
                        "on the same tree (one file per earlier process; .json.gz: compressed); their mutants keep their outcomes")
    parser.add_argument("--shard", type=shard, default=(0, 1), metavar="K/N",
                        help="run every N-th of the mutants left, starting at the K-th (0 <= K < N): N processes "
                        "with the same arguments and K = 0 ... N-1 run one sample side by side")
    parser.add_argument("--merge", action="store_true",
                        help="with --resume: report the stored runs' mutants as one run (and write --out), run none")
    parser.add_argument("--quick-suite-cache", metavar="DIR",
                        help="keep the unmutated quick suite's result cache in DIR, for the later pieces of a run "
                        "(and other runs) to read instead of running the suite again (default: a temporary folder)")
    parser.add_argument("--jobs", type=int, default=1,
                        help="measure the baseline with this many pytest runs side by side (the mutants run one at a "
                        "time; run another seed beside this one with the same --baseline to use a second core)")
    args = parser.parse_args(argv)
    packages = tuple(args.package or PACKAGES)
    signal.signal(signal.SIGTERM, _interrupt)          # a `kill` ends the run as Ctrl-C does
    started = time.monotonic()

    with tempfile.TemporaryDirectory(prefix="mutation-") as scratch:
        work_dir = Path(scratch)
        tree = copy_repository(work_dir)
        print(f"copied {ROOT} to {tree}", file=sys.stderr)

        stored = read_json(Path(args.rerun)) if args.rerun else None
        classes = (CLASSES if args.mutant_class == "both" else (args.mutant_class,)) if not stored else \
            tuple(c for c in CLASSES if any(m["operator"].startswith(f"{c}/") for m in stored["mutants"]))
        population = {c: enumerate_mutants(tree, packages, work_dir, c) for c in classes}
        sizes = {c: {p: sum(m.package == p for m in group) for p in packages} for c, group in population.items()}
        print(f"population: {sizes} (annotations left out)", file=sys.stderr)
        if args.count:
            print_population(sizes, population, left_out_literals(tree, packages) if "small" in classes else {})
            return 0

        before, survivors = None, []
        if stored:
            chosen, before = [], [Mutant(**m) for m in stored["mutants"]]
            for old in before:
                if old.outcome in ("survived", "stalled"):
                    found = relocate(old, population[old.mutant_class])
                    if found is None:
                        print(f"  {old.name}: no longer in the code (kept as {old.outcome})", file=sys.stderr)
                        chosen.append(Mutant(**asdict(old)))
                    else:
                        chosen.append(found)
                        survivors.append((found, old))
                else:
                    chosen.append(Mutant(**asdict(old)))
            args.seed = stored["seed"]
            # version 1 (before classes): the population of the core class, per package
            population_sizes = stored["population"] if stored.get("version", 1) >= 2 else {"core": stored["population"]}
        else:
            chosen = [m for c in classes for m in sample(population[c], args.sample, args.seed,
                                                              stream="" if c == "core" else c)]
            if len(classes) > 1:              # interleaved, so that a stopped run is a uniform sample of each class
                random.Random(f"{args.seed}:classes").shuffle(chosen)
            population_sizes = sizes

        tree_fingerprint = fingerprint(tree)
        if args.resume:
            if stored:
                parser.error("--resume goes on with a sampled run, not with --rerun")
            problem = resume(chosen, args.resume, args.seed, tree_fingerprint)
            if problem:
                parser.error(problem)
        elif args.merge:
            parser.error("--merge goes with --resume")

        stored_baseline = Path(args.baseline) if args.baseline else None
        fixed = None
        if args.merge:
            baseline = {"failed": [], "tests": {}}          # nothing runs
        elif args.tests:
            if not stored:
                parser.error("--tests goes with --rerun")
            baseline = {"failed": [], "tests": {}}
        elif stored_baseline and stored_baseline.exists() and \
                read_json(stored_baseline)["fingerprint"] == tree_fingerprint:
            baseline = load_baseline(stored_baseline)
            print("baseline: reused", file=sys.stderr)
        else:
            print("baseline: the suite under coverage, one context per test", file=sys.stderr, flush=True)
            baseline = measure_baseline(tree, work_dir, args.jobs)
            if stored_baseline:
                store_baseline(baseline, tree_fingerprint, stored_baseline)
                baseline = load_baseline(stored_baseline)
            else:
                baseline = load_baseline_from(baseline)
        if baseline["failed"]:
            print(f"baseline: {len(baseline['failed'])} tests fail unmutated and are left out: "
                  + ", ".join(baseline["failed"]), file=sys.stderr)

        if args.rerun and not args.tests and stored["fingerprint"] == tree_fingerprint:
            for mutant, old in survivors:               # same tree, same tests: the same run would follow
                tests = relevant_tests(mutant, baseline)
                if tests == old.test_ids or not old.test_ids and \
                        (len(tests), sorted({baseline["tests"][t]["file"] for t in tests})) == (old.tests, old.test_files):
                    mutant.__dict__.update({**asdict(old), "line": mutant.line})
        shard_index, shards = args.shard
        to_run = [] if args.merge else [m for m in chosen if not m.outcome][shard_index::shards]

        if args.dry_run:
            for mutant in to_run:
                tests = relevant_tests(mutant, baseline)
                budget = args.timeout_factor * sum(baseline["tests"][t]["cpu"] for t in tests) + 60 if tests else 0
                files = sorted({baseline["tests"][t]["file"] for t in tests})
                print(f"{mutant.name}  [{mutant.kind}] {len(tests)} tests, budget {budget:.0f} s CPU: "
                      f"{', '.join(files) or '-'}")
            return 0
        interrupted = False
        try:
            quick_suite_cache, quick_suite_cpu = warm_quick_suite_cache(
                tree, work_dir, args.quick_suite_cache and Path(args.quick_suite_cache), tree_fingerprint) \
                if to_run else (None, 0.0)
            if to_run:
                pin_quick_numbers_here(tree, work_dir, quick_suite_cache)
            if args.tests and to_run:
                status, cpu, _ = run_measured([sys.executable, *pytest_arguments(args.tests)], tree,
                                              child_environment(work_dir, {"QUICK_SUITE_CACHE": str(quick_suite_cache)}))
                print(f"--tests unmutated: status {status}, {cpu:.0f} s CPU", file=sys.stderr, flush=True)
                if status != 0:
                    raise RuntimeError(f"--tests fail on the unmutated tree (status {status})")
                # a mutant may recompute the whole quick suite through the cache: that is its cost, not a slowdown
                fixed = (args.tests, cpu + quick_suite_cpu)
            for index, mutant in enumerate(to_run, 1):
                run_mutant(mutant, tree, work_dir, baseline, args.timeout_factor, quick_suite_cache, fixed)
                print(f"[{index}/{len(to_run)}] {mutant.outcome:8} {mutant.cpu_seconds:6.0f} s CPU "
                      f"{mutant.wall_seconds:6.0f} s  {mutant.name}  {mutant.killed_by}", file=sys.stderr, flush=True)
        except KeyboardInterrupt:
            interrupted = True
            print("interrupted: reporting the mutants run so far", file=sys.stderr)
        done = [m for m in chosen if m.outcome]
        extra = {"packages": list(packages), "fingerprint": tree_fingerprint, "baseline_failures": baseline["failed"],
                 "interrupted": interrupted, "seconds": time.monotonic() - started,
                 **({"resumed_from": args.resume, "shard": f"{shard_index}/{shards}"} if args.resume or shards > 1 else {})}
        if before:
            for mutant_class, sizes_of_class in population_sizes.items():
                print_summary(f"before (the stored run), {mutant_class} mutants",
                              summarize([m for m in before if m.mutant_class == mutant_class], key=lambda m: m.package),
                              sizes_of_class)
            extra["rerun_of"] = args.rerun
        report(done, population_sizes, args, extra)
        print(f"\n{time.monotonic() - started:.0f} s", file=sys.stderr)
    return 130 if interrupted else 0


if __name__ == "__main__":
    sys.exit(main())
