"""A non-Python loop client (Node.js @grpc/grpc-js, proto loaded at run time) calls the sidecar:
"any loop client" is tested, not claimed. `make setup` installs its packages from npm."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from examples.travel.service import TravelService
from gateway.testing import SidecarProcess
from tests.support.paths import ROOT

CLIENT = ROOT / "clients" / "node" / "loop_client.js"


def run_node(target: str, token: str, run_id: str, mark: str = "none") -> dict[str, object]:
    node = shutil.which("node")
    assert node, "node is required (make setup installs the client's packages with npm)"
    done = subprocess.run([node, str(CLIENT), "--target", target, "--token", token,
                           "--run", run_id, "--mark", mark], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout)
    return result


@pytest.mark.parametrize("mark", ["none", "complete"])
def test_node_client_runs_a_turn(sidecar: SidecarProcess, fresh_travel: TravelService,
                                 run_id: str, mark: str) -> None:
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
        sidecar: SidecarProcess, fresh_travel: TravelService, run_id: str) -> None:
    summary = run_node(sidecar.target, "alice-demo-token", run_id, "partial")
    results = {r["call_id"]: r for r in summary["results"]}  # type: ignore[attr-defined]
    assert results["n_train"]["status"] == "CALL_STATUS_SUCCEEDED"
    assert results["n_weather"]["status"] == "CALL_STATUS_REJECTED"
    assert results["n_weather"]["error"] == "incomplete_arguments"
    assert fresh_travel.stats()["weather"] == 0


def test_node_client_sees_the_error_code(sidecar: SidecarProcess, run_id: str) -> None:
    summary = run_node(sidecar.target, "wrong-token", run_id)
    assert summary["error"] == {"code": "UNAUTHENTICATED",
                                "details": "the bearer token is neither a token this gateway "
                                           "knows (none of its --auth file's tokens) nor a "
                                           "JWT"}
