"""The model-readable text of a tool result, shared by every adapter.

A successful call gives the tool's output JSON unchanged. Any other status gives a small JSON
object the model can act on: what happened, the stable code and the message, and whether the
tool ran. Every adapter uses this so the observation is the same whatever the provider.
"""

from __future__ import annotations

import json

from adapters.events import WITHHELD, ToolResult

_GUIDANCE = {
    "REJECTED": "The call was not executed.",
    "NOT_RUN": "The call was not executed because another write in the same turn did not "
    "succeed; re-plan before trying again.",
    "FAILED": "The tool ran and failed; nothing was changed.",
    "UNKNOWN": "The outcome of this write is not known yet; do not repeat it.",
    "PENDING_APPROVAL": "The call is waiting for a person's approval.",
    "HELD": "The call waits for other writes of this turn to be approved.",
    "EXECUTING": "The call is still running.",
}
_WITHHELD_NOTE = (
    "The call ran (do not repeat it), but policy withheld its result from you; "
    "the message says why."
)


def result_text(result: ToolResult) -> str:
    """The string a provider's tool-result slot carries for this result."""
    if result.ok:
        return result.output_json or "{}"
    body = {
        "status": result.status.lower(),
        "error": {
            "code": result.error_code or result.status.lower(),
            "message": result.error_message,
        },
        "note": _WITHHELD_NOTE
        if result.error_code == WITHHELD
        else _GUIDANCE.get(result.status, ""),
    }
    return json.dumps(body, separators=(",", ":"))


def result_object(result: ToolResult) -> dict[str, object]:
    """The same as a JSON object, for providers whose result slot is an object (Gemini)."""
    if result.ok:
        try:
            value = json.loads(result.output_json or "{}")
        except json.JSONDecodeError:
            value = result.output_json
        return value if isinstance(value, dict) else {"output": value}
    error: dict[str, object] = json.loads(result_text(result))
    return error
