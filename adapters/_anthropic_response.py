"""Reading one Anthropic Messages response body into a ProviderEvent.

A body is either a `Message` (`type: "message"`) or an error body (`type: "error"`). The
classification reads the Message's own `stop_reason` (SDK `anthropic.types.StopReason`):

    tool_use                               -> ToolRequestEvent (one call per `tool_use` block)
    end_turn, stop_sequence                -> FinalEvent
    refusal                                -> RefusalEvent
    pause_turn                             -> PausedEvent
    max_tokens, model_context_window_exceeded, any other value -> IncompleteEvent

Only `tool_use` turns carry calls, so a `tool_use` block cut off by `max_tokens` never becomes
one. Thinking and redacted-thinking blocks stay in `original` and never reach `text`.
"""

from __future__ import annotations

import json
from typing import Any

from adapters.events import (
    AdapterError,
    ErrorKind,
    FinalEvent,
    IncompleteEvent,
    NormalizedCall,
    PausedEvent,
    ProviderErrorEvent,
    ProviderEvent,
    RefusalEvent,
    ResponseMeta,
    ToolRequestEvent,
)

PROVIDER = "anthropic.messages"
API_VERSION = "2023-06-01"
# the version the current official SDK sends by default; its wire shapes are the ones read here
API_VERSIONS = (API_VERSION, "2026-10-21")

_FINAL = frozenset({"end_turn", "stop_sequence"})

# error.type (SDK `anthropic.types.shared.ErrorType`) -> (kind, retryable). Any other type
# (invalid_request_error, authentication_error, billing_error, permission_error, ...) is a
# request the same retry would not fix: OTHER, not retryable.
_ERRORS: dict[str, tuple[ErrorKind, bool]] = {
    "rate_limit_error": (ErrorKind.RATE_LIMIT, True),
    "overloaded_error": (ErrorKind.SERVER, True),
    "api_error": (ErrorKind.SERVER, True),
    "timeout_error": (ErrorKind.TIMEOUT, True),
}


def read_response(response: object) -> ProviderEvent:
    """The event for one complete response body (a Message or an error body)."""
    if not isinstance(response, dict):
        raise AdapterError(
            f"Anthropic response is not a JSON object (got {type(response).__name__})"
        )
    kind = response.get("type")
    if kind == "error":
        request_id = response.get("request_id")
        meta = ResponseMeta(
            PROVIDER, API_VERSION, response_id=request_id if isinstance(request_id, str) else ""
        )
        return error_event(response, meta)
    if kind != "message":
        raise AdapterError(f"Anthropic response has type {kind!r}; expected 'message' or 'error'")
    _check_message(response)
    return classify(response, message_meta(response))


def error_event(body: dict[str, Any], meta: ResponseMeta) -> ProviderErrorEvent:
    """An error body or an in-stream `error` event: {type: error, error: {type, message}}."""
    error = body.get("error")
    if not isinstance(error, dict) or not isinstance(error.get("type"), str):
        raise AdapterError("Anthropic error body has no error.type string")
    error_type: str = error["type"]
    kind, retryable = _ERRORS.get(error_type, (ErrorKind.OTHER, False))
    message = error.get("message")
    text = f"{error_type}: {message}" if isinstance(message, str) and message else error_type
    return ProviderErrorEvent(meta, kind, text, retryable, body)


def message_meta(message: dict[str, Any]) -> ResponseMeta:
    """Provider, version, model, message ID and token usage of a (possibly partial) Message."""
    usage = message.get("usage")
    usage = usage if isinstance(usage, dict) else {}
    model = message.get("model")
    message_id = message.get("id")
    return ResponseMeta(
        PROVIDER,
        API_VERSION,
        model=model if isinstance(model, str) else "",
        response_id=message_id if isinstance(message_id, str) else "",
        input_tokens=_input_tokens(usage),
        output_tokens=_int(usage.get("output_tokens")),
    )


def classify(message: dict[str, Any], meta: ResponseMeta) -> ProviderEvent:
    """The event for a checked Message, by its `stop_reason`."""
    stop_reason: str = message["stop_reason"]
    content: list[dict[str, Any]] = message["content"]
    text = visible_text(content)
    if stop_reason == "tool_use":
        return ToolRequestEvent(meta, _calls(content), message, text)
    if stop_reason in _FINAL:
        return FinalEvent(meta, text, message)
    if stop_reason == "refusal":
        return RefusalEvent(meta, _refusal_text(message, text), message)
    if stop_reason == "pause_turn":
        return PausedEvent(meta, stop_reason, message)
    return IncompleteEvent(meta, stop_reason, message)


def visible_text(content: list[dict[str, Any]]) -> str:
    """The text blocks joined; thinking, redacted thinking and tool blocks are never included."""
    return "".join(
        block["text"]
        for block in content
        if block.get("type") == "text" and isinstance(block.get("text"), str)
    )


def arguments_json(tool_input: object) -> str:
    """The compact JSON text of a `tool_use` block's `input` object."""
    return json.dumps(tool_input, separators=(",", ":"), ensure_ascii=False)


def _check_message(message: dict[str, Any]) -> None:
    for key in ("id", "model"):
        if not isinstance(message.get(key), str) or not message[key]:
            raise AdapterError(f"Anthropic message has no {key} string")
    if message.get("role") != "assistant":
        raise AdapterError(f"Anthropic message role is {message.get('role')!r}, not 'assistant'")
    if not isinstance(message.get("stop_reason"), str):
        raise AdapterError("Anthropic message has no stop_reason string")
    _check_content(message.get("content"))
    usage = message.get("usage")
    if not isinstance(usage, dict) or not all(
        isinstance(usage.get(key), int) for key in ("input_tokens", "output_tokens")
    ):
        raise AdapterError(
            "Anthropic message has no usage with integer input_tokens and output_tokens"
        )


def _check_content(content: object) -> None:
    if not isinstance(content, list):
        raise AdapterError("Anthropic message has no content list")
    for index, block in enumerate(content):
        if not isinstance(block, dict) or not isinstance(block.get("type"), str):
            raise AdapterError(f"Anthropic message content[{index}] is not a block with a type")


def _calls(content: list[dict[str, Any]]) -> tuple[NormalizedCall, ...]:
    calls = tuple(
        _call(index, block) for index, block in enumerate(content) if block["type"] == "tool_use"
    )
    if not calls:
        raise AdapterError(
            "Anthropic message stop_reason is 'tool_use' but its content has no tool_use block"
        )
    return calls


def _call(index: int, block: dict[str, Any]) -> NormalizedCall:
    call_id, name = block.get("id"), block.get("name")
    if not isinstance(call_id, str) or not call_id:
        raise AdapterError(f"Anthropic tool_use block content[{index}] has no id string")
    if not isinstance(name, str) or not name:
        raise AdapterError(f"Anthropic tool_use block content[{index}] has no name string")
    if "input" not in block:
        raise AdapterError(f"Anthropic tool_use block content[{index}] has no input")
    tool_input = block["input"]
    return NormalizedCall(
        call_id,
        name,
        arguments_json(tool_input),
        tool_input if isinstance(tool_input, dict) else None,
        block,
    )


def _refusal_text(message: dict[str, Any], text: str) -> str:
    """stop_details.explanation (meant to be shown to users), else whatever text came first."""
    details = message.get("stop_details")
    explanation = details.get("explanation") if isinstance(details, dict) else None
    return explanation if isinstance(explanation, str) and explanation else text


def _input_tokens(usage: dict[str, Any]) -> int:
    """All input tokens: uncached plus cache writes plus cache reads (SDK `Usage` docstring)."""
    return sum(
        _int(usage.get(key))
        for key in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    )


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
