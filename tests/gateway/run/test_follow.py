"""WatchRun's footprint: a watcher that goes away leaves no subscription and no task behind.

The sidecar runs in this test's event loop (the real servicer, store and gRPC server on a
loopback port), so its store and tasks can be inspected while clients come and go.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import grpc
import pytest

from gateway import pb
from gateway.service.app import Sidecar
from gateway.service.config import ServeConfig
from tests.support.paths import AUTH, POLICIES, NewDb

ALICE = [("authorization", "Bearer alice-demo-token")]


@pytest.fixture
async def sidecar(new_db: NewDb, tools_dir: Path, tmp_path: Path) -> AsyncIterator[Sidecar]:
    running = Sidecar(
        ServeConfig(
            listen="127.0.0.1:0",
            tools=tools_dir,
            policies=POLICIES,
            db=new_db(),
            auth=AUTH,
            audit_key_file=tmp_path / "a.key",
        )
    )
    await running.start()
    yield running
    await running.stop(0)


async def until(condition: Callable[[], bool], timeout_s: float = 10) -> None:
    async with asyncio.timeout(timeout_s):
        while not condition():
            await asyncio.sleep(0.01)


async def test_a_watcher_that_disconnects_leaves_nothing_behind(sidecar: Sidecar) -> None:
    store = sidecar.store
    assert store is not None
    async with grpc.aio.insecure_channel(sidecar.bound) as channel:
        stub = pb.ToolGatewayStub(channel)
        await stub.StartRun(pb.StartRunRequest(run_id="r1"), metadata=ALICE)
        idle = len(asyncio.all_tasks())
        for _ in range(3):
            calls = [
                stub.WatchRun(pb.WatchRunRequest(run_id="r1"), metadata=ALICE) for _ in range(4)
            ]
            for call in calls:
                first = await call.read()
                assert first.run_id == "r1" and first.next == pb.NEXT_ACTION_CONTINUE
            assert store.watchers() == 4
            for call in calls:
                call.cancel()
            await until(lambda: store.watchers() == 0)
            await until(lambda: len(asyncio.all_tasks()) <= idle)


async def test_shutting_down_ends_every_watch(sidecar: Sidecar) -> None:
    async with grpc.aio.insecure_channel(sidecar.bound) as channel:
        stub = pb.ToolGatewayStub(channel)
        await stub.StartRun(pb.StartRunRequest(run_id="r1"), metadata=ALICE)
        call = stub.WatchRun(pb.WatchRunRequest(run_id="r1"), metadata=ALICE)
        await call.read()
        stopping = asyncio.create_task(sidecar.stop(grace=30))
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await call.read()
        assert err.value.code() == grpc.StatusCode.UNAVAILABLE
        async with asyncio.timeout(10):  # the watch ended at once, not after the grace
            await stopping
