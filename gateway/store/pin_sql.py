"""The statements of tool pins, shared by both stores (`mark`: each store's placeholder).

`tool_definitions` keeps every definition of a tool a sidecar served, once per (name,
fingerprint); `tool_pins` each tool's approved fingerprint. A tool is pinned to the first
definition any sidecar recorded (an insert that does nothing when a pin exists: of two
replicas pinning at once, the first commit wins and the other reads it).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from gateway.model import rfc3339
from gateway.pins import SeenDefinition, ToolPin

DEFINITION_COLUMNS = ("name", "fingerprint", "definition_json", "first_seen_at")
PIN_COLUMNS = ("name", "fingerprint", "pinned_at", "pinned_by", "reason")


def _rows(mark: str, width: int, count: int) -> str:
    row = "(" + ", ".join([mark] * width) + ")"
    return ", ".join([row] * count)


def record_definitions(mark: str, seen: Sequence[SeenDefinition]) -> tuple[str, list[Any]]:
    return (
        f"INSERT INTO tool_definitions ({', '.join(DEFINITION_COLUMNS)}) VALUES "
        f"{_rows(mark, len(DEFINITION_COLUMNS), len(seen))} "
        "ON CONFLICT (name, fingerprint) DO NOTHING",
        [v for s in seen for v in definition_row(s)],
    )


def pin_first(mark: str, pins: Sequence[ToolPin]) -> tuple[str, list[Any]]:
    """Pin each tool that has no pin yet; RETURNING the names pinned."""
    return (
        f"INSERT INTO tool_pins ({', '.join(PIN_COLUMNS)}) VALUES "
        f"{_rows(mark, len(PIN_COLUMNS), len(pins))} "
        "ON CONFLICT (name) DO NOTHING RETURNING name",
        [v for p in pins for v in pin_row(p)],
    )


def repin(mark: str) -> str:
    """Pin one tool to another fingerprint (an operator's approval)."""
    return (
        f"INSERT INTO tool_pins ({', '.join(PIN_COLUMNS)}) VALUES "
        f"{_rows(mark, len(PIN_COLUMNS), 1)} ON CONFLICT (name) DO UPDATE SET "
        "fingerprint = excluded.fingerprint, pinned_at = excluded.pinned_at, "
        "pinned_by = excluded.pinned_by, reason = excluded.reason"
    )


def definition_of(mark: str) -> str:
    return (
        f"SELECT definition_json FROM tool_definitions WHERE name = {mark} AND fingerprint = {mark}"
    )


def pins(mark: str, count: int | None) -> str:
    """The pins with their definitions: of `count` names, or every one (None)."""
    where = "" if count is None else f" WHERE p.name IN ({', '.join([mark] * count)})"
    return (
        "SELECT p.name, p.fingerprint, d.definition_json, p.pinned_at, p.pinned_by, p.reason "
        "FROM tool_pins p JOIN tool_definitions d "
        "ON d.name = p.name AND d.fingerprint = p.fingerprint" + where + " ORDER BY p.name"
    )


def definitions(mark: str, count: int | None) -> str:
    """Every definition seen: of `count` names, or of every tool (None); oldest first."""
    where = "" if count is None else f" WHERE name IN ({', '.join([mark] * count)})"
    return (
        f"SELECT {', '.join(DEFINITION_COLUMNS)} FROM tool_definitions"
        + where
        + " ORDER BY name, first_seen_at, fingerprint"
    )


def definition_row(s: SeenDefinition) -> tuple[Any, ...]:
    return (s.name, s.fingerprint, s.definition_json, rfc3339(s.first_seen_at))


def pin_row(p: ToolPin) -> tuple[Any, ...]:
    return (p.name, p.fingerprint, rfc3339(p.pinned_at), p.pinned_by, p.reason)


def _time(value: Any) -> datetime:
    return datetime.fromisoformat(str(value).replace("Z", "+00:00"))


def pin_from(row: Sequence[Any]) -> ToolPin:
    name, fingerprint, definition, at, by, reason = row
    return ToolPin(str(name), str(fingerprint), str(definition), _time(at), str(by), str(reason))


def seen_from(row: Sequence[Any]) -> SeenDefinition:
    name, fingerprint, definition, at = row
    return SeenDefinition(str(name), str(fingerprint), str(definition), _time(at))
