"""SQLite RunStore: one file, WAL, every commit durable before it returns (synchronous=FULL,
or on the event loop's connection a sync of the log right after the commit).

Statements run on the event loop's thread or on the store's own, on connections used one at a
time (`sqlite_connections.Connections`: which work runs where, and why). sqlite3 errors are
translated into `StoreUnavailable` (cause chained).

Several processes may share one file: writes serialize on SQLite's own lock, drive locks are
record locks on `<file>-runs.lock` (see `locks.FileRangeLocks`). Settlement and audit
notifications reach the watchers of this process only, unless the store is opened with
`share_notifications` (`serve --workers`): then also those of the other processes that opened
it so (`sqlite_peers.PeerLink`). Before every write transaction the
`FileHealth` checks that the file is still the one opened and its filesystem has room; if not,
the write is refused (`StoreUnavailable`) and health reports NOT_SERVING.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

from gateway.audit import hashing
from gateway.audit.keys import AuditKey
from gateway.audit.records import AuditCheckpoint, AuditEvent, AuditFilter, AuditRecord, audit_time
from gateway.errors import StoreUnavailable
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
    now_utc,
)
from gateway.quotas import Reservation
from gateway.store import codecs, fragments, reading, schema, sqlite_quotas
from gateway.store.base import AsGiven, StoredForm, settles
from gateway.store.filehealth import FileHealth
from gateway.store.group import GroupCommit
from gateway.store.locks import FileRangeLocks, WriterLock, run_lock_key
from gateway.store.notify import AUDIT_FEED, Notifying, SettleHub
from gateway.store.reading import SQLITE, Reader
from gateway.store.sqlite_connections import Busy, Connections
from gateway.store.sqlite_peers import PeerLink

T = TypeVar("T")
log = logging.getLogger("callgate.store")

_DDL = [
    f"CREATE TABLE IF NOT EXISTS runs ({', '.join(schema.RUN_COLUMNS)}, PRIMARY KEY (run_id))",
    f"CREATE TABLE IF NOT EXISTS turns ({', '.join(schema.TURN_COLUMNS)}, "
    "PRIMARY KEY (run_id, turn_id))",
    f"CREATE TABLE IF NOT EXISTS calls ({', '.join(schema.CALL_COLUMNS)}, "
    "PRIMARY KEY (run_id, turn_id, call_id))",
    f"CREATE UNIQUE INDEX IF NOT EXISTS calls_unique_id ON calls (run_id, call_id) "
    f"WHERE {fragments.NOT_DUPLICATE}",
    f"CREATE TABLE IF NOT EXISTS approvals ({', '.join(schema.APPROVAL_COLUMNS)}, "
    "PRIMARY KEY (approval_id))",
    # rowid order is insertion order: turns in sequence, calls in the model's order
    "CREATE INDEX IF NOT EXISTS calls_run ON calls (run_id)",
    "CREATE INDEX IF NOT EXISTS approvals_run ON approvals (run_id)",
    f"CREATE TABLE IF NOT EXISTS audit (seq INTEGER PRIMARY KEY AUTOINCREMENT, "
    f"{', '.join(hashing.AUDIT_COLUMNS)})",
    "CREATE INDEX IF NOT EXISTS audit_run ON audit (run_id)",
    *schema.tables(lambda column: column),
    *schema.indexes(),
]

MIGRATIONS = schema.migrations(lambda column: column)  # SQLite columns need no type
# records written before schema 4 get the verdict their decision holds (for queries only:
# their hash covers decision_json, not this column)
MIGRATIONS[3].append("UPDATE audit SET verdict = json_extract(decision_json, '$.verdict') "
                     "WHERE decision_json IS NOT NULL")


_RUN_AND_TURNS = fragments.run_and_turns("?")
# the audit chain's last hash: the newest record's, or (all pruned) the latest checkpoint's
_ROWS_PER_INSERT = 200  # well under SQLite's limit of 32,766 parameters per statement


def _insert_rows(conn: sqlite3.Connection, table: str, columns: Sequence[str],
                 values: Sequence[tuple[Any, ...]], *, guard: str = "",
                 guard_args: Sequence[Any] = ()) -> int:
    """INSERT values as multi-row statements; `guard` (a condition, checked once, with the
    first rows): insert only while it holds. Answers how many rows went in."""
    inserted = 0
    for start in range(0, len(values), _ROWS_PER_INSERT):
        chunk = values[start:start + _ROWS_PER_INSERT]
        row = f"({_placeholders(columns)})"
        args = [v for r in chunk for v in r]
        sql = f"INSERT INTO {table} ({', '.join(columns)}) "
        if guard and start == 0:
            sql += f"SELECT * FROM (VALUES {', '.join([row] * len(chunk))}) WHERE {guard}"
            args += guard_args
        else:
            sql += f"VALUES {', '.join([row] * len(chunk))}"
        changed = conn.execute(sql, args).rowcount
        if changed == 0 and start == 0 and guard:
            return 0
        inserted += changed
    return inserted


def _placeholders(columns: Sequence[str]) -> str:
    return fragments.placeholders(columns, "?")


def _assignments(columns: Sequence[str]) -> str:
    return fragments.assignments(columns, "?")


UNSETTLED = ("SELECT (SELECT count(*) FROM approvals WHERE status = 'PENDING'), "
             "(SELECT count(*) FROM calls WHERE status = 'UNKNOWN')")


class SQLiteStore(sqlite_quotas.SQLiteQuotas, Notifying):
    name = "sqlite"

    def __init__(self, path: Path, *, busy_timeout_s: float = 5.0,
                 min_free_bytes: int = 0, audit_key: AuditKey | None = None,
                 stored: StoredForm | None = None) -> None:
        self.path = path
        self._busy_timeout_s = busy_timeout_s
        self._guard = FileHealth(path, min_free_bytes)
        self._problem = ""
        self._audit_key = audit_key
        self._stored = stored or AsGiven()
        self._db = Connections(path, busy_timeout_s)
        self._audits = GroupCommit(self._commit_audit)
        self._reservations = GroupCommit(self._commit_reservations)
        self._hub = SettleHub()
        self._peers: PeerLink | None = None
        self._drive_locks: FileRangeLocks | None = None
        self._writer: WriterLock | None = None
        self._closed = False
        # the audit chain's last hash as this connection last committed it (None: not known);
        # an append checks it in its INSERT, so another process's append is never missed
        self._audit_head: str | None = None
        self._next_head: str | None = None

    # ------------------------------------------------------------------ plumbing

    @classmethod
    async def open(cls, path: Path, *, busy_timeout_s: float = 5.0,
                   min_free_bytes: int = 0, audit_key: AuditKey | None = None,
                   stored: StoredForm | None = None,
                   share_notifications: bool = False) -> SQLiteStore:
        store = cls(path, busy_timeout_s=busy_timeout_s, min_free_bytes=min_free_bytes,
                    audit_key=audit_key, stored=stored)
        await store._db.run(store._open)
        if share_notifications:
            try:
                store._peers = PeerLink.open(path, store._hub)
            except BaseException:
                await store.close()
                raise
        return store

    def _open(self) -> None:
        self._migrate(self._db.open_thread())
        self._db.open_loop()
        self._drive_locks = FileRangeLocks.for_file(Path(f"{self.path}-runs.lock"))
        self._writer = WriterLock(Path(f"{self.path}-write.lock"), self._busy_timeout_s)
        self._guard.opened()

    def _migrate(self, conn: sqlite3.Connection) -> None:
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
            row = conn.execute("SELECT version FROM schema_version").fetchone()
            if row is None:
                for stmt in _DDL:
                    conn.execute(stmt)
                conn.execute("INSERT INTO schema_version VALUES (?)", (schema.SCHEMA_VERSION,))
            else:
                version = int(row[0])
                if version > schema.SCHEMA_VERSION:
                    raise StoreUnavailable(
                        f"store {self.path} has schema version {version}, newer than this "
                        f"callgate ({schema.SCHEMA_VERSION}); upgrade callgate")
                for v in range(version, schema.SCHEMA_VERSION):
                    for stmt in MIGRATIONS[v]:
                        conn.execute(stmt)
                conn.execute("UPDATE schema_version SET version = ?", (schema.SCHEMA_VERSION,))
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    async def _write(self, fn: Callable[[sqlite3.Connection], T], *, sync: bool = True) -> T:
        """A write transaction, on the event loop's thread unless it would wait; durable when
        it returns, unless `sync` is False (then durable with the next one that is)."""
        def tx() -> T:
            conn = self.conn
            result = self._tx(fn, conn)
            if sync:
                self._db.synced(conn)
            return result
        result = await self._db.here(tx)
        self._db.committed()
        return result

    @property
    def conn(self) -> sqlite3.Connection:
        """The connection of the calling thread: the store thread's, or the event loop's."""
        return self._db.conn

    @property
    def connections(self) -> tuple[sqlite3.Connection, ...]:
        """Its connections (the store thread's first), while the store is open."""
        return self._db.all

    def _tx(self, fn: Callable[[sqlite3.Connection], T],
            conn: sqlite3.Connection | None = None) -> T:
        conn = conn or self.conn
        waits = self._db.waits(conn)  # the loop's connection never waits for a lock
        problem = self._guard.problem()
        if problem:
            raise StoreUnavailable(f"the run store cannot persist: {problem}")
        writer = self._writer
        if writer is not None and not writer.acquire(wait=waits):
            if not waits:
                raise Busy()
            raise StoreUnavailable(f"the run store stayed busy for {self._busy_timeout_s:g} s "
                                   "(another process kept writing to it)")
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                result = fn(conn)
            except BaseException:
                self._audit_head = None
                conn.execute("ROLLBACK")
                raise
            try:
                conn.execute("COMMIT")
            except BaseException:
                self._audit_head = None
                if conn.in_transaction:  # (never left open: the other connection would wait)
                    conn.execute("ROLLBACK")
                raise
        finally:
            if writer is not None:
                writer.release()
            head, self._next_head = self._next_head, None  # what fn appended, if it did
        if head is not None:
            self._audit_head = head
        return result

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

    # ------------------------------------------------------------------ runs and turns

    async def create_run(self, run: RunRecord) -> RunRecord:
        def tx(conn: sqlite3.Connection) -> RunRecord:
            conn.execute(f"INSERT OR IGNORE INTO runs ({', '.join(schema.RUN_COLUMNS)}) "
                         f"VALUES ({_placeholders(schema.RUN_COLUMNS)})", codecs.run_row(run))
            row = conn.execute(f"SELECT {', '.join(schema.RUN_COLUMNS)} FROM runs "
                               "WHERE run_id = ?", (run.run_id,)).fetchone()
            return codecs.run_from_row(row)
        return await self._write(tx)

    def _drive(self, reader: Reader[T]) -> T:
        return reading.drive(reader, self._one, self._all)

    async def get_run(self, run_id: str) -> RunRecord | None:
        return await self._db.here(lambda: self._drive(reading.get_run(SQLITE, run_id)))

    async def list_runs(self, which: RunFilter, *, before: tuple[datetime, str] | None,
                        limit: int) -> list[RunRecord]:
        return await self._db.run(lambda: self._drive(
            reading.list_runs(SQLITE, which, before=before, limit=limit)))

    async def get_view(self, run_id: str) -> RunView | None:
        return await self._db.run(lambda: self._read(
            lambda: self._drive(reading.view(SQLITE, run_id))))

    async def snapshot(self, run_id: str) -> RunSnapshot | None:
        return await self._db.here(lambda: self._read(
            lambda: self._drive(reading.snapshot(SQLITE, run_id))))

    async def run_page(self, run_id: str, *, before: int | None, limit: int) -> RunPage | None:
        return await self._db.run(lambda: self._read(lambda: self._drive(
            reading.run_page(SQLITE, run_id, before=before, limit=limit))))

    async def get_turn(self, run_id: str, turn_id: str) -> TurnRecord | None:
        return await self._db.here(lambda: self._drive(reading.get_turn(SQLITE, run_id, turn_id)))

    async def last_turn(self, run_id: str) -> TurnRecord | None:
        return await self._db.here(lambda: self._drive(reading.last_turn(SQLITE, run_id)))

    async def find_call(self, run_id: str, call_id: str) -> CallRecord | None:
        return await self._db.here(lambda: self._drive(reading.find_call(SQLITE, run_id, call_id)))

    async def turn_calls(self, run_id: str, turn_id: str) -> list[CallRecord]:
        return await self._db.here(lambda: self._drive(
            reading.turn_calls(SQLITE, run_id, turn_id)))

    async def recent_calls(self, run_id: str, limit: int) -> list[PastCall]:
        """The run's last `limit` calls, oldest first."""
        return await self._db.here(lambda: self._drive(
            reading.recent_calls(SQLITE, run_id, limit)))

    async def turn_context(self, run_id: str, turn_id: str, call_ids: Sequence[str],
                           recent: int) -> TurnContext | None:
        """Two statements: the run with the turn of this ID and its last turn (seq = the
        run's turn count), then its recent calls with those of call_ids already used. (The run
        is driven by one holder of its lock at a time, so nothing changes in between.)"""
        def read() -> TurnContext | None:
            found = self._all(_RUN_AND_TURNS, (turn_id, run_id, run_id))
            if not found:
                return None
            run = codecs.run_from_row(found[0][:len(schema.RUN_COLUMNS)])
            turns = [codecs.turn_from_row(r[len(schema.RUN_COLUMNS):]) for r in found
                     if r[len(schema.RUN_COLUMNS)] is not None]
            marks = _placeholders(call_ids) if call_ids else "NULL"
            calls = self._all(
                f"SELECT * FROM (SELECT 0, {', '.join(fragments.PAST_CALL_COLUMNS)} FROM calls "
                "WHERE run_id = ? ORDER BY rowid DESC LIMIT ?) UNION ALL "
                f"SELECT 1, {', '.join(fragments.PAST_CALL_COLUMNS)} FROM calls WHERE run_id = ? "
                f"AND call_id IN ({marks}) AND {fragments.NOT_DUPLICATE}",
                (run_id, recent, run_id, *call_ids))
            used = frozenset(r[2] for r in calls if r[0] == 1)
            latest = [codecs.past_call_from_row(r[1:]) for r in calls if r[0] == 0]
            last = next((t for t in turns if t.seq == run.turns_used), None)
            if last is None and run.turns_used:  # counted otherwise (never, so far): look
                last = self._drive(reading.last_turn(SQLITE, run_id))
            return TurnContext(run, next((t for t in turns if t.turn_id == turn_id), None),
                               last, used, tuple(reversed(latest)))
        return await self._db.here(read)

    async def begin_turn(self, run: RunRecord, turn: TurnRecord, calls: Sequence[CallRecord],
                         audit: Sequence[AuditEvent] = (),
                         approvals: Sequence[ApprovalRecord] = (), *,
                         durable: bool = True, reserve: Sequence[Reservation] = ()) -> None:
        """`durable=False`: committed by the loop's connection without syncing its log (its
        frames reach the disk with the next durable commit, whose sync covers the whole log,
        or the next checkpoint); on the store thread, durably all the same."""
        def tx(conn: sqlite3.Connection) -> None:
            sqlite_quotas.reserve(conn, reserve)
            conn.execute(f"INSERT INTO turns ({', '.join(schema.TURN_COLUMNS)}) "
                         f"VALUES ({_placeholders(schema.TURN_COLUMNS)})", codecs.turn_row(turn))
            _insert_rows(conn, "calls", schema.CALL_COLUMNS,
                         [codecs.call_row(self._stored.call(c)) for c in calls])
            self._update_run(conn, run)
            self._save_approvals(conn, [self._stored.approval(a) for a in approvals], {})
            self._append_audit(conn, audit)
        await self._write(tx, sync=durable)
        self._appended(audit)

    def _update_run(self, conn: sqlite3.Connection, run: RunRecord) -> None:
        cols = schema.RUN_COLUMNS[1:]
        conn.execute(f"UPDATE runs SET {_assignments(cols)} WHERE run_id = ?",
                     (*codecs.run_row(run)[1:], run.run_id))

    async def save(self, *, run: RunRecord | None = None, turn: TurnRecord | None = None,
                   calls: Sequence[CallRecord] = (), approvals: Sequence[ApprovalRecord] = (),
                   audit: Sequence[AuditEvent] = (),
                   expect: Sequence[CallRecord] = (),
                   expect_approvals: Sequence[ApprovalRecord] = (),
                   reserve: Sequence[Reservation] = ()) -> None:
        def tx(conn: sqlite3.Connection) -> None:
            sqlite_quotas.reserve(conn, reserve)
            sqlite_quotas.give_back(conn, calls, expect)
            if run is not None:
                self._update_run(conn, run)
            if turn is not None:
                cols = schema.TURN_COLUMNS[2:]
                conn.execute(f"UPDATE turns SET {_assignments(cols)} "
                             "WHERE run_id = ? AND turn_id = ?",
                             (*codecs.turn_row(turn)[2:], turn.run_id, turn.turn_id))
            self._update_calls(conn, [self._stored.call(c) for c in calls],
                               fragments.guards(expect))
            self._save_approvals(conn, [self._stored.approval(a) for a in approvals],
                                 fragments.approval_guards(expect_approvals))
            self._append_audit(conn, audit)
        await self._write(tx)
        self._appended(audit)
        changed = run or turn
        if changed is not None and settles(run, turn):
            self._hub.publish(changed.run_id)

    @staticmethod
    def _update_calls(conn: sqlite3.Connection, calls: Sequence[CallRecord],
                      guards: fragments.Guards) -> None:
        """One UPDATE for every call (from a VALUES list); a guarded call changes only while
        its row has the expected status and execution count, else `StoreConflict`."""
        if not calls:
            return
        before = conn.total_changes  # (rowcount is not kept for a statement that starts WITH)
        conn.execute(fragments.calls_update(len(calls), "?"),
                     fragments.calls_update_values(calls, guards))
        if conn.total_changes - before == len(calls):
            return
        for c in calls:  # which guard failed: its row does not hold the new record
            expected = guards.get((c.turn_id, c.call_id))
            now = conn.execute("SELECT status, execution_count FROM calls WHERE run_id = ? "
                               "AND turn_id = ? AND call_id = ?",
                               (c.run_id, c.turn_id, c.call_id)).fetchone()
            if expected is not None and now != (c.status.value, c.execution_count):
                raise fragments.conflict(c, expected)
        raise fragments.conflict(calls[0], guards.get((calls[0].turn_id, calls[0].call_id))
                            or ("", 0))

    @staticmethod
    def _save_approvals(conn: sqlite3.Connection, approvals: Sequence[ApprovalRecord],
                        guards: dict[str, str]) -> None:
        for a in approvals:
            values = codecs.approval_row(a)
            expected = guards.get(a.approval_id)
            if expected is None:
                conn.execute(fragments.approval_upsert("?"), values)
            elif conn.execute(fragments.approval_update("?"),
                              (*values[1:], a.approval_id, expected)).rowcount != 1:
                raise fragments.approval_conflict(a, expected)

    # ------------------------------------------------------------------ audit and approvals

    def _append_audit(self, conn: sqlite3.Connection, events: Sequence[AuditEvent]) -> None:
        """Chain the events after the chain's head and insert them. With the head this
        connection last committed, one statement (which inserts only if that is still the
        head); otherwise, or when another process appended since, the head is read first."""
        if not events:
            return
        if self._audit_head is not None:
            values, last = codecs.chained(events, self._audit_head, self._audit_key)
            if _insert_rows(conn, "audit", hashing.AUDIT_COLUMNS, values,
                            guard=f"{fragments.CHAIN_HEAD} = ?",
                            guard_args=(self._audit_head,)):
                self._next_head = last
                return
        head = conn.execute(f"SELECT {fragments.CHAIN_HEAD}").fetchone()[0]
        values, last = codecs.chained(events, head, self._audit_key)
        _insert_rows(conn, "audit", hashing.AUDIT_COLUMNS, values)
        self._next_head = last

    async def append_audit(self, events: Sequence[AuditEvent]) -> None:
        """Durable before it returns. Appends arriving together share one commit on the event
        loop's connection (`GroupCommit`): one transaction and one sync of the log for all."""
        if events:
            await self._audits.add(events)

    async def _commit_audit(self, events: list[AuditEvent]) -> None:
        await self._write(lambda conn: self._append_audit(conn, events))
        self._appended(events)

    async def audit_rows(self, run_id: str) -> list[dict[str, Any]]:
        cols = ("seq", *hashing.AUDIT_COLUMNS)
        found = await self._db.run(lambda: self._all(
            f"SELECT {', '.join(cols)} FROM audit WHERE run_id = ? ORDER BY seq", (run_id,)))
        return [dict(zip(cols, r, strict=True)) for r in found]

    async def query_audit(self, which: AuditFilter, *, after: int, limit: int,
                          newest: bool = False) -> list[AuditRecord]:
        where, args = fragments.audit_where(which, "?")
        order = "DESC" if newest else ""
        found = await self._db.run(lambda: self._all(
            f"SELECT seq, {', '.join(hashing.AUDIT_COLUMNS)} FROM audit WHERE seq > ? AND {where} "
            f"ORDER BY seq {order} LIMIT ?", (after, *args, limit)))
        records = [codecs.audit_from_row(r[0], r[1:]) for r in found]
        return records[::-1] if newest else records

    def _checkpoint(self) -> AuditCheckpoint | None:
        row = self._one(f"SELECT {', '.join(schema.CHECKPOINT_COLUMNS)} FROM audit_checkpoints "
                        "ORDER BY seq DESC LIMIT 1", ())
        return AuditCheckpoint(*row) if row else None

    async def audit_checkpoint(self) -> AuditCheckpoint | None:
        return await self._db.run(self._checkpoint)

    async def prune_audit(self, before: str,
                          record: Callable[[AuditCheckpoint], AuditEvent]
                          ) -> AuditCheckpoint | None:
        def tx(conn: sqlite3.Connection) -> AuditCheckpoint | None:
            kept = conn.execute("SELECT MIN(seq) FROM audit WHERE time >= ?",
                                (before,)).fetchone()[0]
            last = conn.execute("SELECT seq, hash FROM audit WHERE seq < ? ORDER BY seq DESC "
                                "LIMIT 1", (kept if kept is not None else 2 ** 62,)).fetchone()
            if last is None:
                return None
            removed = conn.execute("DELETE FROM audit WHERE seq <= ?", (last[0],)).rowcount
            point = AuditCheckpoint(last[0], last[1], audit_time(now_utc()), removed, before)
            conn.execute(f"INSERT INTO audit_checkpoints ({', '.join(schema.CHECKPOINT_COLUMNS)}) "
                         f"VALUES ({_placeholders(schema.CHECKPOINT_COLUMNS)})",
                         (point.seq, point.hash, point.time, point.removed, point.before))
            self._append_audit(conn, [record(point)])
            return point
        point = await self._db.run(lambda: self._tx(tx))
        if point is not None:
            self._hub.publish(AUDIT_FEED)
        return point

    async def approvals_for_run(self, run_id: str) -> list[ApprovalRecord]:
        found = await self._db.run(lambda: self._all(
            f"SELECT {', '.join(schema.APPROVAL_COLUMNS)} FROM approvals WHERE run_id = ? "
            "ORDER BY created_at", (run_id,)))
        return [codecs.approval_from_row(r) for r in found]

    async def get_approval(self, approval_id: str) -> ApprovalRecord | None:
        row = await self._db.run(lambda: self._one(
            f"SELECT {', '.join(schema.APPROVAL_COLUMNS)} FROM approvals WHERE approval_id = ?",
            (approval_id,)))
        return codecs.approval_from_row(row) if row else None

    async def list_approvals(self, which: ApprovalFilter, *, after: int,
                             limit: int) -> list[tuple[int, ApprovalRecord]]:
        where, args = fragments.approval_where(which, "?")
        found = await self._db.run(lambda: self._all(
            f"SELECT rowid, {', '.join(schema.APPROVAL_COLUMNS)} FROM approvals "
            f"WHERE rowid > ? AND {where} ORDER BY rowid LIMIT ?", (after, *args, limit)))
        return [(int(r[0]), codecs.approval_from_row(r[1:])) for r in found]

    # ------------------------------------------------------------------ drive locks

    def drive_lock(self, run_id: str) -> AbstractAsyncContextManager[None]:
        if self._drive_locks is None:
            raise StoreUnavailable("the run store is closed")
        return self._drive_locks.hold(run_lock_key("", run_id))

    # ------------------------------------------------------------------ lifecycle

    async def unsettled(self) -> tuple[int, int]:
        row = await self._db.run(lambda: self._one(UNSETTLED, ()))
        assert row is not None
        return int(row[0]), int(row[1])

    async def healthy(self) -> bool:
        """Whether the store can persist: the file guard, then a real write (a no-op update
        committed durably)."""
        try:
            await self._db.run(lambda: self._tx(
                lambda conn: conn.execute("UPDATE schema_version SET version = version")))
        except StoreUnavailable as err:
            problem = err.message
        else:
            problem = ""
        if problem != self._problem:
            if problem:
                log.warning("store not serving: %s", problem)
            else:
                log.info("store serving again")
            self._problem = problem
        return not problem

    async def close(self) -> None:
        """Idempotent."""
        self._hub.close()
        if self._closed:
            return
        self._closed = True
        if self._peers is not None:
            self._peers.close()
        await self._db.close()
        if self._drive_locks is not None:
            self._drive_locks.close()
            self._drive_locks = None
        if self._writer is not None:
            self._writer.close()
            self._writer = None
