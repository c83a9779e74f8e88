"""OpenAI Responses: classification of complete responses (fixtures checked against the SDK,
and replayed through the real SDK client from a loopback server)."""

from __future__ import annotations

import copy
from typing import Any

import openai
import pytest
from openai.types.responses import Response
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
from adapters.openai_responses import ADAPTER
from tests.adapters.loopback import LoopbackServer, Reply
from tests.adapters.openai.sdk_checks import load_json, sdk_client, validate_model

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


def fixture(name: str) -> dict[str, Any]:
    return load_json(DIR, name)


def test_registered_under_its_provider_id() -> None:
    assert get_adapter("openai.responses") is ADAPTER
    assert ADAPTER.provider == "openai.responses"
    assert ADAPTER.api_versions == PROVIDERS["openai.responses"]


@pytest.mark.parametrize("name", RESPONSES)
def test_fixture_is_a_valid_sdk_response(name: str) -> None:
    validate_model(Response, fixture(name))


def test_error_body_fixture_is_a_valid_sdk_error() -> None:
    validate_model(ErrorObject, fixture("error_body.json")["error"])


def test_final_text_without_reasoning() -> None:
    event = ADAPTER.read_complete_event(fixture("final_text.json"))
    assert isinstance(event, FinalEvent)
    assert event.text == "The IC 2 is on time and Zürich will be sunny, 21 °C."
    assert "opaque" not in event.text  # the reasoning item never leaks into text
    meta = event.meta
    assert (meta.provider, meta.api_version, meta.model, meta.response_id) == (
        "openai.responses",
        "v1",
        "gpt-5-2025-08-07",
        "resp_final01",
    )
    assert (meta.input_tokens, meta.output_tokens) == (120, 48)


def test_one_call_correlates_on_call_id_not_item_id() -> None:
    response = fixture("one_call.json")
    event = ADAPTER.read_complete_event(response)
    assert isinstance(event, ToolRequestEvent)
    (call,) = event.calls
    assert call.call_id == "call_one01"
    assert call.name == "get_weather"
    assert call.arguments_json == '{"city":"Paris","note":null}'
    assert call.arguments == {"city": "Paris", "note": None}
    assert call.original == response["output"][1]
    assert event.text == ""
    assert event.original == response


def test_parallel_calls_in_model_order_with_text() -> None:
    event = ADAPTER.read_complete_event(fixture("parallel_calls.json"))
    assert isinstance(event, ToolRequestEvent)
    assert [(c.call_id, c.name) for c in event.calls] == [
        ("call_train01", "get_train_status"),
        ("call_weather02", "get_weather"),
        ("call_weather03", "get_weather"),
    ]
    assert event.calls[1].arguments == {"city": "Zürich", "note": "🏔 trip"}
    assert event.text == "Checking the train and the weather."


def test_refusal_part_is_a_refusal() -> None:
    event = ADAPTER.read_complete_event(fixture("refusal.json"))
    assert isinstance(event, RefusalEvent)
    assert event.text == "I can't help with that."


def test_refusal_beside_a_call_is_still_a_refusal() -> None:
    response = fixture("refusal.json")
    response["output"].append(fixture("one_call.json")["output"][1])
    assert isinstance(ADAPTER.read_complete_event(response), RefusalEvent)


def test_truncated_by_max_output_tokens_is_incomplete_never_a_call() -> None:
    event = ADAPTER.read_complete_event(fixture("incomplete_max_tokens.json"))
    assert isinstance(event, IncompleteEvent)
    assert event.reason == "max_output_tokens"


def test_content_filter_is_a_refusal() -> None:
    event = ADAPTER.read_complete_event(fixture("incomplete_content_filter.json"))
    assert isinstance(event, RefusalEvent)
    assert "content filter" in event.text


def test_failed_response_is_a_retryable_server_error() -> None:
    event = ADAPTER.read_complete_event(fixture("failed.json"))
    assert isinstance(event, ProviderErrorEvent)
    assert (event.kind, event.retryable) == (ErrorKind.SERVER, True)
    assert event.message == "The model failed to generate a response."
    assert event.meta.response_id == "resp_fail01"


def test_failed_response_with_a_prompt_error_is_not_retryable() -> None:
    response = fixture("failed.json")
    response["error"] = {"code": "invalid_prompt", "message": "Invalid prompt."}
    event = ADAPTER.read_complete_event(response)
    assert isinstance(event, ProviderErrorEvent)
    assert (event.kind, event.retryable) == (ErrorKind.OTHER, False)


def test_http_error_body_is_a_rate_limit_error() -> None:
    event = ADAPTER.read_complete_event(fixture("error_body.json"))
    assert isinstance(event, ProviderErrorEvent)
    assert (event.kind, event.retryable) == (ErrorKind.RATE_LIMIT, True)
    assert event.message.startswith("Rate limit reached")


def test_cancelled_is_a_final_error() -> None:
    response = {**fixture("final_text.json"), "status": "cancelled"}
    event = ADAPTER.read_complete_event(response)
    assert isinstance(event, ProviderErrorEvent)
    assert event.retryable is False


@pytest.mark.parametrize("status", ["queued", "in_progress"])
def test_unfinished_response_is_incomplete(status: str) -> None:
    response = {**fixture("one_call.json"), "status": status}
    event = ADAPTER.read_complete_event(response)
    assert isinstance(event, IncompleteEvent)
    assert event.reason == status


@pytest.mark.parametrize("arguments", ['{"city":"Par', "[1, 2]", '"Paris"', ""])
def test_arguments_that_are_not_an_object_give_an_incomplete_call(arguments: str) -> None:
    response = fixture("one_call.json")
    response["output"][1]["arguments"] = arguments
    event = ADAPTER.read_complete_event(response)
    assert isinstance(event, ToolRequestEvent)
    assert event.calls[0].arguments_json == arguments
    assert event.calls[0].arguments is None
    assert not event.calls[0].complete


def test_call_item_still_in_progress_is_not_complete() -> None:
    response = fixture("one_call.json")
    response["output"][1]["status"] = "in_progress"
    event = ADAPTER.read_complete_event(response)
    assert isinstance(event, ToolRequestEvent)
    assert not event.calls[0].complete


def _without(path: list[Any]) -> dict[str, Any]:
    response = fixture("one_call.json")
    target: Any = response
    for key in path[:-1]:
        target = target[key]
    del target[path[-1]]
    return response


@pytest.mark.parametrize(
    ("response", "fragment"),
    [
        ([], "response must be a JSON object"),
        (None, "response must be a JSON object"),
        (_without(["id"]), "response.id"),
        (_without(["status"]), "response.status"),
        (_without(["output"]), "response.output must be a JSON array"),
        (_without(["output", 1, "call_id"]), "response.output[1].call_id"),
        (_without(["output", 1, "arguments"]), "response.output[1].arguments"),
        ({**fixture("one_call.json"), "status": "done"}, "not a Responses API status"),
        ({**fixture("failed.json"), "error": None}, "response.error is missing"),
        (
            {**fixture("one_call.json"), "output": ["fc"]},
            "response.output[0] must be a JSON object",
        ),
        (
            {**fixture("one_call.json"), "output": [{"type": "computer_call", "id": "cu_1"}]},
            "computer_call",
        ),
    ],
)
def test_malformed_response_names_what_is_missing(response: Any, fragment: str) -> None:
    with pytest.raises(AdapterError) as caught:
        ADAPTER.read_complete_event(response)
    assert caught.value.code == "malformed_response"
    assert fragment in str(caught.value)


@pytest.mark.parametrize("name", RESPONSES)
def test_sdk_parses_the_fixture_and_its_dump_classifies_the_same(
    name: str, server: LoopbackServer
) -> None:
    raw = fixture(name)
    with sdk_client(server) as client:
        server.queue(Reply.json(raw))
        parsed = client.responses.create(model="gpt-5", input="What's the weather in Paris?")
    assert isinstance(parsed, Response)
    assert server.received[0].path == "/v1/responses"
    dumped = parsed.model_dump(mode="json", exclude_unset=True, by_alias=True)
    assert ADAPTER.read_complete_event(dumped) == ADAPTER.read_complete_event(copy.deepcopy(raw))


def test_sdk_raises_on_the_error_body_the_adapter_classifies(server: LoopbackServer) -> None:
    body = fixture("error_body.json")
    with sdk_client(server) as client:
        server.queue(Reply.json(body, status=429))
        with pytest.raises(openai.RateLimitError) as caught:
            client.responses.create(model="gpt-5", input="hi")
    assert caught.value.code == "rate_limit_exceeded"
    event = ADAPTER.read_complete_event({"error": caught.value.body})
    assert isinstance(event, ProviderErrorEvent)
    assert event.kind == ErrorKind.RATE_LIMIT
