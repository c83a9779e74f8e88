"""Reconciling a write whose outcome is unknown, over a real loopback target (docs/tools.md)."""

from __future__ import annotations

import json
from typing import Any

from gateway.executors.base import ExecutionContext
from gateway.model import CallStatus
from gateway.tools import Tool
from tests.gateway.executors.target import Reply, Target, refused_url
from tests.support.executor_tools import ToolFactory

LOOKUP = "/bookings/by-key/{idempotency_key}?run={run_id}&call={call_id}"


def booking_tool(
    make_tool: ToolFactory, url: str, *, enforced: bool, lookup_url: str | None = None, **extra: Any
) -> Tool:
    return make_tool(
        name="reserve_seat",
        effect="write",
        executor={"type": "http", "url": f"{url}/book", "timeout_s": 0.2},
        idempotency={"enforced_by_target": enforced},
        reconcile={
            "type": "http",
            "url": lookup_url or f"{url}{LOOKUP}",
            "after_s": 0,
            "timeout_s": 0.2,
        },
        **extra,
    )


def posts(target: Target) -> list[str]:
    return [s.headers["Idempotency-Key"] for s in target.seen if s.method == "POST"]


async def test_lookup_200_is_succeeded_with_its_body(
    make_tool: ToolFactory, ctx: ExecutionContext, target: Target
) -> None:
    path = "/bookings/by-key/run-1%3Acall-1?run=run-1&call=call-1"
    target.script(path, Reply(200, {"booking": "B-9", "state": "confirmed"}))
    tool = booking_tool(make_tool, target.url, enforced=False)
    result = await tool.reconcile({"seat": 4}, ctx)
    assert (result.status, result.attempts, result.error_code) == (CallStatus.SUCCEEDED, 0, "")
    assert json.loads(result.output_json) == {"booking": "B-9", "state": "confirmed"}
    [seen] = target.seen
    assert (seen.method, seen.path) == ("GET", path)
    assert seen.headers["Idempotency-Key"] == "run-1:call-1"


async def test_write_lost_then_found_by_reconcile(
    make_tool: ToolFactory, ctx: ExecutionContext, target: Target
) -> None:
    """The booking applied but its response was lost: the look-up finds it, no second POST."""
    target.script("/book", Reply(drop=True))
    target.script(
        "/bookings/by-key/run-1%3Acall-1?run=run-1&call=call-1", Reply(200, {"booking": "B-1"})
    )
    tool = booking_tool(make_tool, target.url, enforced=True)
    first = await tool.run({"seat": 4}, ctx)
    assert (first.status, first.attempts) == (CallStatus.UNKNOWN, 1)
    settled = await tool.reconcile({"seat": 4}, ctx)
    assert (settled.status, settled.attempts) == (CallStatus.SUCCEEDED, 0)
    assert posts(target) == ["run-1:call-1"]


async def test_lookup_404_with_enforced_key_resends_once_with_the_same_key(
    make_tool: ToolFactory, ctx: ExecutionContext, target: Target
) -> None:
    target.script("/book", Reply(503), Reply(201, {"booking": "B-2"}))
    target.script("/bookings/by-key/run-1%3Acall-1?run=run-1&call=call-1", Reply(404))
    tool = booking_tool(make_tool, target.url, enforced=True)
    first = await tool.run({"seat": 4}, ctx)
    assert first.status is CallStatus.UNKNOWN
    settled = await tool.reconcile({"seat": 4}, ctx)
    assert (settled.status, settled.attempts) == (CallStatus.SUCCEEDED, 1)
    assert json.loads(settled.output_json) == {"booking": "B-2"}
    assert posts(target) == ["run-1:call-1", "run-1:call-1"]
    assert [s.body for s in target.seen if s.method == "POST"] == [{"seat": 4}] * 2


async def test_resent_write_result_stands(
    make_tool: ToolFactory, ctx: ExecutionContext, target: Target
) -> None:
    target.script("/book", Reply(422, {"error": "seat taken"}))
    target.script("/bookings/by-key/run-1%3Acall-1?run=run-1&call=call-1", Reply(404))
    tool = booking_tool(
        make_tool, target.url, enforced=True, retry={"max_attempts": 3, "backoff_s": 0}
    )
    settled = await tool.reconcile({}, ctx)
    assert (settled.status, settled.error_code, settled.attempts) == (
        CallStatus.FAILED,
        "tool_error",
        1,
    )
    assert len(posts(target)) == 1  # sent once, not per retry.max_attempts


async def test_lookup_404_without_enforced_key_is_not_applied(
    make_tool: ToolFactory, ctx: ExecutionContext, target: Target
) -> None:
    target.script("/bookings/by-key/run-1%3Acall-1?run=run-1&call=call-1", Reply(404))
    tool = booking_tool(make_tool, target.url, enforced=False)
    settled = await tool.reconcile({}, ctx)
    assert (settled.status, settled.error_code, settled.attempts) == (
        CallStatus.FAILED,
        "tool_not_applied",
        0,
    )
    assert posts(target) == []


async def test_lookup_other_answers_stay_unknown(
    make_tool: ToolFactory, ctx: ExecutionContext, target: Target
) -> None:
    path = "/bookings/by-key/run-1%3Acall-1?run=run-1&call=call-1"
    tool = booking_tool(make_tool, target.url, enforced=True)
    for reply in (Reply(500, {"error": "db"}), Reply(202), Reply(hold=True)):
        target.script(path, reply)
        settled = await tool.reconcile({}, ctx)
        assert (settled.status, settled.error_code, settled.attempts) == (
            CallStatus.UNKNOWN,
            "outcome_unknown",
            0,
        )
    assert posts(target) == []


async def test_lookup_connection_refused_stays_unknown(
    make_tool: ToolFactory, ctx: ExecutionContext, target: Target
) -> None:
    with refused_url() as url:
        tool = booking_tool(
            make_tool, target.url, enforced=True, lookup_url=f"{url}/lookup/{{idempotency_key}}"
        )
        settled = await tool.reconcile({}, ctx)
    assert (settled.status, settled.attempts) == (CallStatus.UNKNOWN, 0)
    assert "look-up failed" in settled.error_message


async def test_no_reconcile_configured_stays_unknown(
    make_tool: ToolFactory, ctx: ExecutionContext, target: Target
) -> None:
    tool = make_tool(
        effect="write",
        executor={"type": "http", "url": f"{target.url}/book"},
        idempotency={"enforced_by_target": True},
    )
    settled = await tool.reconcile({}, ctx)
    assert (settled.status, settled.error_code, settled.attempts) == (
        CallStatus.UNKNOWN,
        "outcome_unknown",
        0,
    )
    assert target.seen == []


async def test_reconciled_output_is_checked_against_output_schema(
    make_tool: ToolFactory, ctx: ExecutionContext, target: Target
) -> None:
    target.script(
        "/bookings/by-key/run-1%3Acall-1?run=run-1&call=call-1", Reply(200, {"booking": 1})
    )
    tool = booking_tool(
        make_tool,
        target.url,
        enforced=False,
        output_schema={
            "type": "object",
            "required": ["booking"],
            "properties": {"booking": {"type": "string"}},
        },
    )
    settled = await tool.reconcile({}, ctx)
    assert (settled.status, settled.error_code) == (CallStatus.SUCCEEDED, "output_invalid")
