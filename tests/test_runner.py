"""Grid points run in local processes or on a Dask cluster give the serial run's numbers, in the serial order."""

import json

import mpmath as mp
import pytest

import verify
from theorems import REGISTRY

GRID = ["double-descent", "--quick", "--grid", "gamma=0.3,0.6,3/2", "--param", "d=80"]


def rows(path):
    return [(r["params"], r["theory"], r["verdict"], r["mc"]["mean"], r["mc"]["se"])
            for r in json.loads(path.read_text())["results"]]


@pytest.fixture(scope="module")
def serial(tmp_path_factory):
    path = tmp_path_factory.mktemp("serial") / "serial.json"
    assert verify.main([*GRID, "--json", str(path)]) == 0
    return rows(path)


def test_local_workers_reproduce_the_serial_run(serial, tmp_path):
    path = tmp_path / "workers.json"
    assert verify.main([*GRID, "--workers", "2", "--json", str(path)]) == 0
    assert rows(path) == serial


def test_a_dask_cluster_reproduces_the_serial_run(serial, tmp_path):
    distributed = pytest.importorskip("dask.distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        path = tmp_path / "dask.json"
        assert verify.main([*GRID, "--scheduler", cluster.scheduler_address, "--json", str(path)]) == 0
    assert rows(path) == serial


def test_an_unreachable_scheduler_is_a_one_line_error(capsys):
    pytest.importorskip("dask.distributed")
    code = verify.main(["double-descent", "--quick", "--theory-only", "--scheduler", "tcp://127.0.0.1:9"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "scheduler" in err


def test_workers_must_be_a_positive_count(capsys):
    assert verify.main(["double-descent", "--workers", "0"]) == 2
    assert "--workers" in capsys.readouterr().err


def test_a_cuda_run_records_what_its_random_streams_depend_on(monkeypatch):
    """CUDA random streams and reduction orders depend on the GPU model: the record names it, its generation,
    the CUDA build and the determinism settings (faked here: CI has no GPU)."""
    import types

    import torch

    from engine.session import Request, environment
    props = types.SimpleNamespace(name="NVIDIA H200", major=9, minor=0, multi_processor_count=132)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda device: props)
    record = environment(Request(targets=["all"], params={}, grid={}), torch.device("cuda"))
    assert record["gpu"] == "NVIDIA H200" and record["compute_capability"] == "9.0"
    assert record["multiprocessors"] == 132
    assert {"cuda", "cudnn", "deterministic_algorithms", "cudnn_deterministic"} <= set(record)
    assert "gpu" not in environment(Request(targets=["all"], params={}, grid={}), torch.device("cpu"))


def test_a_failing_check_is_not_reported_as_bad_input(monkeypatch):
    """Only an unusable --scheduler is bad input (exit 2); a check's own error is a bug and keeps its traceback."""
    import theorems
    from theorems.core import Theorem

    def broken(theorem, params, run):
        raise RuntimeError("Expected all tensors to be on the same device")

    import dataclasses
    monkeypatch.setitem(theorems.REGISTRY, "double-descent",
                        dataclasses.replace(theorems.get("double-descent"), check=broken))
    assert isinstance(theorems.get("double-descent"), Theorem)
    with pytest.raises(RuntimeError, match="same device"):
        verify.main(["double-descent", "--quick"])


@pytest.mark.parametrize("error, reason", [
    (MemoryError(), "out of memory"),
    (RuntimeError("[enforce fail at alloc_cpu.cpp:127] err == 0. DefaultCPUAllocator: can't allocate memory: you "
                  "tried to allocate 80 bytes."), "out of memory: can't allocate memory: you tried to allocate 80 bytes."),
    (OverflowError("int too big to convert"), "a number beyond float64's range: int too big to convert"),
    (TypeError("randn(): argument 'size' failed to unpack the object at pos 2 with error \"Overflow when unpacking "
               "long long"), "a tensor size beyond int64"),
    (TypeError("unsupported operand type(s)"), None), (RuntimeError("shape mismatch"), None),
])
def test_a_point_beyond_the_machine_is_named_and_any_other_error_is_a_bug(error, reason, monkeypatch, capsys):
    import dataclasses

    import theorems
    from simulate.device import exhausted_resource

    assert exhausted_resource(error) == reason

    def check(theorem, params, run):
        raise error

    monkeypatch.setitem(theorems.REGISTRY, "double-descent",
                        dataclasses.replace(theorems.get("double-descent"), check=check))
    if reason is None:
        with pytest.raises(type(error)):
            verify.main(["double-descent", "--quick", "--no-cache"])
        return
    assert verify.main(["double-descent", "--quick", "--no-cache"]) == 2
    err = capsys.readouterr().err
    assert err == f"verify.py: error: double-descent at gamma=0.5, sigma=0.2, d=160 cannot be simulated here: {reason}\n"


def test_parameter_values_reach_torch_as_numbers_it_holds():
    from numerics.expr import parse_number
    from theorems.core import as_float
    values = as_float({"d": parse_number("40"), "sigma": parse_number("1e300"), "gamma": parse_number("1/2")})
    assert values == {"d": 40, "sigma": 1e300, "gamma": 0.5} and type(values["d"]) is int
    assert type(values["sigma"]) is float   # an exact 10^300 as an int would overflow torch's scalar
    # values that are plain numbers already keep their value: a float is not truncated, an int stays an int
    plain = as_float({"a": 2.5, "b": mp.mpf("2.5"), "c": 3, "d": mp.mpf(3), "e": 10**300})
    assert plain == {"a": 2.5, "b": 2.5, "c": 3, "d": 3.0, "e": 1e300} and type(plain["c"]) is int


def test_a_sensitive_case_runs_with_its_own_draws_and_only_at_its_own_parameters():
    from engine.session import Request, build_tasks
    theorem = REGISTRY["linear-transfer"]
    points = theorem.points({}, "quick")
    sensitive = [p for p in points if p.trials]
    assert len(sensitive) == 1 and sensitive[0].trials["quick"] == 12_000
    assert round(float(sensitive[0].params["gamma"] * sensitive[0].params["d"])) == 12     # n = 12
    assert not any(p.trials for p in theorem.points({"sigma": "1/2"}, "quick"))           # moved: the claim's draws
    request = lambda trials: Request(targets=["linear-transfer"], params={}, grid={}, tier="quick", trials=trials)
    assert [t.trials for t in build_tasks([(theorem, p) for p in points], request(None), ["gaussian"])] == [None, None, 12_000]
    assert {t.trials for t in build_tasks([(theorem, p) for p in points], request(7), ["gaussian"])} == {7}
