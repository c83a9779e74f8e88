"""Test support that users of callgate need too: run a real sidecar process on a free port.

    with SidecarProcess(tools=..., policies=..., auth=..., db=...) as sidecar:
        client = sidecar.client(token)

The sidecar is the real `callgate serve` in a child process, listening on 127.0.0.1:0 (or a
unix socket); the bound address is read from its first line of output. `tls=ServeTLS(cert,
key, client_ca)` makes it listen with TLS (mutual TLS with a client CA); `client(token,
tls=ClientTLS(...))` connects with the caller's own trust roots and certificate. `audit_key`
is its `--audit-key-file` (required with a PostgreSQL store; replicas share one). `workers=N`
runs `serve --workers N` (the ready line is the supervisor's, once every worker is ready).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from gateway.client import GatewayClient
from gateway.tls import ClientTLS

READY = "callgate listening on "


class SidecarFailed(RuntimeError):
    """The sidecar exited before it was ready; carries its output."""

    def __init__(self, returncode: int, output: str) -> None:
        super().__init__(f"callgate serve exited with {returncode}:\n{output}")
        self.returncode = returncode
        self.output = output


@dataclass(frozen=True)
class ServeTLS:
    """The listener's certificate and key, and the CA its clients' certificates come from."""

    cert: Path
    key: Path
    client_ca: Path | None = None

    def args(self) -> list[str]:
        ca = ["--tls-client-ca", str(self.client_ca)] if self.client_ca else []
        return ["--tls-cert", str(self.cert), "--tls-key", str(self.key), *ca]


class SidecarProcess:
    def __init__(
        self,
        *,
        tools: Path,
        policies: Path,
        db: Path | str,
        auth: Path | None = None,
        listen: str = "127.0.0.1:0",
        extra_args: Sequence[str] = (),
        env: dict[str, str] | None = None,
        ready_timeout_s: float = 60.0,
        tls: ServeTLS | None = None,
        audit_key: Path | None = None,
        workers: int = 1,
    ) -> None:
        self.args = [
            sys.executable,
            "-m",
            "gateway.cli",
            "serve",
            "--listen",
            listen,
            "--tools",
            str(tools),
            "--policies",
            str(policies),
            "--db",
            str(db),
            *(["--auth", str(auth)] if auth else []),
            *(tls.args() if tls else []),
            *(["--audit-key-file", str(audit_key)] if audit_key else []),
            *(["--workers", str(workers)] if workers != 1 else []),
            *extra_args,
        ]
        self.env = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
        self.db = db
        self.ready_timeout_s = ready_timeout_s
        self.target = ""
        self.proc: subprocess.Popen[str] | None = None
        self.lines: list[str] = []
        self._ready = threading.Event()
        self._reader: threading.Thread | None = None

    def start(self) -> SidecarProcess:
        self.proc = subprocess.Popen(
            self.args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=self.env
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        if not self._ready.wait(self.ready_timeout_s) or not self.target:
            code = self.proc.wait(timeout=self.ready_timeout_s)
            self._reader.join()
            if self.proc.stdout is not None:
                self.proc.stdout.close()
            raise SidecarFailed(code, "".join(self.lines))
        return self

    def _read(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line)
            if line.startswith(READY) and not self.target:
                self.target = line.removeprefix(READY).strip()
                self._ready.set()
        self._ready.set()

    def client(
        self, token: str = "", *, tls: ClientTLS | None = None, timeout_s: float = 60.0
    ) -> GatewayClient:
        """A client of this sidecar (close it, or use it in a `with`)."""
        return GatewayClient(self.target, token, tls=tls, timeout_s=timeout_s)

    @property
    def output(self) -> str:
        return "".join(self.lines)

    def stop(self, *, kill: bool = False) -> int:
        """SIGTERM (graceful) or SIGKILL (a crash); answers the exit code."""
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL if kill else signal.SIGTERM)
        code = self.proc.wait(timeout=30)
        if self._reader is not None:
            self._reader.join(timeout=30)
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        return code

    def __enter__(self) -> SidecarProcess:
        return self.start()

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def run_serve_expecting_failure(
    args: Sequence[str], timeout_s: float = 60.0, env: dict[str, str] | None = None
) -> tuple[int, str]:
    """Run `callgate serve ARGS` that must refuse to start; answers (exit code, output)."""
    proc = subprocess.run(
        [sys.executable, "-m", "gateway.cli", "serve", *args],
        capture_output=True,
        text=True,
        timeout=timeout_s,
        env={**os.environ, **(env or {})},
    )
    return proc.returncode, proc.stdout + proc.stderr
