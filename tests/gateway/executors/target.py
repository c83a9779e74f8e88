"""A scriptable HTTP target on loopback for executor tests: it answers each path from a queue
of scripted replies and records every request it receives (method, path, headers, body, peer,
the common name of the client's certificate). With `tls` it serves https and records each
handshake it refuses, and why.
"""

from __future__ import annotations

import json
import socket
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from examples.loopback import JsonHandler, LoopbackServer


@dataclass(frozen=True)
class Reply:
    status: int = 200
    body: Any = None  # dict/list → JSON; str/bytes → sent as is; None → empty body
    hold: bool = False  # wait (until the target closes) without answering
    drop: bool = False  # close the connection without answering


@dataclass(frozen=True)
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: Any
    peer: tuple[str, int]
    client_cert: str = ""  # the common name of the certificate the client showed, if any


@dataclass
class _Script:
    lock: threading.Lock = field(default_factory=threading.Lock)
    replies: dict[str, list[Reply]] = field(default_factory=dict)
    seen: list[Seen] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)  # handshakes refused: why
    refusals: threading.Condition = field(default_factory=threading.Condition)

    def next_reply(self, path: str) -> Reply:
        with self.lock:
            queue = self.replies.get(path) or [Reply(404, {"error": "no reply scripted"})]
            return queue.pop(0) if len(queue) > 1 else queue[0]


class _Handler(JsonHandler):
    server: _Server

    def do_GET(self) -> None:
        self._serve()

    def do_POST(self) -> None:
        self._serve()

    def _serve(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        script = self.server.script
        with script.lock:
            script.seen.append(
                Seen(
                    self.command,
                    self.path,
                    dict(self.headers.items()),
                    json.loads(raw) if raw else None,
                    self.client_address[:2],
                    _common_name(self.connection),
                )
            )
        reply = script.next_reply(self.path)
        if reply.hold:
            self.server.stopping.wait()
        if reply.drop or reply.hold:
            self.hang_up()
            return
        body = reply.body
        if isinstance(body, dict | list):
            data = json.dumps(body).encode()
        elif isinstance(body, str):
            data = body.encode()
        else:
            data = body or b""
        self.send(reply.status, data, "application/json")


def _common_name(sock: socket.socket) -> str:
    cert = sock.getpeercert() if isinstance(sock, ssl.SSLSocket) else None
    names = [
        value
        for rdn in (cert or {}).get("subject", ())
        for key, value in rdn
        if key == "commonName"
    ]
    return names[0] if names else ""


class _Server(LoopbackServer):
    def __init__(self, script: _Script, tls: ssl.SSLContext | None) -> None:
        self.script = script
        self.tls = tls
        super().__init__(("127.0.0.1", 0), _Handler, quiet=True)

    def finish_request(self, request: Any, client_address: Any) -> None:
        if self.tls is None:
            super().finish_request(request, client_address)
            return
        secured = self.tls.wrap_socket(request, server_side=True, do_handshake_on_connect=False)
        self.serving(secured)
        secured.settimeout(10)  # a client that stalls mid-handshake
        try:
            secured.do_handshake()
        except (ssl.SSLError, OSError) as exc:
            self._drain(secured)
            with self.script.refusals:
                self.script.refused.append(str(getattr(exc, "reason", None) or exc))
                self.script.refusals.notify_all()
            return
        secured.settimeout(None)
        try:
            super().finish_request(secured, client_address)
        finally:
            self.shutdown_request(secured)  # the server closes the socket it accepted

    def _drain(self, secured: ssl.SSLSocket) -> None:
        """After a refused handshake (its alert written): read what the client sent until it
        closes, so that closing does not reset the connection and lose the alert."""
        raw = socket.socket(fileno=secured.detach())
        self.serving(raw)
        try:
            raw.shutdown(socket.SHUT_WR)
            while raw.recv(65536):
                pass
        except OSError:
            pass
        finally:
            raw.close()


class Target:
    def __init__(self, tls: ssl.SSLContext | None = None) -> None:
        self._script = _Script()
        self._server = _Server(self._script, tls)
        self._server.start("scripted-target")
        self.url = self._server.url.replace("http://", "https://" if tls else "http://", 1)

    def script(self, path: str, *replies: Reply) -> None:
        """Answer path with replies in order; the last one repeats."""
        with self._script.lock:
            self._script.replies[path] = list(replies)

    @property
    def seen(self) -> list[Seen]:
        with self._script.lock:
            return list(self._script.seen)

    def refused(self, count: int, timeout_s: float = 10.0) -> list[str]:
        """Why each handshake it refused was refused (OpenSSL's reason), once there are at
        least count of them (the client may learn of a refusal before it is recorded)."""
        with self._script.refusals:
            self._script.refusals.wait_for(lambda: len(self._script.refused) >= count, timeout_s)
            return list(self._script.refused)

    def close(self) -> None:
        self._server.stop()


@contextmanager
def running_target(tls: ssl.SSLContext | None = None) -> Iterator[Target]:
    target = Target(tls)
    try:
        yield target
    finally:
        target.close()


@contextmanager
def refused_url() -> Iterator[str]:
    """A loopback URL whose port is bound but not listening: connecting is refused."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        sock.close()
