"""The `quotas` part of `make bench`: what a quota per call costs the sidecar.

Three sidecars per store, started together and driven in one interleaved schedule: two with the
default bundle (the second measures the noise between identical processes), one whose bundle
charges every call of the two travel reads against a quota of
its caller (`call_quotas`, a limit no run reaches: every reservation fits, so both sidecars do
the same work but for the reservations). Each is asked Authorize (one reservation per request,
kept) and SubmitTurn with two reads (two reservations, in the commit of the turn's decisions)
at 8 in flight, on SQLite and, unless `--no-postgres`, on PostgreSQL. The target is the server
CPU per request with a quota over without one: at most 1.10, judged on the median of the
rounds' ratios (`bench.report.paired_ratio`; the whole run's ratio is shown beside it).
"""

from __future__ import annotations

import contextlib
import json
import shutil
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any, Protocol

import psycopg

from bench.audit import pg_schema
from bench.procs import ROOT
from bench.report import paired_ratio
from bench.workloads import Workload, authorize_call, start_runs, submit_turn_call
from gateway.testing import SidecarProcess

POLICIES = ROOT / "policies"


class BenchLike(Protocol):
    ns: Any
    sections: list[tuple[str, list[str]]]

    def sidecar(
        self, name: str, *, policies: Path = ..., extra_args: Sequence[str] = (), db: Any = None
    ) -> SidecarProcess: ...

    async def pair(self, workloads: Sequence[Workload]) -> list[Any]: ...


QUOTA_TARGET = 1.10
TOOLS = ("get_train_status", "get_weather")


def quota_policies(into: Path) -> Path:
    """The default bundle, charging each call of the travel reads to its caller's key."""
    if not into.exists():
        shutil.copytree(POLICIES, into)
        data = json.loads((into / "data.json").read_text())
        data["callgate"]["config"]["call_quotas"] = {
            tool: {"limit": 1e12, "window_s": 3600} for tool in TOOLS
        }
        (into / "data.json").write_text(json.dumps(data))
    return into


async def part_quotas(b: BenchLike, stubs: Any, tmp: Path) -> None:
    """`stubs(sidecar)`: a ToolGateway stub on a channel of the benchmark's own."""
    print("quotas: Authorize and SubmitTurn, no quota vs one quota per call", flush=True)
    charged = quota_policies(tmp / "quota-policies")
    lines: list[str] = []
    with ExitStack() as stack:
        stores: list[tuple[str, Any, Any, Any]] = [
            ("SQLite", tmp / "quota-none.db", tmp / "quota-one.db", tmp / "quota-again.db")
        ]
        if not b.ns.no_postgres:
            with contextlib.suppress(psycopg.OperationalError):
                stores.append(
                    (
                        "PostgreSQL",
                        stack.enter_context(pg_schema()),
                        stack.enter_context(pg_schema()),
                        stack.enter_context(pg_schema()),
                    )
                )
        for store, plain_db, quota_db, again_db in stores:
            key = ["--audit-key-file", str(tmp / f"quota-{store}.key")]
            plain = stack.enter_context(
                b.sidecar(f"quota-none-{store}", db=plain_db, extra_args=key)
            )
            quota = stack.enter_context(
                b.sidecar(f"quota-one-{store}", db=quota_db, policies=charged, extra_args=key)
            )
            again = stack.enter_context(  # the noise between two identical sidecars
                b.sidecar(f"quota-none-again-{store}", db=again_db, extra_args=key)
            )
            workloads = []
            for kind, sidecar in (
                ("no quota", plain),
                ("one quota per call", quota),
                ("no quota again", again),
            ):
                assert sidecar.proc is not None
                stub = stubs(sidecar)
                runs = await start_runs(stub, b.ns.concurrency)
                workloads += [
                    Workload(
                        f"Authorize, {store}, {kind}",
                        authorize_call(stub),
                        sidecar.proc.pid,
                        b.ns.concurrency,
                    ),
                    Workload(
                        f"SubmitTurn (2 reads), {store}, {kind}",
                        submit_turn_call(stub, runs),
                        sidecar.proc.pid,
                        b.ns.concurrency,
                    ),
                ]
            lines += _lines(store, await b.pair(workloads))
    b.sections.append(
        ("Quota cost (server CPU per request with one quota per call over none, same run)", lines)
    )


def _lines(store: str, found: Sequence[Any]) -> list[str]:
    by_name = {s.name: s for s in found}
    out = []
    for rpc in ("Authorize", "SubmitTurn (2 reads)"):
        plain = by_name[f"{rpc}, {store}, no quota"]
        quota = by_name[f"{rpc}, {store}, one quota per call"]
        again = by_name[f"{rpc}, {store}, no quota again"]
        out.append(
            f"{rpc}, {store}, no quota again / no quota: {paired_ratio(again, plain):.3f}x, "
            "the noise between two identical sidecars (median of paired rounds)"
        )
        base, cpu = (s.cpu_us_per_request(s.server_cpu_s) for s in (plain, quota))
        paired = paired_ratio(quota, plain)
        out.append(
            f"{rpc}, {store}: {paired:.3f}x, the median of {len(quota.rounds_us)} paired "
            f"rounds (over the whole run {cpu / base:.3f}x: {cpu:,.0f} vs {base:,.0f} us/req; "
            f"p50 {quota.p50_ms / plain.p50_ms:.2f}x); target <= {QUOTA_TARGET:.2f}x: "
            f"{'yes' if paired <= QUOTA_TARGET else 'NO'}"
        )
    return out
