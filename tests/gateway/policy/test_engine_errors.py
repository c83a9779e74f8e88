"""An evaluation that fails leaves nothing behind: regorus keeps part of an erroring evaluation's
state, and a function that failed once would answer undefined afterwards for inputs it handles
(a `result` rule would then deliver what it should redact). After an error the next
evaluation runs on a clean engine, in the sidecar as in `policy test`."""

from __future__ import annotations

from gateway.model import Verdict
from gateway.policy import load_engine
from gateway.policy.rego_tests import run_tests
from tests.gateway.policy.inputs import WriteBundle, call_input, identity

# `numbers(doc)` fails (to_number) on digits of other scripts in any string of doc; regorus
# answers the evaluation after such an error inside `walk` wrongly (empty) unless the engine
# is replaced
POLICY = """package callgate

numbers(doc) := {concat("/", p) | walk(doc, [p, v]); is_string(v); to_number(v) >= 0}

result := {"deliver": true, "redact": ["/n"], "reasons": ["digits"]} if {
	count(numbers(input.result.output)) > 0
}

decision := {"allow": true} if count(numbers(input.call.args)) > 0

digits(s) if count(numbers({"s": s})) > 0
"""
READER = identity("olga", "acme", "organizer")


def result_input(n: str) -> dict[str, object]:
    return {"action": "result", "tool": {"effect": "read"}, "result": {"output": {"n": n}}}


def test_a_result_rule_that_failed_still_redacts_afterwards(write_bundle: WriteBundle) -> None:
    engine = load_engine(write_bundle({"p.rego": POLICY}))
    first = engine.result(result_input("1234"))
    assert first is not None and first.redact == ("/n",)
    failed = engine.result(result_input("١٢٣٤"))
    assert failed is not None and not failed.deliver  # the error withholds (fail closed)
    again = engine.result(result_input("1234"))
    assert again is not None and again.deliver and again.redact == ("/n",)


def test_a_decision_that_failed_leaves_the_next_ones_as_they_were(
    write_bundle: WriteBundle,
) -> None:
    engine = load_engine(write_bundle({"p.rego": POLICY}))

    def decided(code: str) -> Verdict:
        return engine.decide(call_input("t", "read", {"code": code}, READER)).verdict

    assert decided("12") is Verdict.ALLOW
    failed = engine.decide(call_input("t", "read", {"code": "١٢"}, READER))
    assert failed.is_policy_error
    assert decided("34") is Verdict.ALLOW


def test_a_test_that_errors_does_not_fail_the_tests_after_it(write_bundle: WriteBundle) -> None:
    tests = """package callgate_test

import data.callgate

test_before if callgate.digits("12")

test_other_script if callgate.digits("١٢")

test_after if callgate.digits("34")
"""
    report = run_tests(write_bundle({"p.rego": POLICY, "p_test.rego": tests}))
    passed = {r.case.name: r.passed for r in report.results}
    assert passed == {"test_before": True, "test_other_script": False, "test_after": True}
