"""The HTTP/1.1 client of the http executors: requests on kept-alive connections per origin,
answers parsed by httptools (llhttp, the parser of Node.js).

It does what an http tool needs and no more: one request at a time per connection, the whole
request written at once (a JSON body of known length), the answer's body read up to a cap (a
larger one is not read further: the connection is closed), redirects not followed, no cookies,
no compression asked for. Measured on a two-read turn, aiohttp's bookkeeping per request (a
task for the body, timers, traces, URL and header objects) cost 200-300 µs of CPU, about four
times what the request's bytes cost on a kept-alive connection.

How a tool's requests travel is its `Route`, settled when the tool loads: the TLS context and
server name of an https target, and the HTTP proxy in between, if any (a CONNECT tunnel for
https, requests in absolute form for http). Connections are kept per origin and route.

Whether a request went out is the caller's to track: `request` calls `on_sent` once its bytes
are handed to the connection. A kept-alive connection that fails before any byte of an answer
arrives is tried once more, on a new connection, for a GET only (RFC 9112 §9.3.1: a request that
is not idempotent may have been applied). Under TLS 1.3 a target checks a client certificate
after the client's handshake has ended, when the request may already be written: its refusal
comes as a TLS alert, raised as `HandshakeRefused` (the request was written but never read).
"""

from __future__ import annotations

import asyncio
import codecs
import re
import ssl
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache

import httptools
from multidict import CIMultiDict, CIMultiDictProxy
from yarl import URL

IDLE_S = 15.0  # a connection idle for longer is closed, not reused
MAX_CONNECTIONS = 100  # per origin and route; one beyond waits for one (within its timeout)
MAX_TUNNEL_ANSWER = 16384  # bytes of a proxy's answer to CONNECT, at most
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")  # a header name (RFC 9110 §5.1)
_NOT_IN_VALUE = re.compile(r"[\r\n\0]")


# The target's TLS alerts that refuse the handshake (OpenSSL's reason names): sent while it
# checks the client's certificate, before any request on the connection is read.
_REFUSALS = frozenset(
    {
        "SSLV3_ALERT_HANDSHAKE_FAILURE",
        "SSLV3_ALERT_BAD_CERTIFICATE",
        "SSLV3_ALERT_UNSUPPORTED_CERTIFICATE",
        "SSLV3_ALERT_CERTIFICATE_REVOKED",
        "SSLV3_ALERT_CERTIFICATE_EXPIRED",
        "SSLV3_ALERT_CERTIFICATE_UNKNOWN",
        "TLSV1_ALERT_UNKNOWN_CA",
        "TLSV1_ALERT_ACCESS_DENIED",
        "TLSV1_ALERT_DECRYPT_ERROR",
        "TLSV13_ALERT_CERTIFICATE_REQUIRED",
    }
)


class BrokenAnswer(Exception):
    """The target's answer ended early or is not HTTP/1.1."""


class HandshakeRefused(Exception):
    """The target refused the TLS handshake of a new connection (its alert says why) before
    reading anything on it: a request written there was never read."""


class ProxyRefused(Exception):
    """The proxy did not open a tunnel to the target: nothing was sent to the target."""


@dataclass(frozen=True)
class Proxy:
    """An HTTP proxy: https targets are reached through a CONNECT tunnel, http ones by handing
    it each request in absolute form."""

    host: str
    port: int
    # the Proxy-Authorization value, when its URL names a user; never in a repr
    authorization: str = field(default="", repr=False)
    shown: str = ""  # how messages name it: its URL without credentials


@dataclass(frozen=True, eq=False)
class Route:
    """How the requests of a tool travel: `tls`, the context an https target is verified with
    (None: the system's CAs, built on first use), `server_name`, the name its certificate must
    carry (default: the URL's host), and `proxy`. Compared by identity (connections are kept
    per origin and route): its owner keeps one per distinct setting."""

    tls: ssl.SSLContext | None = None
    server_name: str = ""
    proxy: Proxy | None = None


DIRECT = Route()


@dataclass(frozen=True)
class Answer:
    status: int
    headers: CIMultiDictProxy[str]
    body: bytes  # empty when oversize
    oversize: int  # the body's size (as declared, or read so far) when over the cap; else 0


@dataclass(frozen=True)
class Target:
    scheme: str
    host: str
    port: int
    host_header: str
    path: str  # the request target: the path and query, percent-escaped

    @property
    def origin(self) -> tuple[str, str, int]:
        return self.scheme, self.host, self.port

    @property
    def authority(self) -> str:
        """host:port, as a CONNECT request names it."""
        shown = f"[{self.host}]" if ":" in self.host else self.host
        return f"{shown}:{self.port}"


@lru_cache(maxsize=4096)
def target(url: str) -> Target:
    """Where url's request goes; its percent-escapes are kept as written unless it still needs
    escaping. ValueError when it is not an absolute http(s) URL."""
    printable = url.isascii() and url.isprintable() and " " not in url
    parsed = URL(url, encoded=printable)
    host, port = parsed.raw_host, parsed.port
    if parsed.scheme not in ("http", "https") or not host or port is None:
        raise ValueError(f"{url!r} is not an absolute http(s) URL")
    shown = f"[{host}]" if ":" in host else host
    return Target(
        parsed.scheme,
        host,
        port,
        shown if parsed.is_default_port() else f"{shown}:{port}",
        parsed.raw_path_qs or "/",
    )


def request_bytes(
    method: str,
    to: Target,
    headers: Mapping[str, str],
    body: bytes | None,
    proxy: Proxy | None = None,
) -> bytes:
    """The request as sent (in absolute form when it goes to a proxy). ValueError for a
    header name or value that would break it."""
    if proxy is None:
        lines = [f"{method} {to.path} HTTP/1.1"]
    else:
        lines = [f"{method} {to.scheme}://{to.host_header}{to.path} HTTP/1.1"]
        if proxy.authorization:
            lines.append(f"Proxy-Authorization: {proxy.authorization}")
    if not any(name.lower() == "host" for name in headers):
        lines.append(f"Host: {to.host_header}")
    for name, value in headers.items():
        if not _TOKEN.fullmatch(name) or _NOT_IN_VALUE.search(value):
            raise ValueError(f"header {name!r} has a name or value that cannot be sent")
        lines.append(f"{name}: {value}")
    if body is not None:
        lines.append(f"Content-Length: {len(body)}")
    head = ("\r\n".join(lines) + "\r\n\r\n").encode()
    return head + body if body else head


def charset(content_type: str) -> str | None:
    """The charset a Content-Type names, if Python knows it."""
    for param in content_type.split(";")[1:]:
        key, _, value = param.partition("=")
        if key.strip().lower() == "charset":
            name = value.strip().strip('"')
            try:
                return codecs.lookup(name).name if name else None
            except LookupError:
                return None
    return None


class _Connection(asyncio.Protocol):
    """One connection: the answer to the request in flight, fed to httptools as it arrives."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self.idle_since = 0.0
        self.reused = False
        self._parser = httptools.HttpResponseParser(self)
        self._answer: asyncio.Future[Answer] | None = None
        self._lost: Exception | None = None  # why the connection was lost, as a request sees it
        self._cap = 0
        self._start()

    def _start(self) -> None:
        """Ready for the next message of the answer (a 1xx one comes before the final one)."""
        self._status = 0
        self._headers: list[tuple[str, str]] = []
        self._body = bytearray()
        self._size = 0
        self._informational = False
        self._keep_alive = False
        self._to_eof = False  # the body ends when the connection does
        self.received = False  # any byte of the answer

    # ------------------------------------------------------------------ the request

    def send(self, data: bytes, cap: int) -> asyncio.Future[Answer]:
        """Write the request; raises (having written nothing) when the connection is lost."""
        assert self.transport is not None
        if not self.open:
            if isinstance(self._lost, HandshakeRefused):
                raise self._lost
            raise BrokenAnswer("the connection closed before the request was sent")
        self._start()
        self._cap = cap
        self._answer = asyncio.get_running_loop().create_future()
        self.transport.write(data)
        return self._answer

    @property
    def open(self) -> bool:
        """Neither closed by callgate nor closing (the target's end seen, its loss not yet
        delivered)."""
        return not self.closed and self.transport is not None and not self.transport.is_closing()

    @property
    def reusable(self) -> bool:
        return self._keep_alive and self.open

    def _pending(self) -> asyncio.Future[Answer] | None:
        """The answer a request is waiting for, if one is."""
        answer = self._answer
        return answer if answer is not None and not answer.done() else None

    def close(self) -> None:
        """Close at once: callgate closes a connection only with no answer to wait for, and
        a TLS one does not wait for the target's close_notify (up to 30 s in asyncio)."""
        self.closed = True
        if self.transport is not None:
            self.transport.abort()

    def _finish(self, oversize: int = 0) -> None:
        answer = self._pending()
        if answer is None:
            return
        headers = CIMultiDictProxy(CIMultiDict(self._headers))
        answer.set_result(
            Answer(self._status, headers, b"" if oversize else bytes(self._body), oversize)
        )

    def _fail(self, problem: str) -> None:
        if (answer := self._pending()) is not None:
            answer.set_exception(BrokenAnswer(problem))
        self.close()

    # ------------------------------------------------------------------ asyncio.Protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        if self._pending() is None:
            self.close()  # bytes nobody asked for: the connection is not to be trusted
            return
        self.received = True
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            self._fail("the target switched protocols")
        except httptools.HttpParserError as exc:
            self._fail(f"the answer is not HTTP/1.1 ({exc})")

    def eof_received(self) -> bool:
        return False  # close the transport

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._lost = self._loss(exc)
        answer = self._pending()
        if answer is None:
            return
        if self._to_eof:
            self._finish()
        else:
            answer.set_exception(self._lost)

    def _loss(self, exc: Exception | None) -> Exception:
        """What a request on this connection is told: a refused handshake only on a new
        connection the target has sent nothing on."""
        reason = getattr(exc, "reason", None)
        if (
            isinstance(exc, ssl.SSLError)
            and reason in _REFUSALS
            and not self.reused
            and not self.received
        ):
            refused = HandshakeRefused(f"the target refused the TLS handshake ({reason})")
            refused.__cause__ = exc
            return refused
        return BrokenAnswer(
            "the connection closed before the answer ended" + (f" ({exc})" if exc else "")
        )

    # ------------------------------------------------------------------ httptools' callbacks

    def on_message_begin(self) -> None:
        if self._pending() is None:
            self.close()  # a second answer to one request: the connection is not to be trusted

    def on_header(self, name: bytes, value: bytes) -> None:
        self._headers.append((name.decode("latin-1"), value.decode("latin-1")))

    def on_headers_complete(self) -> None:
        status = self._parser.get_status_code()
        self._status = status
        if 100 <= status < 200:
            if status == 101:
                self._fail("the target switched protocols")
            self._informational = True
            return
        self._keep_alive = self._parser.should_keep_alive()
        names = {k.lower() for k, _ in self._headers}
        self._to_eof = (
            not self._keep_alive
            and "content-length" not in names
            and "transfer-encoding" not in names
            and status not in (204, 304)
        )
        declared = next((v for k, v in self._headers if k.lower() == "content-length"), "")
        if declared.isdigit() and int(declared) > self._cap:
            self._oversize(int(declared))

    def on_body(self, body: bytes) -> None:
        if self._pending() is None:
            return
        self._size += len(body)
        if self._size > self._cap:
            self._oversize(self._size)
            return
        self._body += body

    def on_message_complete(self) -> None:
        if self._informational:
            self._start()
            return
        self._finish()

    def _oversize(self, size: int) -> None:
        """More than the cap: answered without its body, and the rest is not read."""
        self._keep_alive = False
        self._finish(oversize=size)
        self.close()


class _TunnelAnswer(asyncio.Protocol):
    """The proxy's answer to CONNECT, up to the end of its head."""

    def __init__(self) -> None:
        self.head = bytearray()
        self.extra = False  # bytes came after the head, before TLS began
        self.done: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()

    def data_received(self, data: bytes) -> None:
        if self.done.done():
            self.extra = True
            return
        self.head += data
        if b"\r\n\r\n" in self.head:
            self.done.set_result(bytes(self.head))
        elif len(self.head) > MAX_TUNNEL_ANSWER:
            self.done.set_exception(ProxyRefused("the proxy's answer to CONNECT is too long"))

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.done.done():
            self.done.set_exception(
                ProxyRefused(
                    "the proxy closed the connection before answering CONNECT"
                    + (f" ({exc})" if exc else "")
                )
            )


def _tunnel_request(to: Target, proxy: Proxy) -> bytes:
    lines = [f"CONNECT {to.authority} HTTP/1.1", f"Host: {to.authority}"]
    if proxy.authorization:
        lines.append(f"Proxy-Authorization: {proxy.authorization}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def _check_tunnel(answer: _TunnelAnswer, head: bytes, to: Target, proxy: Proxy) -> None:
    """ProxyRefused unless the proxy answered 2xx, and nothing more."""
    where = f"the proxy {proxy.shown} answered CONNECT {to.authority}"
    line = head.split(b"\r\n", 1)[0].decode("latin-1")
    version, _, rest = line.partition(" ")
    status = rest[:3]
    if not version.startswith("HTTP/1.") or not status.isdigit():
        raise ProxyRefused(f"{where} with something that is not HTTP: {line[:100]!r}")
    if not 200 <= int(status) < 300:
        raise ProxyRefused(f"{where} with HTTP {rest[:100]}")
    if answer.extra or not head.endswith(b"\r\n\r\n"):
        raise ProxyRefused(f"{where} and then sent bytes before TLS began")


async def _tunnel(
    to: Target, proxy: Proxy, tls: ssl.SSLContext, server_name: str | None
) -> _Connection:
    """A TLS connection to the target through the proxy's CONNECT tunnel."""
    loop = asyncio.get_running_loop()
    transport, answer = await loop.create_connection(_TunnelAnswer, proxy.host, proxy.port)
    try:
        transport.write(_tunnel_request(to, proxy))
        _check_tunnel(answer, await answer.done, to, proxy)
        conn = _Connection()
        secured = await loop.start_tls(transport, conn, tls, server_hostname=server_name)
    except BaseException:
        transport.close()
        raise
    if secured is None:  # the transport closed as TLS began
        raise BrokenAnswer("the tunnel closed before the TLS handshake ended")
    conn.connection_made(secured)
    return conn


class _Pool:
    """The kept-alive connections of one origin and route, and its slots."""

    __slots__ = ("idle", "slots")

    def __init__(self) -> None:
        self.idle: list[_Connection] = []
        self.slots = asyncio.Semaphore(MAX_CONNECTIONS)


class Http1Client:
    """Kept-alive connections per origin and route, at most MAX_CONNECTIONS each; `aclose`
    closes the idle ones (a request in flight closes its own)."""

    def __init__(self) -> None:
        self._pools: dict[tuple[tuple[str, str, int], Route], _Pool] = {}
        self._tls: ssl.SSLContext | None = None
        self.closed = False

    async def request(
        self,
        method: str,
        url: str,
        *,
        headers: Mapping[str, str],
        body: bytes | None,
        max_body_bytes: int,
        on_sent: Callable[[], None],
        route: Route = DIRECT,
    ) -> Answer:
        """The answer (its body read up to max_body_bytes); raises OSError, ssl.SSLError,
        ProxyRefused (nothing was sent), HandshakeRefused (what was written was never read),
        BrokenAnswer or ValueError (a URL or header that cannot be sent: nothing was)."""
        to = target(url)
        data = request_bytes(
            method, to, headers, body, route.proxy if to.scheme == "http" else None
        )
        key = (to.origin, route)
        pool = self._pools.get(key)
        if pool is None:
            pool = self._pools[key] = _Pool()
        async with pool.slots:
            conn = self._reuse(pool) or await self._connect(to, route)
            try:
                return await self._exchange(conn, pool, data, max_body_bytes, on_sent)
            except (OSError, BrokenAnswer):
                if not (method == "GET" and conn.reused and not conn.received):
                    raise
            conn = await self._connect(to, route)  # a GET on a kept-alive connection that failed
            return await self._exchange(conn, pool, data, max_body_bytes, on_sent)

    async def _exchange(
        self, conn: _Connection, pool: _Pool, data: bytes, cap: int, on_sent: Callable[[], None]
    ) -> Answer:
        try:
            answer = conn.send(data, cap)
            on_sent()
            found = await answer
        except BaseException:
            conn.close()
            raise
        if conn.reusable and not self.closed:
            conn.idle_since = time.monotonic()
            conn.reused = True
            pool.idle.append(conn)
        else:
            conn.close()
        return found

    def _reuse(self, pool: _Pool) -> _Connection | None:
        idle = pool.idle
        now = time.monotonic()
        while idle:
            conn = idle.pop()
            if conn.open and now - conn.idle_since < IDLE_S:
                return conn
            conn.close()
        return None

    def _context(self, to: Target, route: Route) -> ssl.SSLContext | None:
        if to.scheme != "https":
            return None
        if route.tls is not None:
            return route.tls
        if self._tls is None:
            self._tls = ssl.create_default_context()
        return self._tls

    async def _connect(self, to: Target, route: Route) -> _Connection:
        loop = asyncio.get_running_loop()
        tls = self._context(to, route)
        name = (route.server_name or to.host) if tls else None
        proxy = route.proxy
        if proxy is None:
            _, conn = await loop.create_connection(
                _Connection, to.host, to.port, ssl=tls, server_hostname=name
            )
            return conn
        if tls is None:  # http: requests in absolute form, on a connection to the proxy
            _, conn = await loop.create_connection(_Connection, proxy.host, proxy.port)
            return conn
        return await _tunnel(to, proxy, tls, name)

    async def aclose(self) -> None:
        self.closed = True
        pools, self._pools = self._pools, {}
        for pool in pools.values():
            for conn in pool.idle:
                conn.close()
