"""Round trips through the real google-genai client against a loopback server."""

from __future__ import annotations

from typing import Any

import pytest
from google.genai import errors, types

from adapters.events import (
    ErrorKind,
    FinalEvent,
    ProviderErrorEvent,
    ToolRequestEvent,
    ToolResult,
    ToolSpec,
    fallback_call_id,
)
from adapters.gemini import GeminiAdapter
from tests.adapters.gemini._support import RESPONSE_FIXTURES, genai_client, load
from tests.adapters.loopback import LoopbackServer, Reply

USER_TURN = {"role": "user", "parts": [{"text": "Weather in Paris and Tokyo, then book."}]}
SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "units": {"enum": ["c", "f"]}},
    "required": ["city"],
    "additionalProperties": False,
}


def _sdk_spelling(declaration: dict[str, Any]) -> dict[str, Any]:
    """google-genai re-serializes FunctionDeclaration by its Python field names; the API's
    proto-JSON parser accepts both spellings. Only the key changes; values arrive verbatim."""
    renamed = {"parametersJsonSchema": "parameters_json_schema"}
    return {renamed.get(key, key): value for key, value in declaration.items()}


@pytest.mark.parametrize("name", RESPONSE_FIXTURES)
def test_sdk_parses_every_fixture(server: LoopbackServer, name: str) -> None:
    body = load(name)
    server.queue(Reply.json(body))
    with genai_client(server) as client:
        response = client.models.generate_content(model="gemini-2.5-flash", contents="hi")
    assert response.response_id == body["responseId"]
    calls = [
        p["functionCall"]
        for p in (body.get("candidates") or [{}])[0].get("content", {}).get("parts", [])
        if "functionCall" in p
    ]
    assert [(c.name, c.args) for c in response.function_calls or []] == [
        (c["name"], c["args"]) for c in calls
    ]


@pytest.mark.parametrize("api_version", ["v1beta", "v1"])
def test_next_request_carries_the_produced_items_verbatim(
    server: LoopbackServer, api_version: str
) -> None:
    adapter = GeminiAdapter(api_version)
    event = adapter.read_complete_event(load("parallel_calls.json"))
    assert isinstance(event, ToolRequestEvent)
    turn = event.meta.response_id
    results = [
        ToolResult(
            fallback_call_id(turn, 2),
            "book_table",
            "FAILED",
            error_code="tool_error",
            error_message="restaurant closed",
        ),
        ToolResult(fallback_call_id(turn, 0), "get_weather", "SUCCEEDED", '{"temp_c":18}'),
        ToolResult(
            fallback_call_id(turn, 1),
            "get_weather",
            "REJECTED",
            error_code="policy_denied",
            error_message="outside your region",
        ),
    ]
    conversation = adapter.extend_conversation([USER_TURN], event, results)
    # list[Any]: the SDK's config takes plain dicts (validated into types.Tool) as they are
    tools: list[Any] = adapter.tool_declarations(
        [
            ToolSpec("get_weather", "Current weather for a city.", SCHEMA),
            ToolSpec(
                "book_table",
                "Book a table.",
                {
                    "type": "object",
                    "properties": {
                        "restaurant": {"type": "string"},
                        "party_size": {"type": "integer"},
                        "time": {"type": "string"},
                    },
                },
            ),
        ]
    )
    server.queue(Reply.json(load("final_text.json")))
    with genai_client(server, api_version) as client:
        reply = client.models.generate_content(
            model="gemini-2.5-pro",
            contents=conversation,
            config=types.GenerateContentConfig(tools=tools),
        )
    received = server.received[0]
    assert received.path == f"/{api_version}/models/gemini-2.5-pro:generateContent"
    assert received.headers["x-goog-api-key"] == "test-key"
    sent = received.json()
    assert sent["contents"] == conversation
    assert sent["contents"][1]["parts"][2]["thoughtSignature"] == (
        "Q2lZQkhiM2pvaVZ2c2lnbmF0dXJlLXR3bw=="
    )
    assert sent["tools"] == [
        {"functionDeclarations": [_sdk_spelling(d) for d in tools[0]["functionDeclarations"]]}
    ]
    assert sent["tools"][0]["functionDeclarations"][0]["parameters_json_schema"] == SCHEMA
    assert reply.text == "It is 18 °C and sunny in Paris."
    final = adapter.read_complete_event(load("final_text.json"))
    assert isinstance(final, FinalEvent)
    assert final.meta.api_version == api_version


def test_one_call_round_trip_echoes_id_and_signature(server: LoopbackServer) -> None:
    adapter = GeminiAdapter()
    server.queue(Reply.json(load("one_call.json")), Reply.json(load("final_text.json")))
    with genai_client(server) as client:
        first = client.models.generate_content(model="gemini-2.5-flash", contents=[USER_TURN])
        body = first.model_dump(
            mode="json", by_alias=True, exclude_none=True, exclude={"sdk_http_response"}
        )
        event = adapter.read_complete_event(body)
        assert isinstance(event, ToolRequestEvent)
        results = [ToolResult("fc-weather-1", "get_weather", "SUCCEEDED", '{"temp_c":18}')]
        conversation = adapter.extend_conversation([USER_TURN], event, results)
        client.models.generate_content(model="gemini-2.5-flash", contents=conversation)
    sent = server.received[1].json()
    assert sent["contents"] == conversation
    assert sent["contents"][2] == {
        "role": "user",
        "parts": [
            {
                "functionResponse": {
                    "id": "fc-weather-1",
                    "name": "get_weather",
                    "response": {"temp_c": 18},
                }
            }
        ],
    }
    assert (
        sent["contents"][1]["parts"][1]["thoughtSignature"]
        == (load("one_call.json")["candidates"][0]["content"]["parts"][1]["thoughtSignature"])
    )


def test_http_error_through_the_sdk_is_a_provider_error(server: LoopbackServer) -> None:
    server.queue(Reply.json(load("error_429.json"), status=429))
    with genai_client(server) as client, pytest.raises(errors.ClientError) as info:
        client.models.generate_content(model="gemini-2.5-flash", contents="hi")
    assert isinstance(info.value.details, dict)
    event = GeminiAdapter().read_complete_event(info.value.details)
    assert isinstance(event, ProviderErrorEvent)
    assert (event.kind, event.retryable) == (ErrorKind.RATE_LIMIT, True)
    assert event.message.startswith("RESOURCE_EXHAUSTED: Resource has been exhausted")
