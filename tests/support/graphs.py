"""The LangGraph graph of the framework tests: a model node, callgate's tool node and the
prebuilt `tools_condition` between them, the usual ReAct shape with callgate under it."""

from __future__ import annotations

from typing import Any

from langchain_core.language_models import BaseChatModel
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import tools_condition

from gateway.client import GatewayClient
from gateway.frameworks.langgraph import CallgateToolNode


def booking_graph(
    client: GatewayClient, model: BaseChatModel, checkpointer: BaseCheckpointSaver[Any], **node: Any
) -> Any:
    """The compiled graph: agent → (tool calls?) tools → agent → ... → END."""
    graph = StateGraph(MessagesState)
    graph.add_node("agent", lambda state: {"messages": [model.invoke(state["messages"])]})
    graph.add_node("tools", CallgateToolNode(client, **node))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    return graph.compile(checkpointer=checkpointer)
