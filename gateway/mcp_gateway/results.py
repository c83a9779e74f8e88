"""What an MCP client is answered: callgate's tools as MCP tools, a call's result as an MCP
tool result.

Everything a call can end with is a tool result, never a JSON-RPC error (an MCP client would
retry that, or show it as a broken server): SUCCEEDED is the output as text JSON and as
`structuredContent`; every other end is `isError` with a text that starts with callgate's
code (`policy_denied: ...`, `invalid_arguments: ...`, `approval_required: <approval id> ...`)
and says what to do next.
"""

from __future__ import annotations

from typing import Any

import mcp_types as types

from gateway.errors import CallCode
from gateway.jsontext import JsonTextError, read_json
from gateway.limits import MAX_JSON_DEPTH_CAP
from gateway.model import CallResult, CallStatus, Effect
from gateway.tools import Tool

# what a pending call's answer tells the client to do
RETRY_ADVICE = (
    "once a person has decided it (`callgate approvals approve {id}`), call this "
    "tool again with exactly the same arguments: that call answers what the "
    "approved call did (it runs once, when it is approved); different arguments "
    "are a new call"
)


def tool_of(tool: Tool) -> types.Tool:
    """A callgate tool as `tools/list` lists it: name, description, its schemas, and whether
    it only reads (a hint for the client; callgate's policy decides)."""
    manifest = tool.manifest
    output = manifest.output_schema
    return types.Tool(
        name=tool.name,
        description=tool.description or None,
        input_schema=dict(manifest.input_schema),
        # MCP clients before 2026-07-28 accept only an object schema for structured output
        output_schema=dict(output) if output and output.get("type") == "object" else None,
        annotations=types.ToolAnnotations(read_only_hint=tool.effect is Effect.READ),
    )


def tool_error(code: str, message: str) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(text=f"{code}: {message}")], is_error=True
    )


def call_result(result: CallResult) -> types.CallToolResult:
    """The tool result a client is answered for one call's (committed) result."""
    status = result.status
    if status == CallStatus.SUCCEEDED and result.error_code == CallCode.RESULT_WITHHELD:
        return tool_error(
            CallCode.RESULT_WITHHELD, f"{result.error_message}; the call ran: do not repeat it"
        )
    if status == CallStatus.SUCCEEDED:
        return _succeeded(result.output_json)
    if status in (CallStatus.PENDING_APPROVAL, CallStatus.HELD):
        return tool_error(
            "approval_required",
            (
                f"{result.approval_id} this call waits for a person's approval"
                f"{_reasons(result)}; {RETRY_ADVICE.format(id=result.approval_id)}"
            ),
        )
    if status == CallStatus.UNKNOWN:
        return tool_error(
            result.error_code or "outcome_unknown",
            (
                f"{result.error_message or 'whether the write happened is not known yet'}; "
                "callgate looks it up and never sends it again blindly: call this tool again "
                "with the same arguments to learn the outcome"
            ),
        )
    code = result.error_code or status.value.lower()
    return tool_error(code, f"{result.error_message or status.value}{_reasons(result)}")


def _reasons(result: CallResult) -> str:
    decision = result.decision
    if decision is None or not decision.reasons:
        return ""
    listed = "; ".join(r for r in decision.reasons if r and r not in result.error_message)
    return f" (policy: {listed})" if listed else ""


def _succeeded(output_json: str) -> types.CallToolResult:
    text = output_json or "null"
    structured: Any = None
    try:
        value = read_json(text, max_depth=MAX_JSON_DEPTH_CAP + 1)
    except JsonTextError:
        value = None
    if isinstance(value, dict):  # structuredContent is a JSON object before 2026-07-28
        structured = value
    return types.CallToolResult(
        content=[types.TextContent(text=text)], structured_content=structured
    )
