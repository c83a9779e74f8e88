"""Gateway mode on hostile input: malformed JSON-RPC, huge and deeply nested arguments, numbers
canonical JSON cannot hold. Each gets a clear answer, nothing reaches the tool, and the other
sessions (and the offending one) go on."""

from __future__ import annotations

import json
from typing import Any

from examples.workshop.service import WorkshopService
from tests.gateway.mcp_gateway.conftest import Gateway, http_client, mcp_session
from tests.gateway.mcp_gateway.test_gateway_auth import INITIALIZE, MCP_HEADERS
from tests.gateway.mcp_gateway.test_gateway_mode import SEAT, refused

MIA = "mia-demo-token"


def sse_message(text: str) -> dict[str, Any]:
    """The JSON-RPC message of a one-event SSE answer."""
    data = [line.removeprefix("data: ") for line in text.splitlines() if line.startswith("data: ")]
    assert len(data) == 1, text
    message: dict[str, Any] = json.loads(data[0])
    return message


async def test_malformed_messages_get_json_rpc_errors_and_nothing_else_breaks(
    gateway: Gateway, fresh_workshop: WorkshopService
) -> None:
    async with mcp_session(gateway.url, MIA) as bystander, http_client(MIA) as http:
        opened = await http.post(gateway.url, content=json.dumps(INITIALIZE), headers=MCP_HEADERS)
        headers = {
            **MCP_HEADERS,
            "Mcp-Session-Id": opened.headers["mcp-session-id"],
            "Mcp-Protocol-Version": "2025-11-25",
        }
        answers = {}
        for name, body in {
            "not json": "{not json",
            "not a message": "[1, 2]",
            "method not a string": json.dumps({"jsonrpc": "2.0", "id": 3, "method": 5}),
            "too deep to parse": '{"jsonrpc": "2.0", "id": 4, "method": "tools/call", '
            '"params": {"name": "reserve_seat", "arguments": {"a": '
            + "[" * 5000
            + "]" * 5000
            + "}}}",
        }.items():
            answer = await http.post(gateway.url, content=body, headers=headers)
            answers[name] = (answer.status_code, answer.json()["error"]["code"])
        nameless = await http.post(
            gateway.url,
            headers=headers,
            content=json.dumps({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {}}),
        )
        still = await http.post(
            gateway.url,
            headers=headers,
            content=json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": 6,
                    "method": "tools/call",
                    "params": {
                        "name": "check_availability",
                        "arguments": {"event_id": "ws-acme-1"},
                    },
                }
            ),
        )
        assert (
            await bystander.call_tool("check_availability", {"event_id": "ws-acme-1"})
        ).is_error is False
    assert answers == {
        "not json": (400, -32700),
        "not a message": (400, -32602),
        "method not a string": (400, -32602),
        "too deep to parse": (400, -32700),
    }
    assert sse_message(nameless.text)["error"]["code"] == -32602
    assert sse_message(still.text)["result"]["isError"] is False  # the same session goes on
    assert fresh_workshop.stats()["reserve_seat"] == 0


async def test_a_body_past_the_message_limit_is_refused_before_it_is_read(gateway: Gateway) -> None:
    async with http_client(MIA) as http:
        huge = await http.post(
            gateway.url,
            headers=MCP_HEADERS,
            content=b'{"pad": "' + b"x" * (5 * 1024 * 1024) + b'"}',
        )
    assert huge.status_code == 413


async def test_oversized_deep_and_unwritable_arguments_are_tool_errors(
    gateway: Gateway, fresh_workshop: WorkshopService
) -> None:
    deep: Any = []
    for _ in range(100):
        deep = [deep]
    async with mcp_session(gateway.url, MIA) as mia, mcp_session(gateway.url, MIA) as other:
        big = await mia.call_tool("reserve_seat", {**SEAT, "email": "x" * 200_000})
        nested = await mia.call_tool("reserve_seat", {**SEAT, "email": deep})
        number = await mia.call_tool("reserve_seat", {**SEAT, "seats": 2**60})
        after = await mia.call_tool("check_availability", {"event_id": "ws-acme-1"})
        beside = await other.call_tool("list_events", {"tenant": "acme"})
    assert "--max-arguments-bytes" in refused(big, "invalid_arguments")
    assert "nesting deeper than 64 levels" in refused(nested, "invalid_arguments")
    assert "canonical JSON" in refused(number, "invalid_arguments")
    assert not after.is_error and not beside.is_error
    assert fresh_workshop.stats()["reserve_seat"] == 0


async def test_a_foreign_host_or_origin_is_refused_on_loopback(gateway: Gateway) -> None:
    """DNS rebinding: a page elsewhere cannot drive a loopback gateway through the browser."""
    async with http_client(MIA) as http:
        host = await http.post(
            gateway.url,
            content=json.dumps(INITIALIZE),
            headers={**MCP_HEADERS, "Host": "evil.example"},
        )
        origin = await http.post(
            gateway.url,
            content=json.dumps(INITIALIZE),
            headers={**MCP_HEADERS, "Origin": "https://evil.example"},
        )
        own = await http.post(
            gateway.url,
            content=json.dumps(INITIALIZE),
            headers={**MCP_HEADERS, "Origin": gateway.origin},
        )
    assert (host.status_code, origin.status_code, own.status_code) == (421, 403, 200)
