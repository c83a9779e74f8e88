"""`http` executors (docs/tools.md): POST the arguments as JSON to the tool's URL.

Every request carries `Idempotency-Key` (`<run_id>:<call_id>`), `X-Callgate-Run-Id`,
`X-Callgate-Call-Id` and `X-Callgate-Subject`, and with tracing on the W3C `traceparent` (and
`tracestate`) of the call's tool span. Whether a request reached the target is taken
from the client (the request's bytes were handed to the connection), so "nothing was sent" is
exact: such a try is FAILED and is not counted in `attempts`.

    outcome                            read                          write
    nothing sent (connect error,       FAILED tool_error (or         the same
      connect or pool timeout)         tool_timeout), attempts 0,
                                       retried
    2xx, JSON (or empty) body          SUCCEEDED                     SUCCEEDED
    2xx, body not JSON                 FAILED output_invalid         SUCCEEDED, noted output_invalid
    3xx (redirects are not followed)   FAILED tool_error             UNKNOWN outcome_unknown
    408                                FAILED tool_error, retried    UNKNOWN outcome_unknown
    409                                FAILED tool_error             UNKNOWN outcome_unknown
    425, 429                           FAILED tool_error, retried    FAILED tool_error
    other 4xx                          FAILED tool_error             FAILED tool_error
    5xx                                FAILED tool_error, retried    UNKNOWN outcome_unknown
    timeout after sending              FAILED tool_timeout, retried  UNKNOWN outcome_unknown
    connection lost after sending      FAILED tool_error, retried    UNKNOWN outcome_unknown

Writes are retried (same Idempotency-Key) only when the target enforces the key and
`retry.max_attempts` > 1; the registry refuses any other write retry at load.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlsplit

from multidict import CIMultiDictProxy

from gateway.errors import CallCode
from gateway.executors.base import NO_HEADERS, ExecutionContext, ExecutionResult
from gateway.executors.http1 import Http1Client, charset
from gateway.executors.outcome import (
    KEPT_TEXT_CHARS,
    Attempt,
    dump_json,
    error_text,
    excerpt,
    failed,
    json_problem,
    noted,
    succeeded,
    too_large,
    unknown,
    with_retries,
)
from gateway.executors.reconcile import Absent, Found, Inconclusive, LookupResult
from gateway.limits import DEFAULT_LIMITS
from gateway.model import Effect

_RETRYABLE_READ_STATUS = frozenset({408, 425, 429})
_UNKNOWN_WRITE_STATUS = frozenset({408, 409})


class HttpClients:
    """The one `Http1Client` every http tool of a registry shares (kept-alive connections per
    origin). Created on first use; closed by `aclose`. Redirects are not followed, proxy
    settings from the environment are not used, and cookies are not kept."""

    def __init__(self, max_body_bytes: int = DEFAULT_LIMITS.max_output_bytes) -> None:
        self._client: Http1Client | None = None
        self.max_body_bytes = max_body_bytes  # a larger body is not read past this

    def get(self) -> Http1Client:
        if self._client is None or self._client.closed:
            self._client = Http1Client()
        return self._client

    async def aclose(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()


@dataclass(frozen=True)
class Reply:
    """An answer as read: status, headers and the body (at most the cap)."""

    status_code: int
    headers: CIMultiDictProxy[str]
    content: bytes
    charset: str | None

    @property
    def text(self) -> str:
        return self.content.decode(self.charset or "utf-8", errors="replace")


@dataclass(frozen=True)
class Exchange:
    """One request: the answer, or why there is none and whether anything was sent."""

    response: Reply | None
    sent: bool
    problem: str = ""
    timed_out: bool = False
    oversize: int = 0  # the body's size (as declared, or read so far) when over the cap


def callgate_headers(ctx: ExecutionContext, extra: Mapping[str, str]) -> dict[str, str]:
    """The manifest's headers, callgate's own, and the trace context when tracing (so the
    tool's spans join the caller's trace)."""
    return {**extra, "Accept": "application/json", "Idempotency-Key": ctx.idempotency_key,
            "X-Callgate-Run-Id": ctx.run_id, "X-Callgate-Call-Id": ctx.call_id,
            "X-Callgate-Subject": ctx.identity.subject, **(ctx.trace_headers or NO_HEADERS)}


def _target(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.hostname}:{parts.port}" if parts.port else str(parts.hostname)


async def exchange(client: Http1Client, method: str, url: str, *,
                   headers: Mapping[str, str], timeout_s: float, body: Any = None,
                   max_body_bytes: int = DEFAULT_LIMITS.max_output_bytes) -> Exchange:
    """Send one request within timeout_s overall, reading at most max_body_bytes of the
    answer; never raises for transport problems."""
    went_out = False  # set once the request went out

    def sent() -> None:
        nonlocal went_out
        went_out = True
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        headers = {**{k: v for k, v in headers.items() if k.lower() != "content-type"},
                   "Content-Type": "application/json"}
    try:
        async with asyncio.timeout(timeout_s):
            answer = await client.request(method, url, headers=headers, body=data,
                                          max_body_bytes=max_body_bytes, on_sent=sent)
    except TimeoutError:
        return Exchange(None, went_out, f"no response from {_target(url)} within "
                                         f"{timeout_s:g} s", timed_out=True)
    except Exception as exc:  # OSError, ssl.SSLError, BrokenAnswer, ValueError (unsendable)
        verb = "connection to" if went_out else "could not connect to"
        return Exchange(None, went_out, f"{verb} {_target(url)} failed: "
                                         f"{type(exc).__name__}: {error_text(exc)}")
    reply = Reply(answer.status, answer.headers, answer.body,
                  charset(answer.headers.get("Content-Type", "")))
    return Exchange(reply, True, oversize=answer.oversize)


def _body_output(response: Reply) -> tuple[str, str | None]:
    """(output_json, problem): the body as the output, or why it is not JSON."""
    text = response.text
    if not text.strip():
        return "null", None
    problem = json_problem(text)
    if problem is None:
        return text.strip(), None
    return dump_json(text[:KEPT_TEXT_CHARS]), (
        f"response body is not JSON ({problem}): {excerpt(text)}")


def _status_text(response: Reply) -> str:
    body = excerpt(response.text)
    return f"HTTP {response.status_code}" + (f": {body}" if body else "")


class HttpExecutor:
    def __init__(self, *, url: str, timeout_s: float, headers: Mapping[str, str],
                 clients: HttpClients, effect: Effect, max_attempts: int = 1,
                 backoff_s: float = 0.0) -> None:
        self._url = url
        self._timeout_s = timeout_s
        self._headers = dict(headers)
        self._clients = clients
        self._effect = effect
        self._max_attempts = max_attempts
        self._backoff_s = backoff_s

    async def execute(self, args: dict[str, Any], ctx: ExecutionContext) -> ExecutionResult:
        return await with_retries(lambda: self._attempt(args, ctx),
                                  max_attempts=self._max_attempts, backoff_s=self._backoff_s)

    async def send_once(self, args: dict[str, Any], ctx: ExecutionContext) -> ExecutionResult:
        return (await self._attempt(args, ctx)).result

    async def aclose(self) -> None:
        return None  # the shared client belongs to the registry

    async def _attempt(self, args: dict[str, Any], ctx: ExecutionContext) -> Attempt:
        done = await exchange(self._clients.get(), "POST", self._url,
                              headers=callgate_headers(ctx, self._headers),
                              timeout_s=self._timeout_s, body=args,
                              max_body_bytes=self._clients.max_body_bytes)
        if done.response is None:
            return self._no_response(done)
        if done.oversize and 200 <= done.response.status_code < 300:
            return Attempt(too_large(self._effect, done.oversize,
                                     self._clients.max_body_bytes, attempts=1))
        return self._answered(done.response)

    def _no_response(self, done: Exchange) -> Attempt:
        code = CallCode.TOOL_TIMEOUT if done.timed_out else CallCode.TOOL_ERROR
        if not done.sent:
            return Attempt(failed(code, f"{done.problem} (nothing was sent)", attempts=0),
                           retryable=True)
        if self._effect is Effect.READ:
            return Attempt(failed(code, done.problem), retryable=True)
        return Attempt(unknown(f"outcome unknown: the request was sent but {done.problem}"),
                       retryable=True)

    def _answered(self, response: Reply) -> Attempt:
        status = response.status_code
        if 200 <= status < 300:
            return Attempt(self._succeeded(response))
        text = _status_text(response)
        if self._effect is Effect.READ:
            retry = status >= 500 or status in _RETRYABLE_READ_STATUS
            return Attempt(failed(CallCode.TOOL_ERROR, text), retryable=retry)
        if status >= 500 or status in _UNKNOWN_WRITE_STATUS:
            return Attempt(unknown(f"outcome unknown: {text}"), retryable=True)
        if status < 400:
            return Attempt(unknown(f"outcome unknown: unexpected {text}"))
        return Attempt(failed(CallCode.TOOL_ERROR, text))

    def _succeeded(self, response: Reply) -> ExecutionResult:
        output, problem = _body_output(response)
        if problem is None:
            return succeeded(output)
        if self._effect is Effect.READ:
            return failed(CallCode.OUTPUT_INVALID, problem)
        return noted(output, problem)


def fill_lookup_url(template: str, ctx: ExecutionContext) -> str:
    values = {"idempotency_key": ctx.idempotency_key, "run_id": ctx.run_id,
              "call_id": ctx.call_id}
    for name, value in values.items():
        template = template.replace("{" + name + "}", quote(value, safe=""))
    return template


class HttpLookup:
    """GET the look-up URL: 200 = found (the body), 404 = not applied, else inconclusive."""

    def __init__(self, *, url: str, timeout_s: float, headers: Mapping[str, str],
                 clients: HttpClients) -> None:
        self._url = url
        self._timeout_s = timeout_s
        self._headers = dict(headers)
        self._clients = clients

    async def lookup(self, args: dict[str, Any], ctx: ExecutionContext) -> LookupResult:
        done = await exchange(self._clients.get(), "GET", fill_lookup_url(self._url, ctx),
                              headers=callgate_headers(ctx, self._headers),
                              timeout_s=self._timeout_s,
                              max_body_bytes=self._clients.max_body_bytes)
        if done.response is None:
            return Inconclusive(f"look-up failed: {done.problem}")
        if done.response.status_code == 200 and done.oversize:
            marked = too_large(Effect.WRITE, done.oversize, self._clients.max_body_bytes, 0)
            return Found(marked.output_json, note=marked.error_message)
        if done.response.status_code == 200:
            output, problem = _body_output(done.response)
            return Found(output, note=problem or "")
        if done.response.status_code == 404:
            return Absent()
        return Inconclusive(f"look-up answered {_status_text(done.response)}")
