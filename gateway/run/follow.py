"""WatchRun, the following part: one message per settled outcome, woken by the store.

There is no polling: the loop waits on the store's settlement notification for the run (an
in-process signal for SQLite, LISTEN/NOTIFY across PostgreSQL replicas), re-reads the run and
sends the outcome if it changed. A turn still being driven has no settled outcome and is
skipped; its settlement wakes the loop again.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass

from gateway.errors import RequestCode, RequestError
from gateway.model import TurnOutcome
from gateway.store.notify import Subscription, WatchClosed


@dataclass(frozen=True)
class Seen:
    """The run as read now: its settled outcome (None while a turn is being driven) and
    whether the run has finished."""

    outcome: TurnOutcome | None
    finished: bool


async def follow(
    changes: Subscription, first: Callable[[], Awaitable[Seen]], read: Callable[[], Awaitable[Seen]]
) -> AsyncIterator[TurnOutcome]:
    """The current outcome (from `first`), then each later one that differs, until the run
    finishes. `changes` must be subscribed before `first` runs, so nothing settles unseen."""
    seen = await first()
    last: TurnOutcome | None = None
    while True:
        if seen.outcome is not None and seen.outcome != last:
            last = seen.outcome
            yield last
        if seen.finished:
            return
        try:
            await changes.wait()
        except WatchClosed as exc:
            raise RequestError(
                RequestCode.SHUTTING_DOWN,
                "callgate is shutting down; call "
                "WatchRun again (its first message is the current state)",
            ) from exc
        seen = await read()
