"""Gateway mode as an OAuth 2.1 resource server: the 401 that points at the metadata, the
metadata document, and JWTs accepted only when their audience is the listener's own URL."""

from __future__ import annotations

import json
from typing import Any

import httpx2
import pytest

from tests.gateway.mcp_gateway.conftest import Gateway, http_client, mcp_session

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"},
    },
}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


async def post(
    gateway: Gateway, token: str, body: Any = INITIALIZE, headers: dict[str, str] | None = None
) -> httpx2.Response:
    async with http_client(token) as http:
        return await http.post(
            gateway.url, content=json.dumps(body), headers={**MCP_HEADERS, **(headers or {})}
        )


def assert_points_at_metadata(response: httpx2.Response, gateway: Gateway) -> None:
    assert response.status_code == 401, response.text
    challenge = response.headers["www-authenticate"]
    assert challenge.startswith("Bearer ")
    expected = f"{gateway.origin}/.well-known/oauth-protected-resource/mcp"
    assert f'resource_metadata="{expected}"' in challenge
    assert response.json()["error"] == "invalid_token"


async def test_without_a_token_the_answer_is_401_naming_the_metadata(gateway: Gateway) -> None:
    assert_points_at_metadata(await post(gateway, ""), gateway)
    assert_points_at_metadata(await post(gateway, "not-a-known-token"), gateway)
    async with http_client() as http:
        basic = await http.post(
            gateway.url,
            content=json.dumps(INITIALIZE),
            headers={**MCP_HEADERS, "Authorization": "Basic bWlhOng="},
        )
    assert_points_at_metadata(basic, gateway)


async def test_the_metadata_document_names_the_resource_and_the_issuer(gateway: Gateway) -> None:
    async with http_client() as http:
        for path in (
            "/.well-known/oauth-protected-resource",
            "/.well-known/oauth-protected-resource/mcp",
        ):
            response = await http.get(gateway.origin + path)
            assert response.status_code == 200, path
            document = response.json()
            assert document["resource"] == gateway.url
            assert document["authorization_servers"] == [gateway.idp.issuer]
            assert document["bearer_methods_supported"] == ["header"]


@pytest.mark.parametrize("audience", ["callgate", "http://127.0.0.1:1/mcp", None])
async def test_a_jwt_for_another_audience_is_refused(
    gateway: Gateway, audience: str | None
) -> None:
    """`callgate` is the gRPC API's audience (jwt.audiences): not this listener's."""
    token = gateway.idp.token(sub="mia", roles=["member"], aud=audience)
    assert_points_at_metadata(await post(gateway, token), gateway)


async def test_a_jwt_for_this_listener_is_accepted_with_its_roles(gateway: Gateway) -> None:
    token = gateway.idp.token(sub="mia", roles=["member"], aud=gateway.url)
    async with mcp_session(gateway.url, token) as session:
        listed = {t.name for t in (await session.list_tools()).tools}
    assert listed == {"list_events", "check_availability", "reserve_seat"}
    expired = gateway.idp.token(sub="mia", roles=["member"], aud=gateway.url, exp=1)
    assert_points_at_metadata(await post(gateway, expired), gateway)


async def test_a_session_answers_only_the_credential_that_opened_it(gateway: Gateway) -> None:
    opened = await post(gateway, "mia-demo-token")
    assert opened.status_code == 200
    session = opened.headers["mcp-session-id"]
    listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}
    other = await post(
        gateway,
        "bob-demo-token",
        listing,
        {"Mcp-Session-Id": session, "Mcp-Protocol-Version": "2025-11-25"},
    )
    assert other.status_code == 404  # as if there were no such session
