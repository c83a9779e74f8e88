from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from gateway.executors.base import ExecutionContext
from gateway.model import Identity
from gateway.tools import Registry, Tool
from tests.gateway.executors import sample_tools
from tests.gateway.executors.target import Target, running_target
from tests.support.executor_tools import ToolFactory, manifest


@pytest.fixture
def ctx() -> ExecutionContext:
    return ExecutionContext(
        run_id="run-1",
        call_id="call-1",
        idempotency_key="run-1:call-1",
        identity=Identity(subject="alice", tenant="acme"),
    )


@pytest.fixture
def target() -> Iterator[Target]:
    with running_target() as t:
        yield t


@pytest.fixture(autouse=True)
def _fresh_sample_state() -> Iterator[None]:
    sample_tools.CALLS.clear()
    sample_tools.RELEASE.clear()
    yield
    sample_tools.RELEASE.set()


@pytest.fixture
async def make_tool() -> AsyncIterator[ToolFactory]:
    """Build a one-tool registry from a manifest; every registry is closed afterwards."""
    registries: list[Registry] = []

    def build(**kwargs: Any) -> Tool:
        registry = Registry.from_manifests([manifest(**kwargs)], env={})
        registries.append(registry)
        tool = registry.get(kwargs.get("name", "t"))
        assert tool is not None
        return tool

    yield build
    for registry in registries:
        await registry.aclose()
