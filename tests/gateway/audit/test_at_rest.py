"""`redact_stored`: arguments kept whole while anything needs them, masked once the call is
terminal (its approval once decided); other tools' records are kept as given."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime

import pytest

from gateway.arguments import canonical_sha256
from gateway.audit.at_rest import RedactStored
from gateway.audit.keys import AuditKey
from gateway.model import ApprovalRecord, ApprovalStatus, CallRecord, CallStatus
from gateway.tools import Registry

NOW = datetime(2026, 11, 29, 21, 0, tzinfo=UTC)
KEY = AuditKey(b"k" * 32)
ARGS = {"email": "ann@example.com", "amount": 12}


def tool(name: str, stored: bool) -> dict[str, object]:
    return {
        "name": name,
        "version": "1",
        "effect": "write",
        "input_schema": {"type": "object"},
        "redact": ["/email"],
        "redact_stored": stored,
        "executor": {"type": "http", "url": "http://127.0.0.1:9/x"},
    }


FORM = RedactStored(
    Registry.from_manifests([tool("pay", True), tool("note", False)], env={}, audit_key=KEY)
)


def call(status: CallStatus, name: str = "pay") -> CallRecord:
    return CallRecord(
        "r1",
        "t1",
        "c1",
        0,
        name,
        status,
        json.dumps(ARGS),
        arguments_sha256=canonical_sha256(ARGS),
        error_message="ann@example.com was refused",
    )


@pytest.mark.parametrize(
    "status",
    [
        CallStatus.PROPOSED,
        CallStatus.PENDING_APPROVAL,
        CallStatus.HELD,
        CallStatus.EXECUTING,
        CallStatus.UNKNOWN,
    ],
)
def test_a_call_that_may_still_run_keeps_its_arguments(status: CallStatus) -> None:
    rec = call(status)
    assert FORM.call(rec) == rec


@pytest.mark.parametrize(
    "status", [CallStatus.SUCCEEDED, CallStatus.FAILED, CallStatus.REJECTED, CallStatus.NOT_RUN]
)
def test_a_terminal_call_is_kept_masked_with_its_hash(status: CallStatus) -> None:
    kept = FORM.call(call(status))
    assert json.loads(kept.arguments_json) == {"email": KEY.mask("ann@example.com"), "amount": 12}
    assert kept.arguments_sha256 == canonical_sha256(ARGS)  # still binds the approval
    assert "ann@example.com" not in kept.error_message
    assert FORM.call(kept) == kept


def test_a_tool_without_redact_stored_is_kept_as_given() -> None:
    rec = call(CallStatus.SUCCEEDED, "note")
    assert FORM.call(rec) == rec


def test_an_approval_is_masked_once_it_is_no_longer_pending() -> None:
    pending = ApprovalRecord(
        "apr_1",
        "r1",
        "t1",
        "c1",
        "pay",
        "1",
        json.dumps(ARGS),
        canonical_sha256(ARGS),
        ApprovalStatus.PENDING,
        "tina",
        "acme",
        NOW,
        NOW,
    )
    assert FORM.approval(pending) == pending  # the approver sees what they approve
    decided = FORM.approval(replace(pending, status=ApprovalStatus.APPROVED))
    assert json.loads(decided.arguments_json)["email"] == KEY.mask("ann@example.com")
    assert decided.arguments_sha256 == pending.arguments_sha256


def test_arguments_that_never_were_an_object_are_not_kept_in_clear() -> None:
    rec = replace(call(CallStatus.REJECTED), arguments_json='{"email": "ann@exa')
    kept = FORM.call(rec)
    assert "ann@exa" not in kept.arguments_json and FORM.call(kept) == kept
