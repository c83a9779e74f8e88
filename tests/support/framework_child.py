"""An agent framework's side in a process of its own, for the tests that kill it between the
interrupt and the approval and resume in a new process from what the first one persisted.

    python -m tests.support.framework_child agents|langgraph start|resume TARGET TOKEN RUN FILE

`start` runs the framework until callgate holds the booking for a person, prints
`{"pending": [...approvals...]}` (the SDK's RunState, or the LangGraph checkpoint, is in FILE)
and blocks until it is killed. `resume` rebuilds everything from FILE and callgate, goes on,
and prints `{"outputs": [...], "final": ...}`: what the model was handed, and its answer.
The scripted models say what a real model would: book 4 seats, then confirm.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import sys
from pathlib import Path
from typing import Any

BOOKING = {"event_id": "ws-acme-1", "participant": "mia", "seats": 4}
CALL_ID = "call_book_4"


def _block() -> None:
    print(json.dumps({"blocked": True}), flush=True)
    sys.stdin.read()  # until the parent kills this process
    raise SystemExit("the parent was to kill this process")


async def agents_side(phase: str, target: str, token: str, run_id: str, file: Path) -> None:
    from agents import Agent, RunConfig, Runner, RunState
    from agents.testing import ScriptedModel, assistant_message, function_call

    from gateway.client import AsyncGatewayClient
    from gateway.frameworks.openai_agents import CallgateRun

    script = (
        [[function_call("reserve_seat", BOOKING, call_id=CALL_ID)]]
        if phase == "start"
        else [[assistant_message("Booked 4 seats.")]]
    )
    model = ScriptedModel(script)
    config = RunConfig(tracing_disabled=True)
    async with AsyncGatewayClient(target, token, timeout_s=30) as client:
        gate = CallgateRun(client, run_id)
        agent = gate.guard(Agent(name="booker", model=model), await gate.tools())
        if phase == "start":
            result = await Runner.run(agent, "Book 4 seats at ws-acme-1 for me", run_config=config)
            state = result.to_state()
            file.write_text(state.to_string(), encoding="utf-8")
            print(json.dumps({"pending": await gate.apply_decisions(state)}), flush=True)
            return
        state = await RunState.from_string(agent, file.read_text(encoding="utf-8"))
        pending = await gate.apply_decisions(state)
        done = await Runner.run(agent, state, run_config=config)
        outputs = [
            item["output"]
            for item in model.calls[-1].input
            if isinstance(item, dict) and item.get("type") == "function_call_output"
        ]
        print(
            json.dumps({"pending": pending, "outputs": outputs, "final": done.final_output}),
            flush=True,
        )


def langgraph_side(phase: str, target: str, token: str, run_id: str, file: Path) -> None:
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.types import Command

    from gateway.client import GatewayClient
    from tests.support.graphs import booking_graph

    replies = (
        [
            AIMessage(
                content="",
                tool_calls=[
                    {"name": "reserve_seat", "args": BOOKING, "id": CALL_ID, "type": "tool_call"}
                ],
            )
        ]
        if phase == "start"
        else [AIMessage(content="Booked 4 seats.")]
    )
    model = GenericFakeChatModel(messages=iter(replies))
    config: Any = {"configurable": {"thread_id": run_id}}
    conn = sqlite3.connect(file, check_same_thread=False)
    with GatewayClient(target, token, timeout_s=30) as client:
        app = booking_graph(client, model, SqliteSaver(conn))
        if phase == "start":
            out = app.invoke({"messages": [HumanMessage("Book 4 seats at ws-acme-1")]}, config)
            pending = [a for i in out.get("__interrupt__", []) for a in i.value["approvals"]]
            print(json.dumps({"pending": pending}), flush=True)
            return
        out = app.invoke(Command(resume=True), config)
        outputs = [m.content for m in out["messages"] if isinstance(m, ToolMessage)]
        print(json.dumps({"outputs": outputs, "final": out["messages"][-1].content}), flush=True)


def main(framework: str, phase: str, target: str, token: str, run_id: str, file: str) -> None:
    if framework == "agents":
        asyncio.run(agents_side(phase, target, token, run_id, Path(file)))
    else:
        langgraph_side(phase, target, token, run_id, Path(file))
    if phase == "start":
        _block()


if __name__ == "__main__":
    main(*sys.argv[1:7])
