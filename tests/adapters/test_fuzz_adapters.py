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
        results = [ToolResult(call_id=cid, name=c.name, status=status, output_json='{"ok":1}',
                              error_code="" if status == "SUCCEEDED" else "tool_error",
                              error_message="m") for cid, c in zip(ids, event.calls,
                                                                   strict=True)]
        json.dumps(adapter.append_results(event, results))
    json.dumps(adapter.extend_conversation([{"role": "user", "content": "hi"}], event,
                                           results))


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
