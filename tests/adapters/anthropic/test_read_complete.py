"""read_complete_event: classification of non-streamed Messages and error bodies."""

from __future__ import annotations

import copy
from typing import Any

import anthropic
import pytest
from anthropic.types import Message
from anthropic.types.shared import ErrorResponse

from adapters import PROVIDERS, get_adapter
from adapters.anthropic_messages import ADAPTER
from adapters.events import (
    AdapterError,
    ErrorKind,
    FinalEvent,
    IncompleteEvent,
    PausedEvent,
    ProviderErrorEvent,
    RefusalEvent,
    ResponseMeta,
    ToolRequestEvent,
)
from tests.adapters.anthropic.support import FIXTURES, MODEL, load_json, sdk_client, validate
from tests.adapters.loopback import LoopbackServer, Reply

MESSAGE_FIXTURES = sorted(path.name for path in FIXTURES.glob("message_*.json"))
ERROR_FIXTURES = sorted(path.name for path in FIXTURES.glob("error_*.json"))


def test_registry_resolves_this_adapter() -> None:
    assert get_adapter("anthropic.messages") is ADAPTER
    assert ADAPTER.provider == "anthropic.messages"
    assert ADAPTER.api_versions == PROVIDERS["anthropic.messages"]


@pytest.mark.parametrize("name", MESSAGE_FIXTURES)
def test_message_fixtures_are_sdk_messages(name: str) -> None:
    validate(Message, load_json(name))


@pytest.mark.parametrize("name", ERROR_FIXTURES)
def test_error_fixtures_are_sdk_error_responses(name: str) -> None:
    validate(ErrorResponse, load_json(name))


def test_final_text() -> None:
    event = ADAPTER.read_complete_event(load_json("message_basic.json"))
    assert event == FinalEvent(
        ResponseMeta(
            "anthropic.messages",
            "2023-06-01",
            "claude-3-opus-latest",
            "msg_4QpJur2dWWDjF6C758FbBw5vm12BaVipnK",
            11,
            6,
        ),
        "Hello there!",
        load_json("message_basic.json"),
    )


def test_stop_sequence_is_final() -> None:
    event = ADAPTER.read_complete_event(load_json("message_stop_sequence.json"))
    assert isinstance(event, FinalEvent)
    assert event.text == "Step 1: book the train."


def test_one_call() -> None:
    response = load_json("message_tool_use.json")
    event = ADAPTER.read_complete_event(response)
    assert isinstance(event, ToolRequestEvent)
    assert event.text == "I'll check the current weather in Paris for you."
    assert event.original == response
    (call,) = event.calls
    assert (call.call_id, call.name) == ("toolu_01NRLabsLyVHZPKxbKvkfSMn", "get_weather")
    assert call.arguments_json == '{"location":"Paris"}'
    assert call.arguments == {"location": "Paris"} and call.complete
    assert call.original == response["content"][1]


def test_parallel_calls_keep_model_order_and_thinking_out_of_text() -> None:
    event = ADAPTER.read_complete_event(load_json("message_parallel_thinking.json"))
    assert isinstance(event, ToolRequestEvent)
    assert [(c.call_id, c.name) for c in event.calls] == [
        ("toolu_01TrainSearchA1b2C3", "search_trains"),
        ("toolu_02HotelSearchD4e5F6", "search_hotels"),
    ]
    assert event.calls[0].arguments_json == '{"from":"Genève","to":"Zürich","date":"2025-07-01"}'
    assert event.calls[1].arguments == {
        "city": "Zürich",
        "guests": 2,
        "note": "🚄 near the station",
    }
    assert event.text == "Let me look up both."
    # input tokens count cache reads and writes too (SDK `Usage` docstring)
    assert (event.meta.input_tokens, event.meta.output_tokens) == (2000, 210)


def test_refusal_uses_the_explanation() -> None:
    event = ADAPTER.read_complete_event(load_json("message_refusal.json"))
    assert isinstance(event, RefusalEvent)
    assert event.text == "This request was refused due to policy."


def test_refusal_without_details_keeps_the_text() -> None:
    response = load_json("message_basic.json") | {"stop_reason": "refusal"}
    event = ADAPTER.read_complete_event(response)
    assert isinstance(event, RefusalEvent) and event.text == "Hello there!"


def test_truncated_tool_use_is_never_a_call() -> None:
    event = ADAPTER.read_complete_event(load_json("message_max_tokens_tool_use.json"))
    assert isinstance(event, IncompleteEvent)
    assert event.reason == "max_tokens"


def test_context_window_exceeded_is_incomplete() -> None:
    event = ADAPTER.read_complete_event(load_json("message_context_window_exceeded.json"))
    assert isinstance(event, IncompleteEvent)
    assert event.reason == "model_context_window_exceeded"


def test_unknown_stop_reason_is_incomplete_not_a_call() -> None:
    response = load_json("message_tool_use.json") | {"stop_reason": "some_future_reason"}
    event = ADAPTER.read_complete_event(response)
    assert isinstance(event, IncompleteEvent) and event.reason == "some_future_reason"


def test_pause_turn() -> None:
    event = ADAPTER.read_complete_event(load_json("message_pause_turn.json"))
    assert isinstance(event, PausedEvent)
    assert event.reason == "pause_turn"


@pytest.mark.parametrize(
    ("name", "kind", "retryable"),
    [
        ("error_overloaded.json", ErrorKind.SERVER, True),
        ("error_rate_limit.json", ErrorKind.RATE_LIMIT, True),
        ("error_api.json", ErrorKind.SERVER, True),
        ("error_invalid_request.json", ErrorKind.OTHER, False),
    ],
)
def test_error_bodies(name: str, kind: ErrorKind, retryable: bool) -> None:
    body = load_json(name)
    event = ADAPTER.read_complete_event(body)
    assert isinstance(event, ProviderErrorEvent)
    assert (event.kind, event.retryable) == (kind, retryable)
    assert event.message.startswith(body["error"]["type"] + ": ")
    assert event.meta.response_id == body["request_id"]


@pytest.mark.parametrize(
    ("name", "status", "sdk_error"),
    [
        ("error_overloaded.json", 529, anthropic.InternalServerError),
        ("error_rate_limit.json", 429, anthropic.RateLimitError),
        ("error_api.json", 500, anthropic.InternalServerError),
        ("error_invalid_request.json", 400, anthropic.BadRequestError),
    ],
)
def test_error_responses_through_the_sdk(
    server: LoopbackServer, name: str, status: int, sdk_error: type[anthropic.APIStatusError]
) -> None:
    server.queue(Reply.json(load_json(name), status))
    with sdk_client(server) as client, pytest.raises(sdk_error) as raised:
        client.messages.create(
            model=MODEL, max_tokens=16, messages=[{"role": "user", "content": "hi"}]
        )
    assert isinstance(raised.value.body, dict)
    event = ADAPTER.read_complete_event(raised.value.body)
    assert event == ADAPTER.read_complete_event(load_json(name))


def test_sdk_parses_the_fixture_reply_the_same_way(server: LoopbackServer) -> None:
    server.queue(Reply.json(load_json("message_parallel_thinking.json")))
    with sdk_client(server) as client:
        message = client.messages.create(
            model=MODEL, max_tokens=1024, messages=[{"role": "user", "content": "trip"}]
        )
    assert isinstance(message, Message)
    parsed = message.model_dump(mode="json", exclude_unset=True)
    assert ADAPTER.read_complete_event(parsed) == ADAPTER.read_complete_event(
        load_json("message_parallel_thinking.json")
    )


def test_non_object_input_gives_no_arguments() -> None:
    response = load_json("message_tool_use.json")
    response["content"][1]["input"] = "location=Paris"
    event = ADAPTER.read_complete_event(response)
    assert isinstance(event, ToolRequestEvent)
    assert event.calls[0].arguments is None and not event.calls[0].complete
    assert event.calls[0].arguments_json == '"location=Paris"'


def _without(path: tuple[Any, ...]) -> dict[str, Any]:
    response = load_json("message_tool_use.json")
    target: Any = response
    for key in path[:-1]:
        target = target[key]
    del target[path[-1]]
    return response


def _with(path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    response = load_json("message_tool_use.json")
    target: Any = response
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return response


@pytest.mark.parametrize(
    ("response", "says"),
    [
        ([load_json("message_basic.json")], "not a JSON object"),
        (_without(("type",)), "type None"),
        (_with(("type",), "completion"), "type 'completion'"),
        (_without(("id",)), "no id"),
        (_without(("model",)), "no model"),
        (_with(("role",), "user"), "role"),
        (_without(("stop_reason",)), "no stop_reason"),
        (_with(("stop_reason",), None), "no stop_reason"),
        (_without(("content",)), "no content list"),
        (_with(("content",), [{"text": "untyped"}]), "content[0]"),
        (_without(("usage",)), "usage"),
        (_with(("usage", "output_tokens"), "65"), "usage"),
        (_with(("content",), [{"type": "text", "text": "no call"}]), "no tool_use block"),
        (_without(("content", 1, "id")), "content[1] has no id"),
        (_without(("content", 1, "name")), "content[1] has no name"),
        (_without(("content", 1, "input")), "content[1] has no input"),
        ({"type": "error", "error": "Overloaded"}, "error.type"),
    ],
)
def test_malformed_response(response: Any, says: str) -> None:
    with pytest.raises(AdapterError, match=says.replace("[", r"\[").replace("]", r"\]")) as raised:
        ADAPTER.read_complete_event(copy.deepcopy(response))
    assert raised.value.code == "malformed_response"
