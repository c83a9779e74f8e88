"""The benchmark report: absolute numbers, ratios to the echo baseline, targets."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from bench.load import Phase
from bench.procs import THREAD_KINDS

MB = 1_000_000


@dataclass(frozen=True)
class Scenario:
    name: str
    phase: Phase
    server_cpu_s: float  # CPU time of the serving process during the measured phase
    client_cpu_s: float  # CPU time of the benchmark's client process during the measured phase
    tools_cpu_s: float | None = None  # CPU time of the tool service the server called
    # the serving process's CPU time by kind of thread (bench.procs.thread_cpu)
    threads_cpu_s: Mapping[str, float] = field(default_factory=dict)
    rounds_us: tuple[float, ...] = ()  # server CPU per request in each measured round

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


def paired_ratio(over: Scenario, base: Scenario) -> float:
    """The median of the rounds' ratios of server CPU per request, round i of `over` to round
    i of `base` (measured one after the other, interleaved): a burst of other work on the
    machine lands on one round's pair and moves one ratio, not the median."""
    ratios = sorted(a / b for a, b in zip(over.rounds_us, base.rounds_us, strict=False) if b)
    if not ratios:
        return math.nan
    mid = len(ratios) // 2
    return ratios[mid] if len(ratios) % 2 else (ratios[mid - 1] + ratios[mid]) / 2


@dataclass(frozen=True)
class Target:
    name: str
    limit: str
    measured: str
    met: bool | None  # None: reported only, or not measured

    @property
    def verdict(self) -> str:
        return "-" if self.met is None else "yes" if self.met else "NO"


def _ok(value: float) -> bool:
    return not math.isnan(value) and not math.isinf(value)


def at_most(name: str, limit: str, value: float, bound: float, measured: str) -> Target:
    return Target(name, limit, measured, value <= bound if _ok(value) else False)


def at_least(name: str, limit: str, value: float, bound: float, measured: str) -> Target:
    return Target(name, limit, measured, value >= bound if _ok(value) else False)


def within(name: str, ratio: float, tolerance: float, measured: str) -> Target:
    """A ratio that must stay within 1 ± tolerance."""
    ok = _ok(ratio) and abs(ratio - 1) <= tolerance + 1e-12
    return Target(name, f"within ±{tolerance * 100:.0f}%", measured, ok)


def not_measured(name: str, limit: str, why: str) -> Target:
    return Target(name, limit, f"not measured: {why}", None)


@dataclass(frozen=True)
class Pair:
    """The same request against a small and a large setup (a flat-cost scenario)."""

    small: Scenario
    large: Scenario

    @property
    def cpu_ratio(self) -> float:
        """large over small: server CPU per request."""
        small = self.small.cpu_us_per_request(self.small.server_cpu_s)
        return self.large.cpu_us_per_request(self.large.server_cpu_s) / small

    @property
    def p50_ratio(self) -> float:
        return self.large.p50_ms / self.small.p50_ms


@dataclass(frozen=True)
class StoreCounts:
    """Per SubmitTurn on one store: data statements, transaction control, commits."""

    store: str
    statements: float
    begins: float
    commit_statements: float
    commits: float  # COMMIT statements and writes outside a transaction
    settings: float  # PRAGMA or SET: a connection's setting, no data read or written


@dataclass(frozen=True)
class OneAtATime:
    """SubmitTurn at concurrency 1, and each tool's own p50 asked directly over HTTP."""

    submit_p50_ms: float
    tool_p50_ms: dict[str, float]

    @property
    def slower_tool(self) -> str:
        return max(self.tool_p50_ms, key=lambda t: self.tool_p50_ms[t])

    @property
    def overhead_ms(self) -> float:
        return self.submit_p50_ms - self.tool_p50_ms[self.slower_tool]


@dataclass(frozen=True)
class WorkersResult:
    """`serve --workers 1` vs `--workers 2`: throughput of each scenario, peak RSS per worker
    process (MB)."""

    throughput: dict[str, tuple[float, float]]  # scenario -> (1 worker, 2 workers) req/s
    rss_mb: tuple[list[float], list[float]]  # per worker process, with 1 and with 2 workers


@dataclass
class Results:
    """What the run measured; a part left out says why in `skipped` (its key)."""

    echo: Scenario | None = None
    authorize: Scenario | None = None
    submit: Scenario | None = None
    fresh: Scenario | None = None  # Authorize, new arguments each request
    fresh_read: Scenario | None = None  # ... on a bundle that reads the new argument
    opa_rest: Scenario | None = None  # the same decision asked of a live OPA over REST
    opa_one: tuple[Scenario, Scenario] | None = None  # new-argument Authorize, OPA; 1 in flight
    counts: list[StoreCounts] = field(default_factory=list)
    one_at_a_time: OneAtATime | None = None
    getrun_p50_ms: float | None = None
    tools: Pair | None = None
    data: Pair | None = None
    long: Pair | None = None
    workers: WorkersResult | None = None
    skipped: dict[str, str] = field(default_factory=dict)

    def why(self, part: str) -> str:
        return self.skipped.get(part, "not run")


def _x(v: float) -> str:
    return f"{v:.2f}x"


def _main_targets(r: Results) -> list[Target]:
    names = (
        "Authorize, new arguments: server CPU per request",
        "Authorize, new arguments: p50 at 8 in flight / echo p50",
        "Authorize, new arguments: throughput / echo throughput",
        "Authorize, repeated request: p50 at 8 in flight / echo p50",
        "Authorize, repeated request: server CPU per request",
        "Authorize, new arguments the policy reads: server CPU",
        "SubmitTurn, two HTTP reads: sidecar CPU per turn",
    )
    limits = ("<= 2x echo's", "<= 2x", ">= 0.7x", "<= 1.5x", "reported", "reported", "<= 2,500 us")
    echo, auth, turn, fresh = r.echo, r.authorize, r.submit, r.fresh
    if echo is None or auth is None or turn is None or fresh is None:
        return [not_measured(n, lim, r.why("main")) for n, lim in zip(names, limits, strict=True)]
    echo_cpu = echo.cpu_us_per_request(echo.server_cpu_s)

    def cpu(s: Scenario) -> tuple[float, str]:
        us = s.cpu_us_per_request(s.server_cpu_s)
        return us / echo_cpu, f"{us:.0f} us = {_x(us / echo_cpu)} echo's {echo_cpu:.0f} us"

    def p50(s: Scenario) -> tuple[float, str]:
        ratio = s.p50_ms / echo.p50_ms
        return ratio, f"{s.p50_ms:.2f} / {echo.p50_ms:.2f} ms = {_x(ratio)}"

    tput = fresh.phase.throughput / echo.phase.throughput
    turn_cpu = turn.cpu_us_per_request(turn.server_cpu_s)
    read = r.fresh_read
    return [
        at_most(names[0], limits[0], cpu(fresh)[0], 2.0, cpu(fresh)[1]),
        at_most(names[1], limits[1], p50(fresh)[0], 2.0, p50(fresh)[1]),
        at_least(
            names[2],
            limits[2],
            tput,
            0.7,
            f"{fresh.phase.throughput:.0f} / {echo.phase.throughput:.0f} = {_x(tput)}",
        ),
        at_most(names[3], limits[3], p50(auth)[0], 1.5, p50(auth)[1]),
        Target(names[4], limits[4], cpu(auth)[1], None),
        Target(names[5], limits[5], cpu(read)[1], None)
        if read is not None
        else not_measured(names[5], limits[5], r.why("main")),
        at_most(names[6], limits[6], turn_cpu, 2500, f"{turn_cpu:,.0f} us"),
    ]


def _opa_targets(r: Results) -> list[Target]:
    """The new-argument Authorize's p50 over OPA's for the same decision over REST, at 8 in
    flight (as the other Authorize targets) and at 1."""
    names = (
        "Authorize, new arguments: p50 / OPA REST p50, same decision, 8 in flight",
        "Authorize, new arguments: p50 / OPA REST p50, same decision, 1 in flight",
    )
    pairs = (
        (r.fresh, r.opa_rest) if r.fresh is not None and r.opa_rest is not None else None,
        r.opa_one,
    )
    out = []
    for name, pair in zip(names, pairs, strict=True):
        if pair is None:
            ran = r.fresh is not None or r.opa_one is not None
            out.append(not_measured(name, "<= 2x", r.why("opa" if ran else "main")))
            continue
        ours, opa = pair
        ratio = ours.p50_ms / opa.p50_ms
        measured = f"{ours.p50_ms:.2f} / {opa.p50_ms:.2f} ms = {_x(ratio)}"
        out.append(at_most(name, "<= 2x", ratio, 2.0, measured))
    return out


def _count_targets(r: Results) -> list[Target]:
    statements = "SubmitTurn, two HTTP reads: SQL statements per turn"
    commits = "SubmitTurn commits per turn"
    out = []
    for store in ("sqlite", "postgresql"):
        found = next((c for c in r.counts if c.store == store), None)
        if found is None:
            why = r.skipped.get(f"counts-{store}", r.why("counts"))
            out += [
                not_measured(f"{statements} ({store})", "<= 10", why),
                not_measured(f"{commits} ({store})", "<= 3", why),
            ]
            continue
        out += [
            at_most(
                f"{statements} ({store})",
                "<= 10",
                found.statements,
                10,
                f"{found.statements:.1f} (+ {found.begins:.1f} BEGIN, "
                f"{found.commit_statements:.1f} COMMIT"
                + (f", {found.settings:.1f} PRAGMA/SET" if found.settings else "")
                + ")",
            ),
            at_most(f"{commits} ({store})", "<= 3", found.commits, 3, f"{found.commits:.1f}"),
        ]
    return out


def _pair_target(name: str, pair: Pair | None, why: str) -> Target:
    if pair is None:
        return not_measured(name, "within ±20%", why)
    return within(
        name, pair.cpu_ratio, 0.2, f"CPU/req {_x(pair.cpu_ratio)}, p50 {_x(pair.p50_ratio)}"
    )


def _workers_target(r: Results) -> Target:
    name = "--workers 1 vs 2: Authorize, SubmitTurn req/s; peak RSS per worker"
    w = r.workers
    if w is None:
        return not_measured(name, "reported", r.why("workers"))
    rates = "; ".join(f"{s} {a:.0f} -> {b:.0f}" for s, (a, b) in w.throughput.items())
    rss = " / ".join(", ".join(f"{m:.0f}" for m in ms) for ms in w.rss_mb)
    return Target(name, "reported", f"{rates} req/s; RSS {rss} MB", None)


def evaluate(r: Results) -> list[Target]:
    """Every target of the benchmark, in the order of bench/README.md's table."""
    out = [*_main_targets(r), *_opa_targets(r), *_count_targets(r)]
    seq_name = "SubmitTurn one at a time: p50 minus the slower tool's own p50"
    one = r.one_at_a_time
    if one is None:
        out.append(not_measured(seq_name, "<= 3 ms", r.skipped.get("sequential", r.why("main"))))
    else:
        out.append(
            at_most(
                seq_name,
                "<= 3 ms",
                one.overhead_ms,
                3.0,
                f"{one.overhead_ms:.2f} ms ({one.submit_p50_ms:.2f} - "
                f"{one.slower_tool} {one.tool_p50_ms[one.slower_tool]:.2f})",
            )
        )
    getrun = "GetRun of a 600-turn run (summary + one default page), p50"
    if r.getrun_p50_ms is None:
        out.append(not_measured(getrun, "<= 20 ms", r.why("pages")))
    else:
        out.append(at_most(getrun, "<= 20 ms", r.getrun_p50_ms, 20.0, f"{r.getrun_p50_ms:.2f} ms"))
    out += [
        _pair_target("Authorize with 10 vs 10,000 tool manifests", r.tools, r.why("tools")),
        _pair_target("Authorize with 100 vs 100,000 policy data entries", r.data, r.why("data")),
        _pair_target("SubmitTurn on a run's 10th vs its 5,000th turn", r.long, r.why("long")),
        _workers_target(r),
    ]
    return out


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in (header, *rows)) for i in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        first = cells[0].ljust(widths[0])
        rest = (c.rjust(w) for c, w in zip(cells[1:], widths[1:], strict=True))
        return "  ".join([first, *rest]).rstrip()

    return [line(header), line(["-" * w for w in widths]), *(line(r) for r in rows)]


def scenario_table(scenarios: Sequence[Scenario]) -> list[str]:
    def per_request(s: Scenario, cpu_s: float | None) -> str:
        return "-" if cpu_s is None else f"{s.cpu_us_per_request(cpu_s):.0f}"

    rows = [
        [
            s.name,
            f"{s.phase.count}",
            f"{s.p50_ms:.3f}",
            f"{s.p99_ms:.3f}",
            f"{s.phase.throughput:.0f}",
            per_request(s, s.server_cpu_s),
            f"{s.server_cores:.2f}",
            per_request(s, s.client_cpu_s),
            per_request(s, s.tools_cpu_s),
        ]
        for s in scenarios
    ]
    return _table(
        [
            "scenario",
            "requests",
            "p50 ms",
            "p99 ms",
            "req/s",
            "server CPU us/req",
            "server cores",
            "client CPU us/req",
            "tools CPU us/req",
        ],
        rows,
    )


def thread_table(scenarios: Sequence[Scenario]) -> list[str]:
    """Server CPU per request by kind of thread, for the scenarios that measured it."""
    measured = [s for s in scenarios if s.threads_cpu_s]
    kinds = [k for k in THREAD_KINDS if any(s.threads_cpu_s.get(k) for s in measured)]
    if not measured or not kinds:
        return []
    return _table(
        ["scenario", *kinds],
        [
            [s.name, *(f"{s.cpu_us_per_request(s.threads_cpu_s.get(k, 0.0)):.0f}" for k in kinds)]
            for s in measured
        ],
    )


def render(
    *,
    info: Sequence[tuple[str, str]],
    scenarios: Sequence[Scenario],
    echo_ratios: Sequence[Scenario],
    memory_rows: Sequence[tuple[str, int, int]],
    sections: Sequence[tuple[str, Sequence[str]]],
    goals: Sequence[Target],
    notes: Sequence[str] = (),
) -> str:
    """The report: run info, every gRPC scenario, ratios of `echo_ratios[1:]` to
    `echo_ratios[0]` (the echo server), memory, the other measurements' sections, targets."""
    out = ["callgate benchmark", ""]
    width = max(len(k) for k, _ in info)
    out += [f"{k.ljust(width)}  {v}" for k, v in info]
    if scenarios:
        out += ["", "Latency and throughput (client-side wall time per request)", ""]
        out += scenario_table(scenarios)
        by_thread = thread_table(scenarios)
        if by_thread:
            out += [
                "",
                "Server CPU by thread (us per request; the event loop is the main thread)",
                "",
                *by_thread,
            ]
    if echo_ratios:
        echo = echo_ratios[0]
        out += ["", "Ratios to the echo server (same run)", ""]
        out += _table(
            [
                "scenario",
                "p50 / echo p50",
                "p99 / echo p99",
                "req/s / echo req/s",
                "server CPU / echo's",
            ],
            [
                [
                    s.name,
                    _x(s.p50_ms / echo.p50_ms),
                    _x(s.p99_ms / echo.p99_ms),
                    _x(s.phase.throughput / echo.phase.throughput),
                    _x(
                        s.cpu_us_per_request(s.server_cpu_s)
                        / echo.cpu_us_per_request(echo.server_cpu_s)
                    ),
                ]
                for s in echo_ratios[1:]
            ],
        )
    if memory_rows:
        out += ["", "Memory", ""]
        out += _table(
            ["process", "peak RSS (VmHWM) MB", "RSS now MB"],
            [
                [name, f"{hwm * 1024 / MB:.1f}", f"{rss * 1024 / MB:.1f}"]
                for name, hwm, rss in memory_rows
            ],
        )
    for title, lines in sections:
        out += ["", title, "", *lines]
    out += ["", "Targets (met: yes or NO; - reported only, or not measured)", ""]
    out += _table(
        ["target", "limit", "measured", "met"],
        [[g.name, g.limit, g.measured, g.verdict] for g in goals],
    )
    if notes:
        out += ["", *notes]
    return "\n".join(out) + "\n"
