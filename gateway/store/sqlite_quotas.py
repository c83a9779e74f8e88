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
    QuotaExceeded,
    QuotaState,
    Reservation,
    Together,
    epoch,
    frees_at,
    from_epoch,
    given_back,
    in_order,
    over,
)
from gateway.store import quota_sql
from gateway.store.group import GroupCommit
from gateway.store.sqlite_connections import Connections

T = TypeVar("T")
PREFIX = "substr(k.quota_key, 1, length(?)) = ?"


def reserve(conn: sqlite3.Connection, reservations: Sequence[Reservation]) -> None:
    """Every reservation, in key order, or QuotaExceeded for the first that does not fit
    (the caller's transaction then rolls back)."""
    if not reservations:
        return
    ordered = in_order(reservations)
    conn.execute(*quota_sql.lock_keys(ordered, "?"))
    for key in {r.quota.key: r for r in ordered}.values():
        conn.execute(quota_sql.prune("?"), (key.quota.key, epoch(key.at)))
    for r in ordered:
        start = quota_sql.start(r)
        (used,) = conn.execute(quota_sql.used("?"), (r.quota.key, start)).fetchone()
        if over(r.quota, float(used)):
            rows = conn.execute(quota_sql.window("?"), (r.quota.key, start)).fetchall()
            raise QuotaExceeded(
                r.run_id,
                r.call_id,
                r.quota,
                float(used),
                frees_at(r.quota, float(used), [(float(c), from_epoch(float(t))) for c, t in rows]),
            )
        conn.execute(quota_sql.insert("?"), quota_sql.row(r))


def give_back(
    conn: sqlite3.Connection, calls: Sequence[CallRecord], expect: Sequence[CallRecord]
) -> None:
    pairs = given_back(calls, expect)
    if pairs:
        conn.execute(quota_sql.give_back("?", len(pairs)), [v for p in pairs for v in p])


def reserve_each(conn: sqlite3.Connection, entries: Sequence[Together]) -> list[AuditEvent]:
    """Each entry's reservations under a savepoint of its own (one that does not fit is
    rolled back alone, and marked refused); answers the audit records of those that fit."""
    kept: list[AuditEvent] = []
    for e in entries:
        conn.execute("SAVEPOINT quota")
        try:
            reserve(conn, e.reservations)
            kept += [a for a in e.audit if isinstance(a, AuditEvent)]
        except QuotaExceeded as exc:
            conn.execute("ROLLBACK TO quota")
            e.refused = exc
        conn.execute("RELEASE quota")
    return kept


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
            kept = reserve_each(conn, entries)
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
            events = [audit(removed)]
            self._append_audit(conn, events)
            return removed, events

        removed, events = await self._write(tx)
        self._appended(events)
        return removed
