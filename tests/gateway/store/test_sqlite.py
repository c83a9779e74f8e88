"""SQLiteStore: schema versioning, the database-level call ID guarantee, the audit chain."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import pytest

from gateway.errors import StoreUnavailable
from gateway.model import (
    AuditEvent,
    CallRecord,
    CallStatus,
    EventKind,
    RunRecord,
    RunState,
    TurnRecord,
)
from gateway.store import rows
from gateway.store.sqlite import SQLiteStore

NOW = datetime(2026, 11, 29, 21, 0, tzinfo=UTC)


def a_run(run_id: str = "r1") -> RunRecord:
    return RunRecord(run_id=run_id, state=RunState.ACTIVE, subject="alice", tenant="acme",
                     params_hash="p", created_at=NOW, updated_at=NOW)


def a_turn(turn_id: str, seq: int) -> TurnRecord:
    return TurnRecord(run_id="r1", turn_id=turn_id, seq=seq, event=EventKind.TOOL_REQUEST,
                      content_hash="h", created_at=NOW)


def a_call(turn_id: str, call_id: str, error_code: str = "") -> CallRecord:
    return CallRecord(run_id="r1", turn_id=turn_id, call_id=call_id, index=0, tool="t",
                      status=CallStatus.PROPOSED, arguments_json="{}", error_code=error_code,
                      created_at=NOW)


async def test_round_trip_and_versioned_schema(tmp_path: Path) -> None:
    store = await SQLiteStore.open(tmp_path / "s.db")
    run = await store.create_run(a_run())
    assert run == a_run()
    assert await store.create_run(a_run()) == run  # existing ID answers the stored run
    await store.begin_turn(run, a_turn("t1", 1), [a_call("t1", "c1")])
    (rec,) = await store.turn_calls("r1", "t1")
    assert rec == a_call("t1", "c1")
    view = await store.get_view("r1")
    assert view is not None and [t.turn_id for t in view.turns] == ["t1"]
    await store.close()
    conn = sqlite3.connect(tmp_path / "s.db")
    assert conn.execute("SELECT version FROM schema_version").fetchone() == (
        rows.SCHEMA_VERSION,)
    conn.close()


async def test_a_call_id_belongs_to_one_turn_at_the_database_level(tmp_path: Path) -> None:
    store = await SQLiteStore.open(tmp_path / "s.db")
    run = await store.create_run(a_run())
    await store.begin_turn(run, a_turn("t1", 1), [a_call("t1", "c1")])
    with pytest.raises(StoreUnavailable):
        await store.begin_turn(run, a_turn("t2", 2), [a_call("t2", "c1")])
    assert await store.get_turn("r1", "t2") is None  # the whole turn rolled back
    await store.begin_turn(run, a_turn("t2", 2), [a_call("t2", "c1", "duplicate_call_id")])
    assert await store.used_call_ids("r1", ["c1", "c9"]) == {"c1"}
    await store.close()


async def test_a_newer_schema_is_refused(tmp_path: Path) -> None:
    store = await SQLiteStore.open(tmp_path / "s.db")
    await store.close()
    conn = sqlite3.connect(tmp_path / "s.db")
    conn.execute("UPDATE schema_version SET version = 99")
    conn.commit()
    conn.close()
    with pytest.raises(StoreUnavailable, match="newer"):
        await SQLiteStore.open(tmp_path / "s.db")


async def test_audit_records_form_a_hash_chain(tmp_path: Path) -> None:
    store = await SQLiteStore.open(tmp_path / "s.db")
    events = [AuditEvent(kind="decision", subject="alice", run_id="r1", call_id=f"c{i}",
                         time=NOW) for i in range(3)]
    await store.append_audit(events[:2])
    await store.append_audit(events[2:])
    recs = await store.audit_rows("r1")
    assert [r["seq"] for r in recs] == [1, 2, 3]
    prev = ""
    for r in recs:
        assert r["prev_hash"] == prev
        body = [r[c] for c in rows.AUDIT_COLUMNS[:-2]]
        assert r["hash"] == hashlib.sha256((prev + json.dumps(body)).encode()).hexdigest()
        prev = r["hash"]
    await store.close()


async def test_concurrent_audit_appends_share_commits_and_keep_one_chain(tmp_path: Path) -> None:
    import asyncio

    store = await SQLiteStore.open(tmp_path / "s.db")
    await asyncio.gather(*(store.append_audit([AuditEvent(kind="authorize", subject="a",
                                                          run_id="r1", call_id=f"c{i}",
                                                          time=NOW)])
                           for i in range(20)))
    recs = await store.audit_rows("r1")
    assert sorted(r["call_id"] for r in recs) == sorted(f"c{i}" for i in range(20))
    assert all(r["prev_hash"] == p["hash"] for p, r in zip(recs, recs[1:], strict=False))
    await store.close()


async def test_an_audit_append_that_cannot_commit_fails_every_waiter(tmp_path: Path) -> None:
    import asyncio

    store = await SQLiteStore.open(tmp_path / "s.db", busy_timeout_s=0.1)
    lock = sqlite3.connect(tmp_path / "s.db", isolation_level=None)
    lock.execute("BEGIN EXCLUSIVE")
    try:
        results = await asyncio.gather(
            *(store.append_audit([AuditEvent(kind="authorize", subject="a", run_id="r1",
                                             time=NOW)]) for _ in range(3)),
            return_exceptions=True)
    finally:
        lock.execute("ROLLBACK")
        lock.close()
    assert all(isinstance(r, StoreUnavailable) for r in results)
    assert await store.audit_rows("r1") == []
    await store.close()
