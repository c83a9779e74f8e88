"""How a tool runs, as the runner sees it (docs/tools.md).

An executor never raises for a tool's own failure: it answers an `ExecutionResult` whose status
is SUCCEEDED, FAILED or UNKNOWN, with a stable error code, and how many requests it actually
sent to the target (`attempts`, which becomes the call's execution_count increment).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Final, Protocol

from gateway.model import CallStatus, Identity

NO_HEADERS: Final[Mapping[str, str]] = MappingProxyType({})


@dataclass(frozen=True)
class ExecutionContext:
    run_id: str
    call_id: str
    idempotency_key: str  # "<run_id>:<call_id>"
    identity: Identity
    # the W3C trace context of the tool's span (`traceparent`, `tracestate`) and the caller's
    # `baggage`, when tracing
    trace_headers: Mapping[str, str] | None = None
    # the fingerprint of the tool's definition the call was decided under (`gateway.pins`);
    # when set, a tool whose definition is no longer that one sends nothing (`tool_changed`)
    tool_fingerprint: str = ""


@dataclass(frozen=True)
class ExecutionResult:
    status: CallStatus  # SUCCEEDED | FAILED | UNKNOWN
    output_json: str = ""
    error_code: str = ""  # CallCode value when not SUCCEEDED (or a noted output violation)
    error_message: str = ""
    attempts: int = 0  # requests actually sent to the target


class Executor(Protocol):
    async def execute(self, args: dict[str, Any], ctx: ExecutionContext) -> ExecutionResult: ...

    async def reconcile(self, args: dict[str, Any], ctx: ExecutionContext) -> ExecutionResult:
        """For a write found UNKNOWN: look it up (and maybe re-send with the same key).
        Answers UNKNOWN when it still cannot tell; never re-sends without an enforced key."""
        ...

    async def aclose(self) -> None: ...
