"""An outcome nobody can know (the booking happened, its answer was lost, the look-up fails)
is settled by an operator, and reaches the loop waiting on WatchRun without polling.

On PostgreSQL the loop and the operator talk to two different replicas, so the settlement
crosses from one sidecar to the other through the database; on SQLite one sidecar serves both.
Whether the booking happened is read from the workshop service's own database.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import grpc
import pytest

from examples.travel.service import TravelService
from examples.workshop.service import WorkshopService
from gateway import pb
from gateway.client import GatewayClient, RetryPolicy, error_code, tool_call
from tests.support.paths import Connect, NewDb
from tests.support.resolution import attempt, audit_of, refused
from tests.support.sidecars import Watcher, by_id, own_sidecar, replicas

SEAT = {"event_id": "ws-acme-1", "participant": "mia", "seats": 1}

AVAILABILITY = {"event_id": "ws-acme-1"}

SUCCEEDED, FAILED = pb.CALL_STATUS_SUCCEEDED, pb.CALL_STATUS_FAILED


def lose_the_answer(workshop: WorkshopService, *, applied: bool = True) -> None:
    """The next booking is made (or not) but its answer is lost, and the look-up keeps
    failing: nobody can tell whether it happened."""
    fault = "apply_then_drop" if applied else "drop"
    workshop.control(reserve_seat={fault: True, "times": 1}, lookup={"status": 500})


def test_an_operator_settles_an_unknown_booking_and_the_watching_loop_receives_it(
    db_kind: str,
    new_db: NewDb,
    travel: TravelService,
    tools_dir: Path,
    effects_db: Path,
    fresh_workshop: WorkshopService,
) -> None:
    db, run_id = new_db(), "booking"
    key = f"{run_id}:w1"
    lose_the_answer(fresh_workshop)
    count = 2 if db_kind == "postgresql" else 1
    with (
        replicas(count, db, travel, tools_dir, effects_db, fresh_workshop) as procs,
        GatewayClient(procs[0].target, "mia-demo-token") as loop,
        GatewayClient(procs[-1].target, "oscar-demo-token") as operator,
    ):
        loop.start_run(run_id=run_id)
        paused = loop.submit_calls(
            run_id,
            "t1",
            tool_call("c1", "check_availability", AVAILABILITY),
            tool_call("w1", "reserve_seat", SEAT),
        )
        res = by_id(paused)
        assert paused.next == pb.NEXT_ACTION_PAUSED_UNKNOWN_OUTCOME
        assert paused.run_state == pb.RUN_STATE_PAUSED_UNKNOWN_OUTCOME
        assert res["c1"].status == SUCCEEDED and res["w1"].status == pb.CALL_STATUS_UNKNOWN
        assert res["w1"].execution_count == 1
        (booked,) = fresh_workshop.reservations(key)  # it happened; nobody could tell

        watcher = Watcher(loop, run_id)
        assert watcher.wait_for(1)[0] == paused  # the current settled outcome comes first

        # the requester cannot settle their own call; a bad output changes nothing
        refused(
            attempt(loop.resolve_call, run_id, "w1", SUCCEEDED, reason="it worked"),
            grpc.StatusCode.PERMISSION_DENIED,
            "permission_denied",
        )
        refused(
            attempt(
                operator.resolve_call,
                run_id,
                "w1",
                SUCCEEDED,
                reason="found it",
                output_json=json.dumps({"seats": "one"}),
            ),
            grpc.StatusCode.INVALID_ARGUMENT,
            "invalid_argument",
        )

        output = {k: booked[k] for k in ("reservation_id", "event_id", "participant", "seats")}
        result = operator.resolve_call(
            run_id,
            "w1",
            SUCCEEDED,
            output_json=json.dumps(output),
            reason=f"{booked['reservation_id']} is in the workshop database",
        )
        assert (result.call_id, result.status, result.execution_count) == ("w1", SUCCEEDED, 1)
        assert result.error.code == "resolved_by_operator" and "oscar" in result.error.message

        settled = watcher.wait_for(2)[1]
        assert settled.next == pb.NEXT_ACTION_CONTINUE
        assert settled.run_state == pb.RUN_STATE_ACTIVE
        after = by_id(settled)
        assert [r.call_id for r in settled.results] == ["c1", "w1"]
        assert after["c1"] == res["c1"]
        assert after["w1"].status == SUCCEEDED and json.loads(after["w1"].output_json) == output
        assert loop.resume_run(run_id) == settled  # ResumeRun answers the same

        refused(
            attempt(operator.resolve_call, run_id, "w1", FAILED, reason="again"),
            grpc.StatusCode.FAILED_PRECONDITION,
            "not_unknown",
        )
        (rec,) = [c for c in loop.get_run(run_id).calls if c.call_id == "w1"]
        assert rec.resolved_by == "oscar" and rec.resolved_at
        assert rec.resolution_reason.startswith(booked["reservation_id"])

        # the loop carries on; the watcher's stream ends with the run
        loop.submit_turn(run_id=run_id, turn_id="t2", final=pb.FinalAnswer(text="booked"))
        assert watcher.wait_for(3)[2].next == pb.NEXT_ACTION_DONE
        assert watcher.wait_ended() and watcher.error is None

    resolve = [r for r in asyncio.run(audit_of(db, run_id)) if r["kind"] == "resolve"]
    assert [
        (r["subject"], r["actor"], r["call_id"], r["status"], r["error_code"]) for r in resolve
    ] == [("mia", "oscar", "w1", "SUCCEEDED", "resolved_by_operator")]
    assert booked["reservation_id"] in str(resolve[0]["decision_json"])
    assert fresh_workshop.reservations(key) == [booked]  # one effect, never replayed
    sent = [r for r in fresh_workshop.stats()["requests"] if r["idempotency_key"] == key]
    assert [r["path"] for r in sent] == ["/reserve_seat", "/lookup"]  # sent once, looked up


def test_a_failed_resolution_settles_the_turn_for_replanning(
    connect: Connect, run_id: str, fresh_workshop: WorkshopService
) -> None:
    """Two writes: the first unknown stops the second (NOT_RUN); the operator finds no booking
    and settles the first as FAILED, which settles the turn, and the model re-plans."""
    lose_the_answer(fresh_workshop, applied=False)
    loop, operator = connect("mia-demo-token"), connect("oscar-demo-token")
    loop.start_run(run_id=run_id)
    out = loop.submit_calls(
        run_id,
        "t1",
        tool_call("w1", "reserve_seat", SEAT),
        tool_call("w2", "reserve_seat", {**SEAT, "event_id": "ws-acme-2"}),
    )
    assert {r.call_id: r.status for r in out.results} == {
        "w1": pb.CALL_STATUS_UNKNOWN,
        "w2": pb.CALL_STATUS_NOT_RUN,
    }
    refused(
        attempt(operator.resolve_call, run_id, "w1", FAILED, reason="no", output_json="{}"),
        grpc.StatusCode.INVALID_ARGUMENT,
        "invalid_argument",
    )
    result = operator.resolve_call(run_id, "w1", FAILED, reason="cancelled by the venue")
    assert (result.status, result.error.code, result.output_json) == (
        FAILED,
        "resolved_by_operator",
        "",
    )
    settled = loop.resume_run(run_id)
    assert settled.next == pb.NEXT_ACTION_CONTINUE
    assert {r.call_id: (r.status, r.error.code) for r in settled.results} == {
        "w1": (FAILED, "resolved_by_operator"),
        "w2": (pb.CALL_STATUS_NOT_RUN, "held_by_batch"),
    }
    assert fresh_workshop.reservations() == []
    assert fresh_workshop.stats()["reserve_seat"] == 1  # w1 was sent once, w2 never


@pytest.mark.parametrize(
    ("token", "call_id", "outcome", "reason", "status", "code"),
    [
        (
            "opal-demo-token",
            "w1",
            SUCCEEDED,
            "mine",
            grpc.StatusCode.PERMISSION_DENIED,
            "permission_denied",
        ),  # an operator who is the run's requester
        (
            "otto-demo-token",
            "w1",
            SUCCEEDED,
            "x",
            grpc.StatusCode.PERMISSION_DENIED,
            "permission_denied",
        ),  # an operator of another tenant
        (
            "mallory-demo-token",
            "nope",
            SUCCEEDED,
            "x",
            grpc.StatusCode.PERMISSION_DENIED,
            "permission_denied",
        ),  # no grant: learns nothing of which calls exist
        ("oscar-demo-token", "nope", SUCCEEDED, "x", grpc.StatusCode.NOT_FOUND, "call_not_found"),
        (
            "oscar-demo-token",
            "c1",
            SUCCEEDED,
            "x",
            grpc.StatusCode.FAILED_PRECONDITION,
            "not_unknown",
        ),
        (
            "oscar-demo-token",
            "w1",
            pb.CALL_STATUS_UNSPECIFIED,
            "x",
            grpc.StatusCode.INVALID_ARGUMENT,
            "invalid_argument",
        ),
        (
            "oscar-demo-token",
            "w1",
            pb.CALL_STATUS_NOT_RUN,
            "x",
            grpc.StatusCode.INVALID_ARGUMENT,
            "invalid_argument",
        ),
        (
            "oscar-demo-token",
            "w1",
            SUCCEEDED,
            " ",
            grpc.StatusCode.INVALID_ARGUMENT,
            "invalid_argument",
        ),
    ],
)
def test_resolve_call_refusals_change_nothing(
    connect: Connect,
    run_id: str,
    fresh_workshop: WorkshopService,
    token: str,
    call_id: str,
    outcome: pb.CallStatus,
    reason: str,
    status: grpc.StatusCode,
    code: str,
) -> None:
    lose_the_answer(fresh_workshop)
    requester = connect("opal-demo-token")
    requester.start_run(run_id=run_id)
    paused = requester.submit_calls(
        run_id,
        "t1",
        tool_call("c1", "check_availability", AVAILABILITY),
        tool_call("w1", "reserve_seat", {**SEAT, "participant": "opal"}),
    )
    assert by_id(paused)["w1"].status == pb.CALL_STATUS_UNKNOWN
    refused(
        attempt(
            connect(token).resolve_call, run_id, call_id, outcome, reason=reason, output_json=""
        ),
        status,
        code,
    )
    run = requester.get_run(run_id)
    assert run.state == pb.RUN_STATE_PAUSED_UNKNOWN_OUTCOME
    assert [(c.call_id, c.status, c.resolved_by) for c in run.calls] == [
        ("c1", SUCCEEDED, ""),
        ("w1", pb.CALL_STATUS_UNKNOWN, ""),
    ]


def test_resolve_call_on_a_run_that_does_not_exist(connect: Connect) -> None:
    refused(
        attempt(
            connect("oscar-demo-token").resolve_call, "no-such-run", "w1", SUCCEEDED, reason="x"
        ),
        grpc.StatusCode.NOT_FOUND,
        "run_not_found",
    )


def test_watch_run_is_for_the_owner_only(connect: Connect, run_id: str) -> None:
    connect("alice-demo-token").start_run(run_id=run_id)
    for token, status in (
        ("mallory-demo-token", grpc.StatusCode.PERMISSION_DENIED),
        ("oscar-demo-token", grpc.StatusCode.PERMISSION_DENIED),
    ):
        watcher = Watcher(connect(token), run_id)
        assert watcher.wait_ended() and watcher.outcomes == []
        assert watcher.error is not None and watcher.error.grpc_status == status.name
    missing = Watcher(connect("alice-demo-token"), "no-such-run")
    assert missing.wait_ended() and missing.error is not None
    assert error_code(missing.error) == "run_not_found"


def test_a_watcher_sees_a_cancel_and_its_stream_ends(connect: Connect, run_id: str) -> None:
    loop = connect("alice-demo-token")
    loop.start_run(run_id=run_id)
    watcher = Watcher(loop, run_id)
    first = watcher.wait_for(1)[0]  # no turn yet: the run's state is the outcome
    assert (first.turn_id, first.next, first.run_state) == (
        "",
        pb.NEXT_ACTION_CONTINUE,
        pb.RUN_STATE_ACTIVE,
    )
    loop.submit_turn(run_id=run_id, turn_id="t1", paused=pb.Paused(reason="pause_turn"))
    assert watcher.wait_for(2)[1].turn_id == "t1"
    loop.cancel_run(run_id)
    last = watcher.wait_for(3)[2]
    assert (last.turn_id, last.run_state) == ("t1", pb.RUN_STATE_CANCELLED)
    assert watcher.wait_ended() and watcher.error is None


def test_a_watcher_reconnects_across_a_restart_and_gets_the_current_state_first(
    db_kind: str,
    new_db: NewDb,
    tmp_path: Path,
    travel: TravelService,
    tools_dir: Path,
    effects_db: Path,
    fresh_workshop: WorkshopService,
) -> None:
    db = new_db()
    lose_the_answer(fresh_workshop)
    with (
        own_sidecar(
            tmp_path, travel, tools_dir, effects_db, db=db, workshop=fresh_workshop
        ) as proc,
        GatewayClient(proc.target, "mia-demo-token", retry=RetryPolicy(attempts=1)) as loop,
    ):
        loop.start_run(run_id="r1")
        paused = loop.submit_calls("r1", "t1", tool_call("w1", "reserve_seat", SEAT))
        watcher = Watcher(loop, "r1")  # a client that never reconnects by itself
        assert watcher.wait_for(1) == [paused]
        proc.stop()  # a graceful restart ends the stream: UNAVAILABLE, reconnect
        assert watcher.wait_ended() and watcher.error is not None
        assert watcher.error.grpc_status == "UNAVAILABLE"
        assert error_code(watcher.error) == "shutting_down"
    with (
        own_sidecar(
            tmp_path, travel, tools_dir, effects_db, db=db, workshop=fresh_workshop
        ) as proc,
        GatewayClient(proc.target, "mia-demo-token") as loop,
    ):
        again = Watcher(loop, "r1")
        assert again.wait_for(1) == [paused]  # the current state first
        fresh_workshop.control(lookup={})  # the look-up works again
        loop.resume_run("r1")  # a reconciliation settles it
        settled = again.wait_for(2)[1]
        assert settled.next == pb.NEXT_ACTION_CONTINUE
        (res,) = settled.results
        assert res.status == SUCCEEDED and res.execution_count == 1  # found, not re-sent
        again.cancel()
    assert len(fresh_workshop.reservations("r1:w1")) == 1
