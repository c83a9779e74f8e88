"""Reconcile a write whose outcome is unknown (docs/tools.md).

Wait `after_s`, look the write up at the target: found → SUCCEEDED with what the look-up
answered (nothing sent, attempts 0); not applied → if the target enforces the idempotency key,
send the write once more with the same key (its result stands), otherwise FAILED
`tool_not_applied`; anything else → still UNKNOWN. Without a look-up the call stays UNKNOWN
until an operator resolves it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

from gateway.errors import CallCode
from gateway.executors.base import ExecutionContext, ExecutionResult
from gateway.executors.results import failed, noted, succeeded, unknown


@dataclass(frozen=True)
class Found:
    output_json: str
    note: str = ""  # set when the look-up answered something other than JSON


@dataclass(frozen=True)
class Absent:
    pass


@dataclass(frozen=True)
class Inconclusive:
    message: str


LookupResult = Found | Absent | Inconclusive
Resend = Callable[[dict[str, Any], ExecutionContext], Awaitable[ExecutionResult]]


class Lookup(Protocol):
    async def lookup(self, args: dict[str, Any], ctx: ExecutionContext) -> LookupResult: ...


class Reconciler:
    def __init__(
        self, lookup: Lookup | None, *, after_s: float = 0.0, resend: Resend | None = None
    ) -> None:
        """resend is given only when the target enforces the idempotency key."""
        self._lookup = lookup
        self._after_s = after_s
        self._resend = resend

    async def reconcile(self, args: dict[str, Any], ctx: ExecutionContext) -> ExecutionResult:
        if self._lookup is None:
            return unknown(
                "no reconcile look-up is configured; an operator must resolve the call", attempts=0
            )
        if self._after_s > 0:
            await asyncio.sleep(self._after_s)
        found = await self._lookup.lookup(args, ctx)
        if isinstance(found, Found):
            if found.note:
                return noted(found.output_json, found.note, attempts=0)
            return succeeded(found.output_json, attempts=0)
        if isinstance(found, Inconclusive):
            return unknown(f"outcome still unknown: {found.message}", attempts=0)
        if self._resend is not None:
            return await self._resend(args, ctx)
        return failed(
            CallCode.TOOL_NOT_APPLIED,
            f"the target has no record of idempotency key {ctx.idempotency_key!r}; "
            "the write did not apply",
            attempts=0,
        )
