"""The SQLite store's quotas: reservations inside a write transaction (serial across every
process sharing the file: SQLite's write lock), giving back, and the operators' reads and
resets (`SQLiteQuotas`, a part of `SQLiteStore`)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Protocol, TypeVar

from gateway.audit.records import AuditEvent
from gateway.model import CallRecord, Quota
from gateway.quotas import (
    QuotaState,
    Reservation,
    Together,
    epoch,
)
from gateway.store import quota_sql, reading
from gateway.store.group import GroupCommit
from gateway.store.quota_book import settling
from gateway.store.sqlite_connections import Connections

T = TypeVar("T")
PREFIX = "substr(k.quota_key, 1, length(?)) = ?"


def settle(
    conn: sqlite3.Connection,
    entries: Sequence[Together],
    back: Sequence[CallRecord] = (),
) -> None:
    """The commit's quotas (`gateway.store.quota_book.settling`), then the kept
    reservations and the keys' totals written (a refused entry's `refused` is set)."""
    book = reading.drive(
        settling(entries, back, "?"),
        None,
        lambda sql, args: conn.execute(sql, args).fetchall(),
    )
    if book.rows:
        conn.executemany(quota_sql.insert("?"), book.rows)
    changed = book.totals()
    if changed:
        conn.execute(quota_sql.totals(lambda _: "?", len(changed)), [v for t in changed for v in t])
    for key, (cost, count) in book.unlocked.items():
        conn.execute(quota_sql.less("?"), (cost, count, key))


def reserve(
    conn: sqlite3.Connection,
    reservations: Sequence[Reservation],
    back: Sequence[CallRecord] = (),
) -> None:
    """Every reservation (and the given-back calls' reservations returned), or QuotaExceeded
    for the first that does not fit (the caller's transaction then rolls back)."""
    entry = Together(reservations, ())
    settle(conn, [entry], back)
    if entry.refused is not None:
        raise entry.refused


class _Host(Protocol):
    _db: Connections
    _reservations: GroupCommit[Together]

    async def _write(self, fn: Callable[[sqlite3.Connection], T], *, sync: bool = True) -> T: ...

    def _append_audit(self, conn: sqlite3.Connection, events: Sequence[AuditEvent]) -> None: ...

    def _appended(self, events: Sequence[object]) -> None: ...


class SQLiteQuotas:
    async def reserve_quotas(
        self: _Host, reservations: Sequence[Reservation], audit: Sequence[AuditEvent]
    ) -> None:
        """Committed with the reservations of other callers arriving together (one
        transaction and one sync of the log for all, as audit appends are)."""
        entry = Together(reservations, audit)
        await self._reservations.add([entry])
        if entry.refused is not None:
            raise entry.refused

    async def _commit_reservations(self: _Host, entries: list[Together]) -> None:
        def tx(conn: sqlite3.Connection) -> list[AuditEvent]:
            settle(conn, entries)
            kept = [
                a
                for e in entries
                if e.refused is None
                for a in e.audit
                if isinstance(a, AuditEvent)
            ]
            self._append_audit(conn, kept)
            return kept

        self._appended(await self._write(tx))

    async def quota_usage(self: _Host, quotas: Sequence[Quota], now: datetime) -> dict[str, float]:
        def read() -> dict[str, float]:
            conn = self._db.conn
            return {
                q.key: float(
                    conn.execute(quota_sql.used("?"), (q.key, epoch(now) - q.window_s)).fetchone()[
                        0
                    ]
                )
                for q in quotas
            }

        return await self._db.here(read)

    async def list_quotas(
        self: _Host, prefix: str, *, after: str, limit: int, now: datetime
    ) -> list[QuotaState]:
        def read() -> list[QuotaState]:
            rows = self._db.conn.execute(
                quota_sql.listing("?", PREFIX), (epoch(now), after, prefix, prefix, limit)
            ).fetchall()
            return [quota_sql.state(r) for r in rows]

        return await self._db.here(read)

    async def reset_quota(self: _Host, key: str, audit: Callable[[int], AuditEvent]) -> int | None:
        """Give back every reservation of the key, recorded by `audit(removed)`, in one
        commit; None when no reservation ever named the key."""

        def tx(conn: sqlite3.Connection) -> tuple[int | None, list[AuditEvent]]:
            if conn.execute(quota_sql.known("?"), (key,)).fetchone() is None:
                return None, []
            removed = conn.execute(quota_sql.reset("?"), (key,)).rowcount
            conn.execute(quota_sql.zero("?"), (key,))
            events = [audit(removed)]
            self._append_audit(conn, events)
            return removed, events

        removed, events = await self._write(tx)
        self._appended(events)
        return removed
