"""callgate under the OpenAI Agents SDK (`pip install 'callgate[agents]'`).

    gate = CallgateRun(AsyncGatewayClient(target, token), "trip-42")
    agent = gate.guard(my_agent, await gate.tools())      # or gate.route(*my_function_tools)
    result = await Runner.run(agent, "Book me two seats")
    # result.interruptions: calls callgate holds for a person; after the decision in callgate:
    pending = await gate.apply_decisions(state)           # mirrors callgate's decisions
    result = await Runner.run(agent, state)               # runs nothing twice

One callgate run per agent run. The guarded agent's hooks send each model response's calls to
callgate as one turn (its call IDs, in the model's order) before the SDK runs any tool: callgate
decides the batch and executes what it allows. The SDK's tools then only hand back callgate's
recorded result for their call ID, so an invocation repeated on resume (in this process or
another, from a saved `RunState`) reads the recorded result and never executes again. A policy
deny, a schema error or a rejected approval reaches the model as the tool's error output; a call
waiting for approval answers `needs_approval` True, so the SDK's own interruption carries it; an
unknown outcome is an error output saying it is being reconciled, never retried.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable, Sequence
from typing import Any

from agents import Agent, AgentHooks, FunctionTool, ItemHelpers, RunContextWrapper, RunState
from agents.exceptions import AgentsException
from agents.items import ModelResponse
from agents.tool_context import ToolContext
from openai.types.responses import ResponseFunctionToolCall

from gateway import pb
from gateway.client import AsyncGatewayClient, NotFound, RunFinished, RunPaused, tool_call
from gateway.frameworks.results import (
    ApprovalPending,
    CallText,
    approvals_of,
    call_text,
    is_paused,
    is_waiting,
    refused_texts,
    result_from_record,
    turn_id_for,
)

PROVIDER = "openai.responses"  # the tools' declarations and the run's provider
_FINAL_TYPES = {"message"}  # a response of only these is the agent's final answer
_RUNNING = (pb.CALL_STATUS_EXECUTING, pb.CALL_STATUS_UNKNOWN)


class ApprovalPendingError(ApprovalPending, AgentsException):
    """`ApprovalPending` as one of the SDK's own exceptions, so that `Runner.run` raises it as
    it is (the SDK wraps any other exception of a tool in a UserError)."""


class CallgateRun:
    """One callgate run under one SDK agent run: the tools, the hooks that send each model
    response to callgate, and the approvals mirrored into the SDK's `RunState`. `wait_s`: how
    long a tool the SDK was told to run waits for callgate's decision before it raises
    `ApprovalPending` (0: it raises at once)."""

    def __init__(
        self,
        client: AsyncGatewayClient,
        run_id: str,
        *,
        provider: str = PROVIDER,
        budget: pb.Budget | None = None,
        wait_s: float = 0.0,
    ) -> None:
        self.client = client
        self.run_id = run_id
        self.provider = provider
        self.budget = budget
        self.wait_s = wait_s
        self._names: set[str] = set()
        self._results: dict[str, pb.CallResult] = {}
        self._refused: dict[str, CallText] = {}
        self._started = False

    async def start(self) -> pb.Run:
        """Start the run (the same ID and parameters answer the same run)."""
        run = await self.client.start_run(self.run_id, provider=self.provider, budget=self.budget)
        self._started = True
        return run

    async def tools(self) -> list[FunctionTool]:
        """The caller's permitted tools (ListTools) as SDK tools executed by callgate."""
        answer = await self.client.list_tools(self.provider)
        return [
            self._tool(spec["name"], spec.get("description", ""), spec["parameters"])
            for spec in json.loads(answer.tools_json)
        ]

    def route(self, *tools: FunctionTool) -> list[FunctionTool]:
        """The agent's own function tools, their execution routed through callgate (which runs
        the tool of that name from its manifests; one it does not know is refused)."""
        return [
            self._tool(t.name, t.description, t.params_json_schema, strict=t.strict_json_schema)
            for t in tools
        ]

    def guard(self, agent: Agent[Any], tools: Sequence[FunctionTool]) -> Agent[Any]:
        """A copy of the agent whose tools are `tools` (from `tools()` or `route()`) and whose
        hooks send each model response to callgate (its own hooks still run)."""
        return agent.clone(tools=list(tools), hooks=_TurnHooks(self, agent.hooks))

    def _tool(
        self, name: str, description: str, schema: dict[str, Any], *, strict: bool = False
    ) -> FunctionTool:
        self._names.add(name)

        async def needs_approval(
            _ctx: RunContextWrapper[Any], params: dict[str, Any], call_id: str
        ) -> bool:
            result = await self._result(call_id, name, json.dumps(params))
            return isinstance(result, pb.CallResult) and is_waiting(result)

        return FunctionTool(
            name=name,
            description=description,
            params_json_schema=schema,
            on_invoke_tool=self._invoke,
            strict_json_schema=strict,
            needs_approval=needs_approval,
        )

    # ------------------------------------------------------------------ a model response

    async def on_response(self, response: ModelResponse) -> None:
        """Send one model response to callgate: its calls of callgate's tools as one turn
        (decided, and run where allowed, before the SDK runs a tool), or its final answer."""
        if not self._started:
            await self.start()
        calls = [
            item
            for item in response.output
            if isinstance(item, ResponseFunctionToolCall) and item.name in self._names
        ]
        if calls:
            ids = [c.call_id for c in calls]
            await self._submit(
                turn_id_for(ids), [tool_call(c.call_id, c.name, c.arguments) for c in calls]
            )
        elif response.output and all(
            getattr(i, "type", "") in _FINAL_TYPES for i in response.output
        ):
            await self._finish(response)

    async def _submit(self, turn_id: str, calls: list[pb.ToolCall]) -> None:
        try:
            outcome = await self.client.submit_calls(
                self.run_id, turn_id, *calls, provider=self.provider
            )
        except (RunPaused, RunFinished) as err:
            self._refused.update(refused_texts((c.call_id for c in calls), err.message))
            return
        self._results.update({r.call_id: r for r in outcome.results})

    async def _finish(self, response: ModelResponse) -> None:
        text = "\n".join(ItemHelpers.extract_last_text(item) or "" for item in response.output)
        turn_id = turn_id_for(["final", text])  # response IDs need not be unique (scripted models)
        try:
            await self.client.submit_turn(
                self.run_id, turn_id, final=pb.FinalAnswer(text=text), provider=self.provider
            )
        except (RunPaused, RunFinished):
            pass  # the run waits for a person, or ended: the answer stays the SDK's own

    # ------------------------------------------------------------------ a tool invoked

    async def _invoke(self, ctx: ToolContext[Any], arguments: str) -> str:
        result = await self._result(ctx.tool_call_id, ctx.tool_name, arguments, fresh=True)
        if isinstance(result, pb.CallResult) and is_waiting(result) and self.wait_s > 0:
            await self.wait_for_decisions(self.wait_s)
            result = await self._result(ctx.tool_call_id, ctx.tool_name, arguments, fresh=True)
        if isinstance(result, CallText):
            return result.text
        if is_waiting(result):
            raise ApprovalPendingError(self.run_id, result.call_id, result.approval_id)
        return call_text(result).text

    async def _result(
        self, call_id: str, name: str = "", arguments: str = "", *, fresh: bool = False
    ) -> pb.CallResult | CallText:
        """The result of one call ID: this process's answer, else callgate's record (after
        ResumeRun drove what a decision released), else the call sent as a turn of its own."""
        if call_id in self._refused:
            return self._refused[call_id]
        cached = self._results.get(call_id)
        if cached is not None and not (fresh and (is_waiting(cached) or cached.status in _RUNNING)):
            return cached
        result = await self._recorded(call_id)
        if result is None and cached is None and name:
            await self._submit(turn_id_for([call_id]), [tool_call(call_id, name, arguments)])
            return self._refused.get(call_id) or self._results[call_id]
        if result is not None:
            self._results[call_id] = result
        return result or cached or CallText(f"error: callgate has no call {call_id}", True)

    async def _recorded(self, call_id: str) -> pb.CallResult | None:
        if not self._started:
            await self.start()
        try:
            run = await self.client.get_run(self.run_id)
            record = _find(run.calls, call_id)
            if record is None and run.next_page_token:
                record = _find((await self.client.whole_run(self.run_id)).calls, call_id)
        except NotFound:
            return None
        if record is None:
            return None
        result = result_from_record(record)
        if is_waiting(result) or result.status in _RUNNING:
            outcome = await self.client.resume_run(self.run_id)  # drives decided approvals
            result = next((r for r in outcome.results if r.call_id == call_id), result)
        return result

    # ------------------------------------------------------------------ approvals

    async def apply_decisions(self, state: RunState[Any]) -> list[dict[str, Any]]:
        """Mirror callgate's decisions into the SDK's interruptions: an approved call is
        approved, a rejected one rejected with callgate's reason. Answers the calls that still
        wait for a person (resume only once this is empty)."""
        pending: list[dict[str, Any]] = []
        for item in state.get_interruptions():
            if item.tool_name not in self._names:
                continue
            result = await self._result(_call_id(item.raw_item), fresh=True)
            if isinstance(result, pb.CallResult) and is_waiting(result):
                pending.extend(approvals_of(pb.TurnOutcome(results=[result])))
            elif isinstance(result, CallText) or result.status == pb.CALL_STATUS_REJECTED:
                text = result if isinstance(result, CallText) else call_text(result)
                state.reject(item, rejection_message=text.text)
            else:
                state.approve(item)
        return pending

    async def wait_for_decisions(self, timeout_s: float) -> bool:
        """Wait (up to timeout_s) until the run no longer waits for a person; True if so."""
        watch = self.client.watch_run(self.run_id)
        try:
            async with asyncio.timeout(timeout_s):
                async for outcome in watch:
                    if not is_paused(outcome):
                        return True
        except TimeoutError:
            return False
        finally:
            await watch.aclose()
        return True  # the run ended


def _find(calls: Iterable[pb.CallRecord], call_id: str) -> pb.CallResult | None:
    record = next((c for c in calls if c.call_id == call_id), None)
    return None if record is None else result_from_record(record)


def _call_id(raw: Any) -> str:
    value = raw.get("call_id") if isinstance(raw, dict) else getattr(raw, "call_id", "")
    return str(value or "")


class _TurnHooks(AgentHooks[Any]):
    """The guarded agent's hooks: each model response goes to callgate before any tool runs
    (the SDK awaits `on_llm_end` first); the agent's own hooks are called as before."""

    def __init__(self, run: CallgateRun, inner: AgentHooks[Any] | None) -> None:
        self.run = run
        self.inner = inner

    async def on_llm_end(
        self, context: RunContextWrapper[Any], agent: Agent[Any], response: ModelResponse
    ) -> None:
        await self.run.on_response(response)
        if self.inner is not None:
            await self.inner.on_llm_end(context, agent, response)

    async def on_start(self, *args: Any, **kwargs: Any) -> None:
        if self.inner is not None:
            await self.inner.on_start(*args, **kwargs)

    async def on_end(self, *args: Any, **kwargs: Any) -> None:
        if self.inner is not None:
            await self.inner.on_end(*args, **kwargs)

    async def on_handoff(self, *args: Any, **kwargs: Any) -> None:
        if self.inner is not None:
            await self.inner.on_handoff(*args, **kwargs)

    async def on_tool_start(self, *args: Any, **kwargs: Any) -> None:
        if self.inner is not None:
            await self.inner.on_tool_start(*args, **kwargs)

    async def on_tool_end(self, *args: Any, **kwargs: Any) -> None:
        if self.inner is not None:
            await self.inner.on_tool_end(*args, **kwargs)

    async def on_llm_start(self, *args: Any, **kwargs: Any) -> None:
        if self.inner is not None:
            await self.inner.on_llm_start(*args, **kwargs)
