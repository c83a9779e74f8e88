"""A non-Python loop client (Node.js @grpc/grpc-js, proto loaded at run time) calls the sidecar:
"any loop client" is tested, not claimed. `make setup` installs its packages from npm."""

from __future__ import annotations

import json
import shutil
import subprocess

from examples.travel.service import TravelService
from gateway.testing import SidecarProcess
from tests.support.paths import ROOT

CLIENT = ROOT / "clients" / "node" / "loop_client.js"


def run_node(target: str, token: str, run_id: str) -> dict[str, object]:
    node = shutil.which("node")
    assert node, "node is required (make setup installs the client's packages with npm)"
    done = subprocess.run([node, str(CLIENT), "--target", target, "--token", token,
                           "--run", run_id], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout)
    return result


def test_node_client_runs_a_turn(sidecar: SidecarProcess, fresh_travel: TravelService,
                                 run_id: str) -> None:
    summary = run_node(sidecar.target, "alice-token", run_id)
    assert summary["run_state"] == "RUN_STATE_ACTIVE"
    assert summary["next"] == "NEXT_ACTION_CONTINUE"
    results = {r["call_id"]: r for r in summary["results"]}  # type: ignore[attr-defined]
    assert results["n_train"]["status"] == "CALL_STATUS_SUCCEEDED"
    assert results["n_train"]["output"]["train_number"] == "ICE123"
    assert results["n_weather"]["output"]["city"] == "Berlin"
    assert fresh_travel.stats()["train_status"] == 1


def test_node_client_sees_the_error_code(sidecar: SidecarProcess, run_id: str) -> None:
    summary = run_node(sidecar.target, "wrong-token", run_id)
    assert summary["error"] == {"code": "UNAUTHENTICATED",
                                "details": "the bearer token is not known to this gateway"}
