"""callgate under an agent framework: the framework keeps its loop, callgate decides, executes
durably and records every tool call.

    gateway.frameworks.openai_agents   the OpenAI Agents SDK (`pip install 'callgate[agents]'`)
    gateway.frameworks.langgraph       LangGraph (`pip install 'callgate[langgraph]'`)

Each integration sits on the client (`gateway.client`) alone: it sends the model's tool calls
to callgate under their own call IDs and hands the framework callgate's recorded results, so
a node LangGraph runs again, or a tool the SDK invokes again on resume, gets the same result
back and never executes anything twice. This package imports neither framework: import the
module of the one you use. Reference: docs/frameworks.md.
"""

from gateway.frameworks.results import (
    ApprovalPending,
    CallText,
    approvals_of,
    call_text,
    is_paused,
    is_waiting,
    turn_id_for,
)

__all__ = [
    "ApprovalPending",
    "CallText",
    "approvals_of",
    "call_text",
    "is_paused",
    "is_waiting",
    "turn_id_for",
]
