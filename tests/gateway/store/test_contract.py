"""The RunStore contract, run against every store (SQLite and PostgreSQL).

Guarantees between replicas are tested with two store instances on one database: what one
instance holds, claims or settles, the other sees.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import sqlite3
from collections.abc import AsyncIterator
from dataclasses import replace
from datetime import timedelta

import psycopg
import pytest

from gateway.audit import hashing
from gateway.audit.records import AuditEvent
from gateway.errors import StoreConflict, StoreUnavailable
from gateway.model import (
    ApprovalFilter,
    ApprovalRecord,
    ApprovalStatus,
    CallRecord,
    CallStatus,
    NextAction,
    RunRecord,
    RunState,
)
from gateway.store import RunStore, open_store, pg_writes, sqlite_path
from gateway.store.notify import WatchClosed
from tests.support.records import NOW, a_call, a_run, a_turn


@pytest.fixture
async def other(db_url: str, store: RunStore) -> AsyncIterator[RunStore]:
    """A second instance on the same database: another replica (or process)."""
    s = await open_store(db_url)
    yield s
    await s.close()


async def with_turn(store: RunStore, *calls: CallRecord) -> RunRecord:
    run = await store.create_run(a_run())
    await store.begin_turn(run, a_turn("t1", 1), calls or [a_call("t1", "c1")])
    return run


def execute(db_url: str, statement: str) -> None:
    path = sqlite_path(db_url)
    if path is None:
        with psycopg.connect(db_url, autocommit=True) as conn:
            conn.execute(statement)  # type: ignore[arg-type]
        return
    conn = sqlite3.connect(path)
    with conn:
        conn.execute(statement)
    conn.close()


async def test_round_trip(store: RunStore) -> None:
    run = await store.create_run(a_run())
    assert run == a_run()
    assert await store.create_run(replace(a_run(), subject="x")) == run  # stored run answers
    first = a_call("t1", "c1")
    second = replace(
        a_call("t1", "c2", index=1),
        resolved_by="oscar",
        resolved_at=NOW,
        resolution_reason="checked",
    )
    await store.begin_turn(run, a_turn("t1", 1), [first, second])
    assert await store.turn_calls("r1", "t1") == [first, second]
    assert await store.find_call("r1", "c2") == second
    assert await store.find_call("r1", "nope") is None
    view = await store.get_view("r1")
    assert view is not None and [t.turn_id for t in view.turns] == ["t1"]
    assert view.calls == (first, second)
    snap = await store.snapshot("r1")
    assert snap is not None and snap.turn == a_turn("t1", 1) and snap.calls == (first, second)
    assert await store.snapshot("none") is None


async def test_text_no_store_can_hold_is_stored_readably(store: RunStore) -> None:
    """A NUL (PostgreSQL text holds none) or a lone surrogate in a model-chosen value never
    makes a write fail again and again: it is stored as U+FFFD."""
    run = await store.create_run(a_run())
    odd = replace(a_call("t1", "c1"), tool="book\x00ing", error_message="bad \ud800 text")
    await store.begin_turn(run, a_turn("t1", 1), [odd])
    (back,) = await store.turn_calls("r1", "t1")
    assert back.tool == "book\ufffding" and back.error_message == "bad \ufffd text"


async def test_the_schema_is_versioned(db_url: str, store: RunStore) -> None:
    await store.close()
    execute(db_url, "UPDATE schema_version SET version = 99")
    with pytest.raises(StoreUnavailable, match="newer"):
        await open_store(db_url)


async def test_a_call_id_belongs_to_one_turn_at_the_database_level(store: RunStore) -> None:
    run = await with_turn(store)
    with pytest.raises(StoreUnavailable):
        await store.begin_turn(run, a_turn("t2", 2), [a_call("t2", "c1")])
    assert await store.get_turn("r1", "t2") is None  # the whole turn rolled back
    await store.begin_turn(run, a_turn("t2", 2), [a_call("t2", "c1", "duplicate_call_id")])
    ctx = await store.turn_context("r1", "t3", ["c1", "c9"], 10)
    assert ctx is not None and ctx.used == {"c1"}
    found = await store.find_call("r1", "c1")
    assert found is not None and found.turn_id == "t1"  # the original, not the rejection


async def test_the_turn_context_is_read_in_one_go(store: RunStore) -> None:
    """The run, the turn with the submitted ID, the last turn, the call IDs used and the
    recent calls (oldest first, as many as asked), whatever the run's length."""
    run = await with_turn(store)
    for seq in range(2, 6):
        run = replace(run, turns_used=seq)
        await store.begin_turn(run, a_turn(f"t{seq}", seq), [a_call(f"t{seq}", f"c{seq}")])
    ctx = await store.turn_context("r1", "t2", ["c3", "c5", "c9"], 3)
    assert ctx is not None and ctx.run == run
    assert ctx.turn is not None and ctx.turn.turn_id == "t2"
    assert ctx.last is not None and ctx.last.turn_id == "t5"
    assert ctx.used == {"c3", "c5"}
    assert [c.call_id for c in ctx.recent] == ["c3", "c4", "c5"]
    fresh = await store.turn_context("r1", "t6", [], 50)
    assert fresh is not None and fresh.turn is None and fresh.last == ctx.last
    assert len(fresh.recent) == 5 and fresh.used == frozenset()
    blind = await store.turn_context("r1", "t6", ["c4"], 0)  # a policy that reads no history
    assert blind is not None and blind.recent == () and blind.used == {"c4"}
    assert blind.last == ctx.last
    again = await store.turn_context("r1", "t5", [], 0)  # the last turn's ID sent again
    assert again is not None and again.turn == again.last == ctx.last
    assert await store.turn_context("nope", "t1", ["c1"], 5) is None


async def test_a_guarded_update_applies_only_to_the_expected_row(store: RunStore) -> None:
    await with_turn(store)
    (proposed,) = await store.turn_calls("r1", "t1")
    executing = proposed.moved(CallStatus.EXECUTING, started_at=NOW)
    await store.save(calls=[executing], expect=[proposed])
    again = replace(executing, execution_count=1)
    with pytest.raises(StoreConflict):
        await store.save(calls=[again], expect=[proposed])  # no longer PROPOSED
    assert await store.turn_calls("r1", "t1") == [executing]


async def test_one_stale_guard_among_several_calls_changes_none_of_them(store: RunStore) -> None:
    """The calls of one save are written together (one statement on both stores): a guard
    that no longer holds rolls every one of them back."""
    await with_turn(store, a_call("t1", "c1"), a_call("t1", "c2"), a_call("t1", "c3"))
    before = await store.turn_calls("r1", "t1")
    first, second, third = before
    taken = second.moved(CallStatus.EXECUTING, started_at=NOW)
    await store.save(calls=[taken], expect=[second])
    moved = [c.moved(CallStatus.EXECUTING, started_at=NOW) for c in before]
    with pytest.raises(StoreConflict):
        await store.save(calls=moved, expect=before)  # the second is no longer PROPOSED
    assert await store.turn_calls("r1", "t1") == [first, taken, third]
    await store.save(calls=[moved[0], moved[2]], expect=[first, third])
    assert [c.status for c in await store.turn_calls("r1", "t1")] == [CallStatus.EXECUTING] * 3


async def test_the_claim_to_execute_is_won_once(store: RunStore, other: RunStore) -> None:
    """Two replicas claim the same call at the same moment: exactly one wins, and the loser's
    whole commit (its run counter too) rolls back."""
    run = await with_turn(store)
    (proposed,) = await store.turn_calls("r1", "t1")
    counted = replace(run, tool_calls_used=1)

    async def claim(s: RunStore, who: str) -> str:
        mine = proposed.moved(CallStatus.EXECUTING, idempotency_key=who)
        await s.save(run=counted, calls=[mine], expect=[proposed])
        return who

    results = await asyncio.gather(claim(store, "a"), claim(other, "b"), return_exceptions=True)
    winners = [r for r in results if isinstance(r, str)]
    assert len(winners) == 1
    assert [type(r) for r in results if not isinstance(r, str)] == [StoreConflict]
    (stored,) = await other.turn_calls("r1", "t1")
    assert stored.status == CallStatus.EXECUTING and stored.idempotency_key == winners[0]
    assert (await store.get_run("r1")) == counted


async def test_a_run_is_driven_by_one_holder_at_a_time(store: RunStore, other: RunStore) -> None:
    """Holders on two instances, each doing store I/O while holding: never interleaved."""
    await with_turn(store)
    trace: list[str] = []

    async def drive(s: RunStore, name: str) -> None:
        async with s.drive_lock("r1"):
            trace.append(f"+{name}")
            for _ in range(3):
                await s.get_run("r1")
            trace.append(f"-{name}")

    await asyncio.gather(*(drive(s, f"{i}") for i, s in enumerate([store, other] * 3)))
    assert len(trace) == 12
    for enter, leave in zip(trace[::2], trace[1::2], strict=True):
        assert enter.startswith("+") and leave == "-" + enter[1:], trace


async def test_drive_locks_of_different_runs_do_not_wait(store: RunStore, other: RunStore) -> None:
    async with store.drive_lock("r1"):
        async with other.drive_lock("r2"):
            pass


async def test_an_update_leaves_a_runs_owner_and_a_turns_place_as_created(
    store: RunStore,
) -> None:
    run = await with_turn(store)
    later = NOW + timedelta(hours=1)
    await store.save(
        run=replace(run, subject="mallory", tenant="evil", created_at=later, turns_used=1),
        turn=replace(a_turn("t1", 1), seq=7, next=NextAction.CONTINUE),
    )
    stored = await store.get_run("r1")
    assert stored is not None and stored.turns_used == 1
    assert (stored.subject, stored.tenant, stored.created_at) == ("alice", "acme", NOW)
    view = await store.get_view("r1")
    assert view is not None
    assert [(t.seq, t.next) for t in view.turns] == [(1, NextAction.CONTINUE)]


async def test_an_abandoned_wait_leaves_the_lock_free(store: RunStore, other: RunStore) -> None:
    async with store.drive_lock("r1"):
        waiting = asyncio.create_task(other.drive_lock("r1").__aenter__())
        await asyncio.sleep(0)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
    async with asyncio.timeout(10):
        async with other.drive_lock("r1"):
            pass


async def test_audit_records_form_a_hash_chain(store: RunStore) -> None:
    events = [
        AuditEvent(kind="decision", subject="alice", run_id="r1", call_id=f"c{i}", time=NOW)
        for i in range(3)
    ]
    await store.append_audit(events[:2])
    await store.append_audit(events[2:])
    recs = await store.audit_rows("r1")
    assert [r["call_id"] for r in recs] == ["c0", "c1", "c2"]
    prev = ""
    for r in recs:
        assert r["prev_hash"] == prev and r["layout"] == 4
        # the hash covers the layout, every column but the chain's own and the seal
        body = [
            4,
            *(
                r[c]
                for c in hashing.AUDIT_COLUMNS
                if c not in ("prev_hash", "hash", "layout", "seal")
            ),
        ]
        assert r["hash"] == hashlib.sha256((prev + json.dumps(body)).encode()).hexdigest()
        prev = r["hash"]


async def test_replicas_appending_at_once_keep_one_chain(store: RunStore, other: RunStore) -> None:
    await asyncio.gather(
        *(
            s.append_audit(
                [AuditEvent(kind="authorize", subject="a", run_id="r1", call_id=f"c{i}", time=NOW)]
            )
            for i, s in enumerate([store, other] * 10)
        )
    )
    recs = await store.audit_rows("r1")
    assert sorted(r["call_id"] for r in recs) == sorted(f"c{i}" for i in range(20))
    assert_one_chain(recs)


async def test_appends_arriving_together_share_one_commit(
    store: RunStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Concurrent Authorize calls do not each pay a transaction (and, on PostgreSQL, a turn
    of the chain's lock): their appends go in together, in the order they arrived."""
    commits: list[list[str]] = []
    commit = store._commit_audit  # type: ignore[attr-defined]

    async def counted(events: list[AuditEvent]) -> None:
        commits.append([e.call_id for e in events])
        await commit(events)

    monkeypatch.setattr(store._audits, "_commit", counted)  # type: ignore[attr-defined]
    await asyncio.gather(*(store.append_audit([audit("authorize", f"c{i}")]) for i in range(8)))
    assert commits == [[f"c{i}" for i in range(8)]]
    recs = await store.audit_rows("r1")
    assert [r["call_id"] for r in recs] == [f"c{i}" for i in range(8)]
    assert_one_chain(recs)


def assert_one_chain(recs: list[dict[str, object]]) -> None:
    assert recs[0]["prev_hash"] == ""
    assert all(r["prev_hash"] == p["hash"] for p, r in zip(recs, recs[1:], strict=False))


def audit(kind: str, call_id: str) -> AuditEvent:
    return AuditEvent(kind=kind, subject="alice", run_id="r1", call_id=call_id, time=NOW)


async def test_turns_written_by_replicas_in_turn_keep_one_chain(
    store: RunStore, other: RunStore
) -> None:
    """Each instance chains its records after the head it last committed; when the other
    appended since, its insert finds another head, adds nothing, and it reads the head: no
    fork in the chain, no record lost."""
    run = await store.create_run(a_run())
    for i in range(4):
        writer = (store, other)[i % 2]
        turn = a_turn(f"t{i}", i + 1)
        await writer.begin_turn(
            run, turn, [a_call(f"t{i}", f"c{i}")], audit=[audit("decision", f"c{i}")]
        )
        (call,) = await writer.turn_calls("r1", f"t{i}")
        await writer.save(
            turn=replace(turn, next=NextAction.CONTINUE),
            calls=[call.moved(CallStatus.EXECUTING, started_at=NOW)],
            expect=[call],
            audit=[audit("result", f"c{i}")],
        )
    recs = await store.audit_rows("r1")
    assert [(r["kind"], r["call_id"]) for r in recs] == [
        (kind, f"c{i}") for i in range(4) for kind in ("decision", "result")
    ]
    assert_one_chain(recs)


async def test_records_of_a_commit_rolled_back_are_not_chained_after(store: RunStore) -> None:
    """A transaction that appended records and then rolled back (a stale guard) leaves none
    behind, and the next append chains after the last record committed."""
    await with_turn(store)
    (proposed,) = await store.turn_calls("r1", "t1")
    taken = proposed.moved(CallStatus.EXECUTING, started_at=NOW)
    await store.save(calls=[taken], expect=[proposed], audit=[audit("claim", "c1")])
    with pytest.raises(StoreConflict):
        await store.save(calls=[taken], expect=[proposed], audit=[audit("lost", "c1")])
    await store.append_audit([audit("after", "c1")])
    recs = await store.audit_rows("r1")
    assert [r["kind"] for r in recs] == ["claim", "after"]
    assert_one_chain(recs)


async def test_a_phase_too_large_for_one_statement_is_written_one_by_one(
    store: RunStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PostgreSQL writes a phase in one statement while it fits in the parameters a statement
    may have; past that, each write alone and the records in pieces, in the same order."""
    if store.name != "postgresql":
        pytest.skip("SQLite writes each table with a statement of its own")
    monkeypatch.setattr(pg_writes, "MAX_PARAMETERS", 60)  # 3 calls or 2 records a statement
    run = await store.create_run(a_run())
    calls = [a_call("t1", f"c{i}", index=i) for i in range(7)]
    await store.begin_turn(
        run, a_turn("t1", 1), calls, audit=[audit("decision", c.call_id) for c in calls]
    )
    stored = await store.turn_calls("r1", "t1")
    assert [c.call_id for c in stored] == [c.call_id for c in calls]
    done = [c.moved(CallStatus.EXECUTING, started_at=NOW) for c in stored]
    await store.save(calls=done, expect=stored, audit=[audit("result", c.call_id) for c in calls])
    with pytest.raises(StoreConflict):  # the guard still holds the whole phase back
        await store.save(calls=done, expect=stored, audit=[audit("again", "c0")])
    assert await store.turn_calls("r1", "t1") == done
    recs = await store.audit_rows("r1")
    assert [(r["kind"], r["call_id"]) for r in recs] == [
        (kind, c.call_id) for kind in ("decision", "result") for c in calls
    ]
    assert_one_chain(recs)


async def test_a_settlement_wakes_the_watchers_of_its_run(store: RunStore, other: RunStore) -> None:
    """On PostgreSQL the settlement comes from another replica; SQLite notifies within its
    own process only, so there it comes from the same store."""
    await with_turn(store)
    settler = other if store.name == "postgresql" else store
    async with store.watch("r1") as sub, store.watch("r2") as unrelated:
        assert store.watchers() == 2
        await settler.save(turn=replace(a_turn("t1", 1), next=NextAction.CONTINUE))
        async with asyncio.timeout(10):
            await sub.wait()
        assert not unrelated._woken.is_set()
    assert store.watchers() == 0


async def test_a_commit_that_settles_nothing_wakes_nobody(store: RunStore) -> None:
    run = await with_turn(store)
    async with store.watch("r1") as sub:
        await store.save(run=replace(run, tool_calls_used=1), turn=a_turn("t1", 1))
        assert not sub._woken.is_set()  # published synchronously after a settling commit
        await store.save(run=replace(run, state=RunState.CANCELLED))
        assert sub._woken.is_set()


async def test_closing_watches_ends_every_wait(store: RunStore) -> None:
    async with store.watch("r1") as sub:
        store.close_watches()
        with pytest.raises(WatchClosed):
            await sub.wait()


def an_approval(
    approval_id: str,
    call_id: str = "c1",
    tool: str = "t",
    status: ApprovalStatus = ApprovalStatus.PENDING,
) -> ApprovalRecord:
    return ApprovalRecord(
        approval_id=approval_id,
        run_id="r1",
        turn_id="t1",
        call_id=call_id,
        tool=tool,
        tool_version="1",
        arguments_json="{}",
        arguments_sha256="h",
        status=status,
        requested_by="alice",
        tenant="acme",
        created_at=NOW,
        expires_at=NOW,
        requester_roles=("member",),
        policy_reasons=("needs an owner",),
    )


async def test_approvals_round_trip_and_keep_their_place(store: RunStore) -> None:
    await with_turn(store)
    first, second = an_approval("a1"), an_approval("a2", "c2", tool="u")
    await store.save(approvals=[first, second])
    assert await store.get_approval("a1") == first and await store.get_approval("x") is None
    decided = replace(
        first,
        status=ApprovalStatus.APPROVED,
        decided_by="olga",
        decided_by_tenant="acme",
        decided_by_roles=("owner",),
        decided_at=NOW,
    )
    await store.save(approvals=[decided])  # an update keeps the approval's place
    listed = await store.list_approvals(ApprovalFilter(), after=0, limit=10)
    assert [a for _, a in listed] == [decided, second]
    positions = [p for p, _ in listed]
    assert positions == sorted(positions)
    page = await store.list_approvals(ApprovalFilter(), after=positions[0], limit=10)
    assert [a.approval_id for _, a in page] == ["a2"]
    for which, expected in [
        (ApprovalFilter(statuses=(ApprovalStatus.PENDING,)), ["a2"]),
        (ApprovalFilter(tool="t"), ["a1"]),
        (ApprovalFilter(run_id="r2"), []),
        (ApprovalFilter(approval_id="a2"), ["a2"]),
    ]:
        found = await store.list_approvals(which, after=0, limit=10)
        assert [a.approval_id for _, a in found] == expected, which


async def test_an_approval_leaves_pending_once(store: RunStore, other: RunStore) -> None:
    """Two replicas decide the same approval at the same moment: one decision is stored,
    the other's whole commit (its audit record too) rolls back."""
    await with_turn(store)
    asked = an_approval("a1")
    await store.save(approvals=[asked])

    async def decide(s: RunStore, status: ApprovalStatus) -> ApprovalStatus:
        event = AuditEvent(kind="approval", subject="x", run_id="r1", time=NOW)
        await s.save(
            approvals=[replace(asked, status=status)], audit=[event], expect_approvals=[asked]
        )
        return status

    results = await asyncio.gather(
        decide(store, ApprovalStatus.APPROVED),
        decide(other, ApprovalStatus.DENIED),
        return_exceptions=True,
    )
    winners = [r for r in results if isinstance(r, ApprovalStatus)]
    assert len(winners) == 1
    assert [type(r) for r in results if not isinstance(r, ApprovalStatus)] == [StoreConflict]
    stored = await other.get_approval("a1")
    assert stored is not None and stored.status == winners[0]
    assert len(await store.audit_rows("r1")) == 1


async def test_unsettled_counts_pending_approvals_and_unknown_calls(store: RunStore) -> None:
    assert await store.unsettled() == (0, 0)
    await with_turn(store, a_call("t1", "c1"), a_call("t1", "c2", index=1))
    await store.save(
        approvals=[an_approval("a1"), an_approval("a2", "c2", status=ApprovalStatus.APPROVED)]
    )
    calls = await store.turn_calls("r1", "t1")
    unknown = (
        calls[0]
        .moved(CallStatus.EXECUTING, started_at=NOW)
        .moved(CallStatus.UNKNOWN, error_code="outcome_unknown")
    )
    await store.save(calls=[unknown], expect=[calls[0]])
    assert await store.unsettled() == (1, 1)
