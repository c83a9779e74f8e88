"""The cases of the loop regression matrix (tests/support/matrix.py): each one scripts the
model in the provider's wire format, sets the example services up, drives the reference loop,
and answers what the four facts should be.

Travel cases run as alice (a traveler: the two travel reads); workshop cases as mia (a member
who books for herself: up to two seats without approval, more with an owner's).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from typing import Any

from gateway.client import RetryPolicy, Unavailable
from gateway.loop import LoopStatus
from tests.support.matrix import CaseFn, Cell, Facts
from tests.support.paths import ROOT
from tests.support.scenarios import TRAIN, WEATHER
from tests.support.wire_responses import PROVIDERS, WIRES, Call, Wire

QUESTION = "Is ICE123 on time on 2026-12-01, and what's the weather in Berlin?"
BOOKING = "Book seats for me at ws-acme-1."
TRAIN_CALL = Call("call_train", "get_train_status", TRAIN)
WEATHER_CALL = Call("call_weather", "get_weather", WEATHER)
DONE = LoopStatus.COMPLETED.value
HANDED_OFF = LoopStatus.HANDED_OFF.value
APPROVAL = LoopStatus.PAUSED_FOR_APPROVAL.value
UNKNOWN = LoopStatus.PAUSED_UNKNOWN_OUTCOME.value


def seat(seats: int) -> Call:
    return Call(
        "call_seat", "reserve_seat", {"event_id": "ws-acme-1", "participant": "mia", "seats": seats}
    )


def expect(
    state: list[str], executions: dict[str, int], markers: dict[str, str], effect: dict[str, int]
) -> Facts:
    return {
        "state": state,
        "executions": executions,
        "correlation": {call_id: True for call_id in markers},
        "correlation_markers": markers,
        "effect": effect,
    }


def wire(cell: Cell) -> Wire:
    return WIRES[cell.provider]


async def drive(cell: Cell, script: list[Any], question: str = QUESTION, **options: Any) -> None:
    """Run the loop to its end (or pause) with this script."""
    async with cell.client() as client:
        loop = cell.loop(client, cell.model(script), **options)
        cell.saw(await loop.run([wire(cell).user(question)], run_id=cell.run_id))


# ---------------------------------------------------------------------- the cases


async def final_answer(cell: Cell) -> Facts:
    await drive(cell, [wire(cell).final("r1", "Nothing to look up.")])
    return expect([DONE], {}, {}, {})


async def single_call(cell: Cell) -> Facts:
    w = wire(cell)
    await drive(cell, [w.calls("r1", [TRAIN_CALL]), w.final("r2", "ICE123 is on time.")])
    return expect([DONE], {"call_train": 1}, {"call_train": '"ICE123"'}, {"call_train": 1})


async def out_of_order(cell: Cell) -> Facts:
    """The train read answers late: the weather result is recorded first, yet each result
    goes to its own call ID."""
    cell.bench.travel.control({"train_status": {"delay_s": 0.5, "times": 1}})
    w = wire(cell)
    await drive(cell, [w.calls("r1", [TRAIN_CALL, WEATHER_CALL]), w.final("r2", "Both done.")])
    async with cell.client() as c:
        calls = {r.call_id: r for r in (await c.get_run(cell.run_id)).calls}
    reversed_order = calls["call_weather"].finished_at < calls["call_train"].finished_at
    return expect(
        [DONE if reversed_order else "finished in model order"],
        {"call_train": 1, "call_weather": 1},
        {"call_train": '"ICE123"', "call_weather": '"Berlin"'},
        {"call_train": 1, "call_weather": 1},
    )


async def unknown_tool(cell: Cell) -> Facts:
    w = wire(cell)
    await drive(
        cell,
        [
            w.calls("r1", [Call("call_rocket", "launch_rocket", {"to": "moon"})]),
            w.final("r2", "I cannot launch rockets."),
        ],
    )
    return expect([DONE], {"call_rocket": 0}, {"call_rocket": "unknown_tool"}, {"call_rocket": 0})


async def invalid_arguments(cell: Cell) -> Facts:
    w = wire(cell)
    bad = Call("call_train", "get_train_status", {"train_number": "12-XYZ!", "date": "2026-12-01"})
    await drive(cell, [w.calls("r1", [bad]), w.final("r2", "That train number is invalid.")])
    return expect([DONE], {"call_train": 0}, {"call_train": "invalid_arguments"}, {"call_train": 0})


async def truncated_stream(cell: Cell) -> Facts:
    """Cut inside the arguments: nothing of it runs; the turn is asked again (the same
    conversation), and the complete answer's call runs once."""
    w = wire(cell)
    cut = Call("call_cut", TRAIN_CALL.name, TRAIN_CALL.arguments)
    await drive(
        cell,
        [w.truncated("r1", cut), w.calls("r2", [TRAIN_CALL]), w.final("r3", "ICE123 is on time.")],
    )
    first, again = cell.requests()[:2]
    same = list(first.conversation) == list(again.conversation)
    return expect(
        [DONE if same else "the retry saw another conversation"],
        {"call_train": 1},
        {"call_train": '"ICE123"'},
        {"call_train": 1, "call_cut": 0},
    )


async def truncated_until_handoff(cell: Cell) -> Facts:
    """Cut every time: the run's retries run out and it is handed off; nothing ran."""
    w = wire(cell)
    cut = Call("call_cut", TRAIN_CALL.name, TRAIN_CALL.arguments)
    await drive(cell, [w.truncated(f"r{i}", cut) for i in (1, 2, 3)], max_retries=2)
    return expect([HANDED_OFF], {}, {}, {"call_cut": 0})


async def tool_error(cell: Cell) -> Facts:
    cell.bench.travel.control({"weather": {"status": 500, "times": 1}})
    w = wire(cell)
    await drive(
        cell,
        [w.calls("r1", [TRAIN_CALL, WEATHER_CALL]), w.final("r2", "The weather service failed.")],
    )
    return expect(
        [DONE],
        {"call_train": 1, "call_weather": 1},
        {"call_train": '"ICE123"', "call_weather": "tool_error"},
        {"call_train": 1, "call_weather": 1},
    )


async def _booking_decided(cell: Cell, approve: bool) -> None:
    w = wire(cell)
    async with cell.client() as client, cell.client("olga-demo-token") as owner:
        loop = cell.loop(client, cell.model([w.calls("r1", [seat(3)]), w.final("r2", "Done.")]))
        paused = cell.saw(await loop.run([w.user(BOOKING)], run_id=cell.run_id))
        (pending,) = [r for r in paused.outcome.results if r.approval_id]
        await owner.decide_approval(pending.approval_id, approve=approve, reason="an owner decided")
        cell.saw(await loop.resume(cell.run_id))


async def approval_approved(cell: Cell) -> Facts:
    await _booking_decided(cell, approve=True)
    return expect(
        [APPROVAL, DONE], {"call_seat": 1}, {"call_seat": '"reservation_id"'}, {"call_seat": 1}
    )


async def approval_denied(cell: Cell) -> Facts:
    await _booking_decided(cell, approve=False)
    return expect(
        [APPROVAL, DONE], {"call_seat": 0}, {"call_seat": "approval_denied"}, {"call_seat": 0}
    )


async def policy_deny(cell: Cell) -> Facts:
    """TGV9 runs for another tenant: the executor's policy refuses it before anything runs."""
    w = wire(cell)
    other = Call("call_train", "get_train_status", {"train_number": "TGV9", "date": "2026-12-01"})
    await drive(cell, [w.calls("r1", [other]), w.final("r2", "I may not look that up.")])
    return expect([DONE], {"call_train": 0}, {"call_train": "policy_denied"}, {"call_train": 0})


async def lost_response(cell: Cell) -> Facts:
    """The workshop books the seat and hangs up: the outcome is unknown, the look-up finds
    the booking, nothing is sent again."""
    cell.bench.workshop.control(reserve_seat={"apply_then_drop": True, "times": 1})
    w = wire(cell)
    await drive(cell, [w.calls("r1", [seat(1)]), w.final("r2", "Booked.")], question=BOOKING)
    return expect([DONE], {"call_seat": 1}, {"call_seat": '"reservation_id"'}, {"call_seat": 1})


async def unknown_outcome(cell: Cell) -> Facts:
    """The workshop accepts the booking but books it only later: the look-up says pending, the
    run waits (handed back); once the workshop has booked it, resuming looks it up again and
    goes on. Nothing is sent twice."""
    cell.bench.workshop.control(reserve_seat={"apply_late": True, "times": 1})
    w = wire(cell)
    async with cell.client() as client:
        loop = cell.loop(client, cell.model([w.calls("r1", [seat(1)]), w.final("r2", "Ok.")]))
        cell.saw(await loop.run([w.user(BOOKING)], run_id=cell.run_id))
        await asyncio.to_thread(cell.bench.workshop.apply_late)
        cell.saw(await loop.resume(cell.run_id))
    return expect(
        [UNKNOWN, DONE], {"call_seat": 1}, {"call_seat": '"reservation_id"'}, {"call_seat": 1}
    )


async def sidecar_killed(cell: Cell) -> Facts:
    """The sidecar dies while the booking it sent is being answered; started again on the
    same store, the loop resumes the run: the call is looked up, never sent again."""
    cell.bench.workshop.control(reserve_seat={"apply_then_delay_s": 30, "times": 1})
    w = wire(cell)
    key = f"{cell.run_id}:call_seat"
    model = cell.model([w.calls("r1", [seat(1)]), w.final("r2", "Ok.")])
    # a client that does not wait out the restart by itself: the loop sees the sidecar go
    async with cell.client(retry=RetryPolicy(attempts=1)) as client:
        running = asyncio.create_task(
            cell.loop(client, model).run([w.user(BOOKING)], run_id=cell.run_id)
        )
        booked = await asyncio.to_thread(cell.bench.workshop.wait_booked, key, 30)
        await asyncio.to_thread(cell.bench.restart, cell.provider, kill=True)
        try:
            await running
            lost = "the loop did not notice"
        except Unavailable:
            lost = ""
    async with cell.client() as client:  # the same process (and model), connecting again
        cell.saw(await cell.loop(client, model).resume(cell.run_id))
    if not booked or lost:
        cell.statuses.insert(0, lost or "never booked")
    return expect([DONE], {"call_seat": 1}, {"call_seat": '"reservation_id"'}, {"call_seat": 1})


async def loop_killed(cell: Cell) -> Facts:
    """The loop's own process dies after its turn was saved (SIGKILL, as it asks the model
    again); a new loop resumes the run from callgate alone: the same conversation, nothing
    executed again."""
    w = wire(cell)
    asked = await asyncio.to_thread(_kill_a_loop, cell, [w.calls("r1", [TRAIN_CALL])])
    async with cell.client() as client:
        loop = cell.loop(client, cell.model([w.final("r2", "ICE123 is on time.")]))
        cell.saw(await loop.resume(cell.run_id))
    rebuilt = list(cell.requests()[0].conversation)
    if rebuilt != asked:
        cell.statuses.append("resumed with another conversation")
    return expect([DONE], {"call_train": 1}, {"call_train": '"ICE123"'}, {"call_train": 1})


def _kill_a_loop(cell: Cell, script: list[Any]) -> list[Any]:
    """Run the loop in a child process until it asks the model a second time; kill it there.
    Answers the conversation it was about to send."""
    child = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.support.loop_child",
            cell.target,
            cell.token,
            cell.provider,
            cell.run_id,
            json.dumps([wire(cell).user(QUESTION)]),
            json.dumps(script),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        assert child.stdout is not None
        line = child.stdout.readline()  # the child prints as it blocks in its second ask
        assert line, child.stderr.read() if child.stderr else "no output"
    finally:
        child.send_signal(signal.SIGKILL)
        child.communicate(timeout=30)
    asked: list[Any] = json.loads(line)["asking"]
    return asked


async def refusal(cell: Cell) -> Facts:
    await drive(cell, [wire(cell).refusal("r1")])
    return expect([HANDED_OFF], {}, {}, {})


async def malformed_response(cell: Cell) -> Facts:
    """A body callgate cannot read as the provider's: handed off with the reason, nothing
    of it run, the model not asked again."""
    w = wire(cell)
    body = w.calls("r1", [TRAIN_CALL])
    broken = json.dumps(body)[:-1]  # the body cut before its last brace: not JSON
    async with cell.client() as client:
        loop = cell.loop(client, cell.model([broken, w.final("r2", "never asked")]))
        result = cell.saw(await loop.run([w.user(QUESTION)], run_id=cell.run_id))
    if "malformed_response" not in result.reason or len(cell.requests()) != 1:
        cell.statuses.append(f"reason {result.reason!r}, {len(cell.requests())} requests")
    return expect([HANDED_OFF], {}, {}, {"call_train": 0})


TRAVEL, WORKSHOP = "alice-demo-token", "mia-demo-token"
CASES: dict[str, tuple[CaseFn, str]] = {
    "final answer, no tool": (final_answer, TRAVEL),
    "single call": (single_call, TRAVEL),
    "calls finishing out of order": (out_of_order, TRAVEL),
    "unknown tool": (unknown_tool, TRAVEL),
    "invalid arguments": (invalid_arguments, TRAVEL),
    "truncated stream, retried": (truncated_stream, TRAVEL),
    "truncated stream, handed off": (truncated_until_handoff, TRAVEL),
    "tool error": (tool_error, TRAVEL),
    "approval, approved": (approval_approved, WORKSHOP),
    "approval, denied": (approval_denied, WORKSHOP),
    "executor rejection (policy)": (policy_deny, TRAVEL),
    "lost response, reconciled": (lost_response, WORKSHOP),
    "unknown outcome, waited": (unknown_outcome, WORKSHOP),
    "recovery: sidecar killed": (sidecar_killed, WORKSHOP),
    "recovery: loop killed": (loop_killed, TRAVEL),
    "refusal": (refusal, TRAVEL),
    "malformed response": (malformed_response, TRAVEL),
}

__all__ = ["CASES", "PROVIDERS"]
