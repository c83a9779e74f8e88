"""OpenAI Responses: the next request (results, whole conversation, tool declarations),
validated against the SDK's param types and sent through the real SDK client."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from openai.types.responses import FunctionToolParam, Response, ResponseInputItemParam

from adapters.events import AdapterError, ToolRequestEvent, ToolResult, ToolSpec
from adapters.openai_responses import ADAPTER
from adapters.results import result_text
from tests.adapters.loopback import LoopbackServer, Reply
from tests.adapters.openai.sdk_checks import load_json, sdk_client, validate_param
from tests.adapters.openai.streams import response_events

DIR = "openai_responses"
USER = {
    "role": "user",
    "content": "Is the IC 2 on time, and what's the weather in Zürich and Bern?",
}

WEATHER = ToolSpec(
    "get_weather",
    "Current weather for a city.",
    {
        "type": "object",
        "properties": {"city": {"type": "string"}, "note": {"type": ["string", "null"]}},
        "required": ["city", "note"],
        "additionalProperties": False,
    },
)
TRAIN = ToolSpec(
    "get_train_status",
    "Delay status of a train on a date.",
    {
        "type": "object",
        "properties": {"train": {"type": "string"}, "date": {"type": "string"}},
        "required": ["train", "date"],
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
            "call_weather03",
            "get_weather",
            "FAILED",
            error_code="tool_error",
            error_message="weather service answered 503",
        ),
        ToolResult(
            "call_train01",
            "get_train_status",
            "SUCCEEDED",
            output_json='{"train":"IC 2","delay_minutes":0}',
        ),
        ToolResult(
            "call_weather02",
            "get_weather",
            "REJECTED",
            error_code="policy_denied",
            error_message="Zürich is outside the caller's region",
        ),
    ]


def test_results_answer_every_call_by_id_in_model_order() -> None:
    event = parallel_event()
    results = mixed_results()
    items = ADAPTER.append_results(event, results)
    by_id = {r.call_id: r for r in results}
    assert [item["call_id"] for item in items] == [
        "call_train01",
        "call_weather02",
        "call_weather03",
    ]
    for item in items:
        validate_param(ResponseInputItemParam, item)
        assert item == {
            "type": "function_call_output",
            "call_id": item["call_id"],
            "output": result_text(by_id[item["call_id"]]),
        }
    assert json.loads(items[0]["output"]) == {"train": "IC 2", "delay_minutes": 0}
    assert json.loads(items[1]["output"])["status"] == "rejected"
    assert json.loads(items[2]["output"])["error"]["code"] == "tool_error"


def test_a_call_without_a_result_is_an_error() -> None:
    with pytest.raises(AdapterError) as caught:
        ADAPTER.append_results(parallel_event(), mixed_results()[:2])
    assert caught.value.code == "missing_result"
    assert "call_weather02" in str(caught.value)


def test_two_results_for_one_call_is_an_error() -> None:
    results = [*mixed_results(), mixed_results()[0]]
    with pytest.raises(AdapterError) as caught:
        ADAPTER.append_results(parallel_event(), results)
    assert caught.value.code == "duplicate_call_id"


def test_results_for_a_streamed_turn_are_the_same() -> None:
    response = load_json(DIR, "parallel_calls.json")
    assembler = ADAPTER.new_stream_assembler()
    for stream_event in response_events(response, size=2, interleave=True):
        assembler.feed(stream_event)
    streamed = assembler.finish()
    assert isinstance(streamed, ToolRequestEvent)
    assert ADAPTER.append_results(streamed, mixed_results()) == ADAPTER.append_results(
        parallel_event(), mixed_results()
    )


def test_conversation_keeps_reasoning_and_output_then_results() -> None:
    response = load_json(DIR, "parallel_calls.json")
    conversation = [USER]
    before = copy.deepcopy(conversation)
    extended = ADAPTER.extend_conversation(conversation, parallel_event(), mixed_results())
    assert conversation == before
    assert [item.get("type") for item in extended] == [
        None,
        "reasoning",
        "message",
        "function_call",
        "function_call",
        "function_call",
        "function_call_output",
        "function_call_output",
        "function_call_output",
    ]
    reasoning = extended[1]
    assert reasoning == response["output"][0]
    assert reasoning["encrypted_content"] == "gAAAAABo-opaque-reasoning-state=="
    assert extended[3:6] == response["output"][2:5]
    for item in extended:
        validate_param(ResponseInputItemParam, item)


def test_null_fields_of_output_items_are_left_out_when_resent() -> None:
    response = load_json(DIR, "one_call.json")
    response["output"][0]["content"] = None
    response["output"][0]["status"] = None
    response["output"].append(
        {
            "id": "msg_n1",
            "type": "message",
            "status": "completed",
            "role": "assistant",
            "content": [
                {"type": "output_text", "annotations": [], "text": "On it.", "logprobs": None}
            ],
        }
    )
    event = ADAPTER.read_complete_event(response)
    results = [ToolResult("call_one01", "get_weather", "SUCCEEDED", output_json='{"c":18}')]
    extended = ADAPTER.extend_conversation([USER], event, results)
    assert extended[1] == {
        "id": "rs_one01",
        "type": "reasoning",
        "summary": [],
        "encrypted_content": "gAAAAABo-opaque-reasoning-state==",
    }
    assert extended[3]["content"][0] == {"type": "output_text", "annotations": [], "text": "On it."}
    for item in extended:
        validate_param(ResponseInputItemParam, item)


def test_final_answer_is_kept_in_the_conversation() -> None:
    response = load_json(DIR, "final_text.json")
    event = ADAPTER.read_complete_event(response)
    assert ADAPTER.extend_conversation([USER], event, []) == [USER, *response["output"]]


@pytest.mark.parametrize(
    "name", ["incomplete_max_tokens.json", "incomplete_content_filter.json", "failed.json"]
)
def test_unfinished_turn_adds_nothing(name: str) -> None:
    event = ADAPTER.read_complete_event(load_json(DIR, name))
    assert ADAPTER.extend_conversation([USER], event, []) == [USER]


def test_tool_declarations_strict_only_when_the_schema_qualifies() -> None:
    declarations = ADAPTER.tool_declarations([WEATHER, TRAIN, BOOK])
    assert [(d["name"], d["strict"]) for d in declarations] == [
        ("get_weather", True),
        ("get_train_status", True),
        ("reserve_seat", False),
    ]
    assert declarations[0] == {
        "type": "function",
        "name": "get_weather",
        "description": "Current weather for a city.",
        "parameters": WEATHER.input_schema,
        "strict": True,
    }
    for declaration in declarations:
        validate_param(FunctionToolParam, declaration)


def _nested(inner: dict[str, Any]) -> ToolSpec:
    return ToolSpec(
        "t",
        "",
        {
            "type": "object",
            "properties": {"inner": inner},
            "required": ["inner"],
            "additionalProperties": False,
        },
    )


STRICT_OBJECT = {
    "type": "object",
    "properties": {"a": {"type": "string"}},
    "required": ["a"],
    "additionalProperties": False,
}


@pytest.mark.parametrize(
    ("spec", "strict"),
    [
        (_nested(STRICT_OBJECT), True),
        (_nested({"type": "array", "items": STRICT_OBJECT}), True),
        (_nested({"anyOf": [STRICT_OBJECT, {"type": "null"}]}), True),
        (_nested({**STRICT_OBJECT, "additionalProperties": True}), False),
        (_nested({**STRICT_OBJECT, "required": []}), False),
        (
            _nested({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}),
            False,
        ),
        (_nested({"type": "array", "items": {**STRICT_OBJECT, "required": []}}), False),
        (_nested({"oneOf": [{"type": "string"}, {"type": "integer"}]}), False),
        (ToolSpec("t", "", {"type": "string"}), False),
        (
            ToolSpec("t", "", {"type": "object", "properties": {}, "additionalProperties": False}),
            True,
        ),
    ],
)
def test_strict_mode_qualification(spec: ToolSpec, strict: bool) -> None:
    (declaration,) = ADAPTER.tool_declarations([spec])
    assert declaration["strict"] is strict


def test_next_request_goes_through_the_sdk_verbatim(server: LoopbackServer) -> None:
    tools = ADAPTER.tool_declarations([WEATHER, TRAIN, BOOK])
    extended = ADAPTER.extend_conversation([USER], parallel_event(), mixed_results())
    final = load_json(DIR, "final_text.json")
    server.queue(Reply.json(final))
    with sdk_client(server) as client:
        reply = client.responses.create(
            model="gpt-5",
            input=extended,  # type: ignore[arg-type]
            tools=tools,
        )  # type: ignore[arg-type]
    body = server.received[0].json()
    assert body["input"] == extended
    assert body["tools"] == tools
    assert isinstance(reply, Response)
    assert reply.output_text == "The IC 2 is on time and Zürich will be sunny, 21 °C."


def test_results_alone_go_through_the_sdk_with_previous_response_id(server: LoopbackServer) -> None:
    event = parallel_event()
    items = ADAPTER.append_results(event, mixed_results())
    server.queue(Reply.json(load_json(DIR, "final_text.json")))
    with sdk_client(server) as client:
        client.responses.create(
            model="gpt-5",
            input=items,  # type: ignore[arg-type]
            previous_response_id=event.meta.response_id,
        )
    body = server.received[0].json()
    assert body["input"] == items
    assert body["previous_response_id"] == "resp_par01"
