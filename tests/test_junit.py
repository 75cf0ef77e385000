"""--junit: one testcase per row, a failure exactly where the command line counts the row as changed."""

import dataclasses
import json
import xml.etree.ElementTree as ET

import theorems
import verify
from engine.junit import junit_xml
from engine.render import format_params
from theorems.core import Finding


def _cases(path):
    root = ET.parse(path).getroot()
    assert root.tag == "testsuites"
    (suite,) = root.findall("testsuite")
    return root, suite, suite.findall("testcase")


def _properties(case) -> dict:
    return {p.get("name"): p.get("value") for p in case.find("properties").findall("property")}


def test_a_run_as_junit_has_one_testcase_per_row_with_its_numbers(tmp_path, capsys):
    run, report = tmp_path / "run.json", tmp_path / "run.xml"
    assert verify.main(["linear-transfer", "--quick", "--json", str(run), "--junit", str(report)]) == 0
    rows = json.loads(run.read_text())["results"]
    root, suite, cases = _cases(report)
    assert root.get("tests") == suite.get("tests") == str(len(rows)) and suite.get("failures") == "0"
    assert {p.get("name") for p in suite.find("properties")} >= {"tier", "seed", "device", "torch"}
    for row, case in zip(rows, cases, strict=True):
        assert case.get("classname") == "linear-transfer" == row["id"]
        assert case.get("name") == format_params(row["params"])
        assert case.find("failure") is None and case.find("skipped") is None
        numbers = _properties(case)
        assert numbers["theory"] == row["theory"] and numbers["verdict"] == row["verdict"] == "agree"
        assert float(numbers["mc_mean"]) == row["mc"]["mean"] and float(numbers["mc_se"]) == row["mc"]["se"]
        assert float(numbers["z"]) == row["z"] and numbers["detail"] == row["detail"] and "effect" in numbers
        text = case.find("system-out").text
        assert f"theory: {row['theory']}" in text and "Monte-Carlo: " in text and "verdict: agree (recorded: agree)" in text


def test_a_changed_verdict_is_a_failure_and_exit_1(tmp_path, monkeypatch, capsys):
    claim = theorems.REGISTRY["linear-transfer"]
    monkeypatch.setitem(theorems.REGISTRY, "linear-transfer",
                        dataclasses.replace(claim, findings=(Finding("gamma > 0", "recorded wrongly, to be changed"),)))
    report = tmp_path / "run.xml"
    assert verify.main(["linear-transfer", "--quick", "--junit", str(report)]) == 1
    _, suite, cases = _cases(report)
    assert suite.get("failures") == str(len(cases)) == "3"   # every case of the claim
    for case in cases:
        failure = case.find("failure")
        assert failure.get("message") == "CHANGED: agree (recorded: disagree)" and failure.text
        assert "recorded finding: recorded wrongly, to be changed" in case.find("system-out").text


def test_theory_only_rows_are_skipped_and_baseline_changes_are_failures(tmp_path, capsys):
    stored, report = tmp_path / "stored.json", tmp_path / "run.xml"
    assert verify.main(["double-descent", "--theory-only", "--json", str(stored)]) == 0
    payload = json.loads(stored.read_text())
    payload["results"][0]["theory"] = "12.5"   # as if the formula had changed since the stored run
    stored.write_text(json.dumps(payload))
    assert verify.main(["double-descent", "--theory-only", "--baseline", str(stored), "--junit", str(report)]) == 1
    _, suite, cases = _cases(report)
    assert suite.get("failures") == "1" and suite.get("skipped") == "2"   # the claim's other two cases
    assert cases[0].find("failure").get("message").startswith("baseline: theory 12.5 -> ")
    assert cases[1].find("skipped") is not None and cases[1].find("failure") is None


def test_a_stored_run_can_be_converted_and_an_interrupted_run_is_an_error(tmp_path, capsys):
    stored, report = tmp_path / "stored.json", tmp_path / "stored.xml"
    assert verify.main(["double-descent", "--theory-only", "--json", str(stored)]) == 0
    assert verify.main(["report", "--from", str(stored), "--out", str(tmp_path / "r.md"), "--junit", str(report)]) == 0
    assert len(_cases(report)[2]) == 3   # the claim's three cases
    document = junit_xml(json.loads(stored.read_text()), complete=False)
    suite = ET.fromstring(document.split("\n", 1)[1]).find("testsuite")
    assert suite.get("errors") == "1" and suite.findall("testcase")[-1].find("error") is not None
