"""The `observe` part of `make bench`: what metrics and tracing cost the sidecar.

Five sidecars, started together and driven in one interleaved schedule: one plain (and a
second plain one, whose ratio to the first shows how far two identical processes differ on
this machine), one with
`--metrics-listen` (scraped once a second by the benchmark, as Prometheus would at a short
interval), one with `--otlp-endpoint` naming a stand-in OTLP/HTTP collector in the benchmark's
own process (every request is a root span, so the default sampler samples 100%: each
Authorize makes 2 spans, each two-read SubmitTurn 10, batched and exported as protobuf by the
SDK's thread in the sidecar), one the same but sampling 10% of them
(`OTEL_TRACES_SAMPLER=parentbased_traceidratio`, reported only), and one tracing every request
with the OpenTelemetry SDK's own Tracer in place of callgate's spans (`bench.sdk_tracer`,
reported only: why callgate has spans of its own). Each is asked Authorize and
SubmitTurn (two HTTP reads) at 8 in flight; the targets are the server CPU per request of
the observed sidecars over the plain ones' (the mean of the two): at most 1.05 with metrics,
1.10 with tracing.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import urllib.request
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import ExitStack, asynccontextmanager, contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol

from bench.workloads import Workload, authorize_call, start_runs, submit_turn_call
from gateway.testing import SidecarProcess

METRICS_TARGET, TRACING_TARGET = 1.05, 1.10
SCRAPE_INTERVAL_S = 1.0


class BenchLike(Protocol):
    ns: Any
    sections: list[tuple[str, list[str]]]

    def sidecar(self, name: str, *, extra_args: Sequence[str] = ()) -> SidecarProcess: ...

    async def pair(self, workloads: Sequence[Workload]) -> list[Any]: ...


class _Sink(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.server.exports += 1  # type: ignore[attr-defined]
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        return None


@contextmanager
def otlp_sink() -> Iterator[ThreadingHTTPServer]:
    """A stand-in collector that accepts every export (in the benchmark's process)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Sink)
    server.exports = 0  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def _sampled(sidecar: SidecarProcess, ratio: float) -> SidecarProcess:
    """The sidecar sampling that share of its root spans (OTEL_TRACES_SAMPLER)."""
    sidecar.env.update(
        OTEL_TRACES_SAMPLER="parentbased_traceidratio", OTEL_TRACES_SAMPLER_ARG=str(ratio)
    )
    return sidecar


def _sdk_spans(sidecar: SidecarProcess) -> SidecarProcess:
    """The sidecar run as `python -m bench.sdk_tracer serve ...`: the SDK's spans."""
    sidecar.args[sidecar.args.index("gateway.cli")] = "bench.sdk_tracer"
    return sidecar


def _metrics_url(sidecar: SidecarProcess) -> str:
    for line in sidecar.lines:
        if "serving metrics at " in line:
            return line.split("serving metrics at ", 1)[1].strip()
    raise RuntimeError("the metrics sidecar named no /metrics URL")


@asynccontextmanager
async def scraping(url: str) -> AsyncIterator[list[int]]:
    """Scrape url every SCRAPE_INTERVAL_S on a thread while the block runs; the sizes read."""
    sizes: list[int] = []
    stop = asyncio.Event()

    async def loop() -> None:
        while not stop.is_set():
            body = await asyncio.to_thread(lambda: urllib.request.urlopen(url, timeout=10).read())
            sizes.append(len(body))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), SCRAPE_INTERVAL_S)

    task = asyncio.create_task(loop())
    try:
        yield sizes
    finally:
        stop.set()
        await task


async def part_observe(b: BenchLike, stubs: Any) -> None:
    """`stubs(sidecar)`: a ToolGateway stub on a channel of the benchmark's own."""
    print("observe: Authorize and SubmitTurn, plain vs metrics vs tracing", flush=True)
    with otlp_sink() as sink, ExitStack() as stack:
        collector = f"http://127.0.0.1:{sink.server_port}"
        sidecars = {
            "plain": stack.enter_context(b.sidecar("observe-plain")),
            "plain again": stack.enter_context(b.sidecar("observe-plain-2")),
            "metrics": stack.enter_context(
                b.sidecar("observe-metrics", extra_args=["--metrics-listen", "127.0.0.1:0"])
            ),
            "tracing": stack.enter_context(
                b.sidecar("observe-tracing", extra_args=["--otlp-endpoint", collector])
            ),
            "tracing 10%": stack.enter_context(
                _sampled(
                    b.sidecar("observe-tracing-10", extra_args=["--otlp-endpoint", collector]), 0.1
                )
            ),
            "tracing, SDK Tracer": stack.enter_context(
                _sdk_spans(
                    b.sidecar("observe-tracing-sdk", extra_args=["--otlp-endpoint", collector])
                )
            ),
        }
        workloads = []
        for kind, sidecar in sidecars.items():
            assert sidecar.proc is not None
            stub = stubs(sidecar)
            runs = await start_runs(stub, b.ns.concurrency)
            workloads += [
                Workload(
                    f"Authorize, {kind}", authorize_call(stub), sidecar.proc.pid, b.ns.concurrency
                ),
                Workload(
                    f"SubmitTurn (2 reads), {kind}",
                    submit_turn_call(stub, runs),
                    sidecar.proc.pid,
                    b.ns.concurrency,
                ),
            ]
        async with scraping(_metrics_url(sidecars["metrics"])) as sizes:
            found = await b.pair(workloads)
        exports = sink.exports  # type: ignore[attr-defined]
    b.sections.append(
        (
            "Observability cost (server CPU per request over the plain sidecar's, same run)",
            _lines(found, len(sizes), exports),
        )
    )


def _lines(found: Sequence[Any], scrapes: int, exports: int) -> list[str]:
    """Each observed sidecar against the mean of the two plain ones (two identical processes
    differ by a few percent here: their ratio is shown as the noise)."""
    by_name = {s.name: s for s in found}
    out = []
    for rpc in ("Authorize", "SubmitTurn (2 reads)"):
        plain, again = by_name[f"{rpc}, plain"], by_name[f"{rpc}, plain again"]
        first, second = (s.cpu_us_per_request(s.server_cpu_s) for s in (plain, again))
        base, p50 = (first + second) / 2, (plain.p50_ms + again.p50_ms) / 2
        out.append(
            f"{rpc}, plain again / plain: {second / first:.3f}x ({second:,.0f} vs "
            f"{first:,.0f} us/req): the noise between two identical processes; the "
            f"ratios below are to their mean, {base:,.0f} us/req"
        )
        for kind, target in (
            ("metrics", METRICS_TARGET),
            ("tracing", TRACING_TARGET),
            ("tracing 10%", None),
            ("tracing, SDK Tracer", None),
        ):
            s = by_name[f"{rpc}, {kind}"]
            cpu = s.cpu_us_per_request(s.server_cpu_s)
            ratio = cpu / base
            judged = (
                "reported only"
                if target is None
                else f"target <= {target:.2f}x: {'yes' if ratio <= target else 'NO'}"
            )
            out.append(
                f"{rpc}, {kind}: {ratio:.3f}x ({cpu:,.0f} us/req; p50 "
                f"{s.p50_ms / p50:.2f}x); {judged}"
            )
    out.append(
        f"/metrics scraped {scrapes} times during the run; the collector received "
        f"{exports} trace exports"
    )
    return out
