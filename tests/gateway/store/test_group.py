"""Group commit: callers arriving together share a commit; after shared commits the next waits
(up to its hold) for as many callers as the largest of them had, and a lone caller is held only
while commits shared a moment ago are remembered. The hold stretches to the pace at which the
callers of recent shared commits arrived, within its bounds."""

from __future__ import annotations

import asyncio

import pytest

from gateway.errors import StoreUnavailable
from gateway.store.group import GroupCommit

HOUR = 3600.0  # a hold no test waits out: what is committed early was not held
BOUND_S = 30.0  # only a broken hold would take this long (the test then fails, not hangs)


class Recorder:
    def __init__(self) -> None:
        self.commits: list[list[str]] = []
        self.fail_next: Exception | None = None
        self.gate: asyncio.Event | None = None  # set: commits wait for it

    async def commit(self, items: list[str]) -> None:
        if self.gate is not None:
            await self.gate.wait()
        if self.fail_next is not None:
            error, self.fail_next = self.fail_next, None
            raise error
        self.commits.append(items)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0
        self.step = 0.0  # how far each reading moves it on

    def __call__(self) -> float:
        now = self.now
        self.now += self.step
        return now


async def _passes(n: int = 20) -> None:
    """Let the event loop run n passes (no time passes for a timer)."""
    for _ in range(n):
        await asyncio.sleep(0)


async def test_callers_arriving_together_share_one_commit() -> None:
    rec = Recorder()
    group = GroupCommit(rec.commit, hold_s=HOUR)
    await asyncio.gather(*(group.add([f"a{i}", f"b{i}"]) for i in range(5)))
    assert rec.commits == [[f"{x}{i}" for i in range(5) for x in "ab"]]


async def test_a_lone_caller_is_committed_on_the_next_pass() -> None:
    rec = Recorder()
    group = GroupCommit(rec.commit, hold_s=HOUR)
    for i in range(3):
        await asyncio.wait_for(group.add([f"c{i}"]), BOUND_S)
    assert rec.commits == [["c0"], ["c1"], ["c2"]]


async def test_after_a_shared_commit_the_next_waits_for_as_many_callers() -> None:
    rec = Recorder()
    group = GroupCommit(rec.commit, hold_s=HOUR)
    await asyncio.gather(*(group.add([f"first{i}"]) for i in range(3)))
    first = asyncio.create_task(group.add(["x"]))
    await _passes()
    assert not first.done() and len(rec.commits) == 1, "held for company"
    second = asyncio.create_task(group.add(["y"]))
    await _passes()
    assert not second.done(), "two of the three callers the last commit had"
    # the third: committed at once, long before the hold is out
    await asyncio.wait_for(asyncio.gather(group.add(["z"]), first, second), BOUND_S)
    assert rec.commits[1:] == [["x", "y", "z"]]


async def test_the_hold_ends_without_company() -> None:
    rec = Recorder()
    group = GroupCommit(rec.commit, hold_s=0.005)
    await asyncio.gather(group.add(["a"]), group.add(["b"]))
    await group.add(["alone"])  # held up to 5 ms, then committed by itself
    assert rec.commits == [["a", "b"], ["alone"]]


async def test_the_largest_recent_commit_not_the_last_sets_the_wait() -> None:
    rec = Recorder()
    group = GroupCommit(rec.commit, hold_s=HOUR)
    rec.gate = asyncio.Event()
    four = asyncio.gather(*(group.add([f"a{i}"]) for i in range(4)))
    await _passes()  # the four are being committed (the commit waits for the gate)
    two = asyncio.gather(group.add(["b0"]), group.add(["b1"]))  # queued meanwhile
    await _passes()
    rec.gate.set()
    await asyncio.wait_for(asyncio.gather(four, two), BOUND_S)
    assert [len(c) for c in rec.commits] == [4, 2]  # the two went at once, as queued
    three = [asyncio.create_task(group.add([f"c{i}"])) for i in range(3)]
    await _passes()
    assert not any(t.done() for t in three), "held for four callers, not two"
    await asyncio.wait_for(asyncio.gather(group.add(["c3"]), *three), BOUND_S)
    assert rec.commits[2:] == [["c0", "c1", "c2", "c3"]]


async def test_a_lone_caller_is_held_only_while_shared_commits_are_remembered() -> None:
    rec = Recorder()
    clock = Clock()
    group = GroupCommit(rec.commit, hold_s=HOUR, memory_s=0.05, clock=clock)
    await asyncio.gather(group.add(["a"]), group.add(["b"]))
    clock.now += 0.04
    held = asyncio.create_task(group.add(["held"]))
    await _passes()
    assert not held.done(), "a shared commit 40 ms ago: company is expected"
    await asyncio.wait_for(asyncio.gather(group.add(["company"]), held), BOUND_S)
    clock.now += 0.051  # the last shared commit was 51 ms ago
    alone = asyncio.create_task(group.add(["alone"]))
    await _passes()
    assert alone.done(), "nothing shared within memory_s: not held"
    assert rec.commits == [["a", "b"], ["held", "company"], ["alone"]]


async def _shared_commit_at_pace(group: GroupCommit[str], clock: Clock, gap_s: float) -> None:
    """A commit shared by three callers that arrived gap_s apart (by the group's clock)."""
    clock.step = gap_s  # each reading of the clock is gap_s after the one before
    await asyncio.wait_for(asyncio.gather(*(group.add([f"paced{i}"]) for i in range(3))), BOUND_S)
    clock.step = 0.0


async def test_the_hold_stretches_to_the_pace_callers_arrived_at() -> None:
    rec = Recorder()
    clock = Clock()
    # the least hold is none: only the pace can hold a caller here
    group = GroupCommit(rec.commit, hold_s=0.0, max_hold_s=HOUR, memory_s=HOUR, clock=clock)
    await _shared_commit_at_pace(group, clock, 60.0)  # slow callers: a minute apart
    assert rec.commits == [["paced0", "paced1", "paced2"]]
    held = asyncio.create_task(group.add(["x"]))
    await asyncio.sleep(0.02)  # real time passes; the pace asks for about three minutes
    assert not held.done(), "two more callers expected at a minute each: still held"
    await asyncio.wait_for(asyncio.gather(group.add(["y"]), group.add(["z"]), held), BOUND_S)
    assert rec.commits == [["paced0", "paced1", "paced2"], ["x", "y", "z"]]


async def test_a_quick_pace_does_not_shorten_the_least_hold() -> None:
    rec = Recorder()
    clock = Clock()
    group = GroupCommit(rec.commit, hold_s=HOUR, max_hold_s=0.0, memory_s=HOUR, clock=clock)
    await _shared_commit_at_pace(group, clock, 0.0)  # callers arriving all at once
    held = asyncio.create_task(group.add(["x"]))
    await asyncio.sleep(0.02)
    assert not held.done(), "the least hold (an hour) still applies"
    await asyncio.wait_for(asyncio.gather(group.add(["y"]), group.add(["z"]), held), BOUND_S)


async def test_the_pace_stretches_the_hold_no_further_than_its_bound() -> None:
    rec = Recorder()
    clock = Clock()
    group = GroupCommit(rec.commit, hold_s=0.0, max_hold_s=0.005, memory_s=HOUR, clock=clock)
    await _shared_commit_at_pace(group, clock, 60.0)
    # the pace asks for minutes; the bound lets it wait 5 ms, then it goes alone
    await asyncio.wait_for(group.add(["alone"]), BOUND_S)
    assert rec.commits[-1] == ["alone"]


async def test_a_failed_commit_fails_each_of_its_callers_and_the_next_goes_on() -> None:
    rec = Recorder()
    group = GroupCommit(rec.commit, hold_s=HOUR)
    rec.fail_next = StoreUnavailable("the disk is full")
    results = await asyncio.gather(
        *(group.add([f"c{i}"]) for i in range(3)), return_exceptions=True
    )
    assert all(isinstance(r, StoreUnavailable) for r in results)
    await asyncio.gather(*(group.add([f"d{i}"]) for i in range(3)))
    assert rec.commits == [["d0", "d1", "d2"]]


async def test_an_unexpected_error_reaches_the_callers_rather_than_stranding_them() -> None:
    rec = Recorder()
    group = GroupCommit(rec.commit, hold_s=HOUR)
    rec.fail_next = RuntimeError("a bug in the commit")
    with pytest.raises(RuntimeError, match="a bug"):
        await group.add(["a"])
    await group.add(["b"])
    assert rec.commits == [["b"]]


async def test_a_cancelled_caller_does_not_stop_the_others() -> None:
    rec = Recorder()
    group = GroupCommit(rec.commit, hold_s=HOUR)
    gone = asyncio.create_task(group.add(["gone"]))
    stays = asyncio.create_task(group.add(["stays"]))
    await asyncio.sleep(0)
    gone.cancel()
    await stays
    assert rec.commits == [["gone", "stays"]]  # queued before the cancel: still committed
    assert gone.cancelled()
