"""The runner in-process: a real SQLite store in a temporary file, in-process python tools, a
scripted policy engine and a clock the test moves by hand. No subprocess, no gRPC."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from gateway.run.runner import Runner
from gateway.store.sqlite import SQLiteStore
from gateway.tools import Registry
from tests.gateway.run import tools
from tests.support.harness import FakeClock, Harness, ScriptedPolicy, manifests


@pytest.fixture(autouse=True)
def _fresh_tools() -> Iterator[None]:
    tools.SENT.clear()
    tools.APPLIED.clear()
    yield


@pytest.fixture
async def harness(tmp_path: Path) -> AsyncIterator[Harness]:
    store = await SQLiteStore.open(tmp_path / "runs.db")
    registry = Registry.from_manifests(manifests(), env={})
    policy, clock = ScriptedPolicy(), FakeClock()
    yield Harness(
        Runner(store=store, registry=registry, policy=policy, clock=clock), store, policy, clock
    )
    await registry.aclose()
    await store.close()
