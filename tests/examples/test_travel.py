"""The travel example: its HTTP service, and callgate's registry running its manifests."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
import yaml

from examples.travel.service import TravelService, start_travel_service
from gateway.executors.base import ExecutionContext, ExecutionResult
from gateway.model import CallStatus, Identity
from gateway.tools import Registry

ROOT = Path(__file__).resolve().parents[2]
TOOLS = ROOT / "examples" / "travel" / "tools"


@pytest.fixture
def service() -> Iterator[TravelService]:
    with start_travel_service() as svc:
        yield svc


@pytest.fixture
def client(service: TravelService) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=service.url, timeout=5, trust_env=False) as c:
        yield c


def ctx(call_id: str) -> ExecutionContext:
    return ExecutionContext(
        run_id="run-t",
        call_id=call_id,
        idempotency_key=f"run-t:{call_id}",
        identity=Identity(subject="traveller"),
    )


# --------------------------------------------------------------------------- the service


def test_train_status_is_deterministic(client: httpx.Client) -> None:
    for number, status, delay in [
        ("ICE123", "on_time", 0),
        ("ICE456", "delayed", 25),
        ("RE7", "delayed", 5),
        ("TGV9", "on_time", 0),
    ]:
        answer = client.post("/train_status", json={"train_number": number, "date": "2025-05-01"})
        assert answer.status_code == 200
        assert answer.json() == {
            "train_number": number,
            "date": "2025-05-01",
            "status": status,
            "delay_min": delay,
        }


def test_unknown_train_is_404_and_bad_input_400(client: httpx.Client) -> None:
    unknown = client.post("/train_status", json={"train_number": "X1", "date": "2025-05-01"})
    assert (unknown.status_code, unknown.json()) == (404, {"error": "unknown train"})
    bad = client.post("/train_status", json={"train_number": "ICE123", "date": "May 1"})
    assert bad.status_code == 400
    assert client.post("/weather", content=b"{nope").status_code == 400


def test_weather_is_deterministic(client: httpx.Client) -> None:
    body = {"city": "Berlin", "date": "2025-05-01"}
    first, second = (client.post("/weather", json=body).json() for _ in range(2))
    assert first == second
    assert set(first) == {"city", "date", "forecast", "high_c"}
    assert (first["city"], first["date"]) == ("Berlin", "2025-05-01")
    assert isinstance(first["high_c"], int) and isinstance(first["forecast"], str)


def test_control_applies_for_times_then_normal(
    client: httpx.Client, service: TravelService
) -> None:
    body = {"city": "Paris", "date": "2025-05-01"}
    service.control(weather={"status": 500, "times": 2})
    assert [client.post("/weather", json=body).status_code for _ in range(3)] == [500, 500, 200]
    assert client.post("/_control", json={"weather": {"body": "not json"}}).status_code == 200
    answer = client.post("/weather", json=body)
    assert (answer.status_code, answer.text) == (200, "not json")
    assert client.post("/weather", json=body).text == "not json"  # until reset
    assert client.post("/_control", json={"nope": {}}).status_code == 400


def test_stats_and_reset(client: httpx.Client, service: TravelService) -> None:
    client.post(
        "/train_status",
        json={"train_number": "RE7", "date": "2025-05-01"},
        headers={
            "Idempotency-Key": "r:c1",
            "X-Callgate-Call-Id": "c1",
            "X-Callgate-Run-Id": "r",
            "X-Callgate-Subject": "ann",
        },
    )
    client.post("/weather", json={"city": "Rome", "date": "2025-05-01"})
    stats = client.get("/_stats").json()
    assert stats == service.stats()
    assert (stats["train_status"], stats["weather"]) == (1, 1)
    assert stats["requests"][0] == {
        "path": "/train_status",
        "idempotency_key": "r:c1",
        "call_id": "c1",
        "run_id": "r",
        "subject": "ann",
        "traceparent": "",
        "baggage": "",
    }
    assert client.post("/_reset").status_code == 200
    assert service.stats() == {"train_status": 0, "weather": 0, "requests": []}


def test_drop_closes_without_answering(client: httpx.Client, service: TravelService) -> None:
    service.control(train_status={"drop": True, "times": 1})
    with pytest.raises(httpx.RemoteProtocolError):
        client.post("/train_status", json={"train_number": "RE7", "date": "2025-05-01"})
    assert service.stats()["train_status"] == 1


async def test_close_interrupts_a_delayed_request() -> None:
    service = start_travel_service()
    service.control(weather={"delay_s": 60})
    async with httpx.AsyncClient(trust_env=False) as client:
        pending = asyncio.create_task(
            client.post(
                f"{service.url}/weather", json={"city": "Oslo", "date": "2025-05-01"}, timeout=30
            )
        )
        assert await asyncio.to_thread(service.wait_for, "weather")
        started = time.monotonic()
        await asyncio.to_thread(service.close)
        assert time.monotonic() - started < 2
        with pytest.raises(httpx.HTTPError):
            await pending


def test_runs_as_a_module() -> None:
    command = [sys.executable, "-m", "examples.travel.service", "--port", "0", "--quiet"]
    with subprocess.Popen(
        command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as proc:
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline()
            assert line.startswith("travel service listening on http://127.0.0.1:")
            url = line.rsplit(" ", 1)[1].strip()
            with httpx.Client(trust_env=False, timeout=5) as client:
                answer = client.post(
                    f"{url}/train_status", json={"train_number": "TGV9", "date": "2025-05-01"}
                )
            assert answer.json()["status"] == "on_time"
        finally:
            proc.terminate()
            assert proc.wait(timeout=10) == 0
            assert proc.stderr is not None
            assert proc.stderr.read() == ""  # runpy's "found in sys.modules" warning included


# --------------------------------------------------------------------------- with callgate


@pytest.fixture
async def registry(service: TravelService, tmp_path: Path) -> AsyncIterator[Registry]:
    """The example manifests, with get_weather's timeout shortened for a fast test."""
    for path in TOOLS.glob("*.yaml"):
        manifest = yaml.safe_load(path.read_text())
        if manifest["name"] == "get_weather":
            manifest["executor"]["timeout_s"] = 0.3
        (tmp_path / path.name).write_text(yaml.safe_dump(manifest))
    reg = Registry.load(tmp_path, env={"CALLGATE_TRAVEL_URL": service.url})
    yield reg
    await reg.aclose()


async def run_both(registry: Registry) -> tuple[dict[str, ExecutionResult], list[str]]:
    done: list[str] = []

    async def call(name: str, call_id: str, args: dict[str, str]) -> tuple[str, ExecutionResult]:
        tool = registry.get(name)
        assert tool is not None
        result = await tool.run(args, ctx(call_id))
        done.append(call_id)
        return call_id, result

    pairs = await asyncio.gather(
        call("get_train_status", "call_train", {"train_number": "ICE456", "date": "2025-05-01"}),
        call("get_weather", "call_weather", {"city": "Munich", "date": "2025-05-01"}),
    )
    return dict(pairs), done


async def test_reverse_completion_keeps_each_result_with_its_call(
    registry: Registry, service: TravelService
) -> None:
    service.control(train_status={"delay_s": 0.2, "times": 1})
    results, done = await run_both(registry)
    assert done == ["call_weather", "call_train"]
    train, weather = results["call_train"], results["call_weather"]
    assert train.status is CallStatus.SUCCEEDED
    assert json.loads(train.output_json)["delay_min"] == 25
    assert json.loads(weather.output_json)["city"] == "Munich"
    keys = {r["path"]: r["idempotency_key"] for r in service.stats()["requests"]}
    assert keys == {"/train_status": "run-t:call_train", "/weather": "run-t:call_weather"}


async def test_weather_timeout_leaves_the_train_result(
    registry: Registry, service: TravelService
) -> None:
    service.control(weather={"delay_s": 30, "times": 1})
    results, _ = await run_both(registry)
    train, weather = results["call_train"], results["call_weather"]
    assert train.status is CallStatus.SUCCEEDED
    assert (weather.status, weather.error_code) == (CallStatus.FAILED, "tool_timeout")


async def test_failed_tool_and_invalid_train_number(
    registry: Registry, service: TravelService
) -> None:
    train = registry.get("get_train_status")
    assert train is not None
    assert train.validate_arguments({"train_number": "ice 1", "date": "2025-05-01"}) == (
        "/train_number: 'ice 1' does not match '^[A-Z]{1,4}[0-9]{1,5}$'"
    )
    service.control(train_status={"status": 503, "times": 1})
    failed = await train.run({"train_number": "RE7", "date": "2025-05-01"}, ctx("c1"))
    assert (failed.status, failed.error_code, failed.attempts) == (
        CallStatus.FAILED,
        "tool_error",
        1,
    )
    unknown = await train.run({"train_number": "XX1", "date": "2025-05-01"}, ctx("c2"))
    assert (unknown.status, unknown.error_code) == (CallStatus.FAILED, "tool_error")
    assert "unknown train" in unknown.error_message
