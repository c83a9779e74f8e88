"""The pure rules: call transitions, the batch plan and NextAction."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from gateway.model import (
    Budget,
    CallRecord,
    CallStatus,
    Decision,
    EventDetail,
    EventKind,
    IllegalTransition,
    NextAction,
    RunRecord,
    RunState,
    TurnRecord,
    Usage,
    Verdict,
)
from gateway.run import plan
from gateway.run.runner import settle_next

NOW = datetime(2026, 11, 29, tzinfo=UTC)


def call(
    cid: str,
    effect: str,
    verdict: Verdict | None = Verdict.ALLOW,
    status: CallStatus = CallStatus.PROPOSED,
) -> CallRecord:
    return CallRecord(
        run_id="r",
        turn_id="t",
        call_id=cid,
        index=0,
        tool="x",
        status=status,
        arguments_json="{}",
        effect=effect,
        decision=Decision(verdict) if verdict else None,
    )


def statuses(calls: list[CallRecord]) -> dict[str, CallStatus]:
    return {c.call_id: c.status for c in calls}


def test_terminal_statuses_never_move() -> None:
    done = call("a", "read", status=CallStatus.SUCCEEDED)
    with pytest.raises(IllegalTransition):
        done.moved(CallStatus.EXECUTING)
    with pytest.raises(IllegalTransition):
        call("b", "write", status=CallStatus.HELD).moved(CallStatus.SUCCEEDED)


def test_plan_all_allowed_runs_everything() -> None:
    out = plan.plan_batch(
        [call("r", "read"), call("w1", "write"), call("w2", "write")],
        remaining_tool_calls=None,
        partial_writes=False,
        now=NOW,
    )
    assert set(statuses(out).values()) == {CallStatus.PROPOSED}


def test_plan_rejected_write_makes_other_writes_not_run_but_reads_run() -> None:
    rejected = call("w1", "write", status=CallStatus.REJECTED)
    out = plan.plan_batch(
        [
            call("r", "read"),
            rejected,
            call("w2", "write"),
            call("w3", "write", Verdict.APPROVAL_REQUIRED),
        ],
        remaining_tool_calls=None,
        partial_writes=False,
        now=NOW,
    )
    assert statuses(out) == {
        "r": CallStatus.PROPOSED,
        "w1": CallStatus.REJECTED,
        "w2": CallStatus.NOT_RUN,
        "w3": CallStatus.NOT_RUN,
    }
    assert out[2].error_code == "held_by_batch"


def test_plan_pending_write_holds_allowed_writes() -> None:
    out = plan.plan_batch(
        [call("w1", "write"), call("w2", "write", Verdict.APPROVAL_REQUIRED), call("r", "read")],
        remaining_tool_calls=None,
        partial_writes=False,
        now=NOW,
    )
    assert statuses(out) == {
        "w1": CallStatus.HELD,
        "w2": CallStatus.PENDING_APPROVAL,
        "r": CallStatus.PROPOSED,
    }


def test_plan_partial_writes_lets_allowed_writes_run() -> None:
    out = plan.plan_batch(
        [
            call("w1", "write"),
            call("w2", "write", status=CallStatus.REJECTED),
            call("w3", "write", Verdict.APPROVAL_REQUIRED),
        ],
        remaining_tool_calls=None,
        partial_writes=True,
        now=NOW,
    )
    assert statuses(out) == {
        "w1": CallStatus.PROPOSED,
        "w2": CallStatus.REJECTED,
        "w3": CallStatus.PENDING_APPROVAL,
    }


def test_plan_budget_rejects_calls_beyond_it_in_listed_order() -> None:
    out = plan.plan_batch(
        [
            call("a", "read"),
            call("bad", "read", status=CallStatus.REJECTED),
            call("b", "read"),
            call("c", "read"),
        ],
        remaining_tool_calls=2,
        partial_writes=False,
        now=NOW,
    )
    assert statuses(out) == {
        "a": CallStatus.PROPOSED,
        "bad": CallStatus.REJECTED,
        "b": CallStatus.PROPOSED,
        "c": CallStatus.REJECTED,
    }
    assert out[3].error_code == "budget_exhausted"


def run(**kw: object) -> RunRecord:
    return RunRecord(run_id="r", state=RunState.ACTIVE, subject="s", tenant="t", **kw)  # type: ignore[arg-type]


def turn(kind: EventKind, detail: EventDetail | None = None) -> TurnRecord:
    return TurnRecord(
        run_id="r", turn_id="t", seq=1, event=kind, content_hash="h", detail=detail or EventDetail()
    )


@pytest.mark.parametrize(
    "statuses_in,expected",
    [
        ([CallStatus.SUCCEEDED, CallStatus.REJECTED], NextAction.CONTINUE),
        ([CallStatus.SUCCEEDED, CallStatus.PENDING_APPROVAL], NextAction.PAUSED_FOR_APPROVAL),
        ([CallStatus.UNKNOWN, CallStatus.PENDING_APPROVAL], NextAction.PAUSED_UNKNOWN_OUTCOME),
        ([CallStatus.HELD, CallStatus.PENDING_APPROVAL], NextAction.PAUSED_FOR_APPROVAL),
    ],
)
def test_next_action_after_calls(statuses_in: list[CallStatus], expected: NextAction) -> None:
    calls = [call(str(i), "write", status=s) for i, s in enumerate(statuses_in)]
    assert settle_next(run(), turn(EventKind.TOOL_REQUEST), calls)[0] == expected


def test_next_action_per_event() -> None:
    assert settle_next(run(), turn(EventKind.FINAL), [])[0] == NextAction.DONE
    assert settle_next(run(), turn(EventKind.REFUSAL), [])[0] == NextAction.HANDOFF
    assert settle_next(run(), turn(EventKind.PAUSED), [])[0] == NextAction.CONTINUE
    assert settle_next(run(), turn(EventKind.INCOMPLETE), [])[0] == NextAction.RETRY_TURN
    spent = run(retries_in_row=2)
    assert settle_next(spent, turn(EventKind.INCOMPLETE), [])[0] == NextAction.HANDOFF
    fatal = EventDetail("bad request", "other", retryable=False)
    assert settle_next(run(), turn(EventKind.PROVIDER_ERROR, fatal), [])[0] == NextAction.HANDOFF
    transient = EventDetail("busy", "server", retryable=True)
    assert (
        settle_next(run(), turn(EventKind.PROVIDER_ERROR, transient), [])[0]
        == NextAction.RETRY_TURN
    )


def test_budgets() -> None:
    over = run(budget=Budget(max_turns=2), turns_used=3)
    assert settle_next(over, turn(EventKind.TOOL_REQUEST), [])[0] == NextAction.BUDGET_EXHAUSTED
    last = run(budget=Budget(max_turns=2), turns_used=2)
    assert (
        settle_next(last, turn(EventKind.TOOL_REQUEST), [])[0] == NextAction.BUDGET_EXHAUSTED
    )  # no further turn may be asked
    assert settle_next(last, turn(EventKind.FINAL), [])[0] == NextAction.DONE
    tokens = run(budget=Budget(max_total_tokens=10), usage_total=Usage(8, 3))
    assert settle_next(tokens, turn(EventKind.PAUSED), [])[0] == NextAction.BUDGET_EXHAUSTED
    assert Budget(max_retries=0).retries_allowed == 2
