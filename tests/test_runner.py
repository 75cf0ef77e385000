"""Grid points run in local processes or on a Dask cluster give the serial run's numbers, in the serial order."""

import json

import pytest

import verify

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
