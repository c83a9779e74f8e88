"""Shaping the next Anthropic Messages request: the assistant turn resent, then the results.

What to append after a tool turn is the assistant message (the response's content
blocks, thinking and redacted-thinking blocks included, unchanged and in order), then ONE user
message whose content starts with one `tool_result` block per `tool_use` ID, in the model's order
(handle-tool-calls docs: results must immediately follow their tool_use message and come first
in the user content). A result that is not SUCCEEDED carries `is_error: true`.

The API returns text blocks it does not accept back: an empty or whitespace-only text block in a
request is a 400 ("text content blocks must contain non-whitespace text"; anthropic-sdk-python
issue #461), so those are left out of the resent assistant message. Nothing else is.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

from adapters._common import results_in_call_order
from adapters.events import (
    AdapterError,
    FinalEvent,
    NormalizedCall,
    PausedEvent,
    ProviderEvent,
    ToolRequestEvent,
    ToolResult,
)
from adapters.results import result_text


def append_results(event: ToolRequestEvent, results: Sequence[ToolResult]) -> list[dict[str, Any]]:
    """[assistant message, user message with the tool_result blocks]."""
    return [assistant_message(event), tool_results_message(event, results)]


def extend_conversation(
    conversation: list[dict[str, Any]], event: ProviderEvent, results: Sequence[ToolResult]
) -> list[dict[str, Any]]:
    """The conversation to send next. A tool turn adds its assistant message and the results; a
    final or paused turn adds its assistant message (pause_turn: "provide the response back
    as-is"); a refusal, a truncated or cut response and an error add nothing: the refused turn
    must not be resent (streaming-refusals docs) and nothing of a failed turn ran."""
    if isinstance(event, ToolRequestEvent):
        return [*conversation, *append_results(event, results)]
    if isinstance(event, FinalEvent | PausedEvent):
        message = assistant_message(event)
        return [*conversation, message] if message["content"] else list(conversation)
    return list(conversation)


def assistant_message(event: ToolRequestEvent | FinalEvent | PausedEvent) -> dict[str, Any]:
    """The response's content blocks as a request `MessageParam` (role assistant)."""
    content = event.original.get("content")
    if isinstance(content, list):
        blocks = [_block_param(block) for block in content if not _blank_text(block)]
    elif isinstance(event, ToolRequestEvent):  # a turn submitted already normalized
        blocks = _blocks_from_calls(event)
    else:
        raise AdapterError("Anthropic event has no original message content to resend")
    return {"role": "assistant", "content": blocks}


def tool_results_message(event: ToolRequestEvent, results: Sequence[ToolResult]) -> dict[str, Any]:
    """One user message answering every call ID of `event`, in the model's order."""
    blocks = [
        _tool_result_block(call.call_id, result)
        for call, result in results_in_call_order(event, results)
    ]
    return {"role": "user", "content": blocks}


def _tool_result_block(call_id: str, result: ToolResult) -> dict[str, Any]:
    block: dict[str, Any] = {
        "type": "tool_result",
        "tool_use_id": call_id,
        "content": result_text(result),
    }
    if not result.ok:
        block["is_error"] = True
    return block


def _block_param(block: dict[str, Any]) -> dict[str, Any]:
    """A response block as a request block: every field as received, except nulls (absent and
    null mean the same on input, and some param types do not accept null, e.g. tool_use
    `caller`). Thinking blocks have no null fields, so they go back byte for byte."""
    return {key: copy.deepcopy(value) for key, value in block.items() if value is not None}


def _blank_text(block: dict[str, Any]) -> bool:
    text = block.get("text")
    return block.get("type") == "text" and isinstance(text, str) and not text.strip()


def _blocks_from_calls(event: ToolRequestEvent) -> list[dict[str, Any]]:
    text = {"type": "text", "text": event.text}
    return ([text] if not _blank_text(text) else []) + [_tool_use_block(c) for c in event.calls]


def _tool_use_block(call: NormalizedCall) -> dict[str, Any]:
    """A call's own tool_use block, else one rebuilt from it (input {} when its arguments did not
    parse: the call never ran and its result says so, but its ID must still be answered)."""
    if call.original.get("type") == "tool_use":
        return _block_param(call.original)
    return {
        "type": "tool_use",
        "id": call.call_id,
        "name": call.name,
        "input": copy.deepcopy(call.arguments) if call.arguments is not None else {},
    }
