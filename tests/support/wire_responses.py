"""Model responses in each provider's exact wire format, for the scripted model.

Every response is one of the recorded fixtures in tests/adapters/fixtures/<provider>/ with only
its IDs, tool calls and text replaced (tests/gateway/loop/_sources.md names each one), so it has
the provider's own field layout; tests/gateway/loop/test_wire_responses.py validates every
shape against the official SDK types. `WIRES[provider]` builds them:

    user(text)                        the user's message that opens the conversation
    calls(response_id, [Call(...)])   a complete turn asking for these calls
    final(response_id, text)          a final answer
    refusal(response_id)              the model refuses
    truncated(response_id, call)      cut at the token limit inside the call's arguments
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from tests.support.paths import ROOT

FIXTURES = ROOT / "tests" / "adapters" / "fixtures"
Body = dict[str, Any]


@dataclass(frozen=True)
class Call:
    call_id: str
    name: str
    arguments: dict[str, Any]

    def json(self) -> str:
        return json.dumps(self.arguments, separators=(",", ":"))

    def cut(self) -> str:
        """The arguments as a stream cut them: a prefix that is not JSON."""
        text = self.json()
        return text[: max(len(text) // 2, 2)]


@cache
def _recorded(folder: str, name: str) -> str:
    return (FIXTURES / folder / name).read_text(encoding="utf-8")


def recorded(folder: str, name: str) -> Body:
    """A fresh copy of a recorded fixture."""
    body: Body = json.loads(_recorded(folder, name))
    return body


@dataclass(frozen=True)
class Wire:
    provider: str
    user: Callable[[str], Body]
    calls: Callable[[str, Sequence[Call]], Body]
    final: Callable[[str, str], Body]
    refusal: Callable[[str], Body]
    truncated: Callable[[str, Call], Body]
    has_ids: bool = True  # the response carries its own ID (Bedrock's does not)


# ---------------------------------------------------------------------- OpenAI Responses


def _responses_calls(rid: str, calls: Sequence[Call]) -> Body:
    body = recorded("openai_responses", "one_call.json")
    reasoning, template = body["output"]
    body["id"] = rid
    reasoning["id"] = f"rs_{rid}"
    body["output"] = [
        reasoning,
        *(
            {
                **copy.deepcopy(template),
                "id": f"fc_{c.call_id}",
                "call_id": c.call_id,
                "name": c.name,
                "arguments": c.json(),
            }
            for c in calls
        ),
    ]
    return body


def _responses_final(rid: str, text: str) -> Body:
    body = recorded("openai_responses", "final_text.json")
    body["id"] = rid
    message = next(item for item in body["output"] if item["type"] == "message")
    message["id"] = f"msg_{rid}"
    message["content"][0]["text"] = text
    return body


def _responses_refusal(rid: str) -> Body:
    body = recorded("openai_responses", "refusal.json")
    body["id"] = rid
    return body


def _responses_truncated(rid: str, call: Call) -> Body:
    body = recorded("openai_responses", "incomplete_max_tokens.json")
    body["id"] = rid
    item = next(item for item in body["output"] if item["type"] == "function_call")
    item.update(id=f"fc_{call.call_id}", call_id=call.call_id, name=call.name, arguments=call.cut())
    return body


# ---------------------------------------------------------------------- OpenAI Chat Completions


def _chat_calls(rid: str, calls: Sequence[Call]) -> Body:
    body = recorded("openai_chat", "one_call.json")
    body["id"] = rid
    message = body["choices"][0]["message"]
    (template,) = message["tool_calls"]
    message["tool_calls"] = [
        {
            **copy.deepcopy(template),
            "id": c.call_id,
            "function": {"name": c.name, "arguments": c.json()},
        }
        for c in calls
    ]
    return body


def _chat_final(rid: str, text: str) -> Body:
    body = recorded("openai_chat", "final_text.json")
    body["id"] = rid
    body["choices"][0]["message"]["content"] = text
    return body


def _chat_refusal(rid: str) -> Body:
    body = recorded("openai_chat", "chat_refusal.json")
    body["id"] = rid
    return body


def _chat_truncated(rid: str, call: Call) -> Body:
    body = recorded("openai_chat", "length.json")
    body["id"] = rid
    (item,) = body["choices"][0]["message"]["tool_calls"]
    item.update(id=call.call_id, function={"name": call.name, "arguments": call.cut()})
    return body


# ---------------------------------------------------------------------- Anthropic Messages


def _anthropic_calls(rid: str, calls: Sequence[Call]) -> Body:
    body = recorded("anthropic", "message_tool_use.json")
    text, template = body["content"]
    body["id"] = rid
    text["text"] = "Let me look that up."
    body["content"] = [
        text,
        *(
            {**copy.deepcopy(template), "id": c.call_id, "name": c.name, "input": c.arguments}
            for c in calls
        ),
    ]
    return body


def _anthropic_final(rid: str, text: str) -> Body:
    body = recorded("anthropic", "message_basic.json")
    body["id"] = rid
    body["content"][0]["text"] = text
    return body


def _anthropic_refusal(rid: str) -> Body:
    body = recorded("anthropic", "message_refusal.json")
    body["id"] = rid
    return body


def _anthropic_truncated(rid: str, call: Call) -> Body:
    """Anthropic's non-streaming answer at max_tokens keeps the input parsed so far."""
    body = recorded("anthropic", "message_max_tokens_tool_use.json")
    body["id"] = rid
    block = body["content"][1]
    first = dict(list(call.arguments.items())[:1])
    block.update(id=call.call_id, name=call.name, input=first)
    return body


# ---------------------------------------------------------------------- Gemini


def _gemini_calls(rid: str, calls: Sequence[Call]) -> Body:
    body = recorded("gemini", "parallel_calls_with_ids.json")
    body["responseId"] = rid
    content = body["candidates"][0]["content"]
    signed = content["parts"][0]  # the first part carries the thought signature
    content["parts"] = [
        {
            **({"thoughtSignature": signed["thoughtSignature"]} if i == 0 else {}),
            "functionCall": {"id": c.call_id, "name": c.name, "args": c.arguments},
        }
        for i, c in enumerate(calls)
    ]
    return body


def _gemini_final(rid: str, text: str) -> Body:
    body = recorded("gemini", "final_text.json")
    body["responseId"] = rid
    body["candidates"][0]["content"]["parts"][0]["text"] = text
    return body


def _gemini_refusal(rid: str) -> Body:
    body = recorded("gemini", "safety_stop.json")
    body["responseId"] = rid
    return body


def _gemini_truncated(rid: str, call: Call) -> Body:
    body = recorded("gemini", "max_tokens.json")
    body["responseId"] = rid
    part = body["candidates"][0]["content"]["parts"][1]
    part["functionCall"] = {
        "id": call.call_id,
        "name": call.name,
        "args": dict(list(call.arguments.items())[:1]),
    }
    return body


# ---------------------------------------------------------------------- Bedrock Converse


def _bedrock_calls(rid: str, calls: Sequence[Call]) -> Body:
    body = recorded("bedrock", "one_call.json")
    text, _ = body["output"]["message"]["content"]
    body["output"]["message"]["content"] = [
        text,
        *(
            {"toolUse": {"toolUseId": c.call_id, "name": c.name, "input": c.arguments}}
            for c in calls
        ),
    ]
    return body


def _bedrock_final(rid: str, text: str) -> Body:
    body = recorded("bedrock", "final_text.json")
    body["output"]["message"]["content"][0]["text"] = text
    return body


def _bedrock_refusal(rid: str) -> Body:
    return recorded("bedrock", "guardrail_intervened.json")


def _bedrock_truncated(rid: str, call: Call) -> Body:
    body = recorded("bedrock", "max_tokens.json")
    block = body["output"]["message"]["content"][1]["toolUse"]
    block.update(
        toolUseId=call.call_id, name=call.name, input=dict(list(call.arguments.items())[:1])
    )
    return body


def _role_content(text: str) -> Body:
    """A user message as OpenAI (both APIs) and Anthropic take it."""
    return {"role": "user", "content": text}


def _gemini_user(text: str) -> Body:
    return {"role": "user", "parts": [{"text": text}]}


def _bedrock_user(text: str) -> Body:
    return {"role": "user", "content": [{"text": text}]}


WIRES: dict[str, Wire] = {
    "openai.responses": Wire(
        "openai.responses",
        _role_content,
        _responses_calls,
        _responses_final,
        _responses_refusal,
        _responses_truncated,
    ),
    "openai.chat_completions": Wire(
        "openai.chat_completions",
        _role_content,
        _chat_calls,
        _chat_final,
        _chat_refusal,
        _chat_truncated,
    ),
    "anthropic.messages": Wire(
        "anthropic.messages",
        _role_content,
        _anthropic_calls,
        _anthropic_final,
        _anthropic_refusal,
        _anthropic_truncated,
    ),
    "google.gemini": Wire(
        "google.gemini",
        _gemini_user,
        _gemini_calls,
        _gemini_final,
        _gemini_refusal,
        _gemini_truncated,
    ),
    "aws.bedrock_converse": Wire(
        "aws.bedrock_converse",
        _bedrock_user,
        _bedrock_calls,
        _bedrock_final,
        _bedrock_refusal,
        _bedrock_truncated,
        has_ids=False,
    ),
}
PROVIDERS = tuple(WIRES)
