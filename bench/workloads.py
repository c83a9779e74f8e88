"""The benchmark's requests, and `Workload`: one scenario's load, measured round by round.

Every request's answer is checked; anything unexpected raises, and a failure in a measured
round fails the benchmark.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date, timedelta

import grpc
from google.protobuf import text_format
from google.protobuf.message import Message

from bench import echo_server
from bench.inproc import PROVIDER, TRAIN, WEATHER, two_reads
from bench.load import Call, Load, Phase
from bench.procs import cpu_seconds, thread_cpu
from bench.report import Scenario
from gateway import pb
from gateway.client import tool_call
from gateway.executors.http1 import Http1Client

TOKEN = "alice-demo-token"
METADATA = (("authorization", f"Bearer {TOKEN}"),)
TIMEOUT_S = 10.0
FIRST_DAY = date(2000, 1, 1)


class UnexpectedAnswer(Exception):
    def __init__(self, rpc: str, answer: Message | str) -> None:
        text = (
            answer
            if isinstance(answer, str)
            else text_format.MessageToString(answer, as_one_line=True)
        )
        super().__init__(f"{rpc} answered {text[:600]}")


class BenchFailed(RuntimeError):
    pass


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


def authorize_call(stub: pb.ToolGatewayStub, *, fresh: bool = False) -> Call:
    """Authorize of one get_train_status call; `fresh`: with a date no request had before, so
    nothing the sidecar remembers of earlier calls (arguments hash, schema check, decision)
    answers it."""
    request = pb.AuthorizeRequest(calls=[tool_call("c1", "get_train_status", TRAIN)])

    async def call(worker: int, seq: int) -> None:
        asked = (
            pb.AuthorizeRequest(
                calls=[
                    tool_call("c1", "get_train_status", {**TRAIN, "date": fresh_date(worker, seq)})
                ]
            )
            if fresh
            else request
        )
        answer: pb.AuthorizeResponse = await stub.Authorize(
            asked, metadata=METADATA, timeout=TIMEOUT_S
        )
        d = answer.decisions
        if len(d) != 1 or d[0].decision.verdict != pb.VERDICT_ALLOW or d[0].error.code:
            raise UnexpectedAnswer("Authorize", answer)

    return call


def per_worker(calls: Sequence[Call]) -> Call:
    """One call per client worker (each on its own connection, say)."""

    async def call(worker: int, seq: int) -> None:
        await calls[worker % len(calls)](worker, seq)

    return call


def fresh_date(worker: int, seq: int) -> str:
    """A date of its own for each (worker, seq) (seq below 100,000)."""
    return (FIRST_DAY + timedelta(days=worker * 100_000 + seq % 100_000)).isoformat()


async def start_runs(stub: pb.ToolGatewayStub, count: int) -> list[str]:
    """`count` long-lived runs, no budget limits (every Budget field 0)."""
    prefix = f"bench-{uuid.uuid4().hex[:8]}"
    run_ids = [f"{prefix}-w{i}" for i in range(count)]
    for run_id in run_ids:
        await stub.StartRun(
            pb.StartRunRequest(run_id=run_id, provider=PROVIDER, budget=pb.Budget()),
            metadata=METADATA,
            timeout=TIMEOUT_S,
        )
    return run_ids


def submit_turn_call(
    stub: pb.ToolGatewayStub, run_ids: Sequence[str], per_worker: bool = True
) -> Call:
    """SubmitTurn with two reads. per_worker: each worker drives run_ids[worker]; otherwise
    request n goes to run_ids[n % len(run_ids)] (one worker)."""
    tag = uuid.uuid4().hex[:6]

    async def call(worker: int, seq: int) -> None:
        run_id = run_ids[worker] if per_worker else run_ids[seq % len(run_ids)]
        request = two_reads(run_id, f"resp_{tag}_{worker}_{seq}")
        answer: pb.TurnOutcome = await stub.SubmitTurn(
            request, metadata=METADATA, timeout=TIMEOUT_S
        )
        if (
            answer.next != pb.NEXT_ACTION_CONTINUE
            or len(answer.results) != 2
            or any(r.status != pb.CALL_STATUS_SUCCEEDED for r in answer.results)
        ):
            raise UnexpectedAnswer("SubmitTurn", _outcome_summary(answer))

    return call


def _outcome_summary(answer: pb.TurnOutcome) -> str:
    """What a turn's answer said, without the outputs (so a failed call's error shows)."""
    results = "; ".join(
        f"{r.call_id} {pb.CallStatus.Name(r.status)} {r.error.code} {r.error.message}".strip()
        for r in answer.results
    )
    head = " ".join(p for p in (pb.NextAction.Name(answer.next), answer.reason) if p)
    return f"{head} [{results}]"


def get_run_call(stub: pb.ToolGatewayStub, run_id: str, turns: int, page: int) -> Call:
    """GetRun with the default page: the run's summary and its latest `page` turns."""
    request = pb.GetRunRequest(run_id=run_id)

    async def call(worker: int, seq: int) -> None:
        answer: pb.Run = await stub.GetRun(request, metadata=METADATA, timeout=TIMEOUT_S)
        if answer.turns_used != turns or len(answer.turns) != page:
            raise UnexpectedAnswer(
                "GetRun", f"turns_used {answer.turns_used}, {len(answer.turns)} turns in the page"
            )

    return call


def direct_tool_call(client: Http1Client, url: str, body: dict[str, str]) -> Call:
    """The tool's own HTTP endpoint, asked as the sidecar asks it (POST of the JSON arguments
    on a kept-alive connection, with the sidecar's own HTTP client)."""
    data = json.dumps(body).encode()
    headers = {"Accept": "application/json", "Content-Type": "application/json"}

    async def call(worker: int, seq: int) -> None:
        answer = await client.request(
            "POST", url, headers=headers, body=data, max_body_bytes=1 << 20, on_sent=lambda: None
        )
        if answer.status != 200:
            raise UnexpectedAnswer(url, f"HTTP {answer.status}: {answer.body[:200]!r}")

    return call


TOOL_PATHS = {"get_train_status": ("/train_status", TRAIN), "get_weather": ("/weather", WEATHER)}


@dataclass
class Workload:
    """One scenario across the whole benchmark: its load, and what its measured rounds saw.
    `server_cpu` reads the serving side's CPU seconds (default: the server_pid process)."""

    name: str
    call: Call
    server_pid: int
    concurrency: int
    tools_pid: int | None = None  # the tool service the server calls, if any
    server_cpu: Callable[[], float] | None = None
    load: Load = field(init=False)
    phase: Phase = field(default_factory=Phase)
    server_cpu_s: float = 0.0
    client_cpu_s: float = 0.0
    tools_cpu_s: float = 0.0
    threads_cpu_s: dict[str, float] = field(default_factory=dict)  # by kind (server_pid's)
    rounds_us: list[float] = field(default_factory=list)  # server CPU per request, each round
    requests_before: int = 0  # requests issued by all workers before the first measured round
    warmup_errors: str = ""

    def __post_init__(self) -> None:
        self.load = Load(self.call, self.concurrency)

    async def warm_up(self, seconds: float) -> None:
        print(f"  {self.name}: {seconds:g}s warm-up", flush=True)
        warm = await self.load.run(seconds)
        if warm.errors and not warm.count:
            raise BenchFailed(
                f"{self.name}: every request failed during warm-up; first: {warm.first_error}"
            )
        if warm.errors:  # e.g. first connections timing out; tolerated, but reported
            self.warmup_errors = f"{warm.errors} requests failed, first: {warm.first_error[:300]}"
        self.requests_before = sum(self.load.seq)

    def _server_cpu(self) -> float:
        return self.server_cpu() if self.server_cpu is not None else cpu_seconds(self.server_pid)

    async def measure(
        self,
        seconds: float,
        before: Callable[[], None] | None = None,
        after: Callable[[], None] | None = None,
    ) -> None:
        print(f"  {self.name}: {seconds:g}s measured", flush=True)
        if before is not None:
            before()
        threads0 = self._threads_cpu()
        server0, client0, tools0 = (self._server_cpu(), time.process_time(), self._tools_cpu())
        phase = await self.load.run(seconds)
        server1, client1, tools1 = (self._server_cpu(), time.process_time(), self._tools_cpu())
        threads1 = self._threads_cpu()
        if after is not None:
            after()
        if phase.errors:
            raise BenchFailed(
                f"{self.name}: {phase.errors} of {phase.errors + phase.count} "
                f"requests failed; first: {phase.first_error}"
            )
        self.phase.add(phase)
        if phase.count:
            self.rounds_us.append((server1 - server0) / phase.count * 1e6)
        self.server_cpu_s += server1 - server0
        self.client_cpu_s += client1 - client0
        self.tools_cpu_s += tools1 - tools0
        for kind, used in threads1.items():
            self.threads_cpu_s[kind] = self.threads_cpu_s.get(kind, 0.0) + used - threads0[kind]

    def _threads_cpu(self) -> dict[str, float]:
        """By kind of thread; none when the serving side is not the one server_pid."""
        return thread_cpu(self.server_pid) if self.server_cpu is None else {}

    def _tools_cpu(self) -> float:
        return cpu_seconds(self.tools_pid) if self.tools_pid is not None else 0.0

    def scenario(self) -> Scenario:
        return Scenario(
            self.name,
            self.phase,
            self.server_cpu_s,
            self.client_cpu_s,
            self.tools_cpu_s if self.tools_pid is not None else None,
            dict(self.threads_cpu_s),
            tuple(self.rounds_us),
        )


async def interleaved(
    workloads: Sequence[Workload], warmup_s: float, rounds: int, seconds: float
) -> list[Scenario]:
    """Warm each workload up, then measure them round by round (seconds per workload over
    all rounds), so that a burst of other activity does not land on one of them only."""
    for w in workloads:
        await w.warm_up(warmup_s)
    for _ in range(rounds):
        for w in workloads:
            await w.measure(seconds / rounds)
    return [w.scenario() for w in workloads]
