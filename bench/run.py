"""`make bench`: what the sidecar costs against a bare grpc.aio echo server, and its targets.

    .venv/bin/python -m bench.run [--only PARTS] [--no-postgres] [--duration S] [--rounds N]
                                  [--warmup S] [--concurrency N] [--pair-duration S]
                                  [--no-save] [--profile-sidecar DIR]

Parts (all by default; `--only main,counts` runs some):

  main     echo, Authorize and SubmitTurn (two HTTP reads) at 8 in flight, interleaved; then
           SubmitTurn one at a time against each tool's own time asked directly over HTTP
  counts   SQL statements and commits per SubmitTurn, in-process, on SQLite and PostgreSQL
  pages    GetRun (summary + the default page) of a run with 600 turns, one at a time
  long     SubmitTurn on runs at their 10th turn vs a run at its 5,000th, one at a time
  tools    Authorize with 10 vs 10,000 tool manifests loaded (two sidecars)
  data     Authorize with 100 vs 100,000 entries in the policy data (two sidecars)
  workers  `serve --workers 1` vs `--workers 2` (when serve has the option)
  quotas   Authorize and SubmitTurn with one quota per call vs none, SQLite and PostgreSQL
  observe  Authorize and SubmitTurn with metrics on, tracing on (100% sampled), and neither
  results  SubmitTurn with the default bundle's `result` rule vs without it (bench/result_rule.py)

Child processes on 127.0.0.1: the echo server, the example travel tool service and real
`callgate serve` sidecars. Prints the report with every target met or not and writes it to
bench/results/latest.txt. Exits 0 whether or not the targets are met; non-zero only when the
benchmark itself failed (a process did not start, a request failed or answered something
unexpected). See bench/README.md.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import math
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path

import grpc
import psycopg

from bench import echo_server
from bench.audit import PG_DSN, pg_schema
from bench.counts import count_postgres, count_sqlite
from bench.inproc import PROVIDER, in_process, sqlite_opener
from bench.observe import part_observe
from bench.opa import NOT_FOUND, LiveOpa, live_opa
from bench.opa_rest import DECISION_PATH, OPA_REST, decision_input, opa_rest_call
from bench.pinning import PinnedSidecar, cores, pin
from bench.prepare import grow_runs, write_manifests, write_policy_data
from bench.procs import (
    ROOT,
    Child,
    ChildFailed,
    descendants,
    memory,
    travel_service,
    tree_cpu_seconds,
)
from bench.profile_sidecar import SNAPSHOT_DONE, phase_report
from bench.quotas import part_quotas
from bench.report import (
    MB,
    OneAtATime,
    Pair,
    Results,
    Scenario,
    StoreCounts,
    WorkersResult,
    evaluate,
    render,
)
from bench.result_rule import part_results
from bench.workloads import (
    TOOL_PATHS,
    BenchFailed,
    Workload,
    authorize_call,
    direct_tool_call,
    echo_call,
    get_run_call,
    interleaved,
    per_worker,
    start_runs,
    submit_turn_call,
)
from gateway import pb
from gateway.executors.http1 import Http1Client
from gateway.testing import SidecarFailed, SidecarProcess

RESULTS = ROOT / "bench" / "results" / "latest.txt"
PARTS = (
    "main",
    "counts",
    "pages",
    "long",
    "tools",
    "data",
    "workers",
    "observe",
    "quotas",
    "results",
)
TOOLS_DIR = ROOT / "examples" / "travel" / "tools"
POLICIES = ROOT / "policies"
AUTH = ROOT / "examples" / "auth.yaml"
COUNTED_TURNS = 20
PAGE_TURNS, DEFAULT_PAGE = 600, 50
SHORT_RUNS, SHORT_AT, LONG_AT = 40, 10, 5_000  # runs at their 10th turn, one at its 5,000th
FEW_TOOLS, MANY_TOOLS = 10, 10_000
FEW_ENTRIES, MANY_ENTRIES = 100, 100_000


class Snapshots:
    """Profiling: asks the sidecar (under bench.profile_sidecar) for a profile snapshot."""

    def __init__(self, sidecar: SidecarProcess) -> None:
        self.sidecar = sidecar
        self.taken = 0

    def take(self) -> None:
        assert self.sidecar.proc is not None
        self.taken += 1
        done = f"{SNAPSHOT_DONE}{self.taken} written"
        self.sidecar.proc.send_signal(signal.SIGUSR1)
        deadline = time.monotonic() + 60
        while not any(line.startswith(done) for line in self.sidecar.lines):
            if time.monotonic() > deadline or self.sidecar.proc.poll() is not None:
                raise BenchFailed(f"the profiled sidecar wrote no snapshot {self.taken}")
            time.sleep(0.02)


# ---------------------------------------------------------------------- shared state


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.partition(":")[2].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def _loadavg() -> str:
    return " ".join(f"{v:.2f}" for v in os.getloadavg())


def _pid(sidecar: SidecarProcess) -> int:
    assert sidecar.proc is not None
    return sidecar.proc.pid


def _unknown_cpu() -> float:
    return math.nan  # a server the benchmark did not start: its CPU time is not known


class _Channels:
    """The client's gRPC channels, and one HTTP client (OPA asked over REST)."""

    def __init__(self) -> None:
        self.open: list[grpc.aio.Channel] = []
        self.http = Http1Client()

    def __call__(self, target: str, *, own_connection: bool = False) -> grpc.aio.Channel:
        # channels to one target share a connection unless each keeps its own subchannels
        options = [("grpc.use_local_subchannel_pool", 1)] if own_connection else []
        channel = grpc.aio.insecure_channel(target, options=options)
        self.open.append(channel)
        return channel

    def stub(self, sidecar: SidecarProcess, *, own_connection: bool = False) -> pb.ToolGatewayStub:
        return pb.ToolGatewayStub(self(sidecar.target, own_connection=own_connection))

    async def close(self) -> None:
        while self.open:
            await self.open.pop().close()
        await self.http.aclose()


@dataclass
class Bench:
    """One benchmark run: its options, the travel service, and what it found so far."""

    ns: argparse.Namespace
    tmp: Path
    travel: Child
    results: Results = field(default_factory=Results)
    scenarios: list[Scenario] = field(default_factory=list)
    echo_ratios: list[Scenario] = field(default_factory=list)
    memory_rows: list[tuple[str, int, int]] = field(default_factory=list)
    sections: list[tuple[str, list[str]]] = field(default_factory=list)
    info: list[tuple[str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    profile: str = ""

    @property
    def travel_url(self) -> str:
        return self.travel.ready_value

    def sidecar(
        self,
        name: str,
        *,
        tools: Path = TOOLS_DIR,
        policies: Path = POLICIES,
        extra_args: Sequence[str] = (),
        db: Path | None = None,
    ) -> SidecarProcess:
        """A `callgate serve` with the example tools, policies and tokens, calling the travel
        service, on a fresh SQLite store (or `db`) in the temp directory."""
        kind = PinnedSidecar if self.ns.pin_cores else SidecarProcess
        return kind(
            tools=tools,
            policies=policies,
            auth=AUTH,
            db=db or self.tmp / f"{name}.db",
            env={"CALLGATE_TRAVEL_URL": self.travel_url, "PYTHONPATH": str(ROOT)},
            extra_args=extra_args,
            ready_timeout_s=600.0,
        )

    async def pair(self, workloads: Sequence[Workload]) -> list[Scenario]:
        ns = self.ns
        found = await interleaved(workloads, ns.pair_warmup, ns.pair_rounds, ns.pair_duration)
        self.scenarios += found
        for w in workloads:
            if w.warmup_errors:
                self.notes.append(f"warm-up of {w.name}: {w.warmup_errors}")
        return found


# ---------------------------------------------------------------------- main


@dataclass
class Processes:
    echo: Child
    sidecar: SidecarProcess
    reading: SidecarProcess  # the default bundle plus a rule that reads the call's date
    opa_sidecar: SidecarProcess | None
    opa: LiveOpa | None


READS_DATE = """package callgate

import rego.v1

# (bench) a rule that reads the call's date: each new date is an input never seen before
deny contains "no trains run on that date" if {
	input.call.args.date in object.get(data.callgate.config, "closed_dates", [])
}
"""


def reading_policies(into: Path) -> Path:
    """The default bundle with a rule that reads `input.call.args.date`."""
    if not into.exists():
        shutil.copytree(POLICIES, into)
        (into / "bench_dates.rego").write_text(READS_DATE)
    return into


@contextmanager
def _main_processes(b: Bench) -> Iterator[Processes]:
    echo = Child(
        "echo server", ["-m", "bench.echo_server", "--listen", "127.0.0.1:0"], echo_server.READY
    )
    with echo:
        if b.ns.pin_cores:
            pin(echo.pid, cores()[0])
        sidecar = b.sidecar("callgate")
        if b.ns.profile_sidecar is not None:  # the same `serve` arguments, under cProfile
            module = sidecar.args.index("gateway.cli")
            sidecar.args[module : module + 1] = [
                "bench.profile_sidecar",
                str(b.ns.profile_sidecar),
                "--",
            ]
        reading = b.sidecar("callgate-reads-date", policies=reading_policies(b.tmp / "dates"))
        with sidecar, reading, live_opa() as opa, _opa_sidecar(b.tmp, opa) as opa_sidecar:
            yield Processes(echo, sidecar, reading, opa_sidecar, opa)


@contextmanager
def _opa_sidecar(tmp: Path, opa: LiveOpa | None) -> Iterator[SidecarProcess | None]:
    if opa is None:
        yield None
        return
    with SidecarProcess(
        tools=TOOLS_DIR,
        policies=POLICIES,
        auth=AUTH,
        db=tmp / "callgate-opa.db",
        env={"PYTHONPATH": str(ROOT)},
        extra_args=["--engine", "opa", "--opa-url", opa.url],
    ) as sidecar:
        yield sidecar


Marks = dict[str, tuple[int, int]]  # scenario → its first and last profile snapshot


def _opa_rest(
    name: str, opa: LiveOpa, channels: _Channels, input_text: str, concurrency: int
) -> Workload:
    """OPA asked the decision over REST (`bench/opa_rest.py`); its CPU is OPA's process's, when
    the benchmark started it."""
    return Workload(
        name,
        opa_rest_call(channels.http, opa.url, input_text),
        opa.pid or 0,
        concurrency,
        server_cpu=None if opa.pid else _unknown_cpu,
    )


async def _drive_main(
    b: Bench, procs: Processes, channels: _Channels, opa_input: str
) -> tuple[list[Workload], Marks]:
    """Warm every scenario up, then measure them round by round; answers the workloads (echo,
    Authorize, SubmitTurn, and Authorize on the OPA engine when there is a live OPA) and, when
    profiling, each one's first and last snapshot."""
    ns = b.ns
    pid = _pid(procs.sidecar)
    stub = channels.stub(procs.sidecar)
    echo_w = Workload(
        "echo (bare grpc.aio)",
        echo_call(channels(procs.echo.ready_value)),
        procs.echo.pid,
        ns.concurrency,
    )
    auth_w = Workload("Authorize", authorize_call(stub), pid, ns.concurrency)
    runs = await start_runs(stub, ns.concurrency)
    turn_w = Workload(
        "SubmitTurn (2 reads)",
        submit_turn_call(stub, runs),
        pid,
        ns.concurrency,
        tools_pid=b.travel.pid,
    )
    fresh_w = Workload(
        "Authorize, new arguments each request",
        authorize_call(stub, fresh=True),
        pid,
        ns.concurrency,
    )
    read_w = Workload(
        "Authorize, new arguments the policy reads",
        authorize_call(channels.stub(procs.reading), fresh=True),
        _pid(procs.reading),
        ns.concurrency,
    )
    workloads = [echo_w, auth_w, turn_w, fresh_w, read_w]
    if procs.opa_sidecar is not None and procs.opa is not None:
        workloads += [
            _opa_rest(OPA_REST, procs.opa, channels, opa_input, ns.concurrency),
            Workload(
                "Authorize (OPA engine)",
                authorize_call(channels.stub(procs.opa_sidecar)),
                _pid(procs.opa_sidecar),
                ns.concurrency,
                tools_pid=procs.opa.pid,
            ),
        ]
    snaps = Snapshots(procs.sidecar) if ns.profile_sidecar else None
    marks: Marks = {}
    for w in workloads:
        await w.warm_up(ns.warmup)
    for _ in range(ns.rounds):
        for w in workloads:
            if snaps is None or w not in (auth_w, turn_w):
                await w.measure(ns.duration / ns.rounds)
                continue
            first = snaps.taken + 1
            await w.measure(ns.duration / ns.rounds, snaps.take, snaps.take)
            marks[w.name] = (first, snaps.taken)
    return workloads, marks


async def _one_at_a_time(b: Bench, sidecar: SidecarProcess, channels: _Channels) -> None:
    """SubmitTurn with one request in flight, interleaved with each of its two tools asked
    directly over HTTP with the same arguments: the sidecar's own share of a turn is SubmitTurn's
    p50 minus the slower tool's p50 (the two reads run at the same time)."""
    ns = b.ns
    stub = channels.stub(sidecar)
    (run,) = await start_runs(stub, 1)
    turn_w = Workload(
        "SubmitTurn (2 reads), 1 in flight",
        submit_turn_call(stub, [run]),
        _pid(sidecar),
        1,
        tools_pid=b.travel.pid,
    )
    client = Http1Client()
    try:
        tools = [
            Workload(
                f"{name} direct HTTP, 1 in flight",
                direct_tool_call(client, b.travel_url + path, body),
                b.travel.pid,
                1,
            )
            for name, (path, body) in TOOL_PATHS.items()
        ]
        found = await interleaved([turn_w, *tools], 1.0, ns.rounds, ns.sequential_duration)
    finally:
        await client.aclose()
    b.scenarios += found
    b.results.one_at_a_time = OneAtATime(
        found[0].p50_ms, {name: s.p50_ms for name, s in zip(TOOL_PATHS, found[1:], strict=True)}
    )


async def _opa_one_at_a_time(
    b: Bench, procs: Processes, channels: _Channels, opa_input: str
) -> None:
    """The new-argument Authorize and OPA asked the same decision over REST, one request in
    flight each, interleaved: the latency one agent loop sees from each."""
    if procs.opa is None:
        return
    ns = b.ns
    pair = [
        Workload(
            "Authorize, new arguments, 1 in flight",
            authorize_call(channels.stub(procs.sidecar), fresh=True),
            _pid(procs.sidecar),
            1,
        ),
        _opa_rest(f"{OPA_REST}, 1 in flight", procs.opa, channels, opa_input, 1),
    ]
    found = await interleaved(pair, 1.0, ns.rounds, ns.sequential_duration)
    b.scenarios += found
    b.results.opa_one = (found[0], found[1])


async def part_main(b: Bench) -> None:
    ns = b.ns
    print("main: the echo server, the sidecar; echo, Authorize, SubmitTurn", flush=True)
    with _main_processes(b) as procs:
        channels = _Channels()
        try:
            # the input OPA is asked with, captured once (a runner and a store of its own)
            opa_input = await decision_input() if procs.opa is not None else ""
            workloads, marks = await _drive_main(b, procs, channels, opa_input)
            if ns.profile_sidecar is None:
                await _one_at_a_time(b, procs.sidecar, channels)
                await _opa_one_at_a_time(b, procs, channels, opa_input)
            else:
                b.results.skipped["sequential"] = "not run under --profile-sidecar"
        finally:
            await channels.close()
        side_mem, echo_mem = memory(_pid(procs.sidecar)), memory(procs.echo.pid)
    echo_w, auth_w, turn_w = workloads[:3]
    main = [w.scenario() for w in workloads]
    b.scenarios[:0] = main
    b.echo_ratios = main
    b.results.echo, b.results.authorize, b.results.submit = main[:3]
    b.results.fresh, b.results.fresh_read = main[3:5]
    b.results.opa_rest = next((m for m in main if m.name == OPA_REST), None)
    if procs.opa is None:
        b.results.skipped["opa"] = NOT_FOUND.removeprefix("not measured: ")
    b.memory_rows += [
        ("sidecar (after all load of main)", side_mem.hwm_kib, side_mem.rss_kib),
        ("echo server", echo_mem.hwm_kib, echo_mem.rss_kib),
    ]
    first = turn_w.requests_before / ns.concurrency
    last = sum(turn_w.load.seq) / ns.concurrency
    b.info += [
        (
            "echo",
            "bare grpc.aio server, one generic bytes-in/bytes-out unary method, child "
            "process; payload = the Authorize request's bytes",
        ),
        (
            "Authorize",
            "one get_train_status call, valid arguments, ALLOW; no run_id; the "
            "same request every time (the targets' scenario: a repeated call, whose "
            "arguments check and decision the sidecar remembers)",
        ),
        (
            "Authorize, new arguments",
            "the same call with a date no earlier request had: its arguments are hashed and "
            "checked anew; the default bundle does not read the date, so its decision is the "
            "one the revision made for the same train and caller (the headline scenario)",
        ),
        (
            "... the policy reads",
            "the same, on a second sidecar whose bundle adds a rule that reads the date: every "
            "decision is evaluated",
        ),
        (
            "SubmitTurn",
            f"get_train_status + get_weather executed over HTTP; {ns.concurrency} "
            f"long-lived runs ({PROVIDER}, no budget limits), one per worker, a new "
            f"turn_id and call IDs per request; runs grew from ~{first:.0f} to "
            f"~{last:.0f} turns during measurement",
        ),
        (
            "Authorize (OPA engine)",
            NOT_FOUND
            if procs.opa is None
            else "the same Authorize through a second sidecar, `--engine opa --opa-policies "
            f"push`, deciding with {procs.opa.what}; its tools CPU column is OPA's process",
        ),
        (
            "OPA REST",
            NOT_FOUND
            if procs.opa is None
            else "the input callgate's policy gets for the new-argument Authorize (captured "
            "from the runner in the client's process), POSTed to that OPA's Data API "
            f"({DECISION_PATH}) on kept-alive connections, a new date each request, the "
            "bundle the OPA-engine sidecar pushed; its server CPU column is OPA's process"
            + ("" if procs.opa.pid else " (nan: an OPA the benchmark did not start)"),
        ),
    ]
    b.notes += [f"warm-up of {w.name}: {w.warmup_errors}" for w in workloads if w.warmup_errors]
    if ns.profile_sidecar is not None:
        b.profile = "\n".join(
            phase_report(ns.profile_sidecar, first_snap, last_snap, w.phase.count, w.name)
            for w in (auth_w, turn_w)
            for first_snap, last_snap in [marks[w.name]]
        )
    else:
        one = b.results.one_at_a_time
        assert one is not None
        b.sections.append(
            (
                "SubmitTurn one at a time (p50 ms)",
                [
                    f"SubmitTurn {one.submit_p50_ms:.2f}; "
                    + "; ".join(f"{t} alone {ms:.2f}" for t, ms in one.tool_p50_ms.items())
                    + f"; SubmitTurn minus the slower tool: {one.overhead_ms:.2f}"
                ],
            )
        )


# ---------------------------------------------------------------------- counts


async def part_counts(b: Bench) -> None:
    print("counts: SQL statements per SubmitTurn, in-process", flush=True)
    found = [await count_sqlite(b.tmp / "counts.db", b.travel_url, COUNTED_TURNS)]
    if b.ns.no_postgres:
        b.results.skipped["counts-postgresql"] = "--no-postgres"
    else:
        try:
            with pg_schema() as url:
                found.append(await count_postgres(url, b.travel_url, COUNTED_TURNS))
        except psycopg.OperationalError as exc:
            why = f"no PostgreSQL at {PG_DSN.split('@')[-1]} ({str(exc).splitlines()[0]})"
            b.results.skipped["counts-postgresql"] = why
    lines = []
    for c in found:
        t = c.tally
        b.results.counts.append(
            StoreCounts(
                c.store,
                c.statements,
                c.per_turn(t.begins),
                c.per_turn(t.commit_statements),
                c.commits,
                c.per_turn(t.settings),
            )
        )
        lines.append(f"{c.store:<11} {c.summary()}")
        kinds = sorted(t.kinds().items(), key=lambda kv: (-kv[1], kv[0]))
        lines += [
            f"{'':<11} {', '.join(f'{k} {n / c.turns:g}' for k, n in kinds[i : i + 5])}"
            for i in range(0, len(kinds), 5)
        ]
    b.sections.append(
        (
            "SQL statements per SubmitTurn (two HTTP reads; the real runner "
            "in-process; what they are, per turn)",
            lines,
        )
    )


# ---------------------------------------------------------------------- prepared runs


async def _prepare(b: Bench, db: Path, lengths: dict[str, int]) -> None:
    """Each run started and given one real turn by the in-process runner, then grown to its
    length by copies of that turn."""
    async with in_process(sqlite_opener(db), b.travel_url) as proc:
        for run_id in lengths:
            await proc.start_run(run_id)
            await proc.turn(run_id, "first")
    grow_runs(db, lengths)


async def part_pages(b: Bench) -> None:
    print(f"pages: GetRun of a run with {PAGE_TURNS} turns", flush=True)
    db = b.tmp / "pages.db"
    await _prepare(b, db, {"pages-run": PAGE_TURNS})
    with b.sidecar("pages", db=db) as sidecar:
        channels = _Channels()
        try:
            w = Workload(
                f"GetRun, {PAGE_TURNS}-turn run, default page, 1 in flight",
                get_run_call(channels.stub(sidecar), "pages-run", PAGE_TURNS, DEFAULT_PAGE),
                _pid(sidecar),
                1,
            )
            (found,) = await interleaved([w], 1.0, 1, b.ns.pair_duration / 2)
        finally:
            await channels.close()
    b.scenarios.append(found)
    b.results.getrun_p50_ms = found.p50_ms


async def part_long(b: Bench) -> None:
    print(f"long: SubmitTurn at turn {SHORT_AT} vs {LONG_AT}", flush=True)
    db = b.tmp / "long.db"
    short = [f"short-{i}" for i in range(SHORT_RUNS)]
    await _prepare(b, db, {**{r: SHORT_AT - 1 for r in short}, "long-run": LONG_AT - 1})
    with b.sidecar("long", db=db) as sidecar:
        channels = _Channels()
        try:
            stub = channels.stub(sidecar)
            pid = _pid(sidecar)
            small, large = await b.pair(
                [
                    Workload(
                        f"SubmitTurn, {SHORT_RUNS} runs from turn {SHORT_AT}, 1 in flight",
                        submit_turn_call(stub, short, per_worker=False),
                        pid,
                        1,
                        tools_pid=b.travel.pid,
                    ),
                    Workload(
                        f"SubmitTurn, a run from turn {LONG_AT:,}, 1 in flight",
                        submit_turn_call(stub, ["long-run"]),
                        pid,
                        1,
                        tools_pid=b.travel.pid,
                    ),
                ]
            )
        finally:
            await channels.close()
    b.results.long = Pair(small, large)


# ---------------------------------------------------------------------- flat cost


@asynccontextmanager
async def _two_sidecars(
    b: Bench, names: tuple[str, str], small: SidecarProcess, large: SidecarProcess
) -> AsyncIterator[tuple[Workload, Workload]]:
    """Two sidecars (started one after the other), and an Authorize workload on each."""
    channels = _Channels()
    started = time.perf_counter()
    with small:
        ready_small = time.perf_counter() - started
        started = time.perf_counter()
        with large:
            ready_large = time.perf_counter() - started
            b.notes.append(
                f"sidecar ready in {ready_small:.1f} s ({names[0]}), "
                f"{ready_large:.1f} s ({names[1]})"
            )
            try:
                # new arguments each request: every decision is evaluated against the data
                yield (
                    Workload(
                        names[0],
                        authorize_call(channels.stub(small), fresh=True),
                        _pid(small),
                        b.ns.concurrency,
                    ),
                    Workload(
                        names[1],
                        authorize_call(channels.stub(large), fresh=True),
                        _pid(large),
                        b.ns.concurrency,
                    ),
                )
            finally:
                await channels.close()
            b.memory_rows.append((f"sidecar, {names[1]}", *_hwm_rss(_pid(large))))


def _hwm_rss(pid: int) -> tuple[int, int]:
    m = memory(pid)
    return m.hwm_kib, m.rss_kib


async def part_tools(b: Bench) -> None:
    print(f"tools: Authorize with {FEW_TOOLS} vs {MANY_TOOLS:,} manifests", flush=True)
    few, many = b.tmp / "tools-few", b.tmp / "tools-many"
    started = time.perf_counter()
    write_manifests(few, FEW_TOOLS - 2)
    write_manifests(many, MANY_TOOLS - 2)
    b.notes.append(f"{MANY_TOOLS:,} manifests written in {time.perf_counter() - started:.1f} s")
    names = (f"Authorize, {FEW_TOOLS} tools", f"Authorize, {MANY_TOOLS:,} tools")
    async with _two_sidecars(
        b, names, b.sidecar("tools-few", tools=few), b.sidecar("tools-many", tools=many)
    ) as pair:
        small, large = await b.pair(pair)
    b.results.tools = Pair(small, large)


async def part_data(b: Bench) -> None:
    print(f"data: Authorize with {FEW_ENTRIES} vs {MANY_ENTRIES:,} policy data entries", flush=True)
    few = write_policy_data(b.tmp / "policies-few", FEW_ENTRIES)
    many = write_policy_data(b.tmp / "policies-many", MANY_ENTRIES)
    names = (
        f"Authorize, {FEW_ENTRIES} tenants in data",
        f"Authorize, {MANY_ENTRIES:,} tenants in data",
    )
    async with _two_sidecars(
        b, names, b.sidecar("data-few", policies=few), b.sidecar("data-many", policies=many)
    ) as pair:
        small, large = await b.pair(pair)
    b.results.data = Pair(small, large)


# ---------------------------------------------------------------------- workers


def serve_has_workers() -> bool:
    out = subprocess.run(
        [sys.executable, "-m", "gateway.cli", "serve", "--help"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    return "--workers" in out.stdout


def _workers_of(pid: int) -> list[int]:
    """The serving processes: a supervisor's descendants but multiprocessing's helper
    processes (its resource tracker, its fork server), or the process itself."""
    return [p for p in descendants(pid) if not _helper(p)] or [pid]


def _helper(pid: int) -> bool:
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return True
    return b"resource_tracker" in cmdline or b"forkserver" in cmdline


async def part_workers(b: Bench) -> None:
    if not serve_has_workers():
        b.results.skipped["workers"] = "serve has no --workers"
        return
    print("workers: --workers 1 vs --workers 2", flush=True)
    rates: dict[str, tuple[float, float]] = {}
    rss: list[list[float]] = []
    found: dict[int, list[Scenario]] = {}
    with (
        b.sidecar("workers-1", extra_args=["--workers", "1"]) as one,
        b.sidecar("workers-2", extra_args=["--workers", "2"]) as two,
    ):
        channels = _Channels()
        try:
            workloads = []
            for n, sidecar in ((1, one), (2, two)):
                pid = _pid(sidecar)
                # a connection per client worker: the kernel spreads connections (not
                # requests) over the processes sharing the port
                stubs = [
                    channels.stub(sidecar, own_connection=True) for _ in range(b.ns.concurrency)
                ]
                runs = await start_runs(stubs[0], b.ns.concurrency)
                cpu = functools.partial(tree_cpu_seconds, pid)
                workloads += [
                    Workload(
                        f"Authorize, --workers {n}",
                        per_worker([authorize_call(s) for s in stubs]),
                        pid,
                        b.ns.concurrency,
                        server_cpu=cpu,
                    ),
                    Workload(
                        f"SubmitTurn (2 reads), --workers {n}",
                        per_worker([submit_turn_call(s, runs) for s in stubs]),
                        pid,
                        b.ns.concurrency,
                        tools_pid=b.travel.pid,
                        server_cpu=cpu,
                    ),
                ]
            measured = await b.pair(workloads)
            found = {1: measured[:2], 2: measured[2:]}
        finally:
            await channels.close()
        for sidecar in (one, two):
            rss.append([memory(p).hwm_kib * 1024 / MB for p in _workers_of(_pid(sidecar))])
    for i, scenario in enumerate(("Authorize", "SubmitTurn")):
        rates[scenario] = (found[1][i].phase.throughput, found[2][i].phase.throughput)
    b.results.workers = WorkersResult(rates, (rss[0], rss[1]))


# ---------------------------------------------------------------------- the whole run


async def _part_results(b: Bench) -> None:
    channels = _Channels()
    try:
        await part_results(b, channels.stub, POLICIES, b.tmp)
    finally:
        await channels.close()


async def _part_observe(b: Bench) -> None:
    channels = _Channels()
    try:
        await part_observe(b, channels.stub)
    finally:
        await channels.close()


async def _part_quotas(b: Bench) -> None:
    channels = _Channels()
    try:
        await part_quotas(b, channels.stub, b.tmp)
    finally:
        await channels.close()


PART_RUNNERS = {
    "main": part_main,
    "counts": part_counts,
    "pages": part_pages,
    "long": part_long,
    "tools": part_tools,
    "data": part_data,
    "workers": part_workers,
    "observe": _part_observe,
    "quotas": _part_quotas,
    "results": _part_results,
}


NOTES = [
    "server CPU: user+system CPU time of the serving process (all threads; with --workers, the",
    "supervisor and its workers) during the measured rounds, per request; server cores: that",
    "CPU time over the measured time (1.00 = one core busy all the time); client CPU: the same",
    "for the benchmark's client process; tools CPU: the travel tool service's process.",
    "Flat-cost targets (tools, data, long) are judged on server CPU per request, large over",
    "small; the p50 ratio is shown beside it. MB = 10^6 bytes.",
]


def _base_info(ns: argparse.Namespace, load_start: str) -> list[tuple[str, str]]:
    count = os.cpu_count() or 0
    return [
        ("date", datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")),
        ("machine", f"{count} cores, {_cpu_model()}, {platform.system()} {platform.release()}"),
        (
            "load average",
            f"{load_start} at start, {_loadavg()} at end (1/5/15 min; other "
            "processes on the machine add noise)",
        ),
        ("python", f"{platform.python_implementation()} {platform.python_version()}"),
        ("grpcio", version("grpcio")),
        ("protobuf", version("protobuf")),
        ("parts", ", ".join(ns.only)),
        (
            "client",
            f"{ns.concurrency} concurrent asyncio workers (1 where a scenario says "
            "so), grpc.aio, one channel per target, TCP 127.0.0.1, one process",
        ),
        (
            "schedule",
            f"main: per scenario {ns.warmup:g}s warm-up, then {ns.rounds} measured "
            f"rounds of {ns.duration / ns.rounds:g}s, interleaved; pairs (long, "
            f"tools, data, workers): {ns.pair_warmup:g}s warm-up, {ns.pair_rounds} "
            f"rounds of {ns.pair_duration / ns.pair_rounds:g}s, interleaved",
        ),
        (
            "sidecars",
            "`callgate serve` child processes: SQLite store in a temp directory, "
            "embedded policy engine, policies/, examples/travel/tools, "
            "examples/auth.yaml (unless a part says otherwise)",
        ),
        ("tools", "examples.travel.service in its own child process"),
        (
            "cores",
            "pinned (--pin-cores): the measured servers on core "
            f"{sorted(cores()[0])}, the client and the tools on {sorted(cores()[1])}"
            if ns.pin_cores
            else "not pinned: the scheduler places every process",
        ),
    ]


async def bench(ns: argparse.Namespace) -> tuple[str, str]:
    load_start = _loadavg()
    print("callgate benchmark: starting the travel service", flush=True)
    travel = travel_service()
    with tempfile.TemporaryDirectory(prefix="callgate-bench-") as tmp, travel:
        if ns.pin_cores:
            pin(os.getpid(), cores()[1])
            pin(travel.pid, cores()[1])
        b = Bench(ns, Path(tmp), travel)
        for part in PARTS:
            if part in ns.only:
                await PART_RUNNERS[part](b)
            else:
                b.results.skipped.setdefault(part, "not run (--only)")
    info = [*_base_info(ns, load_start), *b.info]
    flat = [p for p in (b.results.tools, b.results.data, b.results.long) if p is not None]
    if flat:
        b.sections.append(
            (
                "Flat cost (large over small, same run)",
                [
                    f"{p.large.name} / {p.small.name}: server CPU/req {p.cpu_ratio:.2f}x, "
                    f"p50 {p.p50_ratio:.2f}x"
                    for p in flat
                ],
            )
        )
    report = render(
        info=info,
        scenarios=b.scenarios,
        echo_ratios=b.echo_ratios,
        memory_rows=b.memory_rows,
        sections=b.sections,
        goals=evaluate(b.results),
        notes=[*NOTES, *b.notes],
    )
    return report, b.profile


def parts(text: str) -> tuple[str, ...]:
    chosen = tuple(p.strip() for p in text.split(",") if p.strip())
    unknown = [p for p in chosen if p not in PARTS]
    if unknown or not chosen:
        raise argparse.ArgumentTypeError(
            f"unknown part(s) {', '.join(unknown) or '(none)'}; choose from {','.join(PARTS)}"
        )
    return chosen


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m bench.run",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--only",
        type=parts,
        default=PARTS,
        metavar="PARTS",
        help=f"comma-separated parts to run (default all: {','.join(PARTS)})",
    )
    p.add_argument("--no-postgres", action="store_true", help="count statements on SQLite only")
    p.add_argument(
        "--pin-cores",
        action="store_true",
        help="measured servers on one core, the client and the tool service on the others",
    )
    p.add_argument(
        "--duration",
        type=float,
        default=12.0,
        help="main: seconds measured per scenario, over all rounds (default 12)",
    )
    p.add_argument(
        "--rounds",
        type=int,
        default=3,
        help="main: measured rounds per scenario, interleaved (default 3)",
    )
    p.add_argument(
        "--warmup",
        type=float,
        default=3.0,
        help="main: seconds of warm-up per scenario, not measured (default 3)",
    )
    p.add_argument(
        "--sequential-duration",
        type=float,
        default=6.0,
        help="main: seconds measured for SubmitTurn one at a time and for each "
        "tool alone (default 6)",
    )
    p.add_argument(
        "--pair-duration",
        type=float,
        default=8.0,
        help="long, tools, data, workers: seconds measured per scenario (default 8)",
    )
    p.add_argument(
        "--pair-rounds", type=int, default=4, help="long, tools, data, workers: rounds (default 4)"
    )
    p.add_argument(
        "--pair-warmup",
        type=float,
        default=2.0,
        help="long, tools, data, workers: warm-up seconds (default 2)",
    )
    p.add_argument(
        "--concurrency", type=int, default=8, help="concurrent client workers (default 8)"
    )
    p.add_argument(
        "--output",
        type=Path,
        default=RESULTS,
        help=f"where to write the report (default {RESULTS.relative_to(ROOT)})",
    )
    p.add_argument("--no-save", action="store_true", help="print the report only")
    p.add_argument(
        "--profile-sidecar",
        type=Path,
        metavar="DIR",
        help="run the main sidecar under cProfile (one profile per thread, "
        "snapshots in DIR) and print where its time went per request in each "
        "measured phase; slows the sidecar, implies --only main, --no-save "
        "and --rounds 1",
    )
    return p


def main(argv: list[str] | None = None) -> int:
    ns = _parser().parse_args(argv)
    if (
        ns.duration <= 0
        or ns.pair_duration <= 0
        or ns.sequential_duration <= 0
        or ns.warmup < 0
        or ns.pair_warmup < 0
        or ns.concurrency < 1
        or ns.rounds < 1
        or ns.pair_rounds < 1
    ):
        print(
            "bench: durations must be > 0, warm-ups >= 0, --concurrency and rounds >= 1",
            file=sys.stderr,
        )
        return 2
    if ns.profile_sidecar is not None:
        ns.rounds, ns.no_save, ns.only = 1, True, ("main",)
    try:
        report, profile = asyncio.run(bench(ns))
    except (BenchFailed, ChildFailed, SidecarFailed, grpc.RpcError, OSError) as exc:
        print(f"bench: FAILED: {exc}", file=sys.stderr)
        return 1
    print()
    print(report, end="")
    if profile:
        print("\nPROFILED RUN: the sidecar ran under cProfile; its numbers above are inflated.\n")
        print(profile, end="")
    if not ns.no_save:
        ns.output.parent.mkdir(parents=True, exist_ok=True)
        ns.output.write_text(report)
        print(f"\nwritten to {ns.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
