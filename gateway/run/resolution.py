"""ResolveCall, the pure parts: checking a resolution and the settled record.

An operator whom `may_resolve` allows settles a call whose outcome is UNKNOWN as SUCCEEDED
(with the output the operator read off the target system, checked against the tool's
`output_schema`) or FAILED, always with a reason. The call record keeps who, when and why
(`resolved_by`, `resolved_at`, `resolution_reason`) and carries the code
`resolved_by_operator`; the audit trail gets a `resolve` record whose decision is the grant
(`gateway.audit.events.resolved`).
The runner does the I/O: finding the call, asking the policy, committing, settling the turn.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime

from gateway.errors import CallCode, PermissionDenied, RequestCode, RequestError
from gateway.executors.output import json_problem
from gateway.model import CallRecord, CallStatus, Identity, RunRecord
from gateway.policy.grants import refused
from gateway.tools import Tool

OUTCOMES = (CallStatus.SUCCEEDED, CallStatus.FAILED)
MAX_REASON_CHARS = 2000
MAX_OUTPUT_BYTES = 1 << 20


@dataclass(frozen=True)
class ResolveRequest:
    run_id: str
    call_id: str
    outcome: CallStatus | None  # None: the request named no (or an unknown) status
    output_json: str = ""
    reason: str = ""


def _invalid(message: str) -> RequestError:
    return RequestError(RequestCode.INVALID_ARGUMENT, message)


def check_request(req: ResolveRequest) -> None:
    """What can be checked without the call: IDs, outcome, reason, output shape."""
    if not req.run_id or not req.call_id:
        raise _invalid("run_id and call_id name the call to resolve; both are required")
    if req.outcome not in OUTCOMES:
        raise _invalid(
            "outcome must be CALL_STATUS_SUCCEEDED (the effect happened) or "
            "CALL_STATUS_FAILED (it did not)"
        )
    if not req.reason.strip():
        raise _invalid("reason is required: say what you checked on the target system")
    if len(req.reason) > MAX_REASON_CHARS:
        raise _invalid(f"reason is longer than {MAX_REASON_CHARS} characters")
    if req.outcome == CallStatus.FAILED and req.output_json:
        raise _invalid("a FAILED resolution carries no output_json (the effect did not happen)")
    if len(req.output_json.encode()) > MAX_OUTPUT_BYTES:
        raise _invalid(f"output_json is larger than {MAX_OUTPUT_BYTES} bytes")
    if req.output_json:
        problem = json_problem(req.output_json)
        if problem is not None:
            raise _invalid(f"output_json is not valid JSON: {problem}")


def check_output(tool: Tool | None, req: ResolveRequest) -> None:
    """A SUCCEEDED resolution's output must satisfy the tool's output_schema, if it has one."""
    if req.outcome != CallStatus.SUCCEEDED or tool is None:
        return
    problems = tool.validate_output(json.loads(output_of(req)))
    if problems is not None:
        raise _invalid(f"output_json does not match the {tool.name} output_schema: {problems}")


def output_of(req: ResolveRequest) -> str:
    if req.outcome != CallStatus.SUCCEEDED:
        return ""
    return req.output_json.strip() or "null"


def not_allowed(operator: Identity, run: RunRecord) -> PermissionDenied:
    return PermissionDenied(
        f"{operator.subject} may not resolve calls of run {run.run_id}: "
        f"{refused('may_resolve', operator, run.tenant)}"
    )


def not_unknown(rec: CallRecord) -> RequestError:
    return RequestError(
        RequestCode.NOT_UNKNOWN,
        f"call {rec.call_id} is {rec.status.value}, not UNKNOWN: only a call "
        "whose outcome is unknown can be resolved",
    )


def resolved(rec: CallRecord, operator: Identity, req: ResolveRequest, now: datetime) -> CallRecord:
    assert req.outcome is not None
    return rec.moved(
        req.outcome,
        output_json=output_of(req),
        error_code=CallCode.RESOLVED_BY_OPERATOR.value,
        error_message=f"settled as {req.outcome.value} by {operator.subject}: {req.reason}",
        finished_at=now,
        resolved_by=operator.subject,
        resolved_at=now,
        resolution_reason=req.reason,
    )
