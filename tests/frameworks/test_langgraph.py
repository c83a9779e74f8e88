"""LangGraph over a real sidecar: a real graph (model node, `CallgateToolNode`, the prebuilt
`tools_condition`) with a real checkpointer, langchain_core's fake chat model emitting
AIMessage tool calls (no network), the workshop service's own database counting reservations.
Mia (member) books for herself: up to 2 seats need no approval, more need an owner's (Olga)."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import tools_condition
from langgraph.types import Command

from examples.workshop.service import WorkshopService
from gateway.client import AsyncGatewayClient, GatewayClient, RetryPolicy, Unavailable
from gateway.frameworks.langgraph import CallgateToolNode, callgate_tool_specs
from gateway.testing import SidecarProcess
from tests.support.commands import callgate
from tests.support.framework_runs import killed, resumed, started
from tests.support.graphs import booking_graph

MIA, OLGA = "mia-demo-token", "olga-demo-token"


def calls(*specs: tuple[str, str, dict[str, Any]]) -> AIMessage:
    return AIMessage(
        content="",
        tool_calls=[
            {"name": name, "args": args, "id": call_id, "type": "tool_call"}
            for call_id, name, args in specs
        ],
    )


def model(*replies: AIMessage) -> GenericFakeChatModel:
    return GenericFakeChatModel(messages=iter(replies))


def booking(seats: int, event: str = "ws-acme-1") -> dict[str, Any]:
    return {"event_id": event, "participant": "mia", "seats": seats}


def tool_messages(out: dict[str, Any]) -> dict[str, ToolMessage]:
    return {m.tool_call_id: m for m in out["messages"] if isinstance(m, ToolMessage)}


@pytest.fixture
def mia(sidecar: SidecarProcess) -> Iterator[GatewayClient]:
    with GatewayClient(sidecar.target, MIA, timeout_s=30) as client:
        yield client


def decide(sidecar: SidecarProcess, approval_id: str, *, yes: bool = True) -> None:
    with GatewayClient(sidecar.target, OLGA, timeout_s=30) as olga:
        olga.decide_approval(approval_id, approve=yes, reason="checked with the team")


def test_a_read_answers_one_tool_message_per_call_id(
    mia: GatewayClient, fresh_workshop: WorkshopService, run_id: str
) -> None:
    app = booking_graph(
        mia,
        model(
            calls(
                ("c_read", "check_availability", {"event_id": "ws-acme-1"}),
                ("c_list", "list_events", {"tenant": "acme"}),
            ),
            AIMessage(content="Two workshops."),
        ),
        InMemorySaver(),
    )
    out = app.invoke(
        {"messages": [HumanMessage("What is on?")]}, {"configurable": {"thread_id": run_id}}
    )
    messages = tool_messages(out)
    assert list(messages) == ["c_read", "c_list"]
    assert json.loads(str(messages["c_read"].content))["available"] == 20
    assert messages["c_list"].status == "success" and messages["c_list"].name == "list_events"
    assert out["messages"][-1].content == "Two workshops."
    assert fresh_workshop.stats()["check_availability"] == 1
    names = {spec["function"]["name"] for spec in callgate_tool_specs(mia)}
    assert {"check_availability", "list_events", "reserve_seat"} <= names  # for bind_tools


def test_a_denied_call_never_runs_and_the_tool_message_says_why(
    mia: GatewayClient, fresh_workshop: WorkshopService, run_id: str
) -> None:
    app = booking_graph(
        mia,
        model(
            calls(("c_deny", "reserve_seat", booking(1, "ws-globex-1"))),
            AIMessage(content="Refused."),
        ),
        InMemorySaver(),
    )
    out = app.invoke({"messages": [HumanMessage("Book")]}, {"configurable": {"thread_id": run_id}})
    message = tool_messages(out)["c_deny"]
    assert message.status == "error"
    assert "callgate refused reserve_seat (policy_denied)" in str(message.content)
    assert "event ws-globex-1 is outside tenant acme" in str(message.content)
    assert fresh_workshop.reservations() == [] and fresh_workshop.stats()["reserve_seat"] == 0


def test_an_approved_write_runs_once_though_the_node_runs_three_times(
    sidecar: SidecarProcess,
    mia: GatewayClient,
    fresh_workshop: WorkshopService,
    run_id: str,
    tmp_path: Path,
) -> None:
    conn = sqlite3.connect(tmp_path / "checkpoints.db", check_same_thread=False)
    app = booking_graph(
        mia,
        model(calls(("c_book", "reserve_seat", booking(4))), AIMessage(content="Booked.")),
        SqliteSaver(conn),
    )
    config: Any = {"configurable": {"thread_id": run_id}}
    first = app.invoke({"messages": [HumanMessage("Book 4")]}, config)
    [waiting] = first["__interrupt__"]
    [approval] = waiting.value["approvals"]
    assert approval["call_id"] == "c_book" and waiting.value["run_id"] == run_id
    assert "needs approval by an owner" in approval["reasons"][0]
    early = app.invoke(Command(resume=True), config)  # resumed before anyone decided
    assert early["__interrupt__"][0].value["approvals"] == [approval]
    assert fresh_workshop.reservations() == []
    decide(sidecar, approval["approval_id"])
    out = app.invoke(Command(resume=True), config)  # the node runs from its start again
    [reservation] = fresh_workshop.reservations()
    message = tool_messages(out)["c_book"]
    assert json.loads(str(message.content))["reservation_id"] == reservation["reservation_id"]
    assert out["messages"][-1].content == "Booked."
    assert fresh_workshop.stats()["reserve_seat"] == 1
    record = next(c for c in mia.get_run(run_id).calls if c.call_id == "c_book")
    assert record.execution_count == 1


def test_a_rejected_approval_reaches_the_model_as_an_error(
    sidecar: SidecarProcess, mia: GatewayClient, fresh_workshop: WorkshopService, run_id: str
) -> None:
    app = booking_graph(
        mia,
        model(calls(("c_no", "reserve_seat", booking(6))), AIMessage(content="Refused.")),
        InMemorySaver(),
    )
    config: Any = {"configurable": {"thread_id": run_id}}
    first = app.invoke({"messages": [HumanMessage("Book 6")]}, config)
    decide(sidecar, first["__interrupt__"][0].value["approvals"][0]["approval_id"], yes=False)
    message = tool_messages(app.invoke(Command(resume=True), config))["c_no"]
    assert message.status == "error"
    assert "callgate refused reserve_seat (approval_denied)" in str(message.content)
    assert fresh_workshop.reservations() == []


def test_an_unknown_outcome_is_an_error_message_and_never_sent_again(
    mia: GatewayClient, fresh_workshop: WorkshopService, run_id: str
) -> None:
    fresh_workshop.control(reserve_seat={"apply_then_drop": True}, lookup={"status": 503})
    app = booking_graph(
        mia,
        model(calls(("c_lost", "reserve_seat", booking(1))), AIMessage(content="Unknown yet.")),
        InMemorySaver(),
    )
    out = app.invoke(
        {"messages": [HumanMessage("Book 1")]}, {"configurable": {"thread_id": run_id}}
    )
    message = tool_messages(out)["c_lost"]
    assert message.status == "error" and "is unknown" in str(message.content)
    assert fresh_workshop.stats()["reserve_seat"] == 1
    assert len(fresh_workshop.reservations()) == 1


def test_the_process_killed_between_approval_and_resume_books_once(
    sidecar: SidecarProcess, fresh_workshop: WorkshopService, run_id: str, tmp_path: Path
) -> None:
    checkpoints = tmp_path / "checkpoints.db"
    child, answer = started("langgraph", sidecar.target, MIA, run_id, checkpoints)
    assert killed(child) != 0
    [waiting] = answer["pending"]
    assert waiting["tool"] == "reserve_seat" and fresh_workshop.reservations() == []
    approved = callgate(  # as a person does it: the command, as an owner of acme
        "approvals",
        "approve",
        waiting["approval_id"],
        "--reason",
        "ok",
        env={"CALLGATE_TARGET": sidecar.target, "CALLGATE_TOKEN": OLGA},
    )
    assert approved.returncode == 0, approved.stderr
    assert len(fresh_workshop.reservations()) == 1  # booked as the decision committed
    done = resumed("langgraph", sidecar.target, MIA, run_id, checkpoints)
    [reservation] = fresh_workshop.reservations()
    assert json.loads(done["outputs"][0])["reservation_id"] == reservation["reservation_id"]
    assert done["final"] == "Booked 4 seats."
    assert fresh_workshop.stats()["reserve_seat"] == 1


def test_an_unreachable_sidecar_is_a_clear_error_not_a_hang(run_id: str) -> None:
    client = GatewayClient(
        "127.0.0.1:1", MIA, timeout_s=5, retry=RetryPolicy(attempts=1, connect_s=1)
    )
    with client:
        app = booking_graph(
            client, model(calls(("c_x", "reserve_seat", booking(1)))), InMemorySaver()
        )
        began = time.monotonic()
        with pytest.raises(Unavailable, match="cannot reach the sidecar at 127.0.0.1:1"):
            app.invoke(
                {"messages": [HumanMessage("Book")]}, {"configurable": {"thread_id": run_id}}
            )
    assert time.monotonic() - began < 10


def test_a_tool_callgate_does_not_know_is_refused(
    mia: GatewayClient, fresh_workshop: WorkshopService, run_id: str
) -> None:
    app = booking_graph(
        mia,
        model(
            calls(("c_ghost", "launch_rockets", {"target": "moon"})),
            AIMessage(content="No such tool."),
        ),
        InMemorySaver(),
    )
    out = app.invoke(
        {"messages": [HumanMessage("Launch")]}, {"configurable": {"thread_id": run_id}}
    )
    message = tool_messages(out)["c_ghost"]
    assert message.status == "error"
    assert "callgate refused launch_rockets (unknown_tool)" in str(message.content)


def test_a_graph_without_a_thread_is_refused_before_anything_is_sent(mia: GatewayClient) -> None:
    node = CallgateToolNode(mia)
    state = {"messages": [calls(("c_t", "check_availability", {"event_id": "ws-acme-1"}))]}
    with pytest.raises(ValueError, match="needs a thread"):
        node(state, {})


async def test_the_async_node_interrupts_and_resumes_under_ainvoke(
    sidecar: SidecarProcess, fresh_workshop: WorkshopService, run_id: str
) -> None:
    async with AsyncGatewayClient(sidecar.target, MIA, timeout_s=30) as client:
        node = CallgateToolNode(client)
        chat = model(
            calls(
                ("c_read", "check_availability", {"event_id": "ws-acme-1"}),
                ("c_book", "reserve_seat", booking(4)),
            ),
            AIMessage(content="Booked."),
        )
        graph = StateGraph(MessagesState)
        graph.add_node("agent", lambda state: {"messages": [chat.invoke(state["messages"])]})
        graph.add_node("tools", node.acall)
        graph.add_edge(START, "agent")
        graph.add_conditional_edges("agent", tools_condition)
        graph.add_edge("tools", "agent")
        app = graph.compile(checkpointer=InMemorySaver())
        config: Any = {"configurable": {"thread_id": run_id}}
        first = await app.ainvoke({"messages": [HumanMessage("Book 4")]}, config)
        [approval] = first["__interrupt__"][0].value["approvals"]
        assert fresh_workshop.stats()["check_availability"] == 1  # the read ran already
        await asyncio.to_thread(decide, sidecar, approval["approval_id"])
        out = await app.ainvoke(Command(resume=True), config)
    messages = tool_messages(out)
    assert list(messages) == ["c_read", "c_book"]
    assert all(m.status == "success" for m in messages.values())
    assert len(fresh_workshop.reservations()) == 1
    assert fresh_workshop.stats()["check_availability"] == 1  # not read again on the re-run
    with pytest.raises(TypeError, match="AsyncGatewayClient"):
        node({"messages": []}, {})


def test_arguments_against_the_schema_and_unparsed_ones_are_refused(
    mia: GatewayClient, fresh_workshop: WorkshopService, run_id: str
) -> None:
    broken = AIMessage(
        content="",
        tool_calls=[{"name": "reserve_seat", "args": booking(40), "id": "c_many"}],
        invalid_tool_calls=[
            {
                "name": "reserve_seat",
                "args": '{"event_id": "ws-acme-1", "se',
                "id": "c_cut",
                "error": "unterminated string",
                "type": "invalid_tool_call",
            }
        ],
    )
    app = booking_graph(mia, model(broken, AIMessage(content="No.")), InMemorySaver())
    out = app.invoke(
        {"messages": [HumanMessage("Book 40")]}, {"configurable": {"thread_id": run_id}}
    )
    messages = tool_messages(out)
    assert "callgate refused reserve_seat (invalid_arguments)" in str(messages["c_many"].content)
    assert messages["c_cut"].status == "error" and "did not run" in str(messages["c_cut"].content)
    assert fresh_workshop.stats()["reserve_seat"] == 0
