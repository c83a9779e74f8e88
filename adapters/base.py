"""The protocol every provider adapter implements."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from adapters.events import ProviderEvent, ToolRequestEvent, ToolResult, ToolSpec


class StreamAssembler(Protocol):
    def feed(self, event: dict[str, Any]) -> None:
        """One raw stream event (a parsed SSE `data:` payload, a Gemini chunk, a Bedrock event
        dict). Raises AdapterError for an event that is not valid for this provider."""
        ...

    def finish(self) -> ProviderEvent:
        """The stream ended. Calls are emitted only after the provider's explicit completion
        event; a stream cut before it is an IncompleteEvent (reason "stream_cut")."""
        ...


class ProviderAdapter(Protocol):
    provider: str  # e.g. "openai.responses"
    api_versions: tuple[str, ...]  # accepted values; the first is the default

    def read_complete_event(self, response: dict[str, Any]) -> ProviderEvent: ...

    def new_stream_assembler(self) -> StreamAssembler: ...

    def append_results(
        self, event: ToolRequestEvent, results: Sequence[ToolResult]
    ) -> list[dict[str, Any]]:
        """What to append to the conversation for the next request (docs/api.md), answering
        every call ID of `event` in the model's order."""
        ...

    def extend_conversation(
        self,
        conversation: list[dict[str, Any]],
        event: ProviderEvent,
        results: Sequence[ToolResult],
    ) -> list[dict[str, Any]]:
        """The whole provider-shaped conversation after this turn (the response's own output
        as the provider wants it resent, then the results)."""
        ...

    def tool_declarations(self, tools: Sequence[ToolSpec]) -> list[dict[str, Any]]: ...
