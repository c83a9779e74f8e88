"""The client harness: N concurrent asyncio worker tasks, each sending one request at a time.

A scenario keeps one `Load` for the whole benchmark and runs timed phases on it: a warm-up whose
results are dropped, then measured rounds (folded together with `Phase.add`). A worker starts no
request after a phase's deadline; requests in flight finish and count. Throughput is completed
requests over the time from each phase's start to its last completion, summed over rounds.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

# call(worker, seq): send one request and check its answer; raise on anything unexpected.
Call = Callable[[int, int], Awaitable[None]]


@dataclass
class Phase:
    latencies_s: list[float] = field(default_factory=list)
    errors: int = 0
    first_error: str = ""
    elapsed_s: float = 0.0

    @property
    def count(self) -> int:
        return len(self.latencies_s)

    @property
    def throughput(self) -> float:
        return self.count / self.elapsed_s if self.elapsed_s > 0 else 0.0

    def add(self, other: Phase) -> None:
        """Fold another measured phase of the same workload into this one."""
        self.latencies_s.extend(other.latencies_s)
        self.errors += other.errors
        self.first_error = self.first_error or other.first_error
        self.elapsed_s += other.elapsed_s

    def percentile(self, q: float) -> float:
        """Nearest-rank percentile (q in 0..100) of the latencies, in seconds."""
        if not self.latencies_s:
            return math.nan
        ordered = sorted(self.latencies_s)
        rank = max(1, math.ceil(q / 100 * len(ordered)))
        return ordered[rank - 1]


class Load:
    """`concurrency` workers sending `call`; each `run()` is one timed phase. A worker's
    sequence numbers keep rising across phases, so requests that must be unique stay unique."""

    def __init__(self, call: Call, concurrency: int) -> None:
        self.call = call
        self.concurrency = concurrency
        self.seq = [0] * concurrency

    async def run(self, duration_s: float) -> Phase:
        result = Phase()
        start = time.perf_counter()
        deadline = start + duration_s
        last_done = start

        async def worker(index: int) -> None:
            nonlocal last_done
            while time.perf_counter() < deadline:
                n = self.seq[index]
                self.seq[index] += 1
                t0 = time.perf_counter()
                try:
                    await self.call(index, n)
                except Exception as exc:  # counted and reported; the run is then invalid
                    result.errors += 1
                    if not result.first_error:
                        result.first_error = f"{type(exc).__name__}: {exc}"
                    continue
                t1 = time.perf_counter()
                result.latencies_s.append(t1 - t0)
                last_done = max(last_done, t1)

        await asyncio.gather(*(worker(i) for i in range(self.concurrency)))
        result.elapsed_s = last_done - start
        return result
