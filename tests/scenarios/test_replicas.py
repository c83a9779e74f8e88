"""Several sidecars sharing one store never execute a call twice.

Two sidecar processes share a PostgreSQL schema (or a SQLite file: what `serve --workers` will
do). What a replica may do is decided in the database: the drive lock of a run, the claim to
execute a call. Whether a booking happened is read from the workshop service's own database.
"""

from __future__ import annotations

import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from examples.travel.service import TravelService
from examples.workshop.service import WorkshopService
from gateway import pb
from gateway.client import GatewayClient, RequestError, tool_call
from tests.support.paths import NewDb
from tests.support.sidecars import by_id, replicas

SEAT = {"event_id": "ws-acme-1", "participant": "mia", "seats": 1}
ROUNDS = 100


def reserve_turn(client: GatewayClient, run_id: str) -> pb.TurnOutcome:
    return client.submit_calls(
        run_id,
        "t1",
        tool_call("c1", "check_availability", {"event_id": "ws-acme-1"}),
        tool_call("w1", "reserve_seat", SEAT),
    )


def sent(workshop: WorkshopService, key: str) -> list[str]:
    return [r["path"] for r in workshop.stats()["requests"] if r["idempotency_key"] == key]


def test_two_replicas_receive_the_same_turn_at_the_same_moment(
    db_kind: str,
    new_db: NewDb,
    travel: TravelService,
    tools_dir: Path,
    effects_db: Path,
    fresh_workshop: WorkshopService,
) -> None:
    with (
        replicas(2, new_db(), travel, tools_dir, effects_db, fresh_workshop) as procs,
        GatewayClient(procs[0].target, "mia-demo-token") as a,
        GatewayClient(procs[1].target, "mia-demo-token") as b,
        ThreadPoolExecutor(2) as pool,
    ):
        start = threading.Barrier(2)

        def submit(client: GatewayClient, run_id: str) -> pb.TurnOutcome:
            start.wait(timeout=30)
            return reserve_turn(client, run_id)

        for _ in range(ROUNDS):
            fresh_workshop.reset()
            run_id = f"race-{uuid.uuid4().hex[:10]}"
            a.start_run(run_id=run_id)
            first, second = (
                f.result(timeout=60)
                for f in [pool.submit(submit, a, run_id), pool.submit(submit, b, run_id)]
            )
            assert first == second  # one identical outcome for both
            res = by_id(first)
            assert [r.call_id for r in first.results] == ["c1", "w1"]
            assert res["c1"].status == res["w1"].status == pb.CALL_STATUS_SUCCEEDED
            assert res["w1"].execution_count == 1 and first.next == pb.NEXT_ACTION_CONTINUE
            (booked,) = fresh_workshop.reservations(f"{run_id}:w1")  # exactly one execution
            assert booked["reservation_id"] in res["w1"].output_json
            assert sent(fresh_workshop, f"{run_id}:w1") == ["/reserve_seat"]
            assert fresh_workshop.stats()["check_availability"] == 1
            run = a.get_run(run_id)
            assert (run.turns_used, run.tool_calls_used) == (1, 2)


@pytest.mark.parametrize("applied", [True, False], ids=["applied", "in-flight"])
def test_a_replica_killed_mid_turn_is_finished_by_the_other(
    db_kind: str,
    new_db: NewDb,
    travel: TravelService,
    tools_dir: Path,
    effects_db: Path,
    fresh_workshop: WorkshopService,
    applied: bool,
) -> None:
    """The replica dies while the booking is on the wire: either already booked (its answer
    never came) or not yet. The other replica's ResumeRun finishes the turn with one booking:
    found by its key, or sent once more with the same key."""
    run_id = f"kill-{uuid.uuid4().hex[:8]}"
    key = f"{run_id}:w1"
    fault = {"apply_then_delay_s": 60} if applied else {"delay_s": 60}
    fresh_workshop.control(reserve_seat={**fault, "times": 1})
    with (
        replicas(2, new_db(), travel, tools_dir, effects_db, fresh_workshop) as procs,
        GatewayClient(procs[0].target, "mia-demo-token") as a,
        GatewayClient(procs[1].target, "mia-demo-token") as b,
        ThreadPoolExecutor(1) as pool,
    ):
        a.start_run(run_id=run_id)
        pending = pool.submit(reserve_turn, a, run_id)
        assert fresh_workshop.wait_for("reserve_seat", 1, timeout_s=30)
        if applied:
            assert fresh_workshop.wait_booked(key, timeout_s=30)
        procs[0].stop(kill=True)
        with pytest.raises(RequestError):
            pending.result(timeout=30)
        if not applied:
            fresh_workshop.reset()  # the held request is dropped, never booked
        out = b.resume_run(run_id)
        res = by_id(out)
        assert out.next == pb.NEXT_ACTION_CONTINUE
        assert res["c1"].status == res["w1"].status == pb.CALL_STATUS_SUCCEEDED
        (booked,) = fresh_workshop.reservations(key)  # one effect
        assert booked["reservation_id"] in res["w1"].output_json
        # the lost attempt counts as sent; found by the look-up, or sent once more with the key
        assert res["w1"].execution_count == (1 if applied else 2)
        assert b.resume_run(run_id) == out
