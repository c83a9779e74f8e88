"""Gateway mode with the MCP SDK's own client: what a caller is listed, what a call does, and
that nothing policy refuses reaches the workshop service (its bookings are read from its own
SQLite file)."""

from __future__ import annotations

from typing import Any

import mcp_types as types

from examples.workshop.service import WorkshopService
from gateway import pb
from gateway.client import GatewayClient
from tests.gateway.mcp_gateway.conftest import Gateway, mcp_session

MIA, BOB, OLGA = "mia-demo-token", "bob-demo-token", "olga-demo-token"
SEAT = {"event_id": "ws-acme-1", "participant": "mia", "seats": 1}


def text_of(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


def refused(result: types.CallToolResult, code: str) -> str:
    """The error result's text, which starts with callgate's code."""
    assert result.is_error, result
    text = text_of(result)
    assert text.startswith(f"{code}: "), text
    return text


async def test_each_caller_is_listed_only_the_tools_it_may_use(gateway: Gateway) -> None:
    async with mcp_session(gateway.url, MIA) as mia, mcp_session(gateway.url, BOB) as bob:
        mine = {t.name: t for t in (await mia.list_tools()).tools}
        bobs = {t.name for t in (await bob.list_tools()).tools}
    assert set(mine) == {"list_events", "check_availability", "reserve_seat"}
    assert bobs == {"get_train_status", "get_weather"}
    reserve = mine["reserve_seat"]
    assert reserve.input_schema["required"] == ["event_id", "participant", "seats"]
    assert (
        reserve.output_schema is not None
        and "reservation_id" in reserve.output_schema["properties"]
    )
    assert reserve.description == "Reserve seats at a workshop event for a participant."
    assert reserve.annotations is not None and reserve.annotations.read_only_hint is False
    check = mine["check_availability"]
    assert check.annotations is not None and check.annotations.read_only_hint is True


async def test_an_allowed_call_runs_once_and_answers_its_output(
    gateway: Gateway, fresh_workshop: WorkshopService
) -> None:
    async with mcp_session(gateway.url, MIA) as mia:
        booked = await mia.call_tool("reserve_seat", SEAT)
        listed = await mia.call_tool("list_events", {"tenant": "acme"})
    assert not booked.is_error, text_of(booked)
    made = fresh_workshop.reservations()
    assert [(r["participant"], r["seats"]) for r in made] == [("mia", 1)]
    assert booked.structured_content == {**SEAT, "reservation_id": made[0]["reservation_id"]}
    assert isinstance(listed.structured_content, dict)
    assert [e["event_id"] for e in listed.structured_content["events"]] == [
        "ws-acme-1",
        "ws-acme-2",
    ]


async def test_a_denied_call_reaches_nothing_and_names_the_reasons(
    gateway: Gateway, fresh_workshop: WorkshopService
) -> None:
    async with mcp_session(gateway.url, MIA) as mia:
        for_bob = await mia.call_tool("reserve_seat", {**SEAT, "participant": "bob"})
        other_tenant = await mia.call_tool("reserve_seat", {**SEAT, "event_id": "ws-globex-1"})
        not_hers = await mia.call_tool("get_weather", {"city": "Berlin", "date": "2026-12-03"})
        still_works = await mia.call_tool("check_availability", {"event_id": "ws-acme-1"})
    assert "a member reserves only for themself, not for bob" in refused(for_bob, "policy_denied")
    assert "event ws-globex-1 is outside tenant acme" in refused(other_tenant, "policy_denied")
    assert "tool get_weather not allowed for roles [member]" in refused(not_hers, "policy_denied")
    assert not still_works.is_error  # a refusal is an answer: the session goes on
    assert fresh_workshop.reservations() == []
    assert fresh_workshop.stats()["reserve_seat"] == 0
    with GatewayClient(gateway.sidecar.target, "audrey-demo-token", timeout_s=30) as audrey:
        trail = list(audrey.query_audit(subject="mia", tool="get_weather"))
    denied = [r for r in trail if r.kind == "decision" and r.error_code == "policy_denied"]
    assert denied and denied[-1].run_id.startswith("mcp-")  # recorded like any other call


async def test_a_failed_call_is_an_error_result_with_the_tools_own_code(
    gateway: Gateway, fresh_workshop: WorkshopService
) -> None:
    fresh_workshop.control(check_availability={"status": 503, "times": 2})
    async with mcp_session(gateway.url, MIA) as mia:
        failed = await mia.call_tool("check_availability", {"event_id": "ws-acme-1"})
        again = await mia.call_tool("check_availability", {"event_id": "ws-acme-1"})
    assert "503" in refused(failed, "tool_error")
    assert not again.is_error  # a final answer: the same call again is a new call
    assert fresh_workshop.stats()["check_availability"] == 3


async def test_schema_violations_and_unknown_tools_are_tool_errors(
    gateway: Gateway, fresh_workshop: WorkshopService
) -> None:
    async with mcp_session(gateway.url, MIA) as mia:
        no_seats = await mia.call_tool("reserve_seat", {**SEAT, "seats": 0})
        extra = await mia.call_tool("reserve_seat", {**SEAT, "note": "x"})
        missing = await mia.call_tool("reserve_seat", {"event_id": "ws-acme-1"})
        unknown = await mia.call_tool("delete_everything", {})
    for result in (no_seats, extra, missing):
        refused(result, "invalid_arguments")
    assert "seats" in text_of(no_seats) and "participant" in text_of(missing)
    assert "delete_everything" in refused(unknown, "unknown_tool")
    assert fresh_workshop.reservations() == []
    assert fresh_workshop.stats()["reserve_seat"] == 0


def approval_id(result: types.CallToolResult) -> str:
    return refused(result, "approval_required").split()[1]


async def test_an_approved_call_runs_once_and_its_retry_answers_it(
    gateway: Gateway, fresh_workshop: WorkshopService
) -> None:
    three = {**SEAT, "seats": 3}
    async with mcp_session(gateway.url, MIA) as mia:
        first = await mia.call_tool("reserve_seat", three)
        waiting = approval_id(first)
        assert "call this tool again with exactly the same arguments" in text_of(first)
        again = await mia.call_tool("reserve_seat", dict(reversed(three.items())))
        assert approval_id(again) == waiting  # the same call, still waiting
        other = await mia.call_tool("list_events", {"tenant": "acme"})
        refused(other, "run_paused")  # the session's run waits for the person
        assert fresh_workshop.reservations() == []

        with GatewayClient(gateway.sidecar.target, OLGA, timeout_s=30) as olga:
            decided = olga.decide_approval(waiting, approve=True, reason="fine")
        assert decided.result.status == pb.CALL_STATUS_SUCCEEDED  # it ran when approved
        made = fresh_workshop.reservations()
        assert [(r["participant"], r["seats"]) for r in made] == [("mia", 3)]

        retried = await mia.call_tool("reserve_seat", three)
        assert not retried.is_error, text_of(retried)
        assert retried.structured_content == {**three, "reservation_id": made[0]["reservation_id"]}
        different = await mia.call_tool("reserve_seat", {**three, "seats": 4})
        assert approval_id(different) != waiting  # its own approval, and it does not run
    assert len(fresh_workshop.reservations()) == 1
    assert fresh_workshop.stats()["reserve_seat"] == 1


async def test_a_denied_approval_answers_the_retry_and_books_nothing(
    gateway: Gateway, fresh_workshop: WorkshopService
) -> None:
    three: dict[str, Any] = {**SEAT, "event_id": "ws-acme-2", "seats": 3}
    async with mcp_session(gateway.url, MIA) as mia:
        waiting = approval_id(await mia.call_tool("reserve_seat", three))
        with GatewayClient(gateway.sidecar.target, OLGA, timeout_s=30) as olga:
            olga.decide_approval(waiting, approve=False, reason="too many")
        retried = await mia.call_tool("reserve_seat", three)
        assert "too many" in refused(retried, "approval_denied")
        after = await mia.call_tool("check_availability", {"event_id": "ws-acme-2"})
    assert not after.is_error  # the run went on
    assert fresh_workshop.reservations() == []


async def test_a_lost_write_is_looked_up_on_the_retry_never_sent_blindly(
    gateway: Gateway, fresh_workshop: WorkshopService
) -> None:
    """The booking is made but its answer lost, and the first look-up fails: the call is
    UNKNOWN. The same call again looks it up again and answers the one booking."""
    fresh_workshop.control(
        reserve_seat={"apply_then_drop": True, "times": 1}, lookup={"status": 500, "times": 1}
    )
    async with mcp_session(gateway.url, MIA) as mia:
        lost = await mia.call_tool("reserve_seat", SEAT)
        assert "never sends it again blindly" in refused(lost, "outcome_unknown")
        found = await mia.call_tool("reserve_seat", SEAT)
    made = fresh_workshop.reservations()
    assert len(made) == 1 and fresh_workshop.stats()["reserve_seat"] == 1
    assert not found.is_error, text_of(found)
    assert found.structured_content == {**SEAT, "reservation_id": made[0]["reservation_id"]}
