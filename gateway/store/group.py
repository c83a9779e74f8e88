"""Group commit: callers whose items arrive together share one commit.

A durable SQLite commit costs mostly per commit, not per record: every page it touches goes to
the write-ahead log in full, and the log is synced (about 150 µs of CPU on a small VM, the
record itself about 15). Appends to the audit trail (`Authorize` makes one per request) are
therefore queued, and each commit takes everything queued when it starts. The SQLite store
groups the syncs of its log the same way: one sync makes every commit before it durable.

When to commit: on the event loop's next pass, unless commits of the last `memory_s` were
shared. Then callers are arriving together, and the batch waits for as many of them as the
largest of those commits had, committing as soon as they are there, or when the hold is out:
as long as the callers still missing take to arrive at the pace the callers of recent shared
commits arrived (between `hold_s` and `max_hold_s`). A pace, not a fixed hold: on a host where
a request takes 1 ms of the event loop, a fixed 1.5 ms hold ended every gathering after two or
three callers while eight were on their way, and each commit (its statements, the log's pages,
its sync: about 400 µs of CPU there) was shared by that few. So a lone
caller is never held (unless others committed together a moment ago), and under concurrent load
a commit gathers the callers that arrive within a hold of each other rather than whichever one
came first. The largest recent commit, not the last: a commit that gathered fewer than the
callers around (some arrived after the hold) would otherwise set the next one's expectation
lower, and commits would settle at a fraction of the callers. Each caller returns once the
commit that took its items has returned, and raises what it raised.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from typing import Generic, TypeVar

T = TypeVar("T")

# how long a batch waits for company after shared commits: at least, and at most when the
# pace asks for longer
HOLD_S = 0.0015
MAX_HOLD_S = 0.01
# the pace the hold follows: a moving average over shared commits of the time between two of
# their callers' arrivals, this weight for the last commit's; the hold has this much margin
PACE_WEIGHT = 0.25
PACE_MARGIN = 1.5
# how long a shared commit counts as a sign of company
MEMORY_S = 0.05
# commits remembered at most (at high rates memory_s holds more)
REMEMBERED = 64


class GroupCommit(Generic[T]):
    def __init__(
        self,
        commit: Callable[[list[T]], Awaitable[None]],
        *,
        hold_s: float = HOLD_S,
        max_hold_s: float = MAX_HOLD_S,
        memory_s: float = MEMORY_S,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self._commit = commit
        self._hold_s = hold_s
        self._max_hold_s = max_hold_s
        self._memory_s = memory_s
        self._clock = clock  # None: the event loop's
        self._queue: list[tuple[Sequence[T], asyncio.Future[None]]] = []
        self._flushing: asyncio.Task[None] | None = None
        self._recent: deque[tuple[float, int]] = deque(maxlen=REMEMBERED)  # (when, callers)
        self._expected = 1  # callers the batch being gathered waits for
        self._company: asyncio.Future[None] | None = None  # set: stop waiting for company
        self._first = self._last = 0.0  # when the queue's first and last callers arrived
        self._pace = 0.0  # seconds between two arrivals in recent shared commits

    async def add(self, items: Sequence[T]) -> None:
        """Commit items with whatever else is queued; returns once they are committed."""
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._last = self._now()
        if not self._queue:
            self._first = self._last
        self._queue.append((items, done))
        if self._flushing is None:
            self._flushing = asyncio.create_task(self._flush())
        elif (
            self._company is not None
            and not self._company.done()
            and len(self._queue) >= self._expected
        ):
            self._company.set_result(None)
        await done

    async def _flush(self) -> None:
        try:
            await self._wait_for_company()
            while self._queue:
                batch, self._queue = self._queue, []
                if len(batch) > 1:
                    self._recent.append((self._now(), len(batch)))
                    pace = (self._last - self._first) / (len(batch) - 1)
                    self._pace += (pace - self._pace) * (PACE_WEIGHT if self._pace else 1.0)
                error: BaseException | None = None
                try:
                    await self._commit([item for items, _ in batch for item in items])
                except Exception as exc:  # every caller of the batch gets it, none waits on
                    error = exc
                for _, waiter in batch:
                    if waiter.done():  # its caller was cancelled
                        continue
                    if error is None:
                        waiter.set_result(None)
                    else:
                        waiter.set_exception(error)
        finally:
            self._flushing = None

    def _now(self) -> float:
        return self._clock() if self._clock else asyncio.get_running_loop().time()

    async def _wait_for_company(self) -> None:
        """Until as many callers as the largest recent shared commit had are queued, or the
        hold is out (at once when no recent commit was shared): the time the callers still
        missing take at the recent pace, with a margin, within the hold's bounds."""
        recent, now = self._recent, self._now()
        while recent and now - recent[0][0] > self._memory_s:
            recent.popleft()
        self._expected = max((n for _, n in recent), default=1)
        if len(self._queue) >= self._expected:
            return
        loop = asyncio.get_running_loop()
        company = self._company = loop.create_future()
        hold = (self._expected - len(self._queue)) * self._pace * PACE_MARGIN
        timer = loop.call_later(max(self._hold_s, min(self._max_hold_s, hold)), _release, company)
        try:
            await company
        finally:
            timer.cancel()
            self._company = None


def _release(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)
