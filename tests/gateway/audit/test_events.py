"""What each audit event carries: whose record, who acted, masked arguments with keyed
digests, scrubbed messages and reasons (gateway.audit.events)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from gateway.arguments import canonical_sha256
from gateway.audit import events
from gateway.audit.keys import AuditKey
from gateway.model import (
    ApprovalRecord,
    ApprovalStatus,
    CallRecord,
    CallStatus,
    Decision,
    Identity,
    RunRecord,
    RunState,
    Verdict,
)
from gateway.tools import Registry

NOW = datetime(2026, 11, 29, 21, 0, tzinfo=UTC)
KEY = AuditKey(b"k" * 32)
REGISTRY = Registry.from_manifests(
    [
        {
            "name": "pay",
            "version": "2.0.0",
            "effect": "write",
            "input_schema": {"type": "object"},
            "executor": {"type": "http", "url": "http://127.0.0.1:9/pay"},
            "redact": ["/email"],
        }
    ],
    env={},
    audit_key=KEY,
)
RUN = RunRecord(
    "r1", RunState.ACTIVE, "tina", "acme", provider="openai.responses", roles=("tester",)
)
OLGA = Identity("olga", "acme", ("owner",))


def call(args: dict[str, object], **changes: object) -> CallRecord:
    base = dict(
        run_id="r1",
        turn_id="t1",
        call_id="c1",
        index=0,
        tool="pay",
        status=CallStatus.REJECTED,
        arguments_json=json.dumps(args),
        tool_version="2.0.0",
        arguments_sha256=canonical_sha256(args),
        decision=Decision(
            Verdict.DENY, ("ann@example.com may not pay",), "sha256:r", input_sha256="b" * 64
        ),
        error_code="policy_denied",
        error_message="denied: ann@example.com",
    )
    base.update(changes)
    return CallRecord(**base)  # type: ignore[arg-type]


def test_a_decision_with_a_masked_value_keys_every_digest_and_scrubs_every_text() -> None:
    rec = call({"email": "ann@example.com", "amount": 12})
    e = events.decision(rec, RUN, actor=RUN.owner, registry=REGISTRY, now=NOW)
    assert (e.kind, e.subject, e.tenant, e.actor, e.actor_tenant) == (
        "decision",
        "tina",
        "acme",
        "tina",
        "acme",
    )
    assert (e.run_id, e.turn_id, e.call_id, e.provider, e.tool, e.tool_version) == (
        "r1",
        "t1",
        "c1",
        "openai.responses",
        "pay",
        "2.0.0",
    )
    assert json.loads(e.arguments_summary_json) == {
        "email": KEY.mask("ann@example.com"),
        "amount": 12,
    }
    assert e.arguments_sha256 == KEY.keyed(rec.arguments_sha256)
    assert e.decision is not None and e.decision.input_sha256 == KEY.keyed("b" * 64)
    assert "ann@example.com" not in e.decision.reasons[0] + e.message
    assert (e.status, e.error_code, e.policy_revision) == (
        CallStatus.REJECTED,
        "policy_denied",
        "sha256:r",
    )


def test_nothing_masked_keeps_the_plain_digests() -> None:
    rec = call({"amount": 12})
    e = events.decision(rec, RUN, actor=RUN.owner, registry=REGISTRY, now=NOW)
    assert e.arguments_sha256 == rec.arguments_sha256
    assert e.decision is not None and e.decision.input_sha256 == "b" * 64


def test_an_unknown_tools_credentials_are_masked_and_unparsable_arguments_not_kept() -> None:
    rec = call({"password": "hunter2"}, tool="nope", error_code="unknown_tool")
    e = events.decision(rec, RUN, actor=RUN.owner, registry=REGISTRY, now=NOW)
    assert json.loads(e.arguments_summary_json) == {"password": KEY.mask("hunter2")}
    broken = call({}, arguments_json='{"password": "hunter2"', arguments_sha256="")
    e = events.decision(broken, RUN, actor=RUN.owner, registry=REGISTRY, now=NOW)
    assert e.arguments_summary_json == "" and "hunter2" not in str(e)


def test_execution_and_reconcile_are_callgates_own_acts() -> None:
    rec = call(
        {"amount": 1},
        status=CallStatus.SUCCEEDED,
        execution_count=2,
        error_code="",
        error_message="",
    )
    e = events.execution(rec, RUN, registry=REGISTRY, now=NOW, attempts=2)
    assert (e.kind, e.actor, e.execution_count, json.loads(e.detail_json)) == (
        "execution",
        "",
        2,
        {"attempts": 2},
    )


def test_an_approvals_end_names_who_decided() -> None:
    a = ApprovalRecord(
        "apr_1",
        "r1",
        "t1",
        "c1",
        "pay",
        "2.0.0",
        json.dumps({"email": "ann@example.com"}),
        "c" * 64,
        ApprovalStatus.DENIED,
        "tina",
        "acme",
        NOW,
        NOW,
        decided_by="olga",
        decided_at=NOW,
        reason="not for ann@example.com",
    )
    e = events.approval_ended(
        a,
        actor=OLGA,
        policy_revision="sha256:r",
        registry=REGISTRY,
        now=NOW,
        provider="openai.responses",
    )
    assert (e.kind, e.subject, e.actor, e.approval_id, e.error_code) == (
        "approval",
        "tina",
        "olga",
        "apr_1",
        "approval_denied",
    )
    assert e.decision is not None and e.decision.verdict == Verdict.DENY
    assert "ann@example.com" not in e.message + " ".join(e.decision.reasons)
    assert json.loads(e.detail_json)["approval_status"] == "DENIED"


def test_a_cancel_names_the_run_and_every_call_it_stopped() -> None:
    stopped = call({"amount": 1}, status=CallStatus.NOT_RUN, error_code="held_by_batch")
    run_event, call_event = events.cancelled(RUN, [stopped], RUN.owner, registry=REGISTRY, now=NOW)
    assert (run_event.kind, run_event.call_id, run_event.actor) == ("cancel", "", "tina")
    assert (call_event.kind, call_event.call_id, call_event.status) == (
        "cancel",
        "c1",
        CallStatus.NOT_RUN,
    )
