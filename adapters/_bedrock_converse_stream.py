"""ConverseStream assembly for the Bedrock Converse adapter.

Events are the dicts botocore's `converse_stream` yields, one member each: `messageStart`,
`contentBlockStart` (a toolUse's ID and name), `contentBlockDelta` (text, toolUse input JSON
fragments, reasoningContent), `contentBlockStop`, `messageStop` (the stopReason: the
completion event), `metadata` (usage, metrics), or an exception member
(`throttlingException`, …). An `EventStreamError.response` (`{"Error": {...}}`) is accepted too.

Blocks are keyed by `contentBlockIndex`, so fragments of parallel calls may interleave. At
`messageStop` every toolUse block must be stopped; `finish()` then builds the equivalent
Converse response (input fragments joined and parsed) and classifies it like a non-streamed
one, so a streamed turn and a non-streamed turn give the same event.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from adapters._common import parse_streamed
from adapters._gemini_bedrock_common import optional_text, require_dict, require_text
from adapters.events import (
    AdapterError,
    IncompleteEvent,
    ProviderEvent,
    ResponseMeta,
    ToolRequestEvent,
)

_EXCEPTIONS = frozenset(
    {
        "internalServerException",
        "modelStreamErrorException",
        "validationException",
        "throttlingException",
        "serviceUnavailableException",
    }
)


@dataclass
class _Block:
    """One content block being assembled."""

    kind: str  # "text" | "toolUse" | "reasoningContent"
    fragments: list[str] = field(default_factory=list)
    tool_use: dict[str, Any] = field(default_factory=dict)  # toolUseId, name (, type)
    signature: str | None = None
    redacted: Any = None
    stopped: bool = False

    def as_content_block(self) -> dict[str, Any]:
        text = "".join(self.fragments)
        if self.kind == "toolUse":
            return {"toolUse": {**self.tool_use, "input": _parsed_input(text)[0]}}
        if self.kind == "reasoningContent":
            return {"reasoningContent": self._reasoning(text)}
        return {"text": text}

    def _reasoning(self, text: str) -> dict[str, Any]:
        if self.redacted is not None:
            return {"redactedContent": self.redacted}
        reasoning: dict[str, Any] = {"text": text}
        if self.signature is not None:
            reasoning["signature"] = self.signature
        return {"reasoningText": reasoning}


def _parsed_input(text: str) -> tuple[Any, bool]:
    """(the tool input document, lossless); JSON text that does not parse is kept as the raw
    string (the call is then incomplete and never executed). No fragments at all means `{}`.
    lossless is False when the text repeats an object key (see `parse_streamed`)."""
    if not text:
        return {}, True
    try:
        return parse_streamed(text)
    except (ValueError, RecursionError):
        return text, True


class BedrockStreamAssembler:
    def __init__(
        self, classify: Callable[[dict[str, Any]], ProviderEvent], meta: ResponseMeta
    ) -> None:
        self._classify = classify
        self._meta = meta
        self._role = "assistant"
        self._blocks: dict[int, _Block] = {}
        self._stop: dict[str, Any] | None = None
        self._metadata: dict[str, Any] = {}
        self._error: dict[str, Any] | None = None

    def feed(self, event: dict[str, Any]) -> None:
        event = require_dict(event, "stream event")
        if isinstance(event.get("Error"), dict):
            self._error = event
            return
        members = [key for key in event if key in _HANDLERS or key in _EXCEPTIONS]
        if len(members) != 1:
            raise AdapterError(
                f"stream event must have exactly one ConverseStreamOutput "
                f"member, got {sorted(event)}",
                code="malformed_response",
            )
        name = members[0]
        if self._stop is not None and name in _CONTENT_EVENTS:
            raise AdapterError(f"{name} after messageStop", code="malformed_response")
        payload = require_dict(event[name], name)
        if name in _EXCEPTIONS:
            self._error = {"Error": {"Code": name, "Message": payload.get("message", "")}}
            return
        _HANDLERS[name](self, payload)

    def finish(self) -> ProviderEvent:
        if self._error is not None:
            return self._classify(self._error)
        if self._stop is None:
            return IncompleteEvent(self._meta, "stream_cut", original=self.snapshot())
        return self._with_streamed_inputs(self._classify(self.snapshot()))

    def _with_streamed_inputs(self, event: ProviderEvent) -> ProviderEvent:
        """A streamed tool call whose input text repeats an object key keeps that text as its
        arguments, so the gateway's reader refuses it (the parsed document would hide it)."""
        if not isinstance(event, ToolRequestEvent):
            return event
        texts = {
            b.tool_use.get("toolUseId"): "".join(b.fragments)
            for b in self._blocks.values()
            if b.kind == "toolUse" and b.fragments and not _parsed_input("".join(b.fragments))[1]
        }
        return replace(
            event,
            calls=tuple(
                replace(c, arguments_json=texts[c.call_id]) if texts.get(c.call_id) else c
                for c in event.calls
            ),
        )

    def snapshot(self) -> dict[str, Any]:
        """The Converse response assembled so far."""
        content = [self._blocks[i].as_content_block() for i in sorted(self._blocks)]
        body: dict[str, Any] = {"output": {"message": {"role": self._role, "content": content}}}
        if self._stop is not None:
            body.update(self._stop)
        body.update(self._metadata)
        return body

    # -- event handlers ---------------------------------------------------------------------

    def _message_start(self, payload: dict[str, Any]) -> None:
        self._role = optional_text(payload.get("role"), "messageStart.role") or self._role

    def _block_start(self, payload: dict[str, Any]) -> None:
        index = _index(payload, "contentBlockStart")
        start = require_dict(payload.get("start"), "contentBlockStart.start")
        if not start:  # nothing to record: the block's deltas say what it is
            return
        if set(start) != {"toolUse"}:
            raise AdapterError(
                f"unsupported contentBlockStart member(s) {sorted(start)}",
                code="malformed_response",
            )
        use = require_dict(start["toolUse"], "contentBlockStart.start.toolUse")
        require_text(use.get("toolUseId"), "contentBlockStart.start.toolUse.toolUseId")
        require_text(use.get("name"), "contentBlockStart.start.toolUse.name")
        if index in self._blocks:
            raise AdapterError(
                f"contentBlockStart repeats block {index}", code="malformed_response"
            )
        self._blocks[index] = _Block("toolUse", tool_use=dict(use))

    def _block_delta(self, payload: dict[str, Any]) -> None:
        index = _index(payload, "contentBlockDelta")
        delta = require_dict(payload.get("delta"), "contentBlockDelta.delta")
        if len(delta) != 1 or next(iter(delta)) not in _DELTA_KINDS:
            raise AdapterError(
                f"unsupported contentBlockDelta member(s) {sorted(delta)}",
                code="malformed_response",
            )
        kind = next(iter(delta))
        block = self._open_block(index, kind)
        if kind == "text":
            block.fragments.append(optional_text(delta["text"], "delta.text"))
        elif kind == "toolUse":
            use = require_dict(delta["toolUse"], "delta.toolUse")
            block.fragments.append(optional_text(use.get("input"), "delta.toolUse.input"))
        else:
            _add_reasoning(block, require_dict(delta[kind], "delta.reasoningContent"))

    def _block_stop(self, payload: dict[str, Any]) -> None:
        index = _index(payload, "contentBlockStop")
        if index not in self._blocks:
            raise AdapterError(
                f"contentBlockStop for unknown block {index}", code="malformed_response"
            )
        self._blocks[index].stopped = True

    def _message_stop(self, payload: dict[str, Any]) -> None:
        require_text(payload.get("stopReason"), "messageStop.stopReason")
        open_calls = [i for i, b in self._blocks.items() if b.kind == "toolUse" and not b.stopped]
        if open_calls:
            raise AdapterError(
                f"messageStop before contentBlockStop of toolUse block(s) {open_calls}",
                code="malformed_response",
            )
        self._stop = dict(payload)

    def _metadata_event(self, payload: dict[str, Any]) -> None:
        self._metadata = {k: v for k, v in payload.items() if k in ("usage", "metrics")}

    def _open_block(self, index: int, kind: str) -> _Block:
        block = self._blocks.get(index)
        if block is None:
            if kind == "toolUse":
                raise AdapterError(
                    f"toolUse delta for block {index} before its contentBlockStart",
                    code="malformed_response",
                )
            block = self._blocks[index] = _Block(kind)
        if block.kind != kind or block.stopped:
            raise AdapterError(
                f"{kind} delta does not fit block {index} ({block.kind}"
                f"{', stopped' if block.stopped else ''})",
                code="malformed_response",
            )
        return block


_CONTENT_EVENTS = frozenset(
    {"messageStart", "contentBlockStart", "contentBlockDelta", "contentBlockStop", "messageStop"}
)
_DELTA_KINDS = frozenset({"text", "toolUse", "reasoningContent"})

_HANDLERS: dict[str, Callable[[BedrockStreamAssembler, dict[str, Any]], None]] = {
    "messageStart": BedrockStreamAssembler._message_start,
    "contentBlockStart": BedrockStreamAssembler._block_start,
    "contentBlockDelta": BedrockStreamAssembler._block_delta,
    "contentBlockStop": BedrockStreamAssembler._block_stop,
    "messageStop": BedrockStreamAssembler._message_stop,
    "metadata": BedrockStreamAssembler._metadata_event,
}


def _index(payload: dict[str, Any], where: str) -> int:
    index = payload.get("contentBlockIndex")
    if not isinstance(index, int) or isinstance(index, bool) or index < 0:
        raise AdapterError(
            f"{where}.contentBlockIndex is missing or not a non-negative integer",
            code="malformed_response",
        )
    return index


def _add_reasoning(block: _Block, delta: dict[str, Any]) -> None:
    if "text" in delta:
        block.fragments.append(optional_text(delta["text"], "reasoningContent.text"))
    if "signature" in delta:
        block.signature = optional_text(delta["signature"], "reasoningContent.signature")
    if "redactedContent" in delta:
        block.redacted = delta["redactedContent"]
