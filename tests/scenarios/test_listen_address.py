"""One owner per listening address: a second `callgate serve` (or `make run`) on a taken
address refuses to start with one clear line, never a traceback."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from examples.travel.service import TravelService
from gateway.testing import run_serve_expecting_failure
from tests.support.paths import AUTH, POLICIES, ROOT
from tests.support.sidecars import own_sidecar


def test_a_second_serve_on_the_same_address_refuses_to_start(
    tmp_path: Path, travel: TravelService, tools_dir: Path, effects_db: Path
) -> None:
    with own_sidecar(tmp_path, travel, tools_dir, effects_db) as first:
        code, output = run_serve_expecting_failure(
            [
                "--listen",
                first.target,
                "--tools",
                str(tools_dir),
                "--policies",
                str(POLICIES),
                "--db",
                str(tmp_path / "second.db"),
                "--auth",
                str(AUTH),
            ],
            timeout_s=60,
            env={"CALLGATE_TRAVEL_URL": travel.url},
        )
    assert code != 0, output
    assert "--listen" in output and first.target in output
    assert "Traceback" not in output


@pytest.fixture
def taken_port() -> Iterator[int]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


def devrun(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "examples.devrun"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env={
            **os.environ,
            "CALLGATE_RUN_ONCE": "1",
            "CALLGATE_DB": str(tmp_path / "run.db"),
            **env,
        },
    )


def test_make_run_with_the_travel_port_taken_says_so(tmp_path: Path, taken_port: int) -> None:
    done = devrun(tmp_path, CALLGATE_TRAVEL_PORT=str(taken_port), CALLGATE_LISTEN="127.0.0.1:0")
    output = done.stdout + done.stderr
    assert done.returncode != 0, output
    assert str(taken_port) in output and "Traceback" not in output


def test_make_run_with_the_sidecar_port_taken_says_so(tmp_path: Path, taken_port: int) -> None:
    done = devrun(tmp_path, CALLGATE_TRAVEL_PORT="0", CALLGATE_LISTEN=f"127.0.0.1:{taken_port}")
    output = done.stdout + done.stderr
    assert done.returncode != 0, output
    assert str(taken_port) in output and "Traceback" not in output


def test_a_taken_port_is_one_line_of_callgate_and_leaves_no_files(
    tmp_path: Path, taken_port: int
) -> None:
    state = tmp_path / "state"
    state.mkdir()
    code, output = run_serve_expecting_failure(
        [
            "--listen",
            f"127.0.0.1:{taken_port}",
            "--tools",
            str(ROOT / "examples" / "travel" / "tools"),
            "--policies",
            str(POLICIES),
            "--db",
            str(state / "cg.db"),
            "--auth",
            str(AUTH),
        ]
    )
    assert code == 2
    # nothing of gRPC's own logging (its C core's "E1201 ... add_port.cc" line) comes first
    assert output.splitlines() == [
        f"callgate serve: --listen 127.0.0.1:{taken_port}: the address is in use (another "
        "callgate, or another program, listens there): stop it, or choose another --listen "
        "(CALLGATE_LISTEN)"
    ], output
    assert list(state.iterdir()) == []  # no store, no audit key, no lock files


@pytest.mark.parametrize("problem", ["policy", "manifest"])
def test_a_failed_start_up_leaves_no_files_behind(tmp_path: Path, problem: str) -> None:
    state, policies, tools = tmp_path / "state", tmp_path / "policies", tmp_path / "tools"
    for folder in (state, policies, tools):
        folder.mkdir()
    for source in POLICIES.glob("*"):
        (policies / source.name).write_text(source.read_text())
    for source in (ROOT / "examples" / "travel" / "tools").glob("*.yaml"):
        (tools / source.name).write_text(source.read_text())
    if problem == "policy":
        (policies / "broken.rego").write_text("package callgate\n\nx if {\n")
    else:
        (tools / "broken.yaml").write_text("name: broken\n")
    code, output = run_serve_expecting_failure(
        [
            "--listen",
            "127.0.0.1:0",
            "--tools",
            str(tools),
            "--policies",
            str(policies),
            "--db",
            str(state / "cg.db"),
            "--auth",
            str(AUTH),
        ]
    )
    assert code == 2 and "Traceback" not in output
    assert "created the audit key" not in output
    assert list(state.iterdir()) == []


def test_a_store_that_fails_to_open_leaves_only_what_was_there(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    (state / "cg.db").write_text("not a database")  # the operator's file: never removed
    code, output = run_serve_expecting_failure(
        [
            "--listen",
            "127.0.0.1:0",
            "--tools",
            str(ROOT / "examples" / "travel" / "tools"),
            "--policies",
            str(POLICIES),
            "--db",
            str(state / "cg.db"),
            "--auth",
            str(AUTH),
        ]
    )
    assert code != 0 and "Traceback" not in output
    assert sorted(p.name for p in state.iterdir()) == ["cg.db"]
    assert (state / "cg.db").read_text() == "not a database"
