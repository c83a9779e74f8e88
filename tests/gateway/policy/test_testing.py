"""The Rego unit-test runner and `callgate policy check|test|eval|coverage`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gateway.policy.commands import run_policy_command
from gateway.policy.testing import run_tests
from tests.gateway.policy.inputs import REPO, WriteBundle, call_input, identity

POLICY = "package callgate\n\ndefault allow := false\n\nallow if input.x == 1\n"
TESTS = """package callgate_test

import data.callgate

test_allows_one if callgate.allow with input as {"x": 1}

test_wrong_expectation if callgate.allow with input as {"x": 2}

test_builtin_error if 1 / 0 == 1

test_panic if object.subset([1], []) == true

test_after_panic if not callgate.allow with input as {"x": 2}

helper_not_a_test if true

test_function(x) := x
"""


def results_by_name(directory: Path) -> dict[str, tuple[bool, str]]:
    report = run_tests(directory)
    return {r.case.name: (r.passed, r.reason) for r in report.results}


def test_runner_reports_passing_and_failing_tests(write_bundle: WriteBundle) -> None:
    root = write_bundle({"p.rego": POLICY, "p_test.rego": TESTS})
    results = results_by_name(root)
    assert results["test_allows_one"] == (True, "")
    assert results["test_wrong_expectation"] == (False, "undefined")
    assert results["test_builtin_error"][0] is False
    assert "divide by zero" in results["test_builtin_error"][1]
    assert results["test_panic"] == (False, "error: engine panic: window size must be non-zero")
    assert results["test_after_panic"] == (True, "")
    assert set(results) == {"test_allows_one", "test_wrong_expectation", "test_builtin_error",
                            "test_panic", "test_after_panic"}


def test_a_false_test_fails(write_bundle: WriteBundle) -> None:
    root = write_bundle({"p.rego": POLICY,
                         "p_test.rego": "package t\n\ntest_false := false\n\ntest_one := 1\n"})
    report = run_tests(root)
    assert report.summary() == "0 passed, 2 failed"
    assert {r.reason for r in report.results} == {"evaluated to false",
                                                  "evaluated to 1, not true"}
    assert report.results[0].case.file.endswith("p_test.rego")
    assert report.results[0].case.line == 3


def test_default_policy_tests_pass() -> None:
    report = run_tests(REPO / "policies")
    assert report.ok, [(r.case.name, r.reason) for r in report.results if not r.passed]
    assert report.passed >= 40


def test_command_test_policies(monkeypatch: pytest.MonkeyPatch,
                               capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(REPO)
    assert run_policy_command(["test", "policies"]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert out[-1].endswith(" passed, 0 failed")
    assert out[-1] == f"{int(out[-1].split()[0])} passed, 0 failed"


def test_command_test_reports_failures(write_bundle: WriteBundle,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    root = write_bundle({"p.rego": POLICY, "p_test.rego": TESTS})
    assert run_policy_command(["test", str(root), "-v"]) == 1
    out = capsys.readouterr().out.strip().splitlines()
    assert out[-1] == "2 passed, 3 failed"
    assert any(line.startswith("FAIL data.callgate_test.test_wrong_expectation (")
               and line.endswith(": undefined") for line in out)
    assert any(line.startswith("PASS data.callgate_test.test_allows_one") for line in out)


def test_command_test_without_tests_fails(write_bundle: WriteBundle,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    root = write_bundle({"p.rego": POLICY})
    assert run_policy_command(["test", str(root)]) == 1
    captured = capsys.readouterr()
    assert captured.out.strip().splitlines()[-1] == "0 passed, 0 failed"
    assert "no tests found" in captured.err


def test_command_check(capsys: pytest.CaptureFixture[str], write_bundle: WriteBundle) -> None:
    assert run_policy_command(["check", str(REPO / "policies")]) == 0
    out = capsys.readouterr().out
    assert "revision sha256:" in out
    assert "data.callgate.decision" in out

    bad = write_bundle({"bad.rego": "package callgate\n\nallow if {\n"}, name="bad")
    assert run_policy_command(["check", str(bad)]) == 1
    assert "bad.rego:4:1" in capsys.readouterr().err


def test_command_eval_decision(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = call_input("reserve_seat", "write", {"event_id": "ws-acme-1"},
                     identity("olga", "acme", "organizer"))
    path = tmp_path / "input.json"
    path.write_text(json.dumps(doc))
    assert run_policy_command(["eval", str(REPO / "policies"), "--input", str(path)]) == 0
    out = capsys.readouterr().out
    assert '"approval_required": true' in out
    assert "verdict: APPROVAL_REQUIRED, approval_ttl_s 3600" in out


def test_command_eval_undefined_and_errors_exit_1(tmp_path: Path, write_bundle: WriteBundle,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    root = write_bundle({"p.rego": "package callgate\n\nx := 1 / 0\n"})
    path = tmp_path / "input.json"
    path.write_text("{}")
    assert run_policy_command(["eval", str(root), "--input", str(path)]) == 1
    assert capsys.readouterr().out.splitlines()[:2] == [
        "undefined", "verdict: DENY (policy_error)"]
    assert run_policy_command(["eval", str(root), "--input", str(path), "--rule", "x"]) == 1
    assert "div failed at " in capsys.readouterr().err
    assert run_policy_command(["eval", str(root), "--input", str(path), "--rule", "y"]) == 1
    assert capsys.readouterr().out.splitlines()[0] == "undefined"


def test_command_coverage(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_policy_command(["coverage", str(REPO / "policies")]) == 0
    out = capsys.readouterr().out
    assert "policies/callgate.rego: " in out
    assert " covered, " in out and " not covered (" in out


def test_command_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_policy_command(["frobnicate"]) == 2
    assert "invalid choice" in capsys.readouterr().err
