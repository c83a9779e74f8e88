"""A live OPA for the benchmark's OPA-engine scenario, when this machine has one.

`CALLGATE_BENCH_OPA_URL` (or `CALLGATE_TEST_OPA_URL`) names a running OPA; otherwise an `opa`
binary on PATH is started on a free loopback port for the run. Without either the scenario is
not measured, and the report says so: the figure is never taken from a stand-in.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass

NOT_FOUND = "not measured: no OPA on this machine (put `opa` on PATH or set CALLGATE_BENCH_OPA_URL)"


@dataclass(frozen=True)
class LiveOpa:
    url: str
    pid: int | None  # the OPA process the benchmark started (its CPU is reported), if any
    what: str


@contextlib.contextmanager
def live_opa() -> Iterator[LiveOpa | None]:
    url = os.environ.get("CALLGATE_BENCH_OPA_URL") or os.environ.get("CALLGATE_TEST_OPA_URL")
    if url:
        yield LiveOpa(url.rstrip("/"), None, f"the OPA at {url} ({_version(url)})")
        return
    binary = shutil.which("opa")
    if binary is None:
        yield None
        return
    port = _free_port()
    proc = subprocess.Popen(
        [binary, "run", "--server", "--addr", f"127.0.0.1:{port}"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        url = f"http://127.0.0.1:{port}"
        _wait_healthy(url, proc)
        yield LiveOpa(url, proc.pid, f"`opa run --server` child process ({_version(url)})")
    finally:
        proc.terminate()
        proc.wait(30)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _wait_healthy(url: str, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"opa run exited with {proc.returncode}")
        with contextlib.suppress(OSError):
            with urllib.request.urlopen(f"{url}/health", timeout=2) as answer:
                if answer.status == 200:
                    return
        time.sleep(0.05)  # polling a starting child with a deadline
    raise RuntimeError("opa run did not answer /health within 30 s")


def _version(url: str) -> str:
    try:
        with urllib.request.urlopen(f"{url}/v1/data?provenance=true", timeout=5) as answer:
            return "OPA " + str(json.load(answer).get("provenance", {}).get("version", "?"))
    except (OSError, ValueError):
        return "version unknown"
