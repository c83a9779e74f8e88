"""Where a SQLite store's statements run: on the event loop's thread, or on the store's own.

A turn's own reads and writes (its context, its two commits, a run's creation and the small
look-ups around them) and the audit appends of `Authorize` (group-committed,
`gateway.store.group`) run on the event loop's thread, on a connection that never waits: its
busy timeout is zero and it does not checkpoint. When a lock it needs is held (another
process writing, `serve --workers`, or any other program holding SQLite's lock) the same work
runs on the store's own thread instead, on a connection that waits for the lock up to the
busy timeout; so does everything that may take long (pages of a run, audit queries, pruning,
the health probe, checkpoints). Handing each turn's statements to a thread cost more than the
statements: under load the two threads traded the GIL for every statement, and on a small VM
one round trip to a thread and back costs about 120 µs of CPU. An asyncio lock (the gate)
keeps the connections' uses one at a time, in order, as a single connection's were.

The loop's connection commits with synchronous=NORMAL (into the write-ahead log, without
syncing it), and a commit that must be durable is followed by an fdatasync of the log file, on
the loop, before the caller goes on: what FULL does inside COMMIT, except that one sync serves
every commit before it (the store groups the syncs of commits that arrive together). A commit
that need not sync on its own (the first commit of a turn that only reads: its frames reach
the disk with the turn's settling commit, whose sync covers the whole log) skips it. Neither of
the simpler ways is as cheap: a second connection for the unsynced commits makes SQLite drop
each connection's page cache whenever the other has written (about 50 page reads from the file
per turn), and switching one connection's level with PRAGMA synchronous expires its prepared
statements (every statement after it is compiled again).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sqlite3
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

from gateway.errors import StoreUnavailable
from gateway.threadname import name_os_thread

T = TypeVar("T")
log = logging.getLogger("callgate.store")

# the loop's connection does not checkpoint; the store thread checkpoints after this many of
# its commits (SQLite's own default is after 1,000 pages of WAL, a few dozen turns)
CHECKPOINT_EVERY = 64


class Busy(Exception):
    """A lock the loop's connection would have to wait for is held."""


def unusable(exc: sqlite3.Error) -> StoreUnavailable:
    return StoreUnavailable(f"the run store could not be used: {exc}")


class Connections:
    """A store file's connections and the thread that may wait: the store thread's
    connection (`thread`) and the event loop's (`loop`)."""

    def __init__(self, path: Path, busy_timeout_s: float) -> None:
        self.path = path
        self._busy_timeout_s = busy_timeout_s
        self._pool = ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="callgate-sqlite", initializer=name_os_thread
        )
        self.thread: sqlite3.Connection | None = None
        self.loop: sqlite3.Connection | None = None
        self._log: int | None = None  # the write-ahead log's file descriptor, for fdatasync
        self._thread_id = 0
        self._gate = asyncio.Lock()  # one use of a connection at a time
        self._commits = 0  # on the loop's connection since the last checkpoint
        self.checkpointing: asyncio.Task[None] | None = None

    # ------------------------------------------------------------------ opening, closing

    def open_thread(self) -> sqlite3.Connection:
        """On the store thread: its connection, the file in WAL mode."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(
            self.path, timeout=self._busy_timeout_s, isolation_level=None, check_same_thread=False
        )
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")
        conn.execute("PRAGMA foreign_keys=ON")
        self.thread = conn
        self._thread_id = threading.get_ident()
        return conn

    def open_loop(self) -> None:
        """The event loop's connection (once the schema is in place: the log exists while a
        connection is open, and is never removed while this store's are)."""
        conn = sqlite3.connect(self.path, timeout=0, isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA foreign_keys=ON")
        conn.execute("PRAGMA wal_autocheckpoint=0")
        conn.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()  # the log is there
        self._log = os.open(f"{self.path}-wal", os.O_RDONLY | os.O_CLOEXEC)
        self.loop = conn

    async def close(self) -> None:
        if self.checkpointing is not None:
            self.checkpointing.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.checkpointing

        def close() -> None:
            for conn in self.all:
                conn.close()
            self.thread = self.loop = None
            if self._log is not None:
                os.close(self._log)
                self._log = None

        await self.run(close)
        self._pool.shutdown(wait=True)

    # ------------------------------------------------------------------ which connection

    @property
    def conn(self) -> sqlite3.Connection:
        """The connection of the calling thread: the store thread's, or the event loop's."""
        conn = self.thread if threading.get_ident() == self._thread_id else self.loop
        if conn is None:
            raise StoreUnavailable("the run store is closed")
        return conn

    @property
    def all(self) -> tuple[sqlite3.Connection, ...]:
        """Every connection open (the store thread's first)."""
        return tuple(c for c in (self.thread, self.loop) if c is not None)

    def unsynced(self, conn: sqlite3.Connection) -> bool:
        """Whether what conn committed is durable only once the log is synced (`sync_log`):
        the loop's connection commits without syncing (synchronous=NORMAL); the store
        thread's synced inside COMMIT (FULL)."""
        return conn is self.loop and self._log is not None

    async def sync_log(self) -> None:
        """Make every commit of the loop's connection so far durable: its log file synced
        (holding the connections, so that closing them waits for it)."""
        async with self._gate:
            if self._log is None:
                raise StoreUnavailable("the run store is closed")
            try:
                os.fdatasync(self._log)
            except OSError as exc:
                raise StoreUnavailable(
                    f"the run store could not sync its log to disk: {exc} "
                    "(what was just committed may not survive a power loss)"
                ) from exc

    def waits(self, conn: sqlite3.Connection) -> bool:
        """Whether conn may wait for a lock (only the store thread's)."""
        return conn is self.thread

    # ------------------------------------------------------------------ running

    async def run(self, fn: Callable[[], T]) -> T:
        """fn on the store thread (its connection)."""
        async with self._gate:
            return await self._on_thread(fn)

    async def here(self, fn: Callable[[], T]) -> T:
        """fn on the event loop's thread (its connection), or on the store thread when a lock
        it needs is held (fn raised `Busy`, or SQLite answered busy)."""
        async with self._gate:
            if self.loop is None:
                raise StoreUnavailable("the run store is closed")
            try:
                return fn()
            except Busy:
                pass
            except sqlite3.OperationalError as exc:
                # (the primary code: BUSY_RECOVERY, BUSY_SNAPSHOT... are busy too)
                if exc.sqlite_errorcode & 0xFF not in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
                    raise unusable(exc) from exc
            except sqlite3.Error as exc:
                raise unusable(exc) from exc
            return await self._on_thread(fn)

    async def _on_thread(self, fn: Callable[[], T]) -> T:
        """fn on the store thread; a caller cancelled meanwhile still waits for it to end (so
        the gate it holds is not released while its statements run)."""
        done = asyncio.get_running_loop().run_in_executor(self._pool, fn)
        try:
            try:
                return await asyncio.shield(done)
            except asyncio.CancelledError:
                with contextlib.suppress(Exception):
                    await done
                raise
        except sqlite3.Error as exc:
            raise unusable(exc) from exc

    # ------------------------------------------------------------------ checkpoints

    def committed(self) -> None:
        """After a write `here`: every CHECKPOINT_EVERY of them, the store thread checkpoints
        (in the background)."""
        self._commits += 1
        if self._commits >= CHECKPOINT_EVERY and self.checkpointing is None:
            self._commits = 0
            self.checkpointing = asyncio.create_task(self._checkpoint())

    async def _checkpoint(self) -> None:
        try:
            await self.run(lambda: self.conn.execute("PRAGMA wal_checkpoint(PASSIVE)"))
        except StoreUnavailable as err:  # the next one may succeed; health reports the store
            log.warning("WAL checkpoint failed: %s", err.message)
        finally:
            self.checkpointing = None
