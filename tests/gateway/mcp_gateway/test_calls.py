"""What makes two MCP calls the same call, the bounded memory of open calls, and the run a
request belongs to."""

from __future__ import annotations

import pytest

from gateway.arguments import ArgumentsError
from gateway.errors import RequestError
from gateway.mcp_gateway.calls import RUN_KEY_META, McpCall, OpenCalls, run_id_for


def test_the_same_arguments_in_any_order_are_the_same_call() -> None:
    one = McpCall.of("reserve_seat", {"seats": 1, "event_id": "ws-acme-1", "x": [1.0, "é"]})
    two = McpCall.of("reserve_seat", {"x": [1, "é"], "event_id": "ws-acme-1", "seats": 1})
    assert one.arguments_json == two.arguments_json and one.key == two.key
    assert McpCall.of("reserve_seat", {"seats": 2, "event_id": "ws-acme-1"}).key != one.key
    assert McpCall.of("other", {"seats": 1}).key != McpCall.of("reserve_seat", {"seats": 1}).key
    assert McpCall.of("list_events", None).arguments_json == "{}"


@pytest.mark.parametrize("value", [2**60, float("nan"), float("inf")])
def test_arguments_canonical_json_cannot_hold_are_refused(value: float) -> None:
    with pytest.raises(ArgumentsError, match="canonical JSON"):
        McpCall.of("reserve_seat", {"seats": value})


def test_open_calls_forget_the_least_recently_used_runs() -> None:
    open_calls = OpenCalls(max_runs=2)
    key = ("t", "h")
    for run in ("a", "b", "c"):
        open_calls.remember(run, key, f"turn-{run}")
    assert open_calls.turn("a", key) is None
    assert (open_calls.turn("b", key), open_calls.turn("c", key)) == ("turn-b", "turn-c")
    open_calls.forget("c", key)
    assert open_calls.turn("c", key) is None


def test_the_run_is_the_sessions_else_the_key_the_request_names() -> None:
    assert run_id_for("abc123", {RUN_KEY_META: "ignored"}) == "mcp-abc123"
    assert run_id_for(None, {RUN_KEY_META: "task-7"}) == "mcp-task-7"
    for meta in (
        None,
        {},
        {RUN_KEY_META: ""},
        {RUN_KEY_META: 7},
        {RUN_KEY_META: "x" * 101},
        {RUN_KEY_META: "bad\nkey"},
    ):
        with pytest.raises(RequestError, match=RUN_KEY_META):
            run_id_for(None, meta)
