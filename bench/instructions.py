"""`make bench-instructions`: the instructions a sidecar executes per request, counted by
valgrind's callgrind, plain and with metrics or tracing on.

    .venv/bin/python -m bench.instructions [--scale F] [--only RPC]... [--no-save]

CPU time on this shared machine moves by several percent between two identical sidecars in
one run (`bench/README.md`, part `observe`), as much as the observability targets allow. An
instruction count does not: each sidecar runs under `valgrind --tool=callgrind` with
counting off, is warmed up, then counts (all its threads) while at least 1,500 Authorize or
300 two-read SubmitTurn requests are answered at 8 in flight (`--scale` multiplies both).
The ratios say what metrics and tracing add to the work a request does; they leave out what
CPU time also holds (caches, waits for the GIL), so they complement the `observe` part, they
do not replace it. Two more rows put the common path beside its floor: a plain sidecar's
Authorize with new arguments each request (every decision evaluated, as `make bench`'s
headline scenario) and the bare grpc.aio echo server answering the same payload. A sidecar
runs about 50 times slower under callgrind: the whole part takes about a quarter of an hour.
Needs `valgrind` on PATH.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

from bench import echo_server
from bench.load import Call, Load
from bench.observe import otlp_sink
from bench.procs import ROOT, Child, travel_service
from bench.run import AUTH, POLICIES, TOOLS_DIR, _Channels
from bench.workloads import authorize_call, echo_call, start_runs, submit_turn_call
from gateway.testing import SidecarProcess

RESULT = ROOT / "bench" / "results" / "instructions.txt"
WARMUP_S = 20.0
ROUND_S = 10.0
VARIANTS: dict[str, list[str]] = {
    "plain": [],
    "metrics": ["--metrics-listen", "127.0.0.1:0"],
    "tracing": ["--otlp-endpoint", "{collector}"],  # 100% sampled, to a stand-in collector
}
AUTHORIZE, FRESH, TURN, ECHO = (
    "Authorize",
    "Authorize, new args",
    "SubmitTurn (2 reads)",
    "Echo (the floor)",
)
REQUESTS = {AUTHORIZE: 1500, TURN: 300, FRESH: 1500, ECHO: 1500}  # counted per process
ROWS: list[tuple[str, str]] = [  # (what is asked, of which sidecar)
    *((rpc, variant) for rpc in (AUTHORIZE, TURN) for variant in VARIANTS),
    (FRESH, "plain"),
    (ECHO, "echo"),
]


def callgrind_totals(text: str) -> int:
    """The instructions counted in one callgrind output file (its `totals:` line; 0 when the
    file has none, as an empty dump)."""
    total = 0
    for line in text.splitlines():
        if line.startswith("totals:"):
            total += int(line.split()[1])
    return total


@dataclass
class Counted:
    variant: str
    rpc: str
    requests: int
    instructions: int

    @property
    def per_request(self) -> float:
        return self.instructions / self.requests


def under_callgrind(args: list[str], out: Path) -> list[str]:
    return [
        "valgrind",
        "--tool=callgrind",
        "--instr-atstart=no",
        f"--callgrind-out-file={out}/callgrind.%p",
        *args,
    ]


async def count(
    rpc: str, variant: str, args: Sequence[str], travel_url: str, requests: int, tmp: Path
) -> Counted:
    out = Path(tempfile.mkdtemp(prefix=f"{variant}-{rpc.split()[0]}-", dir=tmp))
    channels = _Channels()
    if rpc == ECHO:
        echo = Child(
            "echo server",
            ["-m", "bench.echo_server", "--listen", "127.0.0.1:0"],
            echo_server.READY,
            ready_timeout_s=900.0,
        )
        echo.args = under_callgrind(echo.args, out)
        with echo:
            answered = await _counted(
                echo_call(channels(echo.ready_value)), str(echo.pid), requests
            )
            await channels.close()
    else:
        sidecar = SidecarProcess(
            tools=TOOLS_DIR,
            policies=POLICIES,
            auth=AUTH,
            db=out / "callgate.db",
            env={"CALLGATE_TRAVEL_URL": travel_url, "PYTHONPATH": str(ROOT)},
            extra_args=args,
            ready_timeout_s=900.0,
        )
        sidecar.args = under_callgrind(sidecar.args, out)
        with sidecar:
            assert sidecar.proc is not None
            stub = channels.stub(sidecar)
            if rpc == TURN:
                call = submit_turn_call(stub, await start_runs(stub, 8))
            else:
                call = authorize_call(stub, fresh=rpc == FRESH)
            answered = await _counted(call, str(sidecar.proc.pid), requests)
            await channels.close()
    total = sum(callgrind_totals(f.read_text(errors="replace")) for f in out.glob("callgrind.*"))
    return Counted(variant, rpc, answered, total)


async def _counted(call: Call, pid: str, requests: int) -> int:
    """Warms the process up, then counts its instructions until `requests` are answered."""
    load = Load(call, 8)
    await load.run(WARMUP_S)
    _control("--instr=on", pid)
    answered = 0
    while answered < requests:
        answered += (await load.run(ROUND_S)).count
    _control("--instr=off", pid)
    _control("--dump", pid)
    return answered


def _control(option: str, pid: str) -> None:
    subprocess.run(["callgrind_control", option, pid], check=True, capture_output=True)


def report(found: Sequence[Counted]) -> str:
    lines = [
        "callgate benchmark: instructions per request under callgrind (all threads of the "
        "sidecar, 8 requests in flight)",
        "",
        f"{'RPC':22s} {'sidecar':8s} {'requests':>8s} {'instructions/req':>17s} {'/ plain':>8s}",
    ]
    plain = {c.rpc: c.per_request for c in found if c.variant == "plain"}
    for c in found:
        ratio = f"{c.per_request / plain[c.rpc]:7.3f}x" if c.rpc in plain else ""
        lines.append(f"{c.rpc:22s} {c.variant:8s} {c.requests:8d} {c.per_request:17,.0f} {ratio}")
    floor = next((c.per_request for c in found if c.rpc == ECHO), None)
    if floor:
        lines += ["", "Over the floor (instructions per request / the echo server's):"]
        lines += [
            f"  {c.rpc:22s} {c.per_request / floor:6.2f}x"
            for c in found
            if c.variant == "plain" and c.rpc in (AUTHORIZE, FRESH)
        ]
    return "\n".join(lines) + "\n"


async def run(scale: float, only: Sequence[str] = ()) -> str:
    travel = travel_service()
    found = []
    with tempfile.TemporaryDirectory(prefix="callgate-instr-") as tmp, ExitStack() as stack:
        stack.enter_context(travel)
        sink = stack.enter_context(otlp_sink())
        collector = f"http://127.0.0.1:{sink.server_port}"
        for rpc, variant in ROWS:
            if only and rpc not in only:
                continue
            print(f"instructions: {rpc}, {variant}", flush=True)
            given = [a.format(collector=collector) for a in VARIANTS.get(variant, [])]
            wanted = max(1, round(REQUESTS[rpc] * scale))
            found.append(await count(rpc, variant, given, travel.ready_value, wanted, Path(tmp)))
    return report(found)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--scale", type=float, default=1.0, help="times the requests counted (default 1)"
    )
    parser.add_argument(
        "--only",
        action="append",
        default=[],
        choices=list(REQUESTS),
        help="count only this request's rows (repeatable; implies --no-save)",
    )
    parser.add_argument("--no-save", action="store_true")
    ns = parser.parse_args(argv)
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        print("bench.instructions needs valgrind (callgrind) on PATH", file=sys.stderr)
        return 2
    text = asyncio.run(run(ns.scale, ns.only))
    print(text, end="")
    if not ns.no_save and not ns.only:
        RESULT.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
