"""Round trips through a real botocore bedrock-runtime client against a loopback server."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest
from botocore.exceptions import ClientError, EventStreamError

from adapters.bedrock_converse import ADAPTER
from adapters.events import (
    ErrorKind,
    FinalEvent,
    IncompleteEvent,
    ProviderErrorEvent,
    ProviderEvent,
    ToolRequestEvent,
    ToolSpec,
)
from tests.adapters.bedrock._eventstream import CONTENT_TYPE, encode, exception_frame
from tests.adapters.bedrock._support import (
    MODEL_ID,
    RESPONSE_FIXTURES,
    USER_TURN,
    bedrock_client,
    load,
    mixed_results,
    without_metadata,
)
from tests.adapters.loopback import LoopbackServer, Reply

STREAM = "stream_parallel_calls.json"
SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
    "additionalProperties": False,
}


def _stream_reply(body: bytes) -> Reply:
    return Reply(body, content_type=CONTENT_TYPE)


def _converse_stream(server: LoopbackServer, body: bytes) -> list[dict[str, Any]]:
    server.queue(_stream_reply(body))
    with bedrock_client(server) as client:
        response = client.converse_stream(modelId=MODEL_ID, messages=[USER_TURN])
        try:
            return list(response["stream"])
        finally:
            response["stream"].close()


def _feed(events: list[dict[str, Any]]) -> ProviderEvent:
    assembler = ADAPTER.new_stream_assembler()
    for event in events:
        assembler.feed(event)
    return assembler.finish()


@pytest.mark.parametrize("name", RESPONSE_FIXTURES)
def test_botocore_parses_every_fixture(server: LoopbackServer, name: str) -> None:
    server.queue(Reply.json(load(name)))
    with bedrock_client(server) as client:
        response = client.converse(modelId=MODEL_ID, messages=[USER_TURN])
    assert without_metadata(response) == load(name)
    assert type(ADAPTER.read_complete_event(response)) is type(
        ADAPTER.read_complete_event(load(name))
    )


def test_next_request_carries_the_produced_items_verbatim(server: LoopbackServer) -> None:
    server.queue(Reply.json(load("parallel_calls.json")), Reply.json(load("final_text.json")))
    tools = ADAPTER.tool_declarations(
        [
            ToolSpec("get_weather", "Current weather.", SCHEMA),
            ToolSpec("book_table", "Book a table.", {"type": "object", "properties": {}}),
        ]
    )
    with bedrock_client(server) as client:
        first = client.converse(modelId=MODEL_ID, messages=[USER_TURN], toolConfig={"tools": tools})
        event = ADAPTER.read_complete_event(first)
        assert isinstance(event, ToolRequestEvent)
        conversation = ADAPTER.extend_conversation([USER_TURN], event, mixed_results())
        second = client.converse(
            modelId=MODEL_ID, messages=conversation, toolConfig={"tools": tools}
        )
    first_sent, second_sent = (r.json() for r in server.received)
    assert server.received[1].path == ("/model/anthropic.claude-sonnet-4-20250514-v1%3A0/converse")
    assert first_sent["toolConfig"] == {"tools": tools}
    assert tools[0]["toolSpec"]["strict"] is True
    assert second_sent["messages"] == conversation
    assert (
        second_sent["messages"][1]["content"][0]["reasoningContent"]["reasoningText"]["signature"]
        == "EqQBCkYIBxgCKkBsaWduYXR1cmUtZm9yLXRlc3Rz"
    )
    assert [b["toolResult"]["status"] for b in second_sent["messages"][2]["content"]] == [
        "success",
        "error",
        "error",
    ]
    final = ADAPTER.read_complete_event(second)
    assert isinstance(final, FinalEvent)
    assert final.text == "It is 18 °C and sunny in Paris."


def test_event_stream_replay_equals_the_complete_response(server: LoopbackServer) -> None:
    events = _converse_stream(server, encode(load(STREAM)))
    assert events == load(STREAM)
    assert server.received[0].path.endswith("/converse-stream")
    streamed = _feed(events)
    complete = ADAPTER.read_complete_event(load("parallel_calls.json"))
    assert isinstance(streamed, ToolRequestEvent)
    assert dataclasses.replace(streamed, original={}) == dataclasses.replace(complete, original={})


def test_event_stream_cut_before_message_stop(server: LoopbackServer) -> None:
    whole = load(STREAM)
    body = encode(whole[:-2]) + encode(whole[-2:])[:20]  # messageStop frame cut mid-prelude
    events = _converse_stream(server, body)
    assert events == whole[:-2]
    event = _feed(events)
    assert isinstance(event, IncompleteEvent)
    assert event.reason == "stream_cut"


def test_event_stream_exception_is_a_provider_error(server: LoopbackServer) -> None:
    body = encode(load(STREAM)[:12]) + exception_frame("throttlingException", "slow down")
    server.queue(_stream_reply(body))
    assembler = ADAPTER.new_stream_assembler()
    with bedrock_client(server) as client:
        response = client.converse_stream(modelId=MODEL_ID, messages=[USER_TURN])
        with pytest.raises(EventStreamError) as info:
            for stream_event in response["stream"]:
                assembler.feed(stream_event)
        response["stream"].close()
    assembler.feed(info.value.response)
    event = assembler.finish()
    assert isinstance(event, ProviderErrorEvent)
    assert (event.kind, event.retryable) == (ErrorKind.RATE_LIMIT, True)
    assert event.message == "ThrottlingException: slow down"


def test_http_throttling_is_a_provider_error(server: LoopbackServer) -> None:
    error_type = {"x-amzn-ErrorType": "ThrottlingException:http://internal.amazon.com/coral/"}
    body = json.dumps(load("error_throttling.json")).encode()
    server.queue(Reply(body, status=429, headers=error_type))
    with bedrock_client(server) as client, pytest.raises(ClientError) as info:
        client.converse(modelId=MODEL_ID, messages=[USER_TURN])
    assert info.value.response["Error"]["Code"] == "ThrottlingException"
    event = ADAPTER.read_complete_event(dict(info.value.response))
    assert isinstance(event, ProviderErrorEvent)
    assert (event.kind, event.retryable) == (ErrorKind.RATE_LIMIT, True)
    assert event.message == (
        "ThrottlingException: Too many requests, please wait before trying again."
    )
