"""Shaping the next Gemini request: functionResponse parts, conversation, declarations."""

from __future__ import annotations

import pytest

from adapters.events import AdapterError, ToolRequestEvent, ToolResult, ToolSpec, fallback_call_id
from adapters.gemini import ADAPTER
from adapters.results import result_object
from tests.adapters.gemini._support import load, validate_content, validate_tool

USER_TURN = {"role": "user", "parts": [{"text": "Weather in Paris and Tokyo, then book."}]}


def _event(name: str) -> ToolRequestEvent:
    event = ADAPTER.read_complete_event(load(name))
    assert isinstance(event, ToolRequestEvent)
    return event


def _mixed(ids: list[str]) -> list[ToolResult]:
    """SUCCEEDED, REJECTED, FAILED for the three calls, listed out of the model's order."""
    ok = ToolResult(ids[0], "get_weather", "SUCCEEDED", output_json='{"temp_c":18}')
    rejected = ToolResult(
        ids[1],
        "get_weather",
        "REJECTED",
        error_code="policy_denied",
        error_message="Tokyo is outside your region.",
    )
    failed = ToolResult(
        ids[2], "book_table", "FAILED", error_code="tool_error", error_message="restaurant closed"
    )
    return [failed, ok, rejected]


def test_append_results_with_ids_matches_by_id_in_model_order() -> None:
    event = _event("parallel_calls_with_ids.json")
    results = _mixed(["fc-a", "fc-b", "fc-c"])
    items = ADAPTER.append_results(event, results)
    model, answers = items
    assert model == {**load("parallel_calls_with_ids.json")["candidates"][0]["content"]}
    assert model["parts"][0]["thoughtSignature"] == "c2lnLWE="
    assert answers["role"] == "user"
    by_id = {r.call_id: r for r in results}
    assert [p["functionResponse"] for p in answers["parts"]] == [
        {"id": "fc-a", "name": "get_weather", "response": {"temp_c": 18}},
        {"id": "fc-b", "name": "get_weather", "response": result_object(by_id["fc-b"])},
        {"id": "fc-c", "name": "book_table", "response": result_object(by_id["fc-c"])},
    ]
    assert answers["parts"][1]["functionResponse"]["response"]["error"] == {
        "code": "policy_denied",
        "message": "Tokyo is outside your region.",
    }
    assert answers["parts"][2]["functionResponse"]["response"]["status"] == "failed"
    for item in items:
        validate_content(item)


def test_calls_without_ids_are_answered_by_gateway_assigned_index() -> None:
    event = _event("parallel_calls.json")
    ids = [fallback_call_id("qV3tZ-par-0003", i) for i in range(3)]
    assert ids[2] == "qV3tZ-par-0003#2"
    model, answers = ADAPTER.append_results(event, _mixed(ids))
    # the model content goes back exactly as returned, thought part and signature included
    assert model == load("parallel_calls.json")["candidates"][0]["content"]
    responses = [p["functionResponse"] for p in answers["parts"]]
    assert all("id" not in r for r in responses)
    assert [r["name"] for r in responses] == ["get_weather", "get_weather", "book_table"]
    assert responses[0]["response"] == {"temp_c": 18}
    assert responses[1]["response"]["status"] == "rejected"
    assert responses[2]["response"]["status"] == "failed"
    validate_content(model)
    validate_content(answers)


def test_missing_result_is_an_error() -> None:
    event = _event("parallel_calls_with_ids.json")
    results = [r for r in _mixed(["fc-a", "fc-b", "fc-c"]) if r.call_id != "fc-c"]
    with pytest.raises(AdapterError) as info:
        ADAPTER.append_results(event, results)
    assert info.value.code == "missing_result"
    assert "fc-c" in str(info.value)


def test_missing_result_for_a_call_without_id() -> None:
    event = _event("parallel_calls.json")
    with pytest.raises(AdapterError) as info:
        ADAPTER.append_results(event, _mixed(["t#0", "t#1", "t#7"]))
    assert info.value.code == "missing_result"
    assert "#2" in str(info.value)


def test_results_are_never_matched_by_position() -> None:
    event = _event("parallel_calls_with_ids.json")
    with pytest.raises(AdapterError) as info:
        ADAPTER.append_results(event, _mixed(["x", "y", "z"]))
    assert info.value.code == "missing_result"


def test_two_results_for_one_call_are_rejected() -> None:
    event = _event("parallel_calls.json")
    results = [*_mixed(["t#0", "t#1", "t#2"]), ToolResult("u#1", "get_weather", "SUCCEEDED")]
    with pytest.raises(AdapterError) as info:
        ADAPTER.append_results(event, results)
    assert info.value.code == "duplicate_call_id"


def test_extend_conversation_after_tool_request() -> None:
    event = _event("one_call.json")
    results = [ToolResult("fc-weather-1", "get_weather", "SUCCEEDED", '{"temp_c":18}')]
    conversation = ADAPTER.extend_conversation([USER_TURN], event, results)
    assert conversation == [USER_TURN, *ADAPTER.append_results(event, results)]
    assert conversation[1]["parts"][1]["thoughtSignature"] == (
        "Q2lZQkhiM2pvaVZ2c2lnbmF0dXJlLW9uZQ=="
    )
    for item in conversation:
        validate_content(item)


def test_extend_conversation_after_final_and_refusal() -> None:
    final = ADAPTER.read_complete_event(load("final_text.json"))
    assert ADAPTER.extend_conversation([USER_TURN], final, []) == [
        USER_TURN,
        load("final_text.json")["candidates"][0]["content"],
    ]
    refusal = ADAPTER.read_complete_event(load("prompt_blocked.json"))
    assert ADAPTER.extend_conversation([USER_TURN], refusal, []) == [USER_TURN]
    truncated = ADAPTER.read_complete_event(load("max_tokens.json"))
    assert ADAPTER.extend_conversation([USER_TURN], truncated, []) == [USER_TURN]


def test_append_results_does_not_alias_the_response() -> None:
    body = load("one_call.json")
    event = ADAPTER.read_complete_event(body)
    assert isinstance(event, ToolRequestEvent)
    model, _ = ADAPTER.append_results(
        event, [ToolResult("fc-weather-1", "get_weather", "SUCCEEDED", "{}")]
    )
    model["parts"].clear()
    assert len(body["candidates"][0]["content"]["parts"]) == 2


SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string", "minLength": 1}},
    "required": ["city"],
    "additionalProperties": False,
}


def test_tool_declarations() -> None:
    tools = [
        ToolSpec("get_weather", "Current weather for a city.", SCHEMA),
        ToolSpec("ping", "No arguments.", {"type": "object", "properties": {}}),
    ]
    declarations = ADAPTER.tool_declarations(tools)
    assert declarations == [
        {
            "functionDeclarations": [
                {
                    "name": "get_weather",
                    "description": "Current weather for a city.",
                    "parametersJsonSchema": SCHEMA,
                },
                {
                    "name": "ping",
                    "description": "No arguments.",
                    "parametersJsonSchema": {"type": "object", "properties": {}},
                },
            ]
        }
    ]
    assert declarations[0]["functionDeclarations"][0]["parametersJsonSchema"] is not SCHEMA
    validate_tool(declarations[0])
    assert ADAPTER.tool_declarations([]) == []
