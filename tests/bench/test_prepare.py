"""What the flat-cost scenarios start from is valid: generated tools load, generated policy
data decides as the example's does, and a grown run takes its next real turn."""

from __future__ import annotations

import json
from pathlib import Path

from bench.inproc import ALICE, in_process
from bench.prepare import grow_runs, write_manifests, write_policy_data
from examples.travel.service import TravelService
from gateway.audit.keys import AuditKey
from gateway.model import Verdict
from gateway.policy.embedded import EmbeddedEngine
from gateway.policy.reload import prepare
from gateway.store.base import RunStore, StoredForm
from gateway.store.sqlite import SQLiteStore
from gateway.tools import Registry


def test_generated_manifests_load_beside_the_examples(tmp_path: Path) -> None:
    assert write_manifests(tmp_path, 25) == 27
    registry = Registry.load(tmp_path, env={})
    assert registry.get("get_weather") is not None
    assert registry.get("bench_tool_00024") is not None
    assert registry.get("bench_tool_00025") is None


def test_generated_policy_data_has_the_entries_and_the_same_decisions(tmp_path: Path) -> None:
    directory = write_policy_data(tmp_path / "policies", 1000)
    data = json.loads((directory / "data.json").read_text())
    tenants = data["callgate"]["config"]["tenants"]
    assert len(tenants) == 1000 and {"acme", "globex"} <= set(tenants)
    engine = EmbeddedEngine(prepare(directory, "data.callgate"), checked=True)
    call = {"tool": "get_train_status", "args": {"train_number": "ICE123", "date": "2026-12-01"}}

    def verdict(tenant: str) -> Verdict:
        identity = {"subject": "alice", "tenant": tenant, "roles": ["traveler"]}
        return engine.decide({"identity": identity, "call": call}).verdict

    assert verdict("acme") == Verdict.ALLOW
    # a generated tenant's callers query its own trains only: the data is the policy's
    assert verdict("tenant-000005") == Verdict.DENY


async def test_a_grown_run_takes_its_next_turn(tmp_path: Path, travel: TravelService) -> None:
    db = tmp_path / "long.db"

    async def open_sqlite(key: AuditKey, stored: StoredForm) -> RunStore:
        return await SQLiteStore.open(db, audit_key=key, stored=stored)

    async with in_process(open_sqlite, travel.url) as proc:
        await proc.start_run("r")
        await proc.turn("r", "first")
    grow_runs(db, {"r": 40})
    async with in_process(open_sqlite, travel.url) as proc:
        await proc.turn("r", "after")  # raises unless the run accepts it and both calls run
        page = await proc.runner.get_run(ALICE, "r", page_size=3)
    assert page.view.run.turns_used == 41
    assert [t.seq for t in page.view.turns] == [39, 40, 41]
    assert [t.turn_id for t in page.view.turns] == ["grown_39", "grown_40", "after"]
