"""AWS Bedrock Converse / ConverseStream (provider `aws.bedrock_converse`, 2023-09-30).

Input is what botocore parses: the `converse` response dict (an extra `ResponseMetadata` key is
ignored), each `converse_stream` event dict, or an error (`ClientError.response`, i.e.
`{"Error": {"Code", "Message"}}`, or an error body `{"__type"|"Code": …, "message": …}`).
Converse responses carry no response ID: `ResponseMeta.response_id` stays empty and the
gateway requires the request's `turn_id`. They carry no model name either.

Classification (stopReason):

- tool_use (with ≥1 toolUse block)                → ToolRequestEvent
- end_turn, stop_sequence                         → FinalEvent
- max_tokens, model_context_window_exceeded       → IncompleteEvent
- guardrail_intervened, content_filtered          → RefusalEvent
- malformed_model_output, malformed_tool_use, tool_use without a toolUse block
                                                  → retryable ProviderErrorEvent
- an unknown stopReason                           → non-retryable ProviderErrorEvent
- an error (HTTP exception or stream exception event) → ProviderErrorEvent by its type

Conversation items are Converse `Message`s: the assistant message with its content blocks as
returned (reasoningContent blocks included: they must be echoed), then one user message with a
`toolResult` block per toolUse, in the model's order: content `[{"text": result_text(...)}]`
and status `success` or `error`. Tool declarations are the `toolConfig.tools` list.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

from adapters._bedrock_converse_stream import BedrockStreamAssembler
from adapters._common import parse_object
from adapters._gemini_bedrock_common import (
    compact_json,
    count,
    pick_result,
    qualifies_for_strict,
    require_dict,
    require_list,
    require_text,
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

PROVIDER = "aws.bedrock_converse"
API_VERSIONS = ("2023-09-30",)

_FINAL = frozenset({"end_turn", "stop_sequence"})
_TRUNCATED = frozenset({"max_tokens", "model_context_window_exceeded"})
_REFUSED = frozenset({"guardrail_intervened", "content_filtered"})
_MALFORMED = frozenset({"malformed_model_output", "malformed_tool_use"})

# exception type (HTTP or stream event, first letter upper-cased) → (kind, retryable)
_EXCEPTIONS: dict[str, tuple[ErrorKind, bool]] = {
    "ThrottlingException": (ErrorKind.RATE_LIMIT, True),
    "ServiceQuotaExceededException": (ErrorKind.RATE_LIMIT, False),
    "ModelTimeoutException": (ErrorKind.TIMEOUT, True),
    "ServiceUnavailableException": (ErrorKind.SERVER, True),
    "InternalServerException": (ErrorKind.SERVER, True),
    "ModelNotReadyException": (ErrorKind.SERVER, True),
    "ModelStreamErrorException": (ErrorKind.SERVER, True),
}


class BedrockConverseAdapter:
    provider = PROVIDER
    api_versions = API_VERSIONS

    def read_complete_event(self, response: dict[str, Any]) -> ProviderEvent:
        body = require_dict(response, "response")
        error = error_of(body)
        if error is not None:
            return _error_event(*error, original=body)
        stop = require_text(body.get("stopReason"), "stopReason")
        content = _content(body)
        meta = _meta(body)
        return _classify(stop, content, meta, body)

    def new_stream_assembler(self) -> BedrockStreamAssembler:
        meta = ResponseMeta(provider=PROVIDER, api_version=API_VERSIONS[0])
        return BedrockStreamAssembler(self.read_complete_event, meta)

    def append_results(
        self, event: ToolRequestEvent, results: Sequence[ToolResult]
    ) -> list[dict[str, Any]]:
        blocks = [{"toolResult": _tool_result(call, results)} for call in event.calls]
        return [assistant_message(event), {"role": "user", "content": blocks}]

    def extend_conversation(
        self,
        conversation: list[dict[str, Any]],
        event: ProviderEvent,
        results: Sequence[ToolResult],
    ) -> list[dict[str, Any]]:
        if isinstance(event, ToolRequestEvent):
            return [*conversation, *self.append_results(event, results)]
        if isinstance(event, FinalEvent):
            return [*conversation, assistant_message(event)]
        return list(conversation)

    def tool_declarations(self, tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
        return [{"toolSpec": _tool_spec(tool)} for tool in tools]


ADAPTER = BedrockConverseAdapter()


# -- reading a response -------------------------------------------------------------------


def _content(body: dict[str, Any]) -> list[dict[str, Any]]:
    output = require_dict(body.get("output"), "output")
    message = require_dict(output.get("message"), "output.message")
    blocks = require_list(message.get("content"), "output.message.content")
    return [require_dict(block, f"output.message.content[{i}]") for i, block in enumerate(blocks)]


def _meta(body: dict[str, Any]) -> ResponseMeta:
    usage = body.get("usage")
    usage = usage if isinstance(usage, dict) else {}
    return ResponseMeta(
        provider=PROVIDER,
        api_version=API_VERSIONS[0],
        input_tokens=count(usage, "inputTokens", "cacheReadInputTokens", "cacheWriteInputTokens"),
        output_tokens=count(usage, "outputTokens"),
    )


def _classify(
    stop: str, content: list[dict[str, Any]], meta: ResponseMeta, body: dict[str, Any]
) -> ProviderEvent:
    text = _visible_text(content)
    if stop == "tool_use":
        calls = tuple(_call(block, i) for i, block in enumerate(content) if "toolUse" in block)
        if calls:
            return ToolRequestEvent(meta, calls, original=body, text=text)
        return ProviderErrorEvent(
            meta,
            ErrorKind.OTHER,
            "stopReason tool_use without a toolUse block",
            True,
            original=body,
        )
    if stop in _FINAL:
        return FinalEvent(meta, text, original=body)
    if stop in _TRUNCATED:
        return IncompleteEvent(meta, stop, original=body)
    if stop in _REFUSED:
        return RefusalEvent(meta, text or f"blocked: stopReason {stop}", original=body)
    return ProviderErrorEvent(
        meta, ErrorKind.OTHER, f"stopReason {stop}", stop in _MALFORMED, original=body
    )


def _visible_text(content: list[dict[str, Any]]) -> str:
    """Text blocks only: reasoningContent never reaches the visible text."""
    return "".join(block["text"] for block in content if isinstance(block.get("text"), str))


def _call(block: dict[str, Any], index: int) -> NormalizedCall:
    where = f"output.message.content[{index}].toolUse"
    use = require_dict(block["toolUse"], where)
    call_id = require_text(use.get("toolUseId"), f"{where}.toolUseId")
    name = require_text(use.get("name"), f"{where}.name")
    if "input" not in use:
        raise AdapterError(f"{where}.input is missing", code="malformed_response")
    arguments_json, arguments = _arguments(use["input"])
    return NormalizedCall(
        call_id=call_id,
        name=name,
        arguments_json=arguments_json,
        arguments=arguments,
        original=block,
    )


def _arguments(value: Any) -> tuple[str, dict[str, Any] | None]:
    """`input` is a JSON document; a string is JSON text the stream could not parse."""
    if isinstance(value, str):
        return value, parse_object(value)
    return compact_json(value), value if isinstance(value, dict) else None


# -- errors -------------------------------------------------------------------------------


def error_of(body: dict[str, Any]) -> tuple[str, str] | None:
    """(exception type, message) when `body` is an error rather than a Converse response."""
    if isinstance(body.get("Error"), dict):
        body = body["Error"]
    kind = body.get("__type", body.get("Code"))
    if not isinstance(kind, str) or "stopReason" in body:
        return None
    message = body.get("message", body.get("Message", ""))
    return _exception_name(kind), message if isinstance(message, str) else str(message)


def _exception_name(kind: str) -> str:
    """`com.amazon…#ThrottlingException`, `ThrottlingException:http://…` or the stream's
    `throttlingException` → `ThrottlingException`."""
    name = kind.rsplit("#", 1)[-1].split(":", 1)[0]
    return name[:1].upper() + name[1:]


def _error_event(name: str, message: str, original: dict[str, Any]) -> ProviderErrorEvent:
    kind, retryable = _EXCEPTIONS.get(name, (ErrorKind.OTHER, False))
    meta = ResponseMeta(provider=PROVIDER, api_version=API_VERSIONS[0])
    return ProviderErrorEvent(meta, kind, f"{name}: {message}", retryable, original=original)


# -- shaping the next request -------------------------------------------------------------


def assistant_message(event: ToolRequestEvent | FinalEvent) -> dict[str, Any]:
    """The assistant message to resend: its content blocks as returned."""
    output = event.original.get("output")
    message = output.get("message") if isinstance(output, dict) else None
    if isinstance(message, dict) and isinstance(message.get("content"), list):
        return {"role": "assistant", "content": copy.deepcopy(message["content"])}
    if isinstance(event, FinalEvent):
        return {"role": "assistant", "content": [{"text": event.text}]}
    return {"role": "assistant", "content": [copy.deepcopy(call.original) for call in event.calls]}


def _tool_result(call: NormalizedCall, results: Sequence[ToolResult]) -> dict[str, Any]:
    result = pick_result(
        results, lambda r: r.call_id == call.call_id, f"call {call.call_id} ({call.name})"
    )
    return {
        "toolUseId": call.call_id,
        "content": [{"text": result_text(result)}],
        "status": "success" if result.ok else "error",
    }


def _tool_spec(tool: ToolSpec) -> dict[str, Any]:
    spec: dict[str, Any] = {"name": tool.name}
    if tool.description:
        spec["description"] = tool.description
    spec["inputSchema"] = {"json": copy.deepcopy(tool.input_schema)}
    if qualifies_for_strict(tool.input_schema):
        spec["strict"] = True
    return spec
