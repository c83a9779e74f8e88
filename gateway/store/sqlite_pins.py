"""The SQLite store's tool pins (`SQLitePins`, a part of `SQLiteStore`; docs/tools.md,
"Pinned definitions")."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from typing import Protocol, TypeVar

from gateway.audit.records import AuditEvent
from gateway.pins import SeenDefinition, ToolPin
from gateway.store import pin_sql
from gateway.store.sqlite_connections import Connections

T = TypeVar("T")


class _Host(Protocol):
    _db: Connections

    async def _write(self, fn: Callable[[sqlite3.Connection], T], *, sync: bool = True) -> T: ...

    def _append_audit(self, conn: sqlite3.Connection, events: Sequence[AuditEvent]) -> None: ...

    def _appended(self, events: Sequence[object]) -> None: ...


def _pins(conn: sqlite3.Connection, names: Sequence[str] | None) -> dict[str, ToolPin]:
    query = pin_sql.pins("?", None if names is None else len(names))
    rows = conn.execute(query, () if names is None else tuple(names)).fetchall()
    return {p.name: p for p in map(pin_sql.pin_from, rows)}


class SQLitePins:
    async def tool_pins(self: _Host, names: Sequence[str] | None = None) -> dict[str, ToolPin]:
        if names is not None and not names:
            return {}
        return await self._db.here(lambda: _pins(self._db.conn, names))

    async def tool_definitions(
        self: _Host, names: Sequence[str] | None = None
    ) -> list[SeenDefinition]:
        def read() -> list[SeenDefinition]:
            query = pin_sql.definitions("?", None if names is None else len(names))
            rows = self._db.conn.execute(query, () if names is None else tuple(names))
            return [pin_sql.seen_from(r) for r in rows.fetchall()]

        if names is not None and not names:
            return []
        return await self._db.here(read)

    async def record_definitions(
        self: _Host,
        seen: Sequence[SeenDefinition],
        audit: Callable[[Sequence[ToolPin]], Sequence[AuditEvent]],
    ) -> dict[str, ToolPin]:
        def tx(conn: sqlite3.Connection) -> tuple[dict[str, ToolPin], list[AuditEvent]]:
            conn.execute(*pin_sql.record_definitions("?", seen))
            first = [
                ToolPin(s.name, s.fingerprint, s.definition_json, s.first_seen_at) for s in seen
            ]
            made = {r[0] for r in conn.execute(*pin_sql.pin_first("?", first)).fetchall()}
            events = list(audit([p for p in first if p.name in made]))
            self._append_audit(conn, events)
            return _pins(conn, [s.name for s in seen]), events

        if not seen:
            return {}
        pins, events = await self._write(tx)
        self._appended(events)
        return pins

    async def approve_pin(
        self: _Host, pin: ToolPin, audit: Callable[[ToolPin], Sequence[AuditEvent]]
    ) -> ToolPin | None:
        def tx(conn: sqlite3.Connection) -> tuple[ToolPin | None, list[AuditEvent]]:
            row = conn.execute(pin_sql.definition_of("?"), (pin.name, pin.fingerprint)).fetchone()
            if row is None:
                return None, []
            conn.execute(pin_sql.repin("?"), pin_sql.pin_row(pin))
            events = list(audit(pin))
            self._append_audit(conn, events)
            return _pins(conn, [pin.name])[pin.name], events

        stored, events = await self._write(tx)
        self._appended(events)
        return stored
