"""`callgate tools import`: one manifest per tool of an MCP server, from its `tools/list`.

    callgate tools import --mcp-servers FILE --server NAME --out DIR [--read TOOL,...]

Each manifest keeps the tool's name, description, input schema and output schema, and calls
it with `executor: {type: mcp}`. A server's annotations are hints, not facts: every tool is
`effect: write` unless named with `--read`. The hints (`readOnlyHint`, `destructiveHint`,
`idempotentHint`, `openWorldHint`) and where the tool came from are kept as labels, which the
policy sees as `input.tool.labels` (`mcp.server`, `mcp.tool`, `mcp.readOnlyHint`, ...).
`version` is a digest of what the server listed, so a changed tool gets a new version (and
approvals bound to the old one no longer match). Every manifest is loaded as `serve` would
load it; a tool callgate refuses (a schema it cannot use, say) is named and not written, and
the command then exits 1.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

import mcp_types as types
import yaml

from gateway.errors import ConfigError
from gateway.executors.mcp_servers import load_servers
from gateway.executors.mcp_sessions import McpSessions, ServerLink, StartFailed, describe
from gateway.tools import Registry

HINTS = ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")
MAX_PAGES = 100
LIST_TIMEOUT_S = 30.0


async def listed_tools(link: ServerLink) -> list[types.Tool]:
    """Every tool the server lists (all pages)."""
    async with asyncio.timeout(LIST_TIMEOUT_S):
        conn = await link.connection()
        assert conn.session is not None
        tools: list[types.Tool] = []
        cursor: str | None = None
        for _ in range(MAX_PAGES):
            params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
            page = await conn.session.list_tools(params=params)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                return tools
    raise ConfigError(f"MCP server {link.name!r} listed more than {MAX_PAGES} pages of tools")


def manifest_name(tool: str) -> str:
    """A manifest name for an MCP tool name (which may hold characters manifests do not)."""
    name = re.sub(r"[^A-Za-z0-9_-]", "_", tool)[:64]
    return name or "tool"


def labels(server: str, tool: types.Tool) -> dict[str, str]:
    found = {"source": f"mcp:{server}", "mcp.server": server, "mcp.tool": tool.name}
    hints = tool.annotations.model_dump(by_alias=True) if tool.annotations else {}
    for hint in HINTS:
        value = hints.get(hint)
        if isinstance(value, bool):
            found[f"mcp.{hint}"] = "true" if value else "false"
    return found


def manifest(server: str, tool: types.Tool, *, read: bool) -> dict[str, Any]:
    listed = tool.model_dump(mode="json", by_alias=True, exclude_none=True)
    digest = hashlib.sha256(json.dumps(listed, sort_keys=True).encode()).hexdigest()[:12]
    name = manifest_name(tool.name)
    executor: dict[str, Any] = {"type": "mcp", "server": server}
    if name != tool.name:
        executor["tool"] = tool.name
    found: dict[str, Any] = {
        "name": name,
        "version": f"mcp-{digest}",
        "description": tool.description or "",
        "effect": "read" if read else "write",
        "input_schema": tool.input_schema,
    }
    if tool.output_schema is not None:
        found["output_schema"] = tool.output_schema
    return {**found, "executor": executor, "labels": labels(server, tool)}


def _refused(manifests: list[dict[str, Any]], sessions: McpSessions) -> dict[str, str]:
    """Manifest name → why callgate refuses it, each loaded as serve loads manifests."""
    refused = {}
    for m in manifests:
        try:
            Registry.from_manifests([m], source=Path(f"{m['name']}.yaml"), env={}, mcp=sessions)
        except ConfigError as exc:
            refused[m["name"]] = str(exc)
    return refused


async def _import(ns: argparse.Namespace) -> int:
    servers = load_servers(ns.mcp_servers, os.environ)
    if ns.server not in servers:
        raise ConfigError(
            f"--server {ns.server}: not in {ns.mcp_servers} "
            f"(declared: {', '.join(sorted(servers)) or 'none'})"
        )
    sessions = McpSessions({ns.server: servers[ns.server]}, source=str(ns.mcp_servers))
    link = sessions.link(ns.server)
    assert link is not None
    try:
        tools = await listed_tools(link)
    except StartFailed as exc:
        raise ConfigError(f"--server {ns.server}: {exc}") from exc
    except ConfigError:
        raise
    except Exception as exc:  # TimeoutError, the SDK's MCPError, an answer it cannot read
        raise ConfigError(
            f"--server {ns.server}: could not list its tools: {describe(exc)}"
        ) from exc
    finally:
        await sessions.aclose()
    return _write(ns, tools, sessions)


def _write(ns: argparse.Namespace, tools: list[types.Tool], sessions: McpSessions) -> int:
    unknown = sorted(set(ns.read) - {t.name for t in tools})
    if unknown:
        raise ConfigError(f"--read {unknown[0]}: MCP server {ns.server!r} lists no such tool")
    made = [manifest(ns.server, t, read=t.name in ns.read) for t in tools]
    names = [m["name"] for m in made]
    if len(set(names)) != len(names):
        raise ConfigError(
            "two tools map to one manifest name: "
            + ", ".join(sorted({n for n in names if names.count(n) > 1}))
        )
    refused = _refused(made, sessions)
    ns.out.mkdir(parents=True, exist_ok=True)
    for m in made:
        if m["name"] in refused:
            tool = m["executor"].get("tool", m["name"])
            print(f"tool {tool!r} not imported: {refused[m['name']]}", file=sys.stderr)
            continue
        path = ns.out / f"{m['name']}.yaml"
        path.write_text(yaml.safe_dump(m, sort_keys=False, allow_unicode=True), encoding="utf-8")
        print(f"{path}: {m['effect']} {m['name']} {m['version']}")
    return 1 if refused else 0


def run_import(ns: argparse.Namespace) -> int:
    for flag in ("mcp_servers", "server", "out"):
        if getattr(ns, flag, None) is None:
            raise ConfigError(f"tools import needs --{flag.replace('_', '-')}")
    return asyncio.run(_import(ns))
