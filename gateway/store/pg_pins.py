"""The PostgreSQL store's tool pins (`PgPins`, a part of `PostgresStore`; docs/tools.md,
"Pinned definitions"). Replicas share them: the first definition any replica records is
the pin, and an approval on one replica is read by the others."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Protocol

from gateway.audit.records import AuditEvent
from gateway.pins import SeenDefinition, ToolPin
from gateway.store import pin_sql
from gateway.store.pg_coordination import Conn
from gateway.store.pg_writes import Write


class _Host(Protocol):
    def _tx(self, *, snapshot: bool = False) -> AbstractAsyncContextManager[Conn]: ...

    async def _write(
        self,
        conn: Conn,
        writes: Sequence[Write],
        events: Sequence[AuditEvent],
        *,
        settled: str = "",
    ) -> list[int]: ...

    def _appended(self, events: Sequence[object]) -> None: ...


async def _pins(conn: Conn, names: Sequence[str] | None) -> dict[str, ToolPin]:
    query = pin_sql.pins("%s", None if names is None else len(names))
    cur = await conn.execute(query, () if names is None else tuple(names))
    return {p.name: p for p in map(pin_sql.pin_from, await cur.fetchall())}


class PgPins:
    async def tool_pins(self: _Host, names: Sequence[str] | None = None) -> dict[str, ToolPin]:
        if names is not None and not names:
            return {}
        async with self._tx(snapshot=True) as conn:
            return await _pins(conn, names)

    async def tool_definitions(
        self: _Host, names: Sequence[str] | None = None
    ) -> list[SeenDefinition]:
        if names is not None and not names:
            return []
        async with self._tx(snapshot=True) as conn:
            query = pin_sql.definitions("%s", None if names is None else len(names))
            cur = await conn.execute(query, () if names is None else tuple(names))
            return [pin_sql.seen_from(r) for r in await cur.fetchall()]

    async def record_definitions(
        self: _Host,
        seen: Sequence[SeenDefinition],
        audit: Callable[[Sequence[ToolPin]], Sequence[AuditEvent]],
    ) -> dict[str, ToolPin]:
        if not seen:
            return {}
        async with self._tx() as conn:
            await conn.execute(*pin_sql.record_definitions("%s", seen))
            first = [
                ToolPin(s.name, s.fingerprint, s.definition_json, s.first_seen_at) for s in seen
            ]
            cur = await conn.execute(*pin_sql.pin_first("%s", first))
            made = {r[0] for r in await cur.fetchall()}
            events = list(audit([p for p in first if p.name in made]))
            if events:
                await self._write(conn, (), events)
            pins = await _pins(conn, [s.name for s in seen])
        self._appended(events)
        return pins

    async def approve_pin(
        self: _Host, pin: ToolPin, audit: Callable[[ToolPin], Sequence[AuditEvent]]
    ) -> ToolPin | None:
        async with self._tx() as conn:
            cur = await conn.execute(pin_sql.definition_of("%s"), (pin.name, pin.fingerprint))
            if await cur.fetchone() is None:
                return None
            await conn.execute(pin_sql.repin("%s"), pin_sql.pin_row(pin))
            events = list(audit(pin))
            await self._write(conn, (), events)
            stored = (await _pins(conn, [pin.name]))[pin.name]
        self._appended(events)
        return stored
