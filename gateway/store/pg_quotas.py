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
    epoch,
    frees_at,
    from_epoch,
    given_back,
    in_order,
    over,
)
from gateway.store import quota_sql
from gateway.store.pg_coordination import Conn
from gateway.store.pg_writes import Write

PREFIX = "starts_with(k.quota_key, %s::text) AND %s::text IS NOT NULL"

# A key's usage summed and, when the cost fits, the reservation inserted: one round trip.
_RESERVE = (
    f"WITH used AS ({quota_sql.used('%s')}), "
    f"gone AS ({quota_sql.prune('%s')}), "
    f"added AS (INSERT INTO quota_usage ({', '.join(quota_sql.USAGE_COLUMNS)}) "
    "SELECT %s, %s, %s, %s::float8, %s::float8, %s::float8 FROM used "
    "WHERE used.total + %s::float8 <= %s::float8 RETURNING 1) "
    "SELECT used.total, (SELECT count(*) FROM added) FROM used"
)


async def reserve(conn: Conn, reservations: Sequence[Reservation]) -> None:
    """Every reservation, in key order, or QuotaExceeded for the first that does not fit
    (the caller's transaction then rolls back)."""
    if not reservations:
        return
    ordered = in_order(reservations)
    await conn.execute(*quota_sql.lock_keys(ordered, "%s"))
    for r in ordered:
        start = quota_sql.start(r)
        margin = r.quota.limit + 1e-9 * max(1.0, r.quota.limit)
        cur = await conn.execute(
            _RESERVE,
            (r.quota.key, start, r.quota.key, epoch(r.at), *quota_sql.row(r), r.quota.cost, margin),
        )
        found = await cur.fetchone()
        assert found is not None
        used, added = float(found[0]), int(found[1])
        if added == 1 and not over(r.quota, used):
            continue
        rows = await (await conn.execute(quota_sql.window("%s"), (r.quota.key, start))).fetchall()
        raise QuotaExceeded(
            r.run_id,
            r.call_id,
            r.quota,
            used,
            frees_at(r.quota, used, [(float(c), from_epoch(float(t))) for c, t in rows]),
        )


def give_back(calls: Sequence[CallRecord], expect: Sequence[CallRecord]) -> list[Write]:
    """The write (one statement of the commit) that gives back what these calls reserved."""
    pairs = given_back(calls, expect)
    if not pairs:
        return []
    return [Write(quota_sql.give_back("%s", len(pairs)), [v for p in pairs for v in p])]


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


class PgQuotas:
    async def reserve_quotas(
        self: _Host, reservations: Sequence[Reservation], audit: Sequence[AuditEvent]
    ) -> None:
        async with self._tx() as conn:
            await reserve(conn, reservations)
            await self._write(conn, (), audit)
        self._appended(audit)

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
