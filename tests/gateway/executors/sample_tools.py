"""Python tool functions the executor and registry tests name as `module:function`."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from gateway.executors.base import ExecutionContext

RELEASE = threading.Event()  # set by a test to let `blocking` return
CALLS: list[str] = []  # call IDs seen by `flaky` and `count_calls`
NOT_CALLABLE = 42


def echo(args: dict[str, Any], ctx: ExecutionContext) -> dict[str, Any]:
    args["mutated"] = True  # the executor hands over a private copy
    return {
        "args": args,
        "call_id": ctx.call_id,
        "key": ctx.idempotency_key,
        "subject": ctx.identity.subject,
        "in_worker_thread": threading.current_thread() is not threading.main_thread(),
    }


async def async_echo(args: dict[str, Any], ctx: ExecutionContext) -> dict[str, Any]:
    await asyncio.sleep(0)
    return {"args": args, "run_id": ctx.run_id}


def boom(args: dict[str, Any], ctx: ExecutionContext) -> None:
    raise ValueError("no seats left")


async def async_boom(args: dict[str, Any], ctx: ExecutionContext) -> None:
    raise RuntimeError("backend down")


async def hang(args: dict[str, Any], ctx: ExecutionContext) -> None:
    await asyncio.Event().wait()


def blocking(args: dict[str, Any], ctx: ExecutionContext) -> str:
    RELEASE.wait(10)
    return "released"


def not_json(args: dict[str, Any], ctx: ExecutionContext) -> Any:
    return {1, 2}


def count_calls(args: dict[str, Any], ctx: ExecutionContext) -> dict[str, int]:
    CALLS.append(ctx.call_id)
    return {"calls": CALLS.count(ctx.call_id)}


def flaky(args: dict[str, Any], ctx: ExecutionContext) -> dict[str, int]:
    """Fails until it has been called args["fail_times"] times for this call ID."""
    CALLS.append(ctx.call_id)
    seen = CALLS.count(ctx.call_id)
    if seen <= args["fail_times"]:
        raise ConnectionError(f"attempt {seen} failed")
    return {"attempt": seen}


def lookup_found(args: dict[str, Any], ctx: ExecutionContext) -> dict[str, str]:
    return {"booking": "B-1", "key": ctx.idempotency_key}


def lookup_absent(args: dict[str, Any], ctx: ExecutionContext) -> None:
    return None


def lookup_broken(args: dict[str, Any], ctx: ExecutionContext) -> None:
    raise OSError("database unavailable")
