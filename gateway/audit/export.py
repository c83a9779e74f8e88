"""Audit records as JSON lines close to OPA's decision log, for existing log pipelines.

One object per record, with OPA's decision-log fields where callgate has them:

    decision_id   the record's chain hash (unique in its store)
    path          the rule the record is about: callgate/decision (calls judged, Authorize
                  included), callgate/may_resolve, callgate/approval, else callgate/<kind>
    input         what the decision was about: the call (tool, version, masked arguments and
                  their hash), whose it is (identity), the run and turn
    result        the decision as the rule answers it: allow, approval_required, reasons
                  (null for records without a decision)
    timestamp     when (RFC 3339, UTC)
    revision      the policy revision that decided
    requested_by  who acted ("callgate" when callgate did)
    masked        the JSON pointers (into the line) of the values masked in `input`
    labels        {"app": "callgate", "version": ...}
    callgate      every column of the record, its place in the chain included
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from typing import Any

from gateway.audit.keys import is_mask
from gateway.audit.records import AuditKind, AuditRecord
from gateway.model import Verdict
from gateway.version import callgate_version

PATHS = {
    AuditKind.DECISION.value: "callgate/decision",
    AuditKind.AUTHORIZE.value: "callgate/decision",
    AuditKind.RESOLVE.value: "callgate/may_resolve",
}


@functools.cache
def _version() -> str:
    return callgate_version()


def _labels() -> dict[str, str]:
    return {"app": "callgate", "version": _version()}


def _masked(value: Any, path: str) -> Iterator[str]:
    if is_mask(value):
        yield path
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _masked(v, f"{path}/{str(k).replace('~', '~0').replace('/', '~1')}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _masked(v, f"{path}/{i}")


def _args(r: AuditRecord) -> Any:
    try:
        return json.loads(r.arguments_summary_json) if r.arguments_summary_json else None
    except ValueError:
        return None


def columns(r: AuditRecord) -> dict[str, Any]:
    """The record's columns as JSON values (decision and detail decoded)."""
    d = r.decision()
    return {
        "seq": r.seq,
        "time": r.time,
        "kind": r.kind,
        "subject": r.subject,
        "tenant": r.tenant,
        "run_id": r.run_id,
        "turn_id": r.turn_id,
        "call_id": r.call_id,
        "provider": r.provider,
        "tool": r.tool,
        "tool_version": r.tool_version,
        "arguments": _args(r),
        "arguments_sha256": r.arguments_sha256,
        "decision": None
        if d is None
        else {
            "verdict": d.verdict.value,
            "reasons": list(d.reasons),
            "policy_revision": d.policy_revision,
            "input_sha256": d.input_sha256,
        },
        "status": r.status,
        "error_code": r.error_code,
        "message": r.message or "",
        "execution_count": r.execution_count,
        "policy_revision": r.policy_revision,
        "actor": r.actor or "",
        "actor_tenant": r.actor_tenant or "",
        "approval_id": r.approval_id or "",
        "detail": r.detail(),
        "prev_hash": r.prev_hash,
        "hash": r.hash,
        "key_id": r.key_id or "",
        "seal": r.seal or "",
    }


def decision_log(r: AuditRecord) -> dict[str, Any]:
    """The record as one decision-log object."""
    d = r.decision()
    args = _args(r)
    result = (
        None
        if d is None
        else {
            "allow": d.verdict == Verdict.ALLOW,
            "approval_required": d.verdict == Verdict.APPROVAL_REQUIRED,
            "reasons": list(d.reasons),
        }
    )
    return {
        "decision_id": r.hash,
        "path": PATHS.get(r.kind, f"callgate/{r.kind}"),
        "input": {
            "action": r.kind,
            "call": {
                "id": r.call_id,
                "tool": r.tool,
                "tool_version": r.tool_version,
                "args": args,
                "args_sha256": r.arguments_sha256,
            },
            "identity": {"subject": r.subject, "tenant": r.tenant},
            "run": {"id": r.run_id, "turn_id": r.turn_id} if r.run_id else None,
        },
        "result": result,
        "timestamp": r.time,
        "revision": r.policy_revision,
        "requested_by": r.actor or "callgate",
        "masked": list(_masked(args, "/input/call/args")),
        "labels": _labels(),
        "callgate": columns(r),
    }


def line(r: AuditRecord) -> str:
    return json.dumps(decision_log(r), ensure_ascii=False, sort_keys=True)
