"""`http` executors (docs/tools.md): POST the arguments as JSON to the tool's URL.

Every request carries `Idempotency-Key` (`<run_id>:<call_id>`), `X-Callgate-Run-Id`,
`X-Callgate-Call-Id` and `X-Callgate-Subject`, and with tracing on the W3C `traceparent` (and
`tracestate`) of the call's tool span and the caller's `baggage`. Whether a request reached
the target is taken from the client (the request's bytes were handed to the connection), so
"nothing was sent" is exact: such a try is FAILED and is not counted in `attempts`.

    outcome                            read                          write
    nothing sent (connect error,       FAILED tool_error (or         the same
      connect or pool timeout, TLS     tool_timeout), attempts 0,
      handshake failed or refused,     retried
      proxy refused the tunnel)
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

A refused TLS handshake counts as nothing sent even when the request was written: under TLS
1.3 the target checks a client certificate after the client's handshake has ended, and its
refusal (a TLS alert, `HandshakeRefused`) means it read nothing on that connection. A refusal
that comes as a reset instead, without the alert, stays "connection lost after sending".

Writes are retried (same Idempotency-Key) only when the target enforces the key and
`retry.max_attempts` > 1; the registry refuses any other write retry at load.
"""

from __future__ import annotations

import asyncio
import json
import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

from multidict import CIMultiDictProxy

from gateway.errors import CallCode
from gateway.executors.base import NO_HEADERS, ExecutionContext, ExecutionResult
from gateway.executors.config import TlsConfig
from gateway.executors.http1 import (
    DIRECT,
    HandshakeRefused,
    Http1Client,
    Proxy,
    Route,
    charset,
    target,
)
from gateway.executors.output import KEPT_TEXT_CHARS, dump_json, json_problem, too_large
from gateway.executors.proxy import Proxies
from gateway.executors.reconcile import Absent, Found, Inconclusive, LookupResult
from gateway.executors.results import error_text, excerpt, failed, noted, succeeded, unknown
from gateway.executors.retries import Attempt, with_retries
from gateway.executors.tls import TlsFiles, client_context
from gateway.limits import DEFAULT_LIMITS
from gateway.model import Effect

_RETRYABLE_READ_STATUS = frozenset({408, 425, 429})
_UNKNOWN_WRITE_STATUS = frozenset({408, 409})


# OpenSSL's verify codes: what a tls field can change
_NAME_MISMATCH = frozenset({62, 64})  # X509_V_ERR_HOSTNAME_MISMATCH, _IP_ADDRESS_MISMATCH
_UNKNOWN_ISSUER = frozenset({2, 18, 19, 20, 21})  # no issuer known, self-signed, no local one

_RouteKey = tuple[TlsFiles | None, str, Proxy | None]


class HttpClients:
    """The one `Http1Client` every http tool of a registry shares (kept-alive connections per
    origin and route), created on first use and closed by `aclose`; and the routes of the
    tools' requests, settled at load: one TLS context per distinct `tls` section, the proxy
    (from `proxies`, the environment's) or none. Redirects are not followed and cookies are
    not kept."""

    def __init__(
        self, max_body_bytes: int = DEFAULT_LIMITS.max_output_bytes, proxies: Proxies | None = None
    ) -> None:
        self._client: Http1Client | None = None
        self.max_body_bytes = max_body_bytes  # a larger body is not read past this
        self._proxies = proxies or Proxies()
        self._contexts: dict[TlsFiles, ssl.SSLContext] = {}
        self._routes: dict[_RouteKey, Route] = {}

    def route(self, url: str, tls: TlsConfig | None, base: Path) -> Route:
        """How url's requests travel; one Route per distinct setting, so that tools sharing
        one share connections. Raises TlsFileError (a file of tls; relative paths are taken
        from base) or ProxySettingError (a proxy callgate cannot use)."""
        files = None if tls is None else TlsFiles.of(tls, base)
        files = None if files is None or files.empty else files
        server_name = (tls.server_name if tls is not None else None) or ""
        proxy = self._proxies.proxy_for(target(url))
        key = (files, server_name, proxy)
        if key == (None, "", None):
            return DIRECT
        found = self._routes.get(key)
        if found is None:
            found = self._routes[key] = Route(self._context(files), server_name, proxy)
        return found

    def _context(self, files: TlsFiles | None) -> ssl.SSLContext | None:
        if files is None:
            return None
        context = self._contexts.get(files)
        if context is None:
            context = self._contexts[files] = client_context(files)
        return context

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
    return {
        **extra,
        "Accept": "application/json",
        "Idempotency-Key": ctx.idempotency_key,
        "X-Callgate-Run-Id": ctx.run_id,
        "X-Callgate-Call-Id": ctx.call_id,
        "X-Callgate-Subject": ctx.identity.subject,
        **(ctx.trace_headers or NO_HEADERS),
    }


def _target(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.hostname}:{parts.port}" if parts.port else str(parts.hostname)


def _problem(exc: Exception) -> str:
    if not isinstance(exc, ssl.SSLCertVerificationError):
        return f"{type(exc).__name__}: {error_text(exc)}"
    hint = ""
    if exc.verify_code in _NAME_MISMATCH:
        hint = " (tls.server_name names the name to expect)"
    elif exc.verify_code in _UNKNOWN_ISSUER:
        hint = " (tls.ca_file names the CAs to trust)"
    return f"the target's TLS certificate is not trusted: {exc.verify_message}{hint}"


def _no_answer(exc: Exception, went_out: bool, url: str, timeout_s: float) -> Exchange:
    """Why a request has no answer, and whether it may have been read."""
    where = _target(url)
    if isinstance(exc, TimeoutError):
        problem = f"no response from {where} within {timeout_s:g} s"
        return Exchange(None, went_out, problem, timed_out=True)
    if isinstance(exc, HandshakeRefused):  # written, perhaps, but never read
        problem = f"could not connect to {where}: {exc}; is tls.cert_file a certificate it accepts?"
        return Exchange(None, False, problem)
    verb = "connection to" if went_out else "could not connect to"
    return Exchange(None, went_out, f"{verb} {where} failed: {_problem(exc)}")


async def exchange(
    client: Http1Client,
    method: str,
    url: str,
    *,
    headers: Mapping[str, str],
    timeout_s: float,
    body: Any = None,
    max_body_bytes: int = DEFAULT_LIMITS.max_output_bytes,
    route: Route = DIRECT,
) -> Exchange:
    """Send one request within timeout_s overall, reading at most max_body_bytes of the
    answer; never raises for transport problems."""
    went_out = False  # set once the request went out

    def sent() -> None:
        nonlocal went_out
        went_out = True

    data = None
    if body is not None:
        data = json.dumps(body).encode()
        headers = {
            **{k: v for k, v in headers.items() if k.lower() != "content-type"},
            "Content-Type": "application/json",
        }
    try:
        async with asyncio.timeout(timeout_s):
            answer = await client.request(
                method,
                url,
                headers=headers,
                body=data,
                max_body_bytes=max_body_bytes,
                on_sent=sent,
                route=route,
            )
    except Exception as exc:  # OSError, ssl.SSLError, BrokenAnswer, ProxyRefused, ValueError
        return _no_answer(exc, went_out, url, timeout_s)
    reply = Reply(
        answer.status, answer.headers, answer.body, charset(answer.headers.get("Content-Type", ""))
    )
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
        f"response body is not JSON ({problem}): {excerpt(text)}"
    )


def _status_text(response: Reply) -> str:
    body = excerpt(response.text)
    return f"HTTP {response.status_code}" + (f": {body}" if body else "")


class HttpExecutor:
    def __init__(
        self,
        *,
        url: str,
        timeout_s: float,
        headers: Mapping[str, str],
        clients: HttpClients,
        effect: Effect,
        max_attempts: int = 1,
        backoff_s: float = 0.0,
        route: Route = DIRECT,
    ) -> None:
        self._url = url
        self._route = route
        self._timeout_s = timeout_s
        self._headers = dict(headers)
        self._clients = clients
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
        return None  # the shared client belongs to the registry

    async def _attempt(self, args: dict[str, Any], ctx: ExecutionContext) -> Attempt:
        done = await exchange(
            self._clients.get(),
            "POST",
            self._url,
            headers=callgate_headers(ctx, self._headers),
            timeout_s=self._timeout_s,
            body=args,
            max_body_bytes=self._clients.max_body_bytes,
            route=self._route,
        )
        if done.response is None:
            return self._no_response(done)
        if done.oversize and 200 <= done.response.status_code < 300:
            return Attempt(
                too_large(self._effect, done.oversize, self._clients.max_body_bytes, attempts=1)
            )
        return self._answered(done.response)

    def _no_response(self, done: Exchange) -> Attempt:
        code = CallCode.TOOL_TIMEOUT if done.timed_out else CallCode.TOOL_ERROR
        if not done.sent:
            return Attempt(
                failed(code, f"{done.problem} (nothing was sent)", attempts=0), retryable=True
            )
        if self._effect is Effect.READ:
            return Attempt(failed(code, done.problem), retryable=True)
        return Attempt(
            unknown(f"outcome unknown: the request was sent but {done.problem}"), retryable=True
        )

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
    values = {"idempotency_key": ctx.idempotency_key, "run_id": ctx.run_id, "call_id": ctx.call_id}
    for name, value in values.items():
        template = template.replace("{" + name + "}", quote(value, safe=""))
    return template


class HttpLookup:
    """GET the look-up URL: 200 = found (the body), 404 = not applied, else inconclusive."""

    def __init__(
        self,
        *,
        url: str,
        timeout_s: float,
        headers: Mapping[str, str],
        clients: HttpClients,
        route: Route = DIRECT,
    ) -> None:
        self._url = url
        self._route = route
        self._timeout_s = timeout_s
        self._headers = dict(headers)
        self._clients = clients

    async def lookup(self, args: dict[str, Any], ctx: ExecutionContext) -> LookupResult:
        done = await exchange(
            self._clients.get(),
            "GET",
            fill_lookup_url(self._url, ctx),
            headers=callgate_headers(ctx, self._headers),
            timeout_s=self._timeout_s,
            max_body_bytes=self._clients.max_body_bytes,
            route=self._route,
        )
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
