"""OpenAI Responses API (`POST /v1/responses`), provider `openai.responses`.

Classification of a complete response, by its own `status` (never a generic finish reason):

| response                                                   | event                       |
|------------------------------------------------------------|-----------------------------|
| `completed` with a `refusal` content part                  | RefusalEvent                |
| `completed` with `function_call` items                     | ToolRequestEvent            |
| `completed` otherwise                                      | FinalEvent (`output_text`)  |
| `incomplete`, `incomplete_details.reason` `content_filter` | RefusalEvent                |
| `incomplete`, any other reason (`max_output_tokens`, ...)  | IncompleteEvent(reason)     |
| `failed` with `error`                                      | ProviderErrorEvent          |
| `cancelled`                                                | ProviderErrorEvent, final   |
| `queued` / `in_progress` (not finished)                    | IncompleteEvent(status)     |
| an HTTP error body `{"error": {...}}`                      | ProviderErrorEvent          |

Calls are correlated on `call_id` (not the item `id`). Reasoning items (possibly with
`encrypted_content`) are resent by `extend_conversation` and never enter `text`. Items of
client-side tools callgate does not declare (custom, computer, shell, apply_patch, local shell,
MCP approval) cannot be answered here, so such a response is refused as malformed.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from adapters._common import results_in_call_order
from adapters._openai_shared import (
    DONE_SENTINEL,
    error_event,
    is_error_body,
    join_fragments,
    make_call,
    optional_str,
    require_int,
    require_list,
    require_mapping,
    require_str,
    strict_compatible,
    token_count,
)
from adapters.events import (
    AdapterError,
    ErrorKind,
    FinalEvent,
    IncompleteEvent,
    NormalizedCall,
    ProviderErrorEvent,
    ProviderEvent,
    RefusalEvent,
    ResponseMeta,
    ToolRequestEvent,
    ToolResult,
    ToolSpec,
)
from adapters.results import result_text

PROVIDER = "openai.responses"
API_VERSIONS = ("v1",)

_CLIENT_SIDE_ITEMS = frozenset(
    {
        "custom_tool_call",
        "computer_call",
        "shell_call",
        "apply_patch_call",
        "local_shell_call",
        "mcp_approval_request",
    }
)
_FILTERED_TEXT = "The response was stopped by the content filter."
_UNFINISHED_CALL = frozenset({"in_progress", "incomplete"})
_TERMINAL_EVENTS = frozenset({"response.completed", "response.incomplete", "response.failed"})
_LIFECYCLE_EVENTS = frozenset({"response.created", "response.in_progress", "response.queued"})


class _Content:
    """Visible text, refusal text and calls gathered from a response's `output`."""

    def __init__(self) -> None:
        self.text: list[str] = []
        self.refusal: list[str] = []
        self.calls: list[NormalizedCall] = []


def _meta(body: dict[str, Any], response_id: str) -> ResponseMeta:
    usage = body.get("usage")
    return ResponseMeta(
        provider=PROVIDER,
        api_version=API_VERSIONS[0],
        model=optional_str(body, "model"),
        response_id=response_id,
        input_tokens=token_count(usage, "input_tokens"),
        output_tokens=token_count(usage, "output_tokens"),
    )


def _read_content(output: list[Any]) -> _Content:
    content = _Content()
    for index, raw in enumerate(output):
        item = require_mapping(raw, f"response.output[{index}]")
        kind = require_str(item, "type", f"response.output[{index}]")
        if kind == "message":
            _read_message(item, index, content)
        elif kind == "function_call":
            content.calls.append(_read_call(item, index))
        elif kind in _CLIENT_SIDE_ITEMS:
            raise AdapterError(
                f"response.output[{index}] is a {kind} item; callgate answers "
                "only function_call items"
            )
    return content


def _read_message(item: dict[str, Any], index: int, content: _Content) -> None:
    parts = require_list(item.get("content"), f"response.output[{index}].content")
    for part_index, raw in enumerate(parts):
        where = f"response.output[{index}].content[{part_index}]"
        part = require_mapping(raw, where)
        kind = require_str(part, "type", where)
        if kind == "output_text":
            content.text.append(optional_str(part, "text"))
        elif kind == "refusal":
            content.refusal.append(optional_str(part, "refusal"))


def _read_call(item: dict[str, Any], index: int) -> NormalizedCall:
    where = f"response.output[{index}]"
    call_id = require_str(item, "call_id", where)
    if not call_id:
        raise AdapterError(f"{where}.call_id is empty")
    return make_call(
        call_id,
        require_str(item, "name", where),
        require_str(item, "arguments", where),
        item,
        complete=optional_str(item, "status") not in _UNFINISHED_CALL,
    )


def _classify_completed(
    meta: ResponseMeta, body: dict[str, Any], content: _Content
) -> ProviderEvent:
    text = "".join(content.text)
    if content.refusal:
        return RefusalEvent(meta=meta, text="".join(content.refusal), original=body)
    if content.calls:
        return ToolRequestEvent(meta=meta, calls=tuple(content.calls), original=body, text=text)
    return FinalEvent(meta=meta, text=text, original=body)


def _classify_incomplete(meta: ResponseMeta, body: dict[str, Any]) -> ProviderEvent:
    details = body.get("incomplete_details")
    reason = optional_str(details, "reason") if isinstance(details, dict) else ""
    if reason == "content_filter":
        return RefusalEvent(meta=meta, text=_FILTERED_TEXT, original=body)
    return IncompleteEvent(meta=meta, reason=reason or "incomplete", original=body)


def _classify_failed(meta: ResponseMeta, body: dict[str, Any]) -> ProviderEvent:
    error = body.get("error")
    if not isinstance(error, dict):
        raise AdapterError("response.status is failed but response.error is missing")
    return error_event(meta, error, body)


def _classify(body: dict[str, Any]) -> ProviderEvent:
    if is_error_body(body, "output"):
        return error_event(_meta(body, ""), body["error"], body)
    meta = _meta(body, require_str(body, "id", "response"))
    status = require_str(body, "status", "response")
    output = require_list(body.get("output"), "response.output")
    if status == "completed":  # only a completed response's items are read: nothing else runs
        return _classify_completed(meta, body, _read_content(output))
    if status == "incomplete":
        return _classify_incomplete(meta, body)
    if status == "failed":
        return _classify_failed(meta, body)
    if status == "cancelled":
        return ProviderErrorEvent(
            meta=meta,
            kind=ErrorKind.OTHER,
            retryable=False,
            message="the response was cancelled",
            original=body,
        )
    if status in ("queued", "in_progress"):
        return IncompleteEvent(meta=meta, reason=status, original=body)
    raise AdapterError(f"response.status {status!r} is not a Responses API status")


def _without_nulls(value: Any) -> Any:
    """An output item as an input item: unchanged except that null fields are left out, at any
    depth (null means absent, and the input item types do not accept null for most of them)."""
    if isinstance(value, dict):
        return {key: _without_nulls(item) for key, item in value.items() if item is not None}
    if isinstance(value, list):
        return [_without_nulls(item) for item in value]
    return value


def output_as_input(response: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A response's output items (reasoning items included) as the input items that resend
    them: what a loop that sends the whole conversation puts before the function_call_output
    items of `append_results`."""
    output = response.get("output")
    return [_without_nulls(item) for item in output or [] if isinstance(item, dict)]


def _resend_output(event: ProviderEvent) -> list[dict[str, Any]]:
    return output_as_input(event.original)


class ResponsesStreamAssembler:
    """Assembles `POST /v1/responses` stream events (the JSON of each SSE `data:` line).

    Items are keyed by `output_index`; argument events name the item by `item_id` (the item's
    `id`, not its `call_id`) and `output_index`, and both must agree. Nothing is emitted before
    `response.completed` / `response.incomplete` / `response.failed`; an `error` event gives a
    ProviderErrorEvent. The terminal event's `response` is classified exactly as a complete
    response; when its `output` is empty, the items finished in the stream are used. A
    `{"_sentinel": "[DONE]"}` dict is accepted and ignored (the API ends the body instead).
    """

    def __init__(self) -> None:
        self._snapshot: dict[str, Any] = {}
        self._items: dict[int, dict[str, Any]] = {}
        self._arguments: dict[int, list[str]] = {}
        self._done: dict[int, dict[str, Any]] = {}
        self._index_by_id: dict[str, int] = {}
        self._terminal: dict[str, Any] | None = None
        self._error: ProviderErrorEvent | None = None

    def feed(self, event: dict[str, Any]) -> None:
        body = require_mapping(event, "stream event")
        if body.get("_sentinel") == DONE_SENTINEL:
            return
        kind = require_str(body, "type", "stream event")
        if kind in _LIFECYCLE_EVENTS:
            self._snapshot = require_mapping(body.get("response"), f"{kind}.response")
        elif kind in _TERMINAL_EVENTS:
            self._terminal = require_mapping(body.get("response"), f"{kind}.response")
        elif kind == "response.output_item.added":
            self._add_item(body)
        elif kind == "response.function_call_arguments.delta":
            self._arguments[self._item_index(body)].append(require_str(body, "delta", kind))
        elif kind == "response.output_item.done":
            self._finish_item(body)
        elif kind == "error":
            self._error = error_event(self._meta(), body, body)

    def finish(self) -> ProviderEvent:
        if self._error is not None:
            return self._error
        if self._terminal is None:
            return IncompleteEvent(meta=self._meta(), reason="stream_cut", original=self._snapshot)
        response = dict(self._terminal)
        if response.get("output"):
            self._check_against_stream(require_list(response["output"], "response.output"))
        else:
            response["output"] = self._assembled_output()
        return _classify(response)

    def _meta(self) -> ResponseMeta:
        return _meta(self._snapshot, optional_str(self._snapshot, "id"))

    def _add_item(self, body: dict[str, Any]) -> None:
        kind = "response.output_item.added"
        index = require_int(body, "output_index", kind)
        item = copy.deepcopy(require_mapping(body.get("item"), f"{kind}.item"))
        self._items[index] = item
        self._arguments[index] = [optional_str(item, "arguments")]
        if isinstance(item.get("id"), str):
            self._index_by_id[item["id"]] = index

    def _finish_item(self, body: dict[str, Any]) -> None:
        kind = "response.output_item.done"
        index = require_int(body, "output_index", kind)
        item = copy.deepcopy(require_mapping(body.get("item"), f"{kind}.item"))
        streamed = join_fragments(self._arguments.get(index, []))
        if item.get("type") == "function_call" and streamed and streamed != item.get("arguments"):
            raise AdapterError(
                f"the argument deltas of output_index {index} do not add up to "
                "the finished item's arguments"
            )
        self._done[index] = item

    def _item_index(self, body: dict[str, Any]) -> int:
        kind = optional_str(body, "type")
        index = require_int(body, "output_index", kind)
        item_id = require_str(body, "item_id", kind)
        if index not in self._items or self._index_by_id.get(item_id, index) != index:
            raise AdapterError(
                f"{kind} names item {item_id!r} at output_index {index}, "
                "which no response.output_item.added announced"
            )
        return index

    def _assembled_output(self) -> list[dict[str, Any]]:
        output = []
        for index in sorted(self._items.keys() | self._done.keys()):
            item = self._done.get(index)
            if item is None:  # never finished: keeps its in_progress status, so not runnable
                item = dict(self._items[index])
                if item.get("type") == "function_call":
                    item["arguments"] = join_fragments(self._arguments[index])
            output.append(item)
        return output

    def _check_against_stream(self, output: list[Any]) -> None:
        streamed = {
            optional_str(item, "call_id"): item.get("arguments")
            for item in self._done.values()
            if item.get("type") == "function_call"
        }
        for item in output:
            if not isinstance(item, dict) or item.get("type") != "function_call":
                continue
            call_id = optional_str(item, "call_id")
            if call_id in streamed and streamed[call_id] != item.get("arguments"):
                raise AdapterError(
                    f"the stream and the final response disagree on the "
                    f"arguments of call {call_id!r}"
                )


class OpenAIResponsesAdapter:
    provider = PROVIDER
    api_versions = API_VERSIONS

    def read_complete_event(self, response: dict[str, Any]) -> ProviderEvent:
        return _classify(require_mapping(response, "response"))

    def new_stream_assembler(self) -> ResponsesStreamAssembler:
        return ResponsesStreamAssembler()

    def append_results(
        self, event: ToolRequestEvent, results: Sequence[ToolResult]
    ) -> list[dict[str, Any]]:
        """One `function_call_output` item per call, in the model's order (docs/api.md)."""
        return [
            {"type": "function_call_output", "call_id": call.call_id, "output": result_text(result)}
            for call, result in results_in_call_order(event, results)
        ]

    def extend_conversation(
        self,
        conversation: list[dict[str, Any]],
        event: ProviderEvent,
        results: Sequence[ToolResult],
    ) -> list[dict[str, Any]]:
        """`conversation` + every output item of the response (reasoning items included) +
        the results. A completed final answer or refusal adds its output items; an
        incomplete, filtered or failed turn adds nothing (partial output is not resent)."""
        extended = copy.deepcopy(conversation)
        if isinstance(event, ToolRequestEvent):
            return extended + _resend_output(event) + self.append_results(event, results)
        if isinstance(event, FinalEvent | RefusalEvent) and (
            event.original.get("status") == "completed"
        ):
            return extended + _resend_output(event)
        return extended

    def tool_declarations(self, tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
        return [
            {
                "type": "function",
                "name": tool.name,
                "description": tool.description,
                "parameters": copy.deepcopy(tool.input_schema),
                "strict": strict_compatible(tool.input_schema),
            }
            for tool in tools
        ]


ADAPTER = OpenAIResponsesAdapter()
