"""Batch rules over real gRPC: writes run in order, all or nothing by default."""

from __future__ import annotations

from pathlib import Path

from examples.travel.service import TravelService
from gateway import pb
from gateway.client import tool_call
from tests.support.effects import effects
from tests.support.paths import Connect
from tests.support.scenarios import WEATHER, by_id


def test_allowed_writes_run_in_listed_order(
    connect: Connect, run_id: str, effects_db: Path
) -> None:
    c = connect("walt-demo-token")
    c.start_run(run_id=run_id)
    out = c.submit_calls(
        run_id,
        "t1",
        tool_call("w2", "book_ticket", {"train_number": "RE7"}),
        tool_call("w1", "book_ticket", {"train_number": "ICE123"}),
    )
    assert [r.status for r in out.results] == [pb.CALL_STATUS_SUCCEEDED] * 2
    keys = [k for k, _, _ in effects(effects_db) if k.startswith(run_id)]
    assert keys == [f"{run_id}:w2", f"{run_id}:w1"]
    assert out.next == pb.NEXT_ACTION_CONTINUE


def test_rejected_write_makes_other_writes_not_run(
    connect: Connect, run_id: str, effects_db: Path, fresh_travel: TravelService
) -> None:
    c = connect("walt-demo-token")
    c.start_run(run_id=run_id)
    out = c.submit_calls(
        run_id,
        "t1",
        tool_call("w1", "book_ticket", {"train_number": "ICE123"}),
        tool_call("w2", "book_ticket", {"train": "no schema"}),
        tool_call("r1", "get_weather", WEATHER),
    )
    res = by_id(out)
    assert res["w2"].error.code == "invalid_arguments"
    assert res["w1"].status == pb.CALL_STATUS_NOT_RUN and res["w1"].error.code == "held_by_batch"
    assert res["r1"].status == pb.CALL_STATUS_SUCCEEDED
    assert effects(effects_db, f"{run_id}:w1") == []
    assert out.next == pb.NEXT_ACTION_CONTINUE


def test_failed_write_stops_the_writes_after_it(
    connect: Connect, run_id: str, effects_db: Path
) -> None:
    c = connect("walt-demo-token")
    c.start_run(run_id=run_id)
    out = c.submit_calls(
        run_id,
        "t1",
        tool_call("w1", "book_ticket", {"train_number": "ICE123"}),
        tool_call("w2", "cancel_ticket", {"booking_id": "missing"}),
        tool_call("w3", "book_ticket", {"train_number": "RE7"}),
    )
    res = by_id(out)
    assert res["w1"].status == pb.CALL_STATUS_SUCCEEDED
    assert res["w2"].status == pb.CALL_STATUS_FAILED and res["w2"].error.code == "tool_error"
    assert res["w3"].status == pb.CALL_STATUS_NOT_RUN and res["w3"].error.code == "held_by_batch"
    assert res["w3"].execution_count == 0
    assert effects(effects_db, f"{run_id}:w3") == []


def test_pending_write_holds_the_allowed_ones(
    connect: Connect, run_id: str, effects_db: Path
) -> None:
    c = connect("tina-demo-token")  # writes need approval for this caller
    c.start_run(run_id=run_id)
    out = c.submit_calls(
        run_id,
        "t1",
        tool_call("w1", "book_ticket", {"train_number": "ICE123"}),
        tool_call("w2", "book_ticket", {"train_number": "RE7"}),
    )
    res = by_id(out)
    assert res["w1"].status == pb.CALL_STATUS_PENDING_APPROVAL
    assert res["w2"].status == pb.CALL_STATUS_PENDING_APPROVAL
    assert out.next == pb.NEXT_ACTION_PAUSED_FOR_APPROVAL
    run = c.cancel_run(run_id)
    assert run.state == pb.RUN_STATE_CANCELLED
    calls = {r.call_id: r for r in c.get_run(run_id).calls}
    assert calls["w1"].status == pb.CALL_STATUS_REJECTED
    assert calls["w1"].error.code == "approval_cancelled"
    assert effects(effects_db, f"{run_id}:w1") == []
    after = c.resume_run(run_id)  # the turn no longer claims to wait for approval
    assert after.next == pb.NEXT_ACTION_HANDOFF and after.run_state == pb.RUN_STATE_CANCELLED
    assert {r.status for r in after.results} == {pb.CALL_STATUS_REJECTED}
