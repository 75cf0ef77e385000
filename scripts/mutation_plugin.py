"""A pytest plugin for scripts/mutation.py: which tests failed, and in the baseline what each test ran and cost.

Loaded with ``-p mutation_plugin`` (scripts/ on PYTHONPATH).  It always writes the node ids of
failing tests to ``$MUTATION_FAILED_TESTS``.  In the unmutated baseline run (under ``coverage run``,
``$MUTATION_BASELINE`` set) it also, for each test,

- switches coverage's dynamic context to the test's node id for its setup, call and teardown, so
  that lines (and code objects entered) are recorded per test;
- notes the coverage files of the subprocesses the test started (the CLI tests run ``verify.py``,
  the notebook test a kernel), which carry no context of their own;
- notes its CPU time (this process and the children it reaped) and the wider-scoped fixtures
  defined in tests/ that it shares with other tests: such a fixture (``outcomes``, ``quick_suite``)
  runs code on behalf of every test that uses it, but coverage sees it in the first one only;
- clears the packages' ``lru_cache``s first, so a test that calls a cached function records the
  function's lines even when an earlier test filled the cache.
"""

import functools
import inspect
import json
import os
import sys
import time
from pathlib import Path

import pytest

PACKAGES = ("theorems", "numerics", "simulate")
BASELINE = os.environ.get("MUTATION_BASELINE")
_failed = []
_tests = {}


def pytest_runtest_logreport(report):
    if report.failed and report.nodeid not in _failed:
        _failed.append(report.nodeid)


def pytest_collectreport(report):
    if report.failed:
        _failed.append(report.nodeid or "<collection>")


def _cpu_seconds():
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


def _clear_caches():
    for name, module in list(sys.modules.items()):
        if module is not None and name.split(".")[0] in PACKAGES:
            for value in list(vars(module).values()):
                if isinstance(value, functools._lru_cache_wrapper):
                    value.cache_clear()


def _shared_fixtures(item):
    """Keys of the non-function-scoped fixtures from tests/ that ``item`` uses, one key per fixture instance."""
    tests_dir = Path(str(item.config.rootpath)) / "tests"
    keys = []
    for name, definitions in item._fixtureinfo.name2fixturedefs.items():
        definition = definitions[-1]
        scope = definition.scope if isinstance(definition.scope, str) else definition.scope.value
        if scope == "function":
            continue
        try:
            where = Path(inspect.getfile(definition.func)).resolve()
        except TypeError:
            continue
        if tests_dir.resolve() not in where.parents:
            continue                                  # pytest's own, such as tmp_path_factory
        instance = {"session": "", "package": str(item.path.parent), "module": str(item.path),
                    "class": item.nodeid.rsplit("::", 1)[0]}[scope]
        keys.append(f"{scope}:{name}:{instance}")
    return sorted(keys)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    if not BASELINE:
        yield
        return
    import coverage

    measuring = coverage.Coverage.current()
    data_dir = Path(os.environ["COVERAGE_FILE"]).parent
    files_before = set(data_dir.iterdir())
    _clear_caches()
    cpu, wall = _cpu_seconds(), time.monotonic()
    if measuring:
        measuring.switch_context(item.nodeid)
    yield
    if measuring:
        measuring.switch_context("")
    _tests[item.nodeid] = {
        "file": item.path.relative_to(item.config.rootpath).as_posix(),
        "index": len(_tests),
        "cpu": _cpu_seconds() - cpu,
        "wall": time.monotonic() - wall,
        "fixtures": _shared_fixtures(item),
        "subprocess_files": sorted(path.name for path in set(data_dir.iterdir()) - files_before),
    }


def pytest_sessionfinish(session, exitstatus):
    Path(os.environ["MUTATION_FAILED_TESTS"]).write_text(json.dumps(_failed))
    if BASELINE:
        Path(BASELINE).write_text(json.dumps({"pid": os.getpid(), "tests": _tests}))
