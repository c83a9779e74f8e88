"""OpenAI Chat Completions: the next request (assistant message + tool messages, whole
conversation, tool declarations), validated against the SDK's param types and sent through the
real SDK client."""

from __future__ import annotations

import copy
import json

import pytest
from openai.types.chat import (
    ChatCompletion,
    ChatCompletionMessageParam,
    ChatCompletionToolUnionParam,
)

from adapters.events import AdapterError, ToolRequestEvent, ToolResult, ToolSpec
from adapters.openai_chat import ADAPTER
from adapters.results import result_text
from tests.adapters.loopback import LoopbackServer, Reply
from tests.adapters.openai.sdk_checks import (
    load_json,
    load_text,
    sdk_client,
    sse_payloads,
    validate_param,
)

DIR = "openai_chat"
USER = {
    "role": "user",
    "content": "Is the IC 2 on time, and what's the weather in Zürich and Bern?",
}

WEATHER = ToolSpec(
    "get_weather",
    "Current weather for a city.",
    {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
        "additionalProperties": False,
    },
)
BOOK = ToolSpec(
    "reserve_seat",
    "Reserve a workshop seat.",
    {
        "type": "object",
        "properties": {"event": {"type": "string"}, "participant": {"type": "string"}},
        "required": ["event"],
    },
)


def parallel_event() -> ToolRequestEvent:
    event = ADAPTER.read_complete_event(load_json(DIR, "parallel_calls.json"))
    assert isinstance(event, ToolRequestEvent)
    return event


def mixed_results() -> list[ToolResult]:
    """Out of the model's order, one of each status."""
    return [
        ToolResult(
            "call_weather_3",
            "get_weather",
            "FAILED",
            error_code="tool_error",
            error_message="weather service answered 503",
        ),
        ToolResult(
            "call_train_1",
            "get_train_status",
            "SUCCEEDED",
            output_json='{"train":"IC 2","delay_minutes":0}',
        ),
        ToolResult(
            "call_weather_2",
            "get_weather",
            "REJECTED",
            error_code="policy_denied",
            error_message="Zürich is outside the caller's region",
        ),
    ]


def test_assistant_message_then_one_tool_message_per_call() -> None:
    completion = load_json(DIR, "parallel_calls.json")
    results = mixed_results()
    messages = ADAPTER.append_results(parallel_event(), results)
    returned = completion["choices"][0]["message"]
    assert messages[0] == {
        "role": "assistant",
        "content": returned["content"],
        "tool_calls": returned["tool_calls"],
    }
    by_id = {r.call_id: r for r in results}
    assert messages[1:] == [
        {"role": "tool", "tool_call_id": call_id, "content": result_text(by_id[call_id])}
        for call_id in ("call_train_1", "call_weather_2", "call_weather_3")
    ]
    assert json.loads(messages[2]["content"])["status"] == "rejected"
    assert json.loads(messages[3]["content"])["error"]["code"] == "tool_error"
    for message in messages:
        validate_param(ChatCompletionMessageParam, message)


def test_a_call_without_a_result_is_an_error() -> None:
    with pytest.raises(AdapterError) as caught:
        ADAPTER.append_results(parallel_event(), mixed_results()[1:])
    assert caught.value.code == "missing_result"
    assert "call_weather_3" in str(caught.value)


def test_recorded_stream_gives_the_same_next_messages() -> None:
    assembler = ADAPTER.new_stream_assembler()
    for payload in sse_payloads(load_text(DIR, "chat_parallel_tools.sse")):
        assembler.feed(payload)
    streamed = assembler.finish()
    complete = ADAPTER.read_complete_event(load_json(DIR, "chat_parallel_tools.json"))
    assert isinstance(streamed, ToolRequestEvent) and isinstance(complete, ToolRequestEvent)
    results = [
        ToolResult(
            "call_DNYTawLBoN8fj3KN6qU9N1Ou",
            "get_stock_price",
            "SUCCEEDED",
            output_json='{"price":227.5}',
        ),
        ToolResult(
            "call_JMW1whyEaYG438VE1OIflxA2",
            "GetWeatherArgs",
            "SUCCEEDED",
            output_json='{"temp_c":11}',
        ),
    ]
    messages = ADAPTER.append_results(streamed, results)
    assert messages == ADAPTER.append_results(complete, results)
    assert messages[0]["content"] is None
    assert [m.get("tool_call_id") for m in messages] == [
        None,
        "call_JMW1whyEaYG438VE1OIflxA2",
        "call_DNYTawLBoN8fj3KN6qU9N1Ou",
    ]
    for message in messages:
        validate_param(ChatCompletionMessageParam, message)


def test_conversation_after_a_tool_turn() -> None:
    conversation = [USER]
    before = copy.deepcopy(conversation)
    extended = ADAPTER.extend_conversation(conversation, parallel_event(), mixed_results())
    assert conversation == before
    assert extended == [USER, *ADAPTER.append_results(parallel_event(), mixed_results())]


def test_final_answer_and_refusal_are_kept_in_the_conversation() -> None:
    final = ADAPTER.read_complete_event(load_json(DIR, "final_text.json"))
    refusal = ADAPTER.read_complete_event(load_json(DIR, "chat_refusal.json"))
    assert ADAPTER.extend_conversation([USER], final, [])[1] == {
        "role": "assistant",
        "content": "The IC 2 is on time and Zürich will be sunny, 21 °C.",
    }
    refused = ADAPTER.extend_conversation([USER], refusal, [])
    assert refused[1] == {
        "role": "assistant",
        "content": None,
        "refusal": "I'm sorry, I can't assist with that request.",
    }
    for message in refused:
        validate_param(ChatCompletionMessageParam, message)


@pytest.mark.parametrize("name", ["length.json", "content_filter.json", "error_body.json"])
def test_unfinished_turn_adds_nothing(name: str) -> None:
    event = ADAPTER.read_complete_event(load_json(DIR, name))
    assert ADAPTER.extend_conversation([USER], event, []) == [USER]


def test_tool_declarations() -> None:
    declarations = ADAPTER.tool_declarations([WEATHER, BOOK])
    assert declarations == [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Current weather for a city.",
                "parameters": WEATHER.input_schema,
                "strict": True,
            },
        },
        {
            "type": "function",
            "function": {
                "name": "reserve_seat",
                "description": "Reserve a workshop seat.",
                "parameters": BOOK.input_schema,
                "strict": False,
            },
        },
    ]
    assert declarations[0]["function"]["parameters"] is not WEATHER.input_schema
    for declaration in declarations:
        validate_param(ChatCompletionToolUnionParam, declaration)


def test_next_request_goes_through_the_sdk_verbatim(server: LoopbackServer) -> None:
    tools = ADAPTER.tool_declarations([WEATHER, BOOK])
    messages = ADAPTER.extend_conversation([USER], parallel_event(), mixed_results())
    server.queue(Reply.json(load_json(DIR, "final_text.json")))
    with sdk_client(server) as client:
        reply = client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=tools)  # type: ignore[arg-type]
    body = server.received[0].json()
    assert body["messages"] == messages
    assert body["tools"] == tools
    assert isinstance(reply, ChatCompletion)
    assert reply.choices[0].message.content == (
        "The IC 2 is on time and Zürich will be sunny, 21 °C."
    )
