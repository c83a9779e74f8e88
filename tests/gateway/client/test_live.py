"""The client against a real sidecar: each refusal arrives as its own class with the sidecar's
code and status, and a watch outlives a restart of the sidecar."""

from __future__ import annotations

from pathlib import Path

import pytest

from examples.travel.service import TravelService
from examples.workshop.service import WorkshopService
from gateway import pb
from gateway.client import (
    GatewayClient,
    InvalidRequest,
    NotFound,
    PermissionDenied,
    RequestError,
    RetryPolicy,
    RunConflict,
    RunFinished,
    RunPaused,
    TurnConflict,
    Unauthenticated,
    tool_call,
)
from tests.support.paths import Connect
from tests.support.scenarios import WEATHER
from tests.support.sidecars import Watcher, own_sidecar


def refused(
    cls: type[RequestError], code: str, status: str, fn: object, *args: object, **kwargs: object
) -> RequestError:
    with pytest.raises(cls) as err:
        fn(*args, **kwargs)  # type: ignore[operator]
    assert (err.value.code.value, err.value.grpc_status) == (code, status)
    return err.value


def test_each_refusal_is_its_own_exception(connect: Connect, run_id: str) -> None:
    alice, tina = connect("alice-demo-token"), connect("tina-demo-token")
    alice.start_run(run_id, budget=pb.Budget(max_turns=5))
    refused(NotFound, "run_not_found", "NOT_FOUND", alice.get_run, "no-such-run")
    refused(
        Unauthenticated,
        "unauthenticated",
        "UNAUTHENTICATED",
        connect("wrong-token").get_run,
        run_id,
    )
    refused(
        PermissionDenied,
        "permission_denied",
        "PERMISSION_DENIED",
        connect("mallory-demo-token").get_run,
        run_id,
    )
    refused(
        RunConflict,
        "run_conflict",
        "ALREADY_EXISTS",
        alice.start_run,
        run_id,
        budget=pb.Budget(max_turns=6),
    )
    refused(InvalidRequest, "unknown_provider", "INVALID_ARGUMENT", alice.list_tools, "nope")
    alice.submit_calls(run_id, "t1", tool_call("c1", "get_weather", WEATHER))
    refused(
        TurnConflict,
        "turn_conflict",
        "ALREADY_EXISTS",
        alice.submit_calls,
        run_id,
        "t1",
        tool_call("c1", "get_weather", {**WEATHER, "city": "Paris"}),
    )
    alice.submit_turn(run_id, "t2", final=pb.FinalAnswer(text="done"))
    refused(
        RunFinished,
        "run_finished",
        "FAILED_PRECONDITION",
        alice.submit_turn,
        run_id,
        "t3",
        final=pb.FinalAnswer(text="again"),
    )
    tina.start_run(f"{run_id}-w")
    tina.submit_calls(
        f"{run_id}-w", "t1", tool_call("w1", "book_ticket", {"train_number": "ICE123"})
    )
    err = refused(
        RunPaused,
        "run_paused",
        "FAILED_PRECONDITION",
        tina.submit_turn,
        f"{run_id}-w",
        "t2",
        final=pb.FinalAnswer(text="x"),
    )
    assert "w1" in err.message


def test_a_watch_outlives_a_restart_of_the_sidecar(
    tmp_path: Path,
    travel: TravelService,
    tools_dir: Path,
    effects_db: Path,
    fresh_workshop: WorkshopService,
) -> None:
    seats = {"event_id": "ws-acme-1", "participant": "mia", "seats": 3}
    patient = RetryPolicy(attempts=60, first_backoff_s=0.2, max_backoff_s=0.5)
    db = tmp_path / "cg.db"
    with own_sidecar(
        tmp_path, travel, tools_dir, effects_db, db=db, workshop=fresh_workshop
    ) as first:
        target = first.target
        mia = GatewayClient(target, "mia-demo-token", retry=patient)
        mia.start_run("r1")
        paused = mia.submit_calls("r1", "t1", tool_call("w1", "reserve_seat", seats))
        watcher = Watcher(mia, "r1")
        assert watcher.wait_for(1) == [paused]
    # stopped: the watch reconnects by itself once the sidecar is back on its address
    with (
        own_sidecar(
            tmp_path, travel, tools_dir, effects_db, db=db, listen=target, workshop=fresh_workshop
        ),
        GatewayClient(target, "olga-demo-token") as olga,
    ):
        (pending,) = [r for r in paused.results if r.approval_id]
        olga.decide_approval(pending.approval_id, approve=True, reason="fine")
        settled = watcher.wait_for(2)[1]
        assert settled.next == pb.NEXT_ACTION_CONTINUE and watcher.error is None
        watcher.cancel()
        mia.close()
    assert len(fresh_workshop.reservations("r1:w1")) == 1
