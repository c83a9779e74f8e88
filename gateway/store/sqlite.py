"""SQLite RunStore: one file, WAL, every commit durable before it returns (synchronous=FULL,
or on the event loop's connection a sync of the log after the commit, shared by the commits
that arrive together).

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
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from gateway.audit import hashing
from gateway.audit.keys import AuditKey
from gateway.audit.records import AuditCheckpoint, AuditEvent, audit_time
from gateway.errors import StoreUnavailable
from gateway.model import (
    ApprovalRecord,
    CallRecord,
    RunRecord,
    TurnRecord,
    now_utc,
)
from gateway.quotas import Reservation, given_back
from gateway.store import codecs, fragments, schema, sqlite_pins, sqlite_quotas
from gateway.store.base import AsGiven, StoredForm, settles
from gateway.store.filehealth import FileHealth
from gateway.store.group import GroupCommit
from gateway.store.locks import FileRangeLocks, WriterLock, run_lock_key
from gateway.store.notify import AUDIT_FEED, Notifying, SettleHub
from gateway.store.sqlite_connections import Busy, Connections
from gateway.store.sqlite_peers import PeerLink
from gateway.store.sqlite_reads import SQLiteReads, placeholders

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
MIGRATIONS[3].append(
    "UPDATE audit SET verdict = json_extract(decision_json, '$.verdict') "
    "WHERE decision_json IS NOT NULL"
)


_ROWS_PER_INSERT = 200  # well under SQLite's limit of 32,766 parameters per statement


def _insert_rows(
    conn: sqlite3.Connection, table: str, columns: Sequence[str], values: Sequence[tuple[Any, ...]]
) -> None:
    """INSERT values as multi-row statements."""
    row = f"({placeholders(columns)})"
    for start in range(0, len(values), _ROWS_PER_INSERT):
        chunk = values[start : start + _ROWS_PER_INSERT]
        conn.execute(
            f"INSERT INTO {table} ({', '.join(columns)}) VALUES {', '.join([row] * len(chunk))}",
            [v for r in chunk for v in r],
        )


@dataclass(frozen=True)
class _Head:
    """The audit chain's head as a connection committed it, with that connection's
    `PRAGMA data_version` then: the version changes when any other connection (of this
    process or another) commits to the file, and not for the connection's own commits."""

    conn: sqlite3.Connection
    version: int
    hash: str


def _assignments(columns: Sequence[str]) -> str:
    return fragments.assignments(columns, "?")


class SQLiteStore(sqlite_quotas.SQLiteQuotas, sqlite_pins.SQLitePins, SQLiteReads, Notifying):
    name = "sqlite"

    def __init__(
        self,
        path: Path,
        *,
        busy_timeout_s: float = 5.0,
        min_free_bytes: int = 0,
        audit_key: AuditKey | None = None,
        stored: StoredForm | None = None,
    ) -> None:
        self.path = path
        self._busy_timeout_s = busy_timeout_s
        self._guard = FileHealth(path, min_free_bytes)
        self._problem = ""
        self._audit_key = audit_key
        self._stored = stored or AsGiven()
        self._db = Connections(path, busy_timeout_s)
        self._audits = GroupCommit(self._commit_audit)
        self._reservations = GroupCommit(self._commit_reservations)
        # one sync of the log makes every commit before it durable: callers whose commits
        # arrive together wait for one sync (`_write`)
        self._syncs: GroupCommit[None] = GroupCommit(self._sync_log)
        self._hub = SettleHub()
        self._peers: PeerLink | None = None
        self._drive_locks: FileRangeLocks | None = None
        self._writer: WriterLock | None = None
        self._closed = False
        # the audit chain's head as this store last committed it (None: not known), and as
        # the transaction under way has appended to it
        self._audit_head: _Head | None = None
        self._next_head: _Head | None = None

    # ------------------------------------------------------------------ plumbing

    @classmethod
    async def open(
        cls,
        path: Path,
        *,
        busy_timeout_s: float = 5.0,
        min_free_bytes: int = 0,
        audit_key: AuditKey | None = None,
        stored: StoredForm | None = None,
        share_notifications: bool = False,
    ) -> SQLiteStore:
        store = cls(
            path,
            busy_timeout_s=busy_timeout_s,
            min_free_bytes=min_free_bytes,
            audit_key=audit_key,
            stored=stored,
        )
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
                        f"callgate ({schema.SCHEMA_VERSION}); upgrade callgate"
                    )
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
        it returns, unless `sync` is False (then durable with the next one that is). The
        loop's connection commits without syncing the log: its callers then share one sync
        with the commits that arrived with theirs (`GroupCommit`), which raises, for each
        of them, what the sync raised."""

        def tx() -> tuple[T, bool]:
            conn = self.conn
            return self._tx(fn, conn), self._db.unsynced(conn)

        result, unsynced = await self._db.here(tx)
        if sync and unsynced:
            await self._syncs.add((None,))
        self._db.committed()  # (after the sync: a checkpoint it starts holds the connections)
        return result

    async def _sync_log(self, _: list[None]) -> None:
        await self._db.sync_log()

    @property
    def connections(self) -> tuple[sqlite3.Connection, ...]:
        """Its connections (the store thread's first), while the store is open."""
        return self._db.all

    def _tx(
        self, fn: Callable[[sqlite3.Connection], T], conn: sqlite3.Connection | None = None
    ) -> T:
        conn = conn or self.conn
        waits = self._db.waits(conn)  # the loop's connection never waits for a lock
        problem = self._guard.problem()
        if problem:
            raise StoreUnavailable(f"the run store cannot persist: {problem}")
        writer = self._writer
        if writer is not None and not writer.acquire(wait=waits):
            if not waits:
                raise Busy()
            raise StoreUnavailable(
                f"the run store stayed busy for {self._busy_timeout_s:g} s "
                "(another process kept writing to it)"
            )
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

    # ------------------------------------------------------------------ runs and turns

    async def create_run(self, run: RunRecord) -> RunRecord:
        def tx(conn: sqlite3.Connection) -> RunRecord:
            conn.execute(
                f"INSERT OR IGNORE INTO runs ({', '.join(schema.RUN_COLUMNS)}) "
                f"VALUES ({placeholders(schema.RUN_COLUMNS)})",
                codecs.run_row(run),
            )
            row = conn.execute(
                f"SELECT {', '.join(schema.RUN_COLUMNS)} FROM runs WHERE run_id = ?", (run.run_id,)
            ).fetchone()
            return codecs.run_from_row(row)

        return await self._write(tx)

    async def begin_turn(
        self,
        run: RunRecord,
        turn: TurnRecord,
        calls: Sequence[CallRecord],
        audit: Sequence[AuditEvent] = (),
        approvals: Sequence[ApprovalRecord] = (),
        *,
        durable: bool = True,
        reserve: Sequence[Reservation] = (),
    ) -> None:
        """`durable=False`: committed by the loop's connection without syncing its log (its
        frames reach the disk with the next durable commit, whose sync covers the whole log,
        or the next checkpoint); on the store thread, durably all the same."""

        def tx(conn: sqlite3.Connection) -> None:
            sqlite_quotas.reserve(conn, reserve)
            conn.execute(
                f"INSERT INTO turns ({', '.join(schema.TURN_COLUMNS)}) "
                f"VALUES ({placeholders(schema.TURN_COLUMNS)})",
                codecs.turn_row(turn),
            )
            _insert_rows(
                conn,
                "calls",
                schema.CALL_COLUMNS,
                [codecs.call_row(self._stored.call(c)) for c in calls],
            )
            self._update_run(conn, run)
            self._save_approvals(conn, [self._stored.approval(a) for a in approvals], {})
            self._append_audit(conn, audit)

        await self._write(tx, sync=durable)
        self._appended(audit)

    def _update_run(self, conn: sqlite3.Connection, run: RunRecord) -> None:
        conn.execute(
            f"UPDATE runs SET {_assignments(schema.RUN_UPDATED)} WHERE run_id = ?",
            (*codecs.run_update(run), run.run_id),
        )

    async def save(
        self,
        *,
        run: RunRecord | None = None,
        turn: TurnRecord | None = None,
        calls: Sequence[CallRecord] = (),
        approvals: Sequence[ApprovalRecord] = (),
        audit: Sequence[AuditEvent] = (),
        expect: Sequence[CallRecord] = (),
        expect_approvals: Sequence[ApprovalRecord] = (),
        reserve: Sequence[Reservation] = (),
    ) -> None:
        def tx(conn: sqlite3.Connection) -> None:
            sqlite_quotas.reserve(conn, reserve, given_back(calls, expect))
            if run is not None:
                self._update_run(conn, run)
            if turn is not None:
                conn.execute(
                    f"UPDATE turns SET {_assignments(schema.TURN_UPDATED)} "
                    "WHERE run_id = ? AND turn_id = ?",
                    (*codecs.turn_update(turn), turn.run_id, turn.turn_id),
                )
            self._update_calls(
                conn, [self._stored.call(c) for c in calls], fragments.guards(expect)
            )
            self._save_approvals(
                conn,
                [self._stored.approval(a) for a in approvals],
                fragments.approval_guards(expect_approvals),
            )
            self._append_audit(conn, audit)

        await self._write(tx)
        self._appended(audit)
        changed = run or turn
        if changed is not None and settles(run, turn):
            self._hub.publish(changed.run_id)

    @staticmethod
    def _update_calls(
        conn: sqlite3.Connection, calls: Sequence[CallRecord], guards: fragments.Guards
    ) -> None:
        """One UPDATE for every call (from a VALUES list); a guarded call changes only while
        its row has the expected status and execution count, else `StoreConflict`."""
        if not calls:
            return
        before = conn.total_changes  # (rowcount is not kept for a statement that starts WITH)
        conn.execute(
            fragments.calls_update(len(calls), "?"), fragments.calls_update_values(calls, guards)
        )
        if conn.total_changes - before == len(calls):
            return
        for c in calls:  # which guard failed: its row does not hold the new record
            expected = guards.get((c.turn_id, c.call_id))
            now = conn.execute(
                "SELECT status, execution_count FROM calls WHERE run_id = ? "
                "AND turn_id = ? AND call_id = ?",
                (c.run_id, c.turn_id, c.call_id),
            ).fetchone()
            if expected is not None and now != (c.status.value, c.execution_count):
                raise fragments.conflict(c, expected)
        raise fragments.conflict(
            calls[0], guards.get((calls[0].turn_id, calls[0].call_id)) or ("", 0)
        )

    @staticmethod
    def _save_approvals(
        conn: sqlite3.Connection, approvals: Sequence[ApprovalRecord], guards: dict[str, str]
    ) -> None:
        for a in approvals:
            values = codecs.approval_row(a)
            expected = guards.get(a.approval_id)
            if expected is None:
                conn.execute(fragments.approval_upsert("?"), values)
            elif (
                conn.execute(
                    fragments.approval_update("?"), (*values[1:], a.approval_id, expected)
                ).rowcount
                != 1
            ):
                raise fragments.approval_conflict(a, expected)

    # ------------------------------------------------------------- audit and approvals (writes)

    def _append_audit(self, conn: sqlite3.Connection, events: Sequence[AuditEvent]) -> None:
        """Chain the events after the chain's head and insert them. The head this connection
        last committed is still the head when no other connection has committed since (its
        data version unchanged; the write lock is held from here to the commit); otherwise
        the head is read. (Checking a remembered head in the INSERT itself cost more than
        both statements: an INSERT that reads its own table first copies what it reads into
        a temporary table.)"""
        if not events:
            return
        version = conn.execute("PRAGMA data_version").fetchone()[0]
        known = self._next_head or self._audit_head
        if known is not None and known.conn is conn and known.version == version:
            head = known.hash
        else:
            head = conn.execute(f"SELECT {fragments.CHAIN_HEAD}").fetchone()[0]
        values, last = codecs.chained(events, head, self._audit_key)
        _insert_rows(conn, "audit", hashing.AUDIT_COLUMNS, values)
        self._next_head = _Head(conn, version, last)

    async def append_audit(self, events: Sequence[AuditEvent]) -> None:
        """Durable before it returns. Appends arriving together share one commit on the event
        loop's connection (`GroupCommit`): one transaction and one sync of the log for all."""
        if events:
            await self._audits.add(events)

    async def _commit_audit(self, events: list[AuditEvent]) -> None:
        await self._write(lambda conn: self._append_audit(conn, events))
        self._appended(events)

    async def prune_audit(
        self, before: str, record: Callable[[AuditCheckpoint], AuditEvent]
    ) -> AuditCheckpoint | None:
        def tx(conn: sqlite3.Connection) -> AuditCheckpoint | None:
            kept = conn.execute("SELECT MIN(seq) FROM audit WHERE time >= ?", (before,)).fetchone()[
                0
            ]
            last = conn.execute(
                "SELECT seq, hash FROM audit WHERE seq < ? ORDER BY seq DESC LIMIT 1",
                (kept if kept is not None else 2**62,),
            ).fetchone()
            if last is None:
                return None
            removed = conn.execute("DELETE FROM audit WHERE seq <= ?", (last[0],)).rowcount
            point = AuditCheckpoint(last[0], last[1], audit_time(now_utc()), removed, before)
            conn.execute(
                f"INSERT INTO audit_checkpoints ({', '.join(schema.CHECKPOINT_COLUMNS)}) "
                f"VALUES ({placeholders(schema.CHECKPOINT_COLUMNS)})",
                (point.seq, point.hash, point.time, point.removed, point.before),
            )
            self._append_audit(conn, [record(point)])
            return point

        point = await self._db.run(lambda: self._tx(tx))
        if point is not None:
            self._hub.publish(AUDIT_FEED)
        return point

    # ------------------------------------------------------------------ drive locks

    def drive_lock(self, run_id: str) -> AbstractAsyncContextManager[None]:
        if self._drive_locks is None:
            raise StoreUnavailable("the run store is closed")
        return self._drive_locks.hold(run_lock_key("", run_id))

    # ------------------------------------------------------------------ lifecycle

    async def healthy(self) -> bool:
        """Whether the store can persist: the file guard, then a real write (a no-op update
        committed durably)."""
        try:
            await self._db.run(
                lambda: self._tx(
                    lambda conn: conn.execute("UPDATE schema_version SET version = version")
                )
            )
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
