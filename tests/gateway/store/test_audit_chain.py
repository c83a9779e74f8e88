"""The audit trail in both stores: queries, seals, prunes, followers, and `verify` catching
records edited, removed or reordered directly in the database (naming the record)."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest

from gateway.audit import hashing, offline
from gateway.audit.keys import AuditKey
from gateway.audit.records import AuditEvent, AuditFilter, audit_time
from gateway.model import CallStatus, Decision, Verdict
from gateway.store import RunStore, open_store, sqlite_path

T0 = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)
KEY = AuditKey(b"a" * 32)
OTHER_KEY = AuditKey(b"b" * 32)


def event(i: int, **changes: Any) -> AuditEvent:
    fields: dict[str, Any] = dict(
        kind="decision",
        subject="alice",
        tenant="acme",
        run_id="r1",
        call_id=f"c{i}",
        tool="get_weather",
        decision=Decision(Verdict.ALLOW, ("ok",), "sha256:rev"),
        status=CallStatus.SUCCEEDED,
        time=T0 + timedelta(hours=i),
        actor="alice",
    )
    fields.update(changes)
    return AuditEvent(**fields)


@pytest.fixture
async def store(db_url: str) -> AsyncIterator[RunStore]:
    s = await open_store(db_url, audit_key=KEY)
    yield s
    await s.close()


def sql(db_url: str, statement: str, *params: Any) -> None:
    """Change the store behind callgate's back (statements written with ? placeholders)."""
    path = sqlite_path(db_url)
    if path is None:
        with psycopg.connect(db_url, autocommit=True) as conn:
            conn.execute(statement.replace("?", "%s"), params)  # type: ignore[arg-type]
        return
    conn = sqlite3.connect(path)
    with conn:
        conn.execute(statement, params)
    conn.close()


async def five(store: RunStore) -> None:
    await store.append_audit([event(i) for i in range(5)])


async def broken(store: RunStore, key: AuditKey | None = KEY) -> str:
    report = await offline.verify(store, key)
    assert report.broken is not None, offline.report_text(report)
    return report.broken.problem


# ---------------------------------------------------------------------- queries


async def test_queries_filter_page_and_take_the_newest(store: RunStore) -> None:
    await store.append_audit(
        [
            event(0),
            event(1, kind="execution", status=CallStatus.FAILED, error_code="tool_error"),
            event(
                2,
                tool="book",
                decision=Decision(Verdict.DENY, ("no",), "sha256:rev"),
                status=CallStatus.REJECTED,
            ),
            event(3, subject="mallory", run_id="r2"),
            event(4, tenant="globex", subject="gina"),
            event(5, kind="policy", subject="", tenant="", run_id="", call_id="", tool=""),
        ]
    )

    async def calls(**f: Any) -> list[str]:
        found = await store.query_audit(AuditFilter(**f), after=0, limit=100)
        return [r.call_id for r in found]

    assert await calls() == ["c0", "c1", "c2", "c3", "c4", ""]
    assert await calls(run_id="r1", tenant="acme") == ["c0", "c1", "c2"]
    assert await calls(tenant="acme", subject="mallory") == ["c3"]
    assert await calls(tenant="") == [""]
    assert await calls(tool="book") == ["c2"]
    assert await calls(call_id="c1") == ["c1"]
    assert await calls(verdicts=(Verdict.DENY,)) == ["c2"]
    assert await calls(statuses=(CallStatus.FAILED, CallStatus.REJECTED)) == ["c1", "c2"]
    assert await calls(
        since=audit_time(T0 + timedelta(hours=2)), until=audit_time(T0 + timedelta(hours=4))
    ) == ["c2", "c3"]
    page = await store.query_audit(AuditFilter(), after=0, limit=2)
    after = await store.query_audit(AuditFilter(), after=page[-1].seq, limit=2)
    assert [r.call_id for r in page + after] == ["c0", "c1", "c2", "c3"]
    newest = await store.query_audit(AuditFilter(tenant="acme"), after=0, limit=2, newest=True)
    assert [r.call_id for r in newest] == ["c2", "c3"]


async def test_every_record_is_chained_and_sealed_with_the_stores_key(store: RunStore) -> None:
    await five(store)
    found = await store.query_audit(AuditFilter(), after=0, limit=10)
    assert [r.prev_hash for r in found] == ["", *(r.hash for r in found[:-1])]
    assert all(r.key_id == KEY.key_id and r.seal == KEY.seal(r.hash) for r in found)
    assert all(hashing.recomputed_hash(r) == r.hash and r.layout == 4 for r in found)
    report = await offline.verify(store, KEY)
    assert (report.broken, report.records, report.head) == (None, 5, found[-1].hash)
    assert "record 1 was sealed with key" in await broken(store, OTHER_KEY)


async def test_followers_are_woken_by_appends_from_any_instance(
    store: RunStore, db_url: str
) -> None:
    other = await open_store(db_url)
    try:
        async with store.watch_audit() as changes:
            await (other if db_url.startswith("postgresql") else store).append_audit([event(0)])
            await asyncio.wait_for(changes.wait(), 10)
    finally:
        await other.close()


# ---------------------------------------------------------------------- tampering


async def test_an_edited_record_is_named(store: RunStore, db_url: str) -> None:
    await five(store)
    sql(db_url, "UPDATE audit SET error_code = 'none' WHERE call_id = 'c2'")
    assert (await broken(store)).startswith("record 3 was changed after it was written")


async def test_a_changed_verdict_column_is_named(store: RunStore, db_url: str) -> None:
    await five(store)
    sql(db_url, "UPDATE audit SET verdict = 'DENY' WHERE call_id = 'c1'")
    assert (await broken(store)).startswith("record 2 was changed after it was written")


async def test_a_removed_record_is_named(store: RunStore, db_url: str) -> None:
    await five(store)
    sql(db_url, "DELETE FROM audit WHERE call_id = 'c2'")
    problem = await broken(store)
    assert problem.startswith("record 4 does not follow record 2") and "removed" in problem


async def test_the_oldest_records_removed_without_a_prune_are_named(
    store: RunStore, db_url: str
) -> None:
    await five(store)
    sql(db_url, "DELETE FROM audit WHERE call_id IN ('c0', 'c1')")
    assert (await broken(store)).startswith("record 3 does not follow the start of the chain")


async def test_reordered_records_are_named(store: RunStore, db_url: str) -> None:
    await five(store)
    for a, b in ((2, -2), (3, 2), (-2, 3)):  # swap the places of records 2 and 3
        sql(db_url, "UPDATE audit SET seq = ? WHERE seq = ?", b, a)
    assert (await broken(store)).startswith("record 2 does not follow record 1")


async def test_a_chain_recomputed_after_an_edit_is_caught_by_the_seals(
    store: RunStore, db_url: str
) -> None:
    """Someone with database access but without the key edits a record and recomputes every
    hash after it: the chain links again, the seals do not."""
    await five(store)
    found = await store.query_audit(AuditFilter(), after=0, limit=10)
    prev = found[1].hash
    for r in found[2:]:
        values = [getattr(r, c) for c in hashing.AUDIT_COLUMNS]
        values[hashing.AUDIT_COLUMNS.index("prev_hash")] = prev
        if r.seq == found[2].seq:
            values[hashing.AUDIT_COLUMNS.index("message")] = "nothing happened"
        digest = hashing.chain_hash(prev, hashing.hashed_body(values, r.layout))
        sql(
            db_url,
            "UPDATE audit SET message = ?, prev_hash = ?, hash = ? WHERE seq = ?",
            values[hashing.AUDIT_COLUMNS.index("message")],
            prev,
            digest,
            r.seq,
        )
        prev = digest
    assert (await offline.verify(store, None)).broken is None  # the links hold
    problem = await broken(store, KEY)
    assert problem.startswith("record 3's seal does not match its hash under this key")


async def test_a_record_rewritten_in_the_old_layout_is_named(store: RunStore, db_url: str) -> None:
    await five(store)
    sql(db_url, "UPDATE audit SET layout = NULL WHERE call_id = 'c4'")
    assert "layout of records written before schema 4" in await broken(store)


# ---------------------------------------------------------------------- pruning


async def prune(store: RunStore, hours: int) -> Any:
    return await offline.prune(store, T0 + timedelta(hours=hours), "tester@host")


async def test_prune_removes_the_oldest_and_verify_passes_on_the_rest(store: RunStore) -> None:
    await five(store)
    assert await prune(store, 0) is None  # nothing that old
    point = await prune(store, 2)
    assert (point.removed, point.seq) == (2, 2)
    found = await store.query_audit(AuditFilter(), after=0, limit=10)
    assert [r.call_id for r in found[:3]] == ["c2", "c3", "c4"]
    assert found[0].prev_hash == point.hash == (await store.audit_checkpoint()).hash
    pruned = found[-1]
    assert (pruned.kind, pruned.tenant, pruned.detail()["checkpoint_seq"]) == ("prune", "", 2)
    assert "tester@host" in (pruned.message or "")
    report = await offline.verify(store, KEY)
    assert report.broken is None and report.records == 4 and report.checkpoint == point
    # every call record (the first prune's record is newer than the cut), then the chain
    # continues from the new checkpoint
    assert (await prune(store, 100)).removed == 3
    await store.append_audit([event(9)])
    report = await offline.verify(store, KEY)
    assert report.broken is None, offline.report_text(report)
    assert report.kinds == {"prune": 2, "decision": 1}


async def test_a_checkpoint_no_prune_record_confirms_is_named(store: RunStore, db_url: str) -> None:
    await five(store)
    found = await store.query_audit(AuditFilter(), after=0, limit=10)
    sql(db_url, "DELETE FROM audit WHERE seq <= ?", found[1].seq)
    sql(
        db_url,
        "INSERT INTO audit_checkpoints (seq, hash, time, removed, before) VALUES (?, ?, ?, ?, ?)",
        found[1].seq,
        found[1].hash,
        "t",
        2,
        "t",
    )
    problem = await broken(store, None)
    assert "no prune record in the chain confirms that checkpoint" in problem
