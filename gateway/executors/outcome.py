"""Small pieces shared by the executors: result constructors, JSON checks, the retry loop."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any

from gateway.errors import CallCode
from gateway.executors.base import ExecutionResult
from gateway.jsontext import JsonTextError, read_json, write_json
from gateway.limits import FLAGS, MAX_JSON_DEPTH_CAP, utf8_len
from gateway.model import CallStatus, Effect

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


def json_problem(text: str) -> str | None:
    """None when text is one strict JSON value (the one reader's rules; integers are kept
    exactly), else what is wrong."""
    try:
        read_json(text, max_depth=MAX_JSON_DEPTH_CAP, big_integers=True)
    except JsonTextError as exc:
        return exc.message
    return None


def dump_json(value: Any) -> str:
    """Compact JSON; raises ValueError (JsonTextError) for values JSON cannot carry."""
    return write_json(value, max_depth=MAX_JSON_DEPTH_CAP)


def kept_output(result: ExecutionResult, *, effect: Effect, max_bytes: int,
                max_depth: int) -> ExecutionResult:
    """The result as it may be stored and handed on. An output over `max_bytes`, or one that
    breaks a JSON rule, is not kept (`not_kept`)."""
    text = result.output_json
    if result.status is not CallStatus.SUCCEEDED or not text:
        return result
    size = utf8_len(text)
    if size > max_bytes:
        return too_large(effect, size, max_bytes, result.attempts, _digest(text))
    try:
        read_json(text, max_depth=max_depth, big_integers=True)
    except JsonTextError as exc:
        return not_kept(effect, CallCode.OUTPUT_INVALID, f"the output breaks a rule of JSON "
                        f"({exc.rule}): {exc.message}", result.attempts,
                        {"bytes": size, "sha256": _digest(text)})
    return result


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def too_large(effect: Effect, size: int, limit: int, attempts: int,
              digest: str = "") -> ExecutionResult:
    return not_kept(effect, CallCode.OUTPUT_TOO_LARGE,
                    f"the output is {size} bytes, over the limit of {limit} (callgate serve "
                    f"{FLAGS['max_output_bytes']}); it was not kept", attempts,
                    {"bytes": size, **({"sha256": digest} if digest else {})})


def not_kept(effect: Effect, code: CallCode, problem: str, attempts: int,
             about: dict[str, Any]) -> ExecutionResult:
    """A read is FAILED with `code`; a write, whose effect happened, stays SUCCEEDED with the
    problem noted and, in place of its output, a marker `{"<code>": {"bytes", "sha256"}}`:
    never cut JSON."""
    if effect is Effect.READ:
        return failed(code, problem, attempts=attempts)
    return ExecutionResult(CallStatus.SUCCEEDED, output_json=write_json({code.value: about}),
                           error_code=code.value, error_message=problem, attempts=attempts)


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
