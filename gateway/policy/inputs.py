"""Every policy input, built from domain records (no engine, no I/O).

call_input    `decision` for one proposed call (docs/policies.md, "The call input")
batch_input   `batch_policy` for a turn with two or more writes
offer_input   `offer`, the tools ListTools lists for a caller
resolve_input `may_resolve`: may this operator resolve this call?
approve_input `may_approve`: may this person decide this approval?
approval_input `input.approval` of the re-check before an approved call runs
audit_input   `may_read_audit`: may this identity read these audit records?
list_runs_input `may_list_runs`: may this identity list these runs?
quotas_input    `may_read_quotas` / `may_reset_quotas`: may it see these keys, reset this one?
pins_input      `may_pin_tools`: may it see tools' pins, pin a tool to another definition?
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property, lru_cache
from typing import Any, Protocol

from gateway.arguments import parse_arguments
from gateway.limits import Limits, utf8_len
from gateway.model import ApprovalRecord, CallRecord, CallStatus, Identity, RunRecord, rfc3339
from gateway.tools import Tool

log = logging.getLogger("callgate.policy_input")

RECENT_CALLS = 50


class HistoryEntry(Protocol):
    """An earlier call as the run input shows it (a `PastCall`, or a whole `CallRecord`)."""

    @property
    def call_id(self) -> str: ...
    @property
    def tool(self) -> str: ...
    @property
    def effect(self) -> str: ...
    @property
    def status(self) -> CallStatus: ...
    @property
    def arguments_json(self) -> str: ...


_CACHED_ARGS_CHARS = 4096


@lru_cache(maxsize=2048)
def _parsed_once(text: str) -> Any:
    return parse_arguments(text)


def _history_args(text: str) -> Any:
    """An earlier call's arguments; small ones parsed once, since consecutive turns show
    mostly the same calls. (Shared, so never changed: inputs are only serialized.)"""
    if len(text) > _CACHED_ARGS_CHARS:
        return parse_arguments(text)
    return _parsed_once(text)


@dataclass(frozen=True)
class RunContext:
    """What a decision may know of the run: the run, the turn and its recent calls.

    The earlier calls' arguments are read with the one strict reader, most recent first, up to
    `history_bytes` of arguments text in all; older ones beyond that carry `args: null` and
    `args_omitted: true`. A stored record whose arguments cannot be read (written by an older
    version, say) gets `args: null` and the input `policy_input_degraded: true`; a call that
    was rejected for its arguments simply has `args: null`."""

    run: RunRecord
    turn_seq: int
    turn_id: str
    recent: Sequence[HistoryEntry]
    history_bytes: int = Limits.max_policy_history_bytes

    @cached_property
    def _input(self) -> dict[str, Any]:
        calls, degraded = self._calls()
        out = {
            "id": self.run.run_id,
            "turn": self.turn_seq,
            "turn_id": self.turn_id,
            "tool_calls_used": self.run.tool_calls_used,
            "labels": dict(self.run.labels),
            "calls": calls,
        }
        if degraded:
            log.warning(
                "run %s: %d stored call(s) could not be read into the policy input",
                self.run.run_id,
                degraded,
            )
            out["policy_input_degraded"] = True
        return out

    def _calls(self) -> tuple[list[dict[str, Any]], int]:
        budget = self.history_bytes
        degraded = 0
        calls: list[dict[str, Any]] = []
        for c in reversed(list(self.recent)[-RECENT_CALLS:]):
            entry: dict[str, Any] = {
                "id": c.call_id,
                "tool": c.tool,
                "effect": c.effect,
                "args": None,
                "status": c.status.value,
            }
            size = utf8_len(c.arguments_json)
            if size > budget:
                entry["args_omitted"] = True
            else:
                budget -= size
                entry["args"] = _history_args(c.arguments_json)
                if entry["args"] is None and c.status != CallStatus.REJECTED:
                    degraded += 1
            calls.append(entry)
        calls.reverse()
        return calls, degraded

    def as_input(self) -> dict[str, Any]:
        """The `run` input (built once per turn, shared by the turn's decisions)."""
        return self._input


def tool_input(tool: Tool) -> dict[str, Any]:
    return {
        "name": tool.name,
        "version": tool.version,
        "effect": tool.effect.value,
        "labels": dict(tool.labels),
    }


def call_input(
    *,
    rec: CallRecord,
    tool: Tool,
    args: dict[str, Any],
    identity: Identity,
    run: RunContext | None,
    batch: Sequence[tuple[CallRecord, str]],
    now: datetime,
    approval: dict[str, Any] | None = None,
    pin: tuple[str, bool] = ("", False),
) -> dict[str, Any]:
    """The `decision` input for one call; batch lists (record, effect) of the whole turn;
    `pin`: the tool's fingerprint and whether it is the pinned one."""
    fingerprint, pinned = pin
    return {
        "action": "call",
        "call": {
            "id": rec.call_id,
            "tool": tool.name,
            "tool_version": tool.version,
            "effect": tool.effect.value,
            "args": args,
            "args_sha256": rec.arguments_sha256,
        },
        "tool": {**tool_input(tool), "fingerprint": fingerprint, "pinned": pinned},
        "identity": identity.as_input(),
        "run": run.as_input() if run is not None else None,
        "batch": {
            "size": len(batch),
            "calls": [{"id": c.call_id, "tool": c.tool, "effect": effect} for c, effect in batch],
        },
        "approval": approval,
        "now": rfc3339(now),
    }


def batch_input(identity: Identity, calls: Sequence[CallRecord]) -> dict[str, Any]:
    """The `batch_policy` input: the turn's judged calls with their verdicts."""
    return {
        "action": "batch",
        "identity": identity.as_input(),
        "calls": [
            {
                "id": c.call_id,
                "tool": c.tool,
                "effect": c.effect,
                "verdict": c.decision.verdict.value if c.decision else "UNSPECIFIED",
            }
            for c in calls
        ],
    }


def offer_input(identity: Identity) -> dict[str, Any]:
    """The `offer` input: who is asking which tools to list."""
    return {"action": "offer", "identity": identity.as_input()}


def resolve_input(
    operator: Identity, requester: Identity, run_id: str, call_id: str, rec: CallRecord | None
) -> dict[str, Any]:
    """The `may_resolve` input. For a call that does not exist the policy still answers (with
    only its IDs), so a caller it refuses learns nothing about the run's calls."""
    call: dict[str, Any] = {"id": call_id, "run_id": run_id}
    if rec is not None:
        call.update(
            turn_id=rec.turn_id,
            tool=rec.tool,
            tool_version=rec.tool_version,
            effect=rec.effect,
            args=parse_arguments(rec.arguments_json),
            args_sha256=rec.arguments_sha256,
            status=rec.status.value,
        )
    return {
        "action": "resolve",
        "operator": operator.as_input(),
        "requester": requester.as_input(),
        "call": call,
    }


def approve_input(
    approver: Identity, approval: ApprovalRecord, tool: Tool | None
) -> dict[str, Any]:
    """The `may_approve` input: the approver, the requester as recorded (its claims are never
    stored, so `{}`), the call the approval covers and its tool (null when no longer
    registered)."""
    return {
        "action": "approve",
        "approver": approver.as_input(),
        "requester": approval.requester.as_input(),
        "call": {
            "id": approval.call_id,
            "run_id": approval.run_id,
            "turn_id": approval.turn_id,
            "tool": approval.tool,
            "tool_version": approval.tool_version,
            "effect": tool.effect.value if tool is not None else "",
            "args": parse_arguments(approval.arguments_json),
            "args_sha256": approval.arguments_sha256,
            "approval_id": approval.approval_id,
        },
        "tool": tool_input(tool) if tool is not None else None,
    }


def audit_input(reader: Identity, tenant: str, subject: str) -> dict[str, Any]:
    """The `may_read_audit` input: may the reader read the audit records of this tenant
    (`subject` "": all of them; tenant "": callgate's own records, such as policy reloads)?"""
    return {"action": "audit", "identity": reader.as_input(), "tenant": tenant, "subject": subject}


def list_runs_input(reader: Identity, tenant: str, subject: str) -> dict[str, Any]:
    """The `may_list_runs` input: may the reader list the runs of this subject of the tenant
    (`subject` "": every subject's)? A subject's own runs are listed without asking."""
    return {
        "action": "list_runs",
        "identity": reader.as_input(),
        "tenant": tenant,
        "subject": subject,
    }


def quotas_input(who: Identity, *, prefix: str = "", key: str = "") -> dict[str, Any]:
    """The `may_read_quotas` input (`prefix`: the keys listed) or the `may_reset_quotas`
    input (`key`: the key reset)."""
    if key:
        return {"action": "reset_quota", "identity": who.as_input(), "key": key}
    return {"action": "read_quotas", "identity": who.as_input(), "prefix": prefix}


def pins_input(
    who: Identity,
    *,
    names: Sequence[str] = (),
    tool: str = "",
    fingerprint: str = "",
    previous: str = "",
    fields: Sequence[str] = (),
) -> dict[str, Any]:
    """The `may_pin_tools` input: a listing of these tools' pins (`names`; [] for every
    pinned tool), or (`tool` given) pinning the tool to definition `fingerprint` in place of
    `previous`, changing `fields`."""
    if tool:
        return {
            "action": "pin_tool",
            "identity": who.as_input(),
            "tool": tool,
            "fingerprint": fingerprint,
            "previous": previous,
            "fields": list(fields),
        }
    return {"action": "read_pins", "identity": who.as_input(), "tools": list(names)}


def approval_input(approval: ApprovalRecord) -> dict[str, Any]:
    """`input.approval` when an approved call is decided again before it runs."""
    return {
        "id": approval.approval_id,
        "approved_by": approval.approver.as_input(),
        "decided_at": rfc3339(approval.decided_at),
        "expires_at": rfc3339(approval.expires_at),
        "args_sha256": approval.arguments_sha256,
    }


def result_input(
    *,
    rec: CallRecord,
    tool: Tool,
    identity: Identity,
    run: RunRecord,
    status: str,
    output: Any,
    schema_problems: Sequence[str],
    args: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The `result` input: a call's result before it is handed on (docs/policies.md);
    `args`, when given, the call's arguments already read from its record."""
    return {
        "action": "result",
        "call": {
            "id": rec.call_id,
            "tool": tool.name,
            "tool_version": tool.version,
            "effect": tool.effect.value,
            "args": args if args is not None else parse_arguments(rec.arguments_json),
            "args_sha256": rec.arguments_sha256,
        },
        "tool": tool_input(tool),
        "identity": identity.as_input(),
        "run": {
            "id": run.run_id,
            "provider": run.provider,
            "labels": dict(run.labels),
            "tool_calls_used": run.tool_calls_used,
        },
        "result": {"status": status, "output": output, "schema_problems": list(schema_problems)},
    }
