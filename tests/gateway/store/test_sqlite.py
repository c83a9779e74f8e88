"""What only the SQLite store does: group commits of audit appends, a busy file, the schema
migration from version 1, and drive locks shared by the processes of one file.

The contract both stores keep is tested in test_contract.py."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest

from gateway.audit.records import AuditEvent
from gateway.errors import StoreUnavailable
from gateway.model import EventKind, NextAction, RunRecord, RunState, TurnRecord, revised
from gateway.store.sqlite import SQLiteStore

NOW = datetime(2026, 11, 29, 21, 0, tzinfo=UTC)


async def test_concurrent_audit_appends_share_commits_and_keep_one_chain(tmp_path: Path) -> None:
    import asyncio

    store = await SQLiteStore.open(tmp_path / "s.db")
    await asyncio.gather(
        *(
            store.append_audit(
                [AuditEvent(kind="authorize", subject="a", run_id="r1", call_id=f"c{i}", time=NOW)]
            )
            for i in range(20)
        )
    )
    recs = await store.audit_rows("r1")
    assert sorted(r["call_id"] for r in recs) == sorted(f"c{i}" for i in range(20))
    assert all(r["prev_hash"] == p["hash"] for p, r in zip(recs, recs[1:], strict=False))
    await store.close()


class WriteLog:
    """What a store does, in order: each statement that starts with one of `prefixes` (as that
    prefix) and each sync of a log ("sync"); the connections those statements ran on, and the
    files synced."""

    def __init__(
        self, store: SQLiteStore, monkeypatch: pytest.MonkeyPatch, prefixes: tuple[str, ...]
    ) -> None:
        from gateway.store import sqlite_connections

        self.done: list[str] = []
        self.conns: set[int] = set()
        self.synced: set[str] = set()
        real_fdatasync = os.fdatasync

        def fdatasync(fd: int) -> None:
            self.synced.add(os.path.realpath(f"/proc/self/fd/{fd}"))
            self.done.append("sync")
            real_fdatasync(fd)

        monkeypatch.setattr(sqlite_connections.os, "fdatasync", fdatasync)
        for conn in store.connections:
            conn.set_trace_callback(self._tracer(conn, prefixes))

    def _tracer(self, conn: sqlite3.Connection, prefixes: tuple[str, ...]) -> Callable[[str], None]:
        def trace(statement: str) -> None:
            for what in prefixes:
                if statement.startswith(what):
                    self.done.append(what)
                    self.conns.add(id(conn))

        return trace


async def test_audit_appends_arriving_together_share_one_insert_and_one_sync(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Authorize's appends are committed on the event loop's connection (no thread between
    the caller and the commit), all those that arrive together in one INSERT, durable by one
    fdatasync of the log before any of their callers goes on."""
    store = await SQLiteStore.open(tmp_path / "s.db")

    async def append(i: int) -> int:
        await store.append_audit(
            [AuditEvent(kind="authorize", subject="a", run_id="r1", call_id=f"c{i}", time=NOW)]
        )
        return log.done.count("sync")  # syncs by the time this caller goes on

    try:
        log = WriteLog(store, monkeypatch, ("INSERT INTO audit",))
        assert await asyncio.gather(*(append(i) for i in range(8))) == [1] * 8
        assert log.done == ["INSERT INTO audit", "sync"]
        assert log.conns == {id(store._db.loop)}
        assert len(await store.audit_rows("r1")) == 8
    finally:
        await store.close()


async def test_an_append_after_another_connections_chains_after_its_record(
    tmp_path: Path,
) -> None:
    """A store's connection remembers the head it committed; once another connection has
    appended (another process's store, or this store's other connection), the next append
    chains after that record, not after the remembered one."""
    store = await SQLiteStore.open(tmp_path / "s.db")
    other = await SQLiteStore.open(tmp_path / "s.db")

    def event(i: int) -> AuditEvent:
        return AuditEvent(kind="authorize", subject="a", run_id="r1", call_id=f"c{i}", time=NOW)

    def on_thread(i: int) -> Callable[[sqlite3.Connection], None]:
        return lambda conn: store._append_audit(conn, [event(i)])

    try:
        thread = store._db.thread
        assert thread is not None
        await store.append_audit([event(0)])  # the loop's connection
        await other.append_audit([event(1)])
        await store.append_audit([event(2)])
        await store._db.run(lambda: store._tx(on_thread(3), thread))
        await store._db.run(lambda: store._tx(on_thread(4), thread))
        await store.append_audit([event(5)])
        recs = await store.audit_rows("r1")
        assert [r["call_id"] for r in recs] == [f"c{i}" for i in range(6)]
        assert [r["prev_hash"] for r in recs[1:]] == [r["hash"] for r in recs[:-1]]
    finally:
        await other.close()
        await store.close()


async def test_an_update_of_a_run_or_a_turn_writes_only_its_own_page(tmp_path: Path) -> None:
    """An update sets what may change, not a run's owner and creation time or a turn's place
    (what the tables' other indexes hold): SQLite rewrites an index entry for each column
    an UPDATE names, changed or not, and each such page goes into the log whole."""
    db = tmp_path / "s.db"
    store = await SQLiteStore.open(db)
    log = Path(f"{db}-wal")
    frame = 24 + 4096  # a frame's header and its page

    async def frames(write: Awaitable[object]) -> float:
        before = log.stat().st_size
        await write
        return (log.stat().st_size - before) / frame

    try:
        run = await store.create_run(_run_record("r1"))
        turn = TurnRecord("r1", "t1", 1, EventKind.TOOL_REQUEST, "h", created_at=NOW)
        await store.begin_turn(revised(run, turns_used=1), turn, [])
        assert await frames(store.save(run=revised(run, turns_used=1, tool_calls_used=2))) == 1
        done = revised(turn, next=NextAction.CONTINUE, reason="ok")
        assert await frames(store.save(turn=done)) == 1
        stored = await store.get_run("r1")
        assert stored is not None and stored.tool_calls_used == 2
        assert (stored.subject, stored.tenant, stored.created_at) == ("a", "t", NOW)
    finally:
        await store.close()


async def test_an_audit_append_that_cannot_commit_fails_every_waiter(tmp_path: Path) -> None:
    import asyncio

    store = await SQLiteStore.open(tmp_path / "s.db", busy_timeout_s=0.1)
    lock = sqlite3.connect(tmp_path / "s.db", isolation_level=None)
    lock.execute("BEGIN EXCLUSIVE")
    try:
        results = await asyncio.gather(
            *(
                store.append_audit(
                    [AuditEvent(kind="authorize", subject="a", run_id="r1", time=NOW)]
                )
                for _ in range(3)
            ),
            return_exceptions=True,
        )
    finally:
        lock.execute("ROLLBACK")
        lock.close()
    assert all(isinstance(r, StoreUnavailable) for r in results)
    assert await store.audit_rows("r1") == []
    await store.close()


CHILD = """
import asyncio, sys
from pathlib import Path
from gateway.store.sqlite import SQLiteStore

async def main() -> None:
    store = await SQLiteStore.open(Path(sys.argv[1]))
    async with store.drive_lock(sys.argv[2]):
        print("held", flush=True)
        await asyncio.to_thread(sys.stdin.readline)

asyncio.run(main())
"""


async def test_a_drive_lock_excludes_other_processes_until_they_die(tmp_path: Path) -> None:
    import asyncio
    import subprocess
    import sys

    from gateway.store.locks import FileRangeLocks, run_lock_key

    db = tmp_path / "s.db"
    store = await SQLiteStore.open(db)
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(db), "r1"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None and child.stdout.readline() == "held\n"
        locks = FileRangeLocks.for_file(Path(f"{db}-runs.lock"))
        try:
            assert not locks._try(run_lock_key("", "r1"))  # the other process holds it
            assert locks._try(run_lock_key("", "r2"))  # another run is free
            locks._unlock(run_lock_key("", "r2"))
        finally:
            locks.close()
        waiting = asyncio.create_task(store.drive_lock("r1").__aenter__())
        await asyncio.sleep(0)  # let it try, fail and start waiting
        assert not waiting.done()
        child.kill()  # a holder that dies releases the lock
        async with asyncio.timeout(10):
            await waiting
    finally:
        child.kill()
        child.wait()
        if child.stdout is not None:
            child.stdout.close()
        if child.stdin is not None:
            child.stdin.close()
    await store.close()


def test_the_writer_lock_admits_one_holder_and_gives_up_at_its_timeout(tmp_path: Path) -> None:
    from gateway.store.locks import WriterLock

    first, second = (WriterLock(tmp_path / "w.lock", timeout_s=0.05) for _ in range(2))
    try:
        assert first.acquire()
        assert not second.acquire()  # held by another open file: waits 50 ms, then no
        first.release()
        assert second.acquire()
        assert not first.acquire()
        second.release()
    finally:
        first.close()
        second.close()


async def test_a_write_waits_for_the_writer_lock_and_fails_cleanly_when_it_stays_taken(
    tmp_path: Path,
) -> None:
    from gateway.store.locks import WriterLock

    store = await SQLiteStore.open(tmp_path / "s.db", busy_timeout_s=0.1)
    other = WriterLock(Path(f"{tmp_path / 's.db'}-write.lock"), timeout_s=1)
    event = AuditEvent(kind="authorize", subject="a", run_id="r1", call_id="c1", time=NOW)
    try:
        assert other.acquire()
        with pytest.raises(StoreUnavailable, match="another process kept writing"):
            await store.append_audit([event])
        other.release()
        await store.append_audit([event])  # nothing was half-written: the chain continues
        assert [r["call_id"] for r in await store.audit_rows("r1")] == ["c1"]
    finally:
        other.close()
        await store.close()


# ---------------------------------------------------------------------- the loop's connection


def _run_record(run_id: str) -> RunRecord:
    return RunRecord(
        run_id=run_id,
        state=RunState.ACTIVE,
        subject="a",
        tenant="t",
        provider="openai.responses",
        created_at=NOW,
        updated_at=NOW,
    )


async def _after_rounds_of_the_loop(
    release: Callable[[], object], since: float, rounds: int = 50
) -> float:
    """release() once the event loop has come round `rounds` times; answers the longest the
    loop went without coming round from `since` (a write waiting on it for a lock: the busy
    timeout)."""
    longest, last = 0.0, since
    for _ in range(rounds):
        await asyncio.sleep(0)
        now = time.monotonic()
        longest, last = max(longest, now - last), now
    release()
    return longest


async def test_a_write_waiting_for_another_process_waits_off_the_event_loop(tmp_path: Path) -> None:
    """The loop's connection never waits: while another process holds the writer lock the
    write is handed to the store thread, and the loop goes on serving."""
    from gateway.store.locks import WriterLock

    store = await SQLiteStore.open(tmp_path / "s.db", busy_timeout_s=2)
    other = WriterLock(Path(f"{tmp_path / 's.db'}-write.lock"), timeout_s=1)
    try:
        assert other.acquire()
        since = time.monotonic()
        write = asyncio.create_task(store.create_run(_run_record("r1")))
        release = asyncio.create_task(_after_rounds_of_the_loop(other.release, since))
        assert (await write).run_id == "r1"
        assert await release < 1.0, "the loop went on while the write waited (2 s)"
    finally:
        other.close()
        await store.close()


async def test_a_write_waiting_for_sqlites_own_lock_waits_off_the_event_loop(
    tmp_path: Path,
) -> None:
    """Any program holding SQLite's write lock (here a plain connection) makes the loop's
    connection busy at once; the store thread waits for the lock instead."""
    store = await SQLiteStore.open(tmp_path / "s.db", busy_timeout_s=2)
    holder = sqlite3.connect(tmp_path / "s.db", isolation_level=None)
    try:
        holder.execute("BEGIN IMMEDIATE")
        since = time.monotonic()
        write = asyncio.create_task(store.create_run(_run_record("r1")))
        release = asyncio.create_task(
            _after_rounds_of_the_loop(lambda: holder.execute("COMMIT"), since)
        )
        assert (await write).run_id == "r1"
        assert await release < 1.0, "the loop went on while the write waited (2 s)"
        assert await store.get_run("r1") is not None
    finally:
        holder.close()
        await store.close()


async def test_the_store_thread_checkpoints_what_the_loops_connection_wrote(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The loop's connection leaves its commits in the WAL; after CHECKPOINT_EVERY of them the
    store thread copies them into the database file."""
    from gateway.store import sqlite_connections as module

    monkeypatch.setattr(module, "CHECKPOINT_EVERY", 5)
    db = tmp_path / "s.db"
    store = await SQLiteStore.open(db)

    def runs_in_the_file() -> int:  # the database file alone, without its WAL
        conn = sqlite3.connect(f"file:{db}?immutable=1", uri=True)
        try:
            if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'runs'").fetchone():
                return 0  # not even the schema is in it yet
            return int(conn.execute("SELECT count(*) FROM runs").fetchone()[0])
        finally:
            conn.close()

    try:
        for i in range(4):
            await store.create_run(_run_record(f"r{i}"))
        assert runs_in_the_file() == 0, "nothing was checkpointed yet"
        await store.create_run(_run_record("r4"))
        task = store._db.checkpointing
        assert task is not None
        await task
        assert runs_in_the_file() == 5
    finally:
        await store.close()


async def test_a_turn_begun_without_durable_commits_without_syncing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """begin_turn(durable=False) commits without syncing the log; the default, and every
    other write, syncs it (fdatasync of the -wal file) before returning. All of them on the
    event loop's one connection: a second connection writing in between would make SQLite
    drop its page cache."""
    from gateway.model import EventKind, TurnRecord

    store = await SQLiteStore.open(tmp_path / "s.db")

    def turn(n: int) -> TurnRecord:
        return TurnRecord(
            run_id="r1",
            turn_id=f"t{n}",
            seq=n,
            event=EventKind.TOOL_REQUEST,
            content_hash="h",
            created_at=NOW,
        )

    try:
        log = WriteLog(
            store, monkeypatch, ("INSERT OR IGNORE INTO runs", "INSERT INTO turns", "UPDATE turns")
        )
        run = await store.create_run(_run_record("r1"))
        await store.begin_turn(run, turn(1), [], durable=False)
        await store.save(turn=turn(1))
        await store.begin_turn(run, turn(2), [])
        assert log.done == [
            "INSERT OR IGNORE INTO runs",
            "sync",
            "INSERT INTO turns",
            "UPDATE turns",
            "sync",
            "INSERT INTO turns",
            "sync",
        ]
        assert len(log.conns) == 1
        assert log.synced == {os.path.realpath(tmp_path / "s.db-wal")}
    finally:
        await store.close()


async def test_writes_arriving_together_share_one_sync_and_none_returns_before_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Writes committed on the event loop's connection one after another (turns of different
    runs saving their results, say) wait for one fdatasync of the log together: each caller
    goes on only once a sync that began after its commit has ended."""
    store = await SQLiteStore.open(tmp_path / "s.db")

    async def create(i: int) -> int:
        await store.create_run(_run_record(f"r{i}"))
        return log.done.count("sync")  # syncs by the time this caller goes on

    try:
        log = WriteLog(store, monkeypatch, ("INSERT OR IGNORE INTO runs",))
        assert await asyncio.gather(*(create(i) for i in range(8))) == [1] * 8
        assert log.done == ["INSERT OR IGNORE INTO runs"] * 8 + ["sync"]
        # and the next write, alone, has a sync of its own
        assert await create(8) == 2
        assert log.done[-2:] == ["INSERT OR IGNORE INTO runs", "sync"]
    finally:
        await store.close()


async def test_a_shared_sync_that_fails_fails_every_write_that_waited_for_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno

    from gateway.store import sqlite_connections

    store = await SQLiteStore.open(tmp_path / "s.db")
    syncs: list[int] = []

    def fdatasync(fd: int) -> None:
        syncs.append(fd)
        raise OSError(errno.EIO, "Input/output error")

    try:
        monkeypatch.setattr(sqlite_connections.os, "fdatasync", fdatasync)
        results = await asyncio.gather(
            *(store.create_run(_run_record(f"r{i}")) for i in range(5)), return_exceptions=True
        )
        assert len(syncs) == 1
        assert all(isinstance(r, StoreUnavailable) for r in results), results
        assert all("could not sync its log" in str(r) for r in results)
    finally:
        monkeypatch.undo()
        await store.close()


async def test_a_log_that_cannot_be_synced_fails_the_write_closed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The disk refusing to sync the log after a commit: the caller gets StoreUnavailable
    (so no outcome leaves as if recorded), never an unexpected error."""
    import errno

    from gateway.store import sqlite_connections

    store = await SQLiteStore.open(tmp_path / "s.db")

    def fdatasync(fd: int) -> None:
        raise OSError(errno.EIO, "Input/output error")

    try:
        monkeypatch.setattr(sqlite_connections.os, "fdatasync", fdatasync)
        with pytest.raises(StoreUnavailable, match="could not sync its log"):
            await store.create_run(_run_record("r1"))
        monkeypatch.undo()
        assert await store.create_run(_run_record("r2")) is not None  # the store goes on
    finally:
        await store.close()


async def test_a_cancelled_caller_keeps_the_store_until_its_statements_end(tmp_path: Path) -> None:
    """A write waiting on the store thread goes on when its caller is cancelled; what comes
    next waits for it, and sees what it wrote."""
    from gateway.store.locks import WriterLock

    store = await SQLiteStore.open(tmp_path / "s.db", busy_timeout_s=5)
    other = WriterLock(Path(f"{tmp_path / 's.db'}-write.lock"), timeout_s=1)
    try:
        assert other.acquire()
        write = asyncio.create_task(store.create_run(_run_record("r1")))
        await asyncio.sleep(0)  # handed to the store thread, which waits for the lock
        write.cancel()
        read = asyncio.create_task(store.get_run("r1"))
        for _ in range(100):  # ample rounds of the loop for a read that need not wait
            await asyncio.sleep(0)
        assert not read.done(), "the read waits for the cancelled write's statements"
        other.release()
        with pytest.raises(asyncio.CancelledError):
            await write
        found = await read
        assert found is not None and found.run_id == "r1"
    finally:
        other.close()
        await store.close()
