"""Settlement notifications inside one process: who is watching which run.

A store publishes a run's ID after a commit that settles something of that run (see
`base.settles`); every subscription to that run wakes up and re-reads the run. Wake-ups
coalesce: a subscriber learns "something settled since you last looked", never what, so a
burst of settlements costs one re-read. Audit appends are published the same way, under
`AUDIT_FEED`. The SQLite store publishes its own commits (and, for `serve --workers`, relays
them to the other workers: `gateway.store.sqlite_peers`); the PostgreSQL store also publishes what
`LISTEN` hears from other replicas.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager

# The subscription key of audit appends (never a run ID: those are printable).
AUDIT_FEED = "\x00audit"


class WatchClosed(Exception):
    """The store stopped notifying (the sidecar is shutting down)."""


class Subscription:
    """One watcher's interest in one run."""

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        self._woken = asyncio.Event()
        self._closed = False

    def wake(self) -> None:
        self._woken.set()

    def close(self) -> None:
        self._closed = True
        self._woken.set()

    async def wait(self) -> None:
        """Until the run settled something since the last wait; raises WatchClosed when the
        store stops notifying."""
        await self._woken.wait()
        self._woken.clear()
        if self._closed:
            raise WatchClosed("callgate stopped notifying watchers (shutting down)")


class SettleHub:
    """Subscriptions by run ID; publishing wakes every subscription of that run."""

    def __init__(self) -> None:
        self._subs: dict[str, set[Subscription]] = {}
        self._closed = False
        # also told of every publish (the other processes sharing the store), if set
        self.relay: Callable[[str], None] | None = None

    @asynccontextmanager
    async def subscribe(self, run_id: str) -> AsyncIterator[Subscription]:
        sub = Subscription(run_id)
        if self._closed:
            sub.close()
        self._subs.setdefault(run_id, set()).add(sub)
        try:
            yield sub
        finally:
            subs = self._subs.get(run_id)
            if subs is not None:
                subs.discard(sub)
                if not subs:
                    del self._subs[run_id]

    def publish(self, run_id: str) -> None:
        self.wake(run_id)
        if self.relay is not None:
            self.relay(run_id)

    def wake(self, run_id: str) -> None:
        """Wake this process's subscriptions of the run (what another process published)."""
        for sub in list(self._subs.get(run_id, ())):
            sub.wake()

    def publish_all(self) -> None:
        """Wake everyone (e.g. after notifications from elsewhere may have been missed)."""
        for subs in list(self._subs.values()):
            for sub in list(subs):
                sub.wake()

    def close(self) -> None:
        self._closed = True
        for subs in list(self._subs.values()):
            for sub in list(subs):
                sub.close()

    def watchers(self) -> int:
        """How many subscriptions are open (a disconnected watcher leaves none behind)."""
        return sum(len(s) for s in self._subs.values())


class Notifying:
    """The watch half of the RunStore contract, served from a store's SettleHub."""

    _hub: SettleHub

    def watch(self, run_id: str) -> AbstractAsyncContextManager[Subscription]:
        return self._hub.subscribe(run_id)

    def watch_audit(self) -> AbstractAsyncContextManager[Subscription]:
        return self._hub.subscribe(AUDIT_FEED)

    def close_watches(self) -> None:
        self._hub.close()

    def watchers(self) -> int:
        return self._hub.watchers()

    def _appended(self, events: Sequence[object]) -> None:
        """After a commit: wake this process's audit followers at once when it appended
        records (other processes and replicas hear of it their own way)."""
        if events:
            self._hub.publish(AUDIT_FEED)
