"""``pytest --claims [ID ...]``: each case of the claims as a test, judged as ``verify.py`` judges it.

The distribution registers this module as a pytest plugin (entry point ``pytest11``), so pytest loads it
in every run, in every repository, wherever the project is installed.  Without ``--claims`` it adds its
options and does nothing else: it imports nothing beyond pytest, collects nothing, changes nothing.

With ``--claims`` the session collects, besides its own tests, one item per case of the named claims
(every registered claim when no id is given) at ``--claims-tier`` (``quick`` or ``default``, the
default: as ``verify.py``), under the node ``claims``: ``claims::ID[NAME=VALUE,...]``, the values as
``--param`` takes them.  The points, seeds and false-alarm split (Bonferroni over the collected cases)
are those of ``verify.py ID ... [--quick]``: the tasks are built by ``engine.session`` and run by
``engine.runner``, so an item fails exactly when that command would count its row as changed and exit 1,
and its report gives the verdict, the numbers and the recorded finding.  ``--claims-from`` loads claims
from a module or a ``.py`` file first, as ``verify.py --claims-from`` does; so do the modules of the
``transfer_theorem_checker.claims`` entry points.  Ids after ``--claims``, paths before it.
"""

from __future__ import annotations

import pytest

TIERS = ("quick", "default")
_TASKS = pytest.StashKey[list]()


def pytest_addoption(parser):
    group = parser.getgroup("claims", "transfer-theorem-checker: the checks of claims as tests")
    group.addoption("--claims", nargs="*", metavar="ID", default=None,
                    help="collect one test per case of these claims (every registered claim without ids)")
    group.addoption("--claims-tier", choices=TIERS, default=None,
                    help="the run tier of --claims: quick (CI sizes) or default (as verify.py; the default)")
    group.addoption("--claims-from", action="append", default=[], metavar="MODULE_OR_PATH",
                    help="with --claims: also load the claims a module (dotted name) or a .py file registers (repeatable)")


def pytest_configure(config):
    ids = config.getoption("claims")
    if ids is None:
        if config.getoption("claims_tier") or config.getoption("claims_from"):
            raise pytest.UsageError("--claims-tier and --claims-from apply to --claims, which was not given")
        return
    from engine import MixedInstallation, require_one_installation
    from engine.session import InputError
    try:
        require_one_installation()
        config.stash[_TASKS] = _tasks(list(ids), config.getoption("claims_tier") or "default",
                                      config.getoption("claims_from"))
    except (InputError, MixedInstallation) as error:
        raise pytest.UsageError(f"--claims: {error}") from None


def _tasks(ids: list[str], tier: str, sources: list[str]):
    """The runner tasks of ``verify.py IDS`` at ``tier`` (every claim without ids): same points, same family."""
    from engine.claim_sources import load_claim_sources
    from engine.session import Request, build_tasks, resolve_points, select
    from simulate.device import resolve_device
    loaded = load_claim_sources(sources)
    targets = ids or ["all"]
    if "all" in targets and len(targets) > 1:
        from engine.session import InputError
        raise InputError("'all' cannot be combined with claim ids")
    request = Request(targets, {}, {}, tier, device=str(resolve_device("auto")), claim_sources=loaded)
    return build_tasks(resolve_points(select(targets), {}, tier), request, ["gaussian"])


@pytest.hookimpl(tryfirst=True)   # before -k, -m and --deselect filter the items
def pytest_collection_modifyitems(session, config, items):
    tasks = config.stash.get(_TASKS, None)
    if tasks is None:
        return
    claims = Claims.from_parent(session, name="claims", nodeid="claims", tasks=tasks)
    # collected as pytest collects a file, so that the count, --collect-only and collection errors show it
    report = claims.ihook.pytest_make_collect_report(collector=claims)
    claims.ihook.pytest_collectreport(report=report)
    items.extend(report.result)


class Claims(pytest.Collector):
    """The collected cases of the claims (the node ``claims``)."""

    def __init__(self, *, tasks, **kwargs):
        super().__init__(**kwargs)
        self.tasks = tasks

    def collect(self):
        return [ClaimCase.from_parent(self, name=f"{task.theorem_id}[{_point(task.params)}]", task=task)
                for task in self.tasks]


def _point(params: dict) -> str:
    return ",".join(f"{name}={value}" for name, value in params.items())


class ClaimChanged(Exception):
    """The case's verdict differs from the one recorded with its claim (``verify.py`` would exit 1)."""

    def __init__(self, row: dict):
        super().__init__(f"CHANGED: {row['verdict']} (recorded: {row['expected']})")
        self.row = row


class ClaimCase(pytest.Item):
    """One case of a claim: run by engine.runner, failed when its verdict changed."""

    def __init__(self, *, task, **kwargs):
        super().__init__(**kwargs)
        self.task = task

    def runtest(self):
        import torch
        from engine.runner import run_task
        default_dtype = torch.get_default_dtype()
        try:
            row = run_task(self.task)
        finally:   # run_task sets float64 for a worker process; the session's other tests keep what they had
            torch.set_default_dtype(default_dtype)
        # pytest's own --junitxml writes these into the testcase
        self.user_properties += [("verdict", row["verdict"]), ("expected", row["expected"]), ("theory", row["theory"]),
                                 ("mc", row["mc"]), ("z", row["z"]), ("detail", row["detail"])]
        if row["as_expected"] is False:
            raise ClaimChanged(row)

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, ClaimChanged):
            from engine.render import row_text
            return f"{excinfo.value}\n{row_text(excinfo.value.row)}"
        return super().repr_failure(excinfo, style)

    def reportinfo(self):
        return self.path, None, f"claim {self.task.theorem_id} at {_point(self.task.params)}"
