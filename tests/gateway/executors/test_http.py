"""The http executor against a real loopback target, rule by rule (docs/tools.md)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from gateway.executors.base import ExecutionContext
from gateway.model import CallStatus
from gateway.tools import Registry
from tests.gateway.executors.target import Reply, Target, refused_url
from tests.support.executor_tools import ToolFactory, manifest

FAST = 0.2  # seconds: every timeout in this file
NO_BACKOFF = {"max_attempts": 3, "backoff_s": 0}
ENFORCED = {"enforced_by_target": True}


def http(url: str, **extra: Any) -> dict[str, Any]:
    return {"type": "http", "url": url, "timeout_s": FAST, **extra}


# --------------------------------------------------------------------------- requests


async def test_posts_arguments_with_callgate_headers(
    make_tool: ToolFactory, ctx: ExecutionContext, target: Target
) -> None:
    target.script("/tool", Reply(200, {"ok": True}))
    tool = make_tool(
        executor=http(
            f"{target.url}/tool", headers={"X-Api-Key": "k1", "content-type": "text/plain"}
        )
    )  # the JSON body's type wins
    result = await tool.run({"city": "Zürich", "n": 2}, ctx)
    assert (result.status, result.output_json, result.attempts) == (
        CallStatus.SUCCEEDED,
        '{"ok": true}',
        1,
    )
    [seen] = target.seen
    assert (seen.method, seen.path, seen.body) == ("POST", "/tool", {"city": "Zürich", "n": 2})
    assert seen.headers["Idempotency-Key"] == "run-1:call-1"
    assert seen.headers["X-Callgate-Run-Id"] == "run-1"
    assert seen.headers["X-Callgate-Call-Id"] == "call-1"
    assert seen.headers["X-Callgate-Subject"] == "alice"
    assert seen.headers["X-Api-Key"] == "k1"
    assert [(k, v) for k, v in seen.headers.items() if k.lower() == "content-type"] == [
        ("Content-Type", "application/json")
    ]


async def test_one_pooled_client_per_registry(ctx: ExecutionContext, target: Target) -> None:
    target.script("/a", Reply(200, {"a": 1}))
    target.script("/b", Reply(200, {"b": 1}))
    registry = Registry.from_manifests(
        [
            manifest("a", executor=http(f"{target.url}/a")),
            manifest("b", executor=http(f"{target.url}/b")),
        ],
        env={},
    )
    try:
        for name in ("a", "b", "a"):
            tool = registry.get(name)
            assert tool is not None
            assert (await tool.run({}, ctx)).status is CallStatus.SUCCEEDED
    finally:
        await registry.aclose()
    assert len({seen.peer for seen in target.seen}) == 1  # one kept-alive connection


# --------------------------------------------------------------------------- reads


async def test_read_2xx_json_succeeds(
    make_tool: ToolFactory, ctx: ExecutionContext, target: Target
) -> None:
    target.script("/r", Reply(201, [1, {"x": None}]))
    result = await make_tool(executor=http(f"{target.url}/r")).run({}, ctx)
    assert result.status is CallStatus.SUCCEEDED
    assert json.loads(result.output_json) == [1, {"x": None}]


async def test_read_2xx_not_json_is_output_invalid(
    make_tool: ToolFactory, ctx: ExecutionContext, target: Target
) -> None:
    target.script("/r", Reply(200, "<html>oops</html>"))
    result = await make_tool(executor=http(f"{target.url}/r")).run({}, ctx)
    assert (result.status, result.error_code, result.attempts) == (
        CallStatus.FAILED,
        "output_invalid",
        1,
    )
    assert "<html>oops</html>" in result.error_message


@pytest.mark.parametrize("status", [400, 404, 422])
async def test_read_4xx_is_tool_error_and_not_retried(
    make_tool: ToolFactory, ctx: ExecutionContext, target: Target, status: int
) -> None:
    target.script("/r", Reply(status, {"error": "unknown train"}))
    tool = make_tool(executor=http(f"{target.url}/r"), retry=NO_BACKOFF)
    result = await tool.run({}, ctx)
    assert (result.status, result.error_code, result.attempts) == (
        CallStatus.FAILED,
        "tool_error",
        1,
    )
    assert result.error_message == f'HTTP {status}: {{"error": "unknown train"}}'
    assert len(target.seen) == 1


async def test_read_5xx_is_retried_and_every_request_counted(
    make_tool: ToolFactory, ctx: ExecutionContext, target: Target
) -> None:
    target.script("/r", Reply(500, {"error": "down"}))
    tool = make_tool(executor=http(f"{target.url}/r"), retry=NO_BACKOFF)
    result = await tool.run({}, ctx)
    assert (result.status, result.error_code, result.attempts) == (
        CallStatus.FAILED,
        "tool_error",
        3,
    )
    assert "HTTP 500" in result.error_message
    assert len(target.seen) == 3


async def test_read_retry_can_succeed(
    make_tool: ToolFactory, ctx: ExecutionContext, target: Target
) -> None:
    target.script("/r", Reply(503), Reply(429), Reply(200, {"ok": 1}))
    tool = make_tool(executor=http(f"{target.url}/r"), retry=NO_BACKOFF)
    result = await tool.run({}, ctx)
    assert (result.status, result.attempts) == (CallStatus.SUCCEEDED, 3)
    assert {seen.headers["Idempotency-Key"] for seen in target.seen} == {"run-1:call-1"}


async def test_read_timeout_is_tool_timeout(
    make_tool: ToolFactory, ctx: ExecutionContext, target: Target
) -> None:
    target.script("/r", Reply(hold=True))
    result = await make_tool(executor=http(f"{target.url}/r")).run({}, ctx)
    assert (result.status, result.error_code, result.attempts) == (
        CallStatus.FAILED,
        "tool_timeout",
        1,
    )
    assert "0.2 s" in result.error_message


async def test_read_timeouts_are_retried(
    make_tool: ToolFactory, ctx: ExecutionContext, target: Target
) -> None:
    target.script("/r", Reply(hold=True), Reply(200, {"late": False}))
    tool = make_tool(executor=http(f"{target.url}/r"), retry=NO_BACKOFF)
    result = await tool.run({}, ctx)
    assert (result.status, result.attempts) == (CallStatus.SUCCEEDED, 2)


async def test_read_connection_lost_after_sending_is_tool_error(
    make_tool: ToolFactory, ctx: ExecutionContext, target: Target
) -> None:
    target.script("/r", Reply(drop=True))
    result = await make_tool(executor=http(f"{target.url}/r")).run({}, ctx)
    assert (result.status, result.error_code, result.attempts) == (
        CallStatus.FAILED,
        "tool_error",
        1,
    )


async def test_connection_refused_sends_nothing(
    make_tool: ToolFactory, ctx: ExecutionContext
) -> None:
    with refused_url() as url:
        for effect, retry in [("read", NO_BACKOFF), ("write", {"max_attempts": 1})]:
            tool = make_tool(effect=effect, executor=http(f"{url}/t"), retry=retry)
            result = await tool.run({}, ctx)
            assert (result.status, result.error_code, result.attempts) == (
                CallStatus.FAILED,
                "tool_error",
                0,
            )
            assert "nothing was sent" in result.error_message


async def test_read_output_schema_violation_fails(
    make_tool: ToolFactory, ctx: ExecutionContext, target: Target
) -> None:
    target.script("/r", Reply(200, {"status": "late"}))
    tool = make_tool(
        executor=http(f"{target.url}/r"),
        output_schema={
            "type": "object",
            "properties": {"status": {"enum": ["on_time", "delayed"]}},
        },
    )
    result = await tool.run({}, ctx)
    assert (result.status, result.error_code, result.output_json) == (
        CallStatus.FAILED,
        "output_invalid",
        "",
    )
    assert "/status: 'late' is not one of ['on_time', 'delayed']" in result.error_message


async def test_an_output_seen_before_is_judged_the_same_way_again(
    make_tool: ToolFactory, ctx: ExecutionContext, target: Target
) -> None:
    good, bad = Reply(200, {"status": "on_time"}), Reply(200, {"status": "late"})
    target.script("/r", good, bad, good, bad)
    tool = make_tool(
        executor=http(f"{target.url}/r"),
        output_schema={
            "type": "object",
            "properties": {"status": {"enum": ["on_time", "delayed"]}},
        },
    )
    results = [await tool.run({}, ctx) for _ in range(4)]
    assert [(r.status, r.error_code) for r in results] == [
        (CallStatus.SUCCEEDED, ""),
        (CallStatus.FAILED, "output_invalid"),
    ] * 2
    assert results[2].output_json == results[0].output_json == '{"status": "on_time"}'
    assert results[3].error_message == results[1].error_message


# --------------------------------------------------------------------------- writes


async def test_write_2xx_succeeds(
    make_tool: ToolFactory, ctx: ExecutionContext, target: Target
) -> None:
    target.script("/w", Reply(201, {"booking": "B-7"}))
    result = await make_tool(effect="write", executor=http(f"{target.url}/w")).run({}, ctx)
    assert (result.status, result.output_json, result.attempts) == (
        CallStatus.SUCCEEDED,
        '{"booking": "B-7"}',
        1,
    )


async def test_write_204_without_body_succeeds_with_null(
    make_tool: ToolFactory, ctx: ExecutionContext, target: Target
) -> None:
    target.script("/w", Reply(204))
    result = await make_tool(effect="write", executor=http(f"{target.url}/w")).run({}, ctx)
    assert (result.status, result.output_json, result.error_code) == (
        CallStatus.SUCCEEDED,
        "null",
        "",
    )


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
async def test_write_4xx_is_failed(
    make_tool: ToolFactory, ctx: ExecutionContext, target: Target, status: int
) -> None:
    target.script("/w", Reply(status, {"error": "no"}))
    result = await make_tool(effect="write", executor=http(f"{target.url}/w")).run({}, ctx)
    assert (result.status, result.error_code, result.attempts) == (
        CallStatus.FAILED,
        "tool_error",
        1,
    )
    assert result.error_message.startswith(f"HTTP {status}")


@pytest.mark.parametrize("status", [408, 409, 500, 502, 503])
async def test_write_408_409_5xx_is_unknown(
    make_tool: ToolFactory, ctx: ExecutionContext, target: Target, status: int
) -> None:
    target.script("/w", Reply(status, {"error": "hm"}))
    result = await make_tool(effect="write", executor=http(f"{target.url}/w")).run({}, ctx)
    assert (result.status, result.error_code, result.attempts) == (
        CallStatus.UNKNOWN,
        "outcome_unknown",
        1,
    )
    assert f"HTTP {status}" in result.error_message


@pytest.mark.parametrize("reply", [Reply(hold=True), Reply(drop=True)], ids=["timeout", "reset"])
async def test_write_timeout_or_reset_after_sending_is_unknown(
    make_tool: ToolFactory, ctx: ExecutionContext, target: Target, reply: Reply
) -> None:
    target.script("/w", reply)
    result = await make_tool(effect="write", executor=http(f"{target.url}/w")).run({}, ctx)
    assert (result.status, result.error_code, result.attempts) == (
        CallStatus.UNKNOWN,
        "outcome_unknown",
        1,
    )
    assert "the request was sent" in result.error_message


async def test_write_2xx_not_json_stays_succeeded_with_a_note(
    make_tool: ToolFactory, ctx: ExecutionContext, target: Target
) -> None:
    target.script("/w", Reply(200, "booked"))
    result = await make_tool(effect="write", executor=http(f"{target.url}/w")).run({}, ctx)
    assert (result.status, result.error_code) == (CallStatus.SUCCEEDED, "output_invalid")
    assert json.loads(result.output_json) == "booked"


async def test_write_output_schema_violation_is_noted_not_failed(
    make_tool: ToolFactory, ctx: ExecutionContext, target: Target
) -> None:
    target.script("/w", Reply(200, {"booking": 7}))
    tool = make_tool(
        effect="write",
        executor=http(f"{target.url}/w"),
        output_schema={"type": "object", "properties": {"booking": {"type": "string"}}},
    )
    result = await tool.run({}, ctx)
    assert (result.status, result.error_code, result.output_json) == (
        CallStatus.SUCCEEDED,
        "output_invalid",
        '{"booking": 7}',
    )
    assert "/booking: 7 is not of type 'string'" in result.error_message


async def test_write_is_not_retried_without_enforced_idempotency(
    make_tool: ToolFactory, ctx: ExecutionContext, target: Target
) -> None:
    target.script("/w", Reply(503))
    result = await make_tool(effect="write", executor=http(f"{target.url}/w")).run({}, ctx)
    assert (result.status, result.attempts) == (CallStatus.UNKNOWN, 1)
    assert len(target.seen) == 1


async def test_enforced_write_is_retried_with_the_same_key(
    make_tool: ToolFactory, ctx: ExecutionContext, target: Target
) -> None:
    target.script("/w", Reply(503), Reply(hold=False, drop=True), Reply(201, {"b": 1}))
    tool = make_tool(
        effect="write", executor=http(f"{target.url}/w"), idempotency=ENFORCED, retry=NO_BACKOFF
    )
    result = await tool.run({"seat": 1}, ctx)
    assert (result.status, result.attempts) == (CallStatus.SUCCEEDED, 3)
    assert [s.headers["Idempotency-Key"] for s in target.seen] == ["run-1:call-1"] * 3
    assert [s.body for s in target.seen] == [{"seat": 1}] * 3


async def test_enforced_write_that_stays_uncertain_is_unknown(
    make_tool: ToolFactory, ctx: ExecutionContext, target: Target
) -> None:
    target.script("/w", Reply(409))
    tool = make_tool(
        effect="write",
        executor=http(f"{target.url}/w"),
        idempotency=ENFORCED,
        retry={"max_attempts": 2, "backoff_s": 0},
    )
    result = await tool.run({}, ctx)
    assert (result.status, result.error_code, result.attempts) == (
        CallStatus.UNKNOWN,
        "outcome_unknown",
        2,
    )
