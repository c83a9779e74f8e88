"""Drive locks: "this run is being driven" for one holder at a time.

`KeyedLocks` serializes the tasks of one process; `FileRangeLocks` extends that to every
process that shares a SQLite store, with POSIX record locks on one byte per run of a lock file
beside the database. The kernel drops a process's record locks when it dies, so a replica killed
mid-turn never leaves a run locked. (The PostgreSQL store uses advisory locks instead.)
"""

from __future__ import annotations

import asyncio
import errno
import fcntl
import hashlib
import os
import threading
import time
import weakref
from collections.abc import AsyncIterator, Hashable
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from pathlib import Path
from typing import ClassVar

DEADLOCK_BACKOFF_S = (0.01, 0.5)  # first and longest pause after a (false) EDEADLK


def run_lock_key(namespace: str, run_id: str) -> int:
    """A stable 62-bit key for a run's lock (fits a PostgreSQL bigint and a file offset)."""
    digest = hashlib.sha256(f"{namespace}\0{run_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 2


class KeyedLocks:
    """An asyncio lock per key, kept only while a task holds or waits for it."""

    def __init__(self) -> None:
        self._locks: weakref.WeakValueDictionary[Hashable, asyncio.Lock] = (
            weakref.WeakValueDictionary()
        )

    def get(self, key: Hashable) -> asyncio.Lock:
        lock = self._locks.get(key)
        if lock is None:
            lock = asyncio.Lock()
            self._locks[key] = lock
        return lock

    @asynccontextmanager
    async def hold(self, key: Hashable) -> AsyncIterator[None]:
        async with self.get(key):
            yield


class FileRangeLocks:
    """Exclusive one-byte record locks on a lock file, by slot (use `for_file`).

    POSIX record locks belong to a process, not to a task or a file descriptor: two holders in
    one process would not exclude each other, and closing any descriptor of the file drops them
    all. So one instance serves each file per process, and its in-process `KeyedLocks` admit
    one task per slot before the kernel is asked.
    """

    _open: ClassVar[dict[str, FileRangeLocks]] = {}
    _open_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, path: str) -> None:
        self.path = path
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        self._local = KeyedLocks()
        self._users = 0
        self._waiters = ThreadPoolExecutor(max_workers=32, thread_name_prefix="callgate-lock")

    @classmethod
    def for_file(cls, path: Path) -> FileRangeLocks:
        key = os.path.realpath(path)
        with cls._open_lock:
            locks = cls._open.get(key)
            if locks is None:
                locks = cls._open[key] = cls(key)
            locks._users += 1
            return locks

    def close(self) -> None:
        with self._open_lock:
            self._users -= 1
            if self._users > 0:
                return
            del self._open[self.path]
        self._waiters.shutdown(wait=False, cancel_futures=True)
        os.close(self._fd)

    @asynccontextmanager
    async def hold(self, slot: int) -> AsyncIterator[None]:
        local = self._local.get(slot)
        await local.acquire()
        handed_off = False
        try:
            if not self._try(slot):
                waiting = asyncio.get_running_loop().run_in_executor(
                    self._waiters, self._wait, slot
                )
                try:
                    await asyncio.shield(waiting)
                except asyncio.CancelledError:
                    # the thread may still get the lock: release it (and the slot) when it does
                    handed_off = True
                    waiting.add_done_callback(lambda f: self._abandon(slot, local, f))
                    raise
            try:
                yield
            finally:
                self._unlock(slot)
        finally:
            if not handed_off:
                local.release()

    def _try(self, slot: int) -> bool:
        try:
            fcntl.lockf(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, slot)
        except OSError as exc:
            if exc.errno in (errno.EAGAIN, errno.EACCES):
                return False
            raise
        return True

    def _wait(self, slot: int) -> None:
        """Block (on a waiter thread) until the slot is ours. The kernel's deadlock check sees
        processes, not tasks, and may refuse a wait that is no deadlock (each process holds
        another run); such a refusal is retried after a pause."""
        pause = DEADLOCK_BACKOFF_S[0]
        while True:
            try:
                fcntl.lockf(self._fd, fcntl.LOCK_EX, 1, slot)
                return
            except OSError as exc:
                if exc.errno != errno.EDEADLK:
                    raise
            time.sleep(pause)
            pause = min(pause * 2, DEADLOCK_BACKOFF_S[1])

    def _unlock(self, slot: int) -> None:
        fcntl.lockf(self._fd, fcntl.LOCK_UN, 1, slot)

    def _abandon(self, slot: int, local: asyncio.Lock, waited: asyncio.Future[None]) -> None:
        if not waited.cancelled() and waited.exception() is None:
            self._unlock(slot)
        local.release()


class WriterLock:
    """One SQLite writer at a time among the processes sharing a store, taken before
    `BEGIN IMMEDIATE`. SQLite's own busy handler retries after sleeping 1, 2, 5, 10 ... up to
    100 ms, so under contention a write waits far longer than the transaction it waits for;
    this lock is retried every `POLL_S` instead (an `flock` on a file beside the database,
    dropped by the kernel when its holder dies), for at most `timeout_s`."""

    POLL_S = 0.0002

    def __init__(self, path: Path, timeout_s: float) -> None:
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        self._timeout_s = timeout_s

    def acquire(self, *, wait: bool = True) -> bool:
        """Whether the lock was taken within the timeout (at once, without `wait`)."""
        deadline = time.monotonic() + self._timeout_s
        while True:
            try:
                fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return True
            except BlockingIOError:
                if not wait or time.monotonic() >= deadline:
                    return False
            time.sleep(self.POLL_S)

    def release(self) -> None:
        fcntl.flock(self._fd, fcntl.LOCK_UN)

    def close(self) -> None:
        os.close(self._fd)
