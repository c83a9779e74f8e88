"""The sidecar's runner in this process: the real `Runner`, registry, embedded policy and store,
as `callgate serve` builds them, without gRPC. For counting a store's statements per turn, and
for writing the runs that the GetRun and long-run scenarios start from."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from bench.procs import ROOT
from gateway import pb
from gateway.audit.at_rest import RedactStored
from gateway.audit.keys import AuditKey
from gateway.client import tool_call
from gateway.model import CallStatus, Identity, NextAction
from gateway.policy.embedded import EmbeddedEngine
from gateway.policy.reload import ReloadingEngine, prepare
from gateway.run.runner import Runner, StartRunParams
from gateway.store.base import RunStore, StoredForm
from gateway.store.sqlite import SQLiteStore
from gateway.tools import Registry
from gateway.wire import convert

ALICE = Identity("alice", "acme", ("traveler", "member"))  # examples/auth.yaml's alice
PROVIDER = "openai.responses"
TRAIN = {"train_number": "ICE123", "date": "2026-12-01"}
WEATHER = {"city": "Berlin", "date": "2026-12-01"}

# opens the store, given how records are stored (the registry's redaction, as serve does)
StoreOpener = Callable[[AuditKey, StoredForm], Awaitable[RunStore]]


def sqlite_opener(db: Path) -> StoreOpener:
    """Opens the SQLite store in the file db."""

    async def open_sqlite(key: AuditKey, stored: StoredForm) -> RunStore:
        return await SQLiteStore.open(db, audit_key=key, stored=stored)

    return open_sqlite


def two_reads(run_id: str, turn: str) -> pb.SubmitTurnRequest:
    """The benchmark's SubmitTurn: get_train_status + get_weather, executed over HTTP."""
    return pb.SubmitTurnRequest(
        run_id=run_id,
        turn_id=turn,
        provider=PROVIDER,
        tool_request=pb.ToolRequest(
            calls=[
                tool_call(f"{turn}_train", "get_train_status", TRAIN),
                tool_call(f"{turn}_weather", "get_weather", WEATHER),
            ]
        ),
    )


@dataclass
class InProcess:
    runner: Runner
    store: RunStore

    async def start_run(self, run_id: str) -> None:
        await self.runner.start_run(ALICE, StartRunParams(run_id=run_id, provider=PROVIDER))

    async def turn(self, run_id: str, turn: str) -> None:
        outcome = await self.runner.submit_turn(ALICE, convert.turn_input(two_reads(run_id, turn)))
        if (
            outcome.next != NextAction.CONTINUE
            or len(outcome.results) != 2
            or any(r.status != CallStatus.SUCCEEDED for r in outcome.results)
        ):
            raise RuntimeError(f"in-process SubmitTurn answered {outcome}")


@asynccontextmanager
async def in_process(
    open_store: StoreOpener,
    travel_url: str,
    engine: type[ReloadingEngine] = ReloadingEngine,
) -> AsyncIterator[InProcess]:
    """The runner as serve builds it; `engine`: the class wrapping the embedded engine (one
    that also records what it is asked, say)."""
    key = AuditKey.ephemeral()
    registry = Registry.load(
        ROOT / "examples" / "travel" / "tools",
        env={"CALLGATE_TRAVEL_URL": travel_url},
        audit_key=key,
    )
    policy = engine(EmbeddedEngine(prepare(ROOT / "policies", "data.callgate"), checked=True))
    store = await open_store(key, RedactStored(registry))
    try:
        yield InProcess(Runner(store=store, registry=registry, policy=policy), store)
    finally:
        await store.close()
        await registry.aclose()
