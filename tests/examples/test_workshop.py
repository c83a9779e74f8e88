"""The workshop example: its HTTP service (bookings in its own SQLite file, Idempotency-Key,
capacity, the look-up, fault switches) and callgate's registry running its manifests."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest

from examples.workshop.service import WorkshopService, start_workshop_service
from gateway.executors.base import ExecutionContext
from gateway.model import CallStatus, Identity
from gateway.tools import Registry

ROOT = Path(__file__).resolve().parents[2]
TOOLS = ROOT / "examples" / "workshop" / "tools"
SEAT = {"event_id": "ws-acme-1", "participant": "mia", "seats": 1}


@pytest.fixture
def service(tmp_path: Path) -> Iterator[WorkshopService]:
    with start_workshop_service(tmp_path / "workshop.db") as svc:
        yield svc


@pytest.fixture
def client(service: WorkshopService) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=service.url, timeout=5, trust_env=False) as c:
        yield c


def reserve(client: httpx.Client, key: str, body: dict[str, object] = SEAT) -> httpx.Response:
    return client.post("/reserve_seat", json=body, headers={"Idempotency-Key": key})


# --------------------------------------------------------------------------- the service


def test_events_and_availability(client: httpx.Client) -> None:
    listed = client.post("/list_events", json={"tenant": "acme"}).json()
    assert [e["event_id"] for e in listed["events"]] == ["ws-acme-1", "ws-acme-2"]
    assert client.post("/list_events", json={"tenant": "none"}).json()["events"] == []
    seats = client.post("/check_availability", json={"event_id": "ws-acme-2"}).json()
    assert (seats["capacity"], seats["reserved"], seats["available"]) == (3, 0, 3)
    assert client.post("/check_availability", json={"event_id": "ws-x"}).status_code == 404


def test_a_key_books_once(client: httpx.Client, service: WorkshopService) -> None:
    first = reserve(client, "k1")
    assert first.status_code == 200 and first.json()["reservation_id"].startswith("R-")
    again = reserve(client, "k1")
    assert again.json() == first.json()  # the same reservation, nothing new booked
    assert reserve(client, "k1", {**SEAT, "seats": 2}).status_code == 422  # key reused
    assert [r["idempotency_key"] for r in service.reservations()] == ["k1"]
    assert client.post("/reserve_seat", json=SEAT).status_code == 400  # no key
    lookup = client.get("/reservations/by-key/k1")
    assert (lookup.status_code, lookup.json()) == (200, first.json())
    assert client.get("/reservations/by-key/k2").status_code == 404


def test_capacity_is_enforced(client: httpx.Client, service: WorkshopService) -> None:
    small = {"event_id": "ws-acme-2", "participant": "mia", "seats": 2}
    assert reserve(client, "a", small).status_code == 200
    refused = reserve(client, "b", small)
    assert (refused.status_code, refused.json()) == (422, {"error": "not enough seats: 1 left"})
    assert reserve(client, "c", {**small, "event_id": "ws-none"}).status_code == 404
    assert len(service.reservations()) == 1


def test_apply_then_drop_and_apply_then_500_book(
    client: httpx.Client, service: WorkshopService
) -> None:
    service.control(reserve_seat={"apply_then_drop": True, "times": 1})
    with pytest.raises(httpx.RemoteProtocolError):
        reserve(client, "k1")
    service.control(reserve_seat={"apply_then_status": 500, "times": 1})
    assert reserve(client, "k2").status_code == 500
    service.control(reserve_seat={"status": 503, "times": 1})
    assert reserve(client, "k3").status_code == 503  # failed before booking
    assert [r["idempotency_key"] for r in service.reservations()] == ["k1", "k2"]


def test_accept_then_apply_late(client: httpx.Client, service: WorkshopService) -> None:
    service.control(reserve_seat={"apply_late": True, "times": 1})
    with pytest.raises(httpx.RemoteProtocolError):
        reserve(client, "k1")
    assert client.get("/reservations/by-key/k1").status_code == 202  # pending
    assert reserve(client, "k1").status_code == 409  # the same key while it is applied
    assert service.reservations() == []
    assert service.apply_late() == 1
    assert client.get("/reservations/by-key/k1").status_code == 200
    assert len(service.reservations("k1")) == 1


def test_faults_on_reads_and_the_lookup(client: httpx.Client, service: WorkshopService) -> None:
    service.control(lookup={"status": 500}, check_availability={"drop": True, "times": 1})
    assert client.get("/reservations/by-key/k1").status_code == 500
    with pytest.raises(httpx.RemoteProtocolError):
        client.post("/check_availability", json={"event_id": "ws-acme-1"})
    assert client.post("/_control", json={"lookup": {"apply_late": True}}).status_code == 400
    assert client.post("/_reset").status_code == 200
    assert client.get("/reservations/by-key/k1").status_code == 404
    assert service.stats()["lookup"] == 1


def test_runs_as_a_module(tmp_path: Path) -> None:
    command = [
        sys.executable,
        "-m",
        "examples.workshop.service",
        "--port",
        "0",
        "--quiet",
        "--db",
        str(tmp_path / "w.db"),
    ]
    with subprocess.Popen(
        command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as proc:
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline()
            assert line.startswith("workshop service listening on http://127.0.0.1:")
            url = line.rsplit(" ", 1)[1].strip()
            with httpx.Client(trust_env=False, timeout=5) as client:
                answer = client.post(f"{url}/check_availability", json={"event_id": "ws-acme-1"})
            assert answer.json()["available"] == 20
        finally:
            proc.terminate()
            assert proc.wait(timeout=10) == 0
            assert proc.stderr is not None
            assert proc.stderr.read() == ""  # runpy's "found in sys.modules" warning included


# --------------------------------------------------------------------------- with callgate


@pytest.fixture
async def registry(service: WorkshopService) -> AsyncIterator[Registry]:
    reg = Registry.load(TOOLS, env={"CALLGATE_WORKSHOP_URL": service.url})
    yield reg
    await reg.aclose()


def ctx(call_id: str) -> ExecutionContext:
    return ExecutionContext(
        run_id="run-w",
        call_id=call_id,
        idempotency_key=f"run-w:{call_id}",
        identity=Identity(subject="mia"),
    )


async def test_a_lost_booking_is_found_by_its_key(
    registry: Registry, service: WorkshopService
) -> None:
    tool = registry.get("reserve_seat")
    assert tool is not None and tool.enforced_by_target
    service.control(reserve_seat={"apply_then_drop": True, "times": 1})
    lost = await tool.run(SEAT, ctx("w1"))
    assert lost.status is CallStatus.UNKNOWN and lost.attempts == 1
    found = await tool.reconcile(SEAT, ctx("w1"))
    assert found.status is CallStatus.SUCCEEDED and found.attempts == 0
    assert len(service.reservations("run-w:w1")) == 1


async def test_a_write_that_never_arrived_is_sent_once_more(
    registry: Registry, service: WorkshopService
) -> None:
    tool = registry.get("reserve_seat")
    assert tool is not None
    service.control(reserve_seat={"status": 503, "times": 1})
    lost = await tool.run(SEAT, ctx("w2"))
    assert lost.status is CallStatus.UNKNOWN
    resent = await tool.reconcile(SEAT, ctx("w2"))
    assert resent.status is CallStatus.SUCCEEDED and resent.attempts == 1
    assert len(service.reservations("run-w:w2")) == 1


async def test_a_pending_booking_stays_unknown(
    registry: Registry, service: WorkshopService
) -> None:
    tool = registry.get("reserve_seat")
    assert tool is not None
    service.control(reserve_seat={"apply_late": True, "times": 1})
    assert (await tool.run(SEAT, ctx("w3"))).status is CallStatus.UNKNOWN
    still = await tool.reconcile(SEAT, ctx("w3"))
    assert still.status is CallStatus.UNKNOWN and still.attempts == 0  # never re-sent
    service.apply_late()
    assert (await tool.reconcile(SEAT, ctx("w3"))).status is CallStatus.SUCCEEDED
    assert len(service.reservations("run-w:w3")) == 1
