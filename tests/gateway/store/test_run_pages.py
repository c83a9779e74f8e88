"""`RunStore.run_page`, against every store: GetRun's pages of a run's turns and their calls.

Paging backwards from the latest turns reaches the first one and returns every turn and call
exactly once; turns recorded meanwhile leave older pages as they were; and a page reads the
same rows however long its run is.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import replace
from typing import Any

import psycopg

from gateway.errors import CallCode
from gateway.model import CallStatus, RunPage
from gateway.store import RunStore, fragments, sqlite_path
from gateway.store.sqlite import SQLiteStore
from tests.support.query_plans import explain_rows, sqlite_steps
from tests.support.records import a_call, a_run, a_turn


async def record_turns(store: RunStore, first: int, last: int, run_id: str = "r1") -> None:
    """Turns first..last of run_id: turn n (`t<n>`) has n % 4 calls (`c<n>-<i>`)."""
    run = await store.get_run(run_id) or await store.create_run(a_run(run_id))
    for n in range(first, last + 1):
        calls = [a_call(f"t{n}", f"c{n}-{i}", run_id=run_id, index=i) for i in range(n % 4)]
        await store.begin_turn(run, a_turn(f"t{n}", n, run_id=run_id), calls)


async def page(store: RunStore, before: int | None, limit: int, run_id: str = "r1") -> RunPage:
    found = await store.run_page(run_id, before=before, limit=limit)
    assert found is not None
    return found


async def every_page(store: RunStore, limit: int, run_id: str = "r1") -> list[RunPage]:
    pages = [await page(store, None, limit, run_id)]
    while pages[-1].older:
        pages.append(await page(store, pages[-1].first_seq, limit, run_id))
    return pages


def seqs(p: RunPage) -> list[int]:
    return [t.seq for t in p.view.turns]


async def test_paging_backwards_returns_every_turn_and_call_once(store: RunStore) -> None:
    await record_turns(store, 1, 23)
    await record_turns(store, 1, 4, run_id="r2")  # another run's turns never show
    pages = await every_page(store, 5)
    assert [seqs(p) for p in pages] == [
        [19, 20, 21, 22, 23],
        [14, 15, 16, 17, 18],
        [9, 10, 11, 12, 13],
        [4, 5, 6, 7, 8],
        [1, 2, 3],
    ]
    assert [p.older for p in pages] == [True, True, True, True, False]
    assert {p.turn_count for p in pages} == {23}
    for p in pages:  # a page's calls are those of its turns, in the order they were recorded
        assert [c.call_id for c in p.view.calls] == [
            f"c{t.seq}-{i}" for t in p.view.turns for i in range(t.seq % 4)
        ]
        assert {c.run_id for c in p.view.calls} == {"r1"}
    turns = sorted(t.turn_id for p in pages for t in p.view.turns)
    calls = sorted(c.call_id for p in pages for c in p.view.calls)
    assert turns == sorted(f"t{n}" for n in range(1, 24))
    assert calls == sorted(f"c{n}-{i}" for n in range(1, 24) for i in range(n % 4))
    whole = await store.get_view("r1")
    assert whole is not None
    assert sorted(whole.calls, key=lambda c: c.call_id) == sorted(
        (c for p in pages for c in p.view.calls), key=lambda c: c.call_id
    )
    assert not any(p.whole for p in pages)


async def test_a_page_as_large_as_the_run_is_the_whole_run(store: RunStore) -> None:
    await record_turns(store, 1, 6)
    (only,) = await every_page(store, 6)
    assert seqs(only) == [1, 2, 3, 4, 5, 6] and only.whole and not only.older
    assert (await page(store, None, 100)).whole
    later = await page(store, 4, 100)  # turns 1-3 only: not the whole run
    assert seqs(later) == [1, 2, 3] and not later.whole and not later.older


async def test_a_run_without_turns(store: RunStore) -> None:
    await store.create_run(a_run())
    empty = await page(store, None, 50)
    assert (empty.view.turns, empty.view.calls, empty.turn_count) == ((), (), 0)
    assert not empty.older and empty.whole and empty.first_seq == 0
    assert empty.view.run == a_run()


async def test_no_such_run(store: RunStore) -> None:
    assert await store.run_page("none", before=None, limit=5) is None


async def test_turns_recorded_between_pages_leave_older_pages_as_they_were(store: RunStore) -> None:
    await record_turns(store, 1, 12)
    first = await page(store, None, 5)
    assert seqs(first) == [8, 9, 10, 11, 12]
    await record_turns(store, 13, 15)
    second = await page(store, first.first_seq, 5)
    assert seqs(second) == [3, 4, 5, 6, 7] and second.turn_count == 15
    third = await page(store, second.first_seq, 5)
    assert seqs(third) == [1, 2] and not third.older
    assert seqs(await page(store, None, 5)) == [11, 12, 13, 14, 15]


async def test_a_page_carries_the_run_summary_and_settled_records(store: RunStore) -> None:
    await record_turns(store, 1, 3)
    run = await store.get_run("r1")
    assert run is not None
    paused = replace(run, turns_used=3, pause_reason="waiting", labels={"team": "travel"})
    settled = replace(a_call("t3", "c3-0"), status=CallStatus.SUCCEEDED, output_json='{"a": 1}')
    await store.save(run=paused, calls=[settled])
    p = await page(store, None, 2)
    assert p.view.run == paused
    assert [c for c in p.view.calls if c.call_id == "c3-0"] == [settled]


async def test_a_duplicate_call_id_shows_with_its_own_turn(store: RunStore) -> None:
    """A call ID used again in a later turn is kept as that turn's REJECTED record: each page
    shows the records of its own turns."""
    await record_turns(store, 1, 2)
    run = await store.get_run("r1")
    assert run is not None
    dup = replace(
        a_call("t3", "c1-0"),
        status=CallStatus.REJECTED,
        error_code=CallCode.DUPLICATE_CALL_ID.value,
    )
    await store.begin_turn(run, a_turn("t3", 3), [dup])
    newest, oldest = await every_page(store, 2)
    assert [(c.turn_id, c.call_id) for c in newest.view.calls] == [
        ("t2", "c2-0"),
        ("t2", "c2-1"),
        ("t3", "c1-0"),
    ]
    assert [(c.turn_id, c.call_id) for c in oldest.view.calls] == [("t1", "c1-0")]


async def page_steps(store: SQLiteStore, run_id: str) -> int:
    async def read() -> None:
        p = await page(store, None, 50, run_id)
        assert len(p.view.turns) == 50

    return await sqlite_steps(store, read)


def sqlite_plan(path: str, statement: str, args: tuple[Any, ...]) -> str:
    conn = sqlite3.connect(path)
    try:
        return " / ".join(r[3] for r in conn.execute("EXPLAIN QUERY PLAN " + statement, args))
    finally:
        conn.close()


async def test_a_page_of_a_long_run_reads_no_more_than_one_of_a_short_run(
    store: RunStore, db_url: str
) -> None:
    """The latest 50 turns of a 600-turn run cost what those of a 60-turn run cost: the read
    walks the (run_id, seq) index from the newest turn, stops after the page, and finds each
    of its turns' calls by the calls' primary key.

    SQLite: the steps of its virtual machine (every row visited or sorted counts) for the
    whole page read, and the plans. PostgreSQL plans by cost, and on tables this small reads
    the calls table whole (cheapest at this size); its turns are read from the index, the
    page only, whatever the size."""
    await record_turns(store, 1, 60, run_id="short")
    await record_turns(store, 1, 600, run_id="long")
    if isinstance(store, SQLiteStore):
        short, long = await page_steps(store, "short"), await page_steps(store, "long")
        assert long <= short * 1.1, (short, long)
        path = sqlite_path(db_url)
        assert path is not None
        turns = sqlite_plan(
            path, fragments.page_turns("?"), ("long", fragments.ABOVE_EVERY_SEQ, 50)
        )
        assert "INDEX turns_seq" in turns and "TEMP B-TREE" not in turns, turns
        calls = sqlite_plan(
            path,
            fragments.page_calls("?", "calls.rowid"),
            ("long", fragments.ABOVE_EVERY_SEQ, 50, "long"),
        )
        assert "calls USING INDEX sqlite_autoindex_calls_1 (run_id=? AND turn_id=?)" in calls
        assert "calls_run" not in calls, calls
    else:
        with psycopg.connect(db_url, autocommit=True) as conn:
            conn.execute("ANALYZE turns")
            row = conn.execute(
                "EXPLAIN (ANALYZE, FORMAT JSON) " + fragments.page_turns("%s"),
                ("long", fragments.ABOVE_EVERY_SEQ, 50),
            ).fetchone()
        assert row is not None
        plan = row[0][0]["Plan"]
        assert "turns_seq" in json.dumps(plan) and explain_rows(plan) <= 2 * 50, plan
