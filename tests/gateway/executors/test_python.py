from __future__ import annotations

import asyncio
import json

from gateway.executors.base import ExecutionContext
from gateway.model import CallStatus
from gateway.tools import Tool
from tests.gateway.executors import sample_tools
from tests.support.executor_tools import ToolFactory

MOD = "tests.gateway.executors.sample_tools"


def py(function: str, timeout_s: float = 2.0) -> dict[str, object]:
    return {"type": "python", "function": f"{MOD}:{function}", "timeout_s": timeout_s}


async def test_sync_function_runs_in_a_worker_thread_with_a_copy(
    make_tool: ToolFactory, ctx: ExecutionContext
) -> None:
    tool = make_tool(executor=py("echo"))
    args = {"seat": 3}
    result = await tool.run(args, ctx)
    assert result.status is CallStatus.SUCCEEDED
    assert result.attempts == 1 and result.error_code == ""
    assert json.loads(result.output_json) == {
        "args": {"seat": 3, "mutated": True},
        "call_id": "call-1",
        "key": "run-1:call-1",
        "subject": "alice",
        "in_worker_thread": True,
    }
    assert args == {"seat": 3}


async def test_async_function_is_awaited(make_tool: ToolFactory, ctx: ExecutionContext) -> None:
    result = await make_tool(executor=py("async_echo")).run({"a": [1, "x"]}, ctx)
    assert result.status is CallStatus.SUCCEEDED
    assert json.loads(result.output_json) == {"args": {"a": [1, "x"]}, "run_id": "run-1"}


async def test_raising_is_failed_tool_error_with_the_message(
    make_tool: ToolFactory, ctx: ExecutionContext
) -> None:
    for effect, function, message in [
        ("write", "boom", "no seats left"),
        ("read", "async_boom", "backend down"),
    ]:
        result = await make_tool(effect=effect, executor=py(function)).run({}, ctx)
        assert result.status is CallStatus.FAILED
        assert (result.error_code, result.error_message) == ("tool_error", message)
        assert result.attempts == 1


async def test_async_timeout_read_is_failed_write_is_unknown(
    make_tool: ToolFactory, ctx: ExecutionContext
) -> None:
    read = await make_tool(executor=py("hang", 0.1)).run({}, ctx)
    assert (read.status, read.error_code, read.attempts) == (CallStatus.FAILED, "tool_timeout", 1)
    write = await make_tool(effect="write", executor=py("hang", 0.1)).run({}, ctx)
    assert (write.status, write.error_code, write.attempts) == (
        CallStatus.UNKNOWN,
        "outcome_unknown",
        1,
    )


async def test_sync_timeout_does_not_wait_for_the_thread(
    make_tool: ToolFactory, ctx: ExecutionContext
) -> None:
    tool = make_tool(effect="write", executor=py("blocking", 0.1))
    result = await asyncio.wait_for(tool.run({}, ctx), timeout=5)
    assert result.status is CallStatus.UNKNOWN
    assert "0.1 s" in result.error_message
    sample_tools.RELEASE.set()


async def test_non_json_return_read_fails_write_is_noted(
    make_tool: ToolFactory, ctx: ExecutionContext
) -> None:
    read = await make_tool(executor=py("not_json")).run({}, ctx)
    assert (read.status, read.error_code) == (CallStatus.FAILED, "output_invalid")
    write = await make_tool(effect="write", executor=py("not_json")).run({}, ctx)
    assert (write.status, write.error_code) == (CallStatus.SUCCEEDED, "output_invalid")
    assert "not JSON-serializable" in write.error_message
    assert json.loads(write.output_json) == "{1, 2}"


async def test_read_retries_count_every_call(make_tool: ToolFactory, ctx: ExecutionContext) -> None:
    tool = make_tool(executor=py("flaky"), retry={"max_attempts": 3, "backoff_s": 0})
    result = await tool.run({"fail_times": 2}, ctx)
    assert result.status is CallStatus.SUCCEEDED
    assert json.loads(result.output_json) == {"attempt": 3}
    assert result.attempts == 3


async def test_read_retries_give_up_after_max_attempts(
    make_tool: ToolFactory, ctx: ExecutionContext
) -> None:
    tool = make_tool(executor=py("flaky"), retry={"max_attempts": 2, "backoff_s": 0})
    result = await tool.run({"fail_times": 5}, ctx)
    assert (result.status, result.error_code, result.attempts) == (
        CallStatus.FAILED,
        "tool_error",
        2,
    )
    assert result.error_message == "attempt 2 failed"


async def test_failed_write_is_not_retried(make_tool: ToolFactory, ctx: ExecutionContext) -> None:
    tool = make_tool(
        effect="write",
        executor=py("flaky"),
        idempotency={"enforced_by_target": True},
        retry={"max_attempts": 3, "backoff_s": 0},
    )
    result = await tool.run({"fail_times": 1}, ctx)
    assert (result.status, result.attempts) == (CallStatus.FAILED, 1)
    assert sample_tools.CALLS == ["call-1"]


async def test_python_reconcile_found_absent_and_broken(
    make_tool: ToolFactory, ctx: ExecutionContext
) -> None:
    def write(lookup: str, enforced: bool) -> Tool:
        return make_tool(
            effect="write",
            executor=py("count_calls"),
            idempotency={"enforced_by_target": enforced},
            reconcile={"type": "python", "function": f"{MOD}:{lookup}", "after_s": 0},
        )

    found = await write("lookup_found", False).reconcile({}, ctx)
    assert (found.status, found.attempts) == (CallStatus.SUCCEEDED, 0)
    assert json.loads(found.output_json) == {"booking": "B-1", "key": "run-1:call-1"}

    absent = await write("lookup_absent", False).reconcile({}, ctx)
    assert (absent.status, absent.error_code) == (CallStatus.FAILED, "tool_not_applied")
    assert sample_tools.CALLS == []

    resent = await write("lookup_absent", True).reconcile({}, ctx)
    assert (resent.status, resent.attempts) == (CallStatus.SUCCEEDED, 1)
    assert sample_tools.CALLS == ["call-1"]

    broken = await write("lookup_broken", True).reconcile({}, ctx)
    assert (broken.status, broken.error_code, broken.attempts) == (
        CallStatus.UNKNOWN,
        "outcome_unknown",
        0,
    )
    assert "database unavailable" in broken.error_message
    assert sample_tools.CALLS == ["call-1"]
