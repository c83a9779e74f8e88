"""Run `callgate serve` under cProfile, every thread profiled separately.

    python -m bench.profile_sidecar OUT_DIR -- serve --listen ... (the `callgate` arguments)

Each SIGUSR1 writes a snapshot of every thread's profile so far, OUT_DIR/<n>.<thread>.stats
(marshalled pstats dictionaries), and prints `profile snapshot <n> written`; exiting writes a last
one. `phase_report()` renders the difference of two snapshots per request: which components
and functions the sidecar spent its time in between them. `python -m bench.run --profile-sidecar
OUT_DIR` takes a snapshot right before and right after each measured sidecar phase.

cProfile slows Python code down severalfold: a profiled run shows where time goes, not how fast
the sidecar is. Waiting (the event loop's epoll, idle pool threads) is listed apart; SQLite's
`execute` includes the time its COMMIT waits for fsync.
"""

from __future__ import annotations

import cProfile
import marshal
import re
import signal
import sys
import threading
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from types import FrameType
from typing import Any

SNAPSHOT_DONE = "profile snapshot "
# (filename, line, function name) → (primitive calls, calls, own time, cumulative time, callers)
Key = tuple[str, int, str]
Stats = dict[Key, tuple[int, int, float, float, Any]]

# Builtins in which a thread waits rather than works.
WAITS = {
    "<method 'poll' of 'select.epoll' objects>": "event loop idle (epoll)",
    "<method 'get' of '_queue.SimpleQueue' objects>": "pool thread idle (queue)",
    "<method 'acquire' of '_thread.lock' objects>": "lock wait",
    "<method 'acquire' of '_thread.RLock' objects>": "lock wait",
}


class _Profiler:
    def __init__(self, out: Path) -> None:
        self.out = out
        self.profiles: list[tuple[str, cProfile.Profile]] = []
        self.lock = threading.Lock()
        self.taken: set[str] = set()
        self.snapshots = 0

    def add(self, thread_name: str, profile: cProfile.Profile) -> None:
        base = re.sub(r"[^A-Za-z0-9_-]+", "_", thread_name).strip("_") or "thread"
        name, n = base, 1
        with self.lock:
            while name in self.taken:
                n += 1
                name = f"{base}-{n}"
            self.taken.add(name)
            self.profiles.append((name, profile))

    def start_in_thread(self, frame: FrameType, event: str, arg: Any) -> None:
        """Installed for every new thread; replaced at its first event by its own cProfile."""
        sys.setprofile(None)
        profile = cProfile.Profile()
        self.add(threading.current_thread().name, profile)
        profile.enable()

    def snapshot(self) -> None:
        with self.lock:
            self.snapshots += 1
            n, profiles = self.snapshots, list(self.profiles)
        for name, profile in profiles:
            profile.snapshot_stats()  # reads the counters; profiling goes on
            stats: Stats = getattr(profile, "stats", {})
            (self.out / f"{n}.{name}.stats").write_bytes(marshal.dumps(stats))
        print(f"{SNAPSHOT_DONE}{n} written", flush=True)


def main(argv: list[str]) -> int:
    if len(argv) < 2 or argv[1] != "--":
        print("usage: python -m bench.profile_sidecar OUT_DIR -- serve ARGS...", file=sys.stderr)
        return 2
    out = Path(argv[0])
    out.mkdir(parents=True, exist_ok=True)
    profiler = _Profiler(out)
    from gateway.cli.main import main as callgate

    signal.signal(signal.SIGUSR1, lambda signum, frame: profiler.snapshot())
    threading.setprofile(profiler.start_in_thread)
    main_profile = cProfile.Profile()
    profiler.add("main", main_profile)
    main_profile.enable()
    try:
        return callgate(argv[2:])
    finally:
        main_profile.disable()
        profiler.snapshot()


# ---------------------------------------------------------------------- reading snapshots


def _load(out: Path, n: int) -> dict[str, Stats]:
    found: dict[str, Stats] = {}
    for path in out.glob(f"{n}.*.stats"):
        thread = path.name[len(f"{n}.") : -len(".stats")]
        found[thread] = marshal.loads(path.read_bytes())
    return found


def component(key: Key) -> str:
    """The library or module a profiled function belongs to."""
    filename, _, name = key
    if filename == "~":
        m = re.match(r"<method '[^']+' of '([A-Za-z0-9_]+)", name)
        if m:
            return m.group(1)
        m = re.match(r"<built-in method ([A-Za-z0-9_]+)\.", name)
        return m.group(1) if m else "builtins"
    path = filename.replace("\\", "/")
    for marker in ("/site-packages/", "/dist-packages/"):
        if marker in path:
            return path.split(marker, 1)[1].split("/", 1)[0].removesuffix(".py")
    if "grpc/_cython" in path or path.endswith(".pyx.pxi") or path.endswith(".pyx"):
        return "grpc"
    m = re.search(r"/(gateway|adapters|bench|examples)/(.+)\.py$", path)
    if m:
        return f"{m.group(1)}.{m.group(2).replace('/', '.')}"
    m = re.search(r"/lib/python3\.\d+/([^/]+)", path)
    if m:
        return m.group(1).removesuffix(".py")
    return Path(path).stem


def _label(key: Key) -> str:
    filename, line, name = key
    if filename == "~":
        return name
    return f"{component(key)}:{line}({name})"


def _diff(
    before: dict[str, Stats], after: dict[str, Stats]
) -> dict[str, dict[Key, tuple[int, float]]]:
    """Per thread: function → (calls, own seconds) between the two snapshots."""
    out: dict[str, dict[Key, tuple[int, float]]] = {}
    for thread, stats in after.items():
        prev = before.get(thread, {})
        rows: dict[Key, tuple[int, float]] = {}
        for key, (_, calls, own, _, _) in stats.items():
            p = prev.get(key)
            d_calls, d_own = calls - (p[1] if p else 0), own - (p[2] if p else 0.0)
            if d_calls > 0 or d_own > 1e-9:
                rows[key] = (d_calls, d_own)
        if rows:
            out[thread] = rows
    return out


def _table(header: Iterable[str], rows: list[list[str]]) -> list[str]:
    head = list(header)
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    fmt = [lambda s, w=w: s.rjust(w) for w in widths]
    fmt[-1] = lambda s, w=widths[-1]: s.ljust(w)

    def line(cells: list[str]) -> str:
        return "  ".join(f(c) for f, c in zip(fmt, cells, strict=True)).rstrip()

    return [line(head), line(["-" * w for w in widths]), *(line(r) for r in rows)]


def phase_report(
    out: Path, before: int, after: int, requests: int, title: str, top: int = 20
) -> str:
    """What the sidecar's threads spent their (profiled) time on between two snapshots."""
    per_thread = _diff(_load(out, before), _load(out, after))
    lines = [f"== {title}: sidecar profile over {requests} requests (us per request)"]
    if not per_thread or requests <= 0:
        return "\n".join([*lines, "(no samples)", ""])
    us = 1e6 / requests
    for thread, rows in sorted(
        per_thread.items(), key=lambda kv: -sum(own for _, own in kv[1].values())
    ):
        total = sum(own for _, own in rows.values())
        waits = {k: v for k, v in rows.items() if k[2] in WAITS}
        busy = total - sum(own for _, own in waits.values())
        if busy * us < 1.0:
            continue
        lines.append("")
        lines.append(
            f"thread {thread}: busy {busy * us:.0f} us/req"
            + "".join(
                f", {WAITS[k[2]]} {own * us:.0f}" for k, (_, own) in waits.items() if own * us >= 1
            )
        )
        by_part: dict[str, float] = defaultdict(float)
        for key, (_, own) in rows.items():
            if key[2] not in WAITS:
                by_part[component(key)] += own
        parts = sorted(by_part.items(), key=lambda kv: -kv[1])[:12]
        lines += [
            "  " + s
            for s in _table(
                ["us/req", "share", "component (own time)"],
                [[f"{own * us:.0f}", f"{own / busy:.0%}", name] for name, own in parts],
            )
        ]
        hot = sorted(
            ((k, v) for k, v in rows.items() if k[2] not in WAITS), key=lambda kv: -kv[1][1]
        )[:top]
        lines.append("")
        lines += [
            "  " + s
            for s in _table(
                ["us/req", "calls/req", "function (own time)"],
                [
                    [f"{own * us:.1f}", f"{calls / requests:.1f}", _label(key)]
                    for key, (calls, own) in hot
                ],
            )
        ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
