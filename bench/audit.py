"""`python -m bench.audit`: what the audit trail costs, measured in one run on this machine.

    .venv/bin/python -m bench.audit [--records N] [--queries N] [--decisions N]
                                    [--no-postgres] [--no-save]

1. QueryAudit of one run among N (default 1,000,000) audit records, on each store: the store
   is filled with N chained, sealed records of 20,000 runs (50 each, interleaved, so a run's
   records are spread over the whole table), then a real `callgate serve` over it answers
   QueryAudit{run_id} for random runs (as an auditor, over gRPC: authorization, the query,
   streaming). Also the store's own query, in-process, without gRPC.
2. The audit append per decision, trail on vs off: `Runner.authorize` (one call, the default
   policy, one `authorize` record each) in-process against each store, and the same store
   with `append_audit` replaced by a no-op; one caller at a time, and 8 at once.

Writes the report to bench/results/audit.txt. See bench/README.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import sqlite3
import statistics
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

from bench.procs import ROOT
from gateway.audit import hashing
from gateway.audit.keys import AuditKey
from gateway.audit.records import AuditEvent, AuditFilter
from gateway.client import GatewayClient
from gateway.model import CallStatus, Decision, Identity, RunRecord, RunState, ToolCall, Verdict
from gateway.policy.embedded import EmbeddedEngine
from gateway.policy.reload import ReloadingEngine, prepare
from gateway.run.authorize import Authorizer
from gateway.run.runner import Runner
from gateway.store import RunStore, codecs, fragments, open_store, schema
from gateway.store.postgres import PostgresStore
from gateway.store.sqlite import SQLiteStore
from gateway.testing import SidecarProcess
from gateway.tools import Registry

RESULTS = ROOT / "bench" / "results" / "audit.txt"
RUNS = 20_000
TENANTS = ("acme", "globex", "initech", "umbrella")
AUDITOR = "audrey-demo-token"  # examples/auth.yaml: an auditor of acme
T0 = datetime(2026, 11, 1, tzinfo=UTC)
TRAIN = {"train_number": "ICE123", "date": "2026-12-01"}
PG_DSN = os.environ.get("CALLGATE_TEST_POSTGRES_DSN", "postgresql://postgres@127.0.0.1:5432/test")


# ---------------------------------------------------------------------- filling a store


def run_of(i: int) -> tuple[str, str, str]:
    """run ID, tenant, subject of run number i."""
    tenant = TENANTS[i % len(TENANTS)]
    return f"run-{i:05d}", tenant, "alice" if tenant == "acme" else f"user{i % 97}"


def audit_rows(count: int, key: AuditKey) -> Iterator[tuple[Any, ...]]:
    """count chained, sealed audit rows (seq, columns...), run i % RUNS for record i."""
    prev = ""
    decision = Decision(
        Verdict.ALLOW, ("travelers read trains",), "sha256:bench", input_sha256="e" * 64
    )
    summary = '{"train_number": "ICE123", "date": "2026-12-01"}'
    for seq in range(1, count + 1):
        run_id, tenant, subject = run_of(seq % RUNS)
        kind = "decision" if seq % 2 else "execution"
        event = AuditEvent(
            kind=kind,
            subject=subject,
            tenant=tenant,
            run_id=run_id,
            turn_id=f"t{seq // RUNS}",
            call_id=f"c{seq // RUNS}",
            provider="openai.responses",
            tool="get_train_status",
            tool_version="1.0.0",
            arguments_summary_json=summary,
            arguments_sha256="a" * 64,
            decision=decision,
            status=None if kind == "decision" else CallStatus.SUCCEEDED,
            execution_count=0 if kind == "decision" else 1,
            policy_revision="sha256:bench",
            time=T0 + timedelta(milliseconds=seq),
            actor=subject if kind == "decision" else "",
            actor_tenant=tenant if kind == "decision" else "",
        )
        values, prev = codecs.audit_row(event, prev, key)
        yield (seq, *values)


def run_rows() -> Iterator[tuple[Any, ...]]:
    for i in range(RUNS):
        run_id, tenant, subject = run_of(i)
        yield codecs.run_row(
            RunRecord(
                run_id,
                RunState.ACTIVE,
                subject,
                tenant,
                provider="openai.responses",
                created_at=T0,
                updated_at=T0,
            )
        )


def batches(items: Iterator[tuple[Any, ...]], size: int) -> Iterator[list[tuple[Any, ...]]]:
    batch: list[tuple[Any, ...]] = []
    for item in items:
        batch.append(item)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


async def create(db: str) -> None:
    store = await open_store(db)  # the schema, as serve creates it
    await store.close()


def fill_sqlite(path: Path, count: int, key: AuditKey) -> None:
    asyncio.run(create(str(path)))
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA synchronous=OFF")  # filling only; the sidecar reopens it as usual
    cols = ("seq", *hashing.AUDIT_COLUMNS)
    marks = fragments.placeholders(cols, "?")
    with conn:
        conn.executemany(
            f"INSERT INTO runs ({', '.join(schema.RUN_COLUMNS)}) VALUES "
            f"({fragments.placeholders(schema.RUN_COLUMNS, '?')})",
            run_rows(),
        )
    for batch in batches(audit_rows(count, key), 20_000):
        with conn:
            conn.executemany(f"INSERT INTO audit ({', '.join(cols)}) VALUES ({marks})", batch)
    conn.execute("ANALYZE")
    conn.close()


def fill_postgres(url: str, count: int, key: AuditKey) -> None:
    asyncio.run(create(url))
    cols = ("seq", *hashing.AUDIT_COLUMNS)
    with psycopg.connect(url) as conn:
        with conn.cursor() as cur:
            with cur.copy(f"COPY runs ({', '.join(schema.RUN_COLUMNS)}) FROM STDIN") as copy:
                for row in run_rows():
                    copy.write_row(row)
            with cur.copy(f"COPY audit ({', '.join(cols)}) FROM STDIN") as copy:
                for row in audit_rows(count, key):
                    copy.write_row(row)
            cur.execute("SELECT setval(pg_get_serial_sequence('audit', 'seq'), %s)", (count,))
        conn.commit()
        conn.autocommit = True
        conn.execute("ANALYZE")


@contextmanager
def pg_schema() -> Iterator[str]:
    name = f"bench_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(name)))
    sep = "&" if "?" in PG_DSN else "?"
    try:
        yield f"{PG_DSN}{sep}options=-csearch_path%3D{name}"
    finally:
        with psycopg.connect(PG_DSN, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(name)))


# ---------------------------------------------------------------------- measuring


def ms(samples: Sequence[float]) -> str:
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return f"{statistics.median(ordered) * 1000:7.2f} {p99 * 1000:7.2f} {ordered[-1] * 1000:7.2f}"


def acme_runs(n: int, records: int) -> list[str]:
    """n random runs of tenant acme (the auditor's) that hold records (record i, counting from
    1, belongs to run i % RUNS)."""
    step = len(TENANTS)
    held = range(0, RUNS, step) if records >= RUNS else range(step, records + 1, step)
    if not held:
        raise SystemExit(f"--records {records}: too few for a run of tenant acme (at least {step})")
    rng = random.Random(7)
    return [run_of(rng.choice(held))[0] for _ in range(n)]


async def store_queries(db: str, runs: list[str]) -> list[float]:
    store = await open_store(db)
    try:
        took = []
        for run_id in runs:
            start = time.perf_counter()
            found = await store.query_audit(AuditFilter(run_id=run_id), after=0, limit=500)
            took.append(time.perf_counter() - start)
            assert found, run_id
        return took
    finally:
        await store.close()


def grpc_queries(db: str, key_file: Path, runs: list[str]) -> tuple[list[float], int]:
    with (
        SidecarProcess(
            tools=ROOT / "examples" / "travel" / "tools",
            policies=ROOT / "policies",
            auth=ROOT / "examples" / "auth.yaml",
            db=db,
            audit_key=key_file,
        ) as sidecar,
        GatewayClient(sidecar.target, AUDITOR) as client,
    ):
        list(client.query_audit(run_id=runs[0], timeout_s=60))  # warm up
        took, count = [], 0
        for run_id in runs:
            start = time.perf_counter()
            found = list(client.query_audit(run_id=run_id, timeout_s=60))
            took.append(time.perf_counter() - start)
            count = len(found)
        return took, count


class Quiet:
    """The same store with the audit trail switched off (no record is appended)."""

    async def append_audit(self, events: Sequence[AuditEvent]) -> None:
        return None


class QuietSQLite(Quiet, SQLiteStore):
    pass


class QuietPostgres(Quiet, PostgresStore):
    pass


async def decisions(store: RunStore, n: int, concurrency: int) -> float:
    """Seconds per decision of Runner.authorize against store."""
    registry = Registry.load(ROOT / "examples" / "travel" / "tools")
    policy = ReloadingEngine(
        EmbeddedEngine(prepare(ROOT / "policies", "data.callgate"), checked=True)
    )
    authorizer = Authorizer(Runner(store=store, registry=registry, policy=policy))
    alice = Identity("alice", "acme", ("traveler",))
    calls = [ToolCall("c1", "get_train_status", json.dumps(TRAIN))]

    async def worker(count: int) -> None:
        for _ in range(count):
            (d,) = await authorizer.authorize(alice, "", calls)
            assert d.decision.verdict == Verdict.ALLOW

    await worker(50)  # warm up
    start = time.perf_counter()
    await asyncio.gather(*(worker(n // concurrency) for _ in range(concurrency)))
    took = (time.perf_counter() - start) / (n // concurrency * concurrency)
    await registry.aclose()
    return took


Opener = Callable[[], Awaitable[RunStore]]


async def append_cost(open_on: Opener, open_off: Opener, n: int) -> list[str]:
    lines = []
    for concurrency in (1, 8):
        on_store, off_store = await open_on(), await open_off()
        try:
            on = await decisions(on_store, n, concurrency)
            off = await decisions(off_store, n, concurrency)
        finally:
            await on_store.close()
            await off_store.close()
        lines.append(
            f"{concurrency:>9}  {on * 1e6:14.0f}  {off * 1e6:15.0f}  "
            f"{(on - off) * 1e6:13.0f}  {on / off:5.2f}x"
        )
    return lines


# ---------------------------------------------------------------------- the report


def query_section(
    kind: str, records: int, store_took: list[float], grpc_took: list[float], per_run: int
) -> list[str]:
    return [
        f"{kind:<12} store query (in-process)   {ms(store_took)}",
        f"{'':<12} QueryAudit over gRPC       {ms(grpc_took)}   "
        f"({per_run} records per run, {records:,} in the table)",
    ]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m bench.audit",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--records", type=int, default=1_000_000)
    p.add_argument("--queries", type=int, default=200)
    p.add_argument("--decisions", type=int, default=2000)
    p.add_argument("--no-postgres", action="store_true")
    p.add_argument("--no-save", action="store_true")
    args = p.parse_args(argv)
    key = AuditKey.ephemeral()
    runs = acme_runs(args.queries, args.records)
    report = [
        "callgate audit benchmark",
        "",
        f"date          {datetime.now(UTC):%Y-%m-%d %H:%M:%S} UTC",
        f"machine       {os.cpu_count()} cores, {platform.processor() or platform.machine()}"
        f", {platform.system()} {platform.release()}",
        f"load average  {' '.join(f'{x:.2f}' for x in os.getloadavg())} at start",
        f"python        {platform.python_implementation()} {platform.python_version()}",
        f"sqlite        {sqlite3.sqlite_version}",
        "",
        f"1. QueryAudit of one run among {args.records:,} records ({RUNS:,} runs, their "
        "records interleaved)",
        f"   {args.queries} queries for random runs of tenant acme, as its auditor; ms",
        "",
        f"{'store':<12} {'':<26} {'p50':>7} {'p99':>7} {'max':>7}",
    ]
    with tempfile.TemporaryDirectory(prefix="callgate-bench-audit-") as tmp:
        key_file = Path(tmp) / "audit.key"
        key_file.write_text(os.urandom(32).hex())
        key_file.chmod(0o600)
        key = AuditKey.load(key_file)
        db = Path(tmp) / "audit.db"
        started = time.perf_counter()
        fill_sqlite(db, args.records, key)
        print(f"sqlite filled in {time.perf_counter() - started:.0f} s", flush=True)
        store_took = asyncio.run(store_queries(str(db), runs))
        grpc_took, per_run = grpc_queries(str(db), key_file, runs)
        report += query_section("sqlite", args.records, store_took, grpc_took, per_run)
        if not args.no_postgres:
            with pg_schema() as url:
                started = time.perf_counter()
                fill_postgres(url, args.records, key)
                print(f"postgresql filled in {time.perf_counter() - started:.0f} s", flush=True)
                store_took = asyncio.run(store_queries(url, runs))
                grpc_took, per_run = grpc_queries(url, key_file, runs)
                report += query_section("postgresql", args.records, store_took, grpc_took, per_run)
        report += [
            "",
            "2. The audit append per decision: Runner.authorize, one call, the "
            "default policy, in-process",
            f"   {args.decisions} decisions per "
            "measurement; trail off = the same store with append_audit a no-op; us",
            "",
            "store       callers  trail on us/dec  trail off us/dec  append us/dec  ratio",
        ]
        for kind in ("sqlite", "postgresql"):
            if kind == "postgresql" and args.no_postgres:
                continue
            with pg_schema() if kind == "postgresql" else _sqlite_db(tmp) as url:
                lines = asyncio.run(append_cost(*_openers(kind, url, key), args.decisions))
            report += [f"{kind if i == 0 else '':<10}  {line}" for i, line in enumerate(lines)]
    report += [
        "",
        "Appends of concurrent callers share one SQLite commit (group commit); on",
        "PostgreSQL each Authorize is one transaction with one INSERT per record.",
    ]
    text = "\n".join(report) + "\n"
    print(text)
    if not args.no_save:
        RESULTS.write_text(text)
    return 0


@contextmanager
def _sqlite_db(tmp: str) -> Iterator[str]:
    yield str(Path(tmp) / f"decisions-{uuid.uuid4().hex[:6]}.db")


def _openers(kind: str, url: str, key: AuditKey) -> tuple[Opener, Opener]:
    if kind == "sqlite":

        async def on() -> RunStore:
            return await SQLiteStore.open(Path(url), audit_key=key)

        async def off() -> RunStore:
            return await QuietSQLite.open(Path(f"{url}-off"), audit_key=key)

        return on, off

    async def pg_on() -> RunStore:
        return await PostgresStore.open(url, audit_key=key)

    async def pg_off() -> RunStore:
        return await QuietPostgres.open(url, audit_key=key)

    return pg_on, pg_off


if __name__ == "__main__":
    raise SystemExit(main())
