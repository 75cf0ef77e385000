"""verify.py plot: files are written without a display, and what is drawn is what the checks computed."""

import json

import pytest

import verify
from engine.figures import FIGURES, layout

pytest.importorskip("matplotlib")


def test_a_figure_draws_the_checks_own_numbers(tmp_path):
    run = tmp_path / "run.json"
    code = verify.main(["plot", "faf-fig2", "--quick", "--grid", "lam=1/10,2/5", "--out", str(tmp_path), "--json", str(run)])
    assert code == 0
    for suffix in ("png", "svg", "json"):
        assert (tmp_path / f"faf-fig2.{suffix}").stat().st_size > 1000
    plotted = json.loads((tmp_path / "faf-fig2.json").read_text())
    rows = json.loads(run.read_text())["results"]
    (series,) = plotted["series"]
    assert series["x"] == [r["params"]["lam"] for r in rows] == [0.1, 0.4]
    assert series["mean"] == [r["mc"]["mean"] for r in rows] and series["se"] == [r["mc"]["se"] for r in rows]
    assert series["verdict"] == ["agree", "agree"]
    theory = [float(r["theory"]) for r in rows]
    assert series["theory_at_x"] == pytest.approx(theory, rel=1e-12)
    assert len(series["theory"]) == len(series["theory_x"]) > 50


def test_two_long_grid_parameters_give_a_phase_diagram_with_its_zero_contour(tmp_path, monkeypatch):
    from matplotlib.axes import Axes
    contour_levels, contour = [], Axes.contour
    monkeypatch.setattr(Axes, "contour", lambda ax, *args, **options: contour_levels.append(options["levels"])
                        or contour(ax, *args, **options))
    code = verify.main(["plot", "finetune", "--quick", "--theory-only", "--grid", "gamma=0.2:1.8:4",
                        "--grid", "theta=0:pi/2:4", "--out", str(tmp_path)])
    assert code == 0 and (tmp_path / "finetune.png").stat().st_size > 1000
    plotted = json.loads((tmp_path / "finetune.json").read_text())
    assert plotted["layout"] == "phase" and len(plotted["series"]) == 4
    mesh = [v for row in plotted["mesh"] for v in row if v == v]
    assert min(mesh) < 0 < max(mesh)          # T_ft changes sign at theta = pi/3 for gamma < 1
    assert contour_levels == [[0.0]]          # ... and the boundary T_ft = 0 is drawn


def test_figures_name_their_claims_and_shapes():
    for figure in FIGURES.values():
        grid = verify.parse_grid(list(figure.grid))
        assert layout(grid) == ("phase" if "ab" in figure.name or figure.name == "faf-fig7" else "curves")
        assert bool(figure.grid) != (figure.extract is not None)
        assert verify.select([figure.claim])


@pytest.mark.parametrize("args, message", [
    (["plot"], "plot takes one figure or claim id"),
    (["plot", "double-descent"], "give --grid"),
    (["plot", "no-such-claim"], "unknown theorem id"),
    (["plot", "double-descent", "--grid", "gamma=1:2:3", "--grid", "sigma=0,1", "--grid", "d=10,20"], "one or two --grid"),
])
def test_bad_plot_requests_are_one_line_errors(args, message, capsys):
    assert verify.main(args) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1


def test_a_checks_own_curve_is_drawn_from_its_result(tmp_path):
    # Shachaf Fig. 3: the frozen-layers check measures the off-line fraction along fine-tuning itself.
    run = tmp_path / "run.json"
    assert verify.main(["plot", "shachaf-fig3", "--quick", "--out", str(tmp_path), "--json", str(run)]) == 0
    plotted = json.loads((tmp_path / "shachaf-fig3.json").read_text())
    rows = json.loads(run.read_text())["results"]
    assert len(plotted["series"]) == len(rows) == 3
    for series, row in zip(plotted["series"], rows):
        along = row["mc"]["alpha_ladder"][0]["off_line_max_by_step"]
        assert series["mean"] == [along[k] for k in sorted(along, key=float)]
        assert series["verdict"] == [row["verdict"]]
    assert verify.main(["plot", "shachaf-fig3", "--grid", "alpha=1e-2,1e-3"]) == 2


def test_a_slope_figure_is_theory_only_on_a_log_grid(tmp_path):
    assert verify.main(["plot", "ptft-fig1b", "--quick", "--out", str(tmp_path)]) == 0
    plotted = json.loads((tmp_path / "ptft-fig1b.json").read_text())
    rho_one = next(s for s in plotted["series"] if s["group"] == 1.0)
    assert rho_one["x"][0] == pytest.approx(0.01) and rho_one["x"][-1] == pytest.approx(100)
    assert rho_one["x"][1] / rho_one["x"][0] == pytest.approx(rho_one["x"][2] / rho_one["x"][1])   # equal ratios
    assert all(m is None for m in rho_one["mean"])
    slopes = [v for v in rho_one["theory"] if v == v]
    assert 1 <= min(slopes) and max(slopes) <= 2.0 + 1e-9     # between l1-like and l2-like at rho = 1


def test_penalty_figure_is_log_log_since_r_spans_decades(tmp_path):
    # PT+FT Fig. 1a: over m in [1/100, 100], r~(m) covers three to eight decades for each m_aux.
    assert verify.main(["plot", "ptft-fig1a", "--quick", "--theory-only", "--out", str(tmp_path)]) == 0
    plotted = json.loads((tmp_path / "ptft-fig1a.json").read_text())
    assert plotted["log_x"] and plotted["log_y"]
    assert all(max(series["theory"]) / min(series["theory"]) > 1e3 for series in plotted["series"])


def test_fig1_extract_draws_both_alignments_and_their_deterministic_equivalents():
    # Shachaf Fig. 1: a risk curve per alignment, with (D) as its line where the check computed it (not for Sigma = lam I).
    spiked = [{"n_over_d": g, "R_TEA": tea, "se_TEA": 0.01, "R_BEA": bea, "se_BEA": 0.02, "deq_TEA": tea,
               "deq_BEA": deq} for g, tea, bea, deq in ((0.1, 0.9, 0.8, 0.81), (0.4, 0.6, 0.2, 0.21))]
    tea, bea = FIGURES["shachaf-fig1"].extract({"mc": {"ladder": spiked}})
    assert (tea["label"], bea["label"]) == ("Top Eigen Align", "Bottom Eigen Align")
    assert tea["x"] == bea["x"] == tea["theory_x"] == bea["theory_x"] == [0.1, 0.4]
    assert bea["mean"] == [0.8, 0.2] and bea["se"] == [0.02, 0.02] and bea["theory"] == [0.81, 0.21]
    isotropic = [{key: value for key, value in row.items() if not key.startswith("deq_")} for row in spiked]
    assert all(series["theory_x"] == [] for series in FIGURES["shachaf-fig1"].extract({"mc": {"ladder": isotropic}}))
