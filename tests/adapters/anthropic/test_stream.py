"""The stream assembler, fed the official SDK's raw stream events from a loopback replay."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from anthropic.types import RawMessageStreamEvent
from anthropic.types.shared import ErrorResponse

from adapters.anthropic_messages import ADAPTER
from adapters.events import (
    AdapterError,
    ErrorKind,
    FinalEvent,
    IncompleteEvent,
    ProviderErrorEvent,
    RefusalEvent,
    ToolRequestEvent,
)
from tests.adapters.anthropic.support import (
    feed_all,
    load_json,
    sdk_stream,
    sdk_stream_fixture,
    sse_payloads,
    sse_reply,
    validate,
)
from tests.adapters.loopback import LoopbackServer

# each stream and the non-streamed Message it is equivalent to
PAIRS = [
    ("stream_basic.sse", "message_basic.json"),
    ("stream_tool_use.sse", "message_tool_use.json"),
    ("stream_refusal.sse", "message_refusal.json"),
    ("stream_parallel_interleaved.sse", "message_parallel_thinking.json"),
]
STREAMS = [stream for stream, _ in PAIRS] + [
    "stream_max_tokens_partial_tool.sse",
    "stream_invalid_json.sse",
    "stream_cut.sse",
    "stream_error_overloaded.sse",
]


@pytest.mark.parametrize("name", STREAMS)
def test_stream_fixture_events_are_sdk_events(name: str) -> None:
    for payload in sse_payloads(name):
        if payload["type"] == "error":
            validate(ErrorResponse, payload)
        elif payload["type"] != "ping":
            validate(RawMessageStreamEvent, payload)


@pytest.mark.parametrize(("stream", "message"), PAIRS)
def test_stream_equals_the_non_streamed_response(
    server: LoopbackServer, stream: str, message: str
) -> None:
    streamed = feed_all(sdk_stream_fixture(server, stream))
    assert streamed == ADAPTER.read_complete_event(load_json(message))


@pytest.mark.parametrize(("stream", "_message"), PAIRS)
def test_raw_payloads_with_pings_give_the_same_event(
    server: LoopbackServer, stream: str, _message: str
) -> None:
    assert feed_all(sse_payloads(stream)) == feed_all(sdk_stream_fixture(server, stream))


def test_final_text_stream(server: LoopbackServer) -> None:
    event = feed_all(sdk_stream_fixture(server, "stream_basic.sse"))
    assert isinstance(event, FinalEvent) and event.text == "Hello there!"
    assert (event.meta.input_tokens, event.meta.output_tokens) == (11, 6)


def test_one_call_stream(server: LoopbackServer) -> None:
    event = feed_all(sdk_stream_fixture(server, "stream_tool_use.sse"))
    assert isinstance(event, ToolRequestEvent)
    (call,) = event.calls
    assert (call.call_id, call.arguments_json) == (
        "toolu_01NRLabsLyVHZPKxbKvkfSMn",
        '{"location":"Paris"}',
    )


def test_interleaved_fragments_split_mid_token_and_mid_escape(server: LoopbackServer) -> None:
    event = feed_all(sdk_stream_fixture(server, "stream_parallel_interleaved.sse"))
    assert isinstance(event, ToolRequestEvent)
    assert [c.arguments for c in event.calls] == [
        {"from": "Genève", "to": "Zürich", "date": "2025-07-01"},
        {"city": "Zürich", "guests": 2, "note": "🚄 near the station"},
    ]
    assert event.text == "Let me look up both."
    thinking = event.original["content"][0]
    assert thinking["thinking"].startswith("The user wants") and thinking["signature"]
    assert thinking["thinking"] not in event.text


def _is_complete_prefix(payloads: list[dict[str, Any]]) -> bool:
    return any(payload["type"] == "message_stop" for payload in payloads)


@pytest.mark.parametrize("name", [stream for stream, _ in PAIRS])
def test_every_prefix_before_message_stop_is_a_cut_stream(name: str) -> None:
    payloads = sse_payloads(name)
    for end in range(len(payloads)):
        prefix = payloads[:end]
        if _is_complete_prefix(prefix):
            continue
        event = feed_all(prefix)
        assert isinstance(event, IncompleteEvent), end
        assert event.reason == "stream_cut"


def test_cut_stream_through_the_sdk(server: LoopbackServer) -> None:
    event = feed_all(sdk_stream_fixture(server, "stream_cut.sse"))
    assert isinstance(event, IncompleteEvent) and event.reason == "stream_cut"
    assert event.meta.response_id == "msg_01StreamCutShort"


def test_tool_use_cut_by_max_tokens_is_never_a_call(server: LoopbackServer) -> None:
    # the SDK's own fixture: the tool_use block never gets a content_block_stop
    event = feed_all(sdk_stream_fixture(server, "stream_max_tokens_partial_tool.sse"))
    assert isinstance(event, IncompleteEvent) and event.reason == "max_tokens"


def test_input_that_does_not_parse_is_an_incomplete_call(server: LoopbackServer) -> None:
    event = feed_all(sdk_stream_fixture(server, "stream_invalid_json.sse"))
    assert isinstance(event, ToolRequestEvent)
    (call,) = event.calls
    assert call.arguments is None and not call.complete
    assert call.arguments_json == '{"location": "Paris", "unit": celsius}'


def test_tool_use_stop_with_an_unfinished_block_is_an_incomplete_call() -> None:
    payloads = [
        p
        for p in sse_payloads("stream_tool_use.sse")
        if not (p["type"] == "content_block_stop" and p["index"] == 1)
    ]
    event = feed_all(payloads)
    assert isinstance(event, ToolRequestEvent)
    assert event.calls[0].arguments is None
    assert event.calls[0].arguments_json == '{"location": "Paris"}'


def test_refusal_after_a_finished_tool_block_is_a_refusal(server: LoopbackServer) -> None:
    payloads = sse_payloads("stream_tool_use.sse")
    delta = next(p for p in payloads if p["type"] == "message_delta")
    delta["delta"] = {
        "stop_reason": "refusal",
        "stop_sequence": None,
        "stop_details": {"type": "refusal", "category": None, "explanation": None},
    }
    event = feed_all(sdk_stream(server, sse_reply(payloads)))
    assert isinstance(event, RefusalEvent)
    assert event.text == "I'll check the current weather in Paris for you."


def test_in_stream_error(server: LoopbackServer) -> None:
    events = sdk_stream_fixture(server, "stream_error_overloaded.sse")
    assert events[-1]["type"] == "error"  # raised by the SDK as APIStatusError
    event = feed_all(events)
    assert isinstance(event, ProviderErrorEvent)
    assert (event.kind, event.retryable) == (ErrorKind.SERVER, True)
    assert event.meta.response_id == "msg_01StreamOverloaded"


def test_out_of_order_sdk_fixture_is_rejected(server: LoopbackServer) -> None:
    with pytest.raises(AdapterError, match="before a message_delta"):
        feed_all(sdk_stream_fixture(server, "stream_out_of_order.sse"))


def test_gap_in_block_indexes_is_rejected() -> None:
    payloads = sse_payloads("stream_out_of_order.sse")
    payloads.insert(-1, {"type": "content_block_stop", "index": 1})
    payloads.insert(
        -1,
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn"},
            "usage": {"output_tokens": 1},
        },
    )
    with pytest.raises(AdapterError, match="not 0..n-1"):
        feed_all(payloads)


def _tool_stream() -> list[dict[str, Any]]:
    return sse_payloads("stream_tool_use.sse")


def _start(payloads: list[dict[str, Any]]) -> dict[str, Any]:
    return payloads[0]


@pytest.mark.parametrize(
    ("events", "says"),
    [
        ([_tool_stream()[1]], "before message_start"),
        ([_start(_tool_stream()), _start(_tool_stream())], "second message_start"),
        (
            [
                _start(_tool_stream()),
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "text_delta", "text": "x"},
                },
            ],
            "unstarted block 0",
        ),
        (_tool_stream()[:6] + [_tool_stream()[3]], "stopped block 0"),
        (
            _tool_stream()[:2]
            + [
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "input_json_delta", "partial_json": "{"},
                }
            ],
            "input_json_delta for a text block",
        ),
        (
            _tool_stream()[:2]
            + [{"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta"}}],
            "no text string",
        ),
        (_tool_stream()[:2] + [_tool_stream()[1]], "starts content block 0 twice"),
        (
            _tool_stream() + [{"type": "message_delta", "delta": {}, "usage": {}}],
            "after the stream",
        ),
        (
            [
                _start(_tool_stream()),
                {"type": "content_block_start", "content_block": {"type": "text"}},
            ],
            "no block index",
        ),
        (["message_start"], "not a JSON object"),
        ([{"index": 0}], "no type"),
        ([{"type": "error", "error": "Overloaded"}], "error.type"),
    ],
)
def test_invalid_stream_events(events: list[Any], says: str) -> None:
    assembler = ADAPTER.new_stream_assembler()
    with pytest.raises(AdapterError, match=says) as raised:
        for event in copy.deepcopy(events):
            assembler.feed(event)
    assert raised.value.code == "malformed_response"


def test_unknown_event_and_delta_types_are_ignored() -> None:
    payloads = sse_payloads("stream_tool_use.sse")
    payloads.insert(2, {"type": "some_new_event", "detail": 1})
    payloads.insert(
        3,
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "some_new_delta", "value": "x"},
        },
    )
    assert feed_all(payloads) == ADAPTER.read_complete_event(load_json("message_tool_use.json"))


def test_usage_in_message_delta_overwrites_and_keeps_what_it_omits() -> None:
    payloads = sse_payloads("stream_tool_use.sse")
    delta = next(p for p in payloads if p["type"] == "message_delta")
    delta["usage"] = {"output_tokens": 70, "input_tokens": None, "cache_read_input_tokens": 5}
    event = feed_all(payloads)
    assert (event.meta.input_tokens, event.meta.output_tokens) == (382, 70)
