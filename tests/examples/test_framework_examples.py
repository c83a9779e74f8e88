"""The framework examples (which need an API key and are never run against a real model here):
the LangGraph example's graph runs against a real sidecar with a scripted chat model, its
model reads a Chat Completions reply in the wire format, and the SDK example imports."""

from __future__ import annotations

import json
from pathlib import Path

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from openai.types.chat import ChatCompletion

import examples.frameworks.openai_agents_example as agents_example
from examples.frameworks.langgraph_example import OpenAIChat, build, to_message
from examples.workshop.service import WorkshopService
from gateway.testing import SidecarProcess

REPLY = {  # a Chat Completions reply with one tool call, as the API sends it
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 1764576000,
    "model": "gpt-5-mini",
    "choices": [
        {
            "index": 0,
            "finish_reason": "tool_calls",
            "message": {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_abc",
                        "type": "function",
                        "function": {
                            "name": "check_availability",
                            "arguments": '{"event_id": "ws-acme-1"}',
                        },
                    }
                ],
            },
        }
    ],
}


def test_the_example_model_reads_tool_calls_from_the_wire_format() -> None:
    message = to_message(ChatCompletion.model_validate(REPLY))
    assert message.tool_calls == [
        {
            "name": "check_availability",
            "args": {"event_id": "ws-acme-1"},
            "id": "call_abc",
            "type": "tool_call",
        }
    ]
    assert OpenAIChat(model="gpt-5-mini")._llm_type == "openai-chat-completions"
    assert callable(agents_example.main)


def test_the_example_graph_books_through_callgate(
    sidecar: SidecarProcess, fresh_workshop: WorkshopService, run_id: str, tmp_path: Path
) -> None:
    model = GenericFakeChatModel(
        messages=iter(
            [to_message(ChatCompletion.model_validate(REPLY)), AIMessage(content="20 left.")]
        )
    )
    with sidecar.client("mia-demo-token") as client:
        app = build(client, model, tmp_path / "checkpoints.db")
        out = app.invoke(
            {"messages": [HumanMessage("How many seats?")]}, {"configurable": {"thread_id": run_id}}
        )
    [tool] = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert json.loads(str(tool.content))["available"] == 20
    assert fresh_workshop.stats()["check_availability"] == 1
