"""The PostgreSQL store's reads (`PgReads`, a part of `PostgresStore`): runs, turns, calls,
approvals and the audit trail, each in a transaction on a pooled connection (a snapshot where
several statements must agree). The statements the two stores share are `reading`'s."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from datetime import datetime
from typing import Any, TypeVar

import psycopg
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from gateway.audit import hashing
from gateway.audit.records import AuditCheckpoint, AuditFilter, AuditRecord
from gateway.model import (
    ApprovalFilter,
    ApprovalRecord,
    CallRecord,
    PastCall,
    RunFilter,
    RunPage,
    RunRecord,
    RunSnapshot,
    RunView,
    TurnContext,
    TurnRecord,
)
from gateway.store import codecs, fragments, reading, schema
from gateway.store.fragments import select
from gateway.store.pg_coordination import Conn, unavailable
from gateway.store.reading import POSTGRES, Reader

T = TypeVar("T")

_RUN_AND_TURNS = fragments.run_and_turns("%s")
# (used?, pos, the past call): the run's last calls, then those of some IDs already used
_RECENT_AND_USED = (
    f"(SELECT false, pos, {', '.join(fragments.PAST_CALL_COLUMNS)} FROM calls WHERE run_id = %s "
    "ORDER BY pos DESC LIMIT %s) UNION ALL "
    f"(SELECT true, pos, {', '.join(fragments.PAST_CALL_COLUMNS)} FROM calls WHERE run_id = %s "
    f"AND call_id = ANY(%s) AND {fragments.NOT_DUPLICATE})"
)
UNSETTLED = (
    "SELECT (SELECT count(*) FROM approvals WHERE status = 'PENDING'), "
    "(SELECT count(*) FROM calls WHERE status = 'UNKNOWN')"
)


class PgReads:
    _pool: AsyncConnectionPool[Conn]

    @asynccontextmanager
    async def _tx(self, *, snapshot: bool = False) -> AsyncIterator[Conn]:
        """A transaction on a pooled connection; snapshot: read-only, one consistent view."""
        try:
            async with self._pool.connection() as conn, conn.transaction():
                if snapshot:
                    await conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                yield conn
        except (psycopg.Error, PoolTimeout) as exc:
            raise unavailable(exc) from exc

    @staticmethod
    async def _one(conn: Conn, query: str, args: Sequence[Any] = ()) -> tuple[Any, ...] | None:
        cur = await conn.execute(query, args)
        return await cur.fetchone()

    @staticmethod
    async def _all(conn: Conn, query: str, args: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        cur = await conn.execute(query, args)
        return await cur.fetchall()

    async def _drive(self, reader: Reader[T], *, snapshot: bool = False) -> T:
        async with self._tx(snapshot=snapshot) as conn:
            return await self._drive_on(conn, reader)

    async def _drive_on(self, conn: Conn, reader: Reader[T]) -> T:
        return await reading.drive_async(
            reader, lambda q, a: self._one(conn, q, a), lambda q, a: self._all(conn, q, a)
        )

    async def get_run(self, run_id: str) -> RunRecord | None:
        return await self._drive(reading.get_run(POSTGRES, run_id))

    async def list_runs(
        self, which: RunFilter, *, before: tuple[datetime, str] | None, limit: int
    ) -> list[RunRecord]:
        return await self._drive(reading.list_runs(POSTGRES, which, before=before, limit=limit))

    async def get_view(self, run_id: str) -> RunView | None:
        return await self._drive(reading.view(POSTGRES, run_id), snapshot=True)

    async def snapshot(self, run_id: str) -> RunSnapshot | None:
        return await self._drive(reading.snapshot(POSTGRES, run_id), snapshot=True)

    async def run_page(self, run_id: str, *, before: int | None, limit: int) -> RunPage | None:
        return await self._drive(
            reading.run_page(POSTGRES, run_id, before=before, limit=limit), snapshot=True
        )

    async def get_turn(self, run_id: str, turn_id: str) -> TurnRecord | None:
        return await self._drive(reading.get_turn(POSTGRES, run_id, turn_id))

    async def last_turn(self, run_id: str) -> TurnRecord | None:
        return await self._drive(reading.last_turn(POSTGRES, run_id))

    async def turn_calls(self, run_id: str, turn_id: str) -> list[CallRecord]:
        return await self._drive(reading.turn_calls(POSTGRES, run_id, turn_id))

    async def find_call(self, run_id: str, call_id: str) -> CallRecord | None:
        return await self._drive(reading.find_call(POSTGRES, run_id, call_id))

    async def recent_calls(self, run_id: str, limit: int) -> list[PastCall]:
        """The run's last `limit` calls, oldest first."""
        return await self._drive(reading.recent_calls(POSTGRES, run_id, limit))

    async def turn_context(
        self, run_id: str, turn_id: str, call_ids: Sequence[str], recent: int
    ) -> TurnContext | None:
        """Two statements, as on SQLite: the run with the turn of this ID and its last turn
        (seq = the run's turn count), then its recent calls with those of call_ids already
        used."""
        async with self._tx() as conn:
            found = await self._all(conn, _RUN_AND_TURNS, (turn_id, run_id, run_id))
            if not found:
                return None
            run = codecs.run_from_row(found[0][: len(schema.RUN_COLUMNS)])
            turns = [
                codecs.turn_from_row(r[len(schema.RUN_COLUMNS) :])
                for r in found
                if r[len(schema.RUN_COLUMNS)] is not None
            ]
            calls = await self._all(
                conn, _RECENT_AND_USED, (run_id, recent, run_id, list(call_ids))
            )
            used = frozenset(codecs.past_call_from_row(r[2:]).call_id for r in calls if r[0])
            latest = sorted((r for r in calls if not r[0]), key=lambda r: r[1])
            last = next((t for t in turns if t.seq == run.turns_used), None)
            if last is None and run.turns_used:  # counted otherwise (never, so far): look
                last = await self._drive_on(conn, reading.last_turn(POSTGRES, run_id))
        return TurnContext(
            run,
            next((t for t in turns if t.turn_id == turn_id), None),
            last,
            used,
            tuple(codecs.past_call_from_row(r[2:]) for r in latest),
        )

    async def query_audit(
        self, which: AuditFilter, *, after: int, limit: int, newest: bool = False
    ) -> list[AuditRecord]:
        where, args = fragments.audit_where(which, "%s")
        order = "DESC" if newest else ""
        async with self._tx() as conn:
            found = await self._all(
                conn,
                select(("seq", *hashing.AUDIT_COLUMNS), "audit")
                + f" WHERE seq > %s AND {where} ORDER BY seq {order} "
                "LIMIT %s",
                (after, *args, limit),
            )
        records = [codecs.audit_from_row(r[0], r[1:]) for r in found]
        return records[::-1] if newest else records

    async def audit_checkpoint(self) -> AuditCheckpoint | None:
        async with self._tx() as conn:
            row = await self._one(
                conn,
                select(schema.CHECKPOINT_COLUMNS, "audit_checkpoints")
                + " ORDER BY seq DESC LIMIT 1",
            )
        return AuditCheckpoint(*row) if row else None

    async def audit_rows(self, run_id: str) -> list[dict[str, Any]]:
        cols = ("seq", *hashing.AUDIT_COLUMNS)
        async with self._tx() as conn:
            found = await self._all(
                conn, select(cols, "audit") + " WHERE run_id = %s ORDER BY seq", (run_id,)
            )
        return [dict(zip(cols, r, strict=True)) for r in found]

    async def approvals_for_run(self, run_id: str) -> list[ApprovalRecord]:
        async with self._tx() as conn:
            found = await self._all(
                conn,
                select(schema.APPROVAL_COLUMNS, "approvals")
                + " WHERE run_id = %s ORDER BY created_at",
                (run_id,),
            )
        return [codecs.approval_from_row(r) for r in found]

    async def get_approval(self, approval_id: str) -> ApprovalRecord | None:
        async with self._tx() as conn:
            row = await self._one(
                conn,
                select(schema.APPROVAL_COLUMNS, "approvals") + " WHERE approval_id = %s",
                (approval_id,),
            )
        return codecs.approval_from_row(row) if row else None

    async def list_approvals(
        self, which: ApprovalFilter, *, after: int, limit: int
    ) -> list[tuple[int, ApprovalRecord]]:
        where, args = fragments.approval_where(which, "%s")
        async with self._tx() as conn:
            found = await self._all(
                conn,
                select(("pos", *schema.APPROVAL_COLUMNS), "approvals")
                + f" WHERE pos > %s AND {where} ORDER BY pos LIMIT %s",
                (after, *args, limit),
            )
        return [(int(r[0]), codecs.approval_from_row(r[1:])) for r in found]

    async def unsettled(self) -> tuple[int, int]:
        async with self._tx() as conn:
            row = await self._one(conn, UNSETTLED)
        assert row is not None
        return int(row[0]), int(row[1])
