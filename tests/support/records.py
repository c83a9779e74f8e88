"""Domain records for store tests: a run, a turn, a call."""

from __future__ import annotations

from datetime import UTC, datetime

from gateway.model import (
    CallRecord,
    CallStatus,
    EventKind,
    RunRecord,
    RunState,
    TurnRecord,
)

NOW = datetime(2026, 11, 29, 21, 0, tzinfo=UTC)


def a_run(run_id: str = "r1") -> RunRecord:
    return RunRecord(
        run_id=run_id,
        state=RunState.ACTIVE,
        subject="alice",
        tenant="acme",
        params_hash="p",
        created_at=NOW,
        updated_at=NOW,
    )


def a_turn(turn_id: str, seq: int, run_id: str = "r1") -> TurnRecord:
    return TurnRecord(
        run_id=run_id,
        turn_id=turn_id,
        seq=seq,
        event=EventKind.TOOL_REQUEST,
        content_hash="h",
        created_at=NOW,
    )


def a_call(
    turn_id: str, call_id: str, error_code: str = "", run_id: str = "r1", index: int = 0
) -> CallRecord:
    return CallRecord(
        run_id=run_id,
        turn_id=turn_id,
        call_id=call_id,
        index=index,
        tool="t",
        status=CallStatus.PROPOSED,
        arguments_json="{}",
        error_code=error_code,
        created_at=NOW,
    )
