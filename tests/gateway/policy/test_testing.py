"""The Rego unit-test runner: results, reasons, the failing expression and its values."""

from __future__ import annotations

import json
from pathlib import Path

from gateway.policy.rego_tests import run_tests
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
    assert results["test_panic"] == (
        False,
        "error: engine panic: a formatting trait "
        "implementation returned an error when the underlying "
        "stream did not: Error",
    )
    assert results["test_after_panic"] == (True, "")
    assert set(results) == {
        "test_allows_one",
        "test_wrong_expectation",
        "test_builtin_error",
        "test_panic",
        "test_after_panic",
    }


def test_a_false_test_fails(write_bundle: WriteBundle) -> None:
    root = write_bundle(
        {"p.rego": POLICY, "p_test.rego": "package t\n\ntest_false := false\n\ntest_one := 1\n"}
    )
    report = run_tests(root)
    assert report.summary() == "0 passed, 2 failed"
    assert {r.reason for r in report.results} == {"evaluated to false", "evaluated to 1, not true"}
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


# -- each definition of a test is a test of its own, named as `opa test` names it ------------


OPA_NAMES = json.loads((Path(__file__).parent / "opa_answers" / "test_names.json").read_text())


def test_every_definition_is_a_test_named_as_opa_names_it(write_bundle: WriteBundle) -> None:
    root = write_bundle(OPA_NAMES["modules"])
    report = run_tests(root)
    got = [
        {
            "package": r.case.package,
            "name": r.case.name,
            "file": Path(r.case.file).name,
            "row": r.case.line,
            "outcome": "PASS" if r.passed else "FAIL",
        }
        for r in report.results
    ]
    assert sorted(got, key=lambda r: (r["file"], r["row"])) == OPA_NAMES["results"]
    assert not report.ok


def test_a_failing_definition_fails_the_run_and_names_its_line(write_bundle: WriteBundle) -> None:
    root = write_bundle(
        {
            "p.rego": "package p\n\nx := 1\n",
            "p_test.rego": "package p\n\ntest_x if x == 1\n\ntest_x if {\n  true\n  x == 2\n}\n",
        }
    )
    report = run_tests(root)
    assert report.summary() == "1 passed, 1 failed"
    second = report.results[1]
    assert (second.case.path, second.case.line) == ("data.p.test_x#01", 5)
    assert second.failed is not None and (second.failed.text, second.failed.line) == ("x == 2", 7)


def test_definitions_in_several_files_count_in_file_order(write_bundle: WriteBundle) -> None:
    root = write_bundle(
        {
            "p.rego": "package p\n\nx := 1\n",
            "b_test.rego": "package p\n\ntest_x if x == 2\n",
            "a_test.rego": "package p\n\ntest_x if x == 1\n",
        }
    )
    report = run_tests(root)
    assert [(Path(r.case.file).name, r.case.name, r.passed) for r in report.results] == [
        ("a_test.rego", "test_x", True),
        ("b_test.rego", "test_x#01", False),
    ]


def test_run_selects_a_definition_by_its_number(write_bundle: WriteBundle) -> None:
    root = write_bundle(
        {
            "p.rego": "package p\n\nx := 1\n",
            "p_test.rego": "package p\n\ntest_x if x == 1\n\ntest_x if x == 2\n",
        }
    )
    assert [r.case.name for r in run_tests(root, match="#01$").results] == ["test_x#01"]
    assert [r.case.name for r in run_tests(root, match=r"test_x$").results] == ["test_x"]


def test_a_bundle_without_repeated_tests_is_tested_as_it_is(write_bundle: WriteBundle) -> None:
    from gateway.policy.bundle import load_bundle
    from gateway.policy.testnames import numbered

    bundle = load_bundle(write_bundle({"p.rego": POLICY, "p_test.rego": TESTS}))
    assert numbered(bundle).bundle is bundle
