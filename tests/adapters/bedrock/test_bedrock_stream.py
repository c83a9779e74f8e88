"""Assembling ConverseStream events."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from adapters.bedrock_converse import ADAPTER
from adapters.events import (
    AdapterError,
    ErrorKind,
    FinalEvent,
    IncompleteEvent,
    ProviderErrorEvent,
    ProviderEvent,
    RefusalEvent,
    ToolRequestEvent,
)
from tests.adapters.bedrock._support import load, validate_stream_event

STREAM = "stream_parallel_calls.json"


def _feed(events: list[dict[str, Any]]) -> ProviderEvent:
    assembler = ADAPTER.new_stream_assembler()
    for event in events:
        assembler.feed(event)
    return assembler.finish()


def _without_original(event: ProviderEvent) -> dict[str, Any]:
    fields = dataclasses.asdict(event)
    fields.pop("original")
    return {"type": type(event).__name__, **fields}


def _tool_stream(*fragments: str, stop: str = "tool_use") -> list[dict[str, Any]]:
    return [
        {"messageStart": {"role": "assistant"}},
        {
            "contentBlockStart": {
                "contentBlockIndex": 0,
                "start": {"toolUse": {"toolUseId": "tooluse_1", "name": "get_weather"}},
            }
        },
        *[
            {"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"toolUse": {"input": f}}}}
            for f in fragments
        ],
        {"contentBlockStop": {"contentBlockIndex": 0}},
        {"messageStop": {"stopReason": stop}},
    ]


def _text_stream(*pieces: str, stop: str) -> list[dict[str, Any]]:
    return [
        {"messageStart": {"role": "assistant"}},
        *[{"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"text": p}}} for p in pieces],
        {"contentBlockStop": {"contentBlockIndex": 0}},
        {"messageStop": {"stopReason": stop}},
    ]


@pytest.mark.parametrize("event", load(STREAM))
def test_stream_fixture_events_are_valid(event: dict[str, Any]) -> None:
    validate_stream_event(event)


def test_interleaved_parallel_calls_equal_the_complete_response() -> None:
    streamed = _feed(load(STREAM))
    complete = ADAPTER.read_complete_event(load("parallel_calls.json"))
    assert isinstance(streamed, ToolRequestEvent)
    assert _without_original(streamed) == _without_original(complete)
    # the assembled response is the non-streamed one, reasoning block and signature included
    assert streamed.original == load("parallel_calls.json")


def test_arguments_split_mid_token_and_mid_surrogate_escape() -> None:
    event = _feed(_tool_stream('{"ci', 'ty": "Par', "is \\ud83c", '\\udf63", "n": 1', "2}"))
    assert isinstance(event, ToolRequestEvent)
    assert event.calls[0].arguments == {"city": "Paris 🍣", "n": 12}
    assert event.calls[0].arguments_json == '{"city":"Paris 🍣","n":12}'


def test_no_input_fragments_means_empty_arguments() -> None:
    event = _feed(_tool_stream())
    assert isinstance(event, ToolRequestEvent)
    assert (event.calls[0].arguments, event.calls[0].arguments_json) == ({}, "{}")


def test_arguments_that_do_not_parse_make_an_incomplete_call() -> None:
    event = _feed(_tool_stream('{"city": "Par'))
    assert isinstance(event, ToolRequestEvent)
    [call] = event.calls
    assert call.complete is False
    assert call.arguments_json == '{"city": "Par'


@pytest.mark.parametrize("keep", [0, 1, 9, 15, 21])
def test_stream_cut_before_message_stop_is_incomplete(keep: int) -> None:
    event = _feed(load(STREAM)[:keep])
    assert isinstance(event, IncompleteEvent)
    assert event.reason == "stream_cut"
    assert event.meta.provider == "aws.bedrock_converse"


def test_usage_arrives_with_metadata_after_message_stop() -> None:
    events = load(STREAM)
    without_metadata = _feed(events[:-1])
    assert isinstance(without_metadata, ToolRequestEvent)
    assert without_metadata.meta.input_tokens == 0
    assert _feed(events).meta.input_tokens == 412


def test_text_block_with_an_empty_start_is_accepted() -> None:
    events = _text_stream("Hello.", stop="end_turn")
    events.insert(1, {"contentBlockStart": {"contentBlockIndex": 0, "start": {}}})
    event = _feed(events)
    assert isinstance(event, FinalEvent)
    assert event.text == "Hello."


def test_final_text_stream() -> None:
    event = _feed(_text_stream("It is 18 °C ", "and sunny in Paris.", stop="end_turn"))
    assert isinstance(event, FinalEvent)
    assert event.text == "It is 18 °C and sunny in Paris."


@pytest.mark.parametrize("stop", ["guardrail_intervened", "content_filtered"])
def test_refusal_stream(stop: str) -> None:
    event = _feed(_text_stream("Sorry, the model cannot answer this question.", stop=stop))
    assert isinstance(event, RefusalEvent)


def test_max_tokens_stream_never_emits_the_call() -> None:
    event = _feed(_tool_stream('{"city": "Par', stop="max_tokens"))
    assert isinstance(event, IncompleteEvent)
    assert event.reason == "max_tokens"


@pytest.mark.parametrize(
    ("member", "kind", "retryable"),
    [
        ("throttlingException", ErrorKind.RATE_LIMIT, True),
        ("internalServerException", ErrorKind.SERVER, True),
        ("modelStreamErrorException", ErrorKind.SERVER, True),
        ("serviceUnavailableException", ErrorKind.SERVER, True),
        ("validationException", ErrorKind.OTHER, False),
    ],
)
def test_exception_event_is_a_provider_error(member: str, kind: ErrorKind, retryable: bool) -> None:
    events = [*load(STREAM)[:12], {member: {"message": "stream failed"}}]
    validate_stream_event(events[-1])
    event = _feed(events)
    assert isinstance(event, ProviderErrorEvent)
    assert (event.kind, event.retryable) == (kind, retryable)
    assert event.message.endswith("stream failed")


def test_event_stream_error_response_is_a_provider_error() -> None:
    error = {"Error": {"Code": "throttlingException", "Message": "slow down"}}
    event = _feed([*load(STREAM)[:3], error])
    assert isinstance(event, ProviderErrorEvent)
    assert event.kind is ErrorKind.RATE_LIMIT


@pytest.mark.parametrize(
    ("events", "message"),
    [
        ([[]], "stream event"),
        ([{}], "exactly one"),
        ([{"messageStart": {}, "messageStop": {"stopReason": "end_turn"}}], "exactly one"),
        ([{"contentBlockDelta": {"delta": {"text": "x"}}}], "contentBlockIndex"),
        (
            [{"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"toolUse": {"input": "{"}}}}],
            "before its contentBlockStart",
        ),
        (
            [{"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"image": {}}}}],
            "unsupported contentBlockDelta",
        ),
        (
            [{"contentBlockStart": {"contentBlockIndex": 0, "start": {"toolUse": {"name": "x"}}}}],
            "toolUseId",
        ),
        ([{"contentBlockStop": {"contentBlockIndex": 4}}], "unknown block 4"),
        (
            _tool_stream('{"a":1}')[:3] + [{"messageStop": {"stopReason": "tool_use"}}],
            "before contentBlockStop",
        ),
        (
            [
                *_text_stream("hi", stop="end_turn"),
                {"contentBlockDelta": {"contentBlockIndex": 1, "delta": {"text": "late"}}},
            ],
            "after messageStop",
        ),
    ],
)
def test_malformed_events_are_rejected(events: list[Any], message: str) -> None:
    assembler = ADAPTER.new_stream_assembler()
    with pytest.raises(AdapterError) as info:
        for event in events:
            assembler.feed(event)
    assert info.value.code == "malformed_response"
    assert message in str(info.value)
