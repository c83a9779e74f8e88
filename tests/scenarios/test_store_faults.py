"""A store that cannot persist: health says so, turns are refused, and a disk that fills in the
middle of a turn gets a truthful answer (the calls that went out are named, and ResumeRun
settles them once the store is back).

The full-disk cases use a real, small tmpfs (mounting one needs root, as on CI).
"""

from __future__ import annotations

import os
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from examples.travel.service import TravelService
from gateway import pb
from gateway.client import GatewayClient, RequestError, error_code, tool_call
from gateway.testing import SidecarProcess
from tests.support.scenarios import WEATHER
from tests.support.sidecars import own_sidecar

SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING


def wait_for_health(target: str, want: int, service: str = "callgate.store") -> None:
    """Watch the health status until it is `want` (the server pushes every change)."""
    with grpc.insecure_channel(target) as ch:
        stream = health_pb2_grpc.HealthStub(ch).Watch(
            health_pb2.HealthCheckRequest(service=service), timeout=60
        )
        for resp in stream:
            if resp.status == want:
                stream.cancel()
                return
    raise AssertionError(f"{service} never became {want}")


def refused_turn(c: GatewayClient, run_id: str, turn_id: str) -> RequestError:
    with pytest.raises(RequestError) as info:
        c.submit_calls(run_id, turn_id, tool_call(f"{turn_id}-c", "get_weather", WEATHER))
    assert isinstance(info.value, RequestError)
    return info.value


def test_a_deleted_store_file_refuses_turns_and_is_not_serving(
    tmp_path: Path, travel: TravelService, tools_dir: Path, effects_db: Path, run_id: str
) -> None:
    travel.reset()
    db = tmp_path / "store" / "cg.db"
    with (
        own_sidecar(tmp_path, travel, tools_dir, effects_db, db=db) as proc,
        GatewayClient(proc.target, "alice-demo-token", timeout_s=30) as c,
    ):
        c.start_run(run_id=run_id)
        c.submit_calls(run_id, "t1", tool_call("c1", "get_weather", WEATHER))
        db.unlink()
        err = refused_turn(c, run_id, "t2")
        assert (err.grpc_status, error_code(err)) == ("UNAVAILABLE", "store_unavailable"), (
            err.message
        )
        assert "t2-c" not in str(travel.stats()["requests"])
        wait_for_health(proc.target, NOT_SERVING)
        wait_for_health(proc.target, NOT_SERVING, service="")
        with pytest.raises(RequestError) as info:
            c.start_run(run_id=run_id + "-2")
        assert error_code(info.value) == "store_unavailable"


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(disk: Path) -> Path:
    """Fill the filesystem to the last byte; answers the filler file."""
    filler = disk / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT)
    try:
        for size in (65536, 4096, 1):
            try:
                while os.write(fd, b"\0" * size):
                    pass
            except OSError:
                continue
    finally:
        os.close(fd)
    return filler


@pytest.fixture
def disk_sidecar(
    small_disk: Path, tmp_path: Path, travel: TravelService, tools_dir: Path, effects_db: Path
) -> Iterator[SidecarProcess]:
    with own_sidecar(
        tmp_path,
        travel,
        tools_dir,
        effects_db,
        db=small_disk / "cg.db",
        extra=("--db-min-free-bytes", str(1024 * 1024)),
    ) as proc:
        yield proc


def test_a_full_disk_is_not_serving_and_refuses_turns(
    disk_sidecar: SidecarProcess, small_disk: Path, run_id: str, travel: TravelService
) -> None:
    travel.reset()
    with GatewayClient(disk_sidecar.target, "alice-demo-token", timeout_s=30) as c:
        c.start_run(run_id=run_id)
        wait_for_health(disk_sidecar.target, SERVING)
        filler = fill(small_disk)
        err = refused_turn(c, run_id, "t1")
        assert (err.grpc_status, error_code(err)) == ("UNAVAILABLE", "store_unavailable"), (
            err.message
        )
        assert travel.stats()["weather"] == 0
        wait_for_health(disk_sidecar.target, NOT_SERVING)
        filler.unlink()
        wait_for_health(disk_sidecar.target, SERVING)
        out = c.submit_calls(run_id, "t1", tool_call("t1-c", "get_weather", WEATHER))
        assert [r.status for r in out.results] == [pb.CALL_STATUS_SUCCEEDED]


def test_a_disk_that_fills_mid_turn_gets_a_truthful_answer(
    disk_sidecar: SidecarProcess, small_disk: Path, run_id: str, travel: TravelService
) -> None:
    travel.reset()
    travel.control(weather={"delay_s": 3.0, "times": 1})
    answer: dict[str, object] = {}
    with GatewayClient(disk_sidecar.target, "alice-demo-token", timeout_s=30) as c:
        c.start_run(run_id=run_id)

        def submit() -> None:
            try:
                answer["outcome"] = c.submit_calls(
                    run_id, "t1", tool_call("in-flight", "get_weather", WEATHER)
                )
            except RequestError as err:
                answer["error"] = err

        worker = threading.Thread(target=submit)
        worker.start()
        assert travel.wait_for("weather", 1, timeout_s=20)
        filler = fill(small_disk)
        worker.join(60)
        err = answer.get("error")
        assert isinstance(err, RequestError), answer
        assert err.grpc_status == "UNAVAILABLE"
        assert error_code(err) == "results_not_recorded"
        assert "in-flight" in (err.message or "") and "ResumeRun" in (err.message or "")
        os.unlink(filler)
        wait_for_health(disk_sidecar.target, SERVING)
        out = c.resume_run(run_id)
        (res,) = out.results
        assert res.call_id == "in-flight" and res.status == pb.CALL_STATUS_SUCCEEDED
        assert res.execution_count == 2 and travel.stats()["weather"] == 2
        assert out.next == pb.NEXT_ACTION_CONTINUE
