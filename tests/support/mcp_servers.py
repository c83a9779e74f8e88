"""Running MCP servers for tests: the notes example and the hostile server, over stdio (a
servers-file entry) or streamable HTTP (a process on loopback, its URL read from its first
line), and registries whose tools call them."""

from __future__ import annotations

import select
import subprocess
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gateway.executors import McpSessions
from gateway.executors.mcp_servers import HttpServer, ServerSpec, StdioServer
from gateway.tools import Registry
from tests.support.paths import ROOT

NOTES = "examples.mcp_tools.server"
HOSTILE = "tests.support.mcp_hostile"
START_S = 20.0


def stdio(name: str, module: str, db: Path, **extra: Any) -> StdioServer:
    return StdioServer(
        name, (sys.executable, "-m", module, "--db", str(db)), extra, str(ROOT), 15.0
    )


@dataclass
class HttpProcess:
    process: subprocess.Popen[str]
    url: str

    def spec(self, name: str) -> HttpServer:
        return HttpServer(name, self.url, {}, 15.0)

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


@contextmanager
def http_server(module: str, db: Path) -> Iterator[HttpProcess]:
    server = start_http(module, db)
    try:
        yield server
    finally:
        server.stop()


def registry(manifests: list[dict[str, Any]], servers: Mapping[str, ServerSpec]) -> Registry:
    return Registry.from_manifests(
        manifests, env={}, mcp=McpSessions(servers, source="servers.yaml")
    )


def mcp_manifest(
    name: str,
    *,
    server: str,
    effect: str = "read",
    tool: str | None = None,
    timeout_s: float = 10.0,
    **extra: Any,
) -> dict[str, Any]:
    executor: dict[str, Any] = {"type": "mcp", "server": server, "timeout_s": timeout_s}
    if tool is not None:
        executor["tool"] = tool
    return {
        "name": name,
        "version": "1",
        "effect": effect,
        "input_schema": {"type": "object"},
        "executor": executor,
        **extra,
    }
