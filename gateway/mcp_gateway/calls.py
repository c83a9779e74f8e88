"""tools/list and tools/call for MCP clients, through the runner's whole path.

A run per MCP session: the first tools/call of a session starts run `mcp-<session id>` for
the caller (on the stateless 2026-07-28 revision, which has no session, the client names the
run in the request's `_meta` under `RUN_KEY_META`). Each tools/call is one turn carrying one
call, judged, approved, executed and recorded exactly as a `SubmitTurn` of that call would be.

Retries. A call whose answer was not final (it waits for approval, its outcome is unknown, or
the store failed while it was driven) is remembered by the session under its tool and the
hash of its canonical arguments (RFC 8785, the hash approvals are bound to). The identical
call again is that same turn submitted again (same turn and call ID, same content), so the
runner answers what it recorded: after an approval, the call ran once, when it was approved,
and the retry answers its result; it never runs a second time. A call with other arguments is
a new turn, judged on its own (and refused `run_paused` while the session's run waits). Once a
final answer is given, the next identical call is a new call.

A call sees one tool set from its first lookup to its last (`pinned`), as a gRPC request
does: a manifest reload landing in the middle of it serves the calls that come after.
"""

from __future__ import annotations

import hashlib
import logging
import uuid
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import mcp_types as types
import rfc8785

from gateway.arguments import ArgumentsError
from gateway.canonical import canonical
from gateway.errors import CallCode, RequestCode, RequestError
from gateway.mcp_gateway.results import call_result, tool_error, tool_of
from gateway.model import (
    CallResult,
    CallStatus,
    EventKind,
    Identity,
    RunState,
    ToolCall,
    TurnEvent,
    TurnInput,
    TurnOutcome,
)
from gateway.policy.inputs import offer_input
from gateway.run.runner import Runner, StartRunParams
from gateway.tools.live import pinned

log = logging.getLogger("callgate.mcp")

RUN_KEY_META = "io.callgate/run"  # the run key of a stateless (2026-07-28) request
RUN_PREFIX = "mcp-"
MAX_RUN_KEY = 100
DEFAULT_MAX_SESSIONS = 10_000
# answers after which the identical call is the same call again (a retry)
_NOT_FINAL = frozenset(
    {
        CallStatus.PENDING_APPROVAL,
        CallStatus.HELD,
        CallStatus.UNKNOWN,
        CallStatus.EXECUTING,
        CallStatus.PROPOSED,
    }
)
# request errors after which the turn may have been recorded: a retry continues it
_MAYBE_RECORDED = frozenset(
    {
        RequestCode.STORE_UNAVAILABLE,
        RequestCode.RESULTS_NOT_RECORDED,
        RequestCode.SHUTTING_DOWN,
        RequestCode.INTERNAL,
    }
)


@dataclass(frozen=True)
class McpCall:
    """One tools/call: its tool, its arguments in canonical JSON, and what identifies an
    identical call (the tool and the SHA-256 of those arguments)."""

    tool: str
    arguments_json: str

    @property
    def key(self) -> tuple[str, str]:
        return self.tool, hashlib.sha256(self.arguments_json.encode()).hexdigest()

    @classmethod
    def of(cls, name: str, arguments: dict[str, Any] | None) -> McpCall:
        """The call, or ArgumentsError when the arguments have no canonical JSON form (a
        number beyond what every JSON reader keeps exactly, nesting past what can be written)."""
        try:
            text = canonical(arguments if arguments is not None else {}).decode()
        except (rfc8785.CanonicalizationError, RecursionError) as exc:
            raise ArgumentsError(
                f"the arguments cannot be written as canonical JSON (RFC 8785): {exc}"
            ) from exc
        return cls(name, text)


class OpenCalls:
    """Per run: the calls whose last answer was not final, by key → their turn ID. Bounded:
    the runs least recently used are forgotten first (their sessions are long gone)."""

    def __init__(self, max_runs: int = DEFAULT_MAX_SESSIONS) -> None:
        self.max_runs = max_runs
        self._runs: OrderedDict[str, dict[tuple[str, str], str]] = OrderedDict()
        self.started: OrderedDict[str, None] = OrderedDict()

    def turn(self, run_id: str, key: tuple[str, str]) -> str | None:
        return self._runs.get(run_id, {}).get(key)

    def remember(self, run_id: str, key: tuple[str, str], turn_id: str) -> None:
        self._runs.setdefault(run_id, {})[key] = turn_id
        self._runs.move_to_end(run_id)
        while len(self._runs) > self.max_runs:
            self._runs.popitem(last=False)

    def forget(self, run_id: str, key: tuple[str, str]) -> None:
        self._runs.get(run_id, {}).pop(key, None)

    def mark_started(self, run_id: str) -> None:
        self.started[run_id] = None
        self.started.move_to_end(run_id)
        while len(self.started) > self.max_runs:
            self.started.popitem(last=False)


def run_id_for(session_id: str | None, meta: dict[str, Any] | None) -> str:
    """The run of this request: its MCP session's, else the run key its `_meta` names."""
    if session_id:
        return RUN_PREFIX + session_id
    key = (meta or {}).get(RUN_KEY_META)
    if not isinstance(key, str) or not key or len(key) > MAX_RUN_KEY or not key.isprintable():
        raise RequestError(
            RequestCode.INVALID_ARGUMENT,
            (
                "this request has no MCP session (the stateless 2026-07-28 revision): name your "
                f"run in the request's _meta as {RUN_KEY_META!r} (1 to {MAX_RUN_KEY} printable "
                "characters, the same for every call of one task), or connect with a session"
            ),
        )
    return RUN_PREFIX + key


class McpGateway:
    """What the MCP handlers call: the caller's tools, and one call run as a turn."""

    def __init__(self, runner: Runner, *, max_runs: int = DEFAULT_MAX_SESSIONS) -> None:
        self.runner = runner
        self.open = OpenCalls(max_runs)

    async def list_tools(self, identity: Identity) -> list[types.Tool]:
        """The tools this caller may use (the policy's `offer` rule; undefined: all)."""
        offered = await self.runner.policy.offer(offer_input(identity))
        with pinned(self.runner.registry):
            return [
                tool_of(t)
                for t in self.runner.registry.tools()
                if offered is None or t.name in offered
            ]

    async def call_tool(
        self, identity: Identity, run_id: str, name: str, arguments: dict[str, Any] | None
    ) -> types.CallToolResult:
        """Run one call; every end, refusals and request errors too, is a tool result."""
        try:
            call = McpCall.of(name, arguments)
        except ArgumentsError as err:
            return tool_error(CallCode.INVALID_ARGUMENTS.value, str(err))
        try:
            await self._start(identity, run_id)
            with pinned(self.runner.registry):  # one tool set for the whole call
                return await self._run(identity, run_id, call)
        except RequestError as err:
            return tool_error(err.code.value, err.message)

    async def _start(self, identity: Identity, run_id: str) -> None:
        if run_id in self.open.started:
            return
        await self.runner.start_run(identity, StartRunParams(run_id=run_id))
        self.open.mark_started(run_id)

    async def _run(self, identity: Identity, run_id: str, call: McpCall) -> types.CallToolResult:
        key = call.key
        again = self.open.turn(run_id, key)
        turn_id = again or f"{RUN_PREFIX}{uuid.uuid4().hex}"
        turn = TurnInput(
            run_id=run_id,
            turn_id=turn_id,
            event=TurnEvent(
                EventKind.TOOL_REQUEST,
                calls=(ToolCall(f"{turn_id}#0", call.tool, call.arguments_json),),
            ),
        )
        self.open.remember(run_id, key, turn_id)  # before anything is recorded
        try:
            outcome = await self.runner.submit_turn(identity, turn)
            if again and _unknown(outcome):  # asked again: look the write up again
                outcome = await self.runner.resume_run(identity, run_id)
        except RequestError as err:
            if err.code not in _MAYBE_RECORDED:
                self.open.forget(run_id, key)
            raise
        result = _result_of(outcome, turn.event.calls[0].call_id)
        if result.status not in _NOT_FINAL:
            self.open.forget(run_id, key)
        log.info(
            "run %s turn %s: MCP call of %s answered %s",
            run_id,
            turn_id,
            call.tool,
            result.status.value,
        )
        return call_result(result)


def _unknown(outcome: TurnOutcome) -> bool:
    return outcome.run_state == RunState.PAUSED_UNKNOWN_OUTCOME


def _result_of(outcome: TurnOutcome, call_id: str) -> CallResult:
    for result in outcome.results:
        if result.call_id == call_id:
            return result
    raise RequestError(
        RequestCode.RUN_PAUSED,
        (  # a resumed run answers its last turn
            f"run {outcome.run_id} settled another call ({outcome.reason or outcome.next.value}); "
            "call this tool again"
        ),
    )
