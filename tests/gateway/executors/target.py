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
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


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
    stopping: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)
    replies: dict[str, list[Reply]] = field(default_factory=dict)
    seen: list[Seen] = field(default_factory=list)

    def next_reply(self, path: str) -> Reply:
        with self.lock:
            queue = self.replies.get(path) or [Reply(404, {"error": "no reply scripted"})]
            return queue.pop(0) if len(queue) > 1 else queue[0]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def setup(self) -> None:
        super().setup()
        # headers and body go out in separate writes: do not let Nagle hold the body back
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:
        return None

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
            script.stopping.wait()
        if reply.drop or reply.hold:
            self.close_connection = True
            return
        self._send(reply)

    def _send(self, reply: Reply) -> None:
        body = reply.body
        if isinstance(body, dict | list):
            data = json.dumps(body).encode()
        elif isinstance(body, str):
            data = body.encode()
        else:
            data = body or b""
        self.send_response(reply.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def __init__(self, script: _Script) -> None:
        self.script = script
        self.live: dict[threading.Thread, socket.socket] = {}
        self.live_lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), _Handler)

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        with self.live_lock:
            self.live[threading.current_thread()] = request
        try:
            super().process_request_thread(request, client_address)
        finally:
            with self.live_lock:
                self.live.pop(threading.current_thread(), None)

    def handle_error(self, request: Any, client_address: Any) -> None:
        return None


class Target:
    def __init__(self) -> None:
        self._script = _Script()
        self._server = _Server(self._script)
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def script(self, path: str, *replies: Reply) -> None:
        """Answer path with replies in order; the last one repeats."""
        with self._script.lock:
            self._script.replies[path] = list(replies)

    @property
    def seen(self) -> list[Seen]:
        with self._script.lock:
            return list(self._script.seen)

    def close(self) -> None:
        self._script.stopping.set()
        self._server.shutdown()
        with self._server.live_lock:
            live = list(self._server.live.items())
        for _, sock in live:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        for thread, _ in live:
            thread.join(5)
        self._server.server_close()
        self._thread.join()


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
