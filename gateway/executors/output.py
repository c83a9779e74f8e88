"""A tool's output: checked as strict JSON, and kept only when it fits (a read that breaks a
rule FAILS; a write's effect happened, so it stays SUCCEEDED with a marker in place of the
output: never cut JSON)."""

from __future__ import annotations

import hashlib
from typing import Any

from gateway.errors import CallCode
from gateway.executors.base import ExecutionResult
from gateway.executors.results import failed
from gateway.jsontext import JsonTextError, read_json, write_json
from gateway.limits import FLAGS, MAX_JSON_DEPTH_CAP, utf8_len
from gateway.model import CallStatus, Effect

KEPT_TEXT_CHARS = 4096


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


def kept_output(
    result: ExecutionResult, *, effect: Effect, max_bytes: int, max_depth: int
) -> ExecutionResult:
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
        return not_kept(
            effect,
            CallCode.OUTPUT_INVALID,
            f"the output breaks a rule of JSON ({exc.rule}): {exc.message}",
            result.attempts,
            {"bytes": size, "sha256": _digest(text)},
        )
    return result


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def too_large(
    effect: Effect, size: int, limit: int, attempts: int, digest: str = ""
) -> ExecutionResult:
    return not_kept(
        effect,
        CallCode.OUTPUT_TOO_LARGE,
        f"the output is {size} bytes, over the limit of {limit} (callgate serve "
        f"{FLAGS['max_output_bytes']}); it was not kept",
        attempts,
        {"bytes": size, **({"sha256": digest} if digest else {})},
    )


def not_kept(
    effect: Effect, code: CallCode, problem: str, attempts: int, about: dict[str, Any]
) -> ExecutionResult:
    """A read is FAILED with `code`; a write, whose effect happened, stays SUCCEEDED with the
    problem noted and, in place of its output, a marker `{"<code>": {"bytes", "sha256"}}`:
    never cut JSON."""
    if effect is Effect.READ:
        return failed(code, problem, attempts=attempts)
    return ExecutionResult(
        CallStatus.SUCCEEDED,
        output_json=write_json({code.value: about}),
        error_code=code.value,
        error_message=problem,
        attempts=attempts,
    )
