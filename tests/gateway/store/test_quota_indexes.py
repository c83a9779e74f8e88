"""Schema 11: two indexes on quota reservations, and every quota statement searches one.

A reserving commit writes a page of each index a new reservation goes into, so there are two:
by key and expiry, holding the reservation's time and cost too (pruning, and a window summed
from the index alone), and by call for the reservations made in a run's turn only. Only a
turn's reservations are ever given back (its call ended without running); Authorize without a
run keeps every reservation it makes, and indexing those by their random call IDs cost each
one a page at a random place of that index. The give-back statement says `run_id <> ''` in
each of its terms so that each store can search the partial index."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from gateway.model import Quota
from gateway.quotas import Reservation
from gateway.store import open_store, pg_quotas, quota_sql, sqlite_quotas
from tests.support import databases
from tests.support.paths import NewDb

T0 = datetime(2026, 12, 1, tzinfo=UTC)
QUOTA = Quota("k/alice", 100, 3600, 1)
INDEX = "quota_usage_turn_call"
FIXTURES = Path(__file__).parent / "fixtures"
NOW = 1_796_000_000.0


def on_postgres(db: str) -> bool:
    return db.startswith("postgresql://")


def mark_of(db: str) -> str:
    """The store's placeholder."""
    return "%s" if on_postgres(db) else "?"


def plan(db: str, statement: str, args: list[object], *, generic: bool = False) -> str:
    """The store's plan for a statement, sequential scans off on PostgreSQL (an index it
    cannot use is then still not in the plan); `generic`: PostgreSQL's plan for any values
    (it cannot use what a value would let it prove)."""
    if on_postgres(db) and not generic:
        with psycopg.connect(db) as conn:
            conn.execute("SET enable_seqscan = off")
            text = psycopg.ClientCursor(conn).mogrify(statement, args)
            return "\n".join(str(r[0]) for r in conn.execute(f"EXPLAIN {text}").fetchall())
    if on_postgres(db):
        with psycopg.connect(db) as conn:
            conn.execute("SET enable_seqscan = off")
            conn.execute("SET plan_cache_mode = force_generic_plan")
            numbered = statement.replace("%s", "$%d") % tuple(range(1, len(args) + 1))
            types = ", ".join(["text"] * len(args))
            conn.execute(f"PREPARE q ({types}) AS {numbered}")  # type: ignore[arg-type]
            values = sql.SQL(", ").join(sql.Literal(a) for a in args)
            rows = conn.execute(sql.SQL("EXPLAIN EXECUTE q({})").format(values)).fetchall()
            return "\n".join(str(r[0]) for r in rows)
    conn = sqlite3.connect(db)
    try:
        rows = conn.execute(f"EXPLAIN QUERY PLAN {statement}", args).fetchall()
        return "\n".join(str(r[-1]) for r in rows)
    finally:
        conn.close()


def statements(mark: str) -> dict[str, tuple[str, list[object]]]:
    """Every statement that reads or removes reservations, with values for it."""
    lock, lock_args = quota_sql.lock([Reservation("", "c1", QUOTA, T0)], [], mark)
    return {
        "lock": (lock, lock_args),
        "prune": (quota_sql.prune(mark, 2), ["k/a", "k/b", NOW]),
        "clip": (quota_sql.clip(mark), [60, "k/a", 60]),
        "used": (quota_sql.used(mark), ["k/a", NOW - 60]),
        "window": (quota_sql.window(mark), ["k/a", NOW - 60]),
        "give_back": (quota_sql.give_back(mark, 2), ["run-1", "c2", "run-1", "c3"]),
        "reset": (quota_sql.reset(mark), ["k/a"]),
        "listing": (
            quota_sql.listing(mark, pg_quotas.PREFIX if mark == "%s" else sqlite_quotas.PREFIX),
            [NOW, "", "k/", "k/", 50],
        ),
    }


def scans(db: str, found: str) -> list[str]:
    """The plan's steps that read the reservations without searching an index."""
    if on_postgres(db):
        return [line for line in found.splitlines() if "Seq Scan on quota_usage" in line]
    return [
        line
        for line in found.splitlines()
        if line.startswith("SCAN") and line.split()[1] in ("quota_usage", "u")
    ]


@pytest.mark.parametrize("name", sorted(statements("?")))
async def test_each_quota_statement_searches_an_index(new_db: NewDb, name: str) -> None:
    db = new_db()
    store = await open_store(db)  # a new store: the current version's indexes
    await store.close()
    mark = mark_of(db)
    statement, args = statements(mark)[name]
    found = plan(db, statement, args)
    assert "quota_usage_" in found and scans(db, found) == [], found


def quota_indexes(db: str) -> set[str]:
    return {
        str(r[0])
        for r in databases.query(
            db,
            "SELECT indexname FROM pg_indexes WHERE tablename = 'quota_usage' "
            "AND schemaname = current_schema()"
            if on_postgres(db)
            else "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'quota_usage'",
        )
    }


def indexed_calls(db: str) -> list[tuple[object, ...]]:
    """(run_id, call_id) of the reservations the index by call holds, read from the index
    (SQLite: `INDEXED BY` reads the table through it)."""
    return databases.query(
        db,
        f"SELECT run_id, call_id FROM quota_usage INDEXED BY {INDEX} WHERE run_id <> '' "
        "ORDER BY call_id",
    )


async def test_the_give_back_searches_the_partial_index_and_authorize_rows_stay_out(
    new_db: NewDb,
) -> None:
    db = new_db()
    store = await open_store(db)
    try:
        await store.reserve_quotas(
            [
                Reservation("", "authorize_1/c1", QUOTA, T0),
                Reservation("run-1", "c2", QUOTA, T0),
                Reservation("run-1", "c3", QUOTA, T0),
            ],
            [],
        )
    finally:
        await store.close()
    assert quota_indexes(db) == {"quota_usage_window", INDEX}
    if not on_postgres(db):
        assert indexed_calls(db) == [("run-1", "c2"), ("run-1", "c3")]
    mark = mark_of(db)
    found = plan(db, quota_sql.give_back(mark, 2), ["run-1", "c2", "run-1", "c3"], generic=True)
    assert INDEX in found and scans(db, found) == [], found


async def test_a_turn_s_reservation_is_given_back_and_authorize_s_kept(new_db: NewDb) -> None:
    """The give-back removes exactly the named calls' reservations of a run: an Authorize's
    reservation with the same call ID, outside any run, stays."""
    db = new_db()
    store = await open_store(db)
    try:
        await store.reserve_quotas(
            [Reservation("", "c2", QUOTA, T0), Reservation("run-1", "c2", QUOTA, T0)], []
        )
    finally:
        await store.close()
    assert databases.query(db, "SELECT COUNT(*) FROM quota_usage") == [(2,)]
    mark = mark_of(db)
    statement = quota_sql.give_back(mark, 1)
    if on_postgres(db):
        with psycopg.connect(db) as conn:
            gone = conn.execute(statement, ["run-1", "c2"]).fetchall()
    else:
        conn = sqlite3.connect(db)
        with conn:
            gone = conn.execute(statement, ["run-1", "c2"]).fetchall()
        conn.close()
    assert [(str(k), float(c)) for k, c in gone] == [("k/alice", 1.0)]
    assert databases.query(db, "SELECT run_id, call_id FROM quota_usage") == [("", "c2")]


@pytest.mark.parametrize("fixture", ["schema_v10.sql", "postgres_schema_v10.sql"])
async def test_a_version_10_store_migrates_to_the_two_indexes(
    fixture: str, tmp_path: Path, pg_database: str
) -> None:
    """The migration drops the three indexes of versions 8 to 10 and makes the two; the
    fixture's reservation (a turn's call, pending approval) is in the one by call."""
    db = databases.restore(FIXTURES / fixture, tmp_path, pg_database)
    assert quota_indexes(db) == {"quota_usage_key", "quota_usage_expiry", "quota_usage_call"}
    store = await open_store(db)
    await store.close()
    assert quota_indexes(db) == {"quota_usage_window", INDEX}
    if not on_postgres(db):
        assert indexed_calls(db) == [("run-v1", "w1")]
    mark = mark_of(db)
    found = plan(db, quota_sql.give_back(mark, 1), ["run-v1", "w1"], generic=True)
    assert INDEX in found, found
