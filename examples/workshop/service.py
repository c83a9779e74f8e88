"""A workshop reservation service on loopback (stdlib only), for the demo and for tests.

Its state is its own SQLite file: the events (seeded) and the reservations. Whether a booking
happened is read from that file (`WorkshopService.reservations()`), never from callgate.

    POST /list_events         {"tenant"} → {"tenant", "events": [{"event_id", "title", "date",
                              "capacity", "available"}]}
    POST /check_availability  {"event_id"} → {"event_id", "title", "date", "capacity",
                              "reserved", "available"}; unknown event → 404
    POST /reserve_seat        {"event_id", "participant", "seats" (1-10), "email"?} with an
                              Idempotency-Key header (400 without) → {"reservation_id",
                              "event_id", "participant", "seats"}. The same key again with the
                              same body answers the same reservation and books nothing; with
                              another body → 422; while a write with that key is still being
                              applied → 409. Not enough seats → 422; unknown event → 404.
    GET  /reservations/by-key/{key}
                              the look-up: 200 the reservation, 202 {"state": "pending"} while
                              it is being applied, 404 when there is none
    POST /_control            per endpoint (list_events, check_availability, reserve_seat,
                              lookup): delay_s (answer late), status (answer this status, apply
                              nothing), drop (hang up, apply nothing), times (how many upcoming
                              requests; omitted: until /_reset); reserve_seat also:
                              apply_then_drop (book, then hang up), apply_then_status (book,
                              then answer this status, e.g. 500), apply_then_delay_s (book,
                              then answer late), apply_late (accept the key, hang up, book
                              later: after apply_after_s, or at /_apply_late). /_reset and
                              shutting down cut every delay short: the request is dropped.
    POST /_apply_late         book every write accepted late, now
    POST /_reset              forget reservations, behaviours and statistics
    GET  /_stats              {"list_events": n, ..., "lookup": n, "requests": [...]}

Run it with `python -m examples.workshop.service --port 8766 --db workshop.db`, or in-process
with `start_workshop_service(db_path)`.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sqlite3
import threading
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote

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

ENDPOINTS = ("list_events", "check_availability", "reserve_seat", "lookup")
EVENTS = (  # event_id, tenant, title, date, capacity
    ("ws-acme-1", "acme", "Writing tool manifests", "2026-12-03", 20),
    ("ws-acme-2", "acme", "Rego for reviewers", "2026-12-10", 3),
    ("ws-globex-1", "globex", "Agent loops in production", "2026-12-05", 10),
)
MAX_SEATS = 10
LOOKUP_PREFIX = "/reservations/by-key/"

_SCHEMA = [
    "CREATE TABLE IF NOT EXISTS events (event_id TEXT PRIMARY KEY, tenant TEXT NOT NULL, "
    "title TEXT NOT NULL, date TEXT NOT NULL, capacity INTEGER NOT NULL)",
    "CREATE TABLE IF NOT EXISTS reservations (reservation_id TEXT PRIMARY KEY, "
    "idempotency_key TEXT NOT NULL UNIQUE, request_sha256 TEXT NOT NULL, "
    "event_id TEXT NOT NULL REFERENCES events, participant TEXT NOT NULL, "
    "seats INTEGER NOT NULL, email TEXT, state TEXT NOT NULL)",  # state: pending | booked
]


class Conflict(Exception):
    """The key is still being applied: answered 409 (the caller cannot know the outcome)."""


class Unprocessable(Exception):
    """A valid request the service refuses (no seats left, a key reused): answered 422."""


# --------------------------------------------------------------------------- the bookings


@dataclass(frozen=True)
class SeatRequest:
    event_id: str
    participant: str
    seats: int
    email: str | None

    @classmethod
    def parse(cls, body: Mapping[str, Any]) -> SeatRequest:
        event_id, participant = body.get("event_id"), body.get("participant")
        seats, email = body.get("seats", 1), body.get("email")
        if not isinstance(event_id, str) or not event_id:
            raise BadRequest("event_id must be a non-empty string")
        if not isinstance(participant, str) or not 1 <= len(participant) <= 80:
            raise BadRequest("participant must be a string of 1 to 80 characters")
        if isinstance(seats, bool) or not isinstance(seats, int) or not 1 <= seats <= MAX_SEATS:
            raise BadRequest(f"seats must be an integer from 1 to {MAX_SEATS}")
        if email is not None and not isinstance(email, str):
            raise BadRequest("email must be a string")
        return cls(event_id, participant, seats, email)

    def sha256(self) -> str:
        body = [self.event_id, self.participant, self.seats, self.email]
        return hashlib.sha256(json.dumps(body).encode()).hexdigest()


def _reservation(row: sqlite3.Row) -> dict[str, Any]:
    return {
        "reservation_id": row["reservation_id"],
        "event_id": row["event_id"],
        "participant": row["participant"],
        "seats": row["seats"],
    }


class Bookings:
    """The service's database; every change is one transaction under one lock."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)  # notified after every booking
        self._conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._conn.row_factory = sqlite3.Row
        with self._lock:
            for stmt in _SCHEMA:
                self._conn.execute(stmt)
            self._conn.executemany("INSERT OR IGNORE INTO events VALUES (?, ?, ?, ?, ?)", EVENTS)

    def close(self) -> None:
        self._conn.close()

    def reset(self) -> None:
        with self._lock:
            self._conn.execute("DELETE FROM reservations")

    def _reserved(self, event_id: str) -> int:
        row = self._conn.execute(
            "SELECT COALESCE(SUM(seats), 0) FROM reservations WHERE event_id = ?", (event_id,)
        ).fetchone()
        return int(row[0])

    def _event(self, event_id: str) -> sqlite3.Row:
        row = self._conn.execute("SELECT * FROM events WHERE event_id = ?", (event_id,)).fetchone()
        if row is None:
            raise NotFound(f"no event {event_id}")
        return row  # type: ignore[no-any-return]

    def availability(self, event_id: str) -> dict[str, Any]:
        with self._lock:
            event = self._event(event_id)
            reserved = self._reserved(event_id)
        return {
            "event_id": event_id,
            "title": event["title"],
            "date": event["date"],
            "capacity": event["capacity"],
            "reserved": reserved,
            "available": event["capacity"] - reserved,
        }

    def events(self, tenant: str) -> list[dict[str, Any]]:
        with self._lock:
            rows = self._conn.execute(
                "SELECT event_id FROM events WHERE tenant = ? ORDER BY event_id", (tenant,)
            ).fetchall()
        found = [self.availability(r["event_id"]) for r in rows]
        return [
            {k: e[k] for k in ("event_id", "title", "date", "capacity", "available")} for e in found
        ]

    def reserve(self, key: str, req: SeatRequest, *, pending: bool = False) -> dict[str, Any]:
        """Book (or, pending, hold the key and the seats to book later); a key seen before
        answers its reservation and books nothing."""
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                answer = self._reserve(key, req, pending)
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")
            self._changed.notify_all()
            return answer

    def _reserve(self, key: str, req: SeatRequest, pending: bool) -> dict[str, Any]:
        known = self._conn.execute(
            "SELECT * FROM reservations WHERE idempotency_key = ?", (key,)
        ).fetchone()
        if known is not None:
            if known["request_sha256"] != req.sha256():
                raise Unprocessable("this Idempotency-Key was used for another request")
            if known["state"] == "pending":
                raise Conflict("a request with this Idempotency-Key is still being applied")
            return _reservation(known)
        event = self._event(req.event_id)
        left = event["capacity"] - self._reserved(req.event_id)
        if req.seats > left:
            raise Unprocessable(f"not enough seats: {left} left")
        rid = f"R-{uuid.uuid4().hex[:10].upper()}"
        self._conn.execute(
            "INSERT INTO reservations VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                rid,
                key,
                req.sha256(),
                req.event_id,
                req.participant,
                req.seats,
                req.email,
                "pending" if pending else "booked",
            ),
        )
        return {
            "reservation_id": rid,
            "event_id": req.event_id,
            "participant": req.participant,
            "seats": req.seats,
        }

    def apply_pending(self, key: str | None = None) -> int:
        """Book what was accepted late (one key, or all); answers how many."""
        with self._lock:
            sql = "UPDATE reservations SET state = 'booked' WHERE state = 'pending'"
            args: tuple[str, ...] = ()
            if key is not None:
                sql, args = sql + " AND idempotency_key = ?", (key,)
            applied = self._conn.execute(sql, args).rowcount
            self._changed.notify_all()
            return applied

    def wait_booked(self, key: str, timeout_s: float) -> bool:
        """Block until key is booked; False after timeout_s."""

        def booked() -> bool:
            row = self._conn.execute(
                "SELECT 1 FROM reservations WHERE idempotency_key = ? AND state = 'booked'", (key,)
            ).fetchone()
            return row is not None

        with self._changed:
            return self._changed.wait_for(booked, timeout_s)

    def lookup(self, key: str) -> tuple[int, dict[str, Any]]:
        with self._lock:
            row = self._conn.execute(
                "SELECT * FROM reservations WHERE idempotency_key = ?", (key,)
            ).fetchone()
        if row is None:
            return 404, {"error": f"no reservation with Idempotency-Key {key}"}
        if row["state"] == "pending":
            return 202, {"state": "pending"}
        return 200, _reservation(row)


def reservations(path: Path, key: str | None = None) -> list[dict[str, Any]]:
    """The booked reservations in a workshop database file (all, or those of one key)."""
    conn = sqlite3.connect(path)
    conn.row_factory = sqlite3.Row
    try:
        sql = "SELECT * FROM reservations WHERE state = 'booked'"
        args: tuple[str, ...] = ()
        if key is not None:
            sql, args = sql + " AND idempotency_key = ?", (key,)
        return [dict(r) for r in conn.execute(sql + " ORDER BY rowid", args)]
    finally:
        conn.close()


# --------------------------------------------------------------------------- behaviours

_READ_FIELDS = {"delay_s", "status", "drop", "times"}
_WRITE_FIELDS = _READ_FIELDS | {
    "apply_then_drop",
    "apply_then_status",
    "apply_then_delay_s",
    "apply_late",
    "apply_after_s",
}


@dataclass
class Behaviour:
    delay_s: float = 0.0
    status: int | None = None
    drop: bool = False
    apply_then_drop: bool = False
    apply_then_status: int | None = None
    apply_then_delay_s: float = 0.0
    apply_late: bool = False
    apply_after_s: float = 0.0  # with apply_late: 0 means "at POST /_apply_late"
    times: int | None = None  # None: until reset

    @classmethod
    def parse(cls, endpoint: str, spec: Any) -> Behaviour:
        spec = fields_of(spec, _WRITE_FIELDS if endpoint == "reserve_seat" else _READ_FIELDS)

        def number(name: str, kind: type[int] | type[float]) -> Any:
            return None if spec.get(name) is None else kind(spec[name])

        try:
            return cls(
                delay_s=float(spec.get("delay_s", 0.0)),
                status=number("status", int),
                drop=bool(spec.get("drop", False)),
                apply_then_drop=bool(spec.get("apply_then_drop", False)),
                apply_then_status=number("apply_then_status", int),
                apply_then_delay_s=float(spec.get("apply_then_delay_s", 0.0)),
                apply_late=bool(spec.get("apply_late", False)),
                apply_after_s=float(spec.get("apply_after_s", 0.0)),
                times=number("times", int),
            )
        except (TypeError, ValueError) as exc:
            raise BadRequest(f"bad behaviour: {exc}") from exc


class _State:
    def __init__(self, bookings: Bookings) -> None:
        self.bookings = bookings
        self.behaviours = Behaviours(ENDPOINTS, Behaviour.parse)
        self.requests = Requests(ENDPOINTS)
        self.interrupt = threading.Event()  # set: cut every current delay short
        self._timers: list[threading.Timer] = []

    def pause(self, seconds: float) -> bool:
        """Wait seconds; False when cut short (a reset, or shutting down)."""
        return not self.interrupt.wait(seconds)

    def reset(self) -> None:
        self.interrupt.set()
        self.interrupt = threading.Event()
        self.cancel_timers()
        self.behaviours.reset()
        self.requests.reset()
        self.bookings.reset()

    def apply_later(self, key: str, after_s: float) -> None:
        timer = threading.Timer(after_s, self.bookings.apply_pending, args=(key,))
        timer.daemon = True
        self._timers.append(timer)
        timer.start()

    def cancel_timers(self) -> None:
        for timer in self._timers:
            timer.cancel()
        self._timers.clear()


# --------------------------------------------------------------------------- HTTP


class _Handler(ServiceHandler):
    server: _Server

    @property
    def state(self) -> _State:
        return self.server.state

    def get(self) -> None:
        if self.path.startswith(LOOKUP_PREFIX):
            self._serve(
                "lookup",
                lambda: self.state.bookings.lookup(unquote(self.path.removeprefix(LOOKUP_PREFIX))),
            )
        else:
            self.answer(404, {"error": "not found"})

    def post(self, body: dict[str, Any]) -> None:
        if self.path == "/_apply_late":
            self.answer(200, {"applied": self.state.bookings.apply_pending()})
        elif self.path == "/list_events":
            tenant = body.get("tenant")
            if not isinstance(tenant, str):
                raise BadRequest("tenant must be a string")
            self._serve(
                "list_events",
                lambda: (200, {"tenant": tenant, "events": self.state.bookings.events(tenant)}),
            )
        elif self.path == "/check_availability":
            event_id = str(body.get("event_id", ""))
            self._serve(
                "check_availability", lambda: (200, self.state.bookings.availability(event_id))
            )
        elif self.path == "/reserve_seat":
            self._reserve(body)
        else:
            self.answer(404, {"error": "not found"})

    def _serve(self, endpoint: str, work: Any) -> None:
        """A read: count it, apply its behaviour, answer."""
        self.state.requests.arrived(endpoint, self.lower_headers())
        behaviour = self.state.behaviours.take(endpoint)
        if behaviour is not None and not self._before(behaviour):
            return
        try:
            status, payload = work()
        except NotFound as exc:
            status, payload = 404, {"error": str(exc)}
        self.answer(status, payload)

    def _before(self, behaviour: Behaviour) -> bool:
        """What happens before the request is handled; True when it should be."""
        if behaviour.delay_s > 0 and not self.state.pause(behaviour.delay_s):
            behaviour = Behaviour(drop=True)  # cut short: give up on this request
        if behaviour.drop:
            self.hang_up()
            return False
        if behaviour.status is not None:
            self.answer(behaviour.status, {"error": "injected failure"})
            return False
        return True

    def _reserve(self, body: dict[str, Any]) -> None:
        self.state.requests.arrived("reserve_seat", self.lower_headers())
        behaviour = self.state.behaviours.take("reserve_seat") or Behaviour()
        if not self._before(behaviour):
            return
        key = self.headers.get("Idempotency-Key", "")
        if not key:
            raise BadRequest("the Idempotency-Key header is required")
        req = SeatRequest.parse(body)
        try:
            booked = self.state.bookings.reserve(key, req, pending=behaviour.apply_late)
        except NotFound as exc:
            return self.answer(404, {"error": str(exc)})
        except Unprocessable as exc:
            return self.answer(422, {"error": str(exc)})
        except Conflict as exc:
            return self.answer(409, {"error": str(exc)})
        if behaviour.apply_late and behaviour.apply_after_s > 0:
            self.state.apply_later(key, behaviour.apply_after_s)
        if behaviour.apply_then_delay_s > 0 and not self.state.pause(behaviour.apply_then_delay_s):
            return self.hang_up()
        if behaviour.apply_late or behaviour.apply_then_drop:
            return self.hang_up()
        if behaviour.apply_then_status is not None:
            return self.answer(behaviour.apply_then_status, {"error": "injected failure"})
        self.answer(200, booked)


class _Server(ServiceServer):
    state: _State


class WorkshopService(RunningService):
    """A running workshop service; `close()` (or leaving the `with` block) stops it."""

    def __init__(self, server: _Server, db: Path) -> None:
        super().__init__(server, server.state)
        self.db = db
        self._workshop = server.state
        self._bookings = server.state.bookings

    def apply_late(self) -> int:
        """Book every write accepted late, now; answers how many."""
        return self._bookings.apply_pending()

    def wait_booked(self, key: str, timeout_s: float = 5.0) -> bool:
        """Block until the write with this Idempotency-Key is booked; False after timeout_s."""
        return self._bookings.wait_booked(key, timeout_s)

    def reservations(self, key: str | None = None) -> list[dict[str, Any]]:
        """The booked reservations, read from the service's own database file."""
        return reservations(self.db, key)

    def close(self) -> None:
        self._workshop.interrupt.set()  # delayed requests give up: shutting down never hangs
        self._workshop.cancel_timers()
        super().close()
        self._bookings.close()


def start_workshop_service(
    db: Path, host: str = "127.0.0.1", port: int = 0, *, quiet: bool = True
) -> WorkshopService:
    """Serve in a daemon thread with its state in the SQLite file db (created and seeded if
    new); port 0 picks a free port (see `.url`)."""
    server = _Server((host, port), _Handler, _State(Bookings(db)), quiet)
    server.start("workshop-service")
    return WorkshopService(server, db)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Run the workshop example tool service.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8766)
    parser.add_argument(
        "--db",
        type=Path,
        default=Path("workshop.db"),
        help="its SQLite file (created and seeded with events if new)",
    )
    parser.add_argument("--quiet", action="store_true", help="do not log requests")
    options = parser.parse_args(argv)
    try:
        service = start_workshop_service(
            options.db, options.host, options.port, quiet=options.quiet
        )
    except OSError as exc:
        raise SystemExit(
            f"workshop service: cannot listen on {options.host}:{options.port}: "
            f"{exc.strerror or exc}"
        ) from None
    with service:
        run_until_signal(service.url, "workshop service")


if __name__ == "__main__":
    main()
