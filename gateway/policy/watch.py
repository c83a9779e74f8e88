"""Watching `--policies` and reloading it: a cheap periodic scan, a quiet time, SIGHUP.

Every `interval_s` the directory is scanned (path, size, modification and change times, inode
of each policy and data file; hidden files skipped). A change is loaded once the scan has shown
the same files for `quiet_s`, so an editor's save (write a temporary file and rename it over
the old one; or truncate, then write) is read whole: a scan in the middle of a save sees a
different set than the one after it, and the files are scanned again after they are read; if
they changed while being read, nothing is decided and the new state is waited for. A set
rejected while a slow writer was still writing is replaced as soon as the full write lands
(the rejection does not stick). `request()` (SIGHUP) reloads at once, without waiting.

Loading and checking run in a worker thread (the target's `prepare`); only the final step (an
embedded engine's build and swap, or a push to OPA) runs on the event loop, so decisions keep
flowing during a reload.
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

from gateway.observe.hooks import OFF, Metrics
from gateway.policy.bundle import DATA_FILE_NAMES, PolicyConfigError
from gateway.policy.reload import RejectedReload, ReloadTarget

log = logging.getLogger("callgate.policy")

DEFAULT_INTERVAL_S = 0.25
DEFAULT_QUIET_S = 0.25

FileState = tuple[str, int, int, int, int]  # path, size, mtime_ns, ctime_ns, inode


@dataclass(frozen=True)
class DirectoryState:
    files: tuple[FileState, ...]
    exists: bool = True


def directory_state(root: Path) -> DirectoryState:
    """The policy and data files below root, as stat sees them now."""
    if not root.is_dir():
        return DirectoryState((), exists=False)
    found: list[FileState] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in filenames:
            if name.startswith(".") or not (name.endswith(".rego") or name in DATA_FILE_NAMES):
                continue
            path = os.path.join(dirpath, name)
            try:
                st = os.stat(path)
            except OSError:  # removed between listing and stat: the next scan tells
                continue
            found.append((path, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino))
    return DirectoryState(tuple(sorted(found)))


class ChangeDetector:
    """Decides when a changed directory has gone quiet (pure: time is passed in)."""

    def __init__(self, loaded: DirectoryState, quiet_s: float) -> None:
        self.loaded = loaded
        self.quiet_s = quiet_s
        self._pending: DirectoryState | None = None
        self._since = 0.0

    def ready(self, current: DirectoryState, now: float) -> bool:
        """True when current differs from what was last loaded and has not changed for
        quiet_s."""
        if current == self.loaded:
            self._pending = None
            return False
        if current != self._pending:
            self._pending, self._since = current, now
            return False
        return now - self._since >= self.quiet_s

    @property
    def pending(self) -> bool:
        """A change has been seen and is waiting to go quiet."""
        return self._pending is not None

    def done(self, state: DirectoryState) -> None:
        """state was loaded (or rejected): wait for the next change."""
        self.loaded = state
        self._pending = None


@dataclass(frozen=True)
class ReloadResult:
    outcome: str  # installed | unchanged | rejected | retry
    revision: str = ""  # the revision serving afterwards
    rejection: RejectedReload | None = None
    previous: str = ""  # installed: the revision it replaced
    news: bool = False  # worth recording: a revision installed, or a rejection not seen before


class PolicyReloader:
    """Keeps an engine serving the newest good revision of a policy directory."""

    def __init__(
        self,
        engine: ReloadTarget,
        directory: Path,
        prefix: str,
        *,
        require_tests: bool = False,
        interval_s: float = DEFAULT_INTERVAL_S,
        quiet_s: float = DEFAULT_QUIET_S,
        on_change: Callable[[], None] | None = None,
        on_news: Callable[[ReloadResult], Awaitable[None]] | None = None,
        clock: Callable[[], float] = time.monotonic,
        metrics: Metrics = OFF.metrics,
    ) -> None:
        self.engine = engine
        self.metrics = metrics  # counts each reload by its outcome
        self.directory = Path(directory)
        self.prefix = prefix
        self.require_tests = require_tests
        self.interval_s = interval_s
        self.on_change = on_change
        self.on_news = on_news  # e.g. an audit record of each reload and distinct rejection
        self.clock = clock
        self.detector = ChangeDetector(directory_state(self.directory), quiet_s)
        self._forced = asyncio.Event()
        self._lock = asyncio.Lock()
        self._last_logged = ""

    def request(self) -> None:
        """Reload now (SIGHUP), whether or not the files look changed."""
        self._forced.set()

    async def run(self) -> None:
        """Scan and reload until cancelled (interval 0: only on request)."""
        while True:
            forced = await self._wait()
            try:
                await self.check(forced=forced)
            except Exception:  # a reload bug must not stop the watcher or the sidecar
                log.exception(
                    "policy reload failed unexpectedly; still serving %s", self.engine.revision
                )

    async def _wait(self) -> bool:
        timeout = self.interval_s if self.interval_s > 0 else None
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):  # (no task per wait, as wait_for makes)
                await self._forced.wait()
        forced = self._forced.is_set()
        self._forced.clear()
        return forced

    async def check(self, *, forced: bool = False) -> ReloadResult | None:
        """One scan; a reload when forced or when a change has gone quiet."""
        async with self._lock:
            before = await asyncio.to_thread(directory_state, self.directory)
            if not forced and not self.detector.ready(before, self.clock()):
                return None
            result = await self.reload(before)
            if result.outcome != "retry":
                self.metrics.policy_reload(result.outcome)
            if result.news and self.on_news is not None:
                await self.on_news(result)
            return result

    async def reload(self, before: DirectoryState) -> ReloadResult:
        """Load the directory as it is now; `before` is the scan taken before reading it (the
        read counts only if the files still look the same afterwards)."""
        rejection: RejectedReload | None = None
        bundle = None
        try:
            bundle = await asyncio.to_thread(
                self.engine.prepare, self.directory, self.prefix, require_tests=self.require_tests
            )
        except PolicyConfigError as exc:
            rejection = RejectedReload.of(exc)
        after = await asyncio.to_thread(directory_state, self.directory)
        if after != before:  # written to while being read: decide on the files once quiet
            return ReloadResult("retry")
        self.detector.done(after)
        if bundle is None:
            assert rejection is not None
            return self._rejected(rejection)
        if bundle.revision == self.engine.revision:
            changed = self.engine.last_rejected is not None
            self.engine.accept_unchanged()
            self._notify(changed)
            return ReloadResult("unchanged", revision=bundle.revision)
        previous = self.engine.revision
        try:
            await self.engine.load(bundle, self.prefix)
        except PolicyConfigError as exc:
            return self._rejected(RejectedReload.of(exc))
        self._last_logged = ""
        log.info("policy reloaded: revision %s (was %s)", bundle.revision, previous)
        self._notify(True)
        return ReloadResult("installed", revision=bundle.revision, previous=previous, news=True)

    def _rejected(self, rejection: RejectedReload) -> ReloadResult:
        self.engine.reject(rejection)
        problems = [p.message for p in rejection.problems] or [rejection.message]
        key = "\n".join(problems)
        news = key != self._last_logged  # logged once per distinct set of problems
        if news:
            self._last_logged = key
            log.error(
                "policy reload rejected, still serving %s: %s", self.engine.revision, problems[0]
            )
            for number, problem in enumerate(problems[1:], start=2):
                log.error("  the same reload, problem %d of %d: %s", number, len(problems), problem)
        self._notify(True)
        return ReloadResult(
            "rejected", revision=self.engine.revision, rejection=rejection, news=news
        )

    def _notify(self, changed: bool) -> None:
        if changed and self.on_change is not None:
            self.on_change()
