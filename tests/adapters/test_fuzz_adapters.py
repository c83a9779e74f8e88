"""Every adapter input error is an AdapterError, for mutated responses and streams.

Starting from the recorded fixtures, Hypothesis replaces, deletes and shuffles parts of
responses and stream events; reading (feed, finish), then shaping the next request from what
was read, may fail only with AdapterError (which the gateway answers `malformed_response`).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from adapters import PROVIDERS, AdapterError, get_adapter
from adapters.base import ProviderAdapter
from adapters.events import ProviderEvent, ToolRequestEvent, ToolResult
from tests.support.fuzzing import complete_responses, mutated, mutated_stream, streams

STATUSES = ["SUCCEEDED", "REJECTED", "FAILED", "UNKNOWN", "NOT_RUN"]


def shape_next_request(adapter: ProviderAdapter, event: ProviderEvent, status: str) -> None:
    """What the gateway does with a read event: results for every call ID, then the items to
    append and the whole conversation, all written as JSON."""
    results: list[ToolResult] = []
    if isinstance(event, ToolRequestEvent):
        ids = [c.call_id or f"turn#{i}" for i, c in enumerate(event.calls)]
        if len(set(ids)) != len(ids):
            return  # the gateway refuses the turn (duplicate_call_id) before anything else
        results = [
            ToolResult(
                call_id=cid,
                name=c.name,
                status=status,
                output_json='{"ok":1}',
                error_code="" if status == "SUCCEEDED" else "tool_error",
                error_message="m",
            )
            for cid, c in zip(ids, event.calls, strict=True)
        ]
        json.dumps(adapter.append_results(event, results))
    json.dumps(adapter.extend_conversation([{"role": "user", "content": "hi"}], event, results))


def read_complete(adapter: ProviderAdapter, body: Any, status: str) -> None:
    try:
        event = adapter.read_complete_event(body)
    except AdapterError:
        return
    try:
        shape_next_request(adapter, event, status)
    except AdapterError:
        pass


def read_stream(adapter: ProviderAdapter, events: list[Any], status: str) -> None:
    assembler = adapter.new_stream_assembler()
    try:
        for event in events:
            if isinstance(event, dict):
                assembler.feed(event)
        final = assembler.finish()
    except AdapterError:
        return
    try:
        shape_next_request(adapter, final, status)
    except AdapterError:
        pass


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
@given(data=st.data(), status=st.sampled_from(STATUSES))
def test_mutated_complete_responses(provider: str, data: st.DataObject, status: str) -> None:
    base = data.draw(st.sampled_from(complete_responses(provider)))
    read_complete(get_adapter(provider), data.draw(mutated(base)), status)


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
@given(data=st.data(), status=st.sampled_from(STATUSES))
def test_mutated_streams(provider: str, data: st.DataObject, status: str) -> None:
    base = data.draw(st.sampled_from(streams(provider)))
    read_stream(get_adapter(provider), data.draw(mutated_stream(base)), status)


# Inputs the fuzzing found, kept as named cases (each raised TypeError or AttributeError).
FOUND: list[tuple[str, list[dict[str, Any]]]] = [
    (
        "openai.responses",
        [
            {
                "type": "response.output_item.added",
                "output_index": 0,
                "item": {"type": "function_call", "id": "fc", "call_id": {}, "arguments": ""},
            },
            {
                "type": "response.output_item.done",
                "output_index": 0,
                "item": {"type": "function_call", "id": "fc", "call_id": {}, "arguments": ""},
            },
            {
                "type": "response.completed",
                "response": {
                    "id": "r",
                    "status": "completed",
                    "output": [
                        {"type": "function_call", "call_id": "x", "name": "n", "arguments": "{}"}
                    ],
                },
            },
        ],
    ),
    (
        "openai.chat_completions",
        [{"id": "c", "choices": [{"index": 0, "delta": {"tool_calls": True}}]}],
    ),
    (
        "openai.chat_completions",
        [
            {
                "id": "c",
                "choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": 5}]}}],
            }
        ],
    ),
    (
        "anthropic.messages",
        [
            {
                "type": "message_start",
                "message": {
                    "id": "m",
                    "type": "message",
                    "role": "assistant",
                    "model": "x",
                    "content": [],
                    "usage": None,
                },
            },
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn"},
                "usage": {"output_tokens": 1},
            },
            {"type": "message_stop"},
        ],
    ),
    (
        "anthropic.messages",
        [
            {
                "type": "message_start",
                "message": {
                    "id": "m",
                    "type": "message",
                    "role": "assistant",
                    "model": "x",
                    "content": [],
                },
            },
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": 5},
            },
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": "x"},
            },
        ],
    ),
]


@pytest.mark.parametrize("provider, events", FOUND)
def test_inputs_found_by_fuzzing(provider: str, events: list[dict[str, Any]]) -> None:
    read_stream(get_adapter(provider), events, "SUCCEEDED")
