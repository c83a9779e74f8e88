"""A tool's definition as pins see it (`gateway.pins`): what its manifest gives and, for a
tool on an MCP server, the server's own `tools/list` entry of it (`listed`; null when the
server lists no such tool)."""

from __future__ import annotations

from typing import Any

from gateway.executors import ExecutorConfig, HttpExecutorConfig, McpExecutorConfig
from gateway.pins import definition_json, fingerprint_of
from gateway.tools.manifest import ToolManifest


def target(cfg: ExecutorConfig) -> dict[str, Any]:
    """Where the executor sends a call: never a header, a timeout or TLS files."""
    if isinstance(cfg, HttpExecutorConfig):
        return {"type": "http", "url": cfg.url}
    if isinstance(cfg, McpExecutorConfig):
        return {"type": "mcp", "server": cfg.server, "tool": cfg.tool}
    return {"type": "python", "function": cfg.function}


def manifest_definition(manifest: ToolManifest, mcp_tool: str) -> dict[str, Any]:
    """The definition's part a manifest gives (`mcp_tool`: the MCP tool it calls, or "")."""
    executor = target(manifest.executor)
    if mcp_tool:
        executor["tool"] = mcp_tool
    return {
        "name": manifest.name,
        "version": manifest.version,
        "description": manifest.description,
        "effect": manifest.effect.value,
        "input_schema": manifest.input_schema,
        "output_schema": manifest.output_schema,
        "executor": executor,
    }


class DefinitionUnavailable(Exception):
    """The tool's definition could not be read (its MCP server could not be reached or did
    not list its tools): it can be neither pinned nor checked now."""


def listed_definition(definition: dict[str, Any], entry: dict[str, Any] | None) -> dict[str, Any]:
    """The definition of a tool on an MCP server: the manifest's part and its server's entry."""
    return {**definition, "listed": entry}


class Defined:
    """A tool's definition: its fingerprint, and its canonical JSON written again when asked.
    Every call compares the fingerprint; the text is for the store (a definition not seen
    before) and for messages about a change, and kept for every tool it was 6 MB of a sidecar
    with 10,000 tools. The definition is not changed after (a manifest's, or a listing's)."""

    __slots__ = ("_definition", "fingerprint")

    def __init__(self, definition: dict[str, Any]) -> None:
        self._definition = definition
        self.fingerprint = fingerprint_of(definition_json(definition))

    @property
    def definition_json(self) -> str:
        return definition_json(self._definition)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Defined) and other.fingerprint == self.fingerprint

    def __hash__(self) -> int:
        return hash(self.fingerprint)

    def __repr__(self) -> str:
        return f"Defined({self.fingerprint!r})"


def defined(definition: dict[str, Any]) -> Defined:
    return Defined(definition)
