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
                        "idempotency_key", "call_id", "run_id", "subject", "traceparent",
                        "baggage"}, ...]}

Answers are deterministic. Delays wait on an event that `close()` sets, so shutting down never
hangs. Run it with `python -m examples.travel.service --port 8765`, or in-process with
`start_travel_service()`.
"""

from __future__ import annotations

import argparse
import re
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from examples.loopback import (
    BadRequest,
    Behaviours,
    NotFound,
    Requests,
    RunningService,
    ServiceHandler,
    ServiceServer,
    fields_of,
    run_until_signal,
)

ENDPOINTS = ("train_status", "weather")
KNOWN_TRAINS: dict[str, tuple[str, int]] = {
    "ICE123": ("on_time", 0),
    "ICE456": ("delayed", 25),
    "RE7": ("delayed", 5),
    "TGV9": ("on_time", 0),
}
FORECASTS = ("sunny", "partly cloudy", "cloudy", "light rain", "showers", "windy")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


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
    return {
        "city": city,
        "date": date,
        "forecast": FORECASTS[seed % len(FORECASTS)],
        "high_c": (seed >> 8) % 31 - 3,
    }


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
    def parse(cls, endpoint: str, spec: Any) -> Behaviour:
        spec = fields_of(spec, {"delay_s", "status", "body", "drop", "times"})
        try:
            return cls(
                delay_s=float(spec.get("delay_s", 0.0)),
                status=None if spec.get("status") is None else int(spec["status"]),
                body=None if spec.get("body") is None else str(spec["body"]),
                drop=bool(spec.get("drop", False)),
                times=None if spec.get("times") is None else int(spec["times"]),
            )
        except (TypeError, ValueError) as exc:
            raise BadRequest(f"bad behaviour: {exc}") from exc


class _State:
    def __init__(self) -> None:
        self.behaviours = Behaviours(ENDPOINTS, Behaviour.parse)
        self.requests = Requests(ENDPOINTS)

    def reset(self) -> None:
        self.behaviours.reset()
        self.requests.reset()


# --------------------------------------------------------------------------- HTTP


class _Handler(ServiceHandler):
    server: _Server

    def post(self, body: dict[str, Any]) -> None:
        if self.path.lstrip("/") in _TOOLS:
            self._tool(self.path.lstrip("/"), body)
        else:
            self.answer(404, {"error": "not found"})

    def _tool(self, endpoint: str, body: dict[str, Any]) -> None:
        state = self.server.state
        state.requests.arrived(endpoint, self.lower_headers())
        behaviour = state.behaviours.take(endpoint)
        if behaviour is not None and not self._behave(behaviour):
            return
        try:
            self.answer(200, _TOOLS[endpoint](body))
        except NotFound as exc:
            self.answer(404, {"error": str(exc)})

    def _behave(self, behaviour: Behaviour) -> bool:
        """Apply an injected behaviour; True when the normal answer should follow."""
        if behaviour.delay_s > 0 and self.server.stopping.wait(behaviour.delay_s):
            behaviour = Behaviour(drop=True)  # shutting down: give up on this request
        if behaviour.drop:
            self.hang_up()
            return False
        if behaviour.body is not None:
            self.send(behaviour.status or 200, behaviour.body.encode(), "text/plain")
            return False
        if behaviour.status is not None:
            self.answer(behaviour.status, {"error": "injected failure"})
            return False
        return True


class _Server(ServiceServer):
    state: _State


class TravelService(RunningService):
    """A running travel service; `close()` (or leaving the `with` block) stops it."""


def start_travel_service(
    host: str = "127.0.0.1", port: int = 0, *, quiet: bool = True
) -> TravelService:
    """Serve in a daemon thread; port 0 picks a free port (see `.url`)."""
    server = _Server((host, port), _Handler, _State(), quiet)
    server.start("travel-service")
    return TravelService(server, server.state)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Run the travel example tool service.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--quiet", action="store_true", help="do not log requests")
    options = parser.parse_args(argv)
    try:
        service = start_travel_service(options.host, options.port, quiet=options.quiet)
    except OSError as exc:
        raise SystemExit(
            f"travel service: cannot listen on {options.host}:{options.port}: {exc.strerror or exc}"
        ) from None
    with service:
        run_until_signal(service.url, "travel service")


if __name__ == "__main__":
    main()
