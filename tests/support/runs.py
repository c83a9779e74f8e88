"""Runs and turns for runner tests: a runner over a store, calls and turns to submit, and
results by call ID."""

from __future__ import annotations

import json

from gateway.model import (
    Budget,
    CallStatus,
    EventKind,
    ToolCall,
    TurnEvent,
    TurnInput,
    TurnOutcome,
    Usage,
)
from gateway.run.runner import StartRunParams
from tests.support.harness import ALICE, Harness

TRAIN = {"train": "ICE 100"}


def call(call_id: str, tool: str, args: dict[str, str] | str, complete: bool = True) -> ToolCall:
    text = args if isinstance(args, str) else json.dumps(args)
    return ToolCall(call_id, tool, text, complete)


def calls_turn(
    run_id: str, turn_id: str, *calls: ToolCall, usage: Usage | None = None
) -> TurnInput:
    return TurnInput(
        run_id, turn_id, TurnEvent(EventKind.TOOL_REQUEST, calls=calls), usage=usage or Usage()
    )


def by_id(outcome: TurnOutcome) -> dict[str, tuple[CallStatus, str, int]]:
    return {r.call_id: (r.status, r.error_code, r.execution_count) for r in outcome.results}


async def start(h: Harness, run_id: str = "r1", budget: Budget | None = None) -> None:
    await h.runner.start_run(ALICE, StartRunParams(run_id=run_id, budget=budget or Budget()))
