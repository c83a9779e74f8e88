"""`callgate runs list|show|watch` and `callgate tools list` against a real sidecar: what a
newcomer types to see what their loop did."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator

import pytest

from examples.workshop.service import WorkshopService
from gateway import pb
from gateway.client import tool_call
from gateway.testing import SidecarProcess
from tests.support.commands import callgate
from tests.support.paths import ROOT, Connect
from tests.support.scenarios import WEATHER


def cli(sidecar: SidecarProcess, token: str, *args: str) -> subprocess.CompletedProcess[str]:
    return callgate(*args, "--target", sidecar.target, "--token", token)


@pytest.fixture
def paused(connect: Connect, run_id: str, fresh_workshop: WorkshopService) -> str:
    """A run of mia's: a read that ran, a call of no such tool, and a booking of three seats
    waiting for an owner's approval."""
    mia = connect("mia-demo-token")
    mia.start_run(run_id=run_id)
    mia.submit_calls(
        run_id,
        "t1",
        tool_call("seen", "check_availability", {"event_id": "ws-acme-1"}),
        tool_call("odd", "launch_rocket", {}),
    )
    mia.submit_calls(
        run_id,
        "t2",
        tool_call(
            "book", "reserve_seat", {"event_id": "ws-acme-1", "participant": "mia", "seats": 3}
        ),
    )
    return run_id


def test_runs_list_shows_the_callers_runs_with_what_they_wait_for(
    sidecar: SidecarProcess, paused: str
) -> None:
    done = cli(sidecar, "mia-demo-token", "runs", "list", "--state", "paused_for_approval")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split() == [
        "RUN",
        "STATE",
        "SUBJECT",
        "TURNS",
        "CALLS",
        "CREATED",
        "WAITING",
        "FOR",
    ]
    (row,) = [line for line in lines if line.startswith(paused)]
    assert "PAUSED_FOR_APPROVAL" in row and " mia " in row
    as_json = json.loads(cli(sidecar, "mia-demo-token", "runs", "list", "--json").stdout)
    assert paused in {r["run_id"] for r in as_json["runs"]}
    refused = cli(sidecar, "olga-demo-token", "runs", "list", "--subject", "mia")
    assert refused.returncode == 1 and "may_list_runs" in refused.stderr


def test_runs_show_has_every_turn_call_result_and_the_pending_approval(
    sidecar: SidecarProcess, paused: str
) -> None:
    done = cli(sidecar, "mia-demo-token", "runs", "show", paused)
    assert done.returncode == 0, done.stderr
    text = done.stdout
    assert "state:    PAUSED_FOR_APPROVAL" in text
    assert "turn t1 (tool_request" in text and "turn t2 (tool_request" in text
    assert "seen  check_availability  SUCCEEDED  sent 1 time(s)" in text
    assert '"available"' in text  # the read's output
    assert "odd  launch_rocket  REJECTED" in text and "unknown_tool: no tool named" in text
    assert "book  reserve_seat  PENDING_APPROVAL" in text
    assert "pending approvals" in text and "call book (reserve_seat)" in text
    found = json.loads(cli(sidecar, "mia-demo-token", "runs", "show", paused, "--json").stdout)
    assert [c["call_id"] for c in found["run"]["calls"]] == ["seen", "odd", "book"]
    assert [a["call_id"] for a in found["pending_approvals"]] == ["book"]
    other = cli(sidecar, "gina-demo-token", "runs", "show", paused)
    assert other.returncode == 1 and "permission_denied" in other.stderr


def watching(
    sidecar: SidecarProcess, token: str, run_id: str
) -> tuple[subprocess.Popen[str], list[dict[str, object]], threading.Condition]:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gateway.cli",
            "runs",
            "watch",
            run_id,
            "--json",
            "--target",
            sidecar.target,
            "--token",
            token,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    seen: list[dict[str, object]] = []
    arrived = threading.Condition()

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            with arrived:
                seen.append(json.loads(line))
                arrived.notify_all()

    threading.Thread(target=read, daemon=True).start()
    return proc, seen, arrived


@pytest.fixture
def closing() -> Iterator[list[subprocess.Popen[str]]]:
    procs: list[subprocess.Popen[str]] = []
    yield procs
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=30)
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()


def test_runs_watch_follows_settlements_until_the_run_ends(
    sidecar: SidecarProcess, connect: Connect, paused: str, closing: list[subprocess.Popen[str]]
) -> None:
    proc, seen, arrived = watching(sidecar, "mia-demo-token", paused)
    closing.append(proc)
    with arrived:
        assert arrived.wait_for(lambda: len(seen) >= 1, 30), seen
    assert seen[0]["next"] == "NEXT_ACTION_PAUSED_FOR_APPROVAL"
    olga = connect("olga-demo-token")
    (pending,) = olga.list_approvals(run_id=paused).approvals
    olga.decide_approval(pending.approval_id, approve=True, reason="three seats are fine")
    with arrived:
        assert arrived.wait_for(lambda: len(seen) >= 2, 30), seen
    assert seen[1]["next"] == "NEXT_ACTION_CONTINUE"
    assert [r["status"] for r in seen[1]["results"]] == ["CALL_STATUS_SUCCEEDED"]  # type: ignore[union-attr]
    connect("mia-demo-token").submit_turn(
        run_id=paused, turn_id="t3", final=pb.FinalAnswer(text="booked")
    )
    assert proc.wait(timeout=30) == 0  # the run ended: so does watching
    assert seen[-1]["run_state"] == "RUN_STATE_COMPLETED"


def test_tools_list_shows_the_callers_tools_and_their_schemas(sidecar: SidecarProcess) -> None:
    done = cli(sidecar, "tina-demo-token", "tools", "list")  # a tester may use every tool
    assert done.returncode == 0, done.stderr
    rows = {line.split()[0]: line.split()[1:3] for line in done.stdout.splitlines()[1:]}
    assert rows["get_weather"] == ["1.0.0", "read"]
    assert rows["reserve_seat"] == ["1.0.0", "write"]
    traveler = cli(sidecar, "bob-demo-token", "tools", "list").stdout  # offered a traveler's
    assert "get_weather" in traveler and "reserve_seat" not in traveler
    with_schema = cli(sidecar, "alice-demo-token", "tools", "list", "--schema").stdout
    assert "get_weather 1.0.0 input schema:" in with_schema and '"city"' in with_schema
    answer = json.loads(
        cli(
            sidecar,
            "alice-demo-token",
            "tools",
            "list",
            "--json",
            "--provider",
            "anthropic.messages",
        ).stdout
    )
    weather = next(t for t in answer["tools"] if t["name"] == "get_weather")
    assert weather["input_schema"]["required"] == ["city", "date"]
    assert {d["name"] for d in answer["declarations"]} == {t["name"] for t in answer["tools"]}
    assert all("input_schema" in d for d in answer["declarations"])  # Anthropic's shape


def test_a_read_of_a_completed_run_is_one_outcome_and_done(
    sidecar: SidecarProcess, connect: Connect, run_id: str
) -> None:
    alice = connect("alice-demo-token")
    alice.start_run(run_id=run_id)
    alice.submit_calls(run_id, "t1", tool_call("w", "get_weather", WEATHER))
    alice.submit_turn(run_id=run_id, turn_id="t2", final=pb.FinalAnswer(text="sunny"))
    done = cli(sidecar, "alice-demo-token", "runs", "watch", run_id)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["turn t2: DONE, run COMPLETED: final answer"]
