"""callgate under LangGraph (`pip install 'callgate[langgraph]'`): a tool node that sends the
model's tool calls to callgate instead of calling tools in-process.

    tools = callgate_tool_specs(client)                   # for model.bind_tools(tools)
    graph.add_node("tools", CallgateToolNode(client))     # in place of ToolNode(...)
    graph.add_conditional_edges("agent", tools_condition)
    app = graph.compile(checkpointer=SqliteSaver(...))    # a durable checkpointer
    app.invoke(inputs, {"configurable": {"thread_id": "trip-42"}})
    # a call waits for a person: the run stops at an interrupt naming the approval; once it
    # is decided in callgate: app.invoke(Command(resume=True), same config)

One callgate run per graph thread (`run_prefix` + the thread ID). The node sends the last
AIMessage's tool calls as one turn under their own call IDs (its turn ID derived from them), and
answers one ToolMessage per call ID: the output, or an error text (status "error") for a deny,
a schema error, a rejected approval, a failure or an unknown outcome (being reconciled; never
sent again). A turn waiting for approval calls `interrupt()` with what it waits for. LangGraph
runs an interrupted node again from its start on resume: the node then sends the same turn
again and callgate answers its recorded outcome, so nothing executes twice. The resume value is
not a decision: people decide in callgate, where the policy says who may.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.messages import AIMessage, AnyMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.types import interrupt

from gateway import pb
from gateway.client import AsyncGatewayClient, GatewayClient, RunFinished, RunPaused, tool_call
from gateway.frameworks.results import (
    CallText,
    approvals_of,
    call_text,
    is_paused,
    refused_texts,
    turn_id_for,
)

PROVIDER = "openai.chat_completions"  # the run's provider; tool declarations in its shape
MAX_INTERRUPTS = 100  # a node waits through at most this many resumes of one turn


def callgate_tool_specs(client: GatewayClient, provider: str = PROVIDER) -> list[dict[str, Any]]:
    """The caller's permitted tools (ListTools) as OpenAI function declarations, which
    LangChain chat models accept in `bind_tools`."""
    declarations: list[dict[str, Any]] = json.loads(client.list_tools(provider).tools_json)
    return declarations


class CallgateToolNode:
    """A LangGraph node for `StateGraph.add_node`: the last AIMessage's tool calls go to
    callgate, one ToolMessage per call ID comes back under `messages_key`. `client` is a
    `GatewayClient` (for `invoke`) or an `AsyncGatewayClient` (for `ainvoke`; use
    `acall` as the node then). `budget` is the run's, when the node starts it."""

    def __init__(
        self,
        client: GatewayClient | AsyncGatewayClient,
        *,
        run_prefix: str = "",
        provider: str = PROVIDER,
        budget: pb.Budget | None = None,
        messages_key: str = "messages",
    ) -> None:
        self.client = client
        self.run_prefix = run_prefix
        self.provider = provider
        self.budget = budget
        self.messages_key = messages_key
        self._started: set[str] = set()

    def run_id(self, config: RunnableConfig) -> str:
        """The callgate run of the graph thread this config names."""
        thread = (config.get("configurable") or {}).get("thread_id")
        if not thread:
            raise ValueError(
                "CallgateToolNode needs a thread: invoke the graph with "
                "config={'configurable': {'thread_id': ...}} (one callgate run "
                "per thread) and a checkpointer"
            )
        return f"{self.run_prefix}{thread}"

    def __call__(self, state: Any, config: RunnableConfig) -> dict[str, list[ToolMessage]]:
        if not isinstance(self.client, GatewayClient):
            raise TypeError(
                "this node has an AsyncGatewayClient: add `node.acall` to the "
                "graph and run it with ainvoke"
            )
        message, run_id = self._last_ai(state), self.run_id(config)
        calls = _calls(message)
        if not calls:
            return {self.messages_key: []}
        if run_id not in self._started:
            self.client.start_run(run_id, provider=self.provider, budget=self.budget)
            self._started.add(run_id)
        texts: dict[str, CallText] = {}
        for _ in range(MAX_INTERRUPTS):
            try:
                outcome = self.client.submit_calls(
                    run_id, turn_id_for(c.call_id for c in calls), *calls, provider=self.provider
                )
            except (RunPaused, RunFinished) as err:
                texts = refused_texts((c.call_id for c in calls), err.message)
                break
            texts = {r.call_id: call_text(r) for r in outcome.results}
            if not is_paused(outcome):
                break
            interrupt(_waiting(run_id, outcome))  # past MAX_INTERRUPTS: "waits for approval"
        return {self.messages_key: _tool_messages(calls, texts)}

    async def acall(self, state: Any, config: RunnableConfig) -> dict[str, list[ToolMessage]]:
        """The node for an `AsyncGatewayClient` (the graph run with `ainvoke`)."""
        if not isinstance(self.client, AsyncGatewayClient):
            raise TypeError("this node has a GatewayClient: add the node itself to the graph")
        message, run_id = self._last_ai(state), self.run_id(config)
        calls = _calls(message)
        if not calls:
            return {self.messages_key: []}
        if run_id not in self._started:
            await self.client.start_run(run_id, provider=self.provider, budget=self.budget)
            self._started.add(run_id)
        texts: dict[str, CallText] = {}
        for _ in range(MAX_INTERRUPTS):
            try:
                outcome = await self.client.submit_calls(
                    run_id, turn_id_for(c.call_id for c in calls), *calls, provider=self.provider
                )
            except (RunPaused, RunFinished) as err:
                texts = refused_texts((c.call_id for c in calls), err.message)
                break
            texts = {r.call_id: call_text(r) for r in outcome.results}
            if not is_paused(outcome):
                break
            interrupt(_waiting(run_id, outcome))  # past MAX_INTERRUPTS: "waits for approval"
        return {self.messages_key: _tool_messages(calls, texts)}

    def _last_ai(self, state: Any) -> AIMessage:
        messages: Sequence[AnyMessage] = (
            state.get(self.messages_key, [])
            if isinstance(state, Mapping)
            else state
            if isinstance(state, list)
            else getattr(state, self.messages_key, [])
        )
        for message in reversed(messages):
            if isinstance(message, AIMessage):
                return message
        raise ValueError(f"CallgateToolNode found no AIMessage in {self.messages_key!r}")


def _calls(message: AIMessage) -> list[pb.ToolCall]:
    """The message's tool calls in the model's order; those LangChain could not parse go as
    their raw text, which callgate rejects without running them."""
    calls = [tool_call(c["id"] or "", c["name"], c["args"]) for c in message.tool_calls]
    calls += [
        tool_call(c.get("id") or "", c.get("name") or "", c.get("args") or "")
        for c in message.invalid_tool_calls
    ]
    return calls


def _waiting(run_id: str, outcome: pb.TurnOutcome) -> dict[str, Any]:
    """The interrupt's payload: what the turn waits for, and how to go on."""
    return {
        "callgate": "approval_required",
        "run_id": run_id,
        "turn_id": outcome.turn_id,
        "reason": outcome.reason,
        "approvals": approvals_of(outcome),
        "resume": "decide each approval in callgate, then Command(resume=True)",
    }


def _tool_messages(
    calls: Sequence[pb.ToolCall], texts: Mapping[str, CallText]
) -> list[ToolMessage]:
    missing = CallText("error: callgate answered no result for this call", True)
    return [
        ToolMessage(
            content=texts.get(c.call_id, missing).text,
            tool_call_id=c.call_id,
            name=c.name,
            status="error" if texts.get(c.call_id, missing).error else "success",
        )
        for c in calls
    ]
