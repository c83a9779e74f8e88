"""Child processes the benchmark drives: started with the venv's Python, ready when they print
a known line, stopped with SIGTERM. Also reads a process's memory and CPU time from /proc."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

ROOT = Path(__file__).resolve().parent.parent


class ChildFailed(RuntimeError):
    pass


class Child:
    """`python ARGS` in a child process; `start()` answers the rest of its ready line."""

    def __init__(
        self,
        name: str,
        args: Sequence[str],
        ready_prefix: str,
        env: dict[str, str] | None = None,
        ready_timeout_s: float = 30.0,
    ) -> None:
        self.name = name
        self.args = [sys.executable, *args]
        self.ready_prefix = ready_prefix
        self.env = {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": str(ROOT), **(env or {})}
        self.ready_timeout_s = ready_timeout_s
        self.proc: subprocess.Popen[str] | None = None
        self.lines: list[str] = []
        self.ready_value = ""
        self._ready = threading.Event()
        self._reader: threading.Thread | None = None

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def start(self) -> str:
        self.proc = subprocess.Popen(
            self.args,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=self.env,
            cwd=ROOT,
        )
        self._reader = threading.Thread(target=self._read, name=f"{self.name}-output", daemon=True)
        self._reader.start()
        if not self._ready.wait(self.ready_timeout_s) or not self.ready_value:
            self.stop()
            raise ChildFailed(f"{self.name} did not become ready:\n{''.join(self.lines)}")
        return self.ready_value

    def _read(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line)
            if line.startswith(self.ready_prefix) and not self.ready_value:
                self.ready_value = line.removeprefix(self.ready_prefix).strip()
                self._ready.set()
        self._ready.set()

    def stop(self, timeout_s: float = 30.0) -> int:
        if self.proc is None:
            return 0
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = self.proc.wait()
        if self._reader is not None:
            self._reader.join(timeout=timeout_s)
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        return code

    def __enter__(self) -> Child:
        self.start()
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def travel_service() -> Child:
    """The example HTTP tool service (`examples.travel.service`) on a free loopback port; its
    ready value is its base URL."""
    return Child(
        "travel service",
        ["-m", "examples.travel.service", "--host", "127.0.0.1", "--port", "0", "--quiet"],
        "travel service listening on ",
    )


@dataclass(frozen=True)
class Memory:
    hwm_kib: int  # VmHWM: peak resident set size
    rss_kib: int  # VmRSS: resident set size now


def memory(pid: int) -> Memory:
    fields: dict[str, int] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmHWM", "VmRSS"):
            fields[key] = int(value.split()[0])
    return Memory(hwm_kib=fields["VmHWM"], rss_kib=fields["VmRSS"])


_TICKS = os.sysconf("SC_CLK_TCK")


def _stat_cpu(stat: str) -> float:
    """User + system CPU seconds of a /proc stat line (a process's or one thread's)."""
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / _TICKS  # utime, stime


def cpu_seconds(pid: int) -> float:
    """User + system CPU time the process has used so far (all its threads)."""
    return _stat_cpu(Path(f"/proc/{pid}/stat").read_text())


THREAD_KINDS = ("event loop", "store", "other Python", "native")


def thread_cpu(pid: int) -> dict[str, float]:
    """CPU seconds so far of a process's threads by kind: "event loop" (the main thread),
    "store" (callgate-sqlite), "other Python" (threads Python started and did not name for the
    system, such as gRPC's poller), "native" (threads of C libraries: gRPC's core). A thread
    that has ended is no longer counted."""
    found = dict.fromkeys(THREAD_KINDS, 0.0)
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            comm = (task / "comm").read_text().strip()
            stat = (task / "stat").read_text()
        except (FileNotFoundError, ProcessLookupError):
            continue
        kind = (
            "event loop"
            if task.name == str(pid)
            else "store"
            if comm.startswith("callgate-sqlite")
            else "other Python"
            if comm.startswith("python")
            else "native"
        )
        found[kind] += _stat_cpu(stat)
    return found


def children(pid: int) -> list[int]:
    """The pids of a process's children (from every thread's `children` list)."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            found += [int(p) for p in (task / "children").read_text().split()]
        except OSError:
            continue
    return sorted(set(found))


def descendants(pid: int) -> list[int]:
    """The pids of a process's live children, their children, and so on."""
    found: list[int] = []
    stack = [pid]
    while stack:
        try:
            below = children(stack.pop())
        except OSError:  # gone meanwhile
            continue
        found += below
        stack += below
    return found


def tree_cpu_seconds(pid: int) -> float:
    """CPU time of a process and its live descendants (a supervisor and its workers)."""
    total = 0.0
    for p in (pid, *descendants(pid)):
        try:
            total += cpu_seconds(p)
        except OSError:
            continue
    return total
