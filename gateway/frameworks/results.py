"""What both integrations share: callgate's result for a call ID as the text a model reads, the
turn ID of a batch of calls, and what a paused turn waits for.

A model never sees a status code: it sees the tool's output, or an error text that says what
happened and whether the call ran. An UNKNOWN outcome says the outcome is being reconciled and
that the call must not be repeated: a framework never retries it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from gateway import pb

_S = pb.CallStatus
WAITING = (_S.CALL_STATUS_PENDING_APPROVAL, _S.CALL_STATUS_HELD)
PAUSED = (pb.NEXT_ACTION_PAUSED_FOR_APPROVAL,)


class ApprovalPending(Exception):
    """A call the framework was told to run still waits for a person's decision in callgate:
    nothing ran. Approve (or deny) it in callgate, then resume the framework's run again."""

    def __init__(self, run_id: str, call_id: str, approval_id: str) -> None:
        super().__init__(
            f"call {call_id} of run {run_id} waits for approval {approval_id} in callgate and "
            f"has not run: decide it (`callgate approvals approve {approval_id} --reason TEXT`, "
            "by someone the policy lets approve), then resume"
        )
        self.run_id = run_id
        self.call_id = call_id
        self.approval_id = approval_id


@dataclass(frozen=True)
class CallText:
    """A call's result as the model reads it: the output, or an error text (`error` True)."""

    text: str
    error: bool


def is_waiting(result: pb.CallResult) -> bool:
    """Whether the call waits for an approval (its own, or a sibling write's)."""
    return result.status in WAITING


def is_paused(outcome: pb.TurnOutcome) -> bool:
    """Whether the turn waits for a person (some call is PENDING_APPROVAL or HELD)."""
    return outcome.next in PAUSED or any(is_waiting(r) for r in outcome.results)


def turn_id_for(call_ids: Iterable[str]) -> str:
    """The turn ID of a batch of calls: the same call IDs always give the same turn, so a batch
    sent again answers its recorded outcome (call IDs are unique within a run)."""
    digest = hashlib.sha256("\n".join(call_ids).encode()).hexdigest()[:32]
    return f"calls-{digest}"


def approvals_of(outcome: pb.TurnOutcome) -> list[dict[str, Any]]:
    """What a paused turn waits for, as plain JSON data: one entry per waiting call."""
    return [
        {
            "call_id": r.call_id,
            "tool": r.tool,
            "approval_id": r.approval_id,
            "status": pb.CallStatus.Name(r.status),
            "reasons": list(r.decision.reasons),
        }
        for r in outcome.results
        if is_waiting(r)
    ]


def result_from_record(record: pb.CallRecord) -> pb.CallResult:
    """A recorded call (GetRun) as the result a turn answers for it."""
    return pb.CallResult(
        call_id=record.call_id,
        tool=record.tool,
        status=record.status,
        output_json=record.output_json,
        error=record.error,
        decision=record.decision,
        execution_count=record.execution_count,
        approval_id=record.approval_id,
    )


def call_text(result: pb.CallResult) -> CallText:
    """The text the model reads for one call's result."""
    status, tool, code = result.status, result.tool or "the tool", result.error.code
    why = "; ".join([*result.decision.reasons, *filter(None, [result.error.message])])
    why = f": {why}" if why else ""
    if status == _S.CALL_STATUS_SUCCEEDED and code == "result_withheld":
        return CallText(
            f"error: {tool} ran, but callgate's result policy withheld its result{why}. Do not "
            "repeat this call",
            True,
        )
    if status == _S.CALL_STATUS_SUCCEEDED:
        return CallText(result.output_json or "null", False)
    if status == _S.CALL_STATUS_UNKNOWN:
        return CallText(
            f"error: the outcome of {tool} (call {result.call_id}) is unknown: callgate is "
            "reconciling it with the target system and will not send it again. Do not repeat "
            f"this call; its result will be known once reconciled{why}",
            True,
        )
    if status == _S.CALL_STATUS_REJECTED:
        return CallText(
            f"error: callgate refused {tool} ({code or 'rejected'}); it did not run{why}", True
        )
    if status == _S.CALL_STATUS_FAILED:
        return CallText(
            f"error: {tool} failed ({code or 'failed'}); the effect did not happen{why}", True
        )
    if status == _S.CALL_STATUS_NOT_RUN:
        return CallText(
            f"error: {tool} was not run ({code or 'held_by_batch'}): another "
            f"write of the same batch did not run{why}",
            True,
        )
    if status in WAITING:
        return CallText(
            f"error: {tool} waits for approval {result.approval_id} in callgate "
            f"and has not run{why}",
            True,
        )
    return CallText(
        f"error: {tool} has no result yet ({pb.CallStatus.Name(status)}); it may "
        "be running: do not repeat it",
        True,
    )


def refused_texts(call_ids: Iterable[str], reason: str) -> dict[str, CallText]:
    """Each call of a turn callgate refused as a whole (the run paused or finished): none ran."""
    return {
        call_id: CallText(f"error: callgate did not take this call: {reason}; it did not run", True)
        for call_id in call_ids
    }
