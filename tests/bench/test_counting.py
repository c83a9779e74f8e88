"""Counting a store's statements from outside it: the tally's rules on known statements, on
a libpq trace, and on the real runner driving turns against each store."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from bench.counting import SQLiteCounter, Tally, kind, tally_trace
from bench.counts import count_postgres, count_sqlite
from examples.travel.service import TravelService
from tests.support import databases


def test_transactions_commits_and_writes_on_a_real_connection(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "t.db", isolation_level=None)
    conn.execute("CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT)")
    with SQLiteCounter(conn) as tally:
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT INTO t VALUES (1, 'a')")
        conn.execute("WITH v (k) AS (VALUES (1)) UPDATE t SET v = 'b' WHERE k IN v")
        conn.execute("COMMIT")
        conn.execute("BEGIN")
        conn.execute("SELECT v FROM t").fetchall()
        conn.execute("COMMIT")
        conn.execute("INSERT INTO t VALUES (2, 'c')")  # autocommit: a commit of its own
        conn.execute("SELECT count(*) FROM t").fetchone()
        conn.execute("PRAGMA synchronous=NORMAL")  # a setting: no data read or written
    conn.execute("SELECT 1")  # after counting: not seen
    conn.close()
    assert (tally.data, tally.writes, tally.begins, tally.commit_statements) == (5, 3, 2, 2)
    assert (tally.commits, tally.writing_commits, tally.rollbacks, tally.settings) == (3, 2, 0, 1)
    assert tally.kinds() == {
        "BEGIN": 2,
        "COMMIT": 2,
        "INSERT t": 2,
        "UPDATE t": 1,
        "SELECT t": 2,
        "PRAGMA": 1,
    }


def test_a_libpq_trace_counts_simple_and_extended_statements() -> None:
    trace = [
        'F\t10\tQuery\t "BEGIN"',
        'F\t26\tParse\t "" "INSERT INTO turns (a) VALUES ($1)" 1 NNNN',
        'F\t22\tBind\t "" "" 1 1 1 2 \'\\x00\\x00\' 1 0',
        'F\t6\tDescribe\t P ""',
        'F\t9\tExecute\t "" 0',
        "F\t4\tSync",
        "B\t5\tReadyForQuery\t T",
        'F\t32\tParse\t "_pg3_0" "SELECT pg_advisory_xact_lock($1)" 1 NNNN',
        'F\t28\tBind\t "" "_pg3_0" 1 1 1 2 \'\\x00\\x05\' 1 0',
        'F\t9\tExecute\t "" 0',
        'F\t28\tBind\t "" "_pg3_0" 1 1 1 2 \'\\x00\\x06\' 1 0',
        'F\t9\tExecute\t "" 0',
        'F\t11\tQuery\t "COMMIT"',
        'F\t31\tQuery\t "SELECT pg_advisory_unlock(1)"',
    ]
    tally = tally_trace(trace)
    assert (tally.data, tally.writes, tally.begins, tally.commits, tally.writing_commits) == (
        4,
        1,
        1,
        1,
        1,
    )
    assert tally.kinds() == {
        "BEGIN": 1,
        "COMMIT": 1,
        "INSERT turns": 1,
        "SELECT pg_advisory_xact_lock": 2,
        "SELECT pg_advisory_unlock": 1,
    }


def test_kinds() -> None:
    assert kind("WITH added AS (INSERT INTO audit (a) VALUES (1)) SELECT 1") == "INSERT audit"
    assert kind("SELECT r.a FROM runs r LEFT JOIN turns t ON 1") == "SELECT runs"
    assert kind("SELECT COALESCE((SELECT hash FROM audit LIMIT 1), '')") == "SELECT audit"
    assert kind("UPDATE calls SET a = 1") == "UPDATE calls"


def totals(t: Tally) -> tuple[int, ...]:
    return (
        t.data,
        t.writes,
        t.begins,
        t.commit_statements,
        t.commits,
        t.writing_commits,
        t.rollbacks,
        t.settings,
    )


async def test_sqlite_counts_are_per_turn_and_nothing_else(
    tmp_path: Path, travel: TravelService
) -> None:
    one = await count_sqlite(tmp_path / "one.db", travel.url, 1)
    three = await count_sqlite(tmp_path / "three.db", travel.url, 3)
    assert totals(three.tally) == tuple(3 * n for n in totals(one.tally))
    assert one.tally.data > 0 and one.tally.rollbacks == 0
    assert one.tally.begins == one.tally.commit_statements
    assert {"INSERT turns", "INSERT calls", "UPDATE calls"} <= set(one.tally.kinds())


async def test_postgres_counts_every_pooled_connection(
    pg_database: str, travel: TravelService
) -> None:
    one = await count_postgres(databases.new_schema(pg_database), travel.url, 1)
    three = await count_postgres(databases.new_schema(pg_database), travel.url, 3)
    assert totals(three.tally) == tuple(3 * n for n in totals(one.tally))
    kinds = one.tally.kinds()
    # the drive lock runs on a connection of its own pool: counted too
    assert kinds["SELECT pg_advisory_lock"] == 1 and kinds["SELECT pg_advisory_unlock"] == 1
    # a phase's writes share one statement (data-modifying CTEs)
    texts = "\n".join(one.tally.texts)
    assert all(
        w in texts
        for w in ("INSERT INTO turns", "INSERT INTO calls", "UPDATE calls", "INSERT INTO audit")
    )
