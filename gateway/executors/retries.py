"""The retry loop of an executor: another try only while the answer says one may help, and
`attempts` counting the requests actually sent."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace

from gateway.executors.base import ExecutionResult
from gateway.model import CallStatus


@dataclass(frozen=True)
class Attempt:
    """One try at the target: its result (attempts 0 or 1) and whether another try may help."""

    result: ExecutionResult
    retryable: bool = False


async def with_retries(
    send: Callable[[], Awaitable[Attempt]], *, max_attempts: int, backoff_s: float
) -> ExecutionResult:
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
