"""Running MCP servers for tests: the notes example and the hostile server, over stdio (a
servers-file entry) or streamable HTTP (a process on loopback, its URL read from its first
line), and registries whose tools call them."""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from examples.mcp_tools.process import HttpProcess, start_http
from gateway.executors.mcp_servers import ServerSpec, StdioServer
from gateway.executors.mcp_sessions import McpSessions
from gateway.tools import Registry
from tests.support.paths import ROOT

NOTES = "examples.mcp_tools.server"
HOSTILE = "tests.support.mcp_hostile"
START_S = 60.0  # generous: a loaded machine starts Python slowly


def stdio(name: str, module: str, db: Path, **extra: Any) -> StdioServer:
    return StdioServer(
        name, (sys.executable, "-m", module, "--db", str(db)), extra, str(ROOT), START_S
    )


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
