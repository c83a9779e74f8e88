"""A non-Python loop client (Node.js @grpc/grpc-js, proto loaded at run time) calls the sidecar:
"any loop client" is tested, not claimed. `make setup` installs its packages from npm.

loop_client.js submits one normalized turn; example_loop.js is a small agent loop that submits
raw provider responses and waits on WatchRun while a person decides."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from examples.travel.service import TravelService
from examples.workshop.service import WorkshopService
from gateway.client import GatewayClient
from gateway.testing import SidecarProcess
from tests.support.paths import ROOT
from tests.support.wire_responses import WIRES, Call

CLIENT = ROOT / "clients" / "node" / "loop_client.js"
EXAMPLE_LOOP = ROOT / "clients" / "node" / "example_loop.js"


def node_binary() -> str:
    node = shutil.which("node")
    assert node, "node is required (make setup installs the client's packages with npm)"
    return node


def run_node(target: str, token: str, run_id: str, mark: str = "none") -> dict[str, object]:
    node = node_binary()
    done = subprocess.run(
        [node, str(CLIENT), "--target", target, "--token", token, "--run", run_id, "--mark", mark],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout)
    return result


@pytest.mark.parametrize("mark", ["none", "complete"])
def test_node_client_runs_a_turn(
    sidecar: SidecarProcess, fresh_travel: TravelService, run_id: str, mark: str
) -> None:
    # "none": a client that never heard of the marks; "complete": one of the first proto
    summary = run_node(sidecar.target, "alice-demo-token", run_id, mark)
    assert summary["run_state"] == "RUN_STATE_ACTIVE"
    assert summary["next"] == "NEXT_ACTION_CONTINUE"
    results = {r["call_id"]: r for r in summary["results"]}  # type: ignore[attr-defined]
    assert results["n_train"]["status"] == "CALL_STATUS_SUCCEEDED"
    assert results["n_train"]["output"]["train_number"] == "ICE123"
    assert results["n_weather"]["output"]["city"] == "Berlin"
    assert fresh_travel.stats()["train_status"] == 1


def test_a_call_the_node_client_marks_partial_never_runs(
    sidecar: SidecarProcess, fresh_travel: TravelService, run_id: str
) -> None:
    summary = run_node(sidecar.target, "alice-demo-token", run_id, "partial")
    results = {r["call_id"]: r for r in summary["results"]}  # type: ignore[attr-defined]
    assert results["n_train"]["status"] == "CALL_STATUS_SUCCEEDED"
    assert results["n_weather"]["status"] == "CALL_STATUS_REJECTED"
    assert results["n_weather"]["error"] == "incomplete_arguments"
    assert fresh_travel.stats()["weather"] == 0


def test_node_client_sees_the_error_code(sidecar: SidecarProcess, run_id: str) -> None:
    summary = run_node(sidecar.target, "wrong-token", run_id)
    assert summary["error"] == {
        "code": "UNAUTHENTICATED",
        "details": "the bearer token is neither a token this gateway "
        "knows (none of its --auth file's tokens) nor a "
        "JWT",
    }


def test_node_example_loop_waits_on_watch_run_for_an_approval(
    sidecar: SidecarProcess, fresh_workshop: WorkshopService, run_id: str, tmp_path: Path
) -> None:
    wire = WIRES["anthropic.messages"]
    seats = {"event_id": "ws-acme-1", "participant": "mia", "seats": 3}
    responses = tmp_path / "responses.json"
    responses.write_text(
        json.dumps(
            [
                wire.calls("msg_1", [Call("toolu_seat", "reserve_seat", seats)]),
                wire.final("msg_2", "Your three seats are booked."),
            ]
        )
    )
    loop = subprocess.Popen(
        [
            node_binary(),
            str(EXAMPLE_LOOP),
            "--target",
            sidecar.target,
            "--token",
            "mia-demo-token",
            "--run",
            run_id,
            "--provider",
            "anthropic.messages",
            "--responses",
            str(responses),
            "--conversation",
            json.dumps([wire.user("Book three seats at ws-acme-1.")]),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert loop.stderr is not None
        assert loop.stderr.readline().strip() == "waiting: NEXT_ACTION_PAUSED_FOR_APPROVAL"
        with GatewayClient(sidecar.target, "olga-demo-token") as owner:  # the owner decides
            (pending,) = owner.list_approvals(run_id=run_id).approvals
            owner.decide_approval(pending.approval_id, approve=True, reason="team offsite")
        out, err = loop.communicate(timeout=60)
    finally:
        if loop.poll() is None:
            loop.kill()
            loop.communicate()
    assert loop.returncode == 0, err
    summary = json.loads(out)
    assert summary == {
        "turns": ["NEXT_ACTION_PAUSED_FOR_APPROVAL", "NEXT_ACTION_CONTINUE", "NEXT_ACTION_DONE"],
        "results": {"toolu_seat": "CALL_STATUS_SUCCEEDED"},
        "run_state": "RUN_STATE_COMPLETED",
    }
    assert len(fresh_workshop.reservations(f"{run_id}:toolu_seat")) == 1
