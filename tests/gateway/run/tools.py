"""In-process tools for the runner tests: each records what it was asked, in memory."""

from __future__ import annotations

from typing import Any

from gateway.executors.base import ExecutionContext

SENT: list[tuple[str, str]] = []  # (tool, idempotency key) of every execution
APPLIED: dict[str, dict[str, Any]] = {}  # idempotency key -> the write's output


def lookup_train(args: dict[str, Any], ctx: ExecutionContext) -> dict[str, Any]:
    SENT.append(("lookup_train", ctx.idempotency_key))
    return {"train": args["train"], "on_time": True}


def book(args: dict[str, Any], ctx: ExecutionContext) -> dict[str, Any]:
    SENT.append(("book", ctx.idempotency_key))
    if args.get("seat") == "broken":
        raise RuntimeError("the booking system refused")
    APPLIED[ctx.idempotency_key] = {"booked": args["seat"]}
    return APPLIED[ctx.idempotency_key]


def find_booking(args: dict[str, Any], ctx: ExecutionContext) -> dict[str, Any] | None:
    """The target's own record of a write, by idempotency key (None: never applied)."""
    return APPLIED.get(ctx.idempotency_key)


# `swap_tools` replaces the tool set of RELOADING (set by a test) while it runs, as a manifest
# reload landing in the middle of a call would.
RELOADING: list[Any] = []  # [LiveRegistry, the snapshot to install]


def swap_tools(args: dict[str, Any], ctx: ExecutionContext) -> dict[str, Any]:
    live, snapshot = RELOADING
    live.install(snapshot)
    return {"swapped": True}
