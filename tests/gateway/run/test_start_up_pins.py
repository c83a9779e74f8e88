"""Start-up records the serving tools' definitions once the sidecar is listening, and only then
watches --tools for changes; a failure to record them leaves the sidecar serving and the
tools watched (each call then records its own tool's definition as it is checked).

The sidecar runs in this test's event loop (the real start-up, store and gRPC server)."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from gateway.service.app import Sidecar
from gateway.service.config import ServeConfig
from tests.support.paths import AUTH, POLICIES


async def until(condition: Callable[[], object], what: str, timeout_s: float = 20) -> None:
    try:
        async with asyncio.timeout(timeout_s):
            while not await condition():  # type: ignore[misc]
                await asyncio.sleep(0.02)
    except TimeoutError:
        raise AssertionError(f"timed out waiting for {what}") from None


@pytest.fixture
def tools(tools_dir: Path, tmp_path: Path) -> Path:
    copied = tmp_path / "tools"
    shutil.copytree(tools_dir, copied)
    return copied


def config(tools: Path, tmp_path: Path) -> ServeConfig:
    return ServeConfig(
        listen="127.0.0.1:0",
        tools=tools,
        policies=POLICIES,
        db=str(tmp_path / "runs.db"),
        auth=AUTH,
        audit_key_file=tmp_path / "a.key",
        tools_poll_interval_s=0.05,
    )


@pytest.fixture
async def started(tools: Path, tmp_path: Path) -> AsyncIterator[Sidecar]:
    sidecar = Sidecar(config(tools, tmp_path))
    await sidecar.start()
    yield sidecar
    await sidecar.stop(0)


async def test_every_tool_is_pinned_without_a_call(started: Sidecar) -> None:
    store, registry = started.store, started.registry
    assert store is not None and registry is not None
    names = {t.name for t in registry.tools()}

    async def all_pinned() -> bool:
        return set(await store.tool_pins()) == names

    await until(all_pinned, "every tool to be pinned")
    for tool in registry.tools():
        pin = (await store.tool_pins([tool.name]))[tool.name]
        assert pin.fingerprint == (await tool.definition()).fingerprint


async def test_a_failed_recording_leaves_the_tools_watched(
    tools: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def broken(self: Sidecar) -> None:
        raise RuntimeError("the store went away")

    monkeypatch.setattr(Sidecar, "_observe_pins", broken)
    sidecar = Sidecar(config(tools, tmp_path))
    await sidecar.start()
    try:
        assert sidecar.registry is not None
        before = sidecar.registry.revision
        path = tools / "get_weather.yaml"
        path.write_text(path.read_text().replace("description:", "description: (edited)", 1))

        async def reloaded() -> bool:
            assert sidecar.registry is not None
            return sidecar.registry.revision != before

        await until(reloaded, "the edited manifest to be reloaded")
    finally:
        await sidecar.stop(0)
