"""The bridge between provider adapters and the runner.

Raw provider JSON (a whole response, or stream events) becomes a `TurnInput` through the
adapter of the run's provider; the runner's outcome becomes the provider-shaped items the loop
appends for its next request. Nothing here branches on a provider: the adapter does.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any

from adapters import AdapterError, get_adapter
from adapters.base import ProviderAdapter
from adapters.events import (
    FinalEvent,
    IncompleteEvent,
    PausedEvent,
    ProviderErrorEvent,
    ProviderEvent,
    RefusalEvent,
    ToolRequestEvent,
    ToolResult,
    ToolSpec,
)
from gateway.errors import InvalidArgument
from gateway.model import (
    CallRecord,
    CallResult,
    EventKind,
    NextAction,
    RunView,
    ToolCall,
    TurnEvent,
    TurnInput,
    TurnOutcome,
    Usage,
)
from gateway.registry import Tool


def adapter_for(provider: str) -> ProviderAdapter:
    try:
        return get_adapter(provider)
    except AdapterError as err:
        raise InvalidArgument(str(err), code=err.code) from err


def parse_json(text: str, what: str, code: str = "malformed_response") -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as err:
        raise InvalidArgument(f"{what} is not valid JSON: {err}", code=code) from err


def read_response(adapter: ProviderAdapter, response_json: str) -> ProviderEvent:
    response = parse_json(response_json, "response_json")
    if not isinstance(response, dict):
        raise InvalidArgument("response_json must be a JSON object (the provider's response)",
                              code="malformed_response")
    try:
        return adapter.read_complete_event(response)
    except AdapterError as err:
        raise InvalidArgument(str(err), code=err.code) from err


@dataclass(frozen=True)
class StreamHeader:
    run_id: str
    provider: str
    api_version: str
    turn_id: str


async def assemble_stream(adapter: ProviderAdapter, events: AsyncIterator[str]
                          ) -> tuple[ProviderEvent, list[Any]]:
    """Feed every raw stream event to the adapter's assembler; answers the final event and
    the raw events received."""
    assembler = adapter.new_stream_assembler()
    received: list[Any] = []
    async for text in events:
        event = parse_json(text, f"stream event {len(received) + 1}")
        if not isinstance(event, dict):
            raise InvalidArgument(f"stream event {len(received) + 1} must be a JSON object",
                                  code="malformed_response")
        received.append(event)
        try:
            assembler.feed(event)
        except AdapterError as err:
            raise InvalidArgument(f"stream event {len(received)}: {err}", code=err.code) from err
    return assembler.finish(), received


def turn_id_of(event: ProviderEvent, requested: str) -> str:
    turn_id = event.meta.response_id or requested
    if not turn_id:
        raise InvalidArgument("this response carries no ID: set turn_id on the request",
                              code="invalid_argument")
    return turn_id


def call_ids(event: ToolRequestEvent, turn_id: str) -> list[str]:
    """Every call's ID; a call the provider gave none gets `<turn_id>#<index>`."""
    return [c.call_id or f"{turn_id}#{i}" for i, c in enumerate(event.calls)]


def to_turn_event(event: ProviderEvent, turn_id: str) -> TurnEvent:
    if isinstance(event, ToolRequestEvent):
        ids = call_ids(event, turn_id)
        return TurnEvent(EventKind.TOOL_REQUEST, calls=tuple(
            ToolCall(cid, c.name, c.arguments_json, c.complete)
            for cid, c in zip(ids, event.calls, strict=True)))
    if isinstance(event, FinalEvent):
        return TurnEvent(EventKind.FINAL, text=event.text)
    if isinstance(event, RefusalEvent):
        return TurnEvent(EventKind.REFUSAL, text=event.text)
    if isinstance(event, IncompleteEvent):
        return TurnEvent(EventKind.INCOMPLETE, text=event.reason)
    if isinstance(event, PausedEvent):
        return TurnEvent(EventKind.PAUSED, text=event.reason)
    assert isinstance(event, ProviderErrorEvent)
    return TurnEvent(EventKind.PROVIDER_ERROR, text=event.message,
                     error_kind=event.kind.value, retryable=event.retryable)


def to_turn_input(event: ProviderEvent, *, run_id: str, turn_id: str, provider: str,
                  api_version: str, model: str, raw: str) -> TurnInput:
    meta = event.meta
    return TurnInput(run_id=run_id, turn_id=turn_id, event=to_turn_event(event, turn_id),
                     provider=provider, api_version=api_version, model=model or meta.model,
                     usage=Usage(meta.input_tokens, meta.output_tokens), raw_response_json=raw)


def tool_results(event: ToolRequestEvent, turn_id: str,
                 results: Sequence[CallResult | CallRecord]) -> list[ToolResult]:
    by_id = {r.call_id: r for r in results}
    out = []
    for cid, call in zip(call_ids(event, turn_id), event.calls, strict=True):
        r = by_id[cid]
        out.append(ToolResult(call_id=cid, name=call.name, status=r.status.value,
                              output_json=r.output_json, error_code=r.error_code,
                              error_message=r.error_message))
    return out


def next_input(adapter: ProviderAdapter, event: ProviderEvent,
               outcome: TurnOutcome) -> str:
    """provider_input_json: set only when the loop should continue."""
    if outcome.next != NextAction.CONTINUE:
        return ""
    if isinstance(event, ToolRequestEvent):
        items = adapter.append_results(event, tool_results(event, outcome.turn_id,
                                                           outcome.results))
    else:
        items = adapter.extend_conversation([], event, [])
    return json.dumps(items)


def declarations(adapter: ProviderAdapter, tools: Sequence[Tool],
                 offered: set[str] | None) -> str:
    specs = [ToolSpec(t.name, t.description, t.manifest.input_schema) for t in tools
             if offered is None or t.name in offered]
    return json.dumps(adapter.tool_declarations(specs))


def check_conversation(text: str) -> None:
    """A run's starting conversation, when given, is a JSON array of provider messages."""
    if text and not isinstance(parse_json(text, "conversation_json", "invalid_argument"), list):
        raise InvalidArgument("conversation_json must be a JSON array of the provider's "
                              "messages", code="invalid_argument")


def conversation(view: RunView) -> str:
    """The whole provider-shaped conversation, when the run started with one and every
    settled turn carried its raw response; "" otherwise."""
    run = view.run
    if not run.conversation_json or not run.provider:
        return ""
    try:
        return _conversation(view, adapter_for(run.provider))
    except AdapterError:
        return ""


def _conversation(view: RunView, adapter: ProviderAdapter) -> str:
    run = view.run
    conv = parse_json(run.conversation_json, "the run's conversation_json")
    if not isinstance(conv, list):
        return ""
    for turn in view.turns:
        if turn.next is None or not turn.raw_response_json:
            return ""
        event = _stored_event(adapter, turn.raw_response_json)
        if event is None:
            return ""
        calls = [c for c in view.calls if c.turn_id == turn.turn_id]
        results = (tool_results(event, turn.turn_id, calls)
                   if isinstance(event, ToolRequestEvent) else [])
        conv = adapter.extend_conversation(conv, event, results)
    return json.dumps(conv)


def _stored_event(adapter: ProviderAdapter, raw: str) -> ProviderEvent | None:
    try:
        return adapter.read_complete_event(json.loads(raw))
    except (AdapterError, ValueError, KeyError):
        return None
