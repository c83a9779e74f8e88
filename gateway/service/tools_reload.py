"""Watching `--tools` and reloading it while the sidecar serves, as `--policies` is.

Every `interval_s` the directory's manifest files (`*.yaml`, `*.yml`, `*.json`, hidden files
skipped) are scanned by path, size, modification and change times and inode. A change is
loaded once the scan has shown the same files for `quiet_s` (an editor's save is read whole);
the files are scanned again after they are read, and a set written to while being read is
read again once quiet. `request()` (SIGHUP) reloads at once.

Scanning a directory of many manifests costs CPU in proportion to them, so the wait between
scans stretches to SCAN_SHARE times the CPU time the last scan took (its thread's, not the
wall time, which a busy sidecar stretches) when that is longer than `interval_s`: scanning
takes at most about 1/SCAN_SHARE of a core (10,000 manifests are looked at every few
seconds, not four times a second). A scan that sees a change is followed by the next once
the change could have gone quiet, so an edit waits for one stretched wait, not two.

A candidate is loaded and checked exactly as at start-up (`Registry.load`, on a worker
thread): every manifest must parse, validate and compile. A set with any problem is rejected
whole and the last good set keeps serving; `LiveRegistry.last_rejected` says which file and
what (`callgate tools status`). A good set with a new revision is swapped in atomically; one
equal to the serving revision (a file touched, a formatting change) is left as it is.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from gateway.errors import ConfigError
from gateway.policy.watch import ChangeDetector, DirectoryState, FileState
from gateway.tools.files import MANIFEST_SUFFIXES
from gateway.tools.live import LiveRegistry, RejectedTools
from gateway.tools.registry import Registry

log = logging.getLogger("callgate.tools")

SCAN_SHARE = 100  # wait at least this many times the last scan's duration between scans


def manifest_state(root: Path) -> DirectoryState:
    """The manifest files of root, as stat sees them now."""
    if not root.is_dir():
        return DirectoryState((), exists=False)
    found: list[FileState] = []
    with contextlib.suppress(OSError):
        for entry in os.scandir(root):
            name = entry.name
            if name.startswith(".") or not name.lower().endswith(MANIFEST_SUFFIXES):
                continue
            try:
                st = entry.stat()
            except OSError:  # removed between listing and stat: the next scan tells
                continue
            found.append((entry.path, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino))
    return DirectoryState(tuple(sorted(found)))


@dataclass(frozen=True)
class ToolsReloadResult:
    outcome: str  # installed | unchanged | rejected | retry
    revision: str = ""  # the revision serving afterwards
    rejection: RejectedTools | None = None
    previous: str = ""  # installed: the revision it replaced
    news: bool = False  # a set installed, or a rejection not seen before


class ToolsReloader:
    """Keeps a LiveRegistry serving the newest good set of a `--tools` directory."""

    def __init__(
        self,
        registry: LiveRegistry,
        directory: Path,
        load: Callable[[Path], Registry],
        *,
        interval_s: float,
        quiet_s: float = 0.25,
        on_result: Callable[[ToolsReloadResult], Awaitable[None]] | None = None,
        clock: Callable[[], float] = time.monotonic,
        cpu_clock: Callable[[], float] = time.thread_time,
    ) -> None:
        self.registry = registry
        self.directory = Path(directory)
        self.load = load  # what start-up did: Registry.load with its limits and audit key
        self.interval_s = interval_s
        self.on_result = on_result  # audit and metrics
        self.clock = clock
        self.cpu_clock = cpu_clock  # read in the scanning thread: the scan's own CPU time
        self.detector = ChangeDetector(manifest_state(self.directory), quiet_s)
        self._forced = asyncio.Event()
        self._lock = asyncio.Lock()
        self._last_logged = ""
        self._scan_s = 0.0  # the CPU time the last scan took (by `cpu_clock`)

    def request(self) -> None:
        """Reload now (SIGHUP), whether or not the files look changed."""
        self._forced.set()

    async def run(self) -> None:
        """Scan and reload until cancelled (interval 0: only on request)."""
        while True:
            timeout = self.next_wait()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(timeout):  # (no task per wait, as wait_for makes)
                    await self._forced.wait()
            forced = self._forced.is_set()
            self._forced.clear()
            try:
                await self.check(forced=forced)
            except Exception:  # a reload bug must not stop the watcher or the sidecar
                log.exception(
                    "tools reload failed unexpectedly; still serving %s",
                    self.registry.serving.revision,
                )

    def next_wait(self) -> float | None:
        """Seconds until the next scan (None: only on request): `interval_s`, or SCAN_SHARE
        times the last scan's CPU time when that is longer; no longer than the quiet time
        while a change is pending."""
        if self.interval_s <= 0:
            return None
        if self.detector.pending:  # a change seen: look again once it can have gone quiet
            return max(self.interval_s, self.detector.quiet_s)
        return max(self.interval_s, SCAN_SHARE * self._scan_s)

    async def check(self, *, forced: bool = False) -> ToolsReloadResult | None:
        """One scan; a reload when forced or when a change has gone quiet."""
        async with self._lock:
            before, self._scan_s = await asyncio.to_thread(self._scan)
            if not forced and not self.detector.ready(before, self.clock()):
                return None
            result = await self.reload(before)
            if result.outcome != "retry" and self.on_result is not None:
                await self.on_result(result)
            return result

    def _scan(self) -> tuple[DirectoryState, float]:
        """The directory's state and the CPU time reading it took (in the scanning thread)."""
        started = self.cpu_clock()
        state = manifest_state(self.directory)
        return state, max(0.0, self.cpu_clock() - started)

    async def reload(self, before: DirectoryState) -> ToolsReloadResult:
        candidate: Registry | None = None
        rejection: RejectedTools | None = None
        try:
            candidate = await asyncio.to_thread(self.load, self.directory)
        except ConfigError as exc:
            rejection = RejectedTools.of(str(exc), str(self.directory))
        after = await asyncio.to_thread(manifest_state, self.directory)
        if after != before:  # written to while being read: decide once quiet
            if candidate is not None:
                await candidate.aclose()
            return ToolsReloadResult("retry")
        self.detector.done(after)
        if candidate is None:
            assert rejection is not None
            return self._rejected(rejection)
        serving = self.registry.serving.revision
        if candidate.revision == serving:
            await candidate.aclose()
            self.registry.accept_unchanged()
            return ToolsReloadResult("unchanged", revision=serving)
        self.registry.install(candidate)
        self._last_logged = ""
        log.info(
            "tools reloaded: revision %s (was %s), %d tools",
            candidate.revision,
            serving,
            len(candidate),
        )
        return ToolsReloadResult(
            "installed", revision=candidate.revision, previous=serving, news=True
        )

    def _rejected(self, rejection: RejectedTools) -> ToolsReloadResult:
        self.registry.reject(rejection)
        key = "\n".join(p.message for p in rejection.problems)
        news = key != self._last_logged  # logged and audited once per distinct problem set
        if news:
            self._last_logged = key
            log.error(
                "tools reload rejected, still serving %s: %s",
                self.registry.serving.revision,
                rejection.message,
            )
        return ToolsReloadResult(
            "rejected", revision=self.registry.serving.revision, rejection=rejection, news=news
        )
