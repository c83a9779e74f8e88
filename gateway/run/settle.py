"""Settling a turn: its NextAction and the run state after it (pure; no I/O).

Which NextAction a turn ends with (`settle_next`), the run state each NextAction leaves the run
in, and the TurnOutcome of a settled turn (`outcome_of`, `settled_outcome`).
"""

from __future__ import annotations

from collections.abc import Sequence

from gateway.errors import CallCode
from gateway.model import (
    CallRecord,
    CallResult,
    CallStatus,
    EventKind,
    NextAction,
    RunRecord,
    RunSnapshot,
    RunState,
    TurnOutcome,
    TurnRecord,
)
from gateway.run import plan


def outcome_of(run: RunRecord, turn: TurnRecord, calls: Sequence[CallRecord]) -> TurnOutcome:
    """The outcome of a settled turn: one result per call, in the model's order."""
    assert turn.next is not None
    return TurnOutcome(
        run_id=run.run_id,
        turn_id=turn.turn_id,
        next=turn.next,
        run_state=run.state,
        reason=turn.reason,
        results=tuple(CallResult.of(c) for c in calls),
    )


def without_turn(run: RunRecord) -> TurnOutcome:
    """What a run that has no turn yet answers: its state is the whole outcome."""
    return TurnOutcome(
        run_id=run.run_id,
        turn_id="",
        next=NEXT_WITHOUT_TURN[run.state],
        run_state=run.state,
        reason="no turn has been submitted",
    )


def settled_outcome(snap: RunSnapshot) -> TurnOutcome | None:
    """The run's settled outcome; None while its last turn is being driven."""
    if snap.turn is None:
        return without_turn(snap.run)
    if snap.turn.next is None:
        return None
    return outcome_of(snap.run, snap.turn, snap.calls)


# ---------------------------------------------------------------------- settle rules

STATE_AFTER: dict[NextAction, RunState] = {
    NextAction.CONTINUE: RunState.ACTIVE,
    NextAction.RETRY_TURN: RunState.ACTIVE,
    NextAction.DONE: RunState.COMPLETED,
    NextAction.PAUSED_FOR_APPROVAL: RunState.PAUSED_FOR_APPROVAL,
    NextAction.PAUSED_UNKNOWN_OUTCOME: RunState.PAUSED_UNKNOWN_OUTCOME,
    NextAction.HANDOFF: RunState.HANDED_OFF,
    NextAction.BUDGET_EXHAUSTED: RunState.BUDGET_EXHAUSTED,
}


NEXT_WITHOUT_TURN: dict[RunState, NextAction] = {
    RunState.ACTIVE: NextAction.CONTINUE,
    RunState.COMPLETED: NextAction.DONE,
    RunState.HANDED_OFF: NextAction.HANDOFF,
    RunState.BUDGET_EXHAUSTED: NextAction.BUDGET_EXHAUSTED,
    RunState.CANCELLED: NextAction.HANDOFF,
    RunState.PAUSED_FOR_APPROVAL: NextAction.PAUSED_FOR_APPROVAL,
    RunState.PAUSED_UNKNOWN_OUTCOME: NextAction.PAUSED_UNKNOWN_OUTCOME,
}


def settle_next(
    run: RunRecord, turn: TurnRecord, calls: Sequence[CallRecord]
) -> tuple[NextAction, str]:
    """The NextAction a turn ends with, for its event and its calls as given."""
    if plan.exceeded(run) and turn.event != EventKind.FINAL:
        return NextAction.BUDGET_EXHAUSTED, plan.exceeded(run)
    kind = turn.event
    if kind == EventKind.FINAL:
        return NextAction.DONE, "final answer"
    if kind == EventKind.REFUSAL:
        return NextAction.HANDOFF, "the model refused"
    if kind == EventKind.PAUSED:
        return NextAction.CONTINUE, "the provider paused the turn; continue it"
    detail = turn.detail
    if kind == EventKind.INCOMPLETE:
        return _retry_or_handoff(run, f"the response was incomplete ({detail.text or 'no reason'})")
    if kind == EventKind.PROVIDER_ERROR:
        what = f"provider error ({detail.error_kind or 'other'}): {detail.text}"
        if not detail.retryable:
            return NextAction.HANDOFF, f"{what}; not retryable"
        return _retry_or_handoff(run, what)
    return _after_calls(run, calls)


def _retry_or_handoff(run: RunRecord, what: str) -> tuple[NextAction, str]:
    if run.retries_in_row >= run.budget.retries_allowed:
        return NextAction.HANDOFF, (
            f"{what}; the retry budget ({run.budget.retries_allowed}) is spent"
        )
    return NextAction.RETRY_TURN, f"{what}; nothing ran, ask the model again"


def _after_calls(run: RunRecord, calls: Sequence[CallRecord]) -> tuple[NextAction, str]:
    unknown = [c.call_id for c in calls if c.status == CallStatus.UNKNOWN]
    if unknown:
        return NextAction.PAUSED_UNKNOWN_OUTCOME, (
            f"outcome unknown for {', '.join(unknown)}; callgate will look it up on ResumeRun, "
            "or an operator may ResolveCall"
        )
    waiting = [
        c.call_id for c in calls if c.status in (CallStatus.PENDING_APPROVAL, CallStatus.HELD)
    ]
    if waiting:
        return NextAction.PAUSED_FOR_APPROVAL, f"waiting for approval: {', '.join(waiting)}"
    if any(c.error_code == CallCode.BUDGET_EXHAUSTED.value for c in calls):
        return NextAction.BUDGET_EXHAUSTED, "the tool-call budget is spent"
    spent = plan.no_turn_left(run)
    if spent:
        return NextAction.BUDGET_EXHAUSTED, spent
    return NextAction.CONTINUE, "every call is settled"
