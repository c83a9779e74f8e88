"""Classification of non-streamed Gemini responses."""

from __future__ import annotations

import json
from typing import Any

import pytest

from adapters import get_adapter
from adapters.events import (
    AdapterError,
    ErrorKind,
    FinalEvent,
    IncompleteEvent,
    ProviderErrorEvent,
    RefusalEvent,
    ToolRequestEvent,
)
from adapters.gemini import ADAPTER, GeminiAdapter
from tests.adapters.gemini._support import RESPONSE_FIXTURES, load, validate_response


@pytest.mark.parametrize("name", RESPONSE_FIXTURES)
def test_fixture_is_a_valid_sdk_response(name: str) -> None:
    validate_response(load(name))


def test_registry_returns_this_adapter() -> None:
    adapter = get_adapter("google.gemini")
    assert adapter is ADAPTER
    assert adapter.provider == "google.gemini"
    assert adapter.api_versions == ("v1beta", "v1")


def test_final_text() -> None:
    event = ADAPTER.read_complete_event(load("final_text.json"))
    assert isinstance(event, FinalEvent)
    assert event.text == "It is 18 °C and sunny in Paris."
    assert event.meta.provider == "google.gemini"
    assert event.meta.api_version == "v1beta"
    assert event.meta.model == "gemini-2.5-flash"
    assert event.meta.response_id == "qV3tZ-final-0001"
    assert (event.meta.input_tokens, event.meta.output_tokens) == (61, 12)


def test_one_call_keeps_id_object_args_and_signature() -> None:
    body = load("one_call.json")
    event = ADAPTER.read_complete_event(body)
    assert isinstance(event, ToolRequestEvent)
    [call] = event.calls
    assert call.call_id == "fc-weather-1"
    assert call.name == "get_weather"
    assert call.arguments == {"city": "Paris", "units": "c"}
    assert call.arguments_json == '{"city":"Paris","units":"c"}'
    assert call.original == body["candidates"][0]["content"]["parts"][1]
    assert call.original["thoughtSignature"] == "Q2lZQkhiM2pvaVZ2c2lnbmF0dXJlLW9uZQ=="
    assert event.text == "I'll look that up."
    assert event.original == body
    # output tokens include the thinking tokens Gemini bills as output
    assert (event.meta.input_tokens, event.meta.output_tokens) == (88, 61)


def test_parallel_calls_without_ids_in_model_order() -> None:
    event = ADAPTER.read_complete_event(load("parallel_calls.json"))
    assert isinstance(event, ToolRequestEvent)
    assert [(c.call_id, c.name) for c in event.calls] == [
        ("", "get_weather"),
        ("", "get_weather"),
        ("", "book_table"),
    ]
    assert event.calls[1].arguments == {"city": "東京"}
    assert json.loads(event.calls[1].arguments_json) == {"city": "東京"}
    assert event.calls[2].arguments_json == (
        '{"restaurant":"Chez Anna","party_size":4,"time":"19:30"}'
    )
    # the thought part stays in the original but never reaches the visible text
    assert event.text == "I'll check both cities and book the table."
    assert "Checking both cities" not in event.text


def test_api_version_is_recorded() -> None:
    event = GeminiAdapter("v1").read_complete_event(load("final_text.json"))
    assert event.meta.api_version == "v1"
    with pytest.raises(AdapterError) as info:
        GeminiAdapter("v2")
    assert info.value.code == "unknown_provider"


def test_prompt_blocked_is_a_refusal() -> None:
    event = ADAPTER.read_complete_event(load("prompt_blocked.json"))
    assert isinstance(event, RefusalEvent)
    assert "PROHIBITED_CONTENT" in event.text
    assert event.meta.response_id == "qV3tZ-block-0005"


@pytest.mark.parametrize(
    "reason",
    ["SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "LANGUAGE", "IMAGE_SAFETY"],
)
def test_content_filter_is_a_refusal(reason: str) -> None:
    body = load("safety_stop.json")
    body["candidates"][0]["finishReason"] = reason
    event = ADAPTER.read_complete_event(body)
    assert isinstance(event, RefusalEvent)
    assert reason in event.text


def test_filter_with_function_call_is_not_a_tool_request() -> None:
    body = load("one_call.json")
    body["candidates"][0]["finishReason"] = "SAFETY"
    body["candidates"][0]["finishMessage"] = "Blocked by safety filters."
    event = ADAPTER.read_complete_event(body)
    assert isinstance(event, RefusalEvent)
    assert event.text == "Blocked by safety filters."


def test_max_tokens_is_incomplete_even_with_a_function_call() -> None:
    event = ADAPTER.read_complete_event(load("max_tokens.json"))
    assert isinstance(event, IncompleteEvent)
    assert event.reason == "MAX_TOKENS"


def test_missing_finish_reason_is_incomplete() -> None:
    body = load("one_call.json")
    del body["candidates"][0]["finishReason"]
    event = ADAPTER.read_complete_event(body)
    assert isinstance(event, IncompleteEvent)
    assert event.reason == "finish_reason_missing"


def test_malformed_function_call_is_a_retryable_error() -> None:
    event = ADAPTER.read_complete_event(load("malformed_function_call.json"))
    assert isinstance(event, ProviderErrorEvent)
    assert event.retryable is True
    assert event.kind is ErrorKind.OTHER
    assert "Malformed function call" in event.message


@pytest.mark.parametrize(
    "reason", ["OTHER", "TOO_MANY_TOOL_CALLS", "FINISH_REASON_UNSPECIFIED", "SOMETHING_NEW"]
)
def test_other_finish_reasons_are_non_retryable_errors(reason: str) -> None:
    body = load("final_text.json")
    body["candidates"][0]["finishReason"] = reason
    event = ADAPTER.read_complete_event(body)
    assert isinstance(event, ProviderErrorEvent)
    assert event.retryable is False
    assert reason in event.message


@pytest.mark.parametrize(
    ("status", "code", "kind", "retryable"),
    [
        ("RESOURCE_EXHAUSTED", 429, ErrorKind.RATE_LIMIT, True),
        ("UNAVAILABLE", 503, ErrorKind.SERVER, True),
        ("INTERNAL", 500, ErrorKind.SERVER, True),
        ("DEADLINE_EXCEEDED", 504, ErrorKind.TIMEOUT, True),
        ("INVALID_ARGUMENT", 400, ErrorKind.OTHER, False),
        ("PERMISSION_DENIED", 403, ErrorKind.OTHER, False),
    ],
)
def test_api_error_body(status: str, code: int, kind: ErrorKind, retryable: bool) -> None:
    body = {"error": {"code": code, "message": "boom", "status": status}}
    event = ADAPTER.read_complete_event(body)
    assert isinstance(event, ProviderErrorEvent)
    assert (event.kind, event.retryable) == (kind, retryable)
    assert event.message == f"{status}: boom"
    assert event.original == body


def test_api_error_without_status_uses_the_http_code() -> None:
    event = ADAPTER.read_complete_event({"error": {"code": 503, "message": "overloaded"}})
    assert isinstance(event, ProviderErrorEvent)
    assert (event.kind, event.retryable) == (ErrorKind.SERVER, True)


def _without_call_name(body: dict[str, Any]) -> dict[str, Any]:
    del body["candidates"][0]["content"]["parts"][1]["functionCall"]["name"]
    return body


@pytest.mark.parametrize(
    ("body", "missing"),
    [
        ("not a dict", "response"),
        ({}, "no candidates and no promptFeedback.blockReason"),
        ({"candidates": "x"}, "candidates"),
        ({"candidates": [7]}, "candidates[0]"),
        (
            {"candidates": [{"content": {"parts": {}}, "finishReason": "STOP"}]},
            "candidates[0].content.parts",
        ),
        (
            {
                "candidates": [
                    {"content": {"parts": [{"functionCall": "x"}]}, "finishReason": "STOP"}
                ]
            },
            "parts[0].functionCall",
        ),
        (_without_call_name(load("one_call.json")), "parts[1].functionCall.name"),
        ({"error": "quota"}, "error"),
    ],
)
def test_malformed_response(body: Any, missing: str) -> None:
    with pytest.raises(AdapterError) as info:
        ADAPTER.read_complete_event(body)
    assert info.value.code == "malformed_response"
    assert missing in str(info.value)


def test_call_without_args_has_empty_object_arguments() -> None:
    body = load("one_call.json")
    del body["candidates"][0]["content"]["parts"][1]["functionCall"]["args"]
    event = ADAPTER.read_complete_event(body)
    assert isinstance(event, ToolRequestEvent)
    assert (event.calls[0].arguments_json, event.calls[0].arguments) == ("{}", {})


def test_non_object_args_make_an_incomplete_call() -> None:
    body = load("one_call.json")
    body["candidates"][0]["content"]["parts"][1]["functionCall"]["args"] = ["Paris"]
    event = ADAPTER.read_complete_event(body)
    assert isinstance(event, ToolRequestEvent)
    assert event.calls[0].arguments is None
    assert event.calls[0].complete is False
    assert event.calls[0].arguments_json == '["Paris"]'
