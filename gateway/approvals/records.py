"""Human approval, the pure parts: requests, decisions and their records (no I/O).

An approval is created PENDING with the call it covers (tool version, arguments and their
hash), the requester (subject, tenant, roles) and an expiry. It leaves PENDING exactly once:
APPROVED or DENIED by a person whom `may_approve` allows, EXPIRED at its expiry time,
CANCELLED with its run (or when a sibling write of the turn was denied). What an approval's
end does to its call is `call_after`; the re-check an approved call passes before it runs is in
`gateway.run.approval_gate`. The runner and `gateway.approvals.desk` do the I/O.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from gateway.errors import CallCode, PermissionDenied, RequestCode, RequestError
from gateway.model import (
    ApprovalRecord,
    ApprovalStatus,
    CallRecord,
    CallStatus,
    Identity,
    TurnRecord,
    rfc3339,
)
from gateway.policy.base import PolicyEngine
from gateway.policy.grants import refused
from gateway.policy.inputs import approve_input
from gateway.tools import Registry

MAX_REASON_CHARS = 2000


@dataclass(frozen=True)
class DecideRequest:
    approval_id: str
    approve: bool
    reason: str


def check_request(req: DecideRequest) -> None:
    if not req.approval_id:
        raise RequestError(
            RequestCode.INVALID_ARGUMENT, "approval_id names the approval to decide; it is required"
        )
    if not req.reason.strip():
        raise RequestError(
            RequestCode.INVALID_ARGUMENT,
            "reason is required: say why you approve or deny this call",
        )
    if len(req.reason) > MAX_REASON_CHARS:
        raise RequestError(
            RequestCode.INVALID_ARGUMENT, f"reason is longer than {MAX_REASON_CHARS} characters"
        )


def not_found(approval_id: str) -> RequestError:
    return RequestError(RequestCode.APPROVAL_NOT_FOUND, f"no approval {approval_id!r}")


def already_decided(a: ApprovalRecord) -> RequestError:
    """The refusal of a second decision (an expired approval has its own code)."""
    if a.status == ApprovalStatus.EXPIRED:
        return RequestError(
            RequestCode.APPROVAL_EXPIRED,
            f"approval {a.approval_id} expired at {rfc3339(a.expires_at)} "
            "before it was decided; the call was not run",
        )
    by = f" by {a.decided_by}" if a.decided_by else ""
    return RequestError(
        RequestCode.ALREADY_DECIDED,
        f"approval {a.approval_id} was already decided: {a.status.value}{by}",
    )


# ---------------------------------------------------------------------- who may see and decide


async def may_approve(
    policy: PolicyEngine, registry: Registry, approver: Identity, a: ApprovalRecord
) -> bool:
    return await policy.allows("may_approve", approve_input(approver, a, registry.get(a.tool)))


def not_allowed(approver: Identity, a: ApprovalRecord) -> PermissionDenied:
    """The refusal of a decision `may_approve` did not allow: the rule, who may decide."""
    grant = refused("may_approve", approver, a.tenant)
    if own(approver, a):
        return PermissionDenied(
            f"{approver.subject} may not decide approval {a.approval_id}: "
            f"you requested it, so someone else decides it ({grant})"
        )
    whose = (
        f" (requested by {a.requested_by} of tenant {a.tenant})"
        if a.tenant == approver.tenant
        else ""
    )
    return PermissionDenied(
        f"{approver.subject} may not decide approval {a.approval_id}{whose}: {grant}"
    )


def own(who: Identity, a: ApprovalRecord) -> bool:
    """The approval was requested in a run of this caller's."""
    return a.requested_by == who.subject and a.tenant == who.tenant


async def visible(
    policy: PolicyEngine, registry: Registry, who: Identity, a: ApprovalRecord
) -> bool:
    """A caller sees the approvals of its own runs and those `may_approve` lets it decide."""
    return own(who, a) or await may_approve(policy, registry, who, a)


# ---------------------------------------------------------------------- the approval's moves


def requested(
    requester: Identity, rec: CallRecord, now: datetime, default_ttl_s: int
) -> ApprovalRecord:
    """The approval a call waiting for a person gets: bound to its tool version and arguments
    hash, open for the decision's `approval_ttl_s` (else `default_ttl_s`)."""
    ttl = (
        rec.decision.approval_ttl_s
        if rec.decision and rec.decision.approval_ttl_s
        else default_ttl_s
    )
    return ApprovalRecord(
        approval_id=f"apr_{uuid.uuid4().hex}",
        run_id=rec.run_id,
        turn_id=rec.turn_id,
        call_id=rec.call_id,
        tool=rec.tool,
        tool_version=rec.tool_version,
        arguments_json=rec.arguments_json,
        arguments_sha256=rec.arguments_sha256,
        status=ApprovalStatus.PENDING,
        requested_by=requester.subject,
        tenant=requester.tenant,
        requester_roles=requester.roles,
        policy_reasons=rec.decision.reasons if rec.decision else (),
        tool_fingerprint=rec.decision.tool_fingerprint if rec.decision else "",
        created_at=now,
        expires_at=now + timedelta(seconds=ttl),
    )


def decided(
    a: ApprovalRecord, approver: Identity, req: DecideRequest, now: datetime
) -> ApprovalRecord:
    status = ApprovalStatus.APPROVED if req.approve else ApprovalStatus.DENIED
    return replace(
        a,
        status=status,
        decided_by=approver.subject,
        decided_by_tenant=approver.tenant,
        decided_by_roles=approver.roles,
        decided_at=now,
        reason=req.reason,
    )


def expired(a: ApprovalRecord, now: datetime) -> ApprovalRecord:
    return replace(
        a,
        status=ApprovalStatus.EXPIRED,
        decided_at=now,
        reason=f"nobody decided it by {rfc3339(a.expires_at)}",
    )


def cancelled(a: ApprovalRecord, now: datetime, why: str) -> ApprovalRecord:
    return replace(a, status=ApprovalStatus.CANCELLED, decided_at=now, reason=why)


# ---------------------------------------------------------------------- what it does to the call

_REFUSALS = {
    ApprovalStatus.DENIED: CallCode.APPROVAL_DENIED,
    ApprovalStatus.EXPIRED: CallCode.APPROVAL_EXPIRED,
    ApprovalStatus.CANCELLED: CallCode.APPROVAL_CANCELLED,
}


def refusal_message(a: ApprovalRecord) -> str:
    if a.status == ApprovalStatus.DENIED:
        return f"denied by {a.decided_by}: {a.reason}; the call was not run"
    if a.status == ApprovalStatus.EXPIRED:
        return (
            f"nobody approved the call before its approval expired at "
            f"{rfc3339(a.expires_at)}; it was not run"
        )
    return f"the approval was cancelled ({a.reason}); the call was not run"


def call_after(rec: CallRecord, a: ApprovalRecord | None, now: datetime) -> CallRecord:
    """A call waiting for approval once its approval ended other than APPROVED: REJECTED with
    the matching code. Unchanged while it is PENDING or APPROVED."""
    if a is None:  # no record: nothing can show a person approved it
        return rec.moved(
            CallStatus.REJECTED,
            error_code=CallCode.APPROVAL_CANCELLED.value,
            error_message="the call's approval record is missing; not run",
            finished_at=now,
        )
    code = _REFUSALS.get(a.status)
    if code is None:
        return rec
    return rec.moved(
        CallStatus.REJECTED,
        error_code=code.value,
        error_message=refusal_message(a),
        finished_at=now,
    )


def stray(
    due: Sequence[ApprovalRecord], turn: TurnRecord | None, live: bool, waiting: set[str]
) -> list[ApprovalRecord]:
    """The approvals past their expiry that no waiting call of the run's last turn owns (its
    run ended, or the data is inconsistent): they expire on their own, not through a turn."""
    return [
        a
        for a in due
        if not live or turn is None or a.turn_id != turn.turn_id or a.call_id not in waiting
    ]


def waiting_message(a: ApprovalRecord) -> str:
    """What an approved call that waits for its sibling writes' approvals says meanwhile."""
    return f"approved by {a.decided_by}; waiting for the approval of another write of this turn"


# ---------------------------------------------------------------------- outcome


def error_code_of(a: ApprovalRecord) -> str:
    """The code an approval's end gives its call ("" while PENDING or once APPROVED)."""
    code = _REFUSALS.get(a.status)
    return code.value if code is not None else ""


# ---------------------------------------------------------------------- listing pages

DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 500
TOKEN_PREFIX = "after:"


def page_size(requested: int) -> int:
    if requested < 0:
        raise RequestError(
            RequestCode.INVALID_ARGUMENT,
            f"page_size must be 0 (the default, {DEFAULT_PAGE_SIZE}) or more",
        )
    return min(requested or DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE)


def page_token(position: int) -> str:
    return f"{TOKEN_PREFIX}{position}"


def page_after(token: str) -> int:
    """The position a page token continues after (0 for no token)."""
    if not token:
        return 0
    number = token.removeprefix(TOKEN_PREFIX)
    if not token.startswith(TOKEN_PREFIX) or not number.isdigit() or len(number) > 18:
        raise RequestError(
            RequestCode.INVALID_ARGUMENT,
            "page_token is not one callgate "
            "gave out: pass next_page_token of the previous answer unchanged",
        )
    return int(number)
