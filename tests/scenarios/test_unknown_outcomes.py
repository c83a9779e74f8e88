"""A write whose outcome is unknown is looked up, never replayed; the run pauses while the
look-up is inconclusive and ResumeRun settles it once the target answers. On both stores."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from examples.travel.service import TravelService
from examples.workshop.service import WorkshopService
from gateway import pb
from gateway.client import GatewayClient, RequestError, error_code, tool_call
from tests.gateway.executors.target import Reply, running_target
from tests.support.paths import NewDb
from tests.support.resolution import audit_of
from tests.support.sidecars import own_sidecar


def test_lost_response_is_reconciled_not_replayed(
    tmp_path: Path, travel: TravelService, tools_dir: Path, effects_db: Path, new_db: NewDb
) -> None:
    with running_target() as target:
        key = "r1:w1"
        target.script("/reserve", Reply(503, {"error": "gateway timeout upstream"}))
        target.script(
            "/by-key/r1%3Aw1",
            Reply(500, {"error": "index lagging"}),
            Reply(200, {"reservation": "R-17", "slot": "9am"}),
        )
        env_dir = tmp_path / "env"
        env_dir.mkdir()
        db = new_db()
        with (
            own_sidecar(
                env_dir,
                travel,
                tools_dir,
                effects_db,
                db=db,
                env={"CALLGATE_TEST_TARGET_URL": target.url},
            ) as proc,
            GatewayClient(proc.target, "walt-demo-token") as c,
        ):
            c.start_run(run_id="r1")
            out = c.submit_calls("r1", "t1", tool_call("w1", "reserve_slot", {"slot": "9am"}))
            (res,) = out.results
            assert res.status == pb.CALL_STATUS_UNKNOWN and res.execution_count == 1
            assert out.next == pb.NEXT_ACTION_PAUSED_UNKNOWN_OUTCOME
            assert out.run_state == pb.RUN_STATE_PAUSED_UNKNOWN_OUTCOME
            with pytest.raises(RequestError) as err:
                c.submit_turn(run_id="r1", turn_id="t2", final=pb.FinalAnswer(text="x"))
            assert error_code(err.value) == "run_paused"
            settled = c.resume_run("r1")
            (res,) = settled.results
            assert res.status == pb.CALL_STATUS_SUCCEEDED and res.execution_count == 1
            assert '"R-17"' in res.output_json
            assert settled.next == pb.NEXT_ACTION_CONTINUE
            assert settled.run_state == pb.RUN_STATE_ACTIVE
        posts = [s for s in target.seen if s.method == "POST"]
        assert len(posts) == 1  # the write was sent once, whatever happened after
        assert posts[0].headers.get("Idempotency-Key") == key
    # the trail: sent once with no answer known, then found by the look-up
    trail = [
        (r["kind"], r["status"], r["execution_count"]) for r in asyncio.run(audit_of(db, "r1"))
    ]
    assert trail == [
        ("decision", None, 0),
        ("execution", "UNKNOWN", 1),
        ("reconcile", "SUCCEEDED", 1),
    ]


def test_a_booking_applied_late_is_never_sent_twice(
    tmp_path: Path,
    travel: TravelService,
    tools_dir: Path,
    effects_db: Path,
    fresh_workshop: WorkshopService,
    new_db: NewDb,
) -> None:
    """The workshop accepts the booking, loses the answer and books it later: while its
    look-up says "pending" the call stays UNKNOWN (nothing is re-sent); once booked, ResumeRun
    finds it."""
    fresh_workshop.control(reserve_seat={"apply_late": True, "times": 1})
    seat = {"event_id": "ws-acme-1", "participant": "mia", "seats": 1}
    with (
        own_sidecar(
            tmp_path, travel, tools_dir, effects_db, db=new_db(), workshop=fresh_workshop
        ) as proc,
        GatewayClient(proc.target, "mia-demo-token") as c,
    ):
        c.start_run(run_id="late")
        out = c.submit_calls("late", "t1", tool_call("w1", "reserve_seat", seat))
        assert out.next == pb.NEXT_ACTION_PAUSED_UNKNOWN_OUTCOME
        assert out.results[0].status == pb.CALL_STATUS_UNKNOWN
        assert fresh_workshop.stats()["lookup"] == 1  # looked up at once: pending
        still = c.resume_run("late")  # looked up again: still pending, not re-sent
        assert still.results[0].status == pb.CALL_STATUS_UNKNOWN
        assert fresh_workshop.stats()["lookup"] == 2
        assert fresh_workshop.reservations() == []
        assert fresh_workshop.apply_late() == 1
        settled = c.resume_run("late")
        (res,) = settled.results
        assert res.status == pb.CALL_STATUS_SUCCEEDED and res.execution_count == 1
        assert settled.next == pb.NEXT_ACTION_CONTINUE
        booked = fresh_workshop.reservations("late:w1")
        assert len(booked) == 1 and booked[0]["reservation_id"] in res.output_json
    assert fresh_workshop.stats()["reserve_seat"] == 1
