"""A timer for the earliest of many deadlines (approvals' expiry): no polling loop.

`ExpiryTimer.arm(at)` keeps one `loop.call_later` handle for the earliest time armed so far;
when it comes, `fire()` runs (its work, e.g. expiring what is due) and answers the next time to
arm, or None. Arming a later time than the one pending changes nothing; arming while `fire` is
running is remembered and runs it once more. A delay never exceeds `MAX_DELAY_S`, so a
far deadline is re-checked against the clock now and then (clocks jump); a `fire` that fails is
tried again after `RETRY_S`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from typing import Protocol

log = logging.getLogger("callgate.expiry")

MAX_DELAY_S = 3600.0
RETRY_S = 5.0


class Handle(Protocol):
    def cancel(self) -> None: ...


CallLater = Callable[[float, Callable[[], None]], Handle]


def _loop_call_later(delay: float, callback: Callable[[], None]) -> Handle:
    return asyncio.get_running_loop().call_later(delay, callback)


class ExpiryTimer:
    def __init__(
        self,
        fire: Callable[[], Awaitable[datetime | None]],
        *,
        clock: Callable[[], datetime],
        call_later: CallLater = _loop_call_later,
    ) -> None:
        self._fire = fire
        self._clock = clock
        self._call_later = call_later
        self._at: datetime | None = None
        self._handle: Handle | None = None
        self._task: asyncio.Task[None] | None = None
        self._again = False
        self._closed = False

    def arm(self, at: datetime) -> None:
        if self._closed or (self._at is not None and self._at <= at):
            return
        if self._handle is not None:
            self._handle.cancel()
        self._at = at
        delay = min(max((at - self._clock()).total_seconds(), 0.0), MAX_DELAY_S)
        self._handle = self._call_later(delay, self._due)

    def _due(self) -> None:
        self._handle, self._at = None, None
        if self._closed:
            return
        if self._task is not None and not self._task.done():
            self._again = True  # the running fire goes round once more
            return
        self._task = asyncio.ensure_future(self._run())

    async def _run(self) -> None:
        while True:
            self._again = False
            try:
                next_at = await self._fire()
            except Exception:
                log.exception("expiring approvals failed; trying again in %.0f s", RETRY_S)
                next_at = self._clock() + timedelta(seconds=RETRY_S)
            if next_at is not None:
                self.arm(next_at)
            if not self._again or self._closed:
                return

    async def close(self) -> None:
        self._closed = True
        if self._handle is not None:
            self._handle.cancel()
            self._handle, self._at = None, None
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
