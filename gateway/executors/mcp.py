"""`mcp` executors (docs/tools.md "Tools on MCP servers"): `tools/call` on a server of the
servers file, through the official SDK's session (`gateway.executors.mcp_sessions`).

Every request's `_meta` carries `io.callgate/idempotency-key` (`<run_id>:<call_id>`),
`io.callgate/run-id`, `io.callgate/call-id`, `io.callgate/subject` and, with tracing on, the
W3C `traceparent` (and `tracestate`) of the call's tool span. MCP itself has no idempotency
key: only a server that reads this one can make a repeated write harmless.

    outcome                                read                         write
    nothing sent (the session could not    FAILED tool_error (or        the same
      start, or had closed before)           tool_timeout), attempts 0
    a result                               SUCCEEDED: structuredContent, or {"content": [...]}
    a result with isError                  FAILED tool_error, the tool's own text
    a JSON-RPC error (the server refused)  FAILED tool_error             the same
    a JSON-RPC internal error (-32603)     FAILED tool_error, retried   UNKNOWN outcome_unknown
    no answer within timeout_s             FAILED tool_timeout, retried UNKNOWN outcome_unknown
    connection lost after sending          FAILED tool_error, retried   UNKNOWN outcome_unknown
    an answer that is no tools/call result FAILED output_invalid        UNKNOWN outcome_unknown

An HTTP server that answers it no longer knows the session (it restarted) ran nothing: the
session is started again and the request sent once more on it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, cast

import mcp_types as types
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from gateway.errors import CallCode
from gateway.executors.base import NO_HEADERS, ExecutionContext, ExecutionResult
from gateway.executors.mcp_sessions import (
    Connection,
    Sent,
    ServerLink,
    StartFailed,
    describe,
    sending,
)
from gateway.executors.output import KEPT_TEXT_CHARS, dump_json, json_problem
from gateway.executors.reconcile import Absent, Found, Inconclusive, LookupResult
from gateway.executors.results import excerpt, failed, noted, succeeded, unknown
from gateway.executors.retries import Attempt, with_retries
from gateway.model import Effect

KEY_META: Final = "io.callgate/idempotency-key"
TOOL_TEXT_CHARS = 1000
# "Session terminated" (the SDK's client, for an HTTP 404 on a known session), "Session not
# found" (the SDK's server): refused before anything ran
_STALE_SESSION = ("session terminated", "session not found")


@dataclass(frozen=True)
class Reply:
    """One tools/call: the result, or why there is none and whether it was sent."""

    result: types.CallToolResult | None
    sent: bool
    problem: str = ""
    timed_out: bool = False
    refused: bool = False  # the server answered a JSON-RPC error other than internal
    unreadable: bool = False
    stale: bool = False  # the server no longer knew the session: nothing ran


def request_meta(ctx: ExecutionContext) -> dict[str, Any]:
    return {
        KEY_META: ctx.idempotency_key,
        "io.callgate/run-id": ctx.run_id,
        "io.callgate/call-id": ctx.call_id,
        "io.callgate/subject": ctx.identity.subject,
        **(ctx.trace_headers or NO_HEADERS),
    }


def _server_error(link: ServerLink, exc: MCPError, sent: bool, problem: str) -> Reply:
    where = f"MCP server {link.name!r}"
    if exc.code == types.REQUEST_TIMEOUT:
        return Reply(None, sent, problem or f"no answer from {where}", timed_out=True)
    if exc.code == types.CONNECTION_CLOSED:
        return Reply(
            None, sent, f"the connection to {where} closed" + (f": {problem}" if problem else "")
        )
    text = f"{where} answered error {exc.code}: {excerpt(exc.message)}"
    if exc.code == types.INVALID_REQUEST and exc.message.lower() in _STALE_SESSION:
        return Reply(None, sent, text, stale=True)
    return Reply(None, sent, text, refused=exc.code != types.INTERNAL_ERROR)


async def _started(link: ServerLink) -> Connection | Reply:
    try:
        async with asyncio.timeout(link.spec.start_timeout_s + 5.0):
            return await link.connection()
    except TimeoutError:
        limit = link.spec.start_timeout_s
        return Reply(None, False, f"MCP server {link.name!r} did not start within {limit:g} s")
    except StartFailed as exc:
        return Reply(None, False, str(exc))


async def listed_entry(link: ServerLink, tool: str) -> dict[str, Any] | None:
    """The tool's entry in its server's latest tools/list (None: not listed), its session
    started first when needed; raises StartFailed when there is no session or no listing."""
    conn = await _started(link)
    if isinstance(conn, Reply):
        raise StartFailed(conn.problem)
    return await conn.entry(tool)


async def call_tool(
    link: ServerLink,
    tool: str,
    arguments: dict[str, Any],
    meta: Mapping[str, Any],
    timeout_s: float,
) -> Reply:
    """Send one tools/call within timeout_s (a session started first has the server's own
    start_timeout_s); never raises for transport problems."""
    conn = await _started(link)
    if isinstance(conn, Reply):
        return conn
    mark = Sent()
    params = types.CallToolRequestParams(
        name=tool, arguments=arguments, _meta=cast(types.RequestParamsMeta, dict(meta))
    )
    late = f"no answer from MCP server {link.name!r} within {timeout_s:g} s"
    try:
        async with asyncio.timeout(timeout_s + 1.0):  # the SDK's own timeout comes first
            assert conn.session is not None
            with sending(mark):
                result = await conn.session.send_request(
                    types.CallToolRequest(params=params),
                    types.CallToolResult,
                    request_read_timeout_seconds=timeout_s,
                )
    except TimeoutError:
        return Reply(None, mark.sent, late, timed_out=True)
    except MCPError as exc:
        reply = _server_error(link, exc, mark.sent, conn.problem)
        if reply.timed_out:
            return Reply(None, mark.sent, late, timed_out=True)
        if reply.stale:
            link.drop(conn, reply.problem)
        return reply
    except ValidationError as exc:
        problem = f"MCP server {link.name!r} answered something that is not a tools/call result"
        return Reply(None, True, f"{problem}: {excerpt(str(exc))}", unreadable=True)
    except Exception as exc:  # the SDK's own failures: anyio stream errors, RuntimeError
        return Reply(None, mark.sent, f"MCP server {link.name!r}: {describe(exc)}")
    return Reply(result, True)


def tool_text(result: types.CallToolResult) -> str:
    texts = [block.text for block in result.content if isinstance(block, types.TextContent)]
    return excerpt(" ".join(texts), TOOL_TEXT_CHARS) if texts else "(no text)"


def result_value(result: types.CallToolResult) -> Any:
    """The output of a result: structuredContent when given, else its content blocks."""
    if result.structured_content is not None:
        return result.structured_content
    return {
        "content": [
            block.model_dump(mode="json", by_alias=True, exclude_none=True)
            for block in result.content
        ]
    }


class McpExecutor:
    def __init__(
        self,
        *,
        link: ServerLink,
        tool: str,
        timeout_s: float,
        effect: Effect,
        max_attempts: int = 1,
        backoff_s: float = 0.0,
    ) -> None:
        self._link = link
        self._tool = tool
        self._timeout_s = timeout_s
        self._effect = effect
        self._max_attempts = max_attempts
        self._backoff_s = backoff_s

    async def execute(self, args: dict[str, Any], ctx: ExecutionContext) -> ExecutionResult:
        return await with_retries(
            lambda: self._attempt(args, ctx),
            max_attempts=self._max_attempts,
            backoff_s=self._backoff_s,
        )

    async def send_once(self, args: dict[str, Any], ctx: ExecutionContext) -> ExecutionResult:
        return (await self._attempt(args, ctx)).result

    async def aclose(self) -> None:
        return None  # the sessions belong to the registry

    async def _attempt(self, args: dict[str, Any], ctx: ExecutionContext) -> Attempt:
        meta = request_meta(ctx)
        reply = await call_tool(self._link, self._tool, args, meta, self._timeout_s)
        sent_before = 0
        if reply.stale:  # refused unread: once more, on a new session
            sent_before = 1
            reply = await call_tool(self._link, self._tool, args, meta, self._timeout_s)
        attempt = (
            self._answered(reply.result) if reply.result is not None else self._no_result(reply)
        )
        if sent_before:
            result = attempt.result
            attempt = Attempt(
                ExecutionResult(
                    result.status,
                    result.output_json,
                    result.error_code,
                    result.error_message,
                    result.attempts + sent_before,
                ),
                attempt.retryable,
            )
        return attempt

    def _no_result(self, reply: Reply) -> Attempt:
        code = CallCode.TOOL_TIMEOUT if reply.timed_out else CallCode.TOOL_ERROR
        if not reply.sent:
            return Attempt(
                failed(code, f"{reply.problem} (nothing was sent)", attempts=0), retryable=True
            )
        if reply.refused or reply.stale:
            return Attempt(failed(CallCode.TOOL_ERROR, reply.problem))
        if self._effect is Effect.READ:
            if reply.unreadable:
                return Attempt(failed(CallCode.OUTPUT_INVALID, reply.problem))
            return Attempt(failed(code, reply.problem), retryable=True)
        return Attempt(
            unknown(f"outcome unknown: the request was sent but {reply.problem}"), retryable=True
        )

    def _answered(self, result: types.CallToolResult) -> Attempt:
        if result.is_error:
            return Attempt(
                failed(CallCode.TOOL_ERROR, f"the tool answered an error: {tool_text(result)}")
            )
        value = result_value(result)
        try:
            return Attempt(succeeded(dump_json(value)))
        except ValueError as exc:
            message = f"the tool's result is not JSON callgate can carry: {exc}"
        if self._effect is Effect.READ:
            return Attempt(failed(CallCode.OUTPUT_INVALID, message))
        return Attempt(noted(dump_json(repr(value)[:KEPT_TEXT_CHARS]), message))


def fill_arguments(template: Mapping[str, str], ctx: ExecutionContext) -> dict[str, str]:
    values = {"idempotency_key": ctx.idempotency_key, "run_id": ctx.run_id, "call_id": ctx.call_id}
    filled = {}
    for name, text in template.items():
        for key, value in values.items():
            text = text.replace("{" + key + "}", value)
        filled[name] = text
    return filled


def _looked_up(result: types.CallToolResult) -> LookupResult:
    if result.is_error:
        return Inconclusive(f"the look-up tool answered an error: {tool_text(result)}")
    if result.structured_content is not None:
        return Found(dump_json(result.structured_content))
    if not result.content:
        return Absent()
    block = result.content[0]
    if len(result.content) == 1 and isinstance(block, types.TextContent):
        if json_problem(block.text) is not None:
            return Found(
                dump_json(block.text[:KEPT_TEXT_CHARS]),
                note="the look-up answered text that is not JSON",
            )
        if block.text.strip() == "null":
            return Absent()
        return Found(block.text.strip())
    return Found(dump_json(result_value(result)))


class McpLookup:
    """Reconcile look-up by another tool of the same server: a value = found, `null` or no
    content = not applied, a tool error or no answer = still unknown."""

    def __init__(
        self, *, link: ServerLink, tool: str, arguments: Mapping[str, str], timeout_s: float
    ) -> None:
        self._link = link
        self._tool = tool
        self._arguments = dict(arguments)
        self._timeout_s = timeout_s

    async def lookup(self, args: dict[str, Any], ctx: ExecutionContext) -> LookupResult:
        reply = await call_tool(
            self._link,
            self._tool,
            fill_arguments(self._arguments, ctx),
            request_meta(ctx),
            self._timeout_s,
        )
        if reply.result is None:
            return Inconclusive(f"look-up failed: {reply.problem}")
        try:
            return _looked_up(reply.result)
        except ValueError as exc:
            return Inconclusive(f"the look-up's answer is not JSON callgate can carry: {exc}")
