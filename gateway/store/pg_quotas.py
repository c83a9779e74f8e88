"""The PostgreSQL store's quotas: reservations inside a write transaction, exact across
replicas (every key's row is locked, in key order, before its window is summed: a concurrent
reservation of the key waits for this transaction, then counts what it reserved), giving back,
and the operators' reads and resets (`PgQuotas`, a part of `PostgresStore`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from datetime import datetime
from typing import Protocol

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
from gateway.store.pg_coordination import Conn
from gateway.store.pg_writes import Write

PREFIX = "starts_with(k.quota_key, %s::text) AND %s::text IS NOT NULL"


def _sums(reservations: Sequence[Reservation]) -> tuple[str, list[object]]:
    """Each (key, window start)'s usage, one statement: (key, start, used) rows."""
    pairs = sorted({(r.quota.key, quota_sql.start(r)) for r in reservations})
    values = ", ".join(["(%s::text, %s::float8)"] * len(pairs))
    return (
        f"SELECT v.k, v.s, COALESCE(SUM(u.cost), 0) FROM (VALUES {values}) AS v(k, s) "
        "LEFT JOIN quota_usage u ON u.quota_key = v.k AND u.reserved_at > v.s "
        "GROUP BY v.k, v.s",
        [x for p in pairs for x in p],
    )


def _inserts(rows: Sequence[tuple[object, ...]], keys: Sequence[str], now: float) -> list[Write]:
    """The accepted reservations inserted, and the keys' expired ones removed: writes of the
    commit's one statement."""
    prune = Write(
        "DELETE FROM quota_usage WHERE quota_key = ANY(%s) AND expires_at <= %s", [list(keys), now]
    )
    if not rows:
        return [prune]
    marks = ", ".join(["(%s, %s, %s, %s::float8, %s::float8, %s::float8)"] * len(rows))
    return [
        prune,
        Write(
            f"INSERT INTO quota_usage ({', '.join(quota_sql.USAGE_COLUMNS)}) VALUES {marks}",
            [v for r in rows for v in r],
        ),
    ]


async def reserve_each(conn: Conn, entries: Sequence[Together]) -> list[Write]:
    """Each entry's reservations, all or none of each (one that does not fit is marked
    refused): every key locked first, in key order, then every window summed at once and
    the entries decided in order. Answers the writes that record the accepted ones."""
    everything = in_order([r for e in entries for r in e.reservations])
    if not everything:
        return []
    await conn.execute(*quota_sql.lock_keys(everything, "%s"))
    query, args = _sums(everything)
    base = {
        (str(k), float(t)): float(u)
        for k, t, u in await (await conn.execute(query, args)).fetchall()
    }
    added: dict[str, float] = {}
    rows: list[tuple[object, ...]] = []
    for e in entries:
        trial, mine = dict(added), []
        for r in in_order(e.reservations):
            used = base[(r.quota.key, quota_sql.start(r))] + trial.get(r.quota.key, 0.0)
            if over(r.quota, used):
                e.refused = await _refusal(conn, r, used, added.get(r.quota.key, 0.0))
                break
            trial[r.quota.key] = trial.get(r.quota.key, 0.0) + r.quota.cost
            mine.append(quota_sql.row(r))
        if e.refused is None:
            added, rows = trial, [*rows, *mine]
    return _inserts(rows, sorted({r.quota.key for r in everything}), epoch(everything[0].at))


async def _refusal(conn: Conn, r: Reservation, used: float, pending: float) -> QuotaExceeded:
    window = [
        (float(c), from_epoch(float(t)))
        for c, t in await (
            await conn.execute(quota_sql.window("%s"), (r.quota.key, quota_sql.start(r)))
        ).fetchall()
    ]
    if pending:
        window.append((pending, r.at))
    return QuotaExceeded(r.run_id, r.call_id, r.quota, used, frees_at(r.quota, used, window))


async def reserve(conn: Conn, reservations: Sequence[Reservation]) -> list[Write]:
    """Every reservation, or QuotaExceeded for the first that does not fit (the caller's
    transaction then rolls back); answers the writes to add to the commit."""
    entry = Together(reservations, ())
    writes = await reserve_each(conn, [entry])
    if entry.refused is not None:
        raise entry.refused
    return writes


def give_back(calls: Sequence[CallRecord], expect: Sequence[CallRecord]) -> list[Write]:
    """The write (one statement of the commit) that gives back what these calls reserved."""
    pairs = given_back(calls, expect)
    if not pairs:
        return []
    return [Write(quota_sql.give_back("%s", len(pairs)), [v for p in pairs for v in p])]


class _Host(Protocol):
    _reservations: GroupCommit[Together]

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
            writes = await reserve_each(conn, entries)
            kept = [
                a
                for e in entries
                if e.refused is None
                for a in e.audit
                if isinstance(a, AuditEvent)
            ]
            await self._write(conn, writes, kept)
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
            events = [audit(removed)]
            await self._write(conn, (), events)
        self._appended(events)
        return removed
