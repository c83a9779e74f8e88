"""The PostgreSQL store's quotas: reservations inside a write transaction, exact across
replicas (every key's row is locked, in key order, before its window is summed: a concurrent
reservation of the key waits for this transaction, then counts what it reserved), giving back,
and the operators' reads and resets (`PgQuotas`, a part of `PostgresStore`)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

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
from gateway.store.pg_coordination import Conn
from gateway.store.pg_writes import Write
from gateway.store.quota_book import Book, settling

PREFIX = "starts_with(k.quota_key, %s::text) AND %s::text IS NOT NULL"


def _typed(sql_type: str) -> str:
    return f"%s::{sql_type}"


async def _rows(conn: Conn, sql: str, args: Sequence[object]) -> list[Any]:
    return list(await (await conn.execute(sql, args)).fetchall())


@dataclass
class Settled:
    """What `settle` leaves the commit: the writes for its one statement, and whether the
    audit chain's lock is held already (taken right after the keys' locks)."""

    writes: list[Write]
    audit_locked: bool = False


async def settle(
    conn: Conn,
    entries: Sequence[Together],
    back: Sequence[CallRecord] = (),
    *,
    audit_lock: int | None = None,
) -> Settled:
    """The commit's quotas (`gateway.store.quota_book`): every key charged or given back
    locked (a row lock held to the end of the transaction) and read, the expired and
    given-back reservations removed, each entry's reservations kept or refused (all or none
    of each: a refused one is marked). `audit_lock`: the audit chain's advisory lock, taken in
    the same statement once every key is locked (keys, then the chain: the order every commit
    takes them in), saving the commit a round trip."""

    def locking(query: str, args: list[Any]) -> tuple[str, list[Any]]:
        if audit_lock is None:
            return query, args
        return (  # (the chain's lock reads every key row first: taken after)
            f"WITH k AS ({query}), chain AS (SELECT pg_advisory_xact_lock(%s) FROM "
            "(SELECT count(*) FROM k) AS n) SELECT k.* FROM k, chain",
            [*args, audit_lock],
        )

    book = await reading.drive_async(
        settling(entries, back, "%s", locking), None, functools.partial(_rows, conn)
    )
    if not book.keys:  # nothing to settle: no statement ran
        return Settled([])
    return Settled(_writes(book), audit_lock is not None)


def _writes(book: Book) -> list[Write]:
    writes = []
    if book.rows:
        marks = ", ".join(["(%s, %s, %s, %s::float8, %s::float8, %s::float8)"] * len(book.rows))
        writes.append(
            Write(
                f"INSERT INTO quota_usage ({', '.join(quota_sql.USAGE_COLUMNS)}) VALUES {marks}",
                [v for r in book.rows for v in r],
            )
        )
    changed = book.totals()
    if changed:
        writes.append(
            Write(quota_sql.totals(_typed, len(changed)), [v for t in changed for v in t])
        )
    writes += [
        Write(quota_sql.less("%s"), (cost, count, key))
        for key, (cost, count) in book.unlocked.items()
    ]
    return writes


async def reserve(
    conn: Conn,
    reservations: Sequence[Reservation],
    back: Sequence[CallRecord] = (),
    *,
    audit_lock: int | None = None,
) -> Settled:
    """Every reservation (and the given-back calls' reservations returned), or QuotaExceeded
    for the first that does not fit (the caller's transaction then rolls back)."""
    entry = Together(reservations, ())
    settled = await settle(conn, [entry], back, audit_lock=audit_lock)
    if entry.refused is not None:
        raise entry.refused
    return settled


class _Host(Protocol):
    _reservations: GroupCommit[Together]

    @property
    def _audit_lock(self) -> int: ...

    def _tx(self, *, snapshot: bool = False) -> AbstractAsyncContextManager[Conn]: ...

    async def _write(
        self,
        conn: Conn,
        writes: Sequence[Write],
        events: Sequence[AuditEvent],
        *,
        settled: str = "",
        audit_locked: bool = False,
    ) -> list[int]: ...

    def _appended(self, events: Sequence[object]) -> None: ...


class PgQuotas:
    async def reserve_quotas(
        self: _Host, reservations: Sequence[Reservation], audit: Sequence[AuditEvent]
    ) -> None:
        """Committed with the reservations of other callers arriving together (one
        transaction and one round of the audit chain's lock for all)."""
        entry = Together(reservations, audit)
        await self._reservations.add([entry])
        if entry.refused is not None:
            raise entry.refused

    async def _commit_reservations(self: _Host, entries: list[Together]) -> None:
        kept = [a for e in entries for a in e.audit if isinstance(a, AuditEvent)]
        async with self._tx() as conn:
            done = await settle(conn, entries, audit_lock=self._audit_lock if kept else None)
            kept = [
                a
                for e in entries
                if e.refused is None
                for a in e.audit
                if isinstance(a, AuditEvent)
            ]
            await self._write(conn, done.writes, kept, audit_locked=done.audit_locked)
        self._appended(kept)

    async def quota_usage(self: _Host, quotas: Sequence[Quota], now: datetime) -> dict[str, float]:
        out: dict[str, float] = {}
        async with self._tx(snapshot=True) as conn:
            for q in quotas:
                cur = await conn.execute(quota_sql.used("%s"), (q.key, epoch(now) - q.window_s))
                found = await cur.fetchone()
                out[q.key] = float(found[0]) if found else 0.0
        return out

    async def list_quotas(
        self: _Host, prefix: str, *, after: str, limit: int, now: datetime
    ) -> list[QuotaState]:
        async with self._tx(snapshot=True) as conn:
            cur = await conn.execute(
                quota_sql.listing("%s", PREFIX), (epoch(now), after, prefix, prefix, limit)
            )
            return [quota_sql.state(r) for r in await cur.fetchall()]

    async def reset_quota(self: _Host, key: str, audit: Callable[[int], AuditEvent]) -> int | None:
        """Give back every reservation of the key (its row locked, as a reservation locks
        it), recorded by `audit(removed)`, in one commit; None when no reservation ever named
        the key."""
        async with self._tx() as conn:
            cur = await conn.execute(quota_sql.known("%s") + " FOR UPDATE", (key,))
            if await cur.fetchone() is None:
                return None
            removed = (await conn.execute(quota_sql.reset("%s"), (key,))).rowcount
            await conn.execute(quota_sql.zero("%s"), (key,))
            events = [audit(removed)]
            await self._write(conn, (), events)
        self._appended(events)
        return removed
