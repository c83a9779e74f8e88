"""Google Gemini `generateContent` / `streamGenerateContent` (provider `google.gemini`).

Wire format: the REST JSON of the Gemini API (camelCase), one `GenerateContentResponse` per
response or per stream chunk. Only the first candidate (index 0) is read.

Classification (candidates[0].finishReason; Gemini has no tool-call finish reason):

- `error` object (an API error body)              → ProviderErrorEvent
- no candidates and promptFeedback.blockReason    → RefusalEvent (the prompt was blocked)
- STOP with functionCall parts                    → ToolRequestEvent
- STOP without functionCall parts                 → FinalEvent
- MAX_TOKENS, CONTINUATION, finishReason missing  → IncompleteEvent
- SAFETY, RECITATION, BLOCKLIST, PROHIBITED_CONTENT, SPII, LANGUAGE, IMAGE_SAFETY, … → RefusalEvent
- MALFORMED_FUNCTION_CALL, UNEXPECTED_TOOL_CALL, MALFORMED_RESPONSE → retryable ProviderErrorEvent
- OTHER, TOO_MANY_TOOL_CALLS, anything unknown    → non-retryable ProviderErrorEvent

Call IDs: `functionCall.id` is optional. A call without one keeps `call_id == ""`; the gateway
then assigns `<turn_id>#<index>` (`adapters.events.fallback_call_id`), where index is the
call's 0-based position among the response's calls. `append_results` answers such a call with
the result whose call ID ends in `#<index>`, and echoes `functionResponse.id` only when the
model gave one.

Conversation items are Gemini `Content` objects: the model's content exactly as returned
(role `model`, every part kept, including `thought` parts and `thoughtSignature`s, which must
be echoed back), then one `user` content with a `functionResponse` part per call, in the
model's order. Tool declarations are the value of the request's `tools` field: one `Tool` with
`functionDeclarations` carrying the manifest's JSON Schema as `parametersJsonSchema`.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

from adapters._gemini_bedrock_common import (
    compact_json,
    count,
    optional_text,
    pick_result,
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
    fallback_call_id,
)
from adapters.results import result_object

PROVIDER = "google.gemini"
API_VERSIONS = ("v1beta", "v1")

_TRUNCATED = frozenset({"MAX_TOKENS", "CONTINUATION"})
_REFUSED = frozenset(
    {
        "SAFETY",
        "RECITATION",
        "LANGUAGE",
        "BLOCKLIST",
        "PROHIBITED_CONTENT",
        "SPII",
        "IMAGE_SAFETY",
        "IMAGE_PROHIBITED_CONTENT",
        "IMAGE_RECITATION",
        "MODEL_ARMOR",
        "ESCALATION",
        "PUP_LIMITED_DISABLED",
    }
)
_RETRYABLE_ERRORS = frozenset(
    {"MALFORMED_FUNCTION_CALL", "UNEXPECTED_TOOL_CALL", "MALFORMED_RESPONSE"}
)

# google.rpc status (and HTTP code) of an API error body → (kind, retryable)
_API_ERRORS: dict[str, tuple[ErrorKind, bool]] = {
    "RESOURCE_EXHAUSTED": (ErrorKind.RATE_LIMIT, True),
    "DEADLINE_EXCEEDED": (ErrorKind.TIMEOUT, True),
    "UNAVAILABLE": (ErrorKind.SERVER, True),
    "INTERNAL": (ErrorKind.SERVER, True),
}
_HTTP_STATUS = {
    429: "RESOURCE_EXHAUSTED",
    504: "DEADLINE_EXCEEDED",
    503: "UNAVAILABLE",
    500: "INTERNAL",
}


class GeminiAdapter:
    """Adapter for `google.gemini`; `api_version` is recorded in every ResponseMeta."""

    provider = PROVIDER
    api_versions = API_VERSIONS

    def __init__(self, api_version: str = API_VERSIONS[0]) -> None:
        if api_version not in API_VERSIONS:
            raise AdapterError(
                f"provider {PROVIDER} does not accept api_version {api_version!r}",
                code="unknown_provider",
            )
        self.api_version = api_version

    def read_complete_event(self, response: dict[str, Any]) -> ProviderEvent:
        body = require_dict(response, "response")
        if "error" in body:
            return self._api_error(body)
        meta = _meta(body, self.api_version)
        candidates = body.get("candidates")
        if not candidates:
            return self._without_candidates(body, meta)
        candidate = require_dict(require_list(candidates, "candidates")[0], "candidates[0]")
        return self._classify(body, candidate, meta)

    def new_stream_assembler(self) -> GeminiStreamAssembler:
        return GeminiStreamAssembler(self)

    def append_results(
        self, event: ToolRequestEvent, results: Sequence[ToolResult]
    ) -> list[dict[str, Any]]:
        answers = [
            _function_response(call, index, event.calls, results)
            for index, call in enumerate(event.calls)
        ]
        return [model_content(event), {"role": "user", "parts": answers}]

    def extend_conversation(
        self,
        conversation: list[dict[str, Any]],
        event: ProviderEvent,
        results: Sequence[ToolResult],
    ) -> list[dict[str, Any]]:
        if isinstance(event, ToolRequestEvent):
            return [*conversation, *self.append_results(event, results)]
        if isinstance(event, FinalEvent) and _candidate_content(event.original) is not None:
            return [*conversation, model_content(event)]
        return list(conversation)

    def tool_declarations(self, tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
        if not tools:
            return []
        declarations = [
            {
                "name": tool.name,
                "description": tool.description,
                "parametersJsonSchema": copy.deepcopy(tool.input_schema),
            }
            for tool in tools
        ]
        return [{"functionDeclarations": declarations}]

    # -- classification -------------------------------------------------------------------

    def _api_error(self, body: dict[str, Any]) -> ProviderErrorEvent:
        error = require_dict(body["error"], "error")
        status = _error_status(error)
        kind, retryable = _API_ERRORS.get(status, (ErrorKind.OTHER, False))
        message = f"{status or error.get('code', 'error')}: {error.get('message', '')}"
        meta = ResponseMeta(provider=PROVIDER, api_version=self.api_version)
        return ProviderErrorEvent(meta, kind, message, retryable, original=body)

    def _without_candidates(self, body: dict[str, Any], meta: ResponseMeta) -> ProviderEvent:
        feedback = body.get("promptFeedback")
        feedback = feedback if isinstance(feedback, dict) else {}
        reason = feedback.get("blockReason")
        if not isinstance(reason, str) or not reason:
            raise AdapterError(
                "response has no candidates and no promptFeedback.blockReason",
                code="malformed_response",
            )
        text = feedback.get("blockReasonMessage")
        return RefusalEvent(
            meta,
            text if isinstance(text, str) and text else f"prompt blocked: {reason}",
            original=body,
        )

    def _classify(
        self, body: dict[str, Any], candidate: dict[str, Any], meta: ResponseMeta
    ) -> ProviderEvent:
        reason = optional_text(candidate.get("finishReason"), "candidates[0].finishReason")
        parts = _parts(candidate)
        if reason == "STOP":
            calls = _calls(parts)
            if calls:
                return ToolRequestEvent(meta, calls, original=body, text=_visible_text(parts))
            return FinalEvent(meta, _visible_text(parts), original=body)
        if not reason or reason in _TRUNCATED:
            return IncompleteEvent(meta, reason or "finish_reason_missing", original=body)
        message = optional_text(candidate.get("finishMessage"), "candidates[0].finishMessage")
        if reason in _REFUSED:
            return RefusalEvent(meta, message or f"blocked: finishReason {reason}", original=body)
        return ProviderErrorEvent(
            meta,
            ErrorKind.OTHER,
            message or f"finishReason {reason}",
            reason in _RETRYABLE_ERRORS,
            original=body,
        )


ADAPTER = GeminiAdapter()


def _meta(body: dict[str, Any], api_version: str) -> ResponseMeta:
    usage = body.get("usageMetadata")
    usage = usage if isinstance(usage, dict) else {}
    return ResponseMeta(
        provider=PROVIDER,
        api_version=api_version,
        model=optional_text(body.get("modelVersion"), "modelVersion"),
        response_id=optional_text(body.get("responseId"), "responseId"),
        input_tokens=count(usage, "promptTokenCount", "toolUsePromptTokenCount"),
        output_tokens=count(usage, "candidatesTokenCount", "thoughtsTokenCount"),
    )


def _error_status(error: dict[str, Any]) -> str:
    """The google.rpc status name of an API error body, from `status` or the HTTP `code`."""
    status = error.get("status")
    if isinstance(status, str):
        return status
    code = error.get("code")
    return _HTTP_STATUS.get(code, "") if isinstance(code, int) else ""


# -- reading parts and calls --------------------------------------------------------------


def _parts(candidate: dict[str, Any]) -> list[dict[str, Any]]:
    content = candidate.get("content")
    if content is None:
        return []
    parts = require_dict(content, "candidates[0].content").get("parts")
    if parts is None:
        return []
    return [
        require_dict(part, f"candidates[0].content.parts[{i}]")
        for i, part in enumerate(require_list(parts, "candidates[0].content.parts"))
    ]


def _visible_text(parts: list[dict[str, Any]]) -> str:
    """The text parts the user may see: thought parts are never included."""
    return "".join(
        part["text"]
        for part in parts
        if isinstance(part.get("text"), str) and not part.get("thought")
    )


def _calls(parts: list[dict[str, Any]]) -> tuple[NormalizedCall, ...]:
    return tuple(_call(part, i) for i, part in enumerate(parts) if "functionCall" in part)


def _call(part: dict[str, Any], index: int) -> NormalizedCall:
    where = f"candidates[0].content.parts[{index}].functionCall"
    call = require_dict(part["functionCall"], where)
    name = require_text(call.get("name"), f"{where}.name")
    call_id = optional_text(call.get("id"), f"{where}.id")
    args = call.get("args", {})
    arguments = args if isinstance(args, dict) else None
    return NormalizedCall(
        call_id=call_id,
        name=name,
        arguments_json=compact_json(args),
        arguments=arguments,
        original=part,
    )


# -- shaping the next request -------------------------------------------------------------


def _candidate_content(response: dict[str, Any]) -> dict[str, Any] | None:
    candidates = response.get("candidates")
    if not isinstance(candidates, list) or not candidates:
        return None
    first = candidates[0]
    content = first.get("content") if isinstance(first, dict) else None
    return content if isinstance(content, dict) else None


def model_content(event: ToolRequestEvent | FinalEvent) -> dict[str, Any]:
    """The model's own `Content` to resend: as returned, with role `model`."""
    content = _candidate_content(event.original)
    if content is None:
        if isinstance(event, FinalEvent):
            return {"role": "model", "parts": [{"text": event.text}]}
        return {"role": "model", "parts": [copy.deepcopy(call.original) for call in event.calls]}
    return {**copy.deepcopy(content), "role": "model"}


def _function_response(
    call: NormalizedCall, index: int, calls: Sequence[NormalizedCall], results: Sequence[ToolResult]
) -> dict[str, Any]:
    result = _result_for(call, index, calls, results)
    answer: dict[str, Any] = {"name": call.name, "response": result_object(result)}
    if call.call_id:
        answer = {"id": call.call_id, **answer}
    return {"functionResponse": answer}


def _result_for(
    call: NormalizedCall, index: int, calls: Sequence[NormalizedCall], results: Sequence[ToolResult]
) -> ToolResult:
    if call.call_id:
        return pick_result(
            results, lambda r: r.call_id == call.call_id, f"call {call.call_id} ({call.name})"
        )
    given_ids = {c.call_id for c in calls if c.call_id}
    suffix = fallback_call_id("", index)
    return pick_result(
        results,
        lambda r: (
            r.call_id.endswith(suffix)
            and r.call_id not in given_ids
            and len(r.call_id) > len(suffix)
        ),
        f"call #{index} ({call.name}, no functionCall.id; expected a call ID ending in {suffix!r})",
    )


# -- streaming ----------------------------------------------------------------------------

_CHUNK_KEYS = frozenset(
    {
        "candidates",
        "promptFeedback",
        "usageMetadata",
        "modelVersion",
        "responseId",
        "createTime",
        "modelStatus",
    }
)
_TOP_LEVEL = (
    "responseId",
    "modelVersion",
    "usageMetadata",
    "promptFeedback",
    "createTime",
    "modelStatus",
)


class GeminiStreamAssembler:
    """Assembles `streamGenerateContent?alt=sse` chunks (each a GenerateContentResponse).

    Function calls arrive whole inside one chunk on the Gemini API (argument streaming with
    `partialArgs` is Vertex-only and rejected here). The stream is complete at the chunk that
    carries candidates[0].finishReason (or a prompt block, or an API error); the assembled
    response is then classified exactly like a non-streamed one.
    """

    def __init__(self, adapter: GeminiAdapter) -> None:
        self._adapter = adapter
        self._top: dict[str, Any] = {}
        self._candidate: dict[str, Any] = {}
        self._role = "model"
        self._parts: list[dict[str, Any]] = []
        self._error: dict[str, Any] | None = None
        self._done = False

    def feed(self, event: dict[str, Any]) -> None:
        chunk = require_dict(event, "stream chunk")
        if "error" in chunk:
            require_dict(chunk["error"], "stream chunk error")
            self._error, self._done = chunk, True
            return
        if not _CHUNK_KEYS & chunk.keys():
            raise AdapterError(
                "stream chunk is not a GenerateContentResponse (none of "
                f"{', '.join(sorted(_CHUNK_KEYS))})",
                code="malformed_response",
            )
        self._top.update({key: chunk[key] for key in _TOP_LEVEL if key in chunk})
        feedback = chunk.get("promptFeedback")
        if isinstance(feedback, dict) and feedback.get("blockReason"):
            self._done = True
        for candidate in require_list(chunk.get("candidates", []), "stream chunk candidates"):
            if require_dict(candidate, "stream chunk candidate").get("index", 0) == 0:
                self._take_candidate(candidate)

    def finish(self) -> ProviderEvent:
        if self._error is not None:
            return self._adapter.read_complete_event(self._error)
        if not self._done:
            meta = _meta(self._top, self._adapter.api_version)
            return IncompleteEvent(meta, "stream_cut", original=self.snapshot())
        return self._adapter.read_complete_event(self.snapshot())

    def snapshot(self) -> dict[str, Any]:
        """The response assembled so far, shaped like a non-streamed GenerateContentResponse."""
        body = dict(self._top)
        if self._candidate or self._parts:
            content = {"role": self._role, "parts": list(self._parts)}
            body["candidates"] = [{"content": content, **self._candidate}]
        return body

    def _take_candidate(self, candidate: dict[str, Any]) -> None:
        parts = _parts(candidate)
        if parts and self._done:
            raise AdapterError(
                "stream chunk carries content after finishReason", code="malformed_response"
            )
        content = candidate.get("content")
        if isinstance(content, dict) and isinstance(content.get("role"), str):
            self._role = content["role"]
        for part in parts:
            self._add_part(part)
        self._candidate.update({k: v for k, v in candidate.items() if k != "content"})
        if candidate.get("finishReason"):
            self._done = True

    def _add_part(self, part: dict[str, Any]) -> None:
        call = part.get("functionCall")
        if isinstance(call, dict) and ("partialArgs" in call or call.get("willContinue")):
            raise AdapterError(
                "functionCall.partialArgs streaming is not supported on the Gemini API",
                code="malformed_response",
            )
        if part == {"text": ""}:
            return
        last = self._parts[-1] if self._parts else None
        if last is not None and _mergeable_text(last, part):
            self._parts[-1] = {**last, "text": last["text"] + part["text"]}
        else:
            self._parts.append(copy.deepcopy(part))


def _mergeable_text(previous: dict[str, Any], part: dict[str, Any]) -> bool:
    """Plain text deltas of the same kind (visible or thought) are joined into one part."""
    plain = ({"text"}, {"text", "thought"})
    return (
        set(previous) in plain
        and set(part) == set(previous)
        and isinstance(previous["text"], str)
        and isinstance(part["text"], str)
        and previous.get("thought") == part.get("thought")
    )
