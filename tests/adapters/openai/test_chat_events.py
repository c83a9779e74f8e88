"""OpenAI Chat Completions: classification of complete responses (fixtures checked against the
SDK, and replayed through the real SDK client from a loopback server)."""

from __future__ import annotations

import copy
from typing import Any

import openai
import pytest
from openai.types.chat import ChatCompletion
from openai.types.shared import ErrorObject

from adapters import PROVIDERS, get_adapter
from adapters.events import (
    AdapterError,
    ErrorKind,
    FinalEvent,
    IncompleteEvent,
    ProviderErrorEvent,
    RefusalEvent,
    ToolRequestEvent,
)
from adapters.openai_chat import ADAPTER
from tests.adapters.loopback import LoopbackServer, Reply
from tests.adapters.openai.sdk_checks import load_json, sdk_client, validate_model

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


def fixture(name: str) -> dict[str, Any]:
    return load_json(DIR, name)


def message_of(completion: dict[str, Any]) -> dict[str, Any]:
    message: dict[str, Any] = completion["choices"][0]["message"]
    return message


def test_registered_under_its_provider_id() -> None:
    assert get_adapter("openai.chat_completions") is ADAPTER
    assert ADAPTER.provider == "openai.chat_completions"
    assert ADAPTER.api_versions == PROVIDERS["openai.chat_completions"]


@pytest.mark.parametrize("name", COMPLETIONS)
def test_fixture_is_a_valid_sdk_completion(name: str) -> None:
    validate_model(ChatCompletion, fixture(name))


def test_error_body_fixture_is_a_valid_sdk_error() -> None:
    validate_model(ErrorObject, fixture("error_body.json")["error"])


def test_final_text() -> None:
    event = ADAPTER.read_complete_event(fixture("final_text.json"))
    assert isinstance(event, FinalEvent)
    assert event.text == "The IC 2 is on time and Zürich will be sunny, 21 °C."
    meta = event.meta
    assert (meta.provider, meta.api_version, meta.model, meta.response_id) == (
        "openai.chat_completions",
        "v1",
        "gpt-4o-mini-2024-07-18",
        "chatcmpl-fin01",
    )
    assert (meta.input_tokens, meta.output_tokens) == (60, 20)


def test_one_call() -> None:
    completion = fixture("one_call.json")
    event = ADAPTER.read_complete_event(completion)
    assert isinstance(event, ToolRequestEvent)
    (call,) = event.calls
    assert (call.call_id, call.name, call.arguments_json) == (
        "call_abc",
        "get_weather",
        '{"city":"Paris"}',
    )
    assert call.arguments == {"city": "Paris"}
    assert call.original == message_of(completion)["tool_calls"][0]


def test_parallel_calls_in_model_order_with_text() -> None:
    event = ADAPTER.read_complete_event(fixture("parallel_calls.json"))
    assert isinstance(event, ToolRequestEvent)
    assert [c.call_id for c in event.calls] == ["call_train_1", "call_weather_2", "call_weather_3"]
    assert event.calls[1].arguments == {"city": "Zürich", "note": "🏔 trip"}
    assert event.text == "Checking the train and the weather."


def test_recorded_parallel_calls() -> None:
    event = ADAPTER.read_complete_event(fixture("chat_parallel_tools.json"))
    assert isinstance(event, ToolRequestEvent)
    assert [(c.call_id, c.name, c.arguments) for c in event.calls] == [
        (
            "call_JMW1whyEaYG438VE1OIflxA2",
            "GetWeatherArgs",
            {"city": "Edinburgh", "country": "GB", "units": "c"},
        ),
        (
            "call_DNYTawLBoN8fj3KN6qU9N1Ou",
            "get_stock_price",
            {"ticker": "AAPL", "exchange": "NASDAQ"},
        ),
    ]
    assert (event.meta.input_tokens, event.meta.output_tokens) == (149, 60)


def test_recorded_refusal_with_finish_reason_stop() -> None:
    event = ADAPTER.read_complete_event(fixture("chat_refusal.json"))
    assert isinstance(event, RefusalEvent)
    assert event.text == "I'm sorry, I can't assist with that request."


def test_truncated_by_length_is_incomplete_never_a_call() -> None:
    event = ADAPTER.read_complete_event(fixture("length.json"))
    assert isinstance(event, IncompleteEvent)
    assert event.reason == "length"


def test_content_filter_is_a_refusal() -> None:
    event = ADAPTER.read_complete_event(fixture("content_filter.json"))
    assert isinstance(event, RefusalEvent)
    assert "content filter" in event.text


def test_error_body_is_a_retryable_server_error() -> None:
    event = ADAPTER.read_complete_event(fixture("error_body.json"))
    assert isinstance(event, ProviderErrorEvent)
    assert (event.kind, event.retryable) == (ErrorKind.SERVER, True)
    assert event.message.startswith("The server had an error")


def test_stop_with_tool_calls_is_a_tool_request() -> None:
    completion = fixture("one_call.json")  # what a forced tool_choice gives
    completion["choices"][0]["finish_reason"] = "stop"
    assert isinstance(ADAPTER.read_complete_event(completion), ToolRequestEvent)


def test_unknown_finish_reason_is_incomplete() -> None:
    completion = fixture("one_call.json")
    completion["choices"][0]["finish_reason"] = "paused_for_reasons"
    event = ADAPTER.read_complete_event(completion)
    assert isinstance(event, IncompleteEvent)
    assert event.reason == "paused_for_reasons"


@pytest.mark.parametrize("arguments", ['{"city":"Par', "[1]", "null", ""])
def test_arguments_that_are_not_an_object_give_an_incomplete_call(arguments: str) -> None:
    completion = fixture("one_call.json")
    message_of(completion)["tool_calls"][0]["function"]["arguments"] = arguments
    event = ADAPTER.read_complete_event(completion)
    assert isinstance(event, ToolRequestEvent)
    assert event.calls[0].arguments_json == arguments
    assert not event.calls[0].complete


def _edited(name: str, path: list[Any], value: Any = KeyError) -> dict[str, Any]:
    completion = fixture(name)
    target: Any = completion
    for key in path[:-1]:
        target = target[key]
    if value is KeyError:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return completion


TOOL_CALL_0 = ["choices", 0, "message", "tool_calls", 0]


@pytest.mark.parametrize(
    ("response", "fragment"),
    [
        ("not json", "response must be a JSON object"),
        (_edited("one_call.json", ["id"]), "response.id"),
        (_edited("one_call.json", ["choices"]), "response.choices must be a JSON array"),
        (_edited("one_call.json", ["choices"], []), "exactly one"),
        (
            {**fixture("one_call.json"), "choices": [fixture("one_call.json")["choices"][0]] * 2},
            "exactly one",
        ),
        (_edited("one_call.json", ["choices", 0, "message"]), "message must be a JSON object"),
        (_edited("one_call.json", ["choices", 0, "finish_reason"]), "finish_reason"),
        (_edited("one_call.json", [*TOOL_CALL_0, "id"]), "tool_calls[0].id"),
        (_edited("one_call.json", [*TOOL_CALL_0, "function", "name"]), "function.name"),
        (_edited("one_call.json", [*TOOL_CALL_0, "type"], "custom"), "only function tool calls"),
        (
            _edited("one_call.json", ["choices", 0, "message", "tool_calls"], []),
            "message.tool_calls is empty",
        ),
        (
            _edited("final_text.json", ["choices", 0, "message", "content"], [{"type": "text"}]),
            "content must be a string",
        ),
        (_edited("final_text.json", ["choices", 0, "finish_reason"], "function_call"), "legacy"),
    ],
)
def test_malformed_response_names_what_is_missing(response: Any, fragment: str) -> None:
    with pytest.raises(AdapterError) as caught:
        ADAPTER.read_complete_event(response)
    assert caught.value.code == "malformed_response"
    assert fragment in str(caught.value)


@pytest.mark.parametrize("name", COMPLETIONS)
def test_sdk_parses_the_fixture_and_its_dump_classifies_the_same(
    name: str, server: LoopbackServer
) -> None:
    raw = fixture(name)
    server.queue(Reply.json(raw))
    with sdk_client(server) as client:
        parsed = client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "Weather in Paris?"}]
        )
    assert isinstance(parsed, ChatCompletion)
    assert server.received[0].path == "/v1/chat/completions"
    dumped = parsed.model_dump(mode="json", exclude_unset=True, by_alias=True)
    assert ADAPTER.read_complete_event(dumped) == ADAPTER.read_complete_event(copy.deepcopy(raw))


def test_sdk_raises_on_the_error_body_the_adapter_classifies(server: LoopbackServer) -> None:
    body = fixture("error_body.json")
    server.queue(Reply.json(body, status=500))
    with sdk_client(server) as client, pytest.raises(openai.InternalServerError) as caught:
        client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}]
        )
    assert caught.value.code == "server_error"
    event = ADAPTER.read_complete_event({"error": caught.value.body})
    assert isinstance(event, ProviderErrorEvent)
    assert event.kind == ErrorKind.SERVER
