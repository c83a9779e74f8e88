"""Row codecs shared by the SQL stores: domain records <-> flat column tuples.

Every row is `storable`: a text value any store could not encode (a lone surrogate) is made
encodable here, so no value can make a write fail again and again."""

from __future__ import annotations

import functools
import json
import operator
from collections.abc import Sequence
from dataclasses import fields
from datetime import datetime
from typing import Any

from gateway.audit.hashing import AUDIT_LAYOUT, HASH_COLUMN, chain_hash, hashed_body
from gateway.audit.keys import AuditKey
from gateway.audit.records import AuditEvent, AuditRecord, audit_time
from gateway.jsontext import storable_text
from gateway.model import (
    ApprovalRecord,
    ApprovalStatus,
    Budget,
    CallRecord,
    CallStatus,
    Decision,
    EventDetail,
    EventKind,
    NextAction,
    PastCall,
    Quota,
    RunRecord,
    RunState,
    TurnRecord,
    Usage,
    Verdict,
    now_utc,
    rfc3339,
)
from gateway.store.schema import (
    APPROVAL_COLUMNS,
    CALL_COLUMNS,
    RUN_COLUMNS,
    RUN_UPDATED,
    TURN_COLUMNS,
    TURN_UPDATED,
)


def storable(values: tuple[Any, ...]) -> tuple[Any, ...]:
    """values with each text made storable (`storable_text`); the same tuple when every
    text is ASCII without NUL, as nearly all are (one scan of them joined)."""
    joined = "".join([v for v in values if isinstance(v, str)])
    if joined.isascii() and "\x00" not in joined:
        return values
    return tuple(storable_text(v) if isinstance(v, str) else v for v in values)


def _t(value: datetime | None) -> str | None:
    return rfc3339(value) if value is not None else None


def _dt(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value.replace("Z", "+00:00")) if value else None


def _texts_json(values: Sequence[str]) -> str:
    return json.dumps(list(values))


def _texts(text: str | None) -> tuple[str, ...]:
    """A stored JSON array of strings; a row written before the column existed has none."""
    if not text:
        return ()
    values = json.loads(text)
    return tuple(v for v in values if isinstance(v, str)) if isinstance(values, list) else ()


def decision_to_json(d: Decision | None) -> str | None:
    return None if d is None else _decision_json(d)


@functools.lru_cache(maxsize=1024)  # a remembered decision is stored again and again
def _decision_json(d: Decision) -> str:
    body: dict[str, Any] = {
        "verdict": d.verdict.value,
        "reasons": list(d.reasons),
        "policy_revision": d.policy_revision,
        "approval_ttl_s": d.approval_ttl_s,
        "error": d.error,
    }
    if d.input_sha256:
        body["input_sha256"] = d.input_sha256
    if d.quotas:  # (absent when none: records written without quotas hash as before)
        body["quotas"] = [vars(q) for q in d.quotas]
    if d.tools_revision:
        body["tools_revision"] = d.tools_revision
    if d.tool_fingerprint:
        body["tool_fingerprint"] = d.tool_fingerprint
    return json.dumps(body)


def decision_from_json(text: str | None) -> Decision | None:
    if not text:
        return None
    d = json.loads(text)
    return Decision(
        verdict=Verdict(d["verdict"]),
        reasons=tuple(d["reasons"]),
        policy_revision=d["policy_revision"],
        approval_ttl_s=d.get("approval_ttl_s"),
        error=d.get("error", ""),
        input_sha256=d.get("input_sha256", ""),
        quotas=tuple(Quota(**q) for q in d.get("quotas", ())),
        tools_revision=d.get("tools_revision", ""),
        tool_fingerprint=d.get("tool_fingerprint", ""),
    )


_FIELDS: dict[type, tuple[str, ...]] = {
    kind: tuple(f.name for f in fields(kind)) for kind in (Budget, EventDetail)
}


def _flat_json(value: Budget | EventDetail) -> str:
    """`json.dumps(asdict(value))` for a dataclass of scalars, without asdict's deep copy."""
    return json.dumps({name: getattr(value, name) for name in _FIELDS[type(value)]})


def run_row(r: RunRecord) -> tuple[Any, ...]:
    return storable(
        (
            r.run_id,
            r.state.value,
            r.subject,
            r.tenant,
            r.provider,
            r.api_version,
            _flat_json(r.budget),
            json.dumps(r.labels),
            r.conversation_json,
            r.params_hash,
            r.turns_used,
            r.tool_calls_used,
            r.retries_in_row,
            r.usage_total.input_tokens,
            r.usage_total.output_tokens,
            r.pause_reason,
            _t(r.created_at),
            _t(r.updated_at),
            _texts_json(r.roles),
        )
    )


def run_from_row(row: tuple[Any, ...]) -> RunRecord:
    v = dict(zip(RUN_COLUMNS, row, strict=True))
    return RunRecord(
        run_id=v["run_id"],
        state=RunState(v["state"]),
        subject=v["subject"],
        tenant=v["tenant"],
        provider=v["provider"],
        api_version=v["api_version"],
        budget=Budget(**json.loads(v["budget_json"])),
        labels=json.loads(v["labels_json"]),
        conversation_json=v["conversation_json"],
        params_hash=v["params_hash"],
        turns_used=v["turns_used"],
        tool_calls_used=v["tool_calls_used"],
        retries_in_row=v["retries_in_row"],
        usage_total=Usage(v["input_tokens"], v["output_tokens"]),
        pause_reason=v["pause_reason"],
        created_at=_dt(v["created_at"]),
        updated_at=_dt(v["updated_at"]),
        roles=_texts(v["roles_json"]),
    )


_RUN_UPDATED = operator.itemgetter(*(RUN_COLUMNS.index(c) for c in RUN_UPDATED))


def run_update(r: RunRecord) -> tuple[Any, ...]:
    """`run_row`'s values of the columns an update sets (`schema.RUN_UPDATED`)."""
    values: tuple[Any, ...] = _RUN_UPDATED(run_row(r))
    return values


def turn_row(t: TurnRecord) -> tuple[Any, ...]:
    return storable(
        (
            t.run_id,
            t.turn_id,
            t.seq,
            t.event.value,
            t.content_hash,
            t.provider,
            t.api_version,
            t.model,
            t.usage.input_tokens,
            t.usage.output_tokens,
            t.raw_response_json,
            _flat_json(t.detail),
            t.next.value if t.next else None,
            t.reason,
            _t(t.created_at),
        )
    )


_TURN_UPDATED = operator.itemgetter(*(TURN_COLUMNS.index(c) for c in TURN_UPDATED))


def turn_update(t: TurnRecord) -> tuple[Any, ...]:
    """`turn_row`'s values of the columns an update sets (`schema.TURN_UPDATED`)."""
    values: tuple[Any, ...] = _TURN_UPDATED(turn_row(t))
    return values


def turn_from_row(row: tuple[Any, ...]) -> TurnRecord:
    v = dict(zip(TURN_COLUMNS, row, strict=True))
    return TurnRecord(
        run_id=v["run_id"],
        turn_id=v["turn_id"],
        seq=v["seq"],
        event=EventKind(v["event"]),
        content_hash=v["content_hash"],
        provider=v["provider"],
        api_version=v["api_version"],
        model=v["model"],
        usage=Usage(v["input_tokens"], v["output_tokens"]),
        raw_response_json=v["raw_response_json"],
        detail=EventDetail(**json.loads(v["detail_json"])),
        next=NextAction(v["next"]) if v["next"] else None,
        reason=v["reason"],
        created_at=_dt(v["created_at"]),
    )


def call_row(c: CallRecord) -> tuple[Any, ...]:
    return storable(
        (
            c.run_id,
            c.turn_id,
            c.call_id,
            c.index,
            c.tool,
            c.status.value,
            c.arguments_json,
            c.tool_version,
            c.effect,
            c.arguments_sha256,
            decision_to_json(c.decision),
            c.output_json,
            c.error_code,
            c.error_message,
            c.execution_count,
            c.approval_id,
            c.idempotency_key,
            _t(c.created_at),
            _t(c.decided_at),
            _t(c.started_at),
            _t(c.finished_at),
            c.resolved_by,
            _t(c.resolved_at),
            c.resolution_reason,
        )
    )


def call_from_row(row: tuple[Any, ...]) -> CallRecord:
    v = dict(zip(CALL_COLUMNS, row, strict=True))
    return CallRecord(
        run_id=v["run_id"],
        turn_id=v["turn_id"],
        call_id=v["call_id"],
        index=v["idx"],
        tool=v["tool"],
        status=CallStatus(v["status"]),
        arguments_json=v["arguments_json"],
        tool_version=v["tool_version"],
        effect=v["effect"],
        arguments_sha256=v["arguments_sha256"],
        decision=decision_from_json(v["decision_json"]),
        output_json=v["output_json"],
        error_code=v["error_code"],
        error_message=v["error_message"],
        execution_count=v["execution_count"],
        approval_id=v["approval_id"],
        idempotency_key=v["idempotency_key"],
        created_at=_dt(v["created_at"]),
        decided_at=_dt(v["decided_at"]),
        started_at=_dt(v["started_at"]),
        finished_at=_dt(v["finished_at"]),
        resolved_by=v["resolved_by"] or "",
        resolved_at=_dt(v["resolved_at"]),
        resolution_reason=v["resolution_reason"] or "",
    )


def past_call_from_row(row: tuple[Any, ...]) -> PastCall:
    turn_id, call_id, tool, effect, status, arguments_json = row
    return PastCall(turn_id, call_id, tool, effect, CallStatus(status), arguments_json)


def approval_row(a: ApprovalRecord) -> tuple[Any, ...]:
    return storable(
        (
            a.approval_id,
            a.run_id,
            a.turn_id,
            a.call_id,
            a.tool,
            a.tool_version,
            a.arguments_json,
            a.arguments_sha256,
            a.status.value,
            a.requested_by,
            a.tenant,
            _t(a.created_at),
            _t(a.expires_at),
            a.decided_by,
            _t(a.decided_at),
            a.reason,
            _texts_json(a.requester_roles),
            a.decided_by_tenant,
            _texts_json(a.decided_by_roles),
            _texts_json(a.policy_reasons),
            a.tool_fingerprint,
        )
    )


def approval_from_row(row: tuple[Any, ...]) -> ApprovalRecord:
    v = dict(zip(APPROVAL_COLUMNS, row, strict=True))
    created = _dt(v["created_at"])
    assert created is not None
    return ApprovalRecord(
        approval_id=v["approval_id"],
        run_id=v["run_id"],
        turn_id=v["turn_id"],
        call_id=v["call_id"],
        tool=v["tool"],
        tool_version=v["tool_version"],
        arguments_json=v["arguments_json"],
        arguments_sha256=v["arguments_sha256"],
        status=ApprovalStatus(v["status"]),
        requested_by=v["requested_by"],
        tenant=v["tenant"],
        created_at=created,
        expires_at=_dt(v["expires_at"]),
        decided_by=v["decided_by"],
        decided_at=_dt(v["decided_at"]),
        reason=v["reason"],
        requester_roles=_texts(v["requester_roles_json"]),
        decided_by_tenant=v["decided_by_tenant"] or "",
        decided_by_roles=_texts(v["decided_by_roles_json"]),
        policy_reasons=_texts(v["policy_reasons_json"]),
        tool_fingerprint=v["tool_fingerprint"] or "",
    )


def chained(
    events: Sequence[AuditEvent], prev_hash: str, key: AuditKey | None
) -> tuple[list[tuple[Any, ...]], str]:
    """The events' audit rows chained one after the other from prev_hash, and the last hash."""
    values = []
    for event in events:
        row, prev_hash = audit_row(event, prev_hash, key)
        values.append(row)
    return values, prev_hash


def audit_row(
    e: AuditEvent, prev_hash: str, key: AuditKey | None = None
) -> tuple[tuple[Any, ...], str]:
    """The audit row for e chained after prev_hash, and its hash (sha256(prev_hash + body));
    sealed with key (HMAC of the hash) when there is one."""
    verdict = e.decision.verdict.value if e.decision else None
    values: list[Any] = [
        audit_time(e.time or now_utc()),
        e.kind,
        e.subject,
        e.tenant,
        e.run_id,
        e.turn_id,
        e.call_id,
        e.provider,
        e.tool,
        e.tool_version,
        e.arguments_summary_json,
        e.arguments_sha256,
        decision_to_json(e.decision),
        e.status.value if e.status else None,
        e.error_code,
        e.execution_count,
        e.policy_revision,
        prev_hash,
        "",
        verdict,
        e.actor,
        e.actor_tenant,
        e.approval_id,
        e.message,
        e.detail_json,
        AUDIT_LAYOUT,
        key.key_id if key else "",
        "",
    ]
    values = list(storable(tuple(values)))
    digest = chain_hash(prev_hash, hashed_body(values, AUDIT_LAYOUT))
    values[HASH_COLUMN] = digest
    values[-1] = key.seal(digest) if key else ""
    return tuple(values), digest


def audit_from_row(seq: int, values: Sequence[Any]) -> AuditRecord:
    return AuditRecord(seq, *values)
