"""The benchmark report: absolute numbers, ratios to the echo baseline, targets."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from bench.load import Phase

MB = 1_000_000


@dataclass(frozen=True)
class Scenario:
    name: str
    phase: Phase
    server_cpu_s: float  # CPU time of the serving process during the measured phase
    client_cpu_s: float  # CPU time of the benchmark's client process during the measured phase
    tools_cpu_s: float | None = None  # CPU time of the tool service the server called

    @property
    def p50_ms(self) -> float:
        return self.phase.percentile(50) * 1000

    @property
    def p99_ms(self) -> float:
        return self.phase.percentile(99) * 1000

    def cpu_us_per_request(self, cpu_s: float) -> float:
        return cpu_s / self.phase.count * 1e6 if self.phase.count else math.nan

    @property
    def server_cores(self) -> float:
        return self.server_cpu_s / self.phase.elapsed_s if self.phase.elapsed_s else math.nan


@dataclass(frozen=True)
class Target:
    name: str
    limit: str
    measured: str
    met: bool


def targets(echo: Scenario, authorize: Scenario, sidecar_hwm_kib: int) -> list[Target]:
    p50 = authorize.p50_ms / echo.p50_ms
    tput = authorize.phase.throughput / echo.phase.throughput
    rss_mb = sidecar_hwm_kib * 1024 / MB
    return [
        Target("Authorize p50 / echo p50", "<= 1.30x", f"{p50:.2f}x", p50 <= 1.3),
        Target("Authorize throughput / echo throughput", ">= 0.70x", f"{tput:.2f}x",
               tput >= 0.7),
        Target("sidecar peak RSS (VmHWM)", "<= 200 MB", f"{rss_mb:.1f} MB", rss_mb <= 200),
    ]


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in (header, *rows)) for i in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        first = cells[0].ljust(widths[0])
        rest = (c.rjust(w) for c, w in zip(cells[1:], widths[1:], strict=True))
        return "  ".join([first, *rest]).rstrip()

    return [line(header), line(["-" * w for w in widths]), *(line(r) for r in rows)]


def render(*, info: Sequence[tuple[str, str]], scenarios: Sequence[Scenario],
           memory_rows: Sequence[tuple[str, int, int]], goals: Sequence[Target],
           notes: Sequence[str] = ()) -> str:
    echo = scenarios[0]
    out = ["callgate benchmark", ""]
    width = max(len(k) for k, _ in info)
    out += [f"{k.ljust(width)}  {v}" for k, v in info]
    out += ["", "Latency and throughput (client-side wall time per request)", ""]
    rows = []

    def per_request(s: Scenario, cpu_s: float | None) -> str:
        return "-" if cpu_s is None else f"{s.cpu_us_per_request(cpu_s):.0f}"

    for s in scenarios:
        rows.append([s.name, f"{s.phase.count}", f"{s.p50_ms:.3f}", f"{s.p99_ms:.3f}",
                     f"{s.phase.throughput:.0f}",
                     per_request(s, s.server_cpu_s), f"{s.server_cores:.2f}",
                     per_request(s, s.client_cpu_s), per_request(s, s.tools_cpu_s)])
    out += _table(["scenario", "requests", "p50 ms", "p99 ms", "req/s", "server CPU us/req",
                   "server cores", "client CPU us/req", "tools CPU us/req"], rows)
    out += ["", "Ratios to the echo server (same run)", ""]
    ratio_rows = [[s.name, f"{s.p50_ms / echo.p50_ms:.2f}x", f"{s.p99_ms / echo.p99_ms:.2f}x",
                   f"{s.phase.throughput / echo.phase.throughput:.2f}x"] for s in scenarios[1:]]
    out += _table(["scenario", "p50 / echo p50", "p99 / echo p99", "req/s / echo req/s"],
                  ratio_rows)
    out += ["", "Memory", ""]
    out += _table(["process", "peak RSS (VmHWM) MB", "RSS now MB"],
                  [[name, f"{hwm * 1024 / MB:.1f}", f"{rss * 1024 / MB:.1f}"]
                   for name, hwm, rss in memory_rows])
    out += ["", "Targets (informational)", ""]
    out += _table(["target", "limit", "measured", "met"],
                  [[g.name, g.limit, g.measured, "yes" if g.met else "NO"] for g in goals])
    if notes:
        out += ["", *notes]
    return "\n".join(out) + "\n"
