"""The http executors' HTTP/1.1 client against a loopback server that answers each request
with scripted bytes: how answers are framed (length, chunks, the connection's end, 1xx first),
the body cap, answers that are cut short or are not HTTP, what is never sent, when a
connection is kept and reused, TLS, and proxies (a real one on loopback)."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from gateway.executors.http1 import (
    Answer,
    BrokenAnswer,
    Http1Client,
    Proxy,
    ProxyRefused,
    Route,
    charset,
    request_bytes,
    target,
)
from tests.support.pki import CertificateAuthority
from tests.support.proxy import running_proxy

CLOSE = b""  # in a script: close the connection instead of answering


@dataclass(frozen=True)
class Hangup:
    """In a script: send these bytes, then close the connection."""

    data: bytes


def ok(body: bytes = b'{"ok": 1}', *extra: bytes) -> bytes:
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n" + b"".join(
        h + b"\r\n" for h in extra
    )
    return head + b"Content-Length: %d\r\n\r\n" % len(body) + body


@dataclass
class Server:
    """Answers the n-th request it reads with script[n] (CLOSE: closes the connection without
    answering); closes the connection after a `Hangup` or an answer saying `Connection:
    close`."""

    script: list[bytes | Hangup]
    requests: list[bytes] = field(default_factory=list)
    connections: int = 0
    url: str = ""

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next(
                    (
                        int(line.split(b":")[1])
                        for line in head.split(b"\r\n")
                        if line.lower().startswith(b"content-length:")
                    ),
                    0,
                )
                self.requests.append(head + await reader.readexactly(length))
                answer = self.script[min(len(self.requests), len(self.script)) - 1]
                if answer == CLOSE:
                    break
                data = answer.data if isinstance(answer, Hangup) else answer
                writer.write(data)
                await writer.drain()
                if isinstance(answer, Hangup) or b"\r\nConnection: close\r\n" in data:
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


@pytest.fixture
async def serve() -> AsyncIterator[Callable[..., Server]]:
    """serve(*script, tls=None) → a Server on loopback (its url is set once it listens)."""
    started: list[asyncio.Server] = []

    async def listen(found: Server, tls: ssl.SSLContext | None) -> None:
        server = await asyncio.start_server(
            lambda r, w: found.handle(r, w), "127.0.0.1", 0, ssl=tls
        )
        started.append(server)
        port = server.sockets[0].getsockname()[1]
        found.url = f"{'https' if tls else 'http'}://127.0.0.1:{port}/tool?x=1"

    listening: list[asyncio.Task[None]] = []

    def begin(*script: bytes | Hangup, tls: ssl.SSLContext | None = None) -> Server:
        found = Server(list(script))
        listening.append(asyncio.ensure_future(listen(found, tls)))
        return found

    yield begin
    await asyncio.gather(*listening)
    for server in started:
        server.close()
        await server.wait_closed()


async def ready(server: Server) -> Server:
    while not server.url:
        await asyncio.sleep(0)
    return server


async def ask(
    client: Http1Client,
    server: Server,
    *,
    method: str = "POST",
    body: bytes | None = b'{"a": 1}',
    cap: int = 1000,
    headers: dict[str, str] | None = None,
) -> tuple[Answer, bool]:
    sent: list[bool] = []
    answer = await client.request(
        method,
        (await ready(server)).url,
        headers=headers or {"Accept": "application/json"},
        body=body,
        max_body_bytes=cap,
        on_sent=lambda: sent.append(True),
    )
    return answer, bool(sent)


@pytest.fixture
async def client() -> AsyncIterator[Http1Client]:
    c = Http1Client()
    yield c
    await c.aclose()


# ------------------------------------------------------------------------------ framing


async def test_an_answer_with_a_length_and_the_request_as_sent(
    serve: Callable[..., Server], client: Http1Client
) -> None:
    server = serve(ok(b'{"v": 1}', b"X-Extra: yes"))
    answer, sent = await ask(
        client, server, headers={"Accept": "application/json", "X-Callgate-Subject": "j\u00fcrgen"}
    )
    assert sent and (answer.status, answer.body, answer.oversize) == (200, b'{"v": 1}', 0)
    assert answer.headers["x-extra"] == "yes"
    port = server.url.split(":")[2].split("/")[0]
    assert server.requests == [
        f"POST /tool?x=1 HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAccept: application/json\r\n"
        f"X-Callgate-Subject: j\u00fcrgen\r\nContent-Length: 8\r\n\r\n".encode()
        + b'{"a": 1}'
    ]


async def test_a_chunked_answer_is_read_whole(
    serve: Callable[..., Server], client: Http1Client
) -> None:
    chunked = (
        b'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\n{"a"\r\n5\r\n: 12}\r\n0\r\n\r\n'
    )
    server = serve(chunked, chunked)
    for _ in range(2):
        answer, _ = await ask(client, server)
        assert answer.body == b'{"a": 12}'
    assert server.connections == 1  # kept alive after a chunked answer


async def test_an_answer_that_ends_with_its_connection(
    serve: Callable[..., Server], client: Http1Client
) -> None:
    server = serve(b'HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n{"to": "eof"}')
    answer, _ = await ask(client, server)
    assert answer.body == b'{"to": "eof"}'


async def test_an_informational_answer_comes_before_the_final_one(
    serve: Callable[..., Server], client: Http1Client
) -> None:
    server = serve(b"HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n" + ok(b"[]"))
    answer, _ = await ask(client, server)
    assert (answer.status, answer.body) == (200, b"[]") and "link" not in answer.headers


async def test_no_content_has_no_body(serve: Callable[..., Server], client: Http1Client) -> None:
    server = serve(b"HTTP/1.1 204 No Content\r\n\r\n", ok())
    answer, _ = await ask(client, server)
    assert (answer.status, answer.body) == (204, b"")
    assert (await ask(client, server))[0].status == 200 and server.connections == 1


# ------------------------------------------------------------------------------ the cap


async def test_a_body_over_the_cap_is_not_read_and_its_connection_not_kept(
    serve: Callable[..., Server], client: Http1Client
) -> None:
    server = serve(ok(b"x" * 5000), ok())
    answer, _ = await ask(client, server, cap=100)
    assert (answer.status, answer.body, answer.oversize) == (200, b"", 5000)
    await ask(client, server)
    assert server.connections == 2


async def test_a_chunked_body_over_the_cap_reports_what_was_read(
    serve: Callable[..., Server], client: Http1Client
) -> None:
    chunk = b"%x\r\n%s\r\n" % (60, b"y" * 60)
    server = serve(
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + chunk * 3 + b"0\r\n\r\n"
    )
    answer, _ = await ask(client, server, cap=100)
    assert answer.body == b"" and 100 < answer.oversize <= 180


# ------------------------------------------------------------------------------ broken answers


@pytest.mark.parametrize(
    "answer",
    [
        b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n12345",  # cut short
        b"HTTP/1.1 200 OK\r\nContent-Le",  # cut inside the headers
    ],
)
async def test_an_answer_cut_short_is_broken_after_sending(
    serve: Callable[..., Server], client: Http1Client, answer: bytes
) -> None:
    server = serve(Hangup(answer))
    sent: list[bool] = []
    with pytest.raises(BrokenAnswer, match="closed before the answer ended"):
        await client.request(
            "POST",
            (await ready(server)).url,
            headers={},
            body=b"{}",
            max_body_bytes=100,
            on_sent=lambda: sent.append(True),
        )
    assert sent == [True]


@pytest.mark.parametrize(
    "answer",
    [
        b"SMTP ready\r\n\r\n",
        b"HTTP/1.1 99999 Huh\r\n\r\n",
        b"HTTP/1.1 101 Switching Protocols\r\n\r\n",
    ],
)
async def test_an_answer_that_is_not_http_is_broken(
    serve: Callable[..., Server], client: Http1Client, answer: bytes
) -> None:
    server = serve(Hangup(answer))
    with pytest.raises(BrokenAnswer):
        await ask(client, server)


async def test_a_header_that_would_break_the_request_sends_nothing(
    serve: Callable[..., Server], client: Http1Client
) -> None:
    server = serve(ok())
    for name, value in [
        ("X-Subject", "a\r\nX-Admin: 1"),
        ("X-Bad Name", "v"),
        ("X:", "v"),
        ("X-Nul", "a\0b"),
    ]:
        with pytest.raises(ValueError, match="cannot be sent"):
            await ask(client, server, headers={name: value})
    assert server.connections == 0 and server.requests == []


def test_where_a_url_goes() -> None:
    t = target("http://[::1]:8080/a%2Fb?q=1")
    assert (t.host, t.port, t.host_header, t.path) == ("::1", 8080, "[::1]:8080", "/a%2Fb?q=1")
    t = target("https://tools.example/run")
    assert (t.port, t.host_header, t.path) == (443, "tools.example", "/run")
    assert target("http://h/p q").path == "/p%20q" and target("http://h").path == "/"
    with pytest.raises(ValueError):
        target("ftp://h/x")
    head = request_bytes("GET", t, {"Host": "virtual.example"}, None)
    assert head == b"GET /run HTTP/1.1\r\nHost: virtual.example\r\n\r\n"


def test_the_charset_of_a_content_type() -> None:
    assert charset("application/json; charset=UTF-8") == "utf-8"
    assert charset('text/plain; format=x; charset="latin-1"') == "iso8859-1"
    assert charset("text/plain; charset=no-such-codec") is None
    assert charset("application/json") is None


# ------------------------------------------------------------------------------ connections


async def test_a_connection_is_reused_until_the_target_says_close(
    serve: Callable[..., Server], client: Http1Client
) -> None:
    server = serve(ok(), ok(b"{}", b"Connection: close"), ok())
    for _ in range(3):
        await ask(client, server)
    assert server.connections == 2


async def test_a_connection_that_answered_twice_is_not_reused(
    serve: Callable[..., Server], client: Http1Client
) -> None:
    """An answer followed by bytes of another nobody asked for (in the same packet): the
    next request goes on a new connection and gets its own answer."""
    server = serve(ok(b'{"n": 1}') + ok(b'{"unasked": 1}'), ok(b'{"n": 2}'))
    assert (await ask(client, server))[0].body == b'{"n": 1}'
    assert (await ask(client, server))[0].body == b'{"n": 2}'
    assert server.connections == 2


async def test_a_get_on_a_kept_connection_the_target_dropped_is_sent_again(
    serve: Callable[..., Server], client: Http1Client
) -> None:
    """The second request finds the kept connection closed by the target without an answer:
    a GET goes again on a new connection, a POST (perhaps applied) does not."""
    server = serve(ok(), CLOSE, ok(b'{"again": 1}'))
    await ask(client, server, method="GET", body=None)
    answer, _ = await ask(client, server, method="GET", body=None)
    assert answer.body == b'{"again": 1}' and server.connections == 2

    server = serve(ok(), CLOSE, ok())
    await ask(client, server)
    with pytest.raises(BrokenAnswer):
        await ask(client, server)
    assert len(server.requests) == 2


async def test_a_request_cut_off_by_its_timeout_does_not_leave_its_connection(
    serve: Callable[..., Server], client: Http1Client
) -> None:
    hold = asyncio.Event()
    server = serve(ok())

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        server.connections += 1
        await reader.readuntil(b"\r\n\r\n")
        if server.connections == 1:
            await hold.wait()  # never answers the first connection
        else:
            writer.write(ok(b'{"second": 1}'))
            await writer.drain()
        writer.close()

    server.handle = handle  # type: ignore[method-assign]
    await ready(server)
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.2):
            await ask(client, server, body=None, method="GET")
    answer, _ = await ask(client, server, body=None, method="GET")
    assert answer.body == b'{"second": 1}' and server.connections == 2
    hold.set()


# ------------------------------------------------------------------------------ TLS


async def test_https_verifies_the_target(
    serve: Callable[..., Server],
    client: Http1Client,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ca = CertificateAuthority("tools CA")
    cert, key = ca.issue("tool", ips=["127.0.0.1"]).write(tmp_path, "tool")
    tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    tls.load_cert_chain(cert, key)
    server = serve(ok(b'{"tls": 1}'), tls=tls)
    sent: list[bool] = []
    with pytest.raises(ssl.SSLCertVerificationError):
        await client.request(
            "POST",
            (await ready(server)).url,
            headers={},
            body=b"{}",
            max_body_bytes=100,
            on_sent=lambda: sent.append(True),
        )
    assert sent == [] and server.requests == []

    trusted = tmp_path / "ca.pem"
    trusted.write_bytes(ca.pem)
    monkeypatch.setenv("SSL_CERT_FILE", str(trusted))
    fresh = Http1Client()
    try:
        answer, sent_now = await ask(fresh, server)
    finally:
        await fresh.aclose()
    assert sent_now and answer.body == b'{"tls": 1}'


async def test_a_route_brings_its_own_context_and_its_own_connections(
    serve: Callable[..., Server], client: Http1Client, tmp_path: Path
) -> None:
    ca = CertificateAuthority("tools CA")
    tls = ca.issue("tool", dns=["tool.test"]).server_context(tmp_path, "tool")
    server = serve(ok(), ok(), ok(), tls=tls)
    trusting = Route(
        tls=ssl.create_default_context(cadata=ca.pem.decode()), server_name="tool.test"
    )
    url = (await ready(server)).url
    sent: list[bool] = []
    for _ in range(2):
        answer = await client.request(
            "POST",
            url,
            headers={},
            body=b"{}",
            max_body_bytes=100,
            on_sent=lambda: sent.append(True),
            route=trusting,
        )
        assert answer.status == 200
    with pytest.raises(ssl.SSLCertVerificationError):  # the default route: the system's CAs
        await client.request(
            "POST",
            url,
            headers={},
            body=b"{}",
            max_body_bytes=100,
            on_sent=lambda: sent.append(True),
        )
    assert sent == [True, True] and server.connections == 1  # the other never passed TLS


# ------------------------------------------------------------------------------ proxies


def test_a_request_to_a_proxy_is_in_absolute_form() -> None:
    proxy = Proxy("127.0.0.1", 3128, authorization="Basic dTpw", shown="http://127.0.0.1:3128")
    head = request_bytes("GET", target("http://tool.test:8080/run?x=1"), {}, None, proxy)
    assert head == (
        b"GET http://tool.test:8080/run?x=1 HTTP/1.1\r\n"
        b"Proxy-Authorization: Basic dTpw\r\nHost: tool.test:8080\r\n\r\n"
    )


async def test_https_goes_through_a_connect_tunnel(
    serve: Callable[..., Server], client: Http1Client, tmp_path: Path
) -> None:
    ca = CertificateAuthority("tools CA")
    server = serve(
        ok(b'{"n": 1}'),
        ok(b'{"n": 2}'),
        tls=ca.issue("tool", dns=["tool.test"]).server_context(tmp_path, "tool"),
    )
    port = (await ready(server)).url.split(":")[2].split("/")[0]
    with running_proxy({"tool.test": "127.0.0.1"}) as proxy:
        route = Route(
            tls=ssl.create_default_context(cadata=ca.pem.decode()),
            proxy=Proxy("127.0.0.1", proxy.port, shown=proxy.url),
        )
        bodies = [
            (
                await client.request(
                    "POST",
                    f"https://tool.test:{port}/tool",
                    headers={},
                    body=b"{}",
                    max_body_bytes=100,
                    on_sent=lambda: None,
                    route=route,
                )
            ).body
            for _ in range(2)
        ]
        await client.aclose()
        seen = proxy.seen
    assert bodies == [b'{"n": 1}', b'{"n": 2}']
    assert [(s.method, s.target) for s in seen] == [("CONNECT", f"tool.test:{port}")]
    assert seen[0].headers["Host"] == f"tool.test:{port}"
    assert all(r.startswith(b"POST /tool HTTP/1.1\r\nHost: tool.test:") for r in server.requests)


async def test_http_goes_to_the_proxy_in_absolute_form(
    serve: Callable[..., Server], client: Http1Client
) -> None:
    server = serve(ok(b'{"n": 1}'), ok(b'{"n": 2}'))
    port = (await ready(server)).url.split(":")[2].split("/")[0]
    with running_proxy({"tool.test": "127.0.0.1"}) as proxy:
        route = Route(proxy=Proxy("127.0.0.1", proxy.port, shown=proxy.url))
        for _ in range(2):
            await client.request(
                "POST",
                f"http://tool.test:{port}/tool?x=1",
                headers={},
                body=b"{}",
                max_body_bytes=100,
                on_sent=lambda: None,
                route=route,
            )
        await client.aclose()
        seen = proxy.seen
    assert [(s.method, s.target) for s in seen] == [
        ("POST", f"http://tool.test:{port}/tool?x=1")
    ] * 2
    assert server.connections == 1  # the proxy's one connection, kept alive like callgate's
    assert [r.split(b"\r\n")[0] for r in server.requests] == [b"POST /tool?x=1 HTTP/1.1"] * 2


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (403, "answered CONNECT tool.test:1 with HTTP 403 Forbidden"),
        (407, "answered CONNECT tool.test:1 with HTTP 407 Proxy Authentication Required"),
    ],
)
async def test_a_tunnel_the_proxy_will_not_open_sends_nothing(
    client: Http1Client, status: int, expected: str
) -> None:
    with running_proxy(
        {"tool.test": "127.0.0.1"},
        connect_status=status,
        credentials="Basic x" if status == 407 else "",
    ) as proxy:
        route = Route(proxy=Proxy("127.0.0.1", proxy.port, shown=proxy.url))
        sent: list[bool] = []
        with pytest.raises(ProxyRefused, match=expected):
            await client.request(
                "POST",
                "https://tool.test:1/t",
                headers={},
                body=b"{}",
                max_body_bytes=100,
                on_sent=lambda: sent.append(True),
                route=route,
            )
    assert sent == []
