"""verify.py report: a run (or a stored one) as Markdown, with every case, the refuted ones in full, figures linked."""

import json

import verify


def stored_run(tmp_path):
    row = {"id": "ridge-optimal-lambda", "params": {"gamma": 0.5}, "theory": "0", "verdict": "disagree",
           "mc": {"mean": 0.31, "se": 0.02, "trials": 100, "reference": 0.0}, "z": 15.5, "detail": "lam* = 0.31 ± 0.02",
           "expected": "disagree", "as_expected": True, "finding": "lam* = 0 only as n -> oo", "seconds": 1.0}
    payload = {"version": 1, "environment": {"tier": "quick", "seed": 3, "dps": 30}, "results": [row],
               "summary": {"verdicts": {"disagree": 1}}}
    path = tmp_path / "run.json"
    path.write_text(json.dumps(payload))
    return path


def test_report_of_a_stored_run_lists_environment_rows_and_the_refuted_case(tmp_path):
    out = tmp_path / "report.md"
    (tmp_path / "ridge-optimal-lambda.png").write_bytes(b"png")
    (tmp_path / "unrelated.png").write_bytes(b"png")
    assert verify.main(["report", "--from", str(stored_run(tmp_path)), "--out", str(out)]) == 0
    text = out.read_text()
    assert "| seed | 3 |" in text and "1 cases of 1 claims: 1 disagree; 0 changed" in text
    assert "| `ridge-optimal-lambda` |" in text and "disagree, as recorded" in text
    assert "## Refuted or changed" in text and "recorded finding: lam* = 0 only as n -> oo" in text
    assert "0.31 ± 0.02 (100 trials); reference 0" in text
    assert "![ridge-optimal-lambda.png](ridge-optimal-lambda.png)" in text and "unrelated" not in text


def test_report_runs_the_checks_when_no_stored_run_is_given(tmp_path, capsys):
    out = tmp_path / "report.md"
    assert verify.main(["report", "double-descent", "--theory-only", "--quick", "--out", str(out)]) == 0
    text = out.read_text()
    assert text.count("| `double-descent` |") == 3 and "| tier | quick |" in text and "theory only" in text   # its cases


def test_out_and_from_are_checked_before_anything_runs(tmp_path, capsys):
    assert verify.main(["double-descent", "--out", str(tmp_path / "missing" / "r.md")]) == 2
    assert verify.main(["double-descent", "--from", str(stored_run(tmp_path))]) == 2
    err = capsys.readouterr().err.splitlines()
    assert "no such folder" in err[0] and "--from is an option of 'report'" in err[1]
