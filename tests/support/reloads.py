"""A sidecar over a policy directory a test edits, and what its health and decisions say."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from gateway import pb
from gateway.client import GatewayClient, tool_call
from gateway.testing import SidecarProcess
from tests.support.paths import AUTH
from tests.support.scenarios import WEATHER

T = TypeVar("T")

DEADLINE_S = 20.0  # generous for a loaded machine; a change is normally picked up in < 1 s


def eventually(probe: Callable[[], T | None], what: str, timeout_s: float = DEADLINE_S) -> T:
    """Poll probe until it answers something other than None, or fail after timeout_s."""
    deadline = time.monotonic() + timeout_s
    while True:
        found = probe()
        if found is not None:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


@contextmanager
def sidecar_over(
    tmp_path: Path, tools_dir: Path, policies: Path, *extra: str
) -> Iterator[tuple[SidecarProcess, GatewayClient]]:
    with (
        SidecarProcess(
            tools=tools_dir, policies=policies, db=tmp_path / "cg.db", auth=AUTH, extra_args=extra
        ) as proc,
        GatewayClient(proc.target, "alice-demo-token") as client,
    ):
        yield proc, client


def weather_decision(client: GatewayClient) -> pb.Decision:
    out = client.authorize(tool_call("w1", "get_weather", WEATHER))
    return out.decisions[0].decision


def health(target: str, service: str) -> int:
    with grpc.insecure_channel(target) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        status: int = stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=10).status
        return status


SERVING = health_pb2.HealthCheckResponse.SERVING

NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING
