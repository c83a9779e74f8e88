"""Adapter for the Anthropic Messages API (`POST /v1/messages`, anthropic-version 2023-06-01).

What it maps (field names from the SDK types in `anthropic.types`):

    Message `stop_reason` / body                 event
    tool_use                                     ToolRequestEvent, a call per tool_use block
    end_turn, stop_sequence                      FinalEvent
    refusal                                      RefusalEvent (stop_details.explanation, else text)
    pause_turn                                   PausedEvent("pause_turn")
    max_tokens, model_context_window_exceeded,   IncompleteEvent(<stop_reason>)
      any other value
    {type: error, error: {type, message}}        ProviderErrorEvent (kind, retryable by error.type)
      (error body or in-stream error event)
    stream ended before message_stop             IncompleteEvent("stream_cut")

The pieces live in private modules: `_anthropic_response` (reading a body),
`_anthropic_stream` (assembling a stream), `_anthropic_request` (the next request's messages) and
`_anthropic_tools` (tool declarations).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from adapters import _anthropic_request, _anthropic_tools
from adapters._anthropic_response import API_VERSIONS, PROVIDER, read_response
from adapters._anthropic_stream import AnthropicStreamAssembler
from adapters.base import ProviderAdapter
from adapters.events import ProviderEvent, ToolRequestEvent, ToolResult, ToolSpec


class AnthropicMessagesAdapter:
    provider = PROVIDER
    api_versions: tuple[str, ...] = API_VERSIONS

    def read_complete_event(self, response: dict[str, Any]) -> ProviderEvent:
        return read_response(response)

    def new_stream_assembler(self) -> AnthropicStreamAssembler:
        return AnthropicStreamAssembler()

    def append_results(
        self, event: ToolRequestEvent, results: Sequence[ToolResult]
    ) -> list[dict[str, Any]]:
        return _anthropic_request.append_results(event, results)

    def extend_conversation(
        self,
        conversation: list[dict[str, Any]],
        event: ProviderEvent,
        results: Sequence[ToolResult],
    ) -> list[dict[str, Any]]:
        return _anthropic_request.extend_conversation(conversation, event, results)

    def tool_declarations(self, tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
        return _anthropic_tools.tool_declarations(tools)


ADAPTER: ProviderAdapter = AnthropicMessagesAdapter()

__all__ = ["ADAPTER", "AnthropicMessagesAdapter", "AnthropicStreamAssembler"]
