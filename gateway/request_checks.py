"""The shape of a request, checked before any work is done: IDs, calls, usage, budgets and
labels. Each problem is a RequestError with a stable code and a message naming the field."""

from __future__ import annotations

from collections.abc import Sequence

from gateway.errors import RequestCode, RequestError
from gateway.jsontext import MAX_SAFE_INTEGER
from gateway.limits import Limits, over_limit, utf8_len
from gateway.model import Budget, ToolCall, Usage

MAX_ID_LENGTH = 256


def check_id(kind: str, value: str) -> None:
    """IDs are chosen by clients: bounded and printable, or the request is refused."""
    if len(value) > MAX_ID_LENGTH or not value.isprintable():
        raise RequestError(
            RequestCode.INVALID_ARGUMENT,
            f"{kind} must be at most {MAX_ID_LENGTH} printable characters",
        )


def check_calls(calls: Sequence[ToolCall], limits: Limits) -> None:
    """The calls of one turn (or one Authorize): within the limit, each with its own ID."""
    if len(calls) > limits.max_calls_per_turn:
        raise over_limit(
            f"{len(calls)} tool calls in one request",
            "max_calls_per_turn",
            limits.max_calls_per_turn,
        )
    seen: set[str] = set()
    for call in calls:
        if not call.call_id:
            raise RequestError(RequestCode.INVALID_ARGUMENT, "every tool call needs a call_id")
        check_id("call_id", call.call_id)
        if call.call_id in seen:
            raise RequestError(
                RequestCode.DUPLICATE_CALL_ID,
                f"call ID {call.call_id} appears twice in this request",
            )
        seen.add(call.call_id)


def check_usage(usage: Usage) -> None:
    for name, value in (
        ("input_tokens", usage.input_tokens),
        ("output_tokens", usage.output_tokens),
    ):
        if not 0 <= value <= MAX_SAFE_INTEGER:
            raise RequestError(
                RequestCode.INVALID_ARGUMENT,
                f"usage.{name} is {value}; it must be between 0 and {MAX_SAFE_INTEGER}",
            )


def check_budget(budget: Budget) -> None:
    for name, value in vars(budget).items():
        if value < 0:
            raise RequestError(
                RequestCode.INVALID_ARGUMENT,
                f"budget.{name} is {value}; use 0 "
                "for unlimited (max_retries: for the default) or a positive "
                "number",
            )


def check_labels(labels: dict[str, str], limits: Limits) -> None:
    if len(labels) > limits.max_labels:
        raise over_limit(f"the run has {len(labels)} labels", "max_labels", limits.max_labels)
    for key, value in labels.items():
        size = utf8_len(key) + utf8_len(value)
        if size > limits.max_label_bytes:
            raise over_limit(
                f"label {key[:40]!r} is {size} bytes (key and value)",
                "max_label_bytes",
                limits.max_label_bytes,
            )
