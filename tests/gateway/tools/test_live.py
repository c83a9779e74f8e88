"""The live registry and the `--tools` reloader, over real manifest files."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import yaml

from gateway.service.tools_reload import (
    SCAN_SHARE,
    ToolsReloader,
    ToolsReloadResult,
    manifest_state,
)
from gateway.tools import Registry
from gateway.tools.live import LiveRegistry, RejectedTools, pinned
from tests.support.manifests import base, write


def _load(directory: Path) -> Registry:
    return Registry.load(directory, env={})


def test_the_revision_is_the_canonical_manifests(tmp_path: Path) -> None:
    write(tmp_path, "reserve.yaml", base())
    first = _load(tmp_path).revision
    assert first.startswith("sha256:") and len(first) == len("sha256:") + 16
    # the same tool written otherwise (JSON, other key order): the same revision
    (tmp_path / "reserve.yaml").unlink()
    write(tmp_path, "other.json", dict(reversed(list(base().items()))))
    assert _load(tmp_path).revision == first
    write(tmp_path, "other.json", base(description="Reserve two seats."))
    assert _load(tmp_path).revision != first


def test_a_pinned_request_keeps_its_snapshot_across_a_reload(tmp_path: Path) -> None:
    write(tmp_path, "reserve.yaml", base())
    live = LiveRegistry(_load(tmp_path))
    old = live.revision
    write(tmp_path, "reserve.yaml", base(name="book", description="Book a seat."))
    with pinned(live):
        live.install(_load(tmp_path))
        assert live.get("reserve") is not None and live.get("book") is None
        assert live.revision == old and [t.name for t in live] == ["reserve"]
    assert live.get("reserve") is None and live.get("book") is not None
    assert live.revision != old and "book" in live and len(live) == 1


def test_a_rejection_names_the_file_and_the_line(tmp_path: Path) -> None:
    text = (
        f"{tmp_path}/a.yaml: invalid YAML: expected ',' or ']' (line 6, column 13)\n"
        f"{tmp_path}/b.yaml: effect: Input should be 'read' or 'write'"
    )
    rejected = RejectedTools.of(text, str(tmp_path))
    assert (rejected.file, rejected.line, rejected.column) == (f"{tmp_path}/a.yaml", 6, 13)
    assert [(p.file, p.line) for p in rejected.problems] == [
        (f"{tmp_path}/a.yaml", 6),
        (f"{tmp_path}/b.yaml", None),
    ]
    assert rejected.message == text.splitlines()[0]


def test_the_reloader_installs_rejects_once_and_recovers(tmp_path: Path) -> None:
    write(tmp_path, "reserve.yaml", base())
    live = LiveRegistry(_load(tmp_path))
    good = live.revision
    seen: list[ToolsReloadResult] = []

    async def record(result: ToolsReloadResult) -> None:
        seen.append(result)

    async def go() -> None:
        reloader = ToolsReloader(live, tmp_path, _load, interval_s=0, on_result=record)
        (tmp_path / "reserve.yaml").write_text(yaml.safe_dump(base(effect="sometimes")))
        for _ in range(2):  # the same problem twice: news once
            await reloader.check(forced=True)
        assert live.revision == good and live.last_rejected is not None
        assert live.last_rejected.file == str(tmp_path / "reserve.yaml")
        write(tmp_path, "reserve.yaml", base())
        await reloader.check(forced=True)  # back to the serving set
        assert live.last_rejected is None and live.revision == good
        write(tmp_path, "reserve.yaml", base(version="2.0.0"))
        await reloader.check(forced=True)
        await live.aclose()

    asyncio.run(go())
    assert [(r.outcome, r.news) for r in seen] == [
        ("rejected", True),
        ("rejected", False),
        ("unchanged", False),
        ("installed", True),
    ]
    assert seen[-1].previous == good and seen[-1].revision == live.revision != good


def test_a_directory_that_disappears_is_rejected_not_a_crash(tmp_path: Path) -> None:
    tools = tmp_path / "tools"
    tools.mkdir()
    write(tools, "reserve.yaml", base())
    live = LiveRegistry(_load(tools))

    async def go() -> ToolsReloadResult | None:
        reloader = ToolsReloader(live, tools, _load, interval_s=0)
        (tools / "reserve.yaml").unlink()
        tools.rmdir()
        return await reloader.check(forced=True)

    result = asyncio.run(go())
    assert result is not None and result.outcome == "rejected"
    assert live.get("reserve") is not None
    assert live.last_rejected is not None and "does not exist" in live.last_rejected.message
    assert not manifest_state(tools).exists


def test_the_wait_between_scans_stretches_with_what_a_scan_costs(tmp_path: Path) -> None:
    """A directory whose scan takes long (many manifests) is scanned at most 1/SCAN_SHARE of
    a core's time, by the scan's own CPU time; a quick one at the interval asked for."""
    write(tmp_path, "reserve.yaml", base())
    live = LiveRegistry(_load(tmp_path))
    # the scanning thread's CPU clock, read before and after each scan: the first scan takes
    # 1 ms of CPU, the second 50 ms
    cpu = iter([0.0, 0.001, 10.0, 10.05])

    async def go() -> list[float | None]:
        reloader = ToolsReloader(
            live, tmp_path, _load, interval_s=0.25, clock=lambda: 0.0, cpu_clock=lambda: next(cpu)
        )
        waits = [reloader.next_wait()]
        await reloader.check()
        waits.append(reloader.next_wait())
        await reloader.check()
        waits.append(reloader.next_wait())
        waits.append(ToolsReloader(live, tmp_path, _load, interval_s=0).next_wait())
        await live.aclose()
        return waits

    assert asyncio.run(go()) == [0.25, 0.25, pytest.approx(SCAN_SHARE * 0.05), None]


def test_a_seen_change_is_looked_at_again_once_it_can_be_quiet(tmp_path: Path) -> None:
    """However long the wait between scans has stretched, a scan that sees a change is
    followed by the next after the quiet time, which loads it: one stretched wait per edit,
    not two. Then the waits stretch again."""
    write(tmp_path, "reserve.yaml", base())
    live = LiveRegistry(_load(tmp_path))
    now = [0.0]
    cpu = iter([0.0, 0.1, 1.0, 1.1, 2.0, 2.1])  # each scan takes 0.1 s of CPU

    async def go() -> list[float | None]:
        reloader = ToolsReloader(
            live,
            tmp_path,
            _load,
            interval_s=0.25,
            quiet_s=0.5,
            clock=lambda: now[0],
            cpu_clock=lambda: next(cpu),
        )
        assert await reloader.check() is None  # nothing changed
        waits = [reloader.next_wait()]
        write(tmp_path, "reserve.yaml", base(version="2.0.0"))
        assert await reloader.check() is None  # seen, not quiet yet
        waits.append(reloader.next_wait())
        now[0] += 0.5
        result = await reloader.check()
        assert result is not None and result.outcome == "installed"
        waits.append(reloader.next_wait())
        await live.aclose()
        return waits

    assert asyncio.run(go()) == [
        pytest.approx(SCAN_SHARE * 0.1),
        0.5,
        pytest.approx(SCAN_SHARE * 0.1),
    ]
