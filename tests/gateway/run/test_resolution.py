"""ResolveCall's checks and records, without a sidecar: what is refused, and what is kept."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from gateway.audit import events
from gateway.errors import RequestCode, RequestError
from gateway.model import CallRecord, CallStatus, Identity, RunRecord, RunState, Verdict
from gateway.run.resolution import (
    MAX_OUTPUT_BYTES,
    MAX_REASON_CHARS,
    ResolveRequest,
    check_output,
    check_request,
    resolved,
)
from gateway.tools import Registry

NOW = datetime(2026, 11, 29, 21, 0, tzinfo=UTC)
OSCAR = Identity("oscar", "acme", ("operator",))


def req(
    outcome: CallStatus | None = CallStatus.SUCCEEDED,
    output_json: str = "",
    reason: str = "checked the target",
) -> ResolveRequest:
    return ResolveRequest("r1", "w1", outcome, output_json, reason)


@pytest.mark.parametrize(
    ("request_", "problem"),
    [
        (ResolveRequest("", "w1", CallStatus.SUCCEEDED, "", "x"), "both are required"),
        (req(outcome=None), "outcome must be"),
        (req(outcome=CallStatus.UNKNOWN), "outcome must be"),
        (req(outcome=CallStatus.NOT_RUN), "outcome must be"),
        (req(reason=""), "reason is required"),
        (req(reason=" \n"), "reason is required"),
        (req(reason="x" * (MAX_REASON_CHARS + 1)), "longer than"),
        (req(outcome=CallStatus.FAILED, output_json="{}"), "no output_json"),
        (req(output_json='{"a": NaN}'), "not valid JSON"),
        (req(output_json='{"a": '), "not valid JSON"),
        (req(output_json=json.dumps({"a": "x" * MAX_OUTPUT_BYTES})), "larger than"),
    ],
)
def test_a_resolution_that_breaks_a_rule_is_refused(request_: ResolveRequest, problem: str) -> None:
    with pytest.raises(RequestError) as err:
        check_request(request_)
    assert err.value.code == RequestCode.INVALID_ARGUMENT and problem in err.value.message


def test_a_succeeded_output_must_match_the_output_schema() -> None:
    registry = Registry.from_manifests(
        [
            {
                "name": "book",
                "version": "1",
                "effect": "write",
                "input_schema": {"type": "object"},
                "output_schema": {"type": "object", "required": ["id"]},
                "executor": {"type": "python", "function": "json:dumps"},
            }
        ]
    )
    tool = registry.get("book")
    check_output(tool, req(output_json='{"id": "R-1"}'))
    check_output(tool, req(outcome=CallStatus.FAILED))  # no output to check
    with pytest.raises(RequestError, match="output_schema: .*'id' is a required property"):
        check_output(tool, req(output_json='{"other": 1}'))
    with pytest.raises(RequestError, match="output_schema"):
        check_output(tool, req())  # no output is null, which is not an object


def test_the_settled_record_keeps_who_when_and_why() -> None:
    unknown = CallRecord(
        run_id="r1",
        turn_id="t1",
        call_id="w1",
        index=0,
        tool="book",
        status=CallStatus.UNKNOWN,
        arguments_json="{}",
        execution_count=1,
        error_code="outcome_unknown",
        error_message="lost",
    )
    done = resolved(unknown, OSCAR, req(output_json=' {"id": "R-1"} '), NOW)
    assert (done.status, done.output_json, done.execution_count) == (
        CallStatus.SUCCEEDED,
        '{"id": "R-1"}',
        1,
    )
    assert (done.resolved_by, done.resolved_at, done.resolution_reason) == (
        "oscar",
        NOW,
        "checked the target",
    )
    assert done.error_code == "resolved_by_operator" and "oscar" in done.error_message
    failed = resolved(unknown, OSCAR, req(outcome=CallStatus.FAILED), NOW)
    assert (failed.status, failed.output_json) == (CallStatus.FAILED, "")
    run = RunRecord("r1", RunState.PAUSED_UNKNOWN_OUTCOME, "mia", "acme")
    event = events.resolved(
        done,
        run,
        OSCAR,
        reason="checked the target",
        policy_revision="sha256:rev",
        registry=Registry([]),
        now=NOW,
    )
    assert (event.kind, event.subject, event.tenant) == ("resolve", "mia", "acme")
    assert (event.actor, event.actor_tenant, event.policy_revision) == (
        "oscar",
        "acme",
        "sha256:rev",
    )
    assert (event.status, event.error_code) == (CallStatus.SUCCEEDED, "resolved_by_operator")
    assert event.decision is not None and event.decision.verdict == Verdict.ALLOW
    assert "checked the target" in event.decision.reasons[0]
