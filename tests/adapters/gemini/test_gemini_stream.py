"""Assembling `streamGenerateContent?alt=sse` chunks.

On the Gemini API each functionCall arrives whole inside one chunk (argument streaming with
`partialArgs` is Vertex-only), so there are no argument fragments to join: the cases that split
arguments mid-token for other providers are here parallel calls arriving in separate chunks
between split text, and a `partialArgs` chunk being rejected.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import pytest

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
from adapters.gemini import ADAPTER, GeminiAdapter
from tests.adapters.gemini._support import (
    genai_client,
    load,
    sdk_chunk_json,
    sse_chunks,
    sse_text,
    validate_response,
)
from tests.adapters.loopback import LoopbackServer, Reply

STREAM = "stream_parallel_calls.sse"


def _feed(chunks: list[dict[str, Any]], adapter: GeminiAdapter = ADAPTER) -> ProviderEvent:
    assembler = adapter.new_stream_assembler()
    for chunk in chunks:
        assembler.feed(chunk)
    return assembler.finish()


def _without_original(event: ProviderEvent) -> dict[str, Any]:
    fields = dataclasses.asdict(event)
    fields.pop("original")
    return {"type": type(event).__name__, **fields}


def _assert_equivalent(streamed: ProviderEvent, complete: ProviderEvent) -> None:
    assert _without_original(streamed) == _without_original(complete)


def _text_chunks(body: dict[str, Any], pieces: list[str]) -> list[dict[str, Any]]:
    """`body` (one text part) streamed as text pieces; the last chunk carries finishReason."""
    chunks = []
    for i, piece in enumerate(pieces):
        chunk = copy.deepcopy(body)
        candidate = chunk["candidates"][0]
        candidate["content"]["parts"] = [{"text": piece}]
        if i < len(pieces) - 1:
            candidate.pop("finishReason")
            chunk.pop("usageMetadata")
        chunks.append(chunk)
    return chunks


@pytest.mark.parametrize("chunk", sse_chunks(STREAM))
def test_stream_fixture_chunks_are_valid_sdk_responses(chunk: dict[str, Any]) -> None:
    validate_response(chunk)


def test_sdk_stream_replay_assembles_the_parallel_calls(server: LoopbackServer) -> None:
    server.queue(Reply.sse(sse_text(STREAM)))
    with genai_client(server) as client:
        chunks = [
            sdk_chunk_json(c)
            for c in client.models.generate_content_stream(
                model="gemini-2.5-pro", contents="Weather in Paris and Tokyo, then book."
            )
        ]
    assert server.received[0].path == (
        "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse"
    )
    assert chunks == sse_chunks(STREAM)
    streamed = _feed(chunks)
    complete = ADAPTER.read_complete_event(load("parallel_calls.json"))
    assert isinstance(streamed, ToolRequestEvent)
    _assert_equivalent(streamed, complete)
    assert [c.arguments for c in streamed.calls] == [
        {"city": "Paris"},
        {"city": "東京"},
        {"restaurant": "Chez Anna", "party_size": 4, "time": "19:30"},
    ]
    # thought text is joined into one thought part and never reaches the visible text
    assert (
        streamed.original["candidates"][0]["content"]
        == (load("parallel_calls.json")["candidates"][0]["content"])
    )
    assert streamed.text == "I'll check both cities and book the table."
    validate_response(streamed.original)


def test_sdk_stream_cut_before_finish_reason_is_incomplete(server: LoopbackServer) -> None:
    cut = sse_chunks(STREAM)[:-1]  # drops the chunk with finishReason
    server.queue(Reply.sse([(None, chunk) for chunk in cut]))
    with genai_client(server) as client:
        chunks = [
            sdk_chunk_json(c)
            for c in client.models.generate_content_stream(model="gemini-2.5-pro", contents="hi")
        ]
    assert len(chunks) == 6
    event = _feed(chunks)
    assert isinstance(event, IncompleteEvent)
    assert event.reason == "stream_cut"
    assert event.meta.response_id == "qV3tZ-par-0003"
    assert not hasattr(event, "calls")


@pytest.mark.parametrize("keep", [0, 1, 3, 6])
def test_every_cut_before_completion_is_incomplete(keep: int) -> None:
    event = _feed(sse_chunks(STREAM)[:keep])
    assert isinstance(event, IncompleteEvent)
    assert event.reason == "stream_cut"


def test_final_text_stream_equals_the_complete_response() -> None:
    body = load("final_text.json")
    chunks = _text_chunks(body, ["It is 18 ", "°C and sun", "ny in Paris."])
    streamed = _feed(chunks)
    assert isinstance(streamed, FinalEvent)
    _assert_equivalent(streamed, ADAPTER.read_complete_event(body))


def test_one_call_in_a_single_chunk() -> None:
    body = load("one_call.json")
    streamed = _feed([body])
    assert isinstance(streamed, ToolRequestEvent)
    _assert_equivalent(streamed, ADAPTER.read_complete_event(body))


def test_usage_only_chunk_after_finish_is_accepted() -> None:
    body = load("final_text.json")
    usage = {
        "usageMetadata": {"promptTokenCount": 61, "candidatesTokenCount": 14, "totalTokenCount": 75}
    }
    event = _feed([body, usage])
    assert isinstance(event, FinalEvent)
    assert event.meta.output_tokens == 14


def test_content_after_finish_is_rejected() -> None:
    body = load("final_text.json")
    assembler = ADAPTER.new_stream_assembler()
    assembler.feed(body)
    with pytest.raises(AdapterError) as info:
        assembler.feed(body)
    assert info.value.code == "malformed_response"


def test_prompt_blocked_stream_is_a_refusal() -> None:
    event = _feed([load("prompt_blocked.json")])
    assert isinstance(event, RefusalEvent)
    _assert_equivalent(event, ADAPTER.read_complete_event(load("prompt_blocked.json")))


def test_safety_finish_in_stream_is_a_refusal_even_after_a_call() -> None:
    calls = load("one_call.json")
    del calls["candidates"][0]["finishReason"]
    blocked = load("safety_stop.json")
    event = _feed([calls, blocked])
    assert isinstance(event, RefusalEvent)
    assert "SAFETY" in event.text


def test_max_tokens_in_stream_is_incomplete_not_a_tool_request() -> None:
    body = load("max_tokens.json")
    first = copy.deepcopy(body)
    del first["candidates"][0]["finishReason"]
    last = {
        "candidates": [
            {
                "content": {"role": "model", "parts": [{"text": ""}]},
                "finishReason": "MAX_TOKENS",
                "index": 0,
            }
        ]
    }
    event = _feed([first, last])
    assert isinstance(event, IncompleteEvent)
    assert event.reason == "MAX_TOKENS"


def test_error_chunk_is_a_provider_error() -> None:
    chunks = sse_chunks(STREAM)[:3]
    error = {"error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}}
    event = _feed([*chunks, error])
    assert isinstance(event, ProviderErrorEvent)
    assert (event.kind, event.retryable) == (ErrorKind.SERVER, True)
    assert "overloaded" in event.message


def test_second_candidate_is_ignored() -> None:
    body = load("final_text.json")
    other = copy.deepcopy(body["candidates"][0])
    other["index"] = 1
    other["content"]["parts"] = [{"text": "ignored"}]
    body["candidates"].append(other)
    event = _feed([body])
    assert isinstance(event, FinalEvent)
    assert event.text == "It is 18 °C and sunny in Paris."


def test_partial_args_chunk_is_rejected() -> None:
    chunk = {
        "candidates": [
            {
                "content": {
                    "role": "model",
                    "parts": [
                        {
                            "functionCall": {
                                "name": "get_weather",
                                "partialArgs": [
                                    {
                                        "jsonPath": "$.city",
                                        "stringValue": "Par",
                                        "willContinue": True,
                                    }
                                ],
                                "willContinue": True,
                            }
                        }
                    ],
                },
                "index": 0,
            }
        ]
    }
    assembler = ADAPTER.new_stream_assembler()
    with pytest.raises(AdapterError) as info:
        assembler.feed(chunk)
    assert "partialArgs" in str(info.value)


@pytest.mark.parametrize(
    "chunk",
    [
        [],
        {"foo": 1},
        {"candidates": "x"},
        {"error": "boom"},
        {"candidates": [{"content": {"parts": [3]}, "index": 0}]},
    ],
)
def test_malformed_chunk_is_rejected(chunk: Any) -> None:
    with pytest.raises(AdapterError) as info:
        ADAPTER.new_stream_assembler().feed(chunk)
    assert info.value.code == "malformed_response"


def test_api_version_of_the_adapter_is_kept_in_stream_events() -> None:
    event = _feed(sse_chunks(STREAM)[:2], GeminiAdapter("v1"))
    assert event.meta.api_version == "v1"
