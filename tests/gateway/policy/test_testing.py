"""The Rego unit-test runner: results, reasons, the failing expression and its values."""

from __future__ import annotations

from pathlib import Path

from gateway.policy.testing import run_tests
from tests.gateway.policy.inputs import REPO, WriteBundle

POLICY = "package callgate\n\ndefault allow := false\n\nallow if input.x == 1\n"
TESTS = """package callgate_test

import data.callgate

test_allows_one if callgate.allow with input as {"x": 1}

test_wrong_expectation if callgate.allow with input as {"x": 2}

test_builtin_error if 1 / 0 == 1

test_panic if bits.and(1e308 / 0.1, 1) == 0

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
    assert results["test_panic"] == (False, "error: engine panic: a formatting trait "
                                     "implementation returned an error when the underlying "
                                     "stream did not: Error")
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


FAILING = """package callgate_test

import data.callgate

test_compare if {
  x := 2
  x + 1 == 4
}

test_undefined_rule if {
  true
  callgate.allow with input as {"x": 2}
}

test_not if {
  not callgate.allow with input as {"x": 1}
}

test_membership if {
  "b" in {"a"}
}
"""


def test_a_failing_test_names_the_expression_and_its_values(write_bundle: WriteBundle) -> None:
    root = write_bundle({"p.rego": POLICY, "p_test.rego": FAILING})
    failed = {r.case.name: r.failed for r in run_tests(root).results}
    compare = failed["test_compare"]
    assert compare is not None
    assert (compare.text, compare.line) == ("x + 1 == 4", 7)
    assert dict(compare.values) == {"left": "3", "right": "4"}
    undefined = failed["test_undefined_rule"]
    assert undefined is not None
    assert undefined.text == 'callgate.allow with input as {"x": 2}'
    assert dict(undefined.values) == {"value": "false"}
    negated = failed["test_not"]
    assert negated is not None and dict(negated.values) == {"value": "true"}
    membership = failed["test_membership"]
    assert membership is not None
    assert dict(membership.values) == {"value": '"b"', "collection": '["a"]'}


def test_run_selects_by_regular_expression(write_bundle: WriteBundle) -> None:
    root = write_bundle({"p.rego": POLICY, "p_test.rego": TESTS})
    names = [r.case.name for r in run_tests(root, match=r"allows_one$|after_").results]
    assert names == ["test_allows_one", "test_after_panic"]
