"""`make run`: what it starts and says it uses, the demo it runs, and with a busy port or a bad
variable one line naming the port or the variable and the way out."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.paths import ROOT


@pytest.fixture
def busy_port() -> Iterator[int]:
    """A loopback port some other program is listening on."""
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        yield holder.getsockname()[1]


def make_run(**env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "examples.devrun"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env={**os.environ, "CALLGATE_RUN_ONCE": "1", **env},
    )


def test_a_busy_travel_port_is_named_with_its_variable(busy_port: int) -> None:
    done = make_run(CALLGATE_TRAVEL_PORT=str(busy_port))
    assert done.returncode == 2
    assert done.stderr.strip() == (
        f"make run: port {busy_port} (the example travel service) is in use: stop what holds "
        f"it, or choose another port, e.g. CALLGATE_TRAVEL_PORT={busy_port + 1} make run"
    )


def test_a_busy_sidecar_port_is_named_with_its_variable(busy_port: int) -> None:
    done = make_run(CALLGATE_TRAVEL_PORT="0", CALLGATE_LISTEN=f"127.0.0.1:{busy_port}")
    assert done.returncode == 2
    line = done.stderr.strip()
    assert line.startswith(f"make run: port {busy_port} (the sidecar, 127.0.0.1:{busy_port})")
    assert f"CALLGATE_LISTEN=127.0.0.1:{busy_port + 1} make run" in line


FREE = {
    "CALLGATE_TRAVEL_PORT": "0",
    "CALLGATE_WORKSHOP_PORT": "0",
    "CALLGATE_LISTEN": "127.0.0.1:0",
}


def test_make_run_says_what_it_uses_and_the_demo_passes(tmp_path: Path) -> None:
    done = make_run(**FREE, CALLGATE_DB=str(tmp_path / "run.db"))
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    uses = out[out.index("make run uses:") : out.index("callgate listening on")]
    for said in (
        "travel service    127.0.0.1:0 (CALLGATE_TRAVEL_PORT)",
        "workshop service  127.0.0.1:0 (CALLGATE_WORKSHOP_PORT)",
        "tools             the examples' five, from examples/travel/tools and "
        "examples/workshop/tools, copied into .callgate/tools (CALLGATE_TOOLS",
        "policies          policies (CALLGATE_POLICIES)",
        "identities        examples/auth.yaml (CALLGATE_AUTH)",
        f"run store         {tmp_path / 'run.db'} (CALLGATE_DB)",
    ):
        assert said in uses, uses
    # the demo's harder half: a write that waits for a person, and an answer that was lost
    assert "three seats wait for an owner's approval" in out and "approved by olga" in out
    assert "ok  approved, checked again and sent once" in out
    assert "ok  one reservation, never two" in out
    assert "0 failed" in out


def test_make_run_honours_the_serve_variables(tmp_path: Path) -> None:
    tools, policies = tmp_path / "tools", tmp_path / "policies"
    shutil.copytree(ROOT / "policies", policies)
    tools.mkdir()
    for folder in ("travel", "workshop"):
        for manifest in (ROOT / "examples" / folder / "tools").glob("*.yaml"):
            shutil.copy(manifest, tools / manifest.name)
    (tools / "get_weather.yaml").unlink()  # this set has no weather tool
    done = make_run(
        **FREE,
        CALLGATE_DB=str(tmp_path / "run.db"),
        CALLGATE_TOOLS=str(tools),
        CALLGATE_POLICIES=str(policies),
    )
    out = done.stdout
    assert f"tools             {tools} (CALLGATE_TOOLS)" in out
    assert f"policies          {policies} (CALLGATE_POLICIES)" in out
    assert "no tool named 'get_weather' is registered" in out  # the sidecar served these
    assert done.returncode == 1  # and the demo noticed: its weather outcomes differ


@pytest.mark.parametrize(
    "env,expected",
    [
        ({"CALLGATE_TRAVEL_PORT": "abc"}, "CALLGATE_TRAVEL_PORT='abc': expected a port number"),
        (
            {"CALLGATE_TRAVEL_PORT": "0", "CALLGATE_LISTEN": "localhost"},
            "CALLGATE_LISTEN='localhost': expected HOST:PORT",
        ),
        (
            {"CALLGATE_POLICIES": "/no/such/policies"},
            "CALLGATE_POLICIES='/no/such/policies': no such directory",
        ),
        (
            {"CALLGATE_TOOLS": "/no/such/tools"},
            "CALLGATE_TOOLS='/no/such/tools': no such directory",
        ),
        ({"CALLGATE_AUTH": "/no/auth.yaml"}, "CALLGATE_AUTH='/no/auth.yaml': no such file"),
    ],
)
def test_bad_variables_are_one_line(env: dict[str, str], expected: str) -> None:
    done = make_run(**env)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert len(done.stderr.splitlines()) == 1
    assert done.stderr.startswith(f"make run: {expected}")
