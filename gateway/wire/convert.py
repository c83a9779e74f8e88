"""Protobuf ⇄ domain objects. The only module besides server.py that knows protobuf."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from gateway import pb
from gateway.approvals.desk import ApprovalPage, ListRequest
from gateway.approvals.records import DecideRequest
from gateway.audit.reader import AuditQuery
from gateway.audit.records import AuditRecord
from gateway.errors import RequestCode, RequestError
from gateway.model import (
    ApprovalFilter,
    ApprovalRecord,
    ApprovalStatus,
    Budget,
    CallRecord,
    CallResult,
    CallStatus,
    Decision,
    EventKind,
    NextAction,
    RunPage,
    RunRecord,
    RunState,
    RunView,
    ToolCall,
    TurnEvent,
    TurnInput,
    TurnOutcome,
    TurnRecord,
    Usage,
    Verdict,
    rfc3339,
)
from gateway.pins import ToolPin
from gateway.policy.base import RejectedReload
from gateway.run import pages
from gateway.run.authorize import AuthorizeDecision
from gateway.run.listing import RunsRequest
from gateway.run.pin_desk import Change
from gateway.run.quota_desk import QuotaPage
from gateway.run.resolution import ResolveRequest
from gateway.run.runner import StartRunParams
from gateway.tools import Tool
from gateway.tools.live import RejectedTools


def _enum(prefix: str, name: str) -> Any:
    """The protobuf enum value `<PREFIX>_<NAME>` (buf style)."""
    return getattr(pb, f"{prefix}_{name}")


def call_status(s: CallStatus) -> Any:
    # PROPOSED never leaves the runner settled; shown as UNSPECIFIED if ever seen mid-turn
    return 0 if s == CallStatus.PROPOSED else _enum("CALL_STATUS", s.value)


def call_status_from(value: int) -> CallStatus | None:
    """A protobuf CallStatus as the domain's; None for UNSPECIFIED or a number not defined."""
    try:
        name = pb.CallStatus.Name(value)
    except ValueError:
        return None
    try:
        return CallStatus(name.removeprefix("CALL_STATUS_"))
    except ValueError:
        return None


def resolve_request(req: pb.ResolveCallRequest) -> ResolveRequest:
    return ResolveRequest(
        run_id=req.run_id,
        call_id=req.call_id,
        outcome=call_status_from(req.outcome),
        output_json=req.output_json,
        reason=req.reason,
    )


def run_state_from(value: int) -> RunState:
    try:
        return RunState(str(pb.RunState.Name(value)).removeprefix("RUN_STATE_"))
    except ValueError:
        raise RequestError(
            RequestCode.INVALID_ARGUMENT,
            f"state {value} is not a run state: "
            "use RUN_STATE_ACTIVE, _PAUSED_FOR_APPROVAL, _PAUSED_UNKNOWN_OUTCOME, "
            "_COMPLETED, _HANDED_OFF, _BUDGET_EXHAUSTED or _CANCELLED",
        ) from None


def runs_request(req: pb.ListRunsRequest) -> RunsRequest:
    return RunsRequest(
        states=tuple(dict.fromkeys(run_state_from(s) for s in req.state)),
        page_size=req.page_size,
        page_token=req.page_token,
        subject=req.subject,
        every_subject=req.every_subject,
    )


def tool_summary(t: Tool) -> pb.ToolSummary:
    return pb.ToolSummary(
        name=t.name,
        version=t.version,
        effect=t.effect.value,
        description=t.description,
        input_schema_json=json.dumps(t.manifest.input_schema, sort_keys=True),
    )


def budget_from(b: pb.Budget) -> Budget:
    return Budget(b.max_turns, b.max_tool_calls, b.max_total_tokens, b.max_retries)


def budget_to(b: Budget) -> pb.Budget:
    return pb.Budget(
        max_turns=b.max_turns,
        max_tool_calls=b.max_tool_calls,
        max_total_tokens=b.max_total_tokens,
        max_retries=b.max_retries,
    )


def usage_to(u: Usage) -> pb.Usage:
    return pb.Usage(input_tokens=u.input_tokens, output_tokens=u.output_tokens)


def decision_to(d: Decision | None) -> pb.Decision:
    out = pb.Decision()
    if d is not None:
        _decision_into(out, d)
    return out


_VERDICTS = {v: _enum("VERDICT", v.value) for v in Verdict}


def _decision_into(out: pb.Decision, d: Decision) -> None:
    """d written into out, field by field (a message built from keyword arguments, with
    its lists and messages copied in, takes about three times as long)."""
    out.verdict = _VERDICTS[d.verdict]
    out.reasons.extend(d.reasons)
    out.policy_revision = d.policy_revision
    for q in d.quotas:
        out.quotas.add(key=q.key, limit=q.limit, window_s=q.window_s, cost=q.cost)
    out.tools_revision = d.tools_revision


def pin_to(pin: ToolPin, changed: Sequence[Change]) -> pb.ToolPin:
    return pb.ToolPin(
        name=pin.name,
        fingerprint=pin.fingerprint,
        pinned_at=rfc3339(pin.pinned_at),
        pinned_by=pin.pinned_by,
        reason=pin.reason,
        changed=[
            pb.ToolDefinitionChange(
                fingerprint=c.fingerprint,
                first_seen_at=rfc3339(c.first_seen_at),
                fields=c.fields,
                diff=c.diff,
            )
            for c in changed
        ],
    )


def quotas_to(page: QuotaPage) -> pb.ListQuotasResponse:
    return pb.ListQuotasResponse(
        next_page_token=page.next_page_token,
        quotas=[
            pb.QuotaUsage(
                key=q.key,
                used=q.used,
                limit=q.limit,
                window_s=q.window_s,
                reservations=q.reservations,
                updated_at=rfc3339(q.updated_at),
            )
            for q in page.quotas
        ],
    )


def start_params(req: pb.StartRunRequest) -> StartRunParams:
    return StartRunParams(
        run_id=req.run_id,
        provider=req.provider,
        api_version=req.api_version,
        budget=budget_from(req.budget),
        labels=dict(req.labels),
        conversation_json=req.conversation_json,
    )


def tool_calls(calls: list[pb.ToolCall]) -> tuple[ToolCall, ...]:
    """The calls as the runner judges them: a fragment only when marked `partial`. The
    deprecated `complete` is not read: proto3 sends a false as nothing at all, so it cannot
    tell "a fragment" from "a client that never heard of the field"."""
    return tuple(
        ToolCall(c.call_id, c.name, c.arguments_json, complete=not c.partial) for c in calls
    )


def turn_event(req: pb.SubmitTurnRequest) -> TurnEvent:
    kind = req.WhichOneof("event")
    if kind == "tool_request":
        return TurnEvent(EventKind.TOOL_REQUEST, calls=tool_calls(list(req.tool_request.calls)))
    if kind == "final":
        return TurnEvent(EventKind.FINAL, text=req.final.text)
    if kind == "refusal":
        return TurnEvent(EventKind.REFUSAL, text=req.refusal.text)
    if kind == "incomplete":
        return TurnEvent(EventKind.INCOMPLETE, text=req.incomplete.reason)
    if kind == "paused":
        return TurnEvent(EventKind.PAUSED, text=req.paused.reason)
    if kind == "provider_error":
        e = req.provider_error
        return TurnEvent(
            EventKind.PROVIDER_ERROR, text=e.message, error_kind=e.kind, retryable=e.retryable
        )
    raise RequestError(
        RequestCode.INVALID_ARGUMENT,
        "the turn carries no event: set one of "
        "tool_request, final, refusal, incomplete, paused, provider_error",
    )


def turn_input(req: pb.SubmitTurnRequest) -> TurnInput:
    return TurnInput(
        run_id=req.run_id,
        turn_id=req.turn_id,
        event=turn_event(req),
        provider=req.provider,
        api_version=req.api_version,
        model=req.model,
        usage=Usage(req.usage.input_tokens, req.usage.output_tokens),
        raw_response_json=req.raw_response_json,
    )


def call_result_to(r: CallResult) -> pb.CallResult:
    return pb.CallResult(
        call_id=r.call_id,
        tool=r.tool,
        status=call_status(r.status),
        output_json=r.output_json,
        error=pb.Error(code=r.error_code, message=r.error_message),
        decision=decision_to(r.decision),
        execution_count=r.execution_count,
        approval_id=r.approval_id,
    )


def outcome_to(o: TurnOutcome) -> pb.TurnOutcome:
    return pb.TurnOutcome(
        run_id=o.run_id,
        turn_id=o.turn_id,
        next=next_action(o.next),
        results=[call_result_to(r) for r in o.results],
        reason=o.reason,
        run_state=run_state(o.run_state),
        provider_input_json=o.provider_input_json,
    )


def next_action(n: NextAction) -> Any:
    return _enum("NEXT_ACTION", n.value)


def run_state(s: RunState) -> Any:
    return _enum("RUN_STATE", s.value)


def call_record_to(c: CallRecord) -> pb.CallRecord:
    return pb.CallRecord(
        call_id=c.call_id,
        turn_id=c.turn_id,
        tool=c.tool,
        tool_version=c.tool_version,
        status=call_status(c.status),
        arguments_sha256=c.arguments_sha256,
        decision=decision_to(c.decision),
        output_json=c.output_json,
        error=pb.Error(code=c.error_code, message=c.error_message),
        execution_count=c.execution_count,
        approval_id=c.approval_id,
        created_at=rfc3339(c.created_at),
        decided_at=rfc3339(c.decided_at),
        started_at=rfc3339(c.started_at),
        finished_at=rfc3339(c.finished_at),
        arguments_json=c.arguments_json,
        resolved_by=c.resolved_by,
        resolved_at=rfc3339(c.resolved_at),
        resolution_reason=c.resolution_reason,
    )


def turn_record_to(t: TurnRecord) -> pb.TurnRecord:
    return pb.TurnRecord(
        turn_id=t.turn_id,
        provider=t.provider,
        api_version=t.api_version,
        model=t.model,
        event=_enum("EVENT_KIND", t.event.value),
        next=next_action(t.next) if t.next else None,
        usage=usage_to(t.usage),
        raw_response_json=t.raw_response_json,
        created_at=rfc3339(t.created_at),
        reason=t.reason,
    )


def run_to(r: RunRecord, view: RunView | None = None, conversation_json: str = "") -> pb.Run:
    run = pb.Run(
        run_id=r.run_id,
        state=run_state(r.state),
        subject=r.subject,
        tenant=r.tenant,
        turns_used=r.turns_used,
        tool_calls_used=r.tool_calls_used,
        usage_total=usage_to(r.usage_total),
        budget=budget_to(r.budget),
        pause_reason=r.pause_reason,
        provider=r.provider,
        api_version=r.api_version,
        labels=r.labels,
        created_at=rfc3339(r.created_at),
        updated_at=rfc3339(r.updated_at),
        retries_in_row=r.retries_in_row,
        conversation_json=conversation_json,
    )
    if view is not None:
        run.calls.extend(call_record_to(c) for c in view.calls)
        run.turns.extend(turn_record_to(t) for t in view.turns)
    return run


def run_page_to(page: RunPage, conversation_json: str = "") -> pb.Run:
    """GetRun's answer: the run, one page of its turns and their calls, and the token of the
    next (older) page."""
    run = run_to(page.view.run, page.view, conversation_json)
    run.next_page_token = pages.next_page_token(page)
    run.turn_count = page.turn_count
    return run


def authorize_to(decisions: list[AuthorizeDecision]) -> pb.AuthorizeResponse:
    """Every decision with its error, both always present (empty when there is none)."""
    out = pb.AuthorizeResponse()
    for d in decisions:
        one = out.decisions.add(call_id=d.call_id)
        _decision_into(one.decision, d.decision)
        one.error.code = d.error_code  # (an assignment makes the message present)
        one.error.message = d.error_message
    return out


# ---------------------------------------------------------------------- approvals


def approval_status_from(value: int) -> ApprovalStatus:
    try:
        name = pb.ApprovalStatus.Name(value)
        return ApprovalStatus(name.removeprefix("APPROVAL_STATUS_"))
    except ValueError:
        raise RequestError(
            RequestCode.INVALID_ARGUMENT,
            f"status {value} is not an approval "
            "status: use APPROVAL_STATUS_PENDING, _APPROVED, _DENIED, _EXPIRED "
            "or _CANCELLED",
        ) from None


def list_request(req: pb.ListApprovalsRequest) -> ListRequest:
    statuses = tuple(dict.fromkeys(approval_status_from(s) for s in req.status))
    return ListRequest(
        ApprovalFilter(
            run_id=req.run_id, statuses=statuses, tool=req.tool, approval_id=req.approval_id
        ),
        page_size=req.page_size,
        page_token=req.page_token,
    )


def decide_request(req: pb.DecideApprovalRequest) -> DecideRequest:
    return DecideRequest(approval_id=req.approval_id, approve=req.approve, reason=req.reason)


def approval_to(a: ApprovalRecord) -> pb.Approval:
    return pb.Approval(
        approval_id=a.approval_id,
        run_id=a.run_id,
        call_id=a.call_id,
        tool=a.tool,
        tool_version=a.tool_version,
        arguments_json=a.arguments_json,
        arguments_sha256=a.arguments_sha256,
        status=_enum("APPROVAL_STATUS", a.status.value),
        requested_by=a.requested_by,
        decided_by=a.decided_by,
        created_at=rfc3339(a.created_at),
        expires_at=rfc3339(a.expires_at),
        reason=a.reason,
        turn_id=a.turn_id,
        decided_at=rfc3339(a.decided_at),
        tenant=a.tenant,
        requester_roles=list(a.requester_roles),
        policy_reasons=list(a.policy_reasons),
    )


def approvals_to(page: ApprovalPage) -> pb.ListApprovalsResponse:
    shown = [approval_to(a) for a in page.approvals]
    for a in shown:
        a.caller_may_decide = a.approval_id in page.decidable
    return pb.ListApprovalsResponse(approvals=shown, next_page_token=page.next_page_token)


# ---------------------------------------------------------------------- status and audit


def rejected_reload_to(r: RejectedReload | RejectedTools) -> pb.RejectedReload:
    return pb.RejectedReload(
        file=r.file,
        line=r.line or 0,
        column=r.column or 0,
        message=r.message,
        at=rfc3339(r.at),
        problems=[
            pb.PolicyProblem(file=p.file, line=p.line or 0, column=p.column or 0, message=p.message)
            for p in r.problems
        ],
    )


def _verdict_from(value: int) -> Verdict:
    try:
        return Verdict(str(pb.Verdict.Name(value)).removeprefix("VERDICT_"))
    except ValueError:
        raise RequestError(
            RequestCode.INVALID_ARGUMENT,
            f"verdict {value} is not a verdict: "
            "use VERDICT_ALLOW, _DENY, _APPROVAL_REQUIRED or _UNSPECIFIED",
        ) from None


def _status_filter(value: int) -> CallStatus:
    status = call_status_from(value)
    if status is None:
        raise RequestError(
            RequestCode.INVALID_ARGUMENT,
            f"status {value} is not a call status "
            "to filter by: use CALL_STATUS_SUCCEEDED, _REJECTED, _FAILED, ...",
        )
    return status


def audit_query(req: pb.QueryAuditRequest) -> AuditQuery:
    return AuditQuery(
        run_id=req.run_id,
        call_id=req.call_id,
        tool=req.tool,
        subject=req.subject,
        tenant=req.tenant if req.HasField("tenant") else None,
        verdicts=tuple(dict.fromkeys(_verdict_from(v) for v in req.verdict)),
        statuses=tuple(dict.fromkeys(_status_filter(v) for v in req.status)),
        since=req.since,
        until=req.until,
        limit=req.limit,
        after_seq=req.after_seq,
        tail=req.tail,
        follow=req.follow,
    )


def audit_record_to(r: AuditRecord) -> pb.AuditRecord:
    d = r.decision()
    status = CallStatus(r.status) if r.status and r.status in CallStatus.__members__ else None
    return pb.AuditRecord(
        seq=r.seq,
        time=r.time,
        kind=r.kind,
        run_id=r.run_id,
        turn_id=r.turn_id,
        call_id=r.call_id,
        provider=r.provider,
        tool=r.tool,
        tool_version=r.tool_version,
        subject=r.subject,
        tenant=r.tenant,
        arguments_summary_json=r.arguments_summary_json,
        arguments_sha256=r.arguments_sha256,
        decision=decision_to(d),
        status=call_status(status) if status else None,
        error_code=r.error_code,
        execution_count=r.execution_count,
        policy_revision=r.policy_revision,
        prev_hash=r.prev_hash,
        hash=r.hash,
        actor=r.actor or "",
        actor_tenant=r.actor_tenant or "",
        approval_id=r.approval_id or "",
        message=r.message or "",
        detail_json=r.detail_json or "",
        input_sha256=d.input_sha256 if d else "",
        key_id=r.key_id or "",
        seal=r.seal or "",
        approval_status=_approval_status_of(r),
    )


def _approval_status_of(r: AuditRecord) -> Any:
    """An approval record's approval status (from its detail), UNSPECIFIED for other kinds."""
    status = r.detail().get("approval_status") if r.kind == "approval" else None
    if not isinstance(status, str) or status not in ApprovalStatus.__members__:
        return 0
    return _enum("APPROVAL_STATUS", status)
