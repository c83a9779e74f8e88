"""OpenAI Responses streaming: SSE replayed through the real SDK client, each SDK event fed to
the assembler; the result must equal the classification of the complete response."""

from __future__ import annotations

from typing import Any

import pytest
from openai.types.responses import ResponseStreamEvent

from adapters.events import (
    AdapterError,
    ErrorKind,
    IncompleteEvent,
    ProviderErrorEvent,
    ProviderEvent,
    RefusalEvent,
    ToolRequestEvent,
)
from adapters.openai_responses import ADAPTER
from tests.adapters.loopback import LoopbackServer, Reply
from tests.adapters.openai.sdk_checks import (
    DONE,
    load_json,
    load_text,
    sdk_client,
    sse_payloads,
    validate_model,
)
from tests.adapters.openai.streams import has_split_surrogate, response_events, utf16_pieces

DIR = "openai_responses"
RESPONSES = [
    "final_text.json",
    "one_call.json",
    "parallel_calls.json",
    "refusal.json",
    "incomplete_max_tokens.json",
    "incomplete_content_filter.json",
    "failed.json",
]


def named_sse(events: list[dict[str, Any]]) -> Reply:
    return Reply.sse([(event["type"], event) for event in events])


def replay(server: LoopbackServer, reply: Reply) -> tuple[ProviderEvent, list[dict[str, Any]]]:
    """Stream `reply` through `client.responses.create(stream=True)`; feed each SDK event."""
    server.queue(reply)
    assembler = ADAPTER.new_stream_assembler()
    fed = []
    with (
        sdk_client(server) as client,
        client.responses.create(
            model="gpt-5", input="What's the weather in Paris?", stream=True
        ) as stream,
    ):
        for sdk_event in stream:
            payload = sdk_event.model_dump(mode="json", exclude_unset=True, by_alias=True)
            fed.append(payload)
            assembler.feed(payload)
    assert server.received[-1].json()["stream"] is True
    return assembler.finish(), fed


def feed_all(events: list[dict[str, Any]]) -> ProviderEvent:
    assembler = ADAPTER.new_stream_assembler()
    for event in events:
        assembler.feed(event)
    return assembler.finish()


@pytest.mark.parametrize("interleave", [False, True], ids=["sequential", "interleaved"])
@pytest.mark.parametrize("name", RESPONSES)
def test_stream_equals_complete_response(
    name: str, interleave: bool, server: LoopbackServer
) -> None:
    response = load_json(DIR, name)
    events = response_events(response, size=3, interleave=interleave)
    for event in events:
        validate_model(ResponseStreamEvent, event)
    streamed, fed = replay(server, named_sse(events))
    assert fed == events
    assert streamed == ADAPTER.read_complete_event(response)


def test_documented_transcript_through_sdk_matches_sdk_helper(server: LoopbackServer) -> None:
    body = load_text(DIR, "stream_one_call.sse")
    events = sse_payloads(body)
    for event in events:  # `name` on arguments.done is in the spec, not in SDK 3.57's class
        validate_model(ResponseStreamEvent, event, check_extra=False)
    streamed, _ = replay(server, Reply.sse(body))
    assert isinstance(streamed, ToolRequestEvent)
    assert streamed == ADAPTER.read_complete_event(events[-1]["response"])
    server.queue(Reply.sse(body))
    with (
        sdk_client(server) as client,
        client.responses.stream(model="gpt-5", input="What's the weather in Paris?") as stream,
    ):
        final = stream.get_final_response()
    sdk_calls = [
        (i.call_id, i.name, i.arguments) for i in final.output if i.type == "function_call"
    ]
    assert [(c.call_id, c.name, c.arguments_json) for c in streamed.calls] == sdk_calls
    assert streamed.calls[0].arguments == {"city": "Paris"}


def test_interleaved_parallel_fragments_are_kept_apart(server: LoopbackServer) -> None:
    response = load_json(DIR, "parallel_calls.json")
    events = response_events(response, size=2, interleave=True)
    deltas = [e["item_id"] for e in events if e["type"].endswith("arguments.delta")]
    assert deltas[:3] == ["fc_train01", "fc_weather02", "fc_weather03"]
    streamed, _ = replay(server, named_sse(events))
    assert isinstance(streamed, ToolRequestEvent)
    assert [c.arguments for c in streamed.calls] == [
        {"train": "IC 2", "date": "2026-01-01"},
        {"city": "Zürich", "note": "🏔 trip"},
        {"city": "Bern", "note": None},
    ]


def test_arguments_split_mid_token_and_mid_character(server: LoopbackServer) -> None:
    response = load_json(DIR, "parallel_calls.json")
    events = response_events(response, size=1)
    pieces = [e["delta"] for e in events if e["type"].endswith("arguments.delta")]
    assert pieces[:4] == ["{", '"', "t", "r"]
    assert has_split_surrogate(pieces)
    streamed, _ = replay(server, named_sse(events))
    assert streamed == ADAPTER.read_complete_event(response)


def test_slim_terminal_event_uses_the_items_finished_in_the_stream() -> None:
    response = load_json(DIR, "parallel_calls.json")
    events = response_events(response, size=1, interleave=True)
    events[-1] = {**events[-1], "response": {**response, "output": []}}
    assert feed_all(events) == ADAPTER.read_complete_event(response)


def test_call_never_finished_in_the_stream_is_not_runnable() -> None:
    response = load_json(DIR, "parallel_calls.json")
    events = [
        e
        for e in response_events(response, size=1)
        if not (e["type"] == "response.output_item.done" and e["output_index"] == 3)
    ]
    events[-1] = {**events[-1], "response": {**response, "output": []}}
    event = feed_all(events)
    assert isinstance(event, ToolRequestEvent)
    unfinished = event.calls[1]
    assert unfinished.call_id == "call_weather02"
    assert unfinished.arguments_json == '{"city":"Zürich","note":"🏔 trip"}'  # halves rejoined
    assert not unfinished.complete
    assert [c.complete for c in event.calls] == [True, False, True]


@pytest.mark.parametrize(
    "cut_after", ["response.in_progress", "arguments.delta", "response.output_item.done"]
)
def test_stream_cut_before_completion_emits_nothing(cut_after: str, server: LoopbackServer) -> None:
    events = response_events(load_json(DIR, "one_call.json"), size=3)
    last = max(i for i, e in enumerate(events) if e["type"].endswith(cut_after))
    streamed, fed = replay(server, named_sse(events[: last + 1]))
    assert len(fed) == last + 1
    assert isinstance(streamed, IncompleteEvent)
    assert streamed.reason == "stream_cut"
    assert streamed.meta.response_id == "resp_one01"


def test_error_event_through_sdk(server: LoopbackServer) -> None:
    streamed, fed = replay(server, Reply.sse(load_text(DIR, "stream_error.sse")))
    assert [e["type"] for e in fed] == ["response.created", "error"]
    assert isinstance(streamed, ProviderErrorEvent)
    assert (streamed.kind, streamed.retryable) == (ErrorKind.SERVER, True)
    assert streamed.meta.response_id == "resp_err1"


def test_error_event_after_call_items_emits_no_call() -> None:
    events = response_events(load_json(DIR, "one_call.json"), terminal=False)
    events.append(
        {
            "type": "error",
            "code": None,
            "message": "stream broke",
            "param": None,
            "sequence_number": len(events),
        }
    )
    event = feed_all(events)
    assert isinstance(event, ProviderErrorEvent)
    assert (event.kind, event.retryable, event.message) == (ErrorKind.OTHER, False, "stream broke")


def test_streamed_refusal_and_truncation() -> None:
    refusal = feed_all(response_events(load_json(DIR, "refusal.json"), size=2))
    truncated = feed_all(response_events(load_json(DIR, "incomplete_max_tokens.json")))
    assert isinstance(refusal, RefusalEvent) and refusal.text == "I can't help with that."
    assert isinstance(truncated, IncompleteEvent) and truncated.reason == "max_output_tokens"


def test_done_sentinel_is_accepted() -> None:
    response = load_json(DIR, "one_call.json")
    events = [*response_events(response), DONE]
    assert feed_all(events) == ADAPTER.read_complete_event(response)


def test_deltas_that_do_not_add_up_are_refused() -> None:
    events = response_events(load_json(DIR, "one_call.json"), size=3)
    delta = next(e for e in events if e["type"].endswith("arguments.delta"))
    delta["delta"] = "{}"
    with pytest.raises(AdapterError, match="do not add up"):
        feed_all(events)


def test_final_response_that_disagrees_with_the_stream_is_refused() -> None:
    response = load_json(DIR, "one_call.json")
    events = response_events(response)
    final = load_json(DIR, "one_call.json")
    final["output"][1]["arguments"] = '{"city":"Berlin","note":null}'
    events[-1]["response"] = final
    with pytest.raises(AdapterError, match="disagree"):
        feed_all(events)


@pytest.mark.parametrize(
    "event",
    [
        [],
        {"sequence_number": 1},
        {
            "type": "response.function_call_arguments.delta",
            "item_id": "fc_x",
            "output_index": 7,
            "delta": "{",
            "sequence_number": 1,
        },
        {"type": "response.output_item.added", "output_index": 0, "sequence_number": 1},
        {"type": "response.completed", "response": None, "sequence_number": 1},
    ],
)
def test_malformed_stream_event(event: Any) -> None:
    assembler = ADAPTER.new_stream_assembler()
    with pytest.raises(AdapterError) as caught:
        assembler.feed(event)
    assert caught.value.code == "malformed_response"


def test_delta_naming_another_items_id_is_refused() -> None:
    events = response_events(load_json(DIR, "parallel_calls.json"), interleave=True)
    delta = next(e for e in events if e["type"].endswith("arguments.delta"))
    delta["item_id"] = "fc_weather02"
    with pytest.raises(AdapterError, match="fc_weather02"):
        feed_all(events)


def test_split_helper_really_splits_surrogates() -> None:
    assert has_split_surrogate(utf16_pieces("🏔", 1))
