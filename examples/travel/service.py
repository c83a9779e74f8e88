"""A small travel tool service on loopback (stdlib only), for the demo and for tests.

    POST /train_status  {"train_number", "date"} → {"train_number", "date", "status", "delay_min"}
                        status is "on_time" or "delayed"; unknown train → 404 {"error"}
    POST /weather       {"city", "date"} → {"city", "date", "forecast", "high_c"}
    POST /_control      {"weather": {"delay_s": 2.0, "status": 500, "times": 1}, ...}
                        per endpoint: delay_s (answer late), status (answer this status with
                        {"error": "injected failure"}), body (answer this raw text), drop (close
                        the connection without answering); times = how many upcoming requests
                        it applies to (omitted: until /_reset)
    POST /_reset        forget behaviours and statistics
    GET  /_stats        {"train_status": n, "weather": n, "requests": [{"path",
                        "idempotency_key", "call_id", "run_id", "subject"}, ...]}

Answers are deterministic. Delays wait on an event that `close()` sets, so shutting down never
hangs. Run it with `python -m examples.travel.service --port 8765`, or in-process with
`start_travel_service()`.
"""

from __future__ import annotations

import argparse
import json
import re
import signal
import socket
import threading
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import FrameType, TracebackType
from typing import Any

ENDPOINTS = ("train_status", "weather")
KNOWN_TRAINS: dict[str, tuple[str, int]] = {
    "ICE123": ("on_time", 0),
    "ICE456": ("delayed", 25),
    "RE7": ("delayed", 5),
    "TGV9": ("on_time", 0),
}
FORECASTS = ("sunny", "partly cloudy", "cloudy", "light rain", "showers", "windy")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


class BadRequest(ValueError):
    pass


class NotFound(LookupError):
    pass


# --------------------------------------------------------------------------- the tools


def _text_field(body: Mapping[str, Any], name: str, max_len: int = 80) -> str:
    value = body.get(name)
    if not isinstance(value, str) or not 1 <= len(value) <= max_len:
        raise BadRequest(f"{name} must be a string of 1 to {max_len} characters")
    return value


def _date_field(body: Mapping[str, Any]) -> str:
    value = _text_field(body, "date", 10)
    if not _DATE.match(value):
        raise BadRequest("date must look like YYYY-MM-DD")
    return value


def train_status(body: Mapping[str, Any]) -> dict[str, Any]:
    number = _text_field(body, "train_number", 9)
    date = _date_field(body)
    if number not in KNOWN_TRAINS:
        raise NotFound("unknown train")
    status, delay = KNOWN_TRAINS[number]
    return {"train_number": number, "date": date, "status": status, "delay_min": delay}


def weather(body: Mapping[str, Any]) -> dict[str, Any]:
    city = _text_field(body, "city")
    date = _date_field(body)
    seed = zlib.crc32(f"{city.casefold()}|{date}".encode())
    return {"city": city, "date": date, "forecast": FORECASTS[seed % len(FORECASTS)],
            "high_c": (seed >> 8) % 31 - 3}


_TOOLS = {"train_status": train_status, "weather": weather}


# --------------------------------------------------------------------------- state


@dataclass
class Behaviour:
    delay_s: float = 0.0
    status: int | None = None
    body: str | None = None
    drop: bool = False
    times: int | None = None  # None: until reset

    @classmethod
    def parse(cls, spec: Any) -> Behaviour:
        if not isinstance(spec, Mapping):
            raise BadRequest("a behaviour must be an object")
        unknown = set(spec) - {"delay_s", "status", "body", "drop", "times"}
        if unknown:
            raise BadRequest(f"unknown behaviour fields: {sorted(unknown)}")
        try:
            return cls(delay_s=float(spec.get("delay_s", 0.0)),
                       status=None if spec.get("status") is None else int(spec["status"]),
                       body=None if spec.get("body") is None else str(spec["body"]),
                       drop=bool(spec.get("drop", False)),
                       times=None if spec.get("times") is None else int(spec["times"]))
        except (TypeError, ValueError) as exc:
            raise BadRequest(f"bad behaviour: {exc}") from exc


class _State:
    def __init__(self) -> None:
        self.stopping = threading.Event()
        self._lock = threading.Lock()
        self._arrivals = threading.Condition(self._lock)
        self._behaviours: dict[str, Behaviour] = {}
        self._counts = dict.fromkeys(ENDPOINTS, 0)
        self._requests: list[dict[str, str]] = []

    def control(self, spec: Mapping[str, Any]) -> None:
        parsed = {}
        for endpoint, behaviour in spec.items():
            if endpoint not in ENDPOINTS:
                raise BadRequest(f"unknown endpoint {endpoint!r} (known: {list(ENDPOINTS)})")
            parsed[endpoint] = Behaviour.parse(behaviour)
        with self._lock:
            self._behaviours.update(parsed)

    def reset(self) -> None:
        with self._lock:
            self._behaviours.clear()
            self._counts = dict.fromkeys(ENDPOINTS, 0)
            self._requests.clear()

    def arrived(self, endpoint: str, headers: Mapping[str, str]) -> Behaviour | None:
        """Count a request and take the behaviour that applies to it (if any).
        headers: lower-cased names."""
        with self._lock:
            self._counts[endpoint] += 1
            self._requests.append({
                "path": f"/{endpoint}",
                "idempotency_key": headers.get("idempotency-key", ""),
                "call_id": headers.get("x-callgate-call-id", ""),
                "run_id": headers.get("x-callgate-run-id", ""),
                "subject": headers.get("x-callgate-subject", ""),
            })
            self._arrivals.notify_all()
            behaviour = self._behaviours.get(endpoint)
            if behaviour is not None and behaviour.times is not None:
                behaviour.times -= 1
                if behaviour.times <= 0:
                    del self._behaviours[endpoint]
            return behaviour

    def stats(self) -> dict[str, Any]:
        with self._lock:
            return {**self._counts, "requests": [dict(r) for r in self._requests]}

    def wait_for(self, endpoint: str, count: int, timeout_s: float) -> bool:
        with self._arrivals:
            return self._arrivals.wait_for(lambda: self._counts[endpoint] >= count, timeout_s)


# --------------------------------------------------------------------------- HTTP


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def setup(self) -> None:
        super().setup()
        # headers and body go out in separate writes: do not let Nagle hold the body back
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:
        if not self.server.quiet:
            super().log_message(format, *args)

    def do_GET(self) -> None:
        if self.path == "/_stats":
            self._answer(200, self.server.state.stats())
        else:
            self._answer(404, {"error": "not found"})

    def do_POST(self) -> None:
        try:
            body = self._json_body()
            if self.path == "/_control":
                self.server.state.control(body)
                self._answer(200, {"ok": True})
            elif self.path == "/_reset":
                self.server.state.reset()
                self._answer(200, {"ok": True})
            elif self.path.lstrip("/") in _TOOLS:
                self._tool(self.path.lstrip("/"), body)
            else:
                self._answer(404, {"error": "not found"})
        except BadRequest as exc:
            self._answer(400, {"error": str(exc)})

    def _json_body(self) -> dict[str, Any]:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
        except ValueError as exc:
            raise BadRequest(f"body is not JSON: {exc}") from exc
        if not isinstance(body, dict):
            raise BadRequest("body must be a JSON object")
        return body

    def _tool(self, endpoint: str, body: dict[str, Any]) -> None:
        headers = {name.lower(): value for name, value in self.headers.items()}
        behaviour = self.server.state.arrived(endpoint, headers)
        if behaviour is not None and not self._behave(behaviour):
            return
        try:
            self._answer(200, _TOOLS[endpoint](body))
        except NotFound as exc:
            self._answer(404, {"error": str(exc)})

    def _behave(self, behaviour: Behaviour) -> bool:
        """Apply an injected behaviour; True when the normal answer should follow."""
        if behaviour.delay_s > 0 and self.server.state.stopping.wait(behaviour.delay_s):
            behaviour = Behaviour(drop=True)  # shutting down: give up on this request
        if behaviour.drop:
            self.close_connection = True
            return False
        if behaviour.body is not None:
            self._send(behaviour.status or 200, behaviour.body.encode(), "text/plain")
            return False
        if behaviour.status is not None:
            self._answer(behaviour.status, {"error": "injected failure"})
            return False
        return True

    def _answer(self, status: int, payload: Any) -> None:
        self._send(status, json.dumps(payload).encode(), "application/json")

    def _send(self, status: int, data: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def __init__(self, address: tuple[str, int], state: _State, quiet: bool) -> None:
        self.state = state
        self.quiet = quiet
        self._live: dict[threading.Thread, socket.socket] = {}
        self._live_lock = threading.Lock()
        super().__init__(address, _Handler)

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        with self._live_lock:
            self._live[threading.current_thread()] = request
        try:
            super().process_request_thread(request, client_address)
        finally:
            with self._live_lock:
                self._live.pop(threading.current_thread(), None)

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not (self.quiet or self.state.stopping.is_set()):
            super().handle_error(request, client_address)

    def close_connections(self, timeout_s: float = 5.0) -> None:
        """Cut every open connection and wait for its handler thread to finish."""
        with self._live_lock:
            live = list(self._live.items())
        for _, sock in live:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        for thread, _ in live:
            thread.join(timeout_s)


class TravelService:
    """A running travel service; `close()` (or leaving the `with` block) stops it."""

    def __init__(self, server: _Server, thread: threading.Thread) -> None:
        self._server = server
        self._thread = thread
        host, port = server.server_address[:2]
        self.host = str(host)
        self.port = int(port)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def stats(self) -> dict[str, Any]:
        return self._server.state.stats()

    def control(self, spec: Mapping[str, Any] | None = None, **endpoints: Any) -> None:
        """e.g. control(weather={"delay_s": 2.0, "times": 1}); raises ValueError if bad."""
        self._server.state.control({**(spec or {}), **endpoints})

    def reset(self) -> None:
        self._server.state.reset()

    def wait_for(self, endpoint: str, count: int = 1, timeout_s: float = 5.0) -> bool:
        """Block until endpoint has received count requests; False after timeout_s."""
        return self._server.state.wait_for(endpoint, count, timeout_s)

    def close(self) -> None:
        if self._server.state.stopping.is_set():
            return
        self._server.state.stopping.set()
        self._server.shutdown()
        self._server.close_connections()
        self._server.server_close()
        self._thread.join()

    def __enter__(self) -> TravelService:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


def start_travel_service(host: str = "127.0.0.1", port: int = 0, *,
                         quiet: bool = True) -> TravelService:
    """Serve in a daemon thread; port 0 picks a free port (see `.url`)."""
    server = _Server((host, port), _State(), quiet)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                              name="travel-service", daemon=True)
    thread.start()
    return TravelService(server, thread)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Run the travel example tool service.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--quiet", action="store_true", help="do not log requests")
    options = parser.parse_args(argv)
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        service = start_travel_service(options.host, options.port, quiet=options.quiet)
    except OSError as exc:
        raise SystemExit(f"travel service: cannot listen on {options.host}:{options.port}: "
                         f"{exc.strerror or exc}") from None
    with service:
        print(f"travel service listening on {service.url}", flush=True)
        while not stop.wait(0.5):
            pass


if __name__ == "__main__":
    main()
