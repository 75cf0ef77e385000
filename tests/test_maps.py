"""Validity maps (engine/maps.py, ``verify.py map``): classification from the effect's interval, bisection where
neighbours differ, the boundary with its uncertainty, reuse of stored points, and bad input."""

import json

import pytest
import sympy as sp

import verify
from engine.cache import code_identity
from engine.maps import Axis, boundaries, classify, load_reusable, next_points, summarise
from theorems import REGISTRY


def _row(low, high, verdict="agree", unit="relative", z=0.0, critical=3.0):
    return {"verdict": verdict, "effect": {"estimate": (low + high) / 2, "low": low, "high": high, "unit": unit},
            "z": z, "mc": {"z_critical": critical}}


@pytest.mark.parametrize("row, cls", [
    (_row(-0.01, 0.02), "holds"),
    (_row(0.06, 0.09, "disagree", z=9.0), "fails"),
    (_row(-0.09, -0.06, "disagree", z=-9.0), "fails"),
    (_row(0.03, 0.08), "undecided"),                                   # straddles tau = 0.05: not resolved
    (_row(0.01, 0.03, "disagree", z=4.0), "holds"),                    # detectably off, but within tau
    (_row(-0.01, 0.01, "disagree", z=0.1), "fails"),                   # another comparison failed (a bound, a count)
    (_row(0.5, 0.5, "agree", unit="tolerance"), "holds"),              # per-draw: by the verdict
    (_row(-0.9, -0.8, "agree"), "holds"),                              # a one-sided bound with room to spare
    ({"verdict": "inconclusive", "effect": None}, "undecided"),
])
def test_a_point_is_classified_from_its_effect_interval_against_tau(row, cls):
    assert classify(row, 0.05) == cls


def test_bisection_runs_where_neighbours_differ_down_to_the_lines_resolution():
    axis = Axis("x", sp.Integer(0), sp.Integer(1), 3)
    points = {(sp.Integer(0),): "holds", (sp.Rational(1, 2),): "holds", (sp.Integer(1),): "fails"}
    assert next_points(points, [axis]) == [(sp.Rational(3, 4),)]
    (found,) = boundaries(points, [axis])
    assert found["between"] == [0.5, 1.0] and found["estimate"] == 0.75 and found["uncertainty"] == 0.25
    fine = {(sp.Rational(k, 128),): "holds" if k < 64 else "fails" for k in (63, 64)}
    assert next_points(fine, [axis]) == []                               # 1/128 < 1/64 of the range: stop


def test_a_map_finds_the_sharp_edge_and_reuses_its_points(tmp_path, capsys):
    # dudley-distance fails exactly where delta >= 2 (a bound, not its estimate): the map's boundary brackets 2
    args = ["map", "dudley-distance", "--quick", "--over", "delta=1/2:7/2:3", "--budget", "7", "--out", str(tmp_path)]
    assert verify.main(args) == 0
    data = json.loads((tmp_path / "map-dudley-distance-delta.json").read_text())
    (edge,) = data["boundaries"]
    assert edge["between"][0] < 2 <= edge["between"][1] and edge["uncertainty"] < 0.2
    assert len(data["points"]) == 7 and data["rate_per_point"] == pytest.approx(REGISTRY["dudley-distance"].false_alarm / 7)
    assert {p["class"] for p in data["points"] if p["at"]["delta"] >= 2} == {"fails"}
    assert (tmp_path / "map-dudley-distance-delta.png").stat().st_size > 0
    assert (tmp_path / "map-dudley-distance-delta.svg").stat().st_size > 0
    capsys.readouterr()
    assert verify.main(args) == 0                                        # the second run simulates nothing again
    again = json.loads((tmp_path / "map-dudley-distance-delta.json").read_text())
    assert [p["row"] for p in again["points"]] == [p["row"] for p in data["points"]]


def test_a_stored_map_is_reused_only_by_the_code_that_computed_it(tmp_path, capsys):
    args = ["map", "dudley-distance", "--quick", "--over", "delta=1/2:7/2:3", "--budget", "3", "--out", str(tmp_path)]
    assert verify.main(args) == 0
    path = str(tmp_path / "map-dudley-distance-delta.json")
    key = json.loads(open(path).read())["key"]
    assert key["sources"] == code_identity(REGISTRY["dudley-distance"])["sources"]
    assert len(load_reusable(path, key)) == 3                            # the same code: every point reused
    assert load_reusable(path, {**key, "sources": "0" * 64}) == {}      # a source it runs changed: none


@pytest.mark.parametrize("args, fragment", [
    (["map", "dudley-distance", "--quick"], "one or two --over"),
    (["map", "dudley-distance", "--over", "delta=3:1"], "START must be below STOP"),
    (["map", "dudley-distance", "--over", "lam=1:2"], "has no parameter 'lam'"),
    (["map", "dudley-distance", "--over", "delta=1:2:1"], "STEPS must be between"),
    (["map", "dudley-distance", "--over", "delta=1:x"], "unknown name"),
    (["map", "dudley-distance", "--over", "delta=1:2", "--tolerance", "0"], "--tolerance must be > 0"),
    (["map", "dudley-distance", "--over", "delta=1:2", "--param", "delta=1"], "named once"),
    (["map", "dudley-distance", "--over", "delta=1:2", "--over", "sigma=0:1", "--over", "d=2:4"], "one or two"),
    (["map", "no-such-claim", "--over", "delta=1:2"], "unknown theorem id"),
    (["map", "dudley-distance", "--over", "delta=1:2", "--grid", "sigma=0,1"], "no --grid"),
])
def test_bad_map_input_is_one_line_and_exit_2(args, fragment, capsys):
    assert verify.main(args) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and fragment in err


def test_a_maps_points_are_placed_in_the_recorded_regions_by_their_exact_parameters():
    # a = 1/10 is 0.1 in a row's floats, which lies outside the region 'a == 1/10'; the exact parameters do not
    theorem = REGISTRY["ptft-sample-efficiency"]
    axes = [Axis("rho", sp.Integer(0), sp.Rational(9, 10))]
    exact = {(value,): theorem.resolve({"a": "1/10", "rho": str(value)}, "quick")
             for value in (sp.Rational(3, 4), sp.Rational(1, 2))}
    rows = {key: {"params": {name: float(v) for name, v in params.items()}, "verdict": "agree"}
            for key, params in exact.items()}
    data = summarise(theorem, axes, {key: "holds" for key in exact}, rows, 0.05, {}, 0.0, 1e-3, exact)
    assert {p["at"]["rho"]: p["in_finding_region"] for p in data["points"]} == {0.75: True, 0.5: False}
