"""Assembling an Anthropic Messages stream (SSE `data:` payloads) into one Message.

The stream is `message_start`, then per content block `content_block_start`,
`content_block_delta`... and `content_block_stop` (all keyed by the block's `index` in the final
`content` array, so blocks may interleave), then `message_delta` (stop_reason, cumulative usage)
and `message_stop`; `ping` may come anywhere and `error` ends the stream. Unknown event types and
unknown delta types are ignored, as the streaming docs ask.

A tool_use block's `input` is the concatenation of its `input_json_delta.partial_json` strings,
parsed once, at its `content_block_stop`. A block cut off by `max_tokens` may get no
`content_block_stop` at all (the SDK's own fixture of such a stream is copied into the tests
as `stream_max_tokens_partial_tool.sse`), so
`message_stop` with blocks still open is a valid stream; such a tool_use block, like one whose
input does not parse to an object, is never a runnable call. Nothing is classified before
`message_stop`: then the assembled Message goes through the same `read_response` as a
non-streamed body, so both paths give the same event. A stream that ends before `message_stop`
is IncompleteEvent("stream_cut").
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from adapters._anthropic_response import error_event, message_meta, read_response
from adapters._common import parse_streamed
from adapters.events import (
    AdapterError,
    IncompleteEvent,
    NormalizedCall,
    ProviderErrorEvent,
    ProviderEvent,
    ToolRequestEvent,
)

_TOOL_BLOCKS = frozenset({"tool_use", "server_tool_use"})


@dataclass
class _Block:
    block: dict[str, Any]
    json_parts: list[str] = field(default_factory=list)
    stopped: bool = False
    unparsed: str | None = None  # input JSON text that did not parse to an object
    verbatim: bool = False  # the call's arguments are the streamed text (it repeats a key)


class AnthropicStreamAssembler:
    """Feed it each stream event's JSON object in order, then call `finish()`."""

    def __init__(self) -> None:
        self._message: dict[str, Any] | None = None
        self._blocks: dict[int, _Block] = {}
        self._stopped = False
        self._error: ProviderErrorEvent | None = None

    def feed(self, event: dict[str, Any]) -> None:
        if not isinstance(event, dict):
            raise AdapterError(f"Anthropic stream event is not a JSON object: {event!r:.80}")
        event_type = event.get("type")
        if not isinstance(event_type, str):
            raise AdapterError(f"Anthropic stream event has no type: {event!r:.80}")
        handler = _HANDLERS.get(event_type)
        if handler is None:  # ping, and event types newer than this adapter
            return
        if self._stopped or self._error is not None:
            raise AdapterError(f"Anthropic stream event {event_type!r} after the stream ended")
        handler(self, event)

    def finish(self) -> ProviderEvent:
        if self._error is not None:
            return self._error
        if not self._stopped:
            partial = self._assembled() if self._message is not None else {}
            return IncompleteEvent(message_meta(partial), "stream_cut", partial)
        return self._with_streamed_inputs(read_response(self._assembled()))

    # -- event handlers ------------------------------------------------------------------------

    def _on_message_start(self, event: dict[str, Any]) -> None:
        message = event.get("message")
        if self._message is not None:
            raise AdapterError("Anthropic stream has a second message_start")
        if not isinstance(message, dict):
            raise AdapterError("Anthropic message_start has no message object")
        self._message = copy.deepcopy(message)

    def _on_block_start(self, event: dict[str, Any]) -> None:
        self._started_message("content_block_start")
        index, block = _index(event), event.get("content_block")
        if index in self._blocks:
            raise AdapterError(f"Anthropic stream starts content block {index} twice")
        if not isinstance(block, dict) or not isinstance(block.get("type"), str):
            raise AdapterError(f"Anthropic content_block_start {index} has no typed content_block")
        self._blocks[index] = _Block(copy.deepcopy(block))

    def _on_block_delta(self, event: dict[str, Any]) -> None:
        state = self._open_block(event)
        delta = event.get("delta")
        if not isinstance(delta, dict) or not isinstance(delta.get("type"), str):
            raise AdapterError(f"Anthropic content_block_delta {_index(event)} has no typed delta")
        apply = _DELTAS.get(delta["type"])
        if apply is not None:
            apply(state, delta)

    def _on_block_stop(self, event: dict[str, Any]) -> None:
        state = self._open_block(event)
        state.stopped = True
        if state.block["type"] in _TOOL_BLOCKS:
            _finish_tool_input(state)

    def _on_message_delta(self, event: dict[str, Any]) -> None:
        message = self._started_message("message_delta")
        delta, usage = event.get("delta"), event.get("usage")
        if not isinstance(delta, dict):
            raise AdapterError("Anthropic message_delta has no delta object")
        message.update(delta)
        if isinstance(usage, dict):  # cumulative totals: overwrite, keep what a delta omits
            totals = message.get("usage")
            if not isinstance(totals, dict):  # message_start may carry none (or null)
                totals = message["usage"] = {}
            totals.update({key: value for key, value in usage.items() if value is not None})

    def _on_message_stop(self, event: dict[str, Any]) -> None:
        message = self._started_message("message_stop")
        if not isinstance(message.get("stop_reason"), str):
            raise AdapterError("Anthropic message_stop before a message_delta with a stop_reason")
        if sorted(self._blocks) != list(range(len(self._blocks))):
            raise AdapterError(
                f"Anthropic stream content block indexes are not 0..n-1: {sorted(self._blocks)}"
            )
        for state in self._blocks.values():
            if not state.stopped and state.block["type"] in _TOOL_BLOCKS:
                state.unparsed = "".join(state.json_parts)  # never completed: never a call
        self._stopped = True

    def _on_error(self, event: dict[str, Any]) -> None:
        self._error = error_event(event, message_meta(self._message or {}))

    # -- helpers -------------------------------------------------------------------------------

    def _started_message(self, event_type: str) -> dict[str, Any]:
        if self._message is None:
            raise AdapterError(f"Anthropic stream has {event_type} before message_start")
        return self._message

    def _open_block(self, event: dict[str, Any]) -> _Block:
        index = _index(event)
        state = self._blocks.get(index)
        if state is None:
            raise AdapterError(f"Anthropic {event['type']} for unstarted block {index}")
        if state.stopped:
            raise AdapterError(f"Anthropic {event['type']} for stopped block {index}")
        return state

    def _assembled(self) -> dict[str, Any]:
        message = copy.deepcopy(self._message or {})
        message["content"] = [copy.deepcopy(self._blocks[i].block) for i in sorted(self._blocks)]
        return message

    def _with_streamed_inputs(self, event: ProviderEvent) -> ProviderEvent:
        """A streamed tool call whose input did not parse to an object, or never completed,
        keeps the exact text the model produced and no arguments, so it can never run
        (incomplete_arguments); one whose text repeats an object key keeps that text as its
        arguments, so the gateway's reader refuses it (a parsed value would hide it)."""
        if not isinstance(event, ToolRequestEvent):
            return event
        states = {state.block.get("id"): state for state in self._blocks.values()}
        return replace(
            event, calls=tuple(_as_streamed(call, states.get(call.call_id)) for call in event.calls)
        )


def _as_streamed(call: NormalizedCall, state: _Block | None) -> NormalizedCall:
    if state is None:
        return call
    if state.unparsed is not None:
        return replace(call, arguments_json=state.unparsed, arguments=None)
    if state.verbatim:
        return replace(call, arguments_json="".join(state.json_parts))
    return call


def _index(event: dict[str, Any]) -> int:
    index = event.get("index")
    if not isinstance(index, int) or isinstance(index, bool) or index < 0:
        raise AdapterError(f"Anthropic {event.get('type')} event has no block index")
    return index


def _finish_tool_input(state: _Block) -> None:
    """Parse the accumulated input JSON; no fragments leave content_block_start's input."""
    text = "".join(state.json_parts)
    if not text:
        return
    try:
        value, lossless = parse_streamed(text, parse_constant=_reject_constant)
    except (ValueError, RecursionError):
        value, lossless = None, True
    if isinstance(value, dict):
        state.block["input"] = value
        state.verbatim = not lossless
    else:
        state.unparsed = text


def _reject_constant(name: str) -> object:
    raise ValueError(f"{name} is not JSON")


def _expect(state: _Block, delta: dict[str, Any], *block_types: str) -> None:
    if state.block["type"] not in block_types:
        raise AdapterError(f"Anthropic {delta['type']} for a {state.block['type']} block")


def _grown(state: _Block, key: str, delta: dict[str, Any], part: str) -> None:
    """Append the delta's `part` string to the block's `key` string."""
    current = state.block.get(key, "")
    if not isinstance(current, str):
        raise AdapterError(f"Anthropic {state.block['type']} block has a non-string {key}")
    state.block[key] = current + _str(delta, part)


def _text_delta(state: _Block, delta: dict[str, Any]) -> None:
    _expect(state, delta, "text")
    _grown(state, "text", delta, "text")


def _input_json_delta(state: _Block, delta: dict[str, Any]) -> None:
    _expect(state, delta, *_TOOL_BLOCKS)
    state.json_parts.append(_str(delta, "partial_json"))


def _thinking_delta(state: _Block, delta: dict[str, Any]) -> None:
    _expect(state, delta, "thinking")
    _grown(state, "thinking", delta, "thinking")


def _signature_delta(state: _Block, delta: dict[str, Any]) -> None:
    _expect(state, delta, "thinking")
    state.block["signature"] = _str(delta, "signature")


def _citations_delta(state: _Block, delta: dict[str, Any]) -> None:
    _expect(state, delta, "text")
    citations = state.block.get("citations")
    state.block["citations"] = [
        *(citations if isinstance(citations, list) else []),
        delta.get("citation"),
    ]


def _str(delta: dict[str, Any], key: str) -> str:
    value = delta.get(key)
    if not isinstance(value, str):
        raise AdapterError(f"Anthropic {delta['type']} has no {key} string")
    return value


_Handler = Callable[[AnthropicStreamAssembler, dict[str, Any]], None]

_HANDLERS: dict[str, _Handler] = {
    "message_start": AnthropicStreamAssembler._on_message_start,
    "content_block_start": AnthropicStreamAssembler._on_block_start,
    "content_block_delta": AnthropicStreamAssembler._on_block_delta,
    "content_block_stop": AnthropicStreamAssembler._on_block_stop,
    "message_delta": AnthropicStreamAssembler._on_message_delta,
    "message_stop": AnthropicStreamAssembler._on_message_stop,
    "error": AnthropicStreamAssembler._on_error,
}

_DELTAS: dict[str, Callable[[_Block, dict[str, Any]], None]] = {
    "text_delta": _text_delta,
    "input_json_delta": _input_json_delta,
    "thinking_delta": _thinking_delta,
    "signature_delta": _signature_delta,
    "citations_delta": _citations_delta,
}
