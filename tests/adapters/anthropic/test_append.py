"""append_results / extend_conversation, validated as SDK params and sent through the SDK."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from anthropic.types import Message, MessageParam
from pydantic import ValidationError

from adapters.anthropic_messages import ADAPTER
from adapters.events import AdapterError, NormalizedCall, ToolRequestEvent, ToolResult, ToolSpec
from adapters.results import result_text
from tests.adapters.anthropic.support import (
    API_VERSION,
    MODEL,
    as_messages,
    as_tools,
    feed_all,
    load_json,
    sdk_client,
    sdk_stream_fixture,
    validate,
)
from tests.adapters.loopback import LoopbackServer, Reply

USER_TURN: dict[str, Any] = {"role": "user", "content": "Book me a seat from Geneva to Zurich."}

SEARCH = ToolResult(
    "toolu_01Search7Xq",
    "search_trains",
    "SUCCEEDED",
    output_json='{"trains":[{"id":"IC 711","departs":"08:02"}]}',
)
BOOK = ToolResult(
    "toolu_02BookSeat8Yr",
    "book_seat",
    "REJECTED",
    error_code="policy_denied",
    error_message="seat bookings above 50 CHF need approval",
)
CHARGE = ToolResult(
    "toolu_03Charge9Zs",
    "charge_card",
    "FAILED",
    error_code="tool_error",
    error_message="card declined",
)


def _three_calls() -> ToolRequestEvent:
    event = ADAPTER.read_complete_event(load_json("message_three_calls.json"))
    assert isinstance(event, ToolRequestEvent)
    return event


def test_mixed_results_are_matched_by_id_in_the_model_order() -> None:
    event = _three_calls()
    assistant, user = ADAPTER.append_results(event, [CHARGE, SEARCH, BOOK])
    assert assistant == {"role": "assistant", "content": event.original["content"]}
    assert user == {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "toolu_01Search7Xq",
                "content": SEARCH.output_json,
            },
            {
                "type": "tool_result",
                "tool_use_id": "toolu_02BookSeat8Yr",
                "content": result_text(BOOK),
                "is_error": True,
            },
            {
                "type": "tool_result",
                "tool_use_id": "toolu_03Charge9Zs",
                "content": result_text(CHARGE),
                "is_error": True,
            },
        ],
    }
    assert json.loads(user["content"][1]["content"])["error"]["code"] == "policy_denied"
    for item in (assistant, user):
        validate(MessageParam, item)


def test_param_validation_is_not_vacuous() -> None:
    # content lists are lazily validated Iterables in the SDK params; `validate` drains them
    with pytest.raises(ValidationError):
        validate(
            MessageParam,
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": 17, "content": "x"}],
            },
        )


def test_thinking_blocks_are_echoed_exactly() -> None:
    event = ADAPTER.read_complete_event(load_json("message_parallel_thinking.json"))
    assert isinstance(event, ToolRequestEvent)
    results = [ToolResult(call.call_id, call.name, "SUCCEEDED", "{}") for call in event.calls]
    assistant, _ = ADAPTER.append_results(event, results)
    original = load_json("message_parallel_thinking.json")["content"]
    assert assistant["content"][:2] == original[:2]  # thinking + redacted_thinking, signature kept
    assert assistant["content"] == original


def test_streamed_and_non_streamed_turns_append_the_same(server: LoopbackServer) -> None:
    streamed = feed_all(sdk_stream_fixture(server, "stream_parallel_interleaved.sse"))
    whole = ADAPTER.read_complete_event(load_json("message_parallel_thinking.json"))
    assert isinstance(streamed, ToolRequestEvent) and isinstance(whole, ToolRequestEvent)
    results = [ToolResult(call.call_id, call.name, "SUCCEEDED", "{}") for call in whole.calls]
    assert ADAPTER.append_results(streamed, results) == ADAPTER.append_results(whole, results)


def test_null_fields_are_left_out_of_the_resent_blocks() -> None:
    response = load_json("message_tool_use.json")
    response["content"][0]["citations"] = None
    response["content"][1]["caller"] = None
    event = ADAPTER.read_complete_event(response)
    assert isinstance(event, ToolRequestEvent)
    assistant, _ = ADAPTER.append_results(
        event,
        [ToolResult("toolu_01NRLabsLyVHZPKxbKvkfSMn", "get_weather", "SUCCEEDED", '{"c":18}')],
    )
    assert "citations" not in assistant["content"][0] and "caller" not in assistant["content"][1]
    validate(MessageParam, assistant)


def test_blank_text_blocks_are_not_resent() -> None:
    response = load_json("message_tool_use.json")
    response["content"][0]["text"] = " \n"
    event = ADAPTER.read_complete_event(response)
    assert isinstance(event, ToolRequestEvent)
    assistant, _ = ADAPTER.append_results(
        event,
        [ToolResult("toolu_01NRLabsLyVHZPKxbKvkfSMn", "get_weather", "SUCCEEDED", '{"c":18}')],
    )
    assert [block["type"] for block in assistant["content"]] == ["tool_use"]
    empty_final = ADAPTER.read_complete_event(
        load_json("message_basic.json") | {"content": [{"type": "text", "text": ""}]}
    )
    assert ADAPTER.extend_conversation([USER_TURN], empty_final, []) == [USER_TURN]


def test_missing_result() -> None:
    with pytest.raises(AdapterError, match="toolu_02BookSeat8Yr") as raised:
        ADAPTER.append_results(_three_calls(), [SEARCH, CHARGE])
    assert raised.value.code == "missing_result"


def test_two_results_for_one_call() -> None:
    with pytest.raises(AdapterError) as raised:
        ADAPTER.append_results(_three_calls(), [SEARCH, BOOK, CHARGE, SEARCH])
    assert raised.value.code == "duplicate_call_id"


def test_results_for_other_calls_are_not_sent() -> None:
    stray = ToolResult("toolu_99Other", "search_trains", "SUCCEEDED", "{}")
    _, user = ADAPTER.append_results(_three_calls(), [stray, SEARCH, BOOK, CHARGE])
    assert [block["tool_use_id"] for block in user["content"]] == [
        "toolu_01Search7Xq",
        "toolu_02BookSeat8Yr",
        "toolu_03Charge9Zs",
    ]


def test_event_without_original_content_is_rebuilt_from_its_calls() -> None:
    whole = _three_calls()
    event = ToolRequestEvent(
        whole.meta,
        (
            NormalizedCall("toolu_A", "search_trains", '{"to":"Bern"}', {"to": "Bern"}),
            NormalizedCall("toolu_B", "book_seat", '{"seat":', None),
        ),
        text="Checking.",
    )
    assistant, user = ADAPTER.append_results(
        event,
        [
            ToolResult("toolu_B", "book_seat", "REJECTED", error_code="incomplete_arguments"),
            ToolResult("toolu_A", "search_trains", "SUCCEEDED", "[]"),
        ],
    )
    assert assistant["content"] == [
        {"type": "text", "text": "Checking."},
        {"type": "tool_use", "id": "toolu_A", "name": "search_trains", "input": {"to": "Bern"}},
        {"type": "tool_use", "id": "toolu_B", "name": "book_seat", "input": {}},
    ]
    assert [b["tool_use_id"] for b in user["content"]] == ["toolu_A", "toolu_B"]
    validate(MessageParam, assistant)


def test_extend_conversation_after_each_kind_of_turn() -> None:
    conversation = [USER_TURN]
    before = copy.deepcopy(conversation)
    tool_turn = _three_calls()
    extended = ADAPTER.extend_conversation(conversation, tool_turn, [BOOK, CHARGE, SEARCH])
    assert extended == [USER_TURN, *ADAPTER.append_results(tool_turn, [SEARCH, BOOK, CHARGE])]
    final = ADAPTER.read_complete_event(load_json("message_basic.json"))
    assert ADAPTER.extend_conversation(conversation, final, []) == [
        USER_TURN,
        {"role": "assistant", "content": [{"type": "text", "text": "Hello there!"}]},
    ]
    paused = ADAPTER.read_complete_event(load_json("message_pause_turn.json"))
    resent = ADAPTER.extend_conversation(conversation, paused, [])
    assert resent[-1]["content"][1:] == load_json("message_pause_turn.json")["content"][1:]
    for name in (
        "message_refusal.json",
        "message_max_tokens_tool_use.json",
        "error_overloaded.json",
    ):
        event = ADAPTER.read_complete_event(load_json(name))
        assert ADAPTER.extend_conversation(conversation, event, []) == conversation, name
    assert conversation == before
    for item in [*extended, *resent]:
        validate(MessageParam, item)


def test_next_request_through_the_sdk(server: LoopbackServer) -> None:
    event = _three_calls()
    conversation = ADAPTER.extend_conversation([USER_TURN], event, [BOOK, CHARGE, SEARCH])
    tools = ADAPTER.tool_declarations(
        [
            ToolSpec(
                "search_trains",
                "Find trains.",
                {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["from", "to", "date"],
                    "properties": {
                        "from": {"type": "string"},
                        "to": {"type": "string"},
                        "date": {"type": "string", "format": "date"},
                    },
                },
            ),
            ToolSpec(
                "book_seat",
                "Hold a seat.",
                {
                    "type": "object",
                    "properties": {"train": {"type": "string"}, "seat": {"type": "string"}},
                },
            ),
        ]
    )
    server.queue(Reply.json(load_json("message_basic.json")))
    with sdk_client(server) as client:
        reply = client.messages.create(
            model=MODEL, max_tokens=1024, messages=as_messages(conversation), tools=as_tools(tools)
        )
    assert isinstance(reply, Message) and reply.content[0].type == "text"
    (received,) = server.received
    assert (received.method, received.path) == ("POST", "/v1/messages")
    assert received.headers["anthropic-version"] == API_VERSION
    body = received.json()
    assert body["messages"] == conversation
    assert body["tools"] == tools
    assert (
        body["messages"][1]["content"][0]["signature"]
        == (load_json("message_three_calls.json")["content"][0]["signature"])
    )


def test_paused_turn_resent_through_the_sdk(server: LoopbackServer) -> None:
    paused = ADAPTER.read_complete_event(load_json("message_pause_turn.json"))
    conversation = ADAPTER.extend_conversation([USER_TURN], paused, [])
    server.queue(Reply.json(load_json("message_basic.json")))
    with sdk_client(server) as client:
        client.messages.create(model=MODEL, max_tokens=1024, messages=as_messages(conversation))
    assert server.received[0].json()["messages"] == conversation
