"""Small pieces shared by the executors: result constructors, JSON checks, the retry loop."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any

from gateway.errors import CallCode
from gateway.executors.base import ExecutionResult
from gateway.model import CallStatus

EXCERPT_CHARS = 200
KEPT_TEXT_CHARS = 4096


@dataclass(frozen=True)
class Attempt:
    """One try at the target: its result (attempts 0 or 1) and whether another try may help."""

    result: ExecutionResult
    retryable: bool = False


def succeeded(output_json: str, attempts: int = 1) -> ExecutionResult:
    return ExecutionResult(CallStatus.SUCCEEDED, output_json=output_json, attempts=attempts)


def failed(code: CallCode, message: str, attempts: int = 1) -> ExecutionResult:
    return ExecutionResult(CallStatus.FAILED, error_code=code.value, error_message=message,
                           attempts=attempts)


def unknown(message: str, attempts: int = 1) -> ExecutionResult:
    return ExecutionResult(CallStatus.UNKNOWN, error_code=CallCode.OUTCOME_UNKNOWN.value,
                           error_message=message, attempts=attempts)


def noted(output_json: str, message: str, attempts: int = 1) -> ExecutionResult:
    """A write whose effect happened but whose output is not what was promised."""
    return ExecutionResult(CallStatus.SUCCEEDED, output_json=output_json,
                           error_code=CallCode.OUTPUT_INVALID.value, error_message=message,
                           attempts=attempts)


def excerpt(text: str, limit: int = EXCERPT_CHARS) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[:limit] + "…"


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def json_problem(text: str) -> str | None:
    """None when text is one strict JSON value (no NaN/Infinity), else what is wrong."""
    try:
        json.loads(text, parse_constant=_reject_constant)
    except ValueError as exc:
        return str(exc)
    return None


def dump_json(value: Any) -> str:
    """Compact JSON; raises TypeError/ValueError for values JSON cannot carry."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def error_text(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__


async def with_retries(send: Callable[[], Awaitable[Attempt]], *, max_attempts: int,
                       backoff_s: float) -> ExecutionResult:
    """Try up to max_attempts times while the outcome is retryable.

    attempts in the answer = requests actually sent. A write that was UNKNOWN on an earlier try
    stays UNKNOWN if a later try could not even send (its first request may have applied).
    """
    sent = 0
    uncertain: ExecutionResult | None = None
    result: ExecutionResult | None = None
    for number in range(1, max_attempts + 1):
        attempt = await send()
        result = attempt.result
        sent += result.attempts
        if result.status is CallStatus.UNKNOWN:
            uncertain = result
        if not attempt.retryable or number == max_attempts:
            break
        await asyncio.sleep(backoff_s * number)
    assert result is not None
    if uncertain is not None and result.status is CallStatus.FAILED and result.attempts == 0:
        result = uncertain
    return replace(result, attempts=sent)
