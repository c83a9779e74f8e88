"""A real HTTP proxy on loopback: CONNECT tunnels (for https targets) and requests in absolute
form (for http ones), forwarded on kept-alive connections. It records every request it gets
and can ask for credentials or refuse tunnels.

Names are resolved from its own `hosts` map only (an address is used as it is), so a target
named `tool.test` is reachable through the proxy and nowhere else.

    with running_proxy(hosts={"tool.test": "127.0.0.1"}) as proxy:
        env = {"HTTPS_PROXY": proxy.url}
        ...
        assert [s.target for s in proxy.seen] == ["tool.test:8443"]
"""

from __future__ import annotations

import http.client
import ipaddress
import select
import socket
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from examples.loopback import JsonHandler, LoopbackServer

_HOP_BY_HOP = ("proxy-authorization", "proxy-connection", "connection", "keep-alive")


@dataclass(frozen=True)
class ProxySeen:
    method: str
    target: str  # host:port of a CONNECT, or the absolute URL of a forwarded request
    headers: dict[str, str]


@dataclass
class _Settings:
    hosts: dict[str, str]
    credentials: str = ""  # the Proxy-Authorization value it asks for ("": none)
    connect_status: int = 200  # the answer to an admitted CONNECT
    lock: threading.Lock = field(default_factory=threading.Lock)
    seen: list[ProxySeen] = field(default_factory=list)


class _Handler(JsonHandler):
    server: _Server

    def setup(self) -> None:
        super().setup()
        self._upstreams: dict[tuple[str, int], http.client.HTTPConnection] = {}

    def do_CONNECT(self) -> None:
        status = self.server.settings.connect_status
        if not self._admitted():
            return
        if status != 200:
            self._empty(status)
            return
        host, _, port = self.path.rpartition(":")
        upstream = self._open(host.strip("[]"), int(port) if port.isdigit() else 0)
        if upstream is None:
            return
        self.send_response(200, "Connection established")
        self.end_headers()
        self.wfile.flush()
        self._splice(upstream)
        upstream.close()
        self.close_connection = True

    def _empty(self, status: int, *headers: tuple[str, str]) -> None:
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self) -> None:
        self._forward()

    def do_POST(self) -> None:
        self._forward()

    def _admitted(self) -> bool:
        settings = self.server.settings
        with settings.lock:
            settings.seen.append(ProxySeen(self.command, self.path, dict(self.headers.items())))
        if settings.credentials and self.headers.get("Proxy-Authorization") != settings.credentials:
            self._empty(407, ("Proxy-Authenticate", 'Basic realm="tests"'))
            return False
        return True

    def _address(self, host: str) -> str | None:
        try:
            return str(ipaddress.ip_address(host))
        except ValueError:
            return self.server.settings.hosts.get(host.lower())

    def _open(self, host: str, port: int) -> socket.socket | None:
        address = self._address(host)
        try:
            if address is None or not port:
                raise OSError(f"cannot resolve {host!r}")
            return socket.create_connection((address, port), timeout=10)
        except OSError as exc:
            self.answer(502, {"error": str(exc)})
            return None

    def _splice(self, upstream: socket.socket) -> None:
        """Copy bytes both ways until either side closes."""
        client = self.connection
        upstream.settimeout(None)
        try:
            while True:
                readable, _, _ = select.select([client, upstream], [], [], 30)
                if not readable:
                    return
                for sock in readable:
                    data = sock.recv(65536)
                    if not data:
                        return
                    (upstream if sock is client else client).sendall(data)
        except OSError:
            return

    def _forward(self) -> None:
        if not self._admitted():
            return
        parts = urlsplit(self.path)
        address = self._address(parts.hostname or "")
        if parts.scheme != "http" or address is None:
            self.answer(502, {"error": f"cannot forward {self.path!r}"})
            return
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP_BY_HOP}
        upstream = self._upstream(address, parts.port or 80)
        upstream.request(
            self.command,
            parts.path + (f"?{parts.query}" if parts.query else ""),
            body=body,
            headers=headers,
        )
        answer = upstream.getresponse()
        self.send(answer.status, answer.read(), answer.getheader("Content-Type") or "")

    def _upstream(self, address: str, port: int) -> http.client.HTTPConnection:
        key = (address, port)
        if key not in self._upstreams:
            self._upstreams[key] = http.client.HTTPConnection(address, port, timeout=10)
        return self._upstreams[key]

    def finish(self) -> None:
        for upstream in self._upstreams.values():
            upstream.close()
        super().finish()


class _Server(LoopbackServer):
    def __init__(self, settings: _Settings) -> None:
        self.settings = settings
        super().__init__(("127.0.0.1", 0), _Handler, quiet=True)


class Proxy:
    def __init__(self, settings: _Settings) -> None:
        self._settings = settings
        self._server = _Server(settings)
        self._server.start("test-proxy")
        self.url = self._server.url
        self.port = self._server.server_address[1]

    @property
    def seen(self) -> list[ProxySeen]:
        with self._settings.lock:
            return list(self._settings.seen)

    def close(self) -> None:
        self._server.stop()


@contextmanager
def running_proxy(
    hosts: Mapping[str, str] | None = None, *, credentials: str = "", connect_status: int = 200
) -> Iterator[Proxy]:
    """A proxy on loopback; `credentials`: the Proxy-Authorization it asks for (407 without
    it); `connect_status`: how it answers a CONNECT it admits (200 opens the tunnel)."""
    proxy = Proxy(_Settings(dict(hosts or {}), credentials, connect_status))
    try:
        yield proxy
    finally:
        proxy.close()
