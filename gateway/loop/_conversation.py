"""The conversation the loop sends its model, built from what callgate answers.

A settled turn whose outcome is CONTINUE carries `provider_input_json`: what to append for the
next request, in the provider's shape. For every provider but one that already holds the
assistant's own turn (Chat Completions' assistant message, Anthropic's assistant message,
Gemini's model content, Bedrock's assistant message) followed by the results matched by call ID.
The OpenAI Responses API answers with the `function_call_output` items only, to be sent after
the response's own output items when the whole conversation is sent again
(https://platform.openai.com/docs/guides/function-calling): the loop puts those items first, by
the same adapter function callgate uses when GetRun rebuilds the conversation, so the
conversation a loop builds turn by turn is the one a restarted loop reads back.
"""

from __future__ import annotations

import json
from typing import Any

from adapters.openai_responses import output_as_input
from gateway.errors import LoopError

Conversation = list[dict[str, Any]]

# providers whose provider_input_json leaves out the response's own output
_ECHO_OUTPUT = frozenset({"openai.responses"})


def parse_array(text: str, what: str) -> Conversation:
    """A JSON array of objects, as callgate answers it (conversations, tools, next items)."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        raise LoopError(f"{what} is not JSON: {err}") from err
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        raise LoopError(f"{what} is not a JSON array of objects")
    return value


def extended(
    provider: str, conversation: Conversation, response_json: str, provider_input_json: str
) -> Conversation:
    """The conversation after a turn that continues: its own output where the provider needs
    it resent, then what callgate answered."""
    items = parse_array(provider_input_json, "provider_input_json")
    if provider in _ECHO_OUTPUT:
        items = [*_output_items(response_json), *items]
    return [*conversation, *items]


def _output_items(response_json: str) -> Conversation:
    try:
        response = json.loads(response_json)
    except json.JSONDecodeError as err:  # callgate read it, so this does not happen
        raise LoopError(f"the response is not JSON: {err}") from err
    return output_as_input(response) if isinstance(response, dict) else []
