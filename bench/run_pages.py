"""`python -m bench.run_pages`: what GetRun costs on a long run, in-process, on this machine.

    .venv/bin/python -m bench.run_pages [--turns N] [--repeat N] [--no-postgres] [--no-save]

A run of N turns (default 600), each with a raw provider response and one settled call, is
written to a fresh store of each kind. Then, in-process (no gRPC), what the GetRun servicer
does is timed: `Runner.get_run` (owner check, one page read) and `convert.run_page_to` (the
protobuf answer), for pages of the latest 10 and 20 turns, the default page (the latest 50),
the oldest page, and a page of `--max-run-page-turns` (500, which `--max-run-page-bytes`
stops short); and, for comparison, the whole run in one message as GetRun
answered it before pages (`RunStore.get_view`, every turn and call). The size of each answer
is its serialized protobuf. Writes the report to bench/results/run_pages.txt.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path

from bench.audit import pg_schema
from bench.procs import ROOT
from gateway import pb
from gateway.model import (
    CallRecord,
    CallStatus,
    EventKind,
    Identity,
    NextAction,
    RunRecord,
    RunState,
    TurnRecord,
    Usage,
)
from gateway.policy.embedded import EmbeddedEngine
from gateway.policy.reload import ReloadingEngine, prepare
from gateway.run.runner import Runner
from gateway.store import RunStore, open_store
from gateway.tools import Registry
from gateway.wire import convert

RESULTS = ROOT / "bench" / "results" / "run_pages.txt"
OWNER = Identity("alice", "acme", ("traveler",))
NOW = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
RUN_ID = "long-run"


def raw_response(n: int) -> str:
    return json.dumps(
        {
            "id": f"msg_{n:04d}",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-6",
            "stop_reason": "tool_use",
            "stop_sequence": None,
            "content": [
                {"type": "text", "text": f"Step {n}: checking the next train. " * 6},
                {
                    "type": "tool_use",
                    "id": f"toolu_{n:04d}",
                    "name": "get_train_status",
                    "input": {"train_number": "ICE123", "date": "2026-12-01"},
                },
            ],
            "usage": {"input_tokens": 1200 + n, "output_tokens": 60},
        }
    )


async def fill(store: RunStore, turns: int) -> None:
    run = await store.create_run(
        RunRecord(
            run_id=RUN_ID,
            state=RunState.ACTIVE,
            subject=OWNER.subject,
            tenant=OWNER.tenant,
            provider="anthropic.messages",
            params_hash="p",
            created_at=NOW,
            updated_at=NOW,
        )
    )
    output = json.dumps(
        {
            "train_number": "ICE123",
            "status": "on time",
            "delay_min": 0,
            "platform": "7",
            "note": "x" * 150,
        }
    )
    for n in range(1, turns + 1):
        turn = TurnRecord(
            run_id=RUN_ID,
            turn_id=f"msg_{n:04d}",
            seq=n,
            event=EventKind.TOOL_REQUEST,
            content_hash=f"h{n}",
            provider="anthropic.messages",
            model="claude-sonnet-4-6",
            usage=Usage(1200 + n, 60),
            raw_response_json=raw_response(n),
            next=NextAction.CONTINUE,
            created_at=NOW,
        )
        call = CallRecord(
            run_id=RUN_ID,
            turn_id=turn.turn_id,
            call_id=f"toolu_{n:04d}",
            index=0,
            tool="get_train_status",
            status=CallStatus.SUCCEEDED,
            arguments_json='{"train_number": "ICE123", "date": "2026-12-01"}',
            tool_version="1.0.0",
            effect="read",
            output_json=output,
            execution_count=1,
            created_at=NOW,
            finished_at=NOW,
        )
        await store.begin_turn(run, turn, [call])


async def timed(fn: Callable[[], Awaitable[pb.Run]], repeat: int) -> tuple[float, float, int, int]:
    """Median and least milliseconds of fn over `repeat` runs (the least is the cost with the
    fewest interruptions by other work on the machine), the answer's bytes and turns."""
    answer = await fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        answer = await fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times), min(times), answer.ByteSize(), len(answer.turns)


async def measure(db: str, turns: int, repeat: int) -> list[str]:
    store = await open_store(db)
    try:
        await fill(store, turns)
        registry = Registry.load(ROOT / "examples" / "travel" / "tools")
        policy = ReloadingEngine(
            EmbeddedEngine(prepare(ROOT / "policies", "data.callgate"), checked=True)
        )
        runner = Runner(store=store, registry=registry, policy=policy)

        async def page(size: int = 0, token: str = "") -> pb.Run:
            found = await runner.get_run(OWNER, RUN_ID, page_size=size, page_token=token)
            return convert.run_page_to(found)

        async def whole() -> pb.Run:
            view = await store.get_view(RUN_ID)
            assert view is not None
            return convert.run_to(view.run, view)

        latest = await page()
        oldest_token = latest.next_page_token
        while True:  # the token of the page holding the first turns
            older = await page(token=oldest_token)
            if not older.next_page_token:
                break
            oldest_token = older.next_page_token
        cases: list[tuple[str, Callable[[], Awaitable[pb.Run]]]] = [
            ("GetRun, page_size 10", lambda: page(10)),
            ("GetRun, page_size 20", lambda: page(20)),
            ("GetRun, default page (latest 50 turns)", page),
            ("GetRun, the oldest page", lambda: page(token=oldest_token)),
            ("GetRun, page_size 500 (stops at 1 MiB of records)", lambda: page(500)),
            ("the whole run in one message (before pages)", whole),
        ]
        lines = []
        for name, fn in cases:
            ms, least, size, count = await timed(fn, repeat)
            lines.append(
                f"| {store.name} | {name} | {count} | {size / 1024:.0f} KiB | "
                f"{ms:.2f} | {least:.2f} |"
            )
        return lines
    finally:
        await store.close()


async def main(args: argparse.Namespace) -> str:
    rows = ["| store | read | turns | answer | median ms | least ms |", "|---|---|---|---|---|---|"]
    with tempfile.TemporaryDirectory() as tmp:
        rows += await measure(str(Path(tmp) / "pages.db"), args.turns, args.repeat)
    if args.postgres:
        with pg_schema() as url:
            rows += await measure(url, args.turns, args.repeat)
    return "\n".join(
        [
            f"GetRun of a run of {args.turns} turns (one call each), in-process, no gRPC; "
            f"median of {args.repeat}.",
            f"{platform.python_implementation()} {platform.python_version()}, "
            f"{platform.machine()}, {datetime.now(UTC):%Y-%m-%d}, load average "
            f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores at the start.",
            "",
            *rows,
            "",
        ]
    )


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.run_pages")
    p.add_argument("--turns", type=int, default=600)
    p.add_argument("--repeat", type=int, default=30)
    p.add_argument("--no-postgres", dest="postgres", action="store_false")
    p.add_argument("--no-save", dest="save", action="store_false")
    return p.parse_args(argv)


if __name__ == "__main__":
    ns = parse()
    report = asyncio.run(main(ns))
    print(report)
    if ns.save:
        RESULTS.write_text(report)
