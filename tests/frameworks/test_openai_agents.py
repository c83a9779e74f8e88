"""The OpenAI Agents SDK over a real sidecar: the real `openai-agents` runner with the SDK's own
scripted model (Responses API items, no network), callgate's tools from ListTools, the workshop
service's own database counting reservations. Mia (member) books for herself: up to 2 seats
need no approval, more need an owner's (Olga); an event of another tenant is denied."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest
from agents import Agent, FunctionTool, RunConfig, Runner, RunState, function_tool
from agents.testing import ScriptedModel, assistant_message, function_call

from examples.workshop.service import WorkshopService
from gateway import pb
from gateway.client import AsyncGatewayClient, GatewayClient, RetryPolicy, Unavailable
from gateway.frameworks import ApprovalPending
from gateway.frameworks.openai_agents import CallgateRun
from gateway.testing import SidecarProcess
from tests.support.framework_runs import killed, resumed, started

CONFIG = RunConfig(tracing_disabled=True)
MIA, OLGA = "mia-demo-token", "olga-demo-token"


def booking(seats: int, event: str = "ws-acme-1") -> dict[str, Any]:
    return {"event_id": event, "participant": "mia", "seats": seats}


def outputs(model: ScriptedModel) -> dict[str, str]:
    """The tool outputs the model was handed in its last request, by call ID."""
    last = model.calls[-1].input
    return {
        i["call_id"]: i["output"]
        for i in last
        if isinstance(i, dict) and i.get("type") == "function_call_output"
    }


async def guarded(
    client: AsyncGatewayClient, run_id: str, model: ScriptedModel
) -> tuple[CallgateRun, Agent[Any]]:
    gate = CallgateRun(client, run_id)
    return gate, gate.guard(Agent(name="booker", model=model), await gate.tools())


def approve(sidecar: SidecarProcess, approval_id: str, *, yes: bool = True) -> None:
    with GatewayClient(sidecar.target, OLGA, timeout_s=30) as olga:
        olga.decide_approval(approval_id, approve=yes, reason="checked with the team")


async def test_a_read_runs_in_callgate_and_its_output_reaches_the_model(
    sidecar: SidecarProcess, fresh_workshop: WorkshopService, run_id: str
) -> None:
    model = ScriptedModel(
        [
            [function_call("check_availability", {"event_id": "ws-acme-1"}, call_id="call_read")],
            [assistant_message("20 seats left.")],
        ]
    )
    async with AsyncGatewayClient(sidecar.target, MIA, timeout_s=30) as client:
        _, agent = await guarded(client, run_id, model)
        result = await Runner.run(agent, "How many seats?", run_config=CONFIG)
        run = await client.get_run(run_id)
    assert result.final_output == "20 seats left."
    assert json.loads(outputs(model)["call_read"])["available"] == 20
    assert fresh_workshop.stats()["check_availability"] == 1
    assert run.state == pb.RUN_STATE_COMPLETED  # the final answer was a turn too


async def test_a_denied_call_never_runs_and_the_model_reads_why(
    sidecar: SidecarProcess, fresh_workshop: WorkshopService, run_id: str
) -> None:
    model = ScriptedModel(
        [
            [function_call("reserve_seat", booking(1, "ws-globex-1"), call_id="call_denied")],
            [assistant_message("I cannot book that.")],
        ]
    )
    async with AsyncGatewayClient(sidecar.target, MIA, timeout_s=30) as client:
        _, agent = await guarded(client, run_id, model)
        result = await Runner.run(agent, "Book ws-globex-1", run_config=CONFIG)
    text = outputs(model)["call_denied"]
    assert text.startswith("error: callgate refused reserve_seat (policy_denied)"), text
    assert "event ws-globex-1 is outside tenant acme" in text
    assert not result.interruptions
    assert fresh_workshop.reservations() == [] and fresh_workshop.stats()["reserve_seat"] == 0


async def test_an_approved_write_runs_once_across_interrupt_and_two_resumes(
    sidecar: SidecarProcess, fresh_workshop: WorkshopService, run_id: str
) -> None:
    model = ScriptedModel(
        [
            [
                function_call(
                    "check_availability", {"event_id": "ws-acme-1"}, call_id="call_check"
                ),
                function_call("reserve_seat", booking(4), call_id="call_book"),
            ],
            [assistant_message("Booked.")],
            [assistant_message("Booked.")],
        ]
    )
    async with AsyncGatewayClient(sidecar.target, MIA, timeout_s=30) as client:
        gate, agent = await guarded(client, run_id, model)
        first = await Runner.run(agent, "Book 4 seats", run_config=CONFIG)
        assert [i.tool_name for i in first.interruptions] == ["reserve_seat"]
        saved = first.to_state().to_string()
        pending = await gate.apply_decisions(await RunState.from_string(agent, saved))
        assert [p["call_id"] for p in pending] == ["call_book"]
        assert fresh_workshop.reservations() == []  # the read ran, the write waits
        approve(sidecar, pending[0]["approval_id"])
        answers = []
        for _ in range(2):  # the same saved state resumed twice: the tool invoked twice
            state = await RunState.from_string(agent, saved)
            assert await gate.apply_decisions(state) == []
            done = await Runner.run(agent, state, run_config=CONFIG)
            assert done.final_output == "Booked."
            answers.append(json.loads(outputs(model)["call_book"]))
        record = next(c for c in (await client.get_run(run_id)).calls if c.call_id == "call_book")
    [reservation] = fresh_workshop.reservations()
    assert (
        answers[0] == answers[1] and answers[0]["reservation_id"] == reservation["reservation_id"]
    )
    assert fresh_workshop.stats()["reserve_seat"] == 1 and record.execution_count == 1


async def test_a_rejected_approval_reaches_the_model_as_an_error(
    sidecar: SidecarProcess, fresh_workshop: WorkshopService, run_id: str
) -> None:
    model = ScriptedModel(
        [
            [function_call("reserve_seat", booking(5), call_id="call_no")],
            [assistant_message("The booking was refused.")],
        ]
    )
    async with AsyncGatewayClient(sidecar.target, MIA, timeout_s=30) as client:
        gate, agent = await guarded(client, run_id, model)
        first = await Runner.run(agent, "Book 5 seats", run_config=CONFIG)
        state = first.to_state()
        [waiting] = await gate.apply_decisions(state)
        approve(sidecar, waiting["approval_id"], yes=False)
        assert await gate.apply_decisions(state) == []
        await Runner.run(agent, state, run_config=CONFIG)
    text = outputs(model)["call_no"]
    assert text.startswith("error: callgate refused reserve_seat (approval_denied)"), text
    assert fresh_workshop.reservations() == []


async def test_resuming_before_callgate_decides_raises_and_runs_nothing(
    sidecar: SidecarProcess, fresh_workshop: WorkshopService, run_id: str
) -> None:
    model = ScriptedModel([[function_call("reserve_seat", booking(3), call_id="call_early")]])
    async with AsyncGatewayClient(sidecar.target, MIA, timeout_s=30) as client:
        _, agent = await guarded(client, run_id, model)
        first = await Runner.run(agent, "Book 3 seats", run_config=CONFIG)
        state = first.to_state()
        state.approve(first.interruptions[0])  # the SDK's own yes is not callgate's
        with pytest.raises(ApprovalPending, match="waits for approval apr_"):
            await Runner.run(agent, state, run_config=CONFIG)
    assert fresh_workshop.reservations() == []


async def test_an_unknown_outcome_is_reported_and_never_sent_again(
    sidecar: SidecarProcess, fresh_workshop: WorkshopService, run_id: str
) -> None:
    fresh_workshop.control(reserve_seat={"apply_then_drop": True}, lookup={"status": 503})
    model = ScriptedModel(
        [
            [function_call("reserve_seat", booking(1), call_id="call_lost")],
            [assistant_message("The outcome is not known yet.")],
        ]
    )
    async with AsyncGatewayClient(sidecar.target, MIA, timeout_s=30) as client:
        _, agent = await guarded(client, run_id, model)
        await Runner.run(agent, "Book 1 seat", run_config=CONFIG)
    text = outputs(model)["call_lost"]
    assert text.startswith("error: the outcome of reserve_seat (call call_lost) is unknown"), text
    assert "Do not repeat this call" in text
    assert fresh_workshop.stats()["reserve_seat"] == 1  # sent once, looked up, never resent
    assert len(fresh_workshop.reservations()) == 1


def test_the_process_killed_between_approval_and_resume_books_once(
    sidecar: SidecarProcess, fresh_workshop: WorkshopService, run_id: str, tmp_path: Path
) -> None:
    state_file = tmp_path / "run-state.json"
    child, answer = started("agents", sidecar.target, MIA, run_id, state_file)
    assert killed(child) != 0
    [waiting] = answer["pending"]
    assert waiting["tool"] == "reserve_seat" and fresh_workshop.reservations() == []
    approve(sidecar, waiting["approval_id"])
    assert len(fresh_workshop.reservations()) == 1  # booked as the decision committed
    done = resumed("agents", sidecar.target, MIA, run_id, state_file)
    [reservation] = fresh_workshop.reservations()
    assert done["pending"] == [] and done["final"] == "Booked 4 seats."
    assert json.loads(done["outputs"][0])["reservation_id"] == reservation["reservation_id"]
    assert fresh_workshop.stats()["reserve_seat"] == 1


async def test_an_unreachable_sidecar_fails_the_run_quickly_and_runs_nothing(run_id: str) -> None:
    ran: list[str] = []

    @function_tool
    def reserve_seat(event_id: str, participant: str, seats: int) -> str:
        ran.append(event_id)
        return "booked in-process"

    model = ScriptedModel([[function_call("reserve_seat", booking(1), call_id="call_x")]])
    client = AsyncGatewayClient(
        "127.0.0.1:1", MIA, timeout_s=5, retry=RetryPolicy(attempts=1, connect_s=1)
    )
    async with client:
        gate = CallgateRun(client, run_id)
        agent = gate.guard(Agent(name="booker", model=model), gate.route(reserve_seat))
        began = time.monotonic()
        with pytest.raises(Unavailable, match="cannot reach the sidecar at 127.0.0.1:1"):
            await Runner.run(agent, "Book", run_config=CONFIG)
    assert time.monotonic() - began < 10 and ran == []


async def test_a_tool_callgate_does_not_know_is_refused_not_run_in_process(
    sidecar: SidecarProcess, run_id: str
) -> None:
    ran: list[str] = []

    @function_tool
    def launch_rockets(target: str) -> str:
        ran.append(target)
        return "launched"

    assert isinstance(launch_rockets, FunctionTool)
    model = ScriptedModel(
        [
            [function_call("launch_rockets", {"target": "moon"}, call_id="call_ghost")],
            [assistant_message("That tool is not available.")],
        ]
    )
    async with AsyncGatewayClient(sidecar.target, MIA, timeout_s=30) as client:
        gate = CallgateRun(client, run_id)
        agent = gate.guard(Agent(name="booker", model=model), gate.route(launch_rockets))
        await Runner.run(agent, "Launch", run_config=CONFIG)
    text = outputs(model)["call_ghost"]
    assert text.startswith("error: callgate refused launch_rockets (unknown_tool)"), text
    assert ran == []


async def test_with_wait_s_a_resumed_tool_waits_for_the_decision_in_callgate(
    sidecar: SidecarProcess, fresh_workshop: WorkshopService, run_id: str
) -> None:
    model = ScriptedModel(
        [
            [function_call("reserve_seat", booking(3), call_id="call_wait")],
            [assistant_message("Booked.")],
        ]
    )
    async with AsyncGatewayClient(sidecar.target, MIA, timeout_s=30) as client:
        gate = CallgateRun(client, run_id, wait_s=60)
        agent = gate.guard(Agent(name="booker", model=model), await gate.tools())
        first = await Runner.run(agent, "Book 3 seats", run_config=CONFIG)
        state = first.to_state()
        [waiting] = await gate.apply_decisions(state)
        state.approve(first.interruptions[0])  # resume at once: the tool waits for callgate
        resuming = asyncio.create_task(Runner.run(agent, state, run_config=CONFIG))
        await asyncio.to_thread(approve, sidecar, waiting["approval_id"])
        done = await resuming
    assert done.final_output == "Booked."
    [reservation] = fresh_workshop.reservations()
    assert (
        json.loads(outputs(model)["call_wait"])["reservation_id"] == reservation["reservation_id"]
    )


async def test_arguments_against_the_schema_are_refused_and_nothing_runs(
    sidecar: SidecarProcess, fresh_workshop: WorkshopService, run_id: str
) -> None:
    model = ScriptedModel(
        [
            [function_call("reserve_seat", booking(40), call_id="call_many")],
            [assistant_message("Too many seats.")],
        ]
    )
    async with AsyncGatewayClient(sidecar.target, MIA, timeout_s=30) as client:
        _, agent = await guarded(client, run_id, model)
        result = await Runner.run(agent, "Book 40 seats", run_config=CONFIG)
    text = outputs(model)["call_many"]
    assert text.startswith("error: callgate refused reserve_seat (invalid_arguments)"), text
    assert not result.interruptions and fresh_workshop.stats()["reserve_seat"] == 0
