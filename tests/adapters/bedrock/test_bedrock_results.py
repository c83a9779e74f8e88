"""Shaping the next Converse request: toolResult blocks, conversation, tool specs."""

from __future__ import annotations

import pytest

from adapters.bedrock_converse import ADAPTER
from adapters.events import AdapterError, ToolRequestEvent, ToolResult, ToolSpec
from adapters.results import result_text
from tests.adapters.bedrock._support import (
    USER_TURN,
    load,
    mixed_results,
    validate_converse_request,
)


def _event(name: str) -> ToolRequestEvent:
    event = ADAPTER.read_complete_event(load(name))
    assert isinstance(event, ToolRequestEvent)
    return event


def test_append_results_answers_every_call_by_id_in_model_order() -> None:
    event = _event("parallel_calls.json")
    results = mixed_results()
    assistant, user = ADAPTER.append_results(event, results)
    assert assistant == {
        "role": "assistant",
        "content": load("parallel_calls.json")["output"]["message"]["content"],
    }
    assert "reasoningContent" in assistant["content"][0]  # echoed, never dropped
    by_id = {r.call_id: r for r in results}
    assert user == {
        "role": "user",
        "content": [
            {
                "toolResult": {
                    "toolUseId": "tooluse_Wk1",
                    "content": [{"text": '{"temp_c":18}'}],
                    "status": "success",
                }
            },
            {
                "toolResult": {
                    "toolUseId": "tooluse_Wk2",
                    "content": [{"text": result_text(by_id["tooluse_Wk2"])}],
                    "status": "error",
                }
            },
            {
                "toolResult": {
                    "toolUseId": "tooluse_Wk3",
                    "content": [{"text": result_text(by_id["tooluse_Wk3"])}],
                    "status": "error",
                }
            },
        ],
    }
    assert '"code":"policy_denied"' in user["content"][1]["toolResult"]["content"][0]["text"]
    validate_converse_request([USER_TURN, assistant, user])


@pytest.mark.parametrize("status", ["NOT_RUN", "UNKNOWN", "PENDING_APPROVAL"])
def test_every_non_success_status_is_an_error_result(status: str) -> None:
    event = _event("one_call.json")
    result = ToolResult("tooluse_kZJMlvQmRJ6eAyJE5GIl7Q", "get_weather", status)
    _, user = ADAPTER.append_results(event, [result])
    block = user["content"][0]["toolResult"]
    assert block["status"] == "error"
    assert block["content"] == [{"text": result_text(result)}]


def test_missing_result_is_an_error() -> None:
    event = _event("parallel_calls.json")
    results = [r for r in mixed_results() if r.call_id != "tooluse_Wk2"]
    with pytest.raises(AdapterError) as info:
        ADAPTER.append_results(event, results)
    assert info.value.code == "missing_result"
    assert "tooluse_Wk2" in str(info.value)


def test_results_are_never_matched_by_position() -> None:
    event = _event("one_call.json")
    with pytest.raises(AdapterError) as info:
        ADAPTER.append_results(event, [ToolResult("other", "get_weather", "SUCCEEDED", "{}")])
    assert info.value.code == "missing_result"


def test_two_results_for_one_call_are_rejected() -> None:
    event = _event("parallel_calls.json")
    extra = ToolResult("tooluse_Wk1", "get_weather", "FAILED")
    with pytest.raises(AdapterError) as info:
        ADAPTER.append_results(event, [*mixed_results(), extra])
    assert info.value.code == "duplicate_call_id"


def test_extend_conversation() -> None:
    event = _event("parallel_calls.json")
    conversation = ADAPTER.extend_conversation([USER_TURN], event, mixed_results())
    assert conversation == [USER_TURN, *ADAPTER.append_results(event, mixed_results())]
    final = ADAPTER.read_complete_event(load("final_text.json"))
    after_final = ADAPTER.extend_conversation(conversation, final, [])
    assert after_final[-1] == load("final_text.json")["output"]["message"]
    validate_converse_request(after_final)
    for name in ("max_tokens.json", "guardrail_intervened.json"):
        event_ = ADAPTER.read_complete_event(load(name))
        assert ADAPTER.extend_conversation([USER_TURN], event_, []) == [USER_TURN]


CLOSED = {
    "type": "object",
    "properties": {
        "city": {"type": "string"},
        "when": {
            "type": "object",
            "properties": {"day": {"type": "string"}},
            "required": ["day"],
            "additionalProperties": False,
        },
    },
    "required": ["city", "when"],
    "additionalProperties": False,
}
OPEN_NESTED = {
    "type": "object",
    "properties": {
        "city": {"type": "string"},
        "tags": {
            "type": "array",
            "items": {"type": "object", "properties": {"k": {"type": "string"}}},
        },
    },
    "required": ["city", "tags"],
    "additionalProperties": False,
}
OPTIONAL = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "units": {"type": "string"}},
    "required": ["city"],
    "additionalProperties": False,
}


def test_tool_declarations_with_strict_only_when_the_schema_qualifies() -> None:
    specs = [
        ToolSpec("get_weather", "Current weather.", CLOSED),
        ToolSpec("tagger", "Tags.", OPEN_NESTED),
        ToolSpec("forecast", "Forecast.", OPTIONAL),
        ToolSpec("ping", "", {"type": "object", "properties": {}}),
    ]
    tools = ADAPTER.tool_declarations(specs)
    assert tools[0] == {
        "toolSpec": {
            "name": "get_weather",
            "description": "Current weather.",
            "inputSchema": {"json": CLOSED},
            "strict": True,
        }
    }
    assert "strict" not in tools[1]["toolSpec"]  # nested object without additionalProperties
    assert "strict" not in tools[2]["toolSpec"]  # optional property
    assert tools[3] == {
        "toolSpec": {
            "name": "ping",  # empty description is left out
            "inputSchema": {"json": {"type": "object", "properties": {}}},
        }
    }
    validate_converse_request([USER_TURN], tools)
