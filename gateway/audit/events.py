"""Every audit event callgate appends, built here and only here: one function per kind.

What every call event carries: whose record it is (the run's owner, or the caller of
Authorize), who acted (`actor`: the caller who submitted the turn, the approver, the operator,
the one who cancelled; "" when callgate acted on its own), the run, turn and call, the
provider, the tool and version, the arguments masked (`gateway.tools.redaction`), their hash,
the decision with its reasons and policy revision, the call's status, error code and message,
and how many requests reached the target.

Nothing secret leaves here in clear: masked values become keyed masks, and a record that
masked something carries keyed digests (`hmac-sha256:...`) instead of the plain SHA-256 of
its arguments and of its policy input, since a plain hash of guessable arguments would confirm
a guess. Messages and reasons are scrubbed of the masked values they quote. Nothing from the
request's metadata and no model output other than the call itself reaches an event.
"""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import datetime
from typing import Any

from gateway.approvals.records import error_code_of
from gateway.audit.records import AuditEvent, AuditKind
from gateway.errors import CallCode
from gateway.model import (
    ApprovalRecord,
    ApprovalStatus,
    CallRecord,
    CallStatus,
    Decision,
    Identity,
    RunRecord,
    Verdict,
)
from gateway.pins import ToolPin, short
from gateway.tools import Registry
from gateway.tools.redaction import Masked

NOBODY = Identity("")  # callgate acting on its own: no actor


def _detail(**values: Any) -> str:
    kept = {k: v for k, v in values.items() if v not in (None, "")}
    return json.dumps(kept, sort_keys=True) if kept else ""


class _Shown:
    """A call's arguments as the trail shows them, and the scrubbing of texts about them."""

    def __init__(self, registry: Registry, tool: str, arguments_json: str) -> None:
        self.key = registry.audit_key
        self.masked: Masked | None = registry.masked_text(tool, arguments_json)

    @property
    def changed(self) -> bool:
        return self.masked is not None and self.masked.changed

    def summary(self) -> str:
        return self.masked.value_json if self.masked is not None else ""

    def text(self, text: str) -> str:
        return (self.masked or Masked({})).scrub(text, self.key.mask) if text else text

    def digest(self, sha256: str) -> str:
        return self.key.keyed(sha256) if self.changed else sha256

    def decision(self, d: Decision | None) -> Decision | None:
        if d is None:
            return None
        reasons = tuple(self.text(r) for r in d.reasons)
        error, digest = self.text(d.error), self.digest(d.input_sha256)
        if reasons == d.reasons and error == d.error and digest == d.input_sha256:
            return d  # nothing to scrub: as it is (most decisions)
        return replace(d, reasons=reasons, error=error, input_sha256=digest)


def _call(
    kind: AuditKind,
    rec: CallRecord,
    *,
    owner: Identity,
    provider: str,
    actor: Identity,
    registry: Registry,
    now: datetime,
    detail: str = "",
    decision: Decision | None = None,
    decided_only: bool = False,
) -> AuditEvent:
    shown = _Shown(registry, rec.tool, rec.arguments_json)
    d = shown.decision(decision or rec.decision)
    decided = decided_only or rec.status == CallStatus.PROPOSED  # decided, not run (yet)
    return AuditEvent(
        kind=kind.value,
        subject=owner.subject,
        tenant=owner.tenant,
        run_id=rec.run_id,
        turn_id=rec.turn_id,
        call_id=rec.call_id,
        provider=provider,
        tool=rec.tool,
        tool_version=rec.tool_version,
        arguments_summary_json=shown.summary(),
        arguments_sha256=shown.digest(rec.arguments_sha256),
        decision=d,
        status=None if decided else rec.status,
        error_code=rec.error_code,
        execution_count=rec.execution_count,
        policy_revision=d.policy_revision if d else "",
        time=now,
        actor=actor.subject,
        actor_tenant=actor.tenant,
        approval_id=rec.approval_id,
        message=shown.text(rec.error_message),
        detail_json=detail,
    )


# ---------------------------------------------------------------------- calls


def decision(
    rec: CallRecord,
    run: RunRecord,
    *,
    actor: Identity,
    registry: Registry,
    now: datetime,
    provider: str = "",
) -> AuditEvent:
    """A call judged (or stopped by the plan, or by its approval), in actor's name."""
    return _call(
        AuditKind.DECISION,
        rec,
        owner=run.owner,
        provider=provider or run.provider,
        actor=actor,
        registry=registry,
        now=now,
    )


def rechecked(rec: CallRecord, run: RunRecord, *, registry: Registry, now: datetime) -> AuditEvent:
    """An approved call decided again with its approval just before it runs: callgate acted;
    its own verdict (the re-check's) and no status yet (the execution record follows)."""
    return _call(
        AuditKind.DECISION,
        rec,
        owner=run.owner,
        provider=run.provider,
        actor=NOBODY,
        registry=registry,
        now=now,
        decided_only=True,
        detail=_detail(recheck_of=rec.approval_id),
    )


def authorize(
    rec: CallRecord, caller: Identity, *, registry: Registry, now: datetime
) -> AuditEvent:
    """A call judged by Authorize: the caller's own record (nothing runs)."""
    return _call(
        AuditKind.AUTHORIZE,
        rec,
        owner=caller,
        provider="",
        actor=caller,
        registry=registry,
        now=now,
    )


def execution(
    rec: CallRecord,
    run: RunRecord,
    *,
    registry: Registry,
    now: datetime,
    attempts: int | None = None,
    kind: AuditKind = AuditKind.EXECUTION,
    delivery: dict[str, Any] | None = None,
) -> AuditEvent:
    """A call's result once it ran (`attempts`: the requests this step sent), was looked up
    (RECONCILE), or will not run (NOT_RUN); `delivery`: what the `result` rule redacted or
    withheld (pointers and masks of the removed values, never a value)."""
    return _call(
        kind,
        rec,
        owner=run.owner,
        provider=run.provider,
        actor=NOBODY,
        registry=registry,
        now=now,
        detail=_detail(attempts=attempts, delivery=delivery),
    )


def resolved(
    rec: CallRecord,
    run: RunRecord,
    operator: Identity,
    *,
    reason: str,
    policy_revision: str,
    registry: Registry,
    now: datetime,
) -> AuditEvent:
    """An operator resolved an unknown call: the operator acted, the grant is the decision."""
    grant = Decision(
        Verdict.ALLOW,
        reasons=(
            f"may_resolve: {operator.subject} settled the call as {rec.status.value}: {reason}",
        ),
        policy_revision=policy_revision,
    )
    return _call(
        AuditKind.RESOLVE,
        rec,
        owner=run.owner,
        provider=run.provider,
        actor=operator,
        registry=registry,
        now=now,
        decision=grant,
    )


def cancelled(
    run: RunRecord, calls: list[CallRecord], by: Identity, *, registry: Registry, now: datetime
) -> list[AuditEvent]:
    """A run cancelled: one record for the run, one for each call it stopped."""
    event = AuditEvent(
        kind=AuditKind.CANCEL.value,
        subject=run.subject,
        tenant=run.tenant,
        run_id=run.run_id,
        provider=run.provider,
        time=now,
        actor=by.subject,
        actor_tenant=by.tenant,
        message="the run was cancelled",
    )
    return [
        event,
        *(
            _call(
                AuditKind.CANCEL,
                c,
                owner=run.owner,
                provider=run.provider,
                actor=by,
                registry=registry,
                now=now,
            )
            for c in calls
        ),
    ]


# ---------------------------------------------------------------------- approvals


def _approval(
    a: ApprovalRecord,
    *,
    actor: Identity,
    decision: Decision,
    error_code: str,
    registry: Registry,
    now: datetime,
    provider: str,
    status: CallStatus | None,
) -> AuditEvent:
    """An approval's record: its own verdict (asked for: APPROVAL_REQUIRED; approved: ALLOW;
    else DENY), the call's status while it waits (none once the approval ended: the call's
    next record says what became of it), and the decision's reasons as its message."""
    shown = _Shown(registry, a.tool, a.arguments_json)
    d = shown.decision(decision)
    return AuditEvent(
        kind=AuditKind.APPROVAL.value,
        subject=a.requested_by,
        tenant=a.tenant,
        run_id=a.run_id,
        turn_id=a.turn_id,
        call_id=a.call_id,
        provider=provider,
        tool=a.tool,
        tool_version=a.tool_version,
        arguments_summary_json=shown.summary(),
        arguments_sha256=shown.digest(a.arguments_sha256),
        decision=d,
        status=status,
        error_code=error_code,
        policy_revision=d.policy_revision if d else "",
        time=now,
        actor=actor.subject,
        actor_tenant=actor.tenant,
        approval_id=a.approval_id,
        message=shown.text("; ".join(decision.reasons)),
        detail_json=_detail(
            approval_status=a.status.value,
            expires_at=a.expires_at.isoformat() if a.expires_at else None,
        ),
    )


def approval_requested(
    a: ApprovalRecord, decision: Decision, *, registry: Registry, now: datetime, provider: str
) -> AuditEvent:
    """An approval asked for: the requester acted, the policy's decision says why."""
    return _approval(
        a,
        actor=a.requester,
        decision=decision,
        error_code=CallCode.APPROVAL_REQUIRED.value,
        registry=registry,
        now=now,
        provider=provider,
        status=CallStatus.PENDING_APPROVAL,
    )


def approval_ended(
    a: ApprovalRecord,
    *,
    actor: Identity,
    policy_revision: str,
    registry: Registry,
    now: datetime,
    provider: str,
) -> AuditEvent:
    """An approval leaving PENDING: decided by actor (the approver), cancelled by actor (who
    cancelled the run), or expired or cancelled by callgate (NOBODY)."""
    verdict = Verdict.ALLOW if a.status == ApprovalStatus.APPROVED else Verdict.DENY
    who = f" by {a.decided_by}" if a.decided_by else ""
    outcome = Decision(
        verdict,
        (f"approval {a.approval_id} {a.status.value.lower()}{who}: {a.reason}",),
        policy_revision,
    )
    return _approval(
        a,
        actor=actor,
        decision=outcome,
        error_code=error_code_of(a),
        registry=registry,
        now=now,
        provider=provider,
        status=None,
    )


# ---------------------------------------------------------------------- callgate itself


def policy_rejected(
    *,
    file: str,
    line: int | None,
    message: str,
    serving: str,
    now: datetime,
    column: int | None = None,
    problems: tuple[dict[str, Any], ...] = (),
) -> AuditEvent:
    """A changed policy directory refused on reload; `serving` keeps deciding. The message
    is the first problem (`file:line:col: what`); `problems` lists every one."""
    return AuditEvent(
        kind=AuditKind.POLICY.value,
        subject="",
        time=now,
        decision=Decision(
            Verdict.DENY, tuple(p["message"] for p in problems) or (message,), serving
        ),
        policy_revision=serving,
        error_code="policy_reload_rejected",
        message=message,
        detail_json=_detail(
            file=file,
            line=line,
            column=column,
            problems=list(problems) if len(problems) > 1 else None,
        ),
    )


def policy_installed(*, revision: str, previous: str, now: datetime) -> AuditEvent:
    """A new policy revision serving from now on."""
    return AuditEvent(
        kind=AuditKind.POLICY.value,
        subject="",
        time=now,
        decision=Decision(Verdict.ALLOW, ("policy reloaded",), revision),
        policy_revision=revision,
        message=f"serving {revision} (was {previous})",
        detail_json=_detail(previous=previous),
    )


def tools_rejected(
    *,
    file: str,
    line: int | None,
    message: str,
    serving: str,
    now: datetime,
    problems: tuple[str, ...] = (),
) -> AuditEvent:
    """A changed `--tools` directory refused on reload; the `serving` tool set stays. The
    message is the first problem; `problems` lists every one."""
    return AuditEvent(
        kind=AuditKind.TOOLS.value,
        subject="",
        time=now,
        error_code="tools_reload_rejected",
        message=message,
        detail_json=_detail(
            file=file,
            line=line,
            tools_revision=serving,
            problems=list(problems) if len(problems) > 1 else None,
        ),
    )


def tools_installed(*, revision: str, previous: str, tools: int, now: datetime) -> AuditEvent:
    """A new `--tools` set serving from now on."""
    return AuditEvent(
        kind=AuditKind.TOOLS.value,
        subject="",
        time=now,
        message=f"serving tools {revision} (was {previous}), {tools} tools",
        detail_json=_detail(tools_revision=revision, previous=previous, tools=tools),
    )


def pruned(
    *, seq: int, chain_hash: str, removed: int, before: str, by: str, now: datetime
) -> AuditEvent:
    """Records up to seq removed; the chain continues from chain_hash (the checkpoint)."""
    return AuditEvent(
        kind=AuditKind.PRUNE.value,
        subject="",
        time=now,
        message=f"{removed} record(s) written before {before} removed by {by}; "
        f"the chain continues after record {seq}",
        detail_json=_detail(
            checkpoint_seq=seq, checkpoint_hash=chain_hash, removed=removed, before=before, by=by
        ),
    )


def quota_reset(*, key: str, by: Identity, removed: int, reason: str, now: datetime) -> AuditEvent:
    """Every reservation of a quota key given back by an operator."""
    return AuditEvent(
        kind=AuditKind.QUOTA.value,
        subject=by.subject,
        tenant=by.tenant,
        time=now,
        actor=by.subject,
        actor_tenant=by.tenant,
        message=f"quota {key!r} reset by {by.subject}: {removed} reservation(s) "
        f"given back ({reason})",
        detail_json=_detail(key=key, removed=removed, reason=reason),
    )


def tool_pinned(pin: ToolPin, *, by: Identity | None, previous: str = "") -> AuditEvent:
    """A tool's definition pinned: the first one seen (by None: callgate), or one an operator
    approved in place of `previous`."""
    who = by.subject if by is not None else ""
    message = (
        f"tool {pin.name!r} pinned to {short(pin.fingerprint)} by {who} "
        f"(was {short(previous) if previous else 'unpinned'}): {pin.reason}"
        if by is not None
        else f"tool {pin.name!r} pinned to the first definition seen, {short(pin.fingerprint)}"
    )
    return AuditEvent(
        kind=AuditKind.PIN.value,
        subject=who,
        tenant=by.tenant if by is not None else "",
        time=pin.pinned_at,
        tool=pin.name,
        actor=who,
        actor_tenant=by.tenant if by is not None else "",
        message=message,
        detail_json=_detail(
            fingerprint=pin.fingerprint, previous=previous or None, reason=pin.reason or None
        ),
    )


def tool_changed(
    *, name: str, pinned: str, fingerprint: str, fields: list[str], held: bool, now: datetime
) -> AuditEvent:
    """A definition of a tool other than its pinned one, seen serving for the first time;
    `held`: its calls are rejected until it is approved (`--pin-tools enforce`)."""
    return AuditEvent(
        kind=AuditKind.PIN.value,
        subject="",
        time=now,
        tool=name,
        error_code=CallCode.TOOL_CHANGED.value,
        message=f"tool {name!r} changed ({short(pinned)} → {short(fingerprint)}: "
        f"{', '.join(fields) or 'its definition'}); its calls "
        + ("are held until it is approved" if held else "go on (warn)"),
        detail_json=_detail(pinned=pinned, fingerprint=fingerprint, changed=fields, held=held),
    )
