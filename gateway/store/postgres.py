"""PostgreSQL RunStore (psycopg 3, async, connection pools): several replicas share runs.

The tables live in the connection's current schema (pick one with
`?options=-csearch_path%3Dname` on the URL; it must exist). How the replicas coordinate, all
of it in the database:

- drive locks and settlement notifications: `pgcoord` (a session advisory lock per run; one
  connection per replica `LISTEN`s for what the others commit). A settlement's `NOTIFY` goes
  in the settling transaction; audit appends notify a second channel the same way (QueryAudit
  followers).
- the claim to execute a call: guarded UPDATEs (expected status and execution count in the
  WHERE clause; anything but one row rolls the commit back with `StoreConflict`).
- the audit chain: appended under a transaction advisory lock, so `seq` order is chain order.
  Records are chained after the head this replica last wrote and inserted only while it is
  still the head (another replica's append makes it read the head and insert again).
- a transaction's writes: one statement of data-modifying CTEs (`pgwrite`) after the chain's
  lock, so a turn's phase costs two round trips, not one per table.

psycopg and pool errors are translated here into `StoreUnavailable` (cause chained).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import TypeVar

import psycopg
from psycopg import AsyncConnection, sql
from psycopg_pool import AsyncConnectionPool, PoolTimeout

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
from gateway.store import codecs, fragments, pg_pins, pg_quotas, pg_writes, schema
from gateway.store.base import AsGiven, StoredForm, settles
from gateway.store.fragments import select
from gateway.store.group import GroupCommit
from gateway.store.locks import run_lock_key
from gateway.store.notify import Notifying, SettleHub
from gateway.store.pg_coordination import Conn, DriveLocks, Listener, unavailable
from gateway.store.pg_reads import PgReads
from gateway.store.pg_writes import Head, Write

T = TypeVar("T")
POOL_SIZE = 8  # connections for statements


def _column(name: str) -> str:
    return f"{name} {'BIGINT' if name in schema.INTEGER_COLUMNS else 'TEXT'}"


def _columns(names: Sequence[str]) -> str:
    return ", ".join(_column(c) for c in names)


DDL = [
    f"CREATE TABLE runs ({_columns(schema.RUN_COLUMNS)}, PRIMARY KEY (run_id))",
    f"CREATE TABLE turns ({_columns(schema.TURN_COLUMNS)}, PRIMARY KEY (run_id, turn_id))",
    # pos: insertion order (turns in sequence, calls in the model's order)
    f"CREATE TABLE calls (pos BIGSERIAL, {_columns(schema.CALL_COLUMNS)}, "
    "PRIMARY KEY (run_id, turn_id, call_id))",
    "CREATE UNIQUE INDEX calls_unique_id ON calls (run_id, call_id) "
    f"WHERE {fragments.NOT_DUPLICATE}",
    "CREATE INDEX calls_run ON calls (run_id, pos)",
    # pos: creation order (listings page by it)
    f"CREATE TABLE approvals (pos BIGSERIAL, {_columns(schema.APPROVAL_COLUMNS)}, "
    "PRIMARY KEY (approval_id))",
    "CREATE INDEX approvals_run ON approvals (run_id)",
    f"CREATE TABLE audit (seq BIGSERIAL PRIMARY KEY, {_columns(hashing.AUDIT_COLUMNS)})",
    "CREATE INDEX audit_run ON audit (run_id, seq)",
    *schema.tables(_column),
    *schema.indexes(),
]

MIGRATIONS = schema.migrations(_column)
# records written before schema 4 get the verdict their decision holds (for queries only:
# their hash covers decision_json, not this column)
MIGRATIONS[3].append(
    "UPDATE audit SET verdict = decision_json::json ->> 'verdict' WHERE decision_json IS NOT NULL"
)
# existing approvals are numbered in the order PostgreSQL finds them
MIGRATIONS[2].append("ALTER TABLE approvals ADD COLUMN pos BIGSERIAL")


def _marks(columns: Sequence[str]) -> str:
    return fragments.placeholders(columns, "%s")


def _sets(columns: Sequence[str]) -> str:
    return fragments.assignments(columns, "%s")


def describe(conninfo: str) -> str:
    """host:port/dbname of a connection string (never its password)."""
    try:
        info = psycopg.conninfo.conninfo_to_dict(conninfo)
    except psycopg.Error:
        return "(an unreadable connection URL)"
    return f"{info.get('host', 'localhost')}:{info.get('port', 5432)}/{info.get('dbname', '')}"


class PostgresStore(pg_quotas.PgQuotas, pg_pins.PgPins, PgReads, Notifying):
    name = "postgresql"

    def __init__(
        self,
        conninfo: str,
        *,
        timeout_s: float = 5.0,
        audit_key: AuditKey | None = None,
        stored: StoredForm | None = None,
    ) -> None:
        self._conninfo = conninfo
        self._timeout_s = timeout_s
        self._audit_key = audit_key
        self._stored = stored or AsGiven()
        self._pool: AsyncConnectionPool[Conn] = AsyncConnectionPool(
            conninfo,
            min_size=1,
            max_size=POOL_SIZE,
            open=False,
            timeout=timeout_s,
            configure=self._configure,
            name="callgate",
        )
        self._locks = DriveLocks(conninfo)
        self._hub = SettleHub()
        self._schema = ""
        self._audits = GroupCommit(self._commit_audit)
        self._reservations = GroupCommit(self._commit_reservations)
        self._channel = ""
        self._audit_channel = ""
        self._listener: Listener | None = None
        # the audit chain's head as this store last wrote it under the chain's lock (its
        # transaction may yet roll back: then the next guarded insert misses, and reads it)
        self._head: Head | None = None

    # ------------------------------------------------------------------ opening

    @classmethod
    async def open(
        cls,
        conninfo: str,
        *,
        timeout_s: float = 5.0,
        audit_key: AuditKey | None = None,
        stored: StoredForm | None = None,
    ) -> PostgresStore:
        store = cls(conninfo, timeout_s=timeout_s, audit_key=audit_key, stored=stored)
        try:
            await store._open()
        except BaseException:
            await store.close()
            raise
        return store

    async def _open(self) -> None:
        where = describe(self._conninfo)
        try:
            conn = await AsyncConnection.connect(
                self._conninfo, autocommit=True, connect_timeout=max(int(self._timeout_s), 1)
            )
        except psycopg.Error as exc:
            raise StoreUnavailable(f"cannot connect to PostgreSQL at {where}: {exc}") from exc
        try:
            self._schema = await self._current_schema(conn, where)
            await self._migrate(conn, where)
        except psycopg.Error as exc:
            raise unavailable(exc) from exc
        finally:
            await conn.close()
        digest = hashlib.sha256(self._schema.encode()).hexdigest()[:16]
        self._channel = f"callgate_settled_{digest}"
        self._audit_channel = f"callgate_audit_{digest}"
        try:
            await self._pool.open(wait=True, timeout=self._timeout_s)
            await self._locks.open(self._schema, self._timeout_s)
        except PoolTimeout as exc:
            raise StoreUnavailable(f"cannot open connections to PostgreSQL at {where}") from exc
        self._listener = Listener(
            self._conninfo, self._hub, settled=self._channel, audit=self._audit_channel
        )
        try:
            await self._listener.start(self._timeout_s)
        except TimeoutError as exc:
            raise StoreUnavailable(f"cannot LISTEN for settlements at {where}") from exc

    async def _configure(self, conn: Conn) -> None:
        """Statements wait at most the busy timeout for a row or table lock (another writer
        holding it), then fail as StoreUnavailable. Drive-lock connections wait as long as
        the run is driven elsewhere, so they are not configured so."""
        await conn.set_autocommit(True)
        await conn.execute(
            sql.SQL("SET lock_timeout = {}").format(
                sql.Literal(f"{max(int(self._timeout_s * 1000), 1)}ms")
            )
        )
        await conn.set_autocommit(False)

    @staticmethod
    async def _current_schema(conn: Conn, where: str) -> str:
        row = await (await conn.execute("SELECT current_schema()")).fetchone()
        if row is None or not row[0]:
            raise StoreUnavailable(
                f"PostgreSQL at {where}: no schema of the search_path exists; create it "
                "(CREATE SCHEMA name) or name one with ?options=-csearch_path%3Dname"
            )
        return str(row[0])

    async def _migrate(self, conn: Conn, where: str) -> None:
        async with conn.transaction():
            # replicas starting together: one creates or migrates, the others then see it
            await conn.execute(
                "SELECT pg_advisory_xact_lock(%s)", (run_lock_key(self._schema, "\0migrate"),)
            )
            await conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)"
            )
            row = await (await conn.execute("SELECT version FROM schema_version")).fetchone()
            if row is None:
                for stmt in DDL:
                    await conn.execute(stmt)
                await conn.execute(
                    "INSERT INTO schema_version VALUES (%s)", (schema.SCHEMA_VERSION,)
                )
                return
            version = int(row[0])
            if version > schema.SCHEMA_VERSION:
                raise StoreUnavailable(
                    f"store {where} (schema {self._schema}) has schema version {version}, "
                    f"newer than this callgate ({schema.SCHEMA_VERSION}); upgrade callgate"
                )
            for v in range(version, schema.SCHEMA_VERSION):
                for stmt in MIGRATIONS[v]:
                    await conn.execute(stmt)
            await conn.execute("UPDATE schema_version SET version = %s", (schema.SCHEMA_VERSION,))

    # ------------------------------------------------------------------ runs and turns

    async def create_run(self, run: RunRecord) -> RunRecord:
        async with self._tx() as conn:
            await conn.execute(
                f"INSERT INTO runs ({', '.join(schema.RUN_COLUMNS)}) "
                f"VALUES ({_marks(schema.RUN_COLUMNS)}) ON CONFLICT (run_id) DO NOTHING",
                codecs.run_row(run),
            )
            row = await self._one(
                conn, select(schema.RUN_COLUMNS, "runs") + " WHERE run_id = %s", (run.run_id,)
            )
        assert row is not None
        return codecs.run_from_row(row)

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
        """Every commit is durable here (`durable` is not used). One statement for the turn,
        its calls, the run and the audit records (plus the
        chain's lock, and the approvals when there are any)."""
        writes = [
            Write(
                f"INSERT INTO turns ({', '.join(schema.TURN_COLUMNS)}) "
                f"VALUES ({_marks(schema.TURN_COLUMNS)})",
                codecs.turn_row(turn),
            ),
            self._run_update(run),
        ]
        values = [codecs.call_row(self._stored.call(c)) for c in calls]
        writes += [
            pg_writes.insert("calls", schema.CALL_COLUMNS, chunk)
            for chunk in pg_writes.chunks(values, len(schema.CALL_COLUMNS))
        ]
        async with self._tx() as conn:
            done = await self._reserve(conn, reserve, (), audit, approvals)
            await self._save_approvals(conn, [self._stored.approval(a) for a in approvals], {})
            await self._write(conn, [*writes, *done.writes], audit, audit_locked=done.audit_locked)
        self._appended(audit)

    async def _reserve(
        self,
        conn: Conn,
        reserve: Sequence[Reservation],
        back: Sequence[CallRecord],
        audit: Sequence[AuditEvent],
        approvals: Sequence[ApprovalRecord],
    ) -> pg_quotas.Settled:
        """The commit's quotas, taking the chain's lock with the keys' when the commit appends
        records (with approvals to save first, the chain's lock waits for the records)."""
        early = self._audit_lock if audit and not approvals else None
        return await pg_quotas.reserve(conn, reserve, back, audit_lock=early)

    @staticmethod
    def _run_update(run: RunRecord) -> Write:
        return Write(
            f"UPDATE runs SET {_sets(schema.RUN_UPDATED)} WHERE run_id = %s",
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
        """One statement for the run, the turn, the calls (one guarded UPDATE), the audit
        records and the settlement's notification (plus the chain's lock, and the approvals
        when there are any)."""
        changed = run or turn
        settled = changed.run_id if changed is not None and settles(run, turn) else ""
        writes = [] if run is None else [self._run_update(run)]
        if turn is not None:
            writes.append(_turn_update(turn))
        stored = [self._stored.call(c) for c in calls]
        guards = fragments.guards(expect)
        if stored:  # counted: a guard that failed leaves its row out
            update = fragments.calls_update(len(stored), "%s", typed=True)
            writes.append(
                Write(
                    update + " RETURNING 1",
                    fragments.calls_update_values(stored, guards),
                    counted=True,
                )
            )
        async with self._tx() as conn:
            done = await self._reserve(conn, reserve, given_back(stored, expect), audit, approvals)
            await self._save_approvals(
                conn,
                [self._stored.approval(a) for a in approvals],
                fragments.approval_guards(expect_approvals),
            )
            counts = await self._write(
                conn,
                [*writes, *done.writes],
                audit,
                settled=settled,
                audit_locked=done.audit_locked,
            )
            if stored and counts[0] != len(stored):
                raise await self._conflict(conn, stored, guards)
        self._appended(audit)
        if settled:
            self._hub.publish(settled)

    async def _write(
        self,
        conn: Conn,
        writes: Sequence[Write],
        events: Sequence[AuditEvent],
        *,
        settled: str = "",
        audit_locked: bool = False,
    ) -> list[int]:
        """The writes, the events' audit records and the settlement's notification in one
        statement when they fit in it (else one statement each); answers the counted writes'
        counts. The audit records are chained after the head this store last wrote, under the
        chain's lock (which every replica takes, held until the transaction ends); when
        another writer appended since, the head is read and they are inserted again. The new
        head is remembered at once, while the lock is held, so that the next transaction of
        this store, waiting for the lock, finds it."""
        audit = last = None
        if events:
            if not audit_locked:
                await self._lock_audit(conn)
            if self._head is not None:
                chained, last = codecs.chained(events, self._head.hash, self._audit_key)
                audit = pg_writes.audit_insert(chained, guard=self._head.hash)
        notify = [(self._channel, settled)] if settled else []
        if pg_writes.fits(*writes, *([audit] if audit else [])):
            query, args = pg_writes.statement(
                writes, audit, notify=notify, audit_channel=self._audit_channel
            )
            row = await self._one(conn, query, args)
            assert row is not None
            counted = sum(w.counted for w in writes)
            counts, added = list(row[:counted]), row[counted] if audit else None
        else:  # each write alone (as large as it may be); then the records, the head read
            counts, added = [], None
            for w in writes:
                cur = await conn.execute(w.sql, w.args)
                if w.counted:
                    counts.append(cur.rowcount)
            if notify:
                await conn.execute("SELECT pg_notify(%s, %s)", notify[0])
        if events:
            head = (
                Head(added, last)
                if added is not None and last is not None
                else await self._append_read(conn, events)
            )
            self._head = head.later(self._head)
        return counts

    async def _append_read(self, conn: Conn, events: Sequence[AuditEvent]) -> Head:
        """The events chained after the head read now (the chain's lock is held)."""
        row = await self._one(conn, f"SELECT {fragments.CHAIN_HEAD}")
        assert row is not None
        chained, last = codecs.chained(events, row[0], self._audit_key)
        seq = 0
        for chunk in pg_writes.chunks(chained, len(hashing.AUDIT_COLUMNS)):
            query, args = pg_writes.statement(
                [], pg_writes.audit_insert(chunk), audit_channel=self._audit_channel
            )
            found = await self._one(conn, query, args)
            assert found is not None
            seq = found[0]
        return Head(seq, last)

    @staticmethod
    async def _conflict(
        conn: Conn, calls: Sequence[CallRecord], guards: fragments.Guards
    ) -> Exception:
        """Which guard failed: its row does not hold the new record."""
        for c in calls:
            expected = guards.get((c.turn_id, c.call_id))
            now = await PostgresStore._one(
                conn,
                "SELECT status, execution_count FROM calls WHERE run_id = %s "
                "AND turn_id = %s AND call_id = %s",
                (c.run_id, c.turn_id, c.call_id),
            )
            if expected is not None and now != (c.status.value, c.execution_count):
                return fragments.conflict(c, expected)
        return fragments.conflict(
            calls[0], guards.get((calls[0].turn_id, calls[0].call_id)) or ("", 0)
        )

    @staticmethod
    async def _save_approvals(
        conn: Conn, approvals: Sequence[ApprovalRecord], guards: dict[str, str]
    ) -> None:
        for a in approvals:
            values = codecs.approval_row(a)
            expected = guards.get(a.approval_id)
            if expected is None:
                await conn.execute(fragments.approval_upsert("%s"), values)
                continue
            cur = await conn.execute(
                fragments.approval_update("%s"), (*values[1:], a.approval_id, expected)
            )
            if cur.rowcount != 1:
                raise fragments.approval_conflict(a, expected)

    # ------------------------------------------------------------- audit and approvals (writes)

    @property
    def _audit_lock(self) -> int:
        """The audit chain's advisory lock (every replica of the schema takes the same)."""
        return run_lock_key(self._schema, "\0audit")

    async def _lock_audit(self, conn: Conn) -> None:
        await conn.execute("SELECT pg_advisory_xact_lock(%s)", (self._audit_lock,))

    async def append_audit(self, events: Sequence[AuditEvent]) -> None:
        """Durable before it returns. Appends arriving together share one transaction
        (`GroupCommit`): one round trip and one turn of the audit chain's lock for all."""
        if events:
            await self._audits.add(events)

    async def _commit_audit(self, events: list[AuditEvent]) -> None:
        async with self._tx() as conn:
            await self._write(conn, (), events)
        self._appended(events)

    async def prune_audit(
        self, before: str, record: Callable[[AuditCheckpoint], AuditEvent]
    ) -> AuditCheckpoint | None:
        async with self._tx() as conn:
            await self._lock_audit(conn)
            first = await self._one(conn, "SELECT MIN(seq) FROM audit WHERE time >= %s", (before,))
            kept = first[0] if first else None
            last = await self._one(
                conn,
                "SELECT seq, hash FROM audit WHERE seq < %s ORDER BY seq DESC LIMIT 1",
                (kept if kept is not None else 2**62,),
            )
            if last is None:
                return None
            cur = await conn.execute("DELETE FROM audit WHERE seq <= %s", (last[0],))
            point = AuditCheckpoint(last[0], last[1], audit_time(now_utc()), cur.rowcount, before)
            await conn.execute(
                f"INSERT INTO audit_checkpoints ({', '.join(schema.CHECKPOINT_COLUMNS)}) "
                f"VALUES ({_marks(schema.CHECKPOINT_COLUMNS)})",
                (point.seq, point.hash, point.time, point.removed, point.before),
            )
            events = [record(point)]
            await self._write(conn, (), events)
        self._appended(events)
        return point

    # ------------------------------------------------------------------ drive locks

    def drive_lock(self, run_id: str) -> AbstractAsyncContextManager[None]:
        return self._locks.hold(run_id)

    # ------------------------------------------------------------------ lifecycle

    async def healthy(self) -> bool:
        """Whether the store can persist: its notification listener runs and a real write
        (a no-op update) commits."""
        if self._listener is None or not self._listener.listening:
            return False
        try:
            async with self._tx() as conn:
                await conn.execute("UPDATE schema_version SET version = version")
        except StoreUnavailable:
            return False
        return True

    async def close(self) -> None:
        """Idempotent."""
        self._hub.close()
        if self._listener is not None:
            await self._listener.close()
        await self._locks.close()
        await self._pool.close()


def _turn_update(turn: TurnRecord) -> Write:
    return Write(
        f"UPDATE turns SET {_sets(schema.TURN_UPDATED)} WHERE run_id = %s AND turn_id = %s",
        (*codecs.turn_update(turn), turn.run_id, turn.turn_id),
    )
