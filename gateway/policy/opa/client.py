"""Talking to an OPA server: `opa-python-client`'s AsyncOpaClient, and what it lacks.

One `OpaConnection` per sidecar keeps one aiohttp session open (the library's, made by its
`_init_session`), so every query reuses pooled keep-alive connections; the library itself only
opens a session for an `async with` block. Used as they are: its request helper `_request`,
`update_policy_from_string` (with `rego_compat=False`: never rewrite a policy), the policy
list, `check_health` and the bearer token. What it lacks is added here, thinly:

- a CA file to trust (it verifies https only against the system's CAs) and a path prefix in
  the URL (it builds `scheme://host:port/v1`): `_Client._init_session` and `root_url` below;
- OPA's error body: `query_rule` takes query parameters (`strict-builtin-errors`,
  `provenance` would pass) but calls `raise_for_status()` before reading the body, which drops
  OPA's explanation (`eval_builtin_error: div: divide by zero` with file and row) and the
  difference between `{}` and an error; `query` posts through the library's session and
  `_request` instead and reads the body whatever the status (at most MAX_ANSWER_BYTES), with
  callgate's strict JSON reader (the library's `json()` would take a key given twice or NaN);
- a per-request deadline: its timeout is the session's; each call here is also bounded with
  `asyncio.timeout`, and its retries (with back-off sleeps) are off: a decision has one try.

The private names used are those of opa-python-client 3.x (pinned below 4 in pyproject.toml).
Every failure becomes `OpaError` with a `kind` (unreachable, timeout, status, body) and a
message naming the cause; nothing from aiohttp leaves this module.
"""

from __future__ import annotations

import asyncio
import json
import ssl
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import quote, urlencode, urlsplit

import aiohttp
from opa_client import AsyncOpaClient
from opa_client.errors import RegoParseError

from gateway.jsontext import JsonTextError, read_json
from gateway.limits import MAX_JSON_DEPTH_CAP
from gateway.policy.opa.settings import OpaSettings

MAX_ANSWER_BYTES: Final = 4 << 20  # an answer larger than this is refused, not read whole
UNREACHABLE: Final = "unreachable"
TIMEOUT: Final = "timeout"
STATUS: Final = "status"  # OPA answered 4xx/5xx
BODY: Final = "body"  # OPA answered something that is not OPA's JSON


class OpaError(Exception):
    """An OPA request that gave no usable answer; `kind` says which way it failed."""

    def __init__(
        self, kind: str, message: str, *, status: int = 0, errors: tuple[dict[str, Any], ...] = ()
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.status = status
        self.errors = errors

    @property
    def transport(self) -> bool:
        """OPA could not be asked at all (as opposed to OPA answering with an error)."""
        return self.kind in (UNREACHABLE, TIMEOUT)


@dataclass(frozen=True)
class OpaAnswer:
    """A 2xx answer of the Data API: `defined` is False for `{}` (no `result` key)."""

    defined: bool
    result: Any = None
    provenance: dict[str, Any] = field(default_factory=dict)


class _Client(AsyncOpaClient):
    """AsyncOpaClient with a CA file and client certificate of callgate's choosing."""

    def __init__(self, settings: OpaSettings) -> None:
        parts = urlsplit(settings.url)
        https = parts.scheme == "https"
        super().__init__(
            host=parts.hostname or "",
            port=parts.port or (443 if https else 80),
            ssl=https,
            token=settings.token or None,
            retries=0,
            timeout=settings.timeout_s,
        )
        self.base_url = settings.url.rstrip("/")
        self.root_url = f"{self.base_url}/v1"  # the library drops a path prefix
        self._settings = settings

    async def _init_session(self) -> None:
        context = _ssl_context(self._settings) if self.ssl else None
        self._connector = aiohttp.TCPConnector(ssl=context if context is not None else False)
        self._session = aiohttp.ClientSession(
            headers=self.headers,
            connector=self._connector,
            timeout=aiohttp.ClientTimeout(total=self.timeout),
        )


def _ssl_context(settings: OpaSettings) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(settings.ca) if settings.ca else None)
    if settings.client_cert is not None and settings.client_key is not None:
        context.load_cert_chain(str(settings.client_cert), str(settings.client_key))
    return context


class OpaConnection:
    """One open session to an OPA server; every method raises OpaError on failure."""

    def __init__(self, settings: OpaSettings) -> None:
        self.settings = settings
        self.url = settings.url.rstrip("/")
        self._client = _Client(settings)
        self._opened = False

    async def open(self) -> None:
        if not self._opened:
            await self._client._init_session()
            self._opened = True

    async def close(self) -> None:
        if self._opened:
            await self._client.close_connection()
            self._opened = False

    # -- the Data API -------------------------------------------------------------------------

    async def query(
        self, path: str, input: dict[str, Any] | str | None, params: dict[str, str]
    ) -> OpaAnswer:
        """POST /v1/data/<path> with the input (its JSON text already, or None: no input at
        all); the answer, or OpaError (4xx/5xx included)."""
        text = input if isinstance(input, str | None) else json.dumps(input, allow_nan=False)
        url = f"{self._client.root_url}/data/{quote(path)}"
        if params:
            url = f"{url}?{urlencode(params)}"
        body = await self._send(
            "POST",
            url,
            data="{}" if text is None else f'{{"input":{text}}}',
            headers={"Content-Type": "application/json"},
        )
        if "result" not in body:
            return OpaAnswer(defined=False, provenance=_object(body.get("provenance")))
        return OpaAnswer(
            defined=True, result=body["result"], provenance=_object(body.get("provenance"))
        )

    async def healthy(self, *, bundles: bool = False) -> bool:
        """GET /health (with ?bundles=true: only once every configured bundle is active)."""
        await self.open()
        query = {"bundles": "true"} if bundles else None
        try:
            async with asyncio.timeout(self.settings.timeout_s):
                ok: bool = await self._client.check_health(
                    query=query, diagnostic_url=f"{self.url}/health"
                )
                return ok
        except TimeoutError:
            return False

    # -- the Policy and Data APIs (pushing a policy directory) --------------------------------

    async def put_policy(self, policy_id: str, text: str) -> None:
        """PUT /v1/policies/<id>; OpaError(STATUS, errors=OPA's parse/compile errors)."""
        await self.open()
        try:
            async with asyncio.timeout(self.settings.timeout_s * 10):
                await self._client.update_policy_from_string(
                    text, quote(policy_id), rego_compat=False
                )
        except RegoParseError as exc:
            errors = tuple(e for e in exc.errors if isinstance(e, dict))
            raise OpaError(
                STATUS, f"OPA refused the policy: {exc.message}", status=400, errors=errors
            ) from None
        except Exception as exc:
            raise _translate(exc, self.url) from None

    async def policy_ids(self) -> frozenset[str]:
        """The IDs of the policies OPA holds (GET /v1/policies)."""
        await self.open()
        try:
            async with asyncio.timeout(self.settings.timeout_s * 10):
                ids = await self._client.get_policies_list()
        except Exception as exc:
            raise _translate(exc, self.url, self.settings.timeout_s * 10) from None
        return frozenset(str(i) for i in ids)

    async def delete_policy(self, policy_id: str) -> None:
        await self.open()
        url = f"{self._client.root_url}/policies/{quote(policy_id)}"
        await self._send("DELETE", url, slow=True)

    async def put_data(self, path: str, value: Any) -> None:
        await self.open()
        url = f"{self._client.root_url}/data/{quote(path)}"
        await self._send(
            "PUT",
            url,
            data=json.dumps(value, allow_nan=False),
            slow=True,
            headers={"Content-Type": "application/json"},
        )

    async def delete_data(self, path: str) -> None:
        await self.open()
        url = f"{self._client.root_url}/data/{quote(path)}"
        await self._send("DELETE", url, slow=True, missing_ok=True)

    # -- internals ----------------------------------------------------------------------------

    async def _send(
        self,
        method: str,
        url: str,
        *,
        data: str | None = None,
        headers: dict[str, str] | None = None,
        slow: bool = False,
        missing_ok: bool = False,
    ) -> dict[str, Any]:
        await self.open()
        limit = self.settings.timeout_s * (10 if slow else 1)
        try:
            async with asyncio.timeout(limit):
                async with self._client._request(
                    method, url, data=data, headers=headers
                ) as response:
                    status = response.status
                    raw = await _read_capped(response)
        except Exception as exc:
            raise _translate(exc, self.url, limit) from None
        body = _body(raw, status)
        if status >= 400 and not (missing_ok and status == 404):
            raise _status_error(status, body)
        return body


async def _read_capped(response: aiohttp.ClientResponse) -> bytes:
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.content.iter_chunked(64 << 10):
        size += len(chunk)
        if size > MAX_ANSWER_BYTES:
            raise OpaError(
                BODY,
                f"OPA answered {response.status} with more than {MAX_ANSWER_BYTES} bytes",
                status=response.status,
            )
        chunks.append(chunk)
    return b"".join(chunks)


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _body(raw: bytes, status: int) -> dict[str, Any]:
    """OPA's answer, read by the strict reader: a decision a lax reader would take either way
    (a key twice, NaN) is an unusable answer, and so a denial. Integers are kept exactly, as
    OPA keeps them."""
    if not raw.strip():
        return {}
    try:
        body = read_json(raw, max_depth=MAX_JSON_DEPTH_CAP, big_integers=True)
    except JsonTextError as exc:
        if exc.rule == "syntax":
            raise OpaError(
                BODY,
                f"OPA answered {status} with a body that is not JSON: {raw[:120]!r}",
                status=status,
            ) from None
        raise OpaError(
            BODY,
            f"OPA answered {status} with a body that is not strict JSON: {exc.message}",
            status=status,
        ) from None
    if not isinstance(body, dict):
        raise OpaError(
            BODY, f"OPA answered {status} with JSON that is not an object", status=status
        )
    return body


def _status_error(status: int, body: dict[str, Any]) -> OpaError:
    errors = tuple(e for e in body.get("errors") or () if isinstance(e, dict))
    detail = "; ".join(_error_text(e) for e in errors) or str(body.get("message") or "")
    code = body.get("code") or "no code"
    return OpaError(
        STATUS,
        f"OPA answered {status} ({code}): {detail or 'no message'}",
        status=status,
        errors=errors,
    )


def _error_text(error: dict[str, Any]) -> str:
    text = f"{error.get('code', 'error')}: {error.get('message', '')}"
    where = error.get("location")
    if isinstance(where, dict) and where.get("file"):
        text += f" ({where['file']}:{where.get('row', '?')})"
    return text


def _translate(exc: BaseException, url: str, limit: float | None = None) -> OpaError:
    if isinstance(exc, OpaError):
        return exc
    if isinstance(exc, TimeoutError):
        return OpaError(TIMEOUT, f"OPA at {url} did not answer within {limit or '?'} s")
    if isinstance(exc, aiohttp.ClientConnectionError | OSError):
        return OpaError(UNREACHABLE, f"OPA at {url} is unreachable: {exc}")
    if isinstance(exc, aiohttp.ClientResponseError):
        return OpaError(STATUS, f"OPA answered {exc.status}: {exc.message}", status=exc.status)
    if isinstance(exc, aiohttp.ClientError | ValueError):
        return OpaError(BODY, f"OPA at {url} gave an unusable answer: {exc}")
    raise exc
