"""How PostgreSQL replicas coordinate outside their transactions.

- `DriveLocks`: a session advisory lock per run (`pg_advisory_lock`), held on a connection of
  a small pool of its own for as long as the run is driven. A replica that dies loses its
  session, and the database releases its locks.
- `Listener`: one connection that `LISTEN`s on the schema's settlement and audit channels and
  wakes this replica's watchers for what any replica commits (their NOTIFY is sent inside the
  committing transaction, so it arrives only once the commit has).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import psycopg
from psycopg import AsyncConnection, sql
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from gateway.errors import StoreUnavailable
from gateway.store.locks import KeyedLocks, run_lock_key
from gateway.store.notify import AUDIT_FEED, SettleHub

log = logging.getLogger("callgate.store")

LOCK_POOL_SIZE = 32  # connections holding drive locks: runs driven at once by this replica
LOCK_WAIT_S = 60.0  # how long a drive waits for a free lock connection
LISTEN_RETRY_S = (0.1, 5.0)  # first and longest pause before the listener reconnects

Conn = AsyncConnection[tuple[Any, ...]]


def unavailable(exc: BaseException) -> StoreUnavailable:
    return StoreUnavailable(f"the run store could not be used: {exc}")


class DriveLocks:
    """Runs driven by one holder at a time, across replicas. Within this replica, drives of
    one run queue locally first, so that each waits on one database connection at most."""

    def __init__(self, conninfo: str) -> None:
        self.pool: AsyncConnectionPool[Conn] = AsyncConnectionPool(
            conninfo,
            min_size=1,
            max_size=LOCK_POOL_SIZE,
            open=False,
            timeout=LOCK_WAIT_S,
            kwargs={"autocommit": True},
            name="callgate-locks",
        )
        self._local = KeyedLocks()
        self.schema = ""  # lock keys are per schema: replicas of other schemas never wait

    async def open(self, schema: str, timeout_s: float) -> None:
        self.schema = schema
        await self.pool.open(wait=True, timeout=timeout_s)

    @asynccontextmanager
    async def hold(self, run_id: str) -> AsyncIterator[None]:
        key = run_lock_key(self.schema, run_id)
        async with self._local.hold(run_id):
            try:
                conn = await self.pool.getconn()
            except PoolTimeout as exc:
                raise StoreUnavailable(
                    f"no connection free to lock run {run_id} within "
                    f"{LOCK_WAIT_S:g} s: too many runs driven at once"
                ) from exc
            except psycopg.Error as exc:  # the pool is closed or cannot connect
                raise unavailable(exc) from exc
            try:
                await self._lock(conn, key)
                try:
                    yield
                finally:
                    await self._unlock(conn, key)
            finally:
                await self.pool.putconn(conn)

    @staticmethod
    async def _lock(conn: Conn, key: int) -> None:
        try:
            await conn.execute("SELECT pg_advisory_lock(%s)", (key,))
        except BaseException as exc:
            # the lock may have been granted as the wait was abandoned: it ends with the session
            await conn.close()
            if isinstance(exc, psycopg.Error):
                raise unavailable(exc) from exc
            raise

    @staticmethod
    async def _unlock(conn: Conn, key: int) -> None:
        try:
            await conn.execute("SELECT pg_advisory_unlock(%s)", (key,))
        except BaseException:
            await conn.close()  # the session, and the lock with it, ends here
            raise

    async def close(self) -> None:
        await self.pool.close()


class Listener:
    """Wakes `hub` for every settlement (payload: the run ID) and audit append any replica
    commits; reconnects when its connection breaks, and then wakes everyone (something may
    have been missed meanwhile)."""

    def __init__(self, conninfo: str, hub: SettleHub, *, settled: str, audit: str) -> None:
        self._conninfo = conninfo
        self._hub = hub
        self._settled = settled
        self._audit = audit
        self._listening = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    @property
    def listening(self) -> bool:
        return self._listening.is_set()

    async def start(self, timeout_s: float) -> None:
        """Listening within timeout_s, else TimeoutError (it keeps trying until closed)."""
        self._task = asyncio.create_task(self._listen(), name="callgate-listen")
        await asyncio.wait_for(self._listening.wait(), timeout_s)

    async def _listen(self) -> None:
        pause = LISTEN_RETRY_S[0]
        while True:
            try:
                conn = await AsyncConnection.connect(self._conninfo, autocommit=True)
                try:
                    for channel in (self._settled, self._audit):
                        await conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(channel)))
                    self._listening.set()
                    self._hub.publish_all()
                    pause = LISTEN_RETRY_S[0]
                    async for note in conn.notifies():
                        self._hub.publish(
                            AUDIT_FEED if note.channel == self._audit else note.payload
                        )
                finally:
                    self._listening.clear()
                    await conn.close()
            except psycopg.Error as exc:
                log.warning(
                    "listening for settlements failed (%s); reconnecting in %.1f s", exc, pause
                )
            await asyncio.sleep(pause)
            pause = min(pause * 2, LISTEN_RETRY_S[1])

    async def close(self) -> None:
        """Idempotent."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                pass
