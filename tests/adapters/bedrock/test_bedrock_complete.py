"""Classification of Converse responses and error bodies."""

from __future__ import annotations

from typing import Any

import pytest

from adapters import get_adapter
from adapters.bedrock_converse import ADAPTER
from adapters.events import (
    AdapterError,
    ErrorKind,
    FinalEvent,
    IncompleteEvent,
    ProviderErrorEvent,
    RefusalEvent,
    ToolRequestEvent,
)
from tests.adapters.bedrock._support import RESPONSE_FIXTURES, load, validate_response


@pytest.mark.parametrize("name", RESPONSE_FIXTURES)
def test_fixture_is_a_valid_converse_response(name: str) -> None:
    validate_response(load(name))


def test_registry_returns_this_adapter() -> None:
    adapter = get_adapter("aws.bedrock_converse")
    assert adapter is ADAPTER
    assert (adapter.provider, adapter.api_versions) == ("aws.bedrock_converse", ("2023-09-30",))


def test_final_text() -> None:
    event = ADAPTER.read_complete_event(load("final_text.json"))
    assert isinstance(event, FinalEvent)
    assert event.text == "It is 18 °C and sunny in Paris."
    assert event.meta.provider == "aws.bedrock_converse"
    assert event.meta.api_version == "2023-09-30"
    assert event.meta.response_id == ""  # Converse has none: the gateway needs the turn_id
    assert (event.meta.input_tokens, event.meta.output_tokens) == (512, 14)


def test_stop_sequence_is_final() -> None:
    body = load("final_text.json")
    body["stopReason"] = "stop_sequence"
    assert isinstance(ADAPTER.read_complete_event(body), FinalEvent)


def test_one_call() -> None:
    body = load("one_call.json")
    event = ADAPTER.read_complete_event(body)
    assert isinstance(event, ToolRequestEvent)
    [call] = event.calls
    assert call.call_id == "tooluse_kZJMlvQmRJ6eAyJE5GIl7Q"
    assert call.name == "get_weather"
    assert call.arguments == {"city": "Paris", "units": "c"}
    assert call.arguments_json == '{"city":"Paris","units":"c"}'
    assert call.original == body["output"]["message"]["content"][1]
    assert event.text == "Let me look that up."
    assert event.original == body


def test_parallel_calls_in_model_order_without_reasoning_in_text() -> None:
    event = ADAPTER.read_complete_event(load("parallel_calls.json"))
    assert isinstance(event, ToolRequestEvent)
    assert [(c.call_id, c.name) for c in event.calls] == [
        ("tooluse_Wk1", "get_weather"),
        ("tooluse_Wk2", "get_weather"),
        ("tooluse_Wk3", "book_table"),
    ]
    assert event.calls[1].arguments_json == '{"city":"東京"}'
    assert event.text == "I'll check both cities and book the table."
    assert "user wants" not in event.text


def test_botocore_response_metadata_is_ignored() -> None:
    body = {
        **load("one_call.json"),
        "ResponseMetadata": {
            "RequestId": "5e8e1b0c-3a1f-4d7e-9a51-8f0a1d1e2c3b",
            "HTTPStatusCode": 200,
        },
    }
    event = ADAPTER.read_complete_event(body)
    assert isinstance(event, ToolRequestEvent)
    assert event.meta.response_id == ""


@pytest.mark.parametrize("stop", ["max_tokens", "model_context_window_exceeded"])
def test_truncation_is_incomplete_even_with_a_tool_use_block(stop: str) -> None:
    body = load("max_tokens.json")
    body["stopReason"] = stop
    event = ADAPTER.read_complete_event(body)
    assert isinstance(event, IncompleteEvent)
    assert event.reason == stop


@pytest.mark.parametrize("stop", ["guardrail_intervened", "content_filtered"])
def test_guardrail_and_content_filter_are_refusals(stop: str) -> None:
    body = load("guardrail_intervened.json")
    body["stopReason"] = stop
    event = ADAPTER.read_complete_event(body)
    assert isinstance(event, RefusalEvent)
    assert event.text == "Sorry, the model cannot answer this question."


def test_refusal_without_text_names_the_stop_reason() -> None:
    body = load("guardrail_intervened.json")
    body["output"]["message"]["content"] = []
    body["stopReason"] = "content_filtered"
    event = ADAPTER.read_complete_event(body)
    assert isinstance(event, RefusalEvent)
    assert "content_filtered" in event.text


@pytest.mark.parametrize("stop", ["malformed_model_output", "malformed_tool_use"])
def test_malformed_model_output_is_a_retryable_error(stop: str) -> None:
    body = load("one_call.json")
    body["stopReason"] = stop
    event = ADAPTER.read_complete_event(body)
    assert isinstance(event, ProviderErrorEvent)
    assert (event.kind, event.retryable) == (ErrorKind.OTHER, True)
    assert stop in event.message


def test_tool_use_without_a_tool_use_block_is_a_retryable_error() -> None:
    body = load("final_text.json")
    body["stopReason"] = "tool_use"
    event = ADAPTER.read_complete_event(body)
    assert isinstance(event, ProviderErrorEvent)
    assert event.retryable is True


def test_unknown_stop_reason_is_a_non_retryable_error() -> None:
    body = load("final_text.json")
    body["stopReason"] = "something_new"
    event = ADAPTER.read_complete_event(body)
    assert isinstance(event, ProviderErrorEvent)
    assert event.retryable is False


@pytest.mark.parametrize(
    ("body", "kind", "retryable"),
    [
        (
            {"__type": "ThrottlingException", "message": "Too many requests"},
            ErrorKind.RATE_LIMIT,
            True,
        ),
        (
            {"__type": "com.amazon.bedrock.runtime#ModelTimeoutException", "message": "slow"},
            ErrorKind.TIMEOUT,
            True,
        ),
        ({"Code": "ServiceUnavailableException", "Message": "try later"}, ErrorKind.SERVER, True),
        ({"Code": "InternalServerException", "message": "oops"}, ErrorKind.SERVER, True),
        (
            {
                "Error": {"Code": "ValidationException", "Message": "bad input"},
                "ResponseMetadata": {"HTTPStatusCode": 400},
            },
            ErrorKind.OTHER,
            False,
        ),
        ({"Error": {"Code": "AccessDeniedException", "Message": "no"}}, ErrorKind.OTHER, False),
        (
            {"Error": {"Code": "modelStreamErrorException", "Message": "stream broke"}},
            ErrorKind.SERVER,
            True,
        ),
    ],
)
def test_error_bodies(body: dict[str, Any], kind: ErrorKind, retryable: bool) -> None:
    event = ADAPTER.read_complete_event(body)
    assert isinstance(event, ProviderErrorEvent)
    assert (event.kind, event.retryable) == (kind, retryable)
    assert event.original == body


def test_error_message_names_the_exception() -> None:
    event = ADAPTER.read_complete_event(
        {"__type": "ThrottlingException", "message": "Too many requests"}
    )
    assert isinstance(event, ProviderErrorEvent)
    assert event.message == "ThrottlingException: Too many requests"


def _content_with(block: Any) -> dict[str, Any]:
    body = load("one_call.json")
    body["output"]["message"]["content"] = [block]
    return body


@pytest.mark.parametrize(
    ("body", "missing"),
    [
        ([], "response"),
        ({}, "stopReason"),
        ({"stopReason": "end_turn"}, "output"),
        ({"stopReason": "end_turn", "output": {}}, "output.message"),
        (
            {"stopReason": "end_turn", "output": {"message": {"content": "x"}}},
            "output.message.content",
        ),
        (_content_with("text"), "output.message.content[0]"),
        (
            _content_with({"toolUse": {"name": "get_weather", "input": {}}}),
            "content[0].toolUse.toolUseId",
        ),
        (_content_with({"toolUse": {"toolUseId": "t1", "input": {}}}), "content[0].toolUse.name"),
        (
            _content_with({"toolUse": {"toolUseId": "t1", "name": "get_weather"}}),
            "content[0].toolUse.input",
        ),
    ],
)
def test_malformed_response(body: Any, missing: str) -> None:
    with pytest.raises(AdapterError) as info:
        ADAPTER.read_complete_event(body)
    assert info.value.code == "malformed_response"
    assert missing in str(info.value)


def test_non_object_input_makes_an_incomplete_call() -> None:
    body = _content_with(
        {"toolUse": {"toolUseId": "t1", "name": "get_weather", "input": ["Paris"]}}
    )
    event = ADAPTER.read_complete_event(body)
    assert isinstance(event, ToolRequestEvent)
    assert (event.calls[0].arguments, event.calls[0].arguments_json) == (None, '["Paris"]')
