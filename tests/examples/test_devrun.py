"""`make run` with a busy port or a bad variable: one line naming the port and the way out."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator

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
    return subprocess.run([sys.executable, "-m", "examples.devrun"], capture_output=True,
                          text=True, timeout=120, cwd=ROOT,
                          env={**os.environ, "CALLGATE_RUN_ONCE": "1", **env})


def test_a_busy_travel_port_is_named_with_its_variable(busy_port: int) -> None:
    done = make_run(CALLGATE_TRAVEL_PORT=str(busy_port))
    assert done.returncode == 2
    assert done.stderr.strip() == (
        f"make run: port {busy_port} (the example travel service) is in use: stop what holds "
        f"it, or choose another port, e.g. CALLGATE_TRAVEL_PORT={busy_port + 1} make run")


def test_a_busy_sidecar_port_is_named_with_its_variable(busy_port: int) -> None:
    done = make_run(CALLGATE_TRAVEL_PORT="0", CALLGATE_LISTEN=f"127.0.0.1:{busy_port}")
    assert done.returncode == 2
    line = done.stderr.strip()
    assert line.startswith(f"make run: port {busy_port} (the sidecar, 127.0.0.1:{busy_port})")
    assert f"CALLGATE_LISTEN=127.0.0.1:{busy_port + 1} make run" in line


@pytest.mark.parametrize("env,expected", [
    ({"CALLGATE_TRAVEL_PORT": "abc"}, "CALLGATE_TRAVEL_PORT='abc': expected a port number"),
    ({"CALLGATE_TRAVEL_PORT": "0", "CALLGATE_LISTEN": "localhost"},
     "CALLGATE_LISTEN='localhost': expected HOST:PORT"),
])
def test_bad_variables_are_one_line(env: dict[str, str], expected: str) -> None:
    done = make_run(**env)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert len(done.stderr.splitlines()) == 1
    assert done.stderr.startswith(f"make run: {expected}")
