"""The SQLite store's reads (`SQLiteReads`, a part of `SQLiteStore`): runs, turns, calls,
approvals and the audit trail, on the calling thread's connection. The statements the two
stores share are `reading`'s; what is SQLite's own is written here."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, TypeVar

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
from gateway.store.reading import SQLITE, Reader
from gateway.store.sqlite_connections import Connections

T = TypeVar("T")

_RUN_AND_TURNS = fragments.run_and_turns("?")
UNSETTLED = (
    "SELECT (SELECT count(*) FROM approvals WHERE status = 'PENDING'), "
    "(SELECT count(*) FROM calls WHERE status = 'UNKNOWN')"
)


def placeholders(columns: Sequence[str]) -> str:
    return fragments.placeholders(columns, "?")


class SQLiteReads:
    _db: Connections

    @property
    def conn(self) -> sqlite3.Connection:
        """The connection of the calling thread: the store thread's, or the event loop's."""
        return self._db.conn

    def _read(self, fn: Callable[[], T]) -> T:
        """Several reads from one snapshot (another process may commit in between)."""
        conn = self.conn
        conn.execute("BEGIN")
        try:
            return fn()
        finally:
            conn.execute("COMMIT")

    def _one(self, sql: str, args: Sequence[Any]) -> tuple[Any, ...] | None:
        row: tuple[Any, ...] | None = self.conn.execute(sql, args).fetchone()
        return row

    def _all(self, sql: str, args: Sequence[Any]) -> list[tuple[Any, ...]]:
        return list(self.conn.execute(sql, args).fetchall())

    def _drive(self, reader: Reader[T]) -> T:
        return reading.drive(reader, self._one, self._all)

    async def get_run(self, run_id: str) -> RunRecord | None:
        return await self._db.here(lambda: self._drive(reading.get_run(SQLITE, run_id)))

    async def list_runs(
        self, which: RunFilter, *, before: tuple[datetime, str] | None, limit: int
    ) -> list[RunRecord]:
        return await self._db.run(
            lambda: self._drive(reading.list_runs(SQLITE, which, before=before, limit=limit))
        )

    async def get_view(self, run_id: str) -> RunView | None:
        return await self._db.run(
            lambda: self._read(lambda: self._drive(reading.view(SQLITE, run_id)))
        )

    async def snapshot(self, run_id: str) -> RunSnapshot | None:
        return await self._db.here(
            lambda: self._read(lambda: self._drive(reading.snapshot(SQLITE, run_id)))
        )

    async def run_page(self, run_id: str, *, before: int | None, limit: int) -> RunPage | None:
        return await self._db.run(
            lambda: self._read(
                lambda: self._drive(reading.run_page(SQLITE, run_id, before=before, limit=limit))
            )
        )

    async def get_turn(self, run_id: str, turn_id: str) -> TurnRecord | None:
        return await self._db.here(lambda: self._drive(reading.get_turn(SQLITE, run_id, turn_id)))

    async def last_turn(self, run_id: str) -> TurnRecord | None:
        return await self._db.here(lambda: self._drive(reading.last_turn(SQLITE, run_id)))

    async def find_call(self, run_id: str, call_id: str) -> CallRecord | None:
        return await self._db.here(lambda: self._drive(reading.find_call(SQLITE, run_id, call_id)))

    async def turn_calls(self, run_id: str, turn_id: str) -> list[CallRecord]:
        return await self._db.here(lambda: self._drive(reading.turn_calls(SQLITE, run_id, turn_id)))

    async def recent_calls(self, run_id: str, limit: int) -> list[PastCall]:
        """The run's last `limit` calls, oldest first."""
        return await self._db.here(lambda: self._drive(reading.recent_calls(SQLITE, run_id, limit)))

    async def turn_context(
        self, run_id: str, turn_id: str, call_ids: Sequence[str], recent: int
    ) -> TurnContext | None:
        """Two statements: the run with the turn of this ID and its last turn (seq = the
        run's turn count), then its recent calls with those of call_ids already used. (The run
        is driven by one holder of its lock at a time, so nothing changes in between.)"""

        def read() -> TurnContext | None:
            found = self._all(_RUN_AND_TURNS, (turn_id, run_id, run_id))
            if not found:
                return None
            run = codecs.run_from_row(found[0][: len(schema.RUN_COLUMNS)])
            turns = [
                codecs.turn_from_row(r[len(schema.RUN_COLUMNS) :])
                for r in found
                if r[len(schema.RUN_COLUMNS)] is not None
            ]
            marks = placeholders(call_ids) if call_ids else "NULL"
            calls = self._all(
                f"SELECT * FROM (SELECT 0, {', '.join(fragments.PAST_CALL_COLUMNS)} FROM calls "
                "WHERE run_id = ? ORDER BY rowid DESC LIMIT ?) UNION ALL "
                f"SELECT 1, {', '.join(fragments.PAST_CALL_COLUMNS)} FROM calls WHERE run_id = ? "
                f"AND call_id IN ({marks}) AND {fragments.NOT_DUPLICATE}",
                (run_id, recent, run_id, *call_ids),
            )
            used = frozenset(r[2] for r in calls if r[0] == 1)
            latest = [codecs.past_call_from_row(r[1:]) for r in calls if r[0] == 0]
            last = next((t for t in turns if t.seq == run.turns_used), None)
            if last is None and run.turns_used:  # counted otherwise (never, so far): look
                last = self._drive(reading.last_turn(SQLITE, run_id))
            return TurnContext(
                run,
                next((t for t in turns if t.turn_id == turn_id), None),
                last,
                used,
                tuple(reversed(latest)),
            )

        return await self._db.here(read)

    async def audit_rows(self, run_id: str) -> list[dict[str, Any]]:
        cols = ("seq", *hashing.AUDIT_COLUMNS)
        found = await self._db.run(
            lambda: self._all(
                f"SELECT {', '.join(cols)} FROM audit WHERE run_id = ? ORDER BY seq", (run_id,)
            )
        )
        return [dict(zip(cols, r, strict=True)) for r in found]

    async def query_audit(
        self, which: AuditFilter, *, after: int, limit: int, newest: bool = False
    ) -> list[AuditRecord]:
        where, args = fragments.audit_where(which, "?")
        order = "DESC" if newest else ""
        found = await self._db.run(
            lambda: self._all(
                f"SELECT seq, {', '.join(hashing.AUDIT_COLUMNS)} FROM audit "
                f"WHERE seq > ? AND {where} ORDER BY seq {order} LIMIT ?",
                (after, *args, limit),
            )
        )
        records = [codecs.audit_from_row(r[0], r[1:]) for r in found]
        return records[::-1] if newest else records

    def _checkpoint(self) -> AuditCheckpoint | None:
        row = self._one(
            f"SELECT {', '.join(schema.CHECKPOINT_COLUMNS)} FROM audit_checkpoints "
            "ORDER BY seq DESC LIMIT 1",
            (),
        )
        return AuditCheckpoint(*row) if row else None

    async def audit_checkpoint(self) -> AuditCheckpoint | None:
        return await self._db.run(self._checkpoint)

    async def approvals_for_run(self, run_id: str) -> list[ApprovalRecord]:
        found = await self._db.run(
            lambda: self._all(
                f"SELECT {', '.join(schema.APPROVAL_COLUMNS)} FROM approvals WHERE run_id = ? "
                "ORDER BY created_at",
                (run_id,),
            )
        )
        return [codecs.approval_from_row(r) for r in found]

    async def get_approval(self, approval_id: str) -> ApprovalRecord | None:
        row = await self._db.run(
            lambda: self._one(
                f"SELECT {', '.join(schema.APPROVAL_COLUMNS)} FROM approvals WHERE approval_id = ?",
                (approval_id,),
            )
        )
        return codecs.approval_from_row(row) if row else None

    async def list_approvals(
        self, which: ApprovalFilter, *, after: int, limit: int
    ) -> list[tuple[int, ApprovalRecord]]:
        where, args = fragments.approval_where(which, "?")
        found = await self._db.run(
            lambda: self._all(
                f"SELECT rowid, {', '.join(schema.APPROVAL_COLUMNS)} FROM approvals "
                f"WHERE rowid > ? AND {where} ORDER BY rowid LIMIT ?",
                (after, *args, limit),
            )
        )
        return [(int(r[0]), codecs.approval_from_row(r[1:])) for r in found]

    async def unsettled(self) -> tuple[int, int]:
        row = await self._db.run(lambda: self._one(UNSETTLED, ()))
        assert row is not None
        return int(row[0]), int(row[1])
