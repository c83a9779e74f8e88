"""Gateway mode on the stateless 2026-07-28 revision (`server/discover`, no session): the
client names its run in `_meta`, and retries after an approval work as in a session."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from examples.workshop.service import WorkshopService
from gateway.client import GatewayClient
from tests.gateway.mcp_gateway.conftest import Gateway, http_client
from tests.gateway.mcp_gateway.test_gateway_mode import SEAT, approval_id, refused

RUN_KEY = "io.callgate/run"


@asynccontextmanager
async def stateless(url: str, token: str) -> AsyncIterator[ClientSession]:
    async with (
        http_client(token) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.discover()
        assert session.protocol_version == "2026-07-28"
        yield session


async def test_without_a_run_key_a_call_is_told_to_name_one(
    gateway: Gateway, fresh_workshop: WorkshopService
) -> None:
    async with stateless(gateway.url, "mia-demo-token") as mia:
        listed = {t.name for t in (await mia.list_tools()).tools}
        result = await mia.call_tool("reserve_seat", SEAT)
    assert listed == {"list_events", "check_availability", "reserve_seat"}
    assert RUN_KEY in refused(result, "invalid_argument")
    assert fresh_workshop.reservations() == []


async def test_a_run_key_carries_the_run_across_requests(
    gateway: Gateway, fresh_workshop: WorkshopService, run_id: str
) -> None:
    three = {**SEAT, "seats": 3}
    meta = {RUN_KEY: run_id}
    async with stateless(gateway.url, "mia-demo-token") as mia:
        waiting = approval_id(await mia.call_tool("reserve_seat", three, meta=meta))
        with GatewayClient(gateway.sidecar.target, "olga-demo-token", timeout_s=30) as olga:
            olga.decide_approval(waiting, approve=True, reason="fine")
        retried = await mia.call_tool("reserve_seat", three, meta=meta)
    assert not retried.is_error
    made = fresh_workshop.reservations()
    assert [(r["participant"], r["seats"]) for r in made] == [("mia", 3)]
    with GatewayClient(gateway.sidecar.target, "mia-demo-token", timeout_s=30) as client:
        run = client.get_run(f"mcp-{run_id}")
    assert run.run_id == f"mcp-{run_id}"
    async with stateless(gateway.url, "bob-demo-token") as bob:  # another caller's key
        theirs = await bob.call_tool(
            "get_weather", {"city": "Berlin", "date": "2026-12-03"}, meta=meta
        )
    assert "belongs to another subject" in refused(theirs, "permission_denied")
    assert fresh_workshop.stats()["reserve_seat"] == 1
