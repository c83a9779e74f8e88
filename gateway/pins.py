"""Tool pins: a tool's fingerprint, the definition it hashes, and what changed between two.

A tool's definition is what the model and the executor see of it: name, version,
description, input and output schema, effect, the executor's target (type and URL, function,
or MCP server and tool; never a header or a secret) and, for a tool on an MCP server, the
server's own `tools/list` entry for it (without its `_meta`). Its fingerprint is
`sha256:` + the SHA-256 of the RFC 8785 canonical JSON of the definition.

The first definition seen of a tool is pinned in the store; a definition whose fingerprint is
not the pinned one is "changed" until an operator approves it (`callgate tools approve`).
`PinMode` says what a change does to the tool's calls: `off` (pins are neither recorded nor
checked), `warn` (calls go on; the change is logged and audited, and the policy sees
`input.tool.pinned` false) or `enforce` (calls are REJECTED `tool_changed`).
"""

from __future__ import annotations

import difflib
import hashlib
import json
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from gateway.canonical import canonical

FINGERPRINT_PREFIX = "sha256:"
SHORT_CHARS = 12  # of a fingerprint's hex, in messages
MAX_DIFF_LINES = 200


class PinMode(StrEnum):
    OFF = "off"
    WARN = "warn"
    ENFORCE = "enforce"


@dataclass(frozen=True)
class PinModes:
    """The mode for tools on MCP servers and for every other tool (`serve --pin-tools`)."""

    mcp: PinMode = PinMode.ENFORCE
    manifest: PinMode = PinMode.WARN

    @classmethod
    def parse(cls, text: str) -> PinModes:
        """`""` (the defaults), one mode for every tool, or `mcp=MODE,manifest=MODE`."""
        text = text.strip()
        if not text:
            return cls()
        if "=" not in text:
            mode = PinMode(text)
            return cls(mode, mode)
        found: dict[str, PinMode] = {}
        for part in text.split(","):
            kind, sep, value = part.partition("=")
            kind = kind.strip()
            if not sep or kind not in ("mcp", "manifest") or kind in found:
                raise ValueError(f"{part.strip()!r} is not mcp=MODE or manifest=MODE")
            found[kind] = PinMode(value.strip())
        default = cls()
        return cls(found.get("mcp", default.mcp), found.get("manifest", default.manifest))

    def of(self, on_mcp: bool) -> PinMode:
        return self.mcp if on_mcp else self.manifest

    def __str__(self) -> str:
        return f"mcp={self.mcp.value},manifest={self.manifest.value}"


@dataclass(frozen=True)
class ToolPin:
    """The approved definition of one tool: who pinned it (`pinned_by` "" when callgate
    pinned the first definition it saw), when and why."""

    name: str
    fingerprint: str
    definition_json: str
    pinned_at: datetime
    pinned_by: str = ""
    reason: str = ""


@dataclass(frozen=True)
class SeenDefinition:
    """A definition of a tool some sidecar served, first seen at `first_seen_at`."""

    name: str
    fingerprint: str
    definition_json: str
    first_seen_at: datetime


def definition_json(definition: dict[str, Any]) -> str:
    """The canonical JSON text of a definition (RFC 8785): what a fingerprint hashes."""
    return canonical(definition).decode()


def fingerprint_of(canonical: str) -> str:
    return FINGERPRINT_PREFIX + hashlib.sha256(canonical.encode()).hexdigest()


def short(fingerprint: str) -> str:
    """`sha256:0123456789ab`: enough of a fingerprint to tell it in a message."""
    return fingerprint[: len(FINGERPRINT_PREFIX) + SHORT_CHARS]


def changed_fields(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """The fields whose value differs (`mcp.description` inside an MCP server's entry)."""
    out: list[str] = []
    for key in sorted(set(before) | set(after)):
        old, new = before.get(key), after.get(key)
        if old == new:
            continue
        if isinstance(old, dict) and isinstance(new, dict) and key == "mcp":
            out += [f"mcp.{k}" for k in changed_fields(old, new)]
        else:
            out.append(key)
    return out


def read_definition(text: str) -> dict[str, Any]:
    """A stored definition (one callgate wrote); `{}` for one it cannot read."""
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def diff_text(before_json: str, after_json: str) -> str:
    """A unified diff of two stored definitions, pretty-printed (at most MAX_DIFF_LINES)."""

    def lines(text: str) -> list[str]:
        pretty = json.dumps(read_definition(text), indent=2, sort_keys=True, ensure_ascii=False)
        return pretty.splitlines()

    diff = list(
        difflib.unified_diff(
            lines(before_json), lines(after_json), "pinned", "serving", lineterm="", n=2
        )
    )
    if len(diff) > MAX_DIFF_LINES:
        diff = [*diff[:MAX_DIFF_LINES], f"... {len(diff) - MAX_DIFF_LINES} more lines"]
    return "\n".join(diff)


def change_message(name: str, pin: ToolPin, fingerprint: str, fields: list[str]) -> str:
    """Why a changed tool's call is held: what changed and who may let it run."""
    what = ", ".join(fields) or "its definition"
    by = f" by {pin.pinned_by}" if pin.pinned_by else ""
    return (
        f"tool {name!r} changed since its definition was pinned{by} "
        f"({short(pin.fingerprint)} → {short(fingerprint)}: {what}); its calls are held until "
        f"an operator approves the new definition (callgate tools pins; callgate tools approve "
        f"{name})"
    )
