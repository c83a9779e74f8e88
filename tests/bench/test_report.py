"""The benchmark's targets: each limit judged as its table says, a missing part never met."""

from __future__ import annotations

import math

from bench.load import Phase
from bench.report import (
    OneAtATime,
    Pair,
    Results,
    Scenario,
    StoreCounts,
    WorkersResult,
    at_least,
    at_most,
    evaluate,
    render,
    within,
)


def scenario(name: str, *, p50_ms: float, count: int, seconds: float, cpu_us: float) -> Scenario:
    phase = Phase(latencies_s=[p50_ms / 1000] * count, elapsed_s=seconds)
    return Scenario(name, phase, server_cpu_s=cpu_us * count / 1e6, client_cpu_s=0.0)


def by_name(results: Results) -> dict[str, str]:
    return {t.name: t.verdict for t in evaluate(results)}


def test_limits_at_their_bounds() -> None:
    assert at_most("x", "<= 2", 2.0, 2.0, "").met
    assert not at_most("x", "<= 2", 2.01, 2.0, "").met
    assert at_least("x", ">= 0.5", 0.5, 0.5, "").met
    assert not at_least("x", ">= 0.5", 0.49, 0.5, "").met
    assert not at_most("x", "<= 2", math.nan, 2.0, "").met
    assert within("x", 1.2, 0.2, "").met and within("x", 0.8, 0.2, "").met
    assert not within("x", 1.21, 0.2, "").met and not within("x", 0.79, 0.2, "").met
    assert not within("x", math.inf, 0.2, "").met


def test_main_targets_read_echo_as_the_floor() -> None:
    echo = scenario("echo", p50_ms=2.0, count=4000, seconds=1.0, cpu_us=250)
    # new arguments: twice echo's CPU and p50, 0.7 of its throughput; the repeated request
    # at 1.5 times its p50: every common-path target just met
    fresh = scenario("new", p50_ms=4.0, count=2800, seconds=1.0, cpu_us=500)
    auth = scenario("Authorize", p50_ms=3.0, count=3000, seconds=1.0, cpu_us=400)
    read = scenario("reads", p50_ms=8.0, count=1000, seconds=1.0, cpu_us=900)
    turn = scenario("SubmitTurn", p50_ms=40.0, count=100, seconds=1.0, cpu_us=2600)
    results = Results(echo=echo, authorize=auth, submit=turn, fresh=fresh, fresh_read=read)
    verdicts = by_name(results)
    assert verdicts["Authorize, new arguments: server CPU per request"] == "yes"
    assert verdicts["Authorize, new arguments: p50 at 8 in flight / echo p50"] == "yes"
    assert verdicts["Authorize, new arguments: throughput / echo throughput"] == "yes"
    assert verdicts["Authorize, repeated request: p50 at 8 in flight / echo p50"] == "yes"
    assert verdicts["Authorize, repeated request: server CPU per request"] == "-"
    assert verdicts["SubmitTurn, two HTTP reads: sidecar CPU per turn"] == "NO"
    shown = {t.name: t.measured for t in evaluate(results)}
    assert shown["Authorize, new arguments the policy reads: server CPU"] == (
        "900 us = 3.60x echo's 250 us"
    )

    slower = scenario("new", p50_ms=4.2, count=2700, seconds=1.0, cpu_us=520)
    repeated = scenario("Authorize", p50_ms=3.1, count=3000, seconds=1.0, cpu_us=400)
    verdicts = by_name(Results(echo=echo, authorize=repeated, submit=turn, fresh=slower))
    assert verdicts["Authorize, new arguments: server CPU per request"] == "NO"
    assert verdicts["Authorize, new arguments: p50 at 8 in flight / echo p50"] == "NO"
    assert verdicts["Authorize, new arguments: throughput / echo throughput"] == "NO"
    assert verdicts["Authorize, repeated request: p50 at 8 in flight / echo p50"] == "NO"


def test_opa_rest_is_the_floor_of_the_new_argument_p50() -> None:
    eight = "Authorize, new arguments: p50 / OPA REST p50, same decision, 8 in flight"
    one = "Authorize, new arguments: p50 / OPA REST p50, same decision, 1 in flight"
    fresh = scenario("new", p50_ms=4.0, count=2800, seconds=1.0, cpu_us=500)
    at_limit = scenario("OPA REST", p50_ms=2.0, count=5000, seconds=1.0, cpu_us=300)
    faster = scenario("OPA REST", p50_ms=1.9, count=5000, seconds=1.0, cpu_us=300)
    alone = scenario("new, 1", p50_ms=1.2, count=800, seconds=1.0, cpu_us=500)
    alone_opa = scenario("OPA REST, 1", p50_ms=0.5, count=2000, seconds=1.0, cpu_us=300)
    judged = {
        t.name: t
        for t in evaluate(Results(fresh=fresh, opa_rest=at_limit, opa_one=(alone, alone_opa)))
    }
    assert (judged[eight].verdict, judged[eight].measured) == ("yes", "4.00 / 2.00 ms = 2.00x")
    assert (judged[one].verdict, judged[one].measured) == ("NO", "1.20 / 0.50 ms = 2.40x")
    assert by_name(Results(fresh=fresh, opa_rest=faster))[eight] == "NO"
    # no OPA on the machine: said, never met
    why = "no OPA on this machine"
    missing = {t.name: t for t in evaluate(Results(fresh=fresh, skipped={"opa": why}))}
    for name in (eight, one):
        assert (missing[name].met, missing[name].measured) == (None, f"not measured: {why}")


def test_counts_one_at_a_time_pages_and_pairs() -> None:
    small = scenario("small", p50_ms=10, count=100, seconds=1, cpu_us=1000)
    large = scenario("large", p50_ms=30, count=100, seconds=1, cpu_us=1150)
    results = Results(
        counts=[
            StoreCounts("sqlite", 9.0, 2.0, 2.0, 2.0, 2.0),
            StoreCounts("postgresql", 11.0, 3.0, 3.0, 4.0, 0.0),
        ],
        one_at_a_time=OneAtATime(6.5, {"get_train_status": 2.0, "get_weather": 3.6}),
        getrun_p50_ms=20.5,
        tools=Pair(small, large),
        data=Pair(large, small),
        skipped={"long": "not run (--only)"},
    )
    verdicts = by_name(results)
    assert verdicts["SubmitTurn, two HTTP reads: SQL statements per turn (sqlite)"] == "yes"
    shown = {t.name: t.measured for t in evaluate(results)}
    assert shown["SubmitTurn, two HTTP reads: SQL statements per turn (sqlite)"] == (
        "9.0 (+ 2.0 BEGIN, 2.0 COMMIT, 2.0 PRAGMA/SET)"
    )
    assert shown["SubmitTurn, two HTTP reads: SQL statements per turn (postgresql)"] == (
        "11.0 (+ 3.0 BEGIN, 3.0 COMMIT)"
    )
    assert verdicts["SubmitTurn commits per turn (sqlite)"] == "yes"
    assert verdicts["SubmitTurn, two HTTP reads: SQL statements per turn (postgresql)"] == "NO"
    assert verdicts["SubmitTurn commits per turn (postgresql)"] == "NO"
    # 6.5 ms minus the slower tool's 3.6 ms
    assert results.one_at_a_time is not None
    assert results.one_at_a_time.overhead_ms == 6.5 - 3.6
    assert verdicts["SubmitTurn one at a time: p50 minus the slower tool's own p50"] == "yes"
    assert verdicts["GetRun of a 600-turn run (summary + one default page), p50"] == "NO"
    # judged on CPU per request (1.15x and 1/1.15x), not on p50 (3x)
    assert verdicts["Authorize with 10 vs 10,000 tool manifests"] == "yes"
    assert verdicts["Authorize with 100 vs 100,000 policy data entries"] == "yes"
    long = next(t for t in evaluate(results) if "5,000th" in t.name)
    assert long.met is None and long.measured == "not measured: not run (--only)"


def test_a_part_not_run_is_never_met_and_says_why() -> None:
    targets = evaluate(
        Results(skipped={"main": "not run (--only)", "workers": "serve has no --workers"})
    )
    assert len(targets) == 19
    assert all(t.met is None for t in targets)
    assert all(t.measured.startswith("not measured: ") for t in targets)
    assert targets[-1].measured == "not measured: serve has no --workers"


def test_workers_are_reported_and_the_table_renders() -> None:
    workers = WorkersResult(
        {"Authorize": (900.0, 1500.0), "SubmitTurn": (80.0, 120.0)}, ([110.0], [105.0, 104.0])
    )
    targets = evaluate(Results(workers=workers))
    assert targets[-1].met is None
    assert targets[-1].measured == (
        "Authorize 900 -> 1500; SubmitTurn 80 -> 120 req/s; RSS 110 / 105, 104 MB"
    )
    text = render(
        info=[("date", "today")],
        scenarios=[],
        echo_ratios=[],
        memory_rows=[],
        sections=[],
        goals=targets,
    )
    lines = text.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("target "))
    assert lines[header].split()[-1] == "met"
    assert [line.split()[-1] for line in lines[header + 2 :]] == ["-"] * 19
