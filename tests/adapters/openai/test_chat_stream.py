"""OpenAI Chat Completions streaming: the real recordings and derived streams replayed through
the real SDK client, each SDK chunk fed to the assembler; the result must equal the
classification of the equivalent complete response."""

from __future__ import annotations

from typing import Any

import openai
import pytest
from openai.types.chat import ChatCompletionChunk, ChatCompletionMessageParam

from adapters.events import (
    AdapterError,
    ErrorKind,
    IncompleteEvent,
    ProviderErrorEvent,
    ProviderEvent,
    RefusalEvent,
    ToolRequestEvent,
)
from adapters.openai_chat import ADAPTER
from tests.adapters.loopback import LoopbackServer, Reply
from tests.adapters.openai.sdk_checks import (
    DONE,
    load_json,
    load_text,
    sdk_client,
    sse_payloads,
    validate_model,
)
from tests.adapters.openai.streams import chat_chunks, has_split_surrogate

DIR = "openai_chat"
COMPLETIONS = [
    "final_text.json",
    "one_call.json",
    "parallel_calls.json",
    "length.json",
    "content_filter.json",
    "chat_parallel_tools.json",
    "chat_refusal.json",
]
MESSAGES: list[ChatCompletionMessageParam] = [
    {"role": "user", "content": "Weather in Edinburgh and the AAPL price?"}
]


def data_sse(chunks: list[dict[str, Any]], done: bool = True) -> Reply:
    return Reply.sse([(None, chunk) for chunk in chunks] + ([(None, "[DONE]")] if done else []))


def replay(server: LoopbackServer, reply: Reply) -> tuple[ProviderEvent, list[dict[str, Any]]]:
    """Stream `reply` through `client.chat.completions.create(stream=True)`; feed each chunk."""
    server.queue(reply)
    assembler = ADAPTER.new_stream_assembler()
    fed = []
    with (
        sdk_client(server) as client,
        client.chat.completions.create(
            model="gpt-4o", messages=MESSAGES, stream=True, stream_options={"include_usage": True}
        ) as stream,
    ):
        for chunk in stream:
            payload = chunk.model_dump(mode="json", exclude_unset=True, by_alias=True)
            fed.append(payload)
            assembler.feed(payload)
    assert server.received[-1].json()["stream"] is True
    return assembler.finish(), fed


def tool_fragments(chunks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        fragment
        for chunk in chunks
        for choice in chunk["choices"]
        for fragment in choice["delta"].get("tool_calls") or []
    ]


def feed_all(chunks: list[dict[str, Any]]) -> ProviderEvent:
    assembler = ADAPTER.new_stream_assembler()
    for chunk in chunks:
        assembler.feed(chunk)
    return assembler.finish()


@pytest.mark.parametrize("recording", ["chat_parallel_tools", "chat_refusal"])
def test_recording_chunks_are_valid_sdk_chunks(recording: str) -> None:
    payloads = sse_payloads(load_text(DIR, f"{recording}.sse"))
    assert payloads[-1] == DONE
    for chunk in payloads[:-1]:
        validate_model(ChatCompletionChunk, chunk)


def test_recorded_parallel_calls_through_sdk(server: LoopbackServer) -> None:
    body = load_text(DIR, "chat_parallel_tools.sse")
    streamed, fed = replay(server, Reply.sse(body))
    assert fed == sse_payloads(body)[:-1]  # the SDK stops at [DONE] and yields the rest as is
    expected = ADAPTER.read_complete_event(load_json(DIR, "chat_parallel_tools.json"))
    assert isinstance(streamed, ToolRequestEvent) and isinstance(expected, ToolRequestEvent)
    assert (streamed.meta, streamed.calls, streamed.text) == (
        expected.meta,
        expected.calls,
        expected.text,
    )


def test_recorded_parallel_calls_match_the_sdk_helper(server: LoopbackServer) -> None:
    body = load_text(DIR, "chat_parallel_tools.sse")
    server.queue(Reply.sse(body))
    with (
        sdk_client(server) as client,
        client.chat.completions.stream(model="gpt-4o", messages=MESSAGES) as stream,
    ):
        final = stream.get_final_completion()
    sdk_calls = [
        (c.id, c.function.name, c.function.arguments)
        for c in final.choices[0].message.tool_calls or []
        if c.type == "function"
    ]
    streamed = feed_all(sse_payloads(body))
    assert isinstance(streamed, ToolRequestEvent)
    assert [(c.call_id, c.name, c.arguments_json) for c in streamed.calls] == sdk_calls


def test_recorded_refusal_through_sdk(server: LoopbackServer) -> None:
    streamed, _ = replay(server, Reply.sse(load_text(DIR, "chat_refusal.sse")))
    assert isinstance(streamed, RefusalEvent)
    assert streamed.text == "I'm sorry, I can't assist with that request."
    assert streamed.meta.response_id == "chatcmpl-ABfw4IfQfCCrcuybFm41wJyxjbkz7"


def _same(streamed: ProviderEvent, expected: ProviderEvent) -> None:
    assert type(streamed) is type(expected)
    assert streamed.meta == expected.meta
    for attribute in ("calls", "text", "reason", "kind"):
        assert getattr(streamed, attribute, None) == getattr(expected, attribute, None)


@pytest.mark.parametrize("interleave", [False, True], ids=["sequential", "interleaved"])
@pytest.mark.parametrize("name", COMPLETIONS)
def test_stream_equals_complete_response(
    name: str, interleave: bool, server: LoopbackServer
) -> None:
    completion = load_json(DIR, name)
    chunks = chat_chunks(completion, size=3, interleave=interleave)
    for chunk in chunks:
        validate_model(ChatCompletionChunk, chunk)
    streamed, fed = replay(server, data_sse(chunks))
    assert fed == chunks
    _same(streamed, ADAPTER.read_complete_event(completion))


def test_interleaved_fragments_are_kept_apart() -> None:
    completion = load_json(DIR, "parallel_calls.json")
    chunks = chat_chunks(completion, size=2, interleave=True)
    indexes = [fragment["index"] for fragment in tool_fragments(chunks)]
    assert indexes[3:9] == [0, 1, 2, 0, 1, 2]
    event = feed_all(chunks)
    assert isinstance(event, ToolRequestEvent)
    assert [c.arguments for c in event.calls] == [
        {"train": "IC 2", "date": "2026-01-01"},
        {"city": "Zürich", "note": "🏔 trip"},
        {"city": "Bern"},
    ]


def test_arguments_split_mid_token_and_mid_character(server: LoopbackServer) -> None:
    completion = load_json(DIR, "parallel_calls.json")
    chunks = chat_chunks(completion, size=1, interleave=True)
    pieces = [fragment["function"]["arguments"] for fragment in tool_fragments(chunks)]
    assert has_split_surrogate(pieces)
    streamed, _ = replay(server, data_sse(chunks))
    assert isinstance(streamed, ToolRequestEvent)
    assert streamed.calls[1].arguments_json == '{"city":"Zürich","note":"🏔 trip"}'
    _same(streamed, ADAPTER.read_complete_event(completion))


def test_done_sentinel_may_be_fed_or_left_out() -> None:
    payloads = sse_payloads(load_text(DIR, "chat_parallel_tools.sse"))
    with_done, without_done = feed_all(payloads), feed_all(payloads[:-1])
    assert isinstance(with_done, ToolRequestEvent)
    assert with_done == without_done


def test_usage_chunk_is_optional() -> None:
    completion = load_json(DIR, "one_call.json")
    event = feed_all(chat_chunks(completion, usage=False))
    assert isinstance(event, ToolRequestEvent)
    assert (event.meta.input_tokens, event.meta.output_tokens) == (0, 0)


def test_recording_cut_before_finish_reason_through_sdk(server: LoopbackServer) -> None:
    body = load_text(DIR, "chat_parallel_tools.sse")
    frames = body.split("\n\n")
    cut = "\n\n".join(frames[:-4]) + "\n\n"  # drop finish, usage and [DONE]
    streamed, fed = replay(server, Reply.sse(cut))
    assert fed and all(c["choices"][0]["finish_reason"] is None for c in fed)
    assert isinstance(streamed, IncompleteEvent)
    assert streamed.reason == "stream_cut"
    assert streamed.meta.response_id == "chatcmpl-ABfwAwrNePHUgBBezonVC6MX3zd63"


@pytest.mark.parametrize("keep", [0, 1, 5])
def test_stream_cut_emits_nothing(keep: int) -> None:
    chunks = chat_chunks(load_json(DIR, "one_call.json"), finish=False)[:keep]
    event = feed_all([*chunks, DONE])
    assert isinstance(event, IncompleteEvent)
    assert event.reason == "stream_cut"


def test_mid_stream_error_chunk() -> None:
    chunks = chat_chunks(load_json(DIR, "one_call.json"), finish=False)
    error = {
        "error": {
            "message": "Rate limit reached",
            "type": "requests",
            "code": "rate_limit_exceeded",
            "param": None,
        }
    }
    event = feed_all([*chunks, error])
    assert isinstance(event, ProviderErrorEvent)
    assert (event.kind, event.retryable) == (ErrorKind.RATE_LIMIT, True)
    assert event.meta.response_id == "chatcmpl-one01"


def test_sdk_raises_on_the_mid_stream_error_chunk(server: LoopbackServer) -> None:
    chunks = chat_chunks(load_json(DIR, "one_call.json"), finish=False)
    error = {
        "error": {"message": "boom", "type": "server_error", "code": "server_error", "param": None}
    }
    with pytest.raises(openai.APIError, match="boom"):
        replay(server, data_sse([*chunks, error], done=False))


def test_repeated_identical_id_and_name_are_tolerated() -> None:
    completion = load_json(DIR, "one_call.json")
    chunks = chat_chunks(completion, size=3)
    for chunk in chunks[2:-2]:
        fragment = chunk["choices"][0]["delta"]["tool_calls"][0]
        fragment.update(id="call_abc", function={**fragment["function"], "name": "get_weather"})
    _same(feed_all(chunks), ADAPTER.read_complete_event(completion))


def _chunk_with(chunks: list[dict[str, Any]], index: int, **changes: Any) -> list[dict[str, Any]]:
    chunks[index]["choices"][0]["delta"]["tool_calls"][0].update(changes)
    return chunks


def _one_call_chunks() -> list[dict[str, Any]]:
    return chat_chunks(load_json(DIR, "one_call.json"), size=3)


@pytest.mark.parametrize(
    ("chunks", "fragment"),
    [
        (_chunk_with(_one_call_chunks(), 3, id="call_other"), "different call_id"),
        (
            _chunk_with(_one_call_chunks(), 3, function={"name": "rm_rf", "arguments": "x"}),
            "different name",
        ),
        (_chunk_with(_one_call_chunks(), 1, type="custom"), "only function tool calls"),
        ([*_one_call_chunks()[:2], DONE, _one_call_chunks()[2]], "after [DONE]"),
        (
            [_one_call_chunks()[0], {**_one_call_chunks()[1], "id": "chatcmpl-other"}],
            "chatcmpl-other",
        ),
        (
            [
                {
                    **_one_call_chunks()[0],
                    "choices": [{**_one_call_chunks()[0]["choices"][0], "index": 1}],
                }
            ],
            "index other than 0",
        ),
        (["chunk"], "stream chunk must be a JSON object"),
        ([{"id": "chatcmpl-x", "object": "chat.completion.chunk"}], "chunk.choices"),
        ([{"choices": []}], "chunk.id"),
    ],
)
def test_malformed_stream(chunks: list[Any], fragment: str) -> None:
    assembler = ADAPTER.new_stream_assembler()
    with pytest.raises(AdapterError) as caught:
        for chunk in chunks:
            assembler.feed(chunk)
    assert caught.value.code == "malformed_response"
    assert fragment in str(caught.value)


def test_a_call_without_an_id_at_the_end_is_malformed() -> None:
    chunks = _chunk_with(_one_call_chunks(), 1, id=None)
    with pytest.raises(AdapterError, match="tool_calls\\[0\\].id is empty"):
        feed_all(chunks)
