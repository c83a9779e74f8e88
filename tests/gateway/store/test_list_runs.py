"""Listing runs (ListRuns), on every store: a tenant's or one subject's runs, newest first,
filtered by state, paged by (created_at, run_id) without repeats or gaps, and answered by an
index rather than by reading the whole table."""

from __future__ import annotations

import sqlite3
from dataclasses import replace
from datetime import timedelta

from gateway.model import RunFilter, RunRecord, RunState
from gateway.store import RunStore, sqlite_path
from tests.support.records import NOW, a_run


def run(
    run_id: str, subject: str, minutes: int, state: RunState = RunState.ACTIVE, tenant: str = "acme"
) -> RunRecord:
    at = NOW + timedelta(minutes=minutes)
    return replace(
        a_run(run_id), subject=subject, tenant=tenant, state=state, created_at=at, updated_at=at
    )


async def fill(store: RunStore) -> None:
    for r in (
        run("a1", "alice", 1),
        run("b1", "bob", 2),
        run("a2", "alice", 3, RunState.COMPLETED),
        run("a3", "alice", 3),
        run("g1", "gina", 4, tenant="globex"),
        run("a4", "alice", 5, RunState.PAUSED_FOR_APPROVAL),
    ):
        await store.create_run(r)


async def test_one_subjects_runs_newest_first_and_by_state(store: RunStore) -> None:
    await fill(store)
    alice = RunFilter(tenant="acme", subject="alice")
    found = await store.list_runs(alice, before=None, limit=10)
    assert [r.run_id for r in found] == ["a4", "a3", "a2", "a1"]  # a2, a3: same time, by ID
    paused = RunFilter("acme", "alice", (RunState.PAUSED_FOR_APPROVAL, RunState.COMPLETED))
    assert [r.run_id for r in await store.list_runs(paused, before=None, limit=10)] == ["a4", "a2"]
    tenant = await store.list_runs(RunFilter("acme", None), before=None, limit=10)
    assert [r.run_id for r in tenant] == ["a4", "a3", "a2", "b1", "a1"]  # never globex's
    assert await store.list_runs(RunFilter("acme", "gina"), before=None, limit=10) == []


async def test_pages_follow_each_other_without_repeats_or_gaps(store: RunStore) -> None:
    await fill(store)
    which = RunFilter("acme", "alice")
    seen: list[str] = []
    before = None
    while True:
        page = await store.list_runs(which, before=before, limit=1)
        if not page:
            break
        seen += [r.run_id for r in page]
        last = page[-1]
        assert last.created_at is not None
        before = (last.created_at, last.run_id)
    assert seen == ["a4", "a3", "a2", "a1"]


async def test_a_listing_reads_an_index(store: RunStore, db_url: str) -> None:
    if sqlite_path(db_url) is None:
        return  # PostgreSQL plans by its statistics; the indexes exist there as here
    conn = sqlite3.connect(str(sqlite_path(db_url)))
    try:
        for where in ("tenant = 'acme' AND subject = 'alice'", "tenant = 'acme'"):
            plan = " ".join(
                str(row[-1])
                for row in conn.execute(
                    f"EXPLAIN QUERY PLAN SELECT * FROM runs WHERE {where} "
                    "ORDER BY created_at DESC, run_id DESC LIMIT 5"
                )
            )
            assert "INDEX runs_" in plan and "TEMP B-TREE" not in plan, plan
    finally:
        conn.close()
