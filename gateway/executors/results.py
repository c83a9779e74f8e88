"""An execution's result, made one way: succeeded, failed, unknown, or succeeded with a problem
noted; and the text of an error in it."""

from __future__ import annotations

from gateway.errors import CallCode
from gateway.executors.base import ExecutionResult
from gateway.model import CallStatus

EXCERPT_CHARS = 200


def succeeded(output_json: str, attempts: int = 1) -> ExecutionResult:
    return ExecutionResult(CallStatus.SUCCEEDED, output_json=output_json, attempts=attempts)


def failed(code: CallCode, message: str, attempts: int = 1) -> ExecutionResult:
    return ExecutionResult(
        CallStatus.FAILED, error_code=code.value, error_message=message, attempts=attempts
    )


def unknown(message: str, attempts: int = 1) -> ExecutionResult:
    return ExecutionResult(
        CallStatus.UNKNOWN,
        error_code=CallCode.OUTCOME_UNKNOWN.value,
        error_message=message,
        attempts=attempts,
    )


def noted(output_json: str, message: str, attempts: int = 1) -> ExecutionResult:
    """A write whose effect happened but whose output is not what was promised."""
    return ExecutionResult(
        CallStatus.SUCCEEDED,
        output_json=output_json,
        error_code=CallCode.OUTPUT_INVALID.value,
        error_message=message,
        attempts=attempts,
    )


def excerpt(text: str, limit: int = EXCERPT_CHARS) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[:limit] + "…"


def error_text(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__
