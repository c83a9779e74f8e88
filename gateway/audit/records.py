"""The audit trail's records: what an entry tells, the entry appended, the record stored with its
place in the hash chain, the filters that read them back, and where a pruned chain continues."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from gateway.model import CallStatus, Decision, Verdict


class AuditKind(StrEnum):
    """What an audit record tells (docs/operations.md, "The audit trail")."""

    DECISION = "decision"  # a call judged: allowlist, arguments, schema, policy, budget, plan
    AUTHORIZE = "authorize"  # a call judged by Authorize (nothing runs)
    APPROVAL = "approval"  # an approval requested, decided, expired or cancelled
    EXECUTION = "execution"  # a call's result (or NOT_RUN) once it ran or was stopped
    RECONCILE = "reconcile"  # an unknown write looked up
    RESOLVE = "resolve"  # an operator resolved an unknown call
    CANCEL = "cancel"  # a run cancelled, and each call it stopped
    POLICY = "policy"  # a policy revision rejected on reload (or served after one)
    TOOLS = "tools"  # a --tools set rejected on reload, or a new set serving
    PRUNE = "prune"  # records removed by `callgate audit prune`; where the chain continues
    QUOTA = "quota"  # an operator reset a quota key (its reservations given back)
    PIN = "pin"  # a tool's definition pinned (first seen, or approved) or seen changed


@dataclass(frozen=True)
class AuditEvent:
    """One record to append to the audit trail (stored with its place in the hash chain).

    `subject`/`tenant` are whose record it is: the run's owner, or for Authorize the caller
    (the set QueryAudit authorizes by). `actor` is who acted: submitted the turn, approved,
    resolved, cancelled; "" when callgate acted on its own (execution, expiry)."""

    kind: str  # an AuditKind value
    subject: str
    tenant: str = ""
    run_id: str = ""
    turn_id: str = ""
    call_id: str = ""
    provider: str = ""
    tool: str = ""
    tool_version: str = ""
    arguments_summary_json: str = ""  # masked (docs/tools.md, "Redaction")
    arguments_sha256: str = ""  # keyed (hmac-sha256:...) when a value was masked
    decision: Decision | None = None
    status: CallStatus | None = None
    error_code: str = ""
    execution_count: int = 0
    policy_revision: str = ""
    time: datetime | None = None
    actor: str = ""
    actor_tenant: str = ""
    approval_id: str = ""
    message: str = ""  # the error or the reason, secrets masked
    detail_json: str = ""  # what one kind adds (attempts, a checkpoint, a file and line)


@dataclass(frozen=True)
class AuditRecord:
    """An audit record as stored: every column as written (what its hash covers), in order.

    `layout` says which columns the hash covers: None for records written before schema 4
    (the first 17 columns), 4 since then (every column but the chain's own)."""

    seq: int
    time: str
    kind: str
    subject: str
    tenant: str
    run_id: str
    turn_id: str
    call_id: str
    provider: str
    tool: str
    tool_version: str
    arguments_summary_json: str
    arguments_sha256: str
    decision_json: str | None
    status: str | None
    error_code: str
    execution_count: int
    policy_revision: str
    prev_hash: str
    hash: str
    verdict: str | None = None
    actor: str | None = None
    actor_tenant: str | None = None
    approval_id: str | None = None
    message: str | None = None
    detail_json: str | None = None
    layout: int | None = None
    key_id: str | None = None
    seal: str | None = None

    def decision(self) -> Decision | None:
        """The stored decision (None when there is none, or it cannot be read)."""
        if not self.decision_json:
            return None
        try:
            d = json.loads(self.decision_json)
            return Decision(
                verdict=Verdict(d["verdict"]),
                reasons=tuple(d.get("reasons", ())),
                policy_revision=d.get("policy_revision", ""),
                approval_ttl_s=d.get("approval_ttl_s"),
                error=d.get("error", ""),
                input_sha256=d.get("input_sha256", ""),
                tools_revision=d.get("tools_revision", ""),
            )
        except (ValueError, KeyError, TypeError):
            return None

    def detail(self) -> dict[str, Any]:
        try:
            value = json.loads(self.detail_json or "{}")
        except ValueError:
            return {}
        return value if isinstance(value, dict) else {}


@dataclass(frozen=True)
class AuditFilter:
    """Which audit records a query asks for (empty fields match everything); the scope
    (`tenant`, `subject`) is what the reader was authorized for."""

    run_id: str = ""
    call_id: str = ""
    tool: str = ""
    subject: str = ""
    tenant: str | None = None  # None: any tenant
    verdicts: tuple[Verdict, ...] = ()
    statuses: tuple[CallStatus, ...] = ()
    since: str = ""  # audit time (`audit_time`), inclusive
    until: str = ""  # exclusive


@dataclass(frozen=True)
class AuditCheckpoint:
    """Where the chain continues after a prune: the last removed record's seq and hash."""

    seq: int
    hash: str
    time: str
    removed: int  # how many records that prune removed
    before: str  # the prune's cut-off time


def audit_time(t: datetime) -> str:
    """An audit record's time: UTC, always six fraction digits, so text order is time order."""
    utc = t.astimezone(UTC)
    if utc.year < 1000:  # (strftime writes such a year without its leading zeros)
        return utc.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return f"{utc.isoformat(timespec='microseconds')[:-6]}Z"  # (strftime: twice the time)
