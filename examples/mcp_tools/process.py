"""Running an MCP server of the examples over streamable HTTP in a process of its own.

`start_http(module, db)` starts `python -m MODULE --db DB --http 127.0.0.1:PORT` (port 0: a
free one) and answers once it listens, with its URL; `HttpProcess.stop()` ends it. The notes
server is `examples.mcp_tools.server`.
"""

from __future__ import annotations

import select
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from gateway.executors.mcp_servers import HttpServer

ROOT = Path(__file__).resolve().parents[2]
NOTES = "examples.mcp_tools.server"
START_S = 60.0  # generous: a loaded machine starts Python slowly


@dataclass
class HttpProcess:
    process: subprocess.Popen[str]
    url: str

    def spec(self, name: str) -> HttpServer:
        return HttpServer(name, self.url, {}, START_S)

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()


def start_http(module: str, db: Path, port: int = 0) -> HttpProcess:
    """The server, listening; raises RuntimeError when it did not start."""
    process = subprocess.Popen(
        [sys.executable, "-m", module, "--db", str(db), "--http", f"127.0.0.1:{port}"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    ready, _, _ = select.select([process.stdout], [], [], START_S)
    line = process.stdout.readline() if ready else ""  # the server prints its URL first
    if not line.startswith("MCP server at "):
        process.kill()
        process.wait()
        process.stdout.close()
        raise RuntimeError(f"the MCP server did not start: {line!r}")
    return HttpProcess(process, line.removeprefix("MCP server at ").strip())
