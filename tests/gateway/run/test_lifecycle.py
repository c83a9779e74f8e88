"""The call and run lifecycle rules, driven in-process through the Runner.

Each test asserts the statuses and codes the runner answers, what the store holds afterwards,
and which tools were actually executed (tools.SENT), with a clock the test controls.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from gateway.errors import PermissionDenied, RequestCode, RequestError
from gateway.model import (
    ApprovalStatus,
    Budget,
    CallStatus,
    EventKind,
    Identity,
    NextAction,
    RunState,
    ToolCall,
    TurnEvent,
    TurnInput,
    Usage,
    Verdict,
)
from gateway.run.runner import StartRunParams
from tests.gateway.run import tools
from tests.support.harness import ALICE, START, Harness
from tests.support.runs import TRAIN, by_id, call, calls_turn, start


def event_turn(run_id: str, turn_id: str, kind: EventKind, **detail: object) -> TurnInput:
    return TurnInput(run_id, turn_id, TurnEvent(kind, **detail))  # type: ignore[arg-type]


async def test_two_reads_run_and_the_loop_continues(harness: Harness) -> None:
    h = harness
    await start(h)
    out = await h.runner.submit_turn(
        ALICE,
        calls_turn(
            "r1",
            "t1",
            call("a", "lookup_train", TRAIN),
            call("b", "lookup_train", {"train": "X"}),
            usage=Usage(10, 3),
        ),
    )
    assert by_id(out) == {"a": (CallStatus.SUCCEEDED, "", 1), "b": (CallStatus.SUCCEEDED, "", 1)}
    assert out.next == NextAction.CONTINUE and out.run_state == RunState.ACTIVE
    assert [r.call_id for r in out.results] == ["a", "b"]
    view = await h.store.get_view("r1")
    assert view is not None
    assert view.run.tool_calls_used == 2 and view.run.usage_total == Usage(10, 3)
    assert all(c.started_at == START and c.finished_at == START for c in view.calls)
    assert sorted(tools.SENT) == [("lookup_train", "r1:a"), ("lookup_train", "r1:b")]


async def test_the_policy_sees_the_run_and_the_batch(harness: Harness) -> None:
    h = harness
    await start(h)
    await h.runner.submit_turn(ALICE, calls_turn("r1", "t1", call("a", "lookup_train", TRAIN)))
    h.clock.advance(60)
    await h.runner.submit_turn(
        ALICE,
        calls_turn(
            "r1", "t2", call("b", "lookup_train", TRAIN), call("c", "book", {"seat": "12A"})
        ),
    )
    first, second = h.policy.inputs[-2:]
    assert first["call"]["id"] == "b" and first["now"] == "2026-12-01T09:01:00Z"
    assert first["run"]["turn"] == 2 and first["run"]["tool_calls_used"] == 1
    assert [c["id"] for c in first["run"]["calls"]] == ["a"]  # earlier turns only
    assert first["batch"]["size"] == 2 and second["call"]["effect"] == "write"
    assert first["identity"] == ALICE.as_input()


async def test_a_denied_or_failing_decision_never_runs(harness: Harness) -> None:
    h = harness
    h.policy.verdicts["lookup_train"] = Verdict.DENY
    h.policy.errors.add("book")
    await start(h)
    out = await h.runner.submit_turn(
        ALICE,
        calls_turn("r1", "t1", call("a", "lookup_train", TRAIN), call("b", "book", {"seat": "1"})),
    )
    assert by_id(out) == {
        "a": (CallStatus.REJECTED, "policy_denied", 0),
        "b": (CallStatus.REJECTED, "policy_error", 0),
    }
    assert out.next == NextAction.CONTINUE and tools.SENT == []


async def test_unknown_tool_incomplete_and_uncanonical_arguments_are_rejected(
    harness: Harness,
) -> None:
    h = harness
    await start(h)
    out = await h.runner.submit_turn(
        ALICE,
        calls_turn(
            "r1",
            "t1",
            call("a", "launch", {}),
            call("b", "lookup_train", '{"train": "IC'),
            call("c", "lookup_train", TRAIN, complete=False),
            call("d", "lookup_train", '{"train": "x", "n": 18014398509481984}'),
        ),
    )
    assert by_id(out) == {
        "a": (CallStatus.REJECTED, "unknown_tool", 0),
        "b": (CallStatus.REJECTED, "incomplete_arguments", 0),
        "c": (CallStatus.REJECTED, "incomplete_arguments", 0),
        "d": (CallStatus.REJECTED, "invalid_arguments", 0),
    }
    assert tools.SENT == [] and h.policy.inputs == []


async def test_a_rejected_write_holds_back_the_other_writes(harness: Harness) -> None:
    h = harness
    h.policy.verdicts["book_unreconciled"] = Verdict.DENY
    await start(h)
    out = await h.runner.submit_turn(
        ALICE,
        calls_turn(
            "r1",
            "t1",
            call("w1", "book", {"seat": "1"}),
            call("w2", "book_unreconciled", {"seat": "2"}),
            call("r", "lookup_train", TRAIN),
        ),
    )
    assert by_id(out) == {
        "w1": (CallStatus.NOT_RUN, "held_by_batch", 0),
        "w2": (CallStatus.REJECTED, "policy_denied", 0),
        "r": (CallStatus.SUCCEEDED, "", 1),
    }
    assert tools.APPLIED == {}


async def test_a_batch_policy_may_permit_partial_writes(harness: Harness) -> None:
    h = harness
    h.policy.verdicts["book_unreconciled"] = Verdict.DENY
    h.policy.partial = True
    await start(h)
    out = await h.runner.submit_turn(
        ALICE,
        calls_turn(
            "r1",
            "t1",
            call("w1", "book", {"seat": "1"}),
            call("w2", "book_unreconciled", {"seat": "2"}),
        ),
    )
    assert by_id(out)["w1"] == (CallStatus.SUCCEEDED, "", 1)
    assert h.policy.inputs[-1]["action"] == "batch"
    assert [c["verdict"] for c in h.policy.inputs[-1]["calls"]] == ["ALLOW", "DENY"]


async def test_a_failed_write_stops_the_writes_after_it(harness: Harness) -> None:
    h = harness
    await start(h)
    out = await h.runner.submit_turn(
        ALICE,
        calls_turn(
            "r1",
            "t1",
            call("w1", "book", {"seat": "1"}),
            call("w2", "book", {"seat": "broken"}),
            call("w3", "book", {"seat": "3"}),
        ),
    )
    assert by_id(out) == {
        "w1": (CallStatus.SUCCEEDED, "", 1),
        "w2": (CallStatus.FAILED, "tool_error", 1),
        "w3": (CallStatus.NOT_RUN, "held_by_batch", 0),
    }
    assert list(tools.APPLIED) == ["r1:w1"]
    assert [k for _, k in tools.SENT] == ["r1:w1", "r1:w2"]  # in the model's order


async def test_approval_pauses_the_write_and_holds_its_sibling(harness: Harness) -> None:
    h = harness
    h.policy.verdicts["book_unreconciled"] = Verdict.APPROVAL_REQUIRED
    await start(h)
    out = await h.runner.submit_turn(
        ALICE,
        calls_turn(
            "r1",
            "t1",
            call("w1", "book_unreconciled", {"seat": "1"}),
            call("w2", "book", {"seat": "2"}),
            call("r", "lookup_train", TRAIN),
        ),
    )
    assert by_id(out) == {
        "w1": (CallStatus.PENDING_APPROVAL, "approval_required", 0),
        "w2": (CallStatus.HELD, "held_by_batch", 0),
        "r": (CallStatus.SUCCEEDED, "", 1),
    }
    assert out.next == NextAction.PAUSED_FOR_APPROVAL
    assert out.run_state == RunState.PAUSED_FOR_APPROVAL and "w1" in out.reason
    (approval,) = await h.store.approvals_for_run("r1")
    w1 = next(c for c in (await h.store.turn_calls("r1", "t1")) if c.call_id == "w1")
    assert approval.status == ApprovalStatus.PENDING and approval.call_id == "w1"
    assert approval.arguments_sha256 == w1.arguments_sha256 != ""
    assert approval.tool_version == "1" and approval.requested_by == "alice"
    assert approval.expires_at == START + timedelta(seconds=600)  # the decision's TTL
    with pytest.raises(RequestError) as err:
        await h.runner.submit_turn(ALICE, calls_turn("r1", "t2", call("x", "lookup_train", TRAIN)))
    assert err.value.code == RequestCode.RUN_PAUSED and "waiting for approval" in err.value.message
    assert tools.APPLIED == {}


async def test_cancel_settles_pending_approvals_and_held_writes(harness: Harness) -> None:
    h = harness
    h.policy.verdicts["book_unreconciled"] = Verdict.APPROVAL_REQUIRED
    await start(h)
    await h.runner.submit_turn(
        ALICE,
        calls_turn(
            "r1",
            "t1",
            call("w1", "book_unreconciled", {"seat": "1"}),
            call("w2", "book", {"seat": "2"}),
        ),
    )
    h.clock.advance(5)
    run = await h.runner.cancel_run(ALICE, "r1")
    assert run.state == RunState.CANCELLED
    calls = {c.call_id: (c.status, c.error_code) for c in await h.store.turn_calls("r1", "t1")}
    assert calls == {
        "w1": (CallStatus.REJECTED, "approval_cancelled"),
        "w2": (CallStatus.NOT_RUN, "held_by_batch"),
    }
    (approval,) = await h.store.approvals_for_run("r1")
    assert approval.status == ApprovalStatus.CANCELLED
    assert approval.decided_at == START + timedelta(seconds=5)
    out = await h.runner.resume_run(ALICE, "r1")
    assert out.next == NextAction.HANDOFF and out.run_state == RunState.CANCELLED
    assert tools.SENT == []


async def test_the_same_turn_again_answers_the_stored_outcome(harness: Harness) -> None:
    h = harness
    await start(h)
    turn = calls_turn("r1", "t1", call("w1", "book", {"seat": "1"}))
    first = await h.runner.submit_turn(ALICE, turn)
    again = await h.runner.submit_turn(ALICE, turn)
    assert again == first and len(tools.SENT) == 1
    other = calls_turn("r1", "t1", call("w1", "book", {"seat": "2"}))
    with pytest.raises(RequestError) as err:
        await h.runner.submit_turn(ALICE, other)
    assert err.value.code == RequestCode.TURN_CONFLICT and len(tools.SENT) == 1


async def test_a_call_id_is_used_once_per_run(harness: Harness) -> None:
    h = harness
    await start(h)
    await h.runner.submit_turn(ALICE, calls_turn("r1", "t1", call("a", "lookup_train", TRAIN)))
    out = await h.runner.submit_turn(
        ALICE, calls_turn("r1", "t2", call("a", "lookup_train", TRAIN))
    )
    assert by_id(out) == {"a": (CallStatus.REJECTED, "duplicate_call_id", 0)}
    with pytest.raises(RequestError) as err:
        await h.runner.submit_turn(
            ALICE,
            calls_turn(
                "r1", "t3", call("z", "lookup_train", TRAIN), call("z", "lookup_train", TRAIN)
            ),
        )
    assert err.value.code == RequestCode.DUPLICATE_CALL_ID
    assert len(tools.SENT) == 1


async def test_tool_call_budget_rejects_calls_past_it_in_listed_order(harness: Harness) -> None:
    h = harness
    await start(h, budget=Budget(max_tool_calls=2))
    out = await h.runner.submit_turn(
        ALICE, calls_turn("r1", "t1", *(call(c, "lookup_train", TRAIN) for c in "abc"))
    )
    assert by_id(out)["c"] == (CallStatus.REJECTED, "budget_exhausted", 0)
    assert out.next == NextAction.BUDGET_EXHAUSTED and out.run_state == RunState.BUDGET_EXHAUSTED
    assert len(tools.SENT) == 2


async def test_turn_budget_ends_the_run_after_its_last_turn(harness: Harness) -> None:
    h = harness
    await start(h, budget=Budget(max_turns=1))
    out = await h.runner.submit_turn(
        ALICE, calls_turn("r1", "t1", call("a", "lookup_train", TRAIN))
    )
    assert by_id(out) == {"a": (CallStatus.SUCCEEDED, "", 1)}
    assert out.next == NextAction.BUDGET_EXHAUSTED
    with pytest.raises(RequestError) as err:
        await h.runner.submit_turn(ALICE, event_turn("r1", "t2", EventKind.FINAL, text="hi"))
    assert err.value.code == RequestCode.RUN_FINISHED


async def test_incomplete_turns_retry_until_the_retry_budget_then_hand_off(
    harness: Harness,
) -> None:
    h = harness
    await start(h, budget=Budget(max_retries=2))
    nexts = [
        (
            await h.runner.submit_turn(
                ALICE, event_turn("r1", f"t{i}", EventKind.INCOMPLETE, text="max_tokens")
            )
        ).next
        for i in range(3)
    ]
    assert nexts == [NextAction.RETRY_TURN, NextAction.RETRY_TURN, NextAction.HANDOFF]
    run = await h.store.get_run("r1")
    assert run is not None and run.state == RunState.HANDED_OFF and run.turns_used == 3


async def test_final_refusal_and_paused_turns(harness: Harness) -> None:
    h = harness
    await start(h, "r1")
    out = await h.runner.submit_turn(ALICE, event_turn("r1", "t1", EventKind.PAUSED))
    assert out.next == NextAction.CONTINUE and out.results == ()
    out = await h.runner.submit_turn(ALICE, event_turn("r1", "t2", EventKind.FINAL, text="ok"))
    assert out.next == NextAction.DONE and out.run_state == RunState.COMPLETED
    await start(h, "r2")
    out = await h.runner.submit_turn(ALICE, event_turn("r2", "t1", EventKind.REFUSAL))
    assert out.next == NextAction.HANDOFF and out.run_state == RunState.HANDED_OFF


async def test_runs_belong_to_their_subject(harness: Harness) -> None:
    h = harness
    await start(h)
    mallory = Identity("mallory", "acme")
    with pytest.raises(PermissionDenied):
        await h.runner.submit_turn(
            mallory, calls_turn("r1", "t1", call("a", "lookup_train", TRAIN))
        )
    for other in (mallory, Identity("alice", "globex", ALICE.roles)):  # same name, other tenant
        with pytest.raises(RequestError) as err:
            await h.runner.start_run(other, StartRunParams(run_id="r1"))
        assert err.value.code == RequestCode.RUN_CONFLICT
    with pytest.raises(PermissionDenied):
        await h.runner.get_run(Identity("alice", "globex", ALICE.roles), "r1")
    assert tools.SENT == []


async def _leave_in_flight(h: Harness, *calls: ToolCall) -> None:
    """A turn whose calls were committed EXECUTING when the gateway stopped: accept the turn
    with a policy that pauses it, then rewrite the records as a crash would have left them."""
    h.policy.verdicts.update({c.name: Verdict.APPROVAL_REQUIRED for c in calls})
    await h.runner.submit_turn(ALICE, calls_turn("r1", "t1", *calls))
    h.policy.verdicts.clear()
    stored = await h.store.turn_calls("r1", "t1")
    executing = [
        c.moved(CallStatus.EXECUTING, idempotency_key=f"r1:{c.call_id}", started_at=h.clock.now)
        for c in stored
    ]
    turn = await h.store.last_turn("r1")
    run = await h.store.get_run("r1")
    assert turn is not None and run is not None
    await h.store.save(
        run=replace(run, state=RunState.ACTIVE, pause_reason=""),
        turn=replace(turn, next=None, reason=""),
        calls=executing,
    )


async def test_a_write_found_in_flight_is_looked_up_never_resent(harness: Harness) -> None:
    h = harness
    await start(h)
    await _leave_in_flight(h, call("w1", "book", {"seat": "1"}))
    tools.APPLIED["r1:w1"] = {"booked": "1"}  # the target did apply it before the crash
    out = await h.runner.resume_run(ALICE, "r1")
    assert by_id(out) == {"w1": (CallStatus.SUCCEEDED, "", 1)}  # the lost attempt counts
    assert out.next == NextAction.CONTINUE and tools.SENT == []


async def test_a_write_without_a_look_up_stays_unknown_and_pauses(harness: Harness) -> None:
    h = harness
    await start(h)
    await _leave_in_flight(h, call("w1", "book_unreconciled", {"seat": "1"}))
    out = await h.runner.resume_run(ALICE, "r1")
    assert by_id(out) == {"w1": (CallStatus.UNKNOWN, "outcome_unknown", 1)}
    assert out.next == NextAction.PAUSED_UNKNOWN_OUTCOME
    assert out.run_state == RunState.PAUSED_UNKNOWN_OUTCOME and tools.SENT == []
    again = await h.runner.resume_run(ALICE, "r1")
    assert by_id(again) == by_id(out) and tools.SENT == []


async def test_a_read_found_in_flight_is_repeated(harness: Harness) -> None:
    h = harness
    await start(h)
    await _leave_in_flight(h, call("r", "lookup_train", TRAIN))
    out = await h.runner.resume_run(ALICE, "r1")
    assert by_id(out) == {"r": (CallStatus.SUCCEEDED, "", 2)}
    assert tools.SENT == [("lookup_train", "r1:r")]
