"""OpenAI Chat Completions (`POST /v1/chat/completions`), provider `openai.chat_completions`.

Classification of a complete response, by `choices[0].finish_reason` and `message.refusal`:

| response                                              | event                          |
|-------------------------------------------------------|--------------------------------|
| `message.refusal` non-empty (any finish_reason)       | RefusalEvent                   |
| `tool_calls`                                          | ToolRequestEvent               |
| `stop` with `message.tool_calls` (forced tool_choice) | ToolRequestEvent               |
| `stop` otherwise                                      | FinalEvent (`message.content`) |
| `content_filter`                                      | RefusalEvent                   |
| `length`, or a reason this module does not know       | IncompleteEvent(finish_reason) |
| `function_call` (legacy `functions` API)              | AdapterError: not supported    |
| an HTTP error body, or a stream chunk `{"error": ...}` | ProviderErrorEvent             |

Exactly one choice is accepted (callgate cannot pick among `n > 1` alternatives). Tool calls of
a type other than `function` (custom tools) are refused as malformed: callgate declares only
function tools and could not answer them.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass, field
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

PROVIDER = "openai.chat_completions"
API_VERSIONS = ("v1",)

_FILTERED_TEXT = "The response was stopped by the content filter."


def _meta(body: dict[str, Any], response_id: str) -> ResponseMeta:
    usage = body.get("usage")
    return ResponseMeta(
        provider=PROVIDER,
        api_version=API_VERSIONS[0],
        model=optional_str(body, "model"),
        response_id=response_id,
        input_tokens=token_count(usage, "prompt_tokens"),
        output_tokens=token_count(usage, "completion_tokens"),
    )


def _only_choice(body: dict[str, Any]) -> dict[str, Any]:
    choices = require_list(body.get("choices"), "response.choices")
    if len(choices) != 1:
        raise AdapterError(
            f"response.choices has {len(choices)} entries; exactly one (n=1) is accepted"
        )
    return require_mapping(choices[0], "response.choices[0]")


def _read_call(raw: Any, index: int) -> NormalizedCall:
    where = f"response.choices[0].message.tool_calls[{index}]"
    tool_call = require_mapping(raw, where)
    if tool_call.get("type") != "function":
        raise AdapterError(
            f"{where}.type is {tool_call.get('type')!r}; callgate answers only function tool calls"
        )
    call_id = require_str(tool_call, "id", where)
    if not call_id:
        raise AdapterError(f"{where}.id is empty")
    function = require_mapping(tool_call.get("function"), f"{where}.function")
    return make_call(
        call_id,
        require_str(function, "name", f"{where}.function"),
        require_str(function, "arguments", f"{where}.function"),
        tool_call,
    )


def _read_calls(message: dict[str, Any]) -> list[NormalizedCall]:
    tool_calls = message.get("tool_calls")
    if tool_calls is None:
        return []
    listed = require_list(tool_calls, "response.choices[0].message.tool_calls")
    return [_read_call(raw, index) for index, raw in enumerate(listed)]


def _content_text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if content is not None and not isinstance(content, str):
        raise AdapterError("response.choices[0].message.content must be a string or null")
    return content or ""


def _classify_finish(
    meta: ResponseMeta, body: dict[str, Any], message: dict[str, Any], finish: str
) -> ProviderEvent:
    text = _content_text(message)
    if finish in ("tool_calls", "stop"):
        calls = _read_calls(message)
        if calls:
            return ToolRequestEvent(meta=meta, calls=tuple(calls), original=body, text=text)
        if finish == "tool_calls":
            raise AdapterError("finish_reason is tool_calls but message.tool_calls is empty")
        return FinalEvent(meta=meta, text=text, original=body)
    if finish == "content_filter":
        return RefusalEvent(meta=meta, text=_FILTERED_TEXT, original=body)
    if finish == "function_call":
        raise AdapterError(
            "finish_reason function_call (legacy `functions` API) is not "
            "supported; declare tools instead"
        )
    return IncompleteEvent(meta=meta, reason=finish, original=body)


def _classify(body: dict[str, Any]) -> ProviderEvent:
    if is_error_body(body, "choices"):
        return error_event(_meta(body, ""), body["error"], body)
    meta = _meta(body, require_str(body, "id", "response"))
    choice = _only_choice(body)
    message = require_mapping(choice.get("message"), "response.choices[0].message")
    finish = require_str(choice, "finish_reason", "response.choices[0]")
    refusal = message.get("refusal")
    if isinstance(refusal, str) and refusal:
        return RefusalEvent(meta=meta, text=refusal, original=body)
    return _classify_finish(meta, body, message, finish)


def _response_message(event: ProviderEvent) -> dict[str, Any]:
    choices = event.original.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        message = choices[0].get("message")
        if isinstance(message, dict):
            return message
    return {}


def _assistant_message(event: ProviderEvent) -> dict[str, Any]:
    """The response's assistant message as a request message: role, content, and refusal or
    tool calls when the response had them, each exactly as returned."""
    message = _response_message(event)
    resent: dict[str, Any] = {"role": "assistant", "content": message.get("content")}
    if isinstance(message.get("refusal"), str) and message["refusal"]:
        resent["refusal"] = message["refusal"]
    if isinstance(event, ToolRequestEvent):
        resent["tool_calls"] = [copy.deepcopy(call.original) for call in event.calls]
    return resent


@dataclass
class _CallFragments:
    call_id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)

    def set_once(self, attribute: str, value: Any, index: int) -> None:
        if not isinstance(value, str) or not value:
            return
        current = getattr(self, attribute)
        if current and current != value:
            raise AdapterError(f"tool call index {index} got a second, different {attribute}")
        setattr(self, attribute, value)

    def as_tool_call(self) -> dict[str, Any]:
        return {
            "id": self.call_id,
            "type": "function",
            "function": {"name": self.name, "arguments": join_fragments(self.arguments)},
        }


class ChatStreamAssembler:
    """Assembles `POST /v1/chat/completions` stream chunks (the JSON of each SSE `data:` line).

    Tool-call fragments are keyed by `delta.tool_calls[].index` (they may interleave); `id` and
    `function.name` come with the first fragment of an index (a repeat of the same value is
    tolerated, a different one is refused); `function.arguments` fragments are concatenated.
    The choice's `finish_reason` is the completion event: only after it is anything emitted,
    and the assembled completion is classified exactly like a non-streamed one. The usage chunk
    (`choices: []`) may follow it. The `[DONE]` line may be fed as `{"_sentinel": "[DONE]"}` or
    left out (the stream simply ends); it is not required, and a stream without a
    `finish_reason` is IncompleteEvent("stream_cut") either way. A chunk `{"error": {...}}`
    gives a ProviderErrorEvent.
    """

    def __init__(self) -> None:
        self._head: dict[str, Any] = {}
        self._content: list[str] | None = None
        self._refusal: list[str] | None = None
        self._calls: dict[int, _CallFragments] = {}
        self._finish_reason: str | None = None
        self._sentinel_seen = False
        self._error: ProviderErrorEvent | None = None

    def feed(self, event: dict[str, Any]) -> None:
        chunk = require_mapping(event, "stream chunk")
        if self._sentinel_seen:
            raise AdapterError("a stream chunk arrived after [DONE]")
        if chunk.get("_sentinel") == DONE_SENTINEL:
            self._sentinel_seen = True
        elif is_error_body(chunk, "choices"):
            self._error = error_event(self._meta(), chunk["error"], chunk)
        else:
            self._read_head(chunk)
            for index, choice in enumerate(require_list(chunk.get("choices"), "chunk.choices")):
                self._read_choice(require_mapping(choice, f"chunk.choices[{index}]"))

    def finish(self) -> ProviderEvent:
        if self._error is not None:
            return self._error
        if self._finish_reason is None:
            return IncompleteEvent(meta=self._meta(), reason="stream_cut", original=self._head)
        return _classify(self._completion())

    def _meta(self) -> ResponseMeta:
        return _meta(self._head, optional_str(self._head, "id"))

    def _read_head(self, chunk: dict[str, Any]) -> None:
        chunk_id = require_str(chunk, "id", "chunk")
        if self._head.get("id", chunk_id) != chunk_id:
            raise AdapterError(
                f"chunk of completion {chunk_id!r} in the stream of {self._head['id']!r}"
            )
        for key in ("id", "created", "model", "system_fingerprint", "service_tier", "usage"):
            if chunk.get(key) is not None:
                self._head[key] = chunk[key]

    def _read_choice(self, choice: dict[str, Any]) -> None:
        if require_int(choice, "index", "chunk.choices[]") != 0:
            raise AdapterError(
                "chunk has a choice with index other than 0; exactly one (n=1) is accepted"
            )
        delta = require_mapping(choice.get("delta"), "chunk.choices[0].delta")
        if isinstance(delta.get("content"), str):
            self._content = (self._content or []) + [delta["content"]]
        if isinstance(delta.get("refusal"), str):
            self._refusal = (self._refusal or []) + [delta["refusal"]]
        fragments = delta.get("tool_calls")
        for fragment in (
            require_list(fragments, "chunk.choices[0].delta.tool_calls")
            if fragments is not None
            else []
        ):
            self._read_fragment(require_mapping(fragment, "chunk.choices[0].delta.tool_calls[]"))
        if isinstance(choice.get("finish_reason"), str):
            self._finish_reason = choice["finish_reason"]

    def _read_fragment(self, fragment: dict[str, Any]) -> None:
        index = require_int(fragment, "index", "delta.tool_calls[]")
        if fragment.get("type") not in (None, "function"):
            raise AdapterError(
                f"tool call index {index} has type {fragment.get('type')!r}; "
                "callgate answers only function tool calls"
            )
        slot = self._calls.setdefault(index, _CallFragments())
        slot.set_once("call_id", fragment.get("id"), index)
        function = fragment.get("function")
        function = (
            {}
            if function is None
            else require_mapping(function, f"delta.tool_calls[{index}].function")
        )
        slot.set_once("name", function.get("name"), index)
        if isinstance(function.get("arguments"), str):
            slot.arguments.append(function["arguments"])

    def _completion(self) -> dict[str, Any]:
        message: dict[str, Any] = {
            "role": "assistant",
            "content": None if self._content is None else join_fragments(self._content),
            "refusal": join_fragments(self._refusal) if self._refusal else None,
        }
        if self._calls:
            message["tool_calls"] = [self._calls[i].as_tool_call() for i in sorted(self._calls)]
        choice = {
            "index": 0,
            "message": message,
            "finish_reason": self._finish_reason,
            "logprobs": None,
        }
        head = {key: value for key, value in self._head.items() if key != "usage"}
        completion = {**head, "object": "chat.completion", "choices": [choice]}
        if "usage" in self._head:
            completion["usage"] = self._head["usage"]
        return completion


class OpenAIChatAdapter:
    provider = PROVIDER
    api_versions = API_VERSIONS

    def read_complete_event(self, response: dict[str, Any]) -> ProviderEvent:
        return _classify(require_mapping(response, "response"))

    def new_stream_assembler(self) -> ChatStreamAssembler:
        return ChatStreamAssembler()

    def append_results(
        self, event: ToolRequestEvent, results: Sequence[ToolResult]
    ) -> list[dict[str, Any]]:
        """The assistant message (content and tool_calls as returned), then one `tool`
        message per call ID in the model's order (docs/api.md)."""
        pairs = results_in_call_order(event, results)
        tool_messages = [
            {"role": "tool", "tool_call_id": call.call_id, "content": result_text(result)}
            for call, result in pairs
        ]
        return [_assistant_message(event), *tool_messages]

    def extend_conversation(
        self,
        conversation: list[dict[str, Any]],
        event: ProviderEvent,
        results: Sequence[ToolResult],
    ) -> list[dict[str, Any]]:
        """`conversation` + the assistant message + the tool messages. A final answer or a
        model refusal adds its assistant message; a filtered, truncated or failed turn adds
        nothing (partial output is not resent)."""
        extended = copy.deepcopy(conversation)
        if isinstance(event, ToolRequestEvent):
            return extended + self.append_results(event, results)
        if isinstance(event, FinalEvent | RefusalEvent) and _finished(event):
            return extended + [_assistant_message(event)]
        return extended

    def tool_declarations(self, tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
        return [
            {
                "type": "function",
                "function": {
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": copy.deepcopy(tool.input_schema),
                    "strict": strict_compatible(tool.input_schema),
                },
            }
            for tool in tools
        ]


def _finished(event: ProviderEvent) -> bool:
    choices = event.original.get("choices")
    first = choices[0] if isinstance(choices, list) and choices else None
    return isinstance(first, dict) and first.get("finish_reason") == "stop"


ADAPTER = OpenAIChatAdapter()
