"""A LangGraph graph whose tool calls run through callgate, against a running sidecar (`make
run`). Needs OPENAI_API_KEY; never run by the tests (they use a scripted chat model).

    python -m examples.frameworks.langgraph_example "Book 4 seats at ws-acme-1 for me" \\
        [--model gpt-5-mini] [--target 127.0.0.1:50051] [--token mia-demo-token] \\
        [--thread ID] [--checkpoints .callgate/langgraph.db] [--wait 300]
    python -m examples.frameworks.langgraph_example --resume --thread ID   # later

The graph is the usual ReAct shape (model node, tool node, `tools_condition`), with
`CallgateToolNode` in place of LangGraph's ToolNode and a SQLite checkpointer, so a thread
interrupted for an approval goes on in another process. Mia (a member of acme) may book up to
2 seats for herself; more wait for an owner: approve as Olga (`callgate approvals approve
APPROVAL_ID --reason ok --token olga-demo-token`), and the thread resumes with
`Command(resume=True)` here within --wait seconds, or later with --resume.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
import threading
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import openai
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, convert_to_openai_messages
from langchain_core.outputs import ChatGeneration, ChatResult
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import tools_condition
from langgraph.types import Command

from gateway import pb
from gateway.client import DEFAULT_TARGET, GatewayClient
from gateway.frameworks.langgraph import CallgateToolNode, callgate_tool_specs

INSTRUCTIONS = (
    "You book workshop seats for the signed-in member (participant: mia). Check "
    "availability first; never guess. If a tool answers an error, say so."
)


class OpenAIChat(BaseChatModel):
    """A minimal chat model over the `openai` SDK's Chat Completions API: the messages in
    OpenAI's shape, callgate's tool declarations, the reply's tool calls as LangChain's."""

    model: str
    tools: list[dict[str, Any]] = []

    @property
    def _llm_type(self) -> str:
        return "openai-chat-completions"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        reply = openai.OpenAI().chat.completions.create(
            model=self.model,
            tools=self.tools,  # type: ignore[arg-type]
            messages=[
                {"role": "system", "content": INSTRUCTIONS},
                *convert_to_openai_messages(messages),
            ],
        )  # type: ignore[list-item]
        return ChatResult(generations=[ChatGeneration(message=to_message(reply))])


def to_message(reply: Any) -> AIMessage:
    """One Chat Completions reply as an AIMessage with LangChain's tool calls."""
    message = reply.choices[0].message
    calls = [
        {
            "name": c.function.name,
            "args": json.loads(c.function.arguments or "{}"),
            "id": c.id,
            "type": "tool_call",
        }
        for c in message.tool_calls or []
    ]
    return AIMessage(content=message.content or "", tool_calls=calls, id=reply.id)


def build(client: GatewayClient, model: BaseChatModel, checkpoints: Path) -> Any:
    graph = StateGraph(MessagesState)
    graph.add_node("agent", lambda state: {"messages": [model.invoke(state["messages"])]})
    graph.add_node("tools", CallgateToolNode(client))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    checkpoints.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(checkpoints, check_same_thread=False)
    return graph.compile(checkpointer=SqliteSaver(conn))


def decided_within(client: GatewayClient, run_id: str, wait_s: float) -> bool:
    """Whether the run stops waiting for a person within wait_s (WatchRun, no polling)."""
    watch = client.watch_run(run_id)
    timer = threading.Timer(wait_s, watch.cancel)
    timer.start()
    try:
        return any(o.next != pb.NEXT_ACTION_PAUSED_FOR_APPROVAL for o in watch)
    finally:
        timer.cancel()
        watch.cancel()


def run(ns: argparse.Namespace) -> int:
    config: Any = {"configurable": {"thread_id": ns.thread}}
    print(f"thread (and callgate run) {ns.thread}")
    with GatewayClient(ns.target, ns.token) as client:
        model = OpenAIChat(model=ns.model, tools=callgate_tool_specs(client))
        app = build(client, model, Path(ns.checkpoints))
        out = app.invoke(
            Command(resume=True) if ns.resume else {"messages": [HumanMessage(ns.question)]}, config
        )
        while out.get("__interrupt__"):
            for waiting in (a for i in out["__interrupt__"] for a in i.value["approvals"]):
                print(
                    f"waiting for a person: {waiting['tool']} ({'; '.join(waiting['reasons'])})"
                    f"\n  callgate approvals approve {waiting['approval_id']} --reason ok "
                    "--token olga-demo-token"
                )
            if not decided_within(client, ns.thread, ns.wait):
                print(f"still waiting; resume later with: --resume --thread {ns.thread}")
                return 2
            out = app.invoke(Command(resume=True), config)
        messages: Sequence[BaseMessage] = out["messages"]
        print(messages[-1].content)
        return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("question", nargs="?", default="Book 4 seats at ws-acme-1 for me")
    parser.add_argument("--model", default="gpt-5-mini")
    parser.add_argument("--target", default=DEFAULT_TARGET)
    parser.add_argument("--token", default="mia-demo-token")
    parser.add_argument("--thread", default=f"graph-{uuid.uuid4().hex[:8]}")
    parser.add_argument("--checkpoints", default=".callgate/langgraph.db")
    parser.add_argument("--wait", type=float, default=300.0)
    parser.add_argument("--resume", action="store_true", help="go on with the saved thread")
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
