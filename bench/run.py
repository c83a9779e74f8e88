"""`make bench`: the sidecar's Authorize and SubmitTurn against a bare grpc.aio echo server.

    .venv/bin/python -m bench.run [--duration S] [--rounds N] [--warmup S] [--concurrency N]
                                  [--no-save] [--profile-sidecar DIR]

Starts three child processes on 127.0.0.1 (the echo server, the example travel tool service and
the real `callgate serve`), drives each scenario with the same asyncio client harness, prints
the report and writes it to bench/results/latest.txt. Exits 0 whether or not the targets are
met; non-zero only when the benchmark itself failed (a process did not start, a request failed
or answered something unexpected). See bench/README.md.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import signal
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path

import grpc
from google.protobuf import text_format
from google.protobuf.message import Message

from bench import echo_server
from bench.load import Call, Load, Phase
from bench.opa import NOT_FOUND, LiveOpa, live_opa
from bench.procs import ROOT, Child, ChildFailed, cpu_seconds, memory
from bench.profile_sidecar import SNAPSHOT_DONE, phase_report
from bench.report import Scenario, render, targets
from gateway import pb
from gateway.client import tool_call
from gateway.testing import SidecarFailed, SidecarProcess

RESULTS = ROOT / "bench" / "results" / "latest.txt"
TOKEN = "alice-demo-token"
METADATA = (("authorization", f"Bearer {TOKEN}"),)
TRAIN = {"train_number": "ICE123", "date": "2026-12-01"}
WEATHER = {"city": "Berlin", "date": "2026-12-01"}
PROVIDER = "openai.responses"
TIMEOUT_S = 10.0


class UnexpectedAnswer(Exception):
    def __init__(self, rpc: str, answer: Message) -> None:
        text = text_format.MessageToString(answer, as_one_line=True)
        super().__init__(f"{rpc} answered {text[:600]}")


class BenchFailed(RuntimeError):
    pass


# ---------------------------------------------------------------------- the three workloads


def echo_call(channel: grpc.aio.Channel) -> Call:
    method = channel.unary_unary(echo_server.METHOD)
    # the same bytes an Authorize request carries, so both move the same request payload
    payload = pb.AuthorizeRequest(calls=[tool_call("c1", "get_train_status", TRAIN)])
    body = payload.SerializeToString()

    async def call(worker: int, seq: int) -> None:
        answer = await method(body, metadata=METADATA, timeout=TIMEOUT_S)
        if answer != body:
            raise UnexpectedAnswer("Echo", pb.AuthorizeRequest.FromString(answer))
    return call


def authorize_call(stub: pb.ToolGatewayStub) -> Call:
    request = pb.AuthorizeRequest(calls=[tool_call("c1", "get_train_status", TRAIN)])

    async def call(worker: int, seq: int) -> None:
        answer: pb.AuthorizeResponse = await stub.Authorize(request, metadata=METADATA,
                                                            timeout=TIMEOUT_S)
        d = answer.decisions
        if len(d) != 1 or d[0].decision.verdict != pb.VERDICT_ALLOW or d[0].error.code:
            raise UnexpectedAnswer("Authorize", answer)
    return call


async def start_runs(stub: pb.ToolGatewayStub, workers: int) -> list[str]:
    """One long-lived run per worker, no budget limits (every Budget field 0)."""
    prefix = f"bench-{uuid.uuid4().hex[:8]}"
    run_ids = [f"{prefix}-w{i}" for i in range(workers)]
    for run_id in run_ids:
        await stub.StartRun(pb.StartRunRequest(run_id=run_id, provider=PROVIDER,
                                               budget=pb.Budget()),
                            metadata=METADATA, timeout=TIMEOUT_S)
    return run_ids


def submit_turn_call(stub: pb.ToolGatewayStub, run_ids: list[str]) -> Call:
    async def call(worker: int, seq: int) -> None:
        turn = f"resp_{seq}"
        request = pb.SubmitTurnRequest(
            run_id=run_ids[worker], turn_id=turn, provider=PROVIDER,
            tool_request=pb.ToolRequest(calls=[
                tool_call(f"{turn}_train", "get_train_status", TRAIN),
                tool_call(f"{turn}_weather", "get_weather", WEATHER)]))
        answer: pb.TurnOutcome = await stub.SubmitTurn(request, metadata=METADATA,
                                                       timeout=TIMEOUT_S)
        if (answer.next != pb.NEXT_ACTION_CONTINUE or len(answer.results) != 2
                or any(r.status != pb.CALL_STATUS_SUCCEEDED for r in answer.results)):
            raise UnexpectedAnswer("SubmitTurn", answer)
    return call


# ---------------------------------------------------------------------- running scenarios

Hook = Callable[[], None]


@dataclass
class Workload:
    """One scenario across the whole benchmark: its load, and what its measured rounds saw."""

    name: str
    call: Call
    server_pid: int
    concurrency: int
    tools_pid: int | None = None  # the tool service the server calls, if any
    load: Load = field(init=False)
    phase: Phase = field(default_factory=Phase)
    server_cpu_s: float = 0.0
    client_cpu_s: float = 0.0
    tools_cpu_s: float = 0.0
    requests_before: int = 0  # requests issued by all workers before the first measured round
    warmup_errors: str = ""

    def __post_init__(self) -> None:
        self.load = Load(self.call, self.concurrency)

    async def warm_up(self, seconds: float) -> None:
        print(f"  {self.name}: {seconds:g}s warm-up", flush=True)
        warm = await self.load.run(seconds)
        if warm.errors and not warm.count:
            raise BenchFailed(f"{self.name}: every request failed during warm-up; first: "
                              f"{warm.first_error}")
        if warm.errors:  # e.g. first connections timing out; tolerated, but reported
            self.warmup_errors = (f"{warm.errors} requests failed, first: "
                                  f"{warm.first_error[:300]}")
        self.requests_before = sum(self.load.seq)

    async def measure(self, seconds: float, before: Hook | None = None,
                      after: Hook | None = None) -> None:
        print(f"  {self.name}: {seconds:g}s measured", flush=True)
        if before is not None:
            before()
        server0, client0, tools0 = (cpu_seconds(self.server_pid), time.process_time(),
                                    self._tools_cpu())
        phase = await self.load.run(seconds)
        server1, client1, tools1 = (cpu_seconds(self.server_pid), time.process_time(),
                                    self._tools_cpu())
        if after is not None:
            after()
        if phase.errors:
            raise BenchFailed(f"{self.name}: {phase.errors} of {phase.errors + phase.count} "
                              f"requests failed; first: {phase.first_error}")
        self.phase.add(phase)
        self.server_cpu_s += server1 - server0
        self.client_cpu_s += client1 - client0
        self.tools_cpu_s += tools1 - tools0

    def _tools_cpu(self) -> float:
        return cpu_seconds(self.tools_pid) if self.tools_pid is not None else 0.0

    def scenario(self) -> Scenario:
        return Scenario(self.name, self.phase, self.server_cpu_s, self.client_cpu_s,
                        self.tools_cpu_s if self.tools_pid is not None else None)


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


# ---------------------------------------------------------------------- the whole run


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


def _info(ns: argparse.Namespace, load_start: str, turns: Workload,
          opa: LiveOpa | None) -> list[tuple[str, str]]:
    cores = os.cpu_count() or 0
    per_round = ns.duration / ns.rounds
    runs = ns.concurrency
    first = turns.requests_before / runs
    last = sum(turns.load.seq) / runs
    return [
        ("date", datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")),
        ("machine", f"{cores} cores, {_cpu_model()}, {platform.system()} {platform.release()}"),
        ("load average", f"{load_start} at start, {_loadavg()} at end (1/5/15 min; other "
                         "processes on the machine add noise)"),
        ("python", f"{platform.python_implementation()} {platform.python_version()}"),
        ("grpcio", version("grpcio")),
        ("protobuf", version("protobuf")),
        ("client", f"{ns.concurrency} concurrent asyncio workers, grpc.aio, one channel per "
                   "target, TCP 127.0.0.1, one process"),
        ("schedule", f"per scenario {ns.warmup:g}s warm-up, then {ns.rounds} measured rounds of "
                     f"{per_round:g}s, scenarios interleaved round by round"),
        ("echo", "bare grpc.aio server, one generic bytes-in/bytes-out unary method, child "
                 "process; payload = the Authorize request's bytes"),
        ("Authorize", "one get_train_status call, valid arguments, ALLOW; no run_id"),
        ("SubmitTurn", f"get_train_status + get_weather executed over HTTP; {runs} long-lived "
                       f"runs ({PROVIDER}, no budget limits), one per worker, a new turn_id and "
                       f"call IDs per request; runs grew from ~{first:.0f} to ~{last:.0f} turns "
                       "during measurement"),
        ("sidecar", "`callgate serve` child process: SQLite store in a temp directory, embedded "
                    "policy engine, policies/, examples/travel/tools, examples/auth.yaml"),
        ("tools", "examples.travel.service in its own child process"),
        ("Authorize (OPA engine)", NOT_FOUND if opa is None else
         f"the same Authorize through a second sidecar, `--engine opa --opa-policies push`, "
         f"deciding with {opa.what}; its tools CPU column is OPA's process"),
    ]


NOTES = [
    "server CPU: user+system CPU time of the serving process (all threads) during the measured",
    "rounds, per request; server cores: that CPU time over the measured time (1.00 = one core",
    "busy all the time); client CPU: the same for the benchmark's client process; tools CPU:",
    "the travel tool service's process. MB = 10^6 bytes.",
]


@dataclass
class Processes:
    echo: Child
    travel: Child
    sidecar: SidecarProcess
    opa_sidecar: SidecarProcess | None
    opa: LiveOpa | None


@contextmanager
def _processes(tmp: Path, profile_dir: Path | None) -> Iterator[Processes]:
    echo = Child("echo server", ["-m", "bench.echo_server", "--listen", "127.0.0.1:0"],
                 echo_server.READY)
    travel = Child("travel service", ["-m", "examples.travel.service", "--host", "127.0.0.1",
                                      "--port", "0", "--quiet"], "travel service listening on ")
    with echo, travel:
        sidecar = SidecarProcess(
            tools=ROOT / "examples" / "travel" / "tools", policies=ROOT / "policies",
            auth=ROOT / "examples" / "auth.yaml", db=tmp / "callgate.db",
            env={"CALLGATE_TRAVEL_URL": travel.ready_value, "PYTHONPATH": str(ROOT)})
        if profile_dir is not None:  # the same `serve` arguments, under cProfile
            module = sidecar.args.index("gateway.cli")
            sidecar.args[module:module + 1] = ["bench.profile_sidecar", str(profile_dir), "--"]
        with sidecar, live_opa() as opa, _opa_sidecar(tmp, opa) as opa_sidecar:
            yield Processes(echo, travel, sidecar, opa_sidecar, opa)


@contextmanager
def _opa_sidecar(tmp: Path, opa: LiveOpa | None) -> Iterator[SidecarProcess | None]:
    if opa is None:
        yield None
        return
    with SidecarProcess(tools=ROOT / "examples" / "travel" / "tools",
                        policies=ROOT / "policies", auth=ROOT / "examples" / "auth.yaml",
                        db=tmp / "callgate-opa.db", env={"PYTHONPATH": str(ROOT)},
                        extra_args=["--engine", "opa", "--opa-url", opa.url]) as sidecar:
        yield sidecar


def _pid(sidecar: SidecarProcess) -> int:
    assert sidecar.proc is not None
    return sidecar.proc.pid


@dataclass
class Outcome:
    report: str
    profile: str = ""


class _Channels:
    def __init__(self) -> None:
        self.open: list[grpc.aio.Channel] = []

    def __call__(self, target: str) -> grpc.aio.Channel:
        channel = grpc.aio.insecure_channel(target)
        self.open.append(channel)
        return channel

    async def close(self) -> None:
        while self.open:
            await self.open.pop().close()


Marks = dict[str, tuple[int, int]]  # scenario → its first and last profile snapshot


async def _drive_all(ns: argparse.Namespace, procs: Processes,
                     channels: _Channels) -> tuple[list[Workload], Marks]:
    """Warm every scenario up, then measure them round by round; answers the workloads (echo,
    Authorize, SubmitTurn, and Authorize on the OPA engine when there is a live OPA) and, when
    profiling, each one's first and last snapshot."""
    echo, travel, sidecar = procs.echo, procs.travel, procs.sidecar
    pid = _pid(sidecar)
    stub = pb.ToolGatewayStub(channels(sidecar.target))
    echo_w = Workload("echo (bare grpc.aio)", echo_call(channels(echo.ready_value)), echo.pid,
                      ns.concurrency)
    auth_w = Workload("Authorize", authorize_call(stub), pid, ns.concurrency)
    runs = await start_runs(stub, ns.concurrency)
    turn_w = Workload("SubmitTurn (2 reads)", submit_turn_call(stub, runs), pid, ns.concurrency,
                      tools_pid=travel.pid)
    workloads = [echo_w, auth_w, turn_w]
    if procs.opa_sidecar is not None and procs.opa is not None:
        opa_stub = pb.ToolGatewayStub(channels(procs.opa_sidecar.target))
        workloads.append(Workload("Authorize (OPA engine)", authorize_call(opa_stub),
                                  _pid(procs.opa_sidecar), ns.concurrency,
                                  tools_pid=procs.opa.pid))
    snaps = Snapshots(sidecar) if ns.profile_sidecar else None
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


async def bench(ns: argparse.Namespace) -> Outcome:
    load_start = _loadavg()
    print("callgate benchmark: starting the echo server, the travel service and the sidecar",
          flush=True)
    with tempfile.TemporaryDirectory(prefix="callgate-bench-") as tmp, \
            _processes(Path(tmp), ns.profile_sidecar) as procs:
        channels = _Channels()
        try:
            workloads, marks = await _drive_all(ns, procs, channels)
        finally:
            await channels.close()
        side_mem, echo_mem = memory(_pid(procs.sidecar)), memory(procs.echo.pid)
    echo_w, auth_w, turn_w = workloads[:3]
    scenarios = [w.scenario() for w in workloads]
    report = render(
        info=_info(ns, load_start, turn_w, procs.opa), scenarios=scenarios,
        memory_rows=[("sidecar (after all load)", side_mem.hwm_kib, side_mem.rss_kib),
                     ("echo server", echo_mem.hwm_kib, echo_mem.rss_kib)],
        goals=targets(scenarios[0], scenarios[1], side_mem.hwm_kib),
        notes=[*NOTES, *(f"warm-up of {w.name}: {w.warmup_errors}" for w in workloads
                         if w.warmup_errors)])
    profile = ""
    if ns.profile_sidecar is not None:
        profile = "\n".join(
            phase_report(ns.profile_sidecar, first, last, w.phase.count, w.name)
            for w in (auth_w, turn_w) for first, last in [marks[w.name]])
    return Outcome(report, profile)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--duration", type=float, default=12.0,
                   help="seconds measured per scenario, over all rounds (default 12)")
    p.add_argument("--rounds", type=int, default=3,
                   help="measured rounds per scenario, interleaved (default 3)")
    p.add_argument("--warmup", type=float, default=3.0,
                   help="seconds of warm-up per scenario, not measured (default 3)")
    p.add_argument("--concurrency", type=int, default=8,
                   help="concurrent client workers (default 8)")
    p.add_argument("--output", type=Path, default=RESULTS,
                   help=f"where to write the report (default {RESULTS.relative_to(ROOT)})")
    p.add_argument("--no-save", action="store_true", help="print the report only")
    p.add_argument("--profile-sidecar", type=Path, metavar="DIR",
                   help="run the sidecar under cProfile (one profile per thread, snapshots in "
                        "DIR) and print where its time went per request in each measured "
                        "phase; slows the sidecar, implies --no-save and --rounds 1")
    return p


def main(argv: list[str] | None = None) -> int:
    ns = _parser().parse_args(argv)
    if ns.duration <= 0 or ns.warmup < 0 or ns.concurrency < 1 or ns.rounds < 1:
        print("bench: --duration must be > 0, --warmup >= 0, --concurrency and --rounds >= 1",
              file=sys.stderr)
        return 2
    if ns.profile_sidecar is not None:
        ns.rounds, ns.no_save = 1, True
    try:
        outcome = asyncio.run(bench(ns))
    except (BenchFailed, ChildFailed, SidecarFailed, grpc.RpcError, OSError) as exc:
        print(f"bench: FAILED: {exc}", file=sys.stderr)
        return 1
    print()
    print(outcome.report, end="")
    if outcome.profile:
        print("\nPROFILED RUN: the sidecar ran under cProfile; its numbers above are inflated."
              "\n")
        print(outcome.profile, end="")
    if not ns.no_save:
        ns.output.parent.mkdir(parents=True, exist_ok=True)
        ns.output.write_text(outcome.report)
        print(f"\nwritten to {ns.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
