"""Per provider: strict validation against the official SDK types (as tests/adapters does) of a
response, of the conversation a loop sends and of the tools it offers, and the result each call
ID received in a provider-shaped request.

`results_by_call_id(provider, items)` reads the tool results out of the items a request adds
(callgate's provider_input_json), keyed by the call ID each one answers, in the provider's own
correlation field: `call_id` (Responses), `tool_call_id` (Chat Completions), `tool_use_id`
(Anthropic), `functionResponse.id` (Gemini), `toolResult.toolUseId` (Bedrock).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from anthropic.types import Message, MessageParam, ToolParam
from openai.types.chat import (
    ChatCompletion,
    ChatCompletionMessageParam,
    ChatCompletionToolUnionParam,
)
from openai.types.responses import FunctionToolParam, Response, ResponseInputItemParam

from tests.adapters.anthropic.support import validate as validate_anthropic
from tests.adapters.bedrock._support import validate_converse_request
from tests.adapters.bedrock._support import validate_response as validate_bedrock
from tests.adapters.gemini._support import validate_content, validate_tool
from tests.adapters.gemini._support import validate_response as validate_gemini
from tests.adapters.openai.sdk_checks import validate_model, validate_param

Items = Sequence[dict[str, Any]]


def validate_response(provider: str, body: dict[str, Any]) -> None:
    {
        "openai.responses": lambda b: validate_model(Response, b),
        "openai.chat_completions": lambda b: validate_model(ChatCompletion, b),
        "anthropic.messages": lambda b: validate_anthropic(Message, b),
        "google.gemini": validate_gemini,
        "aws.bedrock_converse": validate_bedrock,
    }[provider](body)


def validate_request(provider: str, conversation: Items, tools: Items) -> None:
    """The conversation and tools a loop asked its model with, as the SDK's request types."""
    if provider == "aws.bedrock_converse":
        validate_converse_request(list(conversation), list(tools))
        return
    item_check, tool_check = _REQUEST[provider]
    for item in conversation:
        item_check(item)
    for tool in tools:
        tool_check(tool)


_REQUEST: dict[str, tuple[Callable[[Any], Any], Callable[[Any], Any]]] = {
    "openai.responses": (
        lambda i: validate_param(ResponseInputItemParam, i),
        lambda t: validate_param(FunctionToolParam, t),
    ),
    "openai.chat_completions": (
        lambda i: validate_param(ChatCompletionMessageParam, i),
        lambda t: validate_param(ChatCompletionToolUnionParam, t),
    ),
    "anthropic.messages": (
        lambda i: validate_anthropic(MessageParam, i),
        lambda t: validate_anthropic(ToolParam, t),
    ),
    "google.gemini": (validate_content, validate_tool),
}


def results_by_call_id(provider: str, items: Items) -> dict[str, str]:
    """call ID -> the result text (JSON) the request gives it, for every result in items."""
    found: list[tuple[str, Any]] = []
    for item in items:
        if provider == "openai.responses" and item.get("type") == "function_call_output":
            found.append((item["call_id"], item["output"]))
        elif provider == "openai.chat_completions" and item.get("role") == "tool":
            found.append((item["tool_call_id"], item["content"]))
        elif provider == "anthropic.messages" and isinstance(item.get("content"), list):
            found += [
                (b["tool_use_id"], b["content"])
                for b in item["content"]
                if b.get("type") == "tool_result"
            ]
        elif provider == "google.gemini":
            found += [
                (p["functionResponse"]["id"], p["functionResponse"]["response"])
                for p in item.get("parts", [])
                if "functionResponse" in p
            ]
        elif provider == "aws.bedrock_converse":
            found += [
                (b["toolResult"]["toolUseId"], b["toolResult"]["content"])
                for b in item.get("content", [])
                if "toolResult" in b
            ]
    ids = [call_id for call_id, _ in found]
    assert len(ids) == len(set(ids)), f"a call ID answered twice: {ids}"
    return {call_id: _text(value) for call_id, value in found}


def _text(value: Any) -> str:
    """A result slot as text: a string as it is; content blocks by their text (or JSON)."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "".join(
            _text(block.get("text", block.get("json", block)))
            if isinstance(block, dict)
            else _text(block)
            for block in value
        )
    return json.dumps(value)
