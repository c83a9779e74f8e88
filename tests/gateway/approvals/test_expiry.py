"""The expiry timer: one handle for the earliest deadline, re-armed from what each round
answers, never a polling loop. The clock and the event loop's call_later are the test's."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from gateway.approvals.expiry import MAX_DELAY_S, RETRY_S, ExpiryTimer
from tests.support.harness import START, FakeClock


@dataclass
class Scheduled:
    delay: float
    callback: Callable[[], None]
    cancelled: bool = False

    def cancel(self) -> None:
        self.cancelled = True


@dataclass
class FakeLoop:
    """Records what the timer schedules; the test runs a callback when it decides."""

    handles: list[Scheduled] = field(default_factory=list)

    def call_later(self, delay: float, callback: Callable[[], None]) -> Scheduled:
        handle = Scheduled(delay, callback)
        self.handles.append(handle)
        return handle

    def live(self) -> list[Scheduled]:
        return [h for h in self.handles if not h.cancelled]


@dataclass
class Rounds:
    """The timer's work: counts rounds and answers the next deadline the test sets."""

    answers: list[datetime | None | Exception]
    count: int = 0

    async def __call__(self) -> datetime | None:
        self.count += 1
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


def at(seconds: float) -> datetime:
    return START + timedelta(seconds=seconds)


async def finished(timer: ExpiryTimer) -> None:
    """Until the timer's round (if one was started) has ended and re-armed."""
    if timer._task is not None:
        await asyncio.wait_for(timer._task, 5)


async def fire(loop: FakeLoop, timer: ExpiryTimer) -> None:
    (handle,) = loop.live()
    handle.cancel()  # spent
    handle.callback()
    await finished(timer)


async def test_only_the_earliest_deadline_is_armed() -> None:
    loop, clock, rounds = FakeLoop(), FakeClock(), Rounds([None])
    timer = ExpiryTimer(rounds, clock=clock, call_later=loop.call_later)
    timer.arm(at(60))
    timer.arm(at(90))  # later: nothing changes
    assert [h.delay for h in loop.live()] == [60]
    timer.arm(at(30))  # earlier: replaces the handle
    assert [h.delay for h in loop.live()] == [30]
    await timer.close()
    assert loop.live() == []


async def test_each_round_arms_the_deadline_it_answers() -> None:
    loop, clock, rounds = FakeLoop(), FakeClock(), Rounds([at(100), None])
    timer = ExpiryTimer(rounds, clock=clock, call_later=loop.call_later)
    timer.arm(at(10))
    clock.advance(10)
    await fire(loop, timer)
    assert rounds.count == 1 and [h.delay for h in loop.live()] == [90]
    clock.advance(90)
    await fire(loop, timer)
    assert rounds.count == 2 and loop.live() == []
    await timer.close()


async def test_a_failed_round_is_tried_again_and_far_deadlines_are_capped() -> None:
    loop, clock, rounds = FakeLoop(), FakeClock(), Rounds([RuntimeError("store down"), None])
    timer = ExpiryTimer(rounds, clock=clock, call_later=loop.call_later)
    timer.arm(at(10 * MAX_DELAY_S))
    assert [h.delay for h in loop.live()] == [MAX_DELAY_S]
    clock.advance(MAX_DELAY_S)
    await fire(loop, timer)
    assert [h.delay for h in loop.live()] == [RETRY_S]
    await timer.close()


async def test_a_deadline_armed_during_a_round_runs_another() -> None:
    loop, clock = FakeLoop(), FakeClock()
    started, release = asyncio.Event(), asyncio.Event()
    count = 0

    async def slow() -> datetime | None:
        nonlocal count
        count += 1
        started.set()
        await release.wait()
        return None

    timer = ExpiryTimer(slow, clock=clock, call_later=loop.call_later)
    timer.arm(at(0))
    loop.live()[0].callback()
    await asyncio.wait_for(started.wait(), 5)  # the first round has read the store
    timer.arm(at(0))  # an approval created meanwhile, already due
    loop.live()[-1].callback()  # fires while the first round still runs
    release.set()
    await finished(timer)
    assert count == 2
    await timer.close()
