"""`python -m bench.runner_cpu`: the runner's own cost per request, without gRPC.

    .venv/bin/python -m bench.runner_cpu [--rpc authorize|turn]... [--concurrency N]...
                                         [--requests N] [--rounds N] [--profile DIR]

The real `Runner`, registry, embedded policy and SQLite store in this process, as `callgate
serve` builds them (`bench/inproc.py`), answer new-argument Authorize requests (one
get_train_status call with a date no request had before, as `make bench`'s headline scenario)
or two-read SubmitTurns (executed over HTTP against the example travel service, started as a
child process), N at a time. Each round reports the process's CPU time per request (every
thread of it: the event loop's and the store's) and the wall time per request; the best and
the median round are what to compare, since the machine's other work lands on some rounds.
`--profile DIR` profiles one more round of each with cProfile and writes
`DIR/<rpc>-<concurrency>.prof` (pstats), which slows that round severalfold.

CPU time moves by several percent between runs on this shared machine: compare variants
alternated in one session, or count instructions (`make bench-instructions`).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import itertools
import json
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import nullcontext
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from bench.inproc import ALICE, TRAIN, InProcess, in_process, sqlite_opener
from bench.procs import Child, travel_service
from bench.workloads import FIRST_DAY
from gateway.model import ToolCall, Verdict
from gateway.run.authorize import Authorizer

RPCS = ("authorize", "turn")
WARM_UP = 200  # requests before the measured rounds


@dataclass(frozen=True)
class Rounds:
    rpc: str
    concurrency: int
    requests: int  # per round
    cpu_us: list[float]  # CPU time per request, each round
    wall_us: list[float]

    def line(self) -> str:
        return (
            f"{self.rpc:<10} {self.concurrency:>11}  {min(self.cpu_us):8.0f}  "
            f"{statistics.median(self.cpu_us):10.0f}  {min(self.wall_us):9.0f}  "
            f"{statistics.median(self.wall_us):11.0f}"
        )


HEADER = "rpc        in parallel  best CPU  median CPU  best wall  median wall   (µs per request)"


def _authorize(proc: InProcess, dates: Iterator[int]) -> Callable[[int, int], Awaitable[None]]:
    authorizer = Authorizer(proc.runner)

    async def one(worker: int, seq: int) -> None:
        # a date no request of the run had (the sidecar remembers what it has seen)
        args = json.dumps({**TRAIN, "date": (FIRST_DAY + timedelta(days=next(dates))).isoformat()})
        call = ToolCall(f"c{worker}_{seq}", "get_train_status", args)
        (found,) = await authorizer.authorize(ALICE, "", [call])
        if found.decision.verdict != Verdict.ALLOW:
            raise RuntimeError(f"Authorize answered {found}")

    return one


async def _turns(proc: InProcess, concurrency: int) -> Callable[[int, int], Awaitable[None]]:
    runs = [f"runner-cpu-{concurrency}-{i}" for i in range(concurrency)]
    for run in runs:
        await proc.start_run(run)

    async def one(worker: int, seq: int) -> None:
        await proc.turn(runs[worker], f"turn_{seq}")

    return one


async def measure(
    proc: InProcess,
    rpc: str,
    concurrency: int,
    requests: int,
    rounds: int,
    profile: Path | None,
    dates: Iterator[int],
) -> Rounds:
    one = _authorize(proc, dates) if rpc == "authorize" else await _turns(proc, concurrency)
    each = max(1, requests // concurrency)
    seq = [0] * concurrency

    async def worker(index: int, count: int) -> None:
        for _ in range(count):
            seq[index] += 1
            await one(index, seq[index])

    async def round_of(count: int) -> None:
        await asyncio.gather(*(worker(i, count) for i in range(concurrency)))

    await round_of(max(1, WARM_UP // concurrency))
    cpu, wall = [], []
    for _ in range(rounds):
        c, w = time.process_time(), time.perf_counter()
        await round_of(each)
        done = each * concurrency
        cpu.append((time.process_time() - c) / done * 1e6)
        wall.append((time.perf_counter() - w) / done * 1e6)
    if profile is not None:
        profiler = cProfile.Profile()
        with profiler:
            await round_of(each)
        profiler.dump_stats(profile / f"{rpc}-{concurrency}.prof")
    return Rounds(rpc, concurrency, each * concurrency, cpu, wall)


async def run(ns: argparse.Namespace) -> list[Rounds]:
    travel = travel_service() if "turn" in ns.rpc else nullcontext()
    found = []
    with tempfile.TemporaryDirectory(prefix="callgate-runner-cpu-") as tmp, travel as child:
        url = child.ready_value if isinstance(child, Child) else "http://127.0.0.1:9"

        dates = itertools.count()
        async with in_process(sqlite_opener(Path(tmp) / "runner.db"), url) as proc:
            for rpc in ns.rpc:
                for concurrency in ns.concurrency:
                    found.append(
                        await measure(
                            proc, rpc, concurrency, ns.requests, ns.rounds, ns.profile, dates
                        )
                    )
                    print(found[-1].line(), flush=True)
    return found


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rpc", action="append", choices=RPCS, help="default: both")
    parser.add_argument("--concurrency", action="append", type=int, help="default: 1 and 8")
    parser.add_argument("--requests", type=int, default=4000, help="per round (default 4000)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--profile", type=Path, help="write a cProfile of one more round here")
    ns = parser.parse_args(argv)
    ns.rpc = ns.rpc or list(RPCS)
    ns.concurrency = ns.concurrency or [1, 8]
    if any(c < 1 for c in ns.concurrency) or ns.requests < 1 or ns.rounds < 1:
        parser.error("--concurrency, --requests and --rounds must be at least 1")
    if ns.profile is not None:
        ns.profile.mkdir(parents=True, exist_ok=True)
    print(HEADER, flush=True)
    asyncio.run(run(ns))


if __name__ == "__main__":
    main()
