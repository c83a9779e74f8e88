"""What the example tool services share: a JSON HTTP server on loopback that shuts down without
hanging, per-endpoint injected behaviours (`/_control`), and request statistics one can wait on.
Standard library only.
"""

from __future__ import annotations

import json
import signal
import socket
import threading
from collections.abc import Callable, Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import FrameType, TracebackType
from typing import Any, Generic, Protocol, Self, TypeVar


class BadRequest(ValueError):
    pass


class NotFound(LookupError):
    pass


class Countdown(Protocol):
    times: int | None  # how many upcoming requests it applies to; None: until reset


B = TypeVar("B", bound=Countdown)


class Behaviours(Generic[B]):
    """Injected behaviour per endpoint, each used up after `times` requests."""

    def __init__(self, endpoints: Sequence[str], parse: Callable[[str, Any], B]) -> None:
        self.endpoints = tuple(endpoints)
        self._parse = parse
        self._lock = threading.Lock()
        self._active: dict[str, B] = {}

    def control(self, spec: Mapping[str, Any]) -> None:
        parsed = {}
        for endpoint, behaviour in spec.items():
            if endpoint not in self.endpoints:
                raise BadRequest(f"unknown endpoint {endpoint!r} (known: {list(self.endpoints)})")
            parsed[endpoint] = self._parse(endpoint, behaviour)
        with self._lock:
            self._active.update(parsed)

    def take(self, endpoint: str) -> B | None:
        """The behaviour for one request to endpoint (counting it down), if any."""
        with self._lock:
            behaviour = self._active.get(endpoint)
            if behaviour is not None and behaviour.times is not None:
                behaviour.times -= 1
                if behaviour.times <= 0:
                    del self._active[endpoint]
            return behaviour

    def reset(self) -> None:
        with self._lock:
            self._active.clear()


def fields_of(spec: Any, known: set[str]) -> Mapping[str, Any]:
    """A behaviour spec as a mapping of known fields, or BadRequest."""
    if not isinstance(spec, Mapping):
        raise BadRequest("a behaviour must be an object")
    unknown = set(spec) - known
    if unknown:
        raise BadRequest(f"unknown behaviour fields: {sorted(unknown)}")
    return spec


class Requests:
    """How many requests each endpoint received, and who sent them; waitable."""

    def __init__(self, endpoints: Sequence[str]) -> None:
        self.endpoints = tuple(endpoints)
        self._arrivals = threading.Condition()
        self._counts = dict.fromkeys(self.endpoints, 0)
        self._log: list[dict[str, str]] = []

    def arrived(self, endpoint: str, headers: Mapping[str, str]) -> None:
        """Count one request; headers: lower-cased names."""
        with self._arrivals:
            self._counts[endpoint] += 1
            self._log.append(
                {
                    "path": f"/{endpoint}",
                    "idempotency_key": headers.get("idempotency-key", ""),
                    "call_id": headers.get("x-callgate-call-id", ""),
                    "run_id": headers.get("x-callgate-run-id", ""),
                    "subject": headers.get("x-callgate-subject", ""),
                    "traceparent": headers.get("traceparent", ""),  # the caller's, if traced
                    "baggage": headers.get("baggage", ""),  # (W3C baggage, the same)
                }
            )
            self._arrivals.notify_all()

    def stats(self) -> dict[str, Any]:
        with self._arrivals:
            return {**self._counts, "requests": [dict(r) for r in self._log]}

    def reset(self) -> None:
        with self._arrivals:
            self._counts = dict.fromkeys(self.endpoints, 0)
            self._log.clear()

    def wait_for(self, endpoint: str, count: int, timeout_s: float) -> bool:
        with self._arrivals:
            return self._arrivals.wait_for(lambda: self._counts[endpoint] >= count, timeout_s)


class JsonHandler(BaseHTTPRequestHandler):
    """A request handler that reads and answers JSON."""

    protocol_version = "HTTP/1.1"
    server: LoopbackServer

    def setup(self) -> None:
        super().setup()
        # headers and body go out in separate writes: do not let Nagle hold the body back
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:
        if not self.server.quiet:
            super().log_message(format, *args)

    def lower_headers(self) -> dict[str, str]:
        return {name.lower(): value for name, value in self.headers.items()}

    def json_body(self) -> dict[str, Any]:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
        except ValueError as exc:
            raise BadRequest(f"body is not JSON: {exc}") from exc
        if not isinstance(body, dict):
            raise BadRequest("body must be a JSON object")
        return body

    def answer(self, status: int, payload: Any) -> None:
        self.send(status, json.dumps(payload).encode(), "application/json")

    def send(self, status: int, data: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def hang_up(self) -> None:
        """Close the connection without answering."""
        self.close_connection = True


class ServiceHandler(JsonHandler):
    """Serves what every example service has (`GET /_stats`, `POST /_control`,
    `POST /_reset`) and passes other requests to `get` / `post`; BadRequest answers 400."""

    server: ServiceServer

    def do_GET(self) -> None:
        if self.path == "/_stats":
            self.answer(200, self.server.state.requests.stats())
        else:
            self.get()

    def do_POST(self) -> None:
        try:
            body = self.json_body()
            if self.path == "/_control":
                self.server.state.behaviours.control(body)
                self.answer(200, {"ok": True})
            elif self.path == "/_reset":
                self.server.state.reset()
                self.answer(200, {"ok": True})
            else:
                self.post(body)
        except BadRequest as exc:
            self.answer(400, {"error": str(exc)})

    def get(self) -> None:
        self.answer(404, {"error": "not found"})

    def post(self, body: dict[str, Any]) -> None:
        self.answer(404, {"error": "not found"})


class LoopbackServer(ThreadingHTTPServer):
    """Serves in a daemon thread (`start`); `stop` cuts open connections and never hangs."""

    daemon_threads = True
    block_on_close = False
    # connections opened together (a sidecar's pool after an idle spell, several sidecars)
    # must not overflow the listen backlog: a dropped SYN is retried only after a second
    request_queue_size = 128

    def __init__(self, address: tuple[str, int], handler: type[JsonHandler], quiet: bool) -> None:
        self.quiet = quiet
        self.stopping = threading.Event()
        self._live: dict[threading.Thread, socket.socket] = {}
        self._live_lock = threading.Lock()
        self._thread: threading.Thread | None = None
        super().__init__(address, handler)

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self, name: str) -> None:
        self._thread = threading.Thread(
            target=self.serve_forever, kwargs={"poll_interval": 0.05}, name=name, daemon=True
        )
        self._thread.start()

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        with self._live_lock:
            self._live[threading.current_thread()] = request
        try:
            super().process_request_thread(request, client_address)
        finally:
            with self._live_lock:
                self._live.pop(threading.current_thread(), None)

    def serving(self, sock: socket.socket) -> None:
        """The socket this thread's connection now runs on (a TLS wrapper of the one
        accepted): the one `stop` cuts."""
        with self._live_lock:
            self._live[threading.current_thread()] = sock

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not (self.quiet or self.stopping.is_set()):
            super().handle_error(request, client_address)

    def stop(self, timeout_s: float = 5.0) -> None:
        if self.stopping.is_set():
            return
        self.stopping.set()
        self.shutdown()
        with self._live_lock:
            live = list(self._live.items())
        for _, sock in live:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        for thread, _ in live:
            thread.join(timeout_s)
        self.server_close()
        if self._thread is not None:
            self._thread.join()


class ServiceState(Protocol):
    """What every example service keeps: injected behaviours and request statistics."""

    behaviours: Behaviours[Any]
    requests: Requests

    def reset(self) -> None: ...


class ServiceServer(LoopbackServer):
    """A loopback server with a service's state (behaviours, statistics)."""

    def __init__(
        self,
        address: tuple[str, int],
        handler: type[ServiceHandler],
        state: ServiceState,
        quiet: bool,
    ) -> None:
        self.state = state
        super().__init__(address, handler, quiet)


class RunningService:
    """A running example service; `close()` (or leaving the `with` block) stops it."""

    def __init__(self, server: LoopbackServer, state: ServiceState) -> None:
        self._server = server
        self._state = state
        host, port = server.server_address[:2]
        self.host = str(host)
        self.port = int(port)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def stats(self) -> dict[str, Any]:
        return self._state.requests.stats()

    def control(self, spec: Mapping[str, Any] | None = None, **endpoints: Any) -> None:
        """e.g. control(weather={"delay_s": 2.0, "times": 1}); raises ValueError if bad."""
        self._state.behaviours.control({**(spec or {}), **endpoints})

    def reset(self) -> None:
        self._state.reset()

    def wait_for(self, endpoint: str, count: int = 1, timeout_s: float = 5.0) -> bool:
        """Block until endpoint has received count requests; False after timeout_s."""
        return self._state.requests.wait_for(endpoint, count, timeout_s)

    def close(self) -> None:
        self._server.stop()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def run_until_signal(url: str, label: str) -> None:
    """Print where a service listens, then block until SIGINT or SIGTERM."""
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    print(f"{label} listening on {url}", flush=True)
    while not stop.wait(0.5):  # a bounded wait lets the signal handler run promptly
        pass
