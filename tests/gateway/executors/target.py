"""A scriptable HTTP target on loopback for executor tests: it answers each path from a queue
of scripted replies and records every request it receives (method, path, headers, body, peer).
"""

from __future__ import annotations

import json
import socket
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


@dataclass
class _Script:
    lock: threading.Lock = field(default_factory=threading.Lock)
    replies: dict[str, list[Reply]] = field(default_factory=dict)
    seen: list[Seen] = field(default_factory=list)

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
            script.seen.append(Seen(self.command, self.path, dict(self.headers.items()),
                                    json.loads(raw) if raw else None,
                                    self.client_address[:2]))
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


class _Server(LoopbackServer):
    def __init__(self, script: _Script) -> None:
        self.script = script
        super().__init__(("127.0.0.1", 0), _Handler, quiet=True)


class Target:
    def __init__(self) -> None:
        self._script = _Script()
        self._server = _Server(self._script)
        self._server.start("scripted-target")
        self.url = self._server.url

    def script(self, path: str, *replies: Reply) -> None:
        """Answer path with replies in order; the last one repeats."""
        with self._script.lock:
            self._script.replies[path] = list(replies)

    @property
    def seen(self) -> list[Seen]:
        with self._script.lock:
            return list(self._script.seen)

    def close(self) -> None:
        self._server.stop()


@contextmanager
def running_target() -> Iterator[Target]:
    target = Target()
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
