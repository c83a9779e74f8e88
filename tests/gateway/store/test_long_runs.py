"""What a turn reads of its run costs the same at the run's 600th turn as at its 20th, against
every store: the run, the turn with the submitted ID and the run's last turn are each found by
an index, never by walking the run's turns."""

from __future__ import annotations

from dataclasses import replace

import psycopg

from gateway.store import RunStore, fragments
from gateway.store.sqlite import SQLiteStore
from tests.support.query_plans import explain_rows, sqlite_steps
from tests.support.records import a_call, a_run, a_turn


async def run_of(store: RunStore, run_id: str, turns: int) -> None:
    """A run with `turns` turns of one call each, its turn count kept as the runner keeps it."""
    run = await store.create_run(a_run(run_id))
    for n in range(1, turns + 1):
        run = replace(run, turns_used=n)
        await store.begin_turn(
            run, a_turn(f"t{n}", n, run_id=run_id), [a_call(f"t{n}", f"c{n}", run_id=run_id)]
        )


async def test_a_turns_context_costs_the_same_however_long_the_run(
    store: RunStore, db_url: str
) -> None:
    """SQLite: the steps of its virtual machine for the whole context read (a retried turn
    ID, so both the turn and the last turn are found). PostgreSQL: the rows its plan for the
    run-and-turns statement produced."""
    await run_of(store, "short", 20)
    await run_of(store, "long", 600)
    for run_id, turns in (("short", 20), ("long", 600)):
        ctx = await store.turn_context(run_id, "t3", ["c3"], 0)
        assert ctx is not None and ctx.turn is not None and ctx.turn.seq == 3
        assert ctx.last is not None and ctx.last.seq == turns
    if isinstance(store, SQLiteStore):
        short = await sqlite_steps(store, lambda: store.turn_context("short", "t3", ["c3"], 0))
        long = await sqlite_steps(store, lambda: store.turn_context("long", "t3", ["c3"], 0))
        assert long <= short * 1.1, (short, long)
    else:
        with psycopg.connect(db_url, autocommit=True) as conn:
            conn.execute("ANALYZE turns")
            row = conn.execute(
                "EXPLAIN (ANALYZE, FORMAT JSON) " + fragments.run_and_turns("%s"),
                ("t3", "long", "long"),
            ).fetchone()
        assert row is not None
        plan = row[0][0]["Plan"]
        assert explain_rows(plan) <= 10, plan
