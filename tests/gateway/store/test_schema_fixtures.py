"""Stores written by each released schema version still load, migrate and resume.

`fixtures/schema_v<N>.sql` is a frozen dump of a SQLite store at version N,
`fixtures/postgres_schema_v<N>.sql` of a PostgreSQL store (the PostgreSQL store starts at
version 2). Each holds the same run: paused for approval, with a settled read, its approval
long expired, and one audit record written before schema 4; from version 4 on, a second one
sealed with `fixtures/audit_v4.key`. Never edit a released fixture: add one per new version.
"""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import psycopg
import pytest

from examples.travel.service import TravelService
from gateway import pb
from gateway.audit import offline
from gateway.audit.keys import AuditKey
from gateway.client import GatewayClient
from gateway.model import CallStatus, Quota
from gateway.quotas import QuotaExceeded, Reservation
from gateway.store import open_store, schema
from gateway.store.sqlite_reads import UNSETTLED
from tests.support import databases
from tests.support.sidecars import own_sidecar

FIXTURES = Path(__file__).parent / "fixtures"
SQLITE = sorted(FIXTURES.glob("schema_v*.sql"))
POSTGRES = sorted(FIXTURES.glob("postgres_schema_v*.sql"))
ALL = [*SQLITE, *POSTGRES]


def version_of(fixture: Path) -> int:
    return int(fixture.stem.rsplit("_v", 1)[1])


def stored_version(db: str) -> int:
    if db.startswith("postgresql://"):
        with psycopg.connect(db) as conn:
            row = conn.execute("SELECT version FROM schema_version").fetchone()
    else:
        conn = sqlite3.connect(db)
        row = conn.execute("SELECT version FROM schema_version").fetchone()
        conn.close()
    assert row is not None
    return int(row[0])


@pytest.mark.parametrize("prefix", ["schema_v", "postgres_schema_v"])
def test_there_is_a_fixture_for_the_current_version(prefix: str) -> None:
    assert (FIXTURES / f"{prefix}{schema.SCHEMA_VERSION}.sql").is_file()


@pytest.mark.parametrize("fixture", ALL, ids=lambda f: f.stem)
async def test_fixture_loads_and_migrates(fixture: Path, tmp_path: Path, pg_database: str) -> None:
    db = databases.restore(fixture, tmp_path, pg_database)
    store = await open_store(db)
    view = await store.get_view("run-v1")
    assert view is not None and view.run.subject == "tina"
    assert [(c.call_id, c.status.value) for c in view.calls] == [
        ("r1", "SUCCEEDED"),
        ("w1", "PENDING_APPROVAL"),
    ]
    assert all(c.resolved_by == "" and c.resolved_at is None for c in view.calls)
    (approval,) = await store.approvals_for_run("run-v1")
    assert approval.status == "PENDING" and approval.call_id == "w1"
    # roles arrived with version 3: older stores read as having none
    roles = ("tester",) if version_of(fixture) >= 3 else ()
    assert view.run.roles == roles and approval.requester_roles == roles
    assert approval.decided_by_roles == () and approval.decided_by_tenant == ""
    assert approval.policy_reasons == (("writes need approval",) if roles else ())
    assert await store.get_approval("apr_fixture") == approval
    await store.close()
    assert stored_version(db) == schema.SCHEMA_VERSION


def indexes_of_turns(db: str) -> set[str]:
    if db.startswith("postgresql://"):
        with psycopg.connect(db) as conn:
            found = conn.execute(
                "SELECT indexname FROM pg_indexes WHERE tablename = 'turns' "
                "AND schemaname = current_schema()"
            ).fetchall()
    else:
        conn = sqlite3.connect(db)
        found = conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'turns'"
        ).fetchall()
        conn.close()
    return {str(r[0]) for r in found}


@pytest.mark.parametrize("fixture", ALL, ids=lambda f: f.stem)
async def test_fixture_gets_the_turns_index_and_pages(
    fixture: Path, tmp_path: Path, pg_database: str
) -> None:
    """Schema 5 indexes turns by (run_id, seq): a store of any earlier version gains it when
    it migrates, and GetRun's page read answers on it."""
    db = databases.restore(fixture, tmp_path, pg_database)
    assert ("turns_seq" in indexes_of_turns(db)) == (version_of(fixture) >= 5)
    store = await open_store(db)
    page = await store.run_page("run-v1", before=None, limit=50)
    await store.close()
    assert "turns_seq" in indexes_of_turns(db)
    assert page is not None and page.whole and page.turn_count == 1
    assert [t.turn_id for t in page.view.turns] == ["resp_1"]
    assert [c.call_id for c in page.view.calls] == ["r1", "w1"]


@pytest.mark.parametrize("fixture", ALL, ids=lambda f: f.stem)
async def test_fixture_audit_chain_verifies(
    fixture: Path, tmp_path: Path, pg_database: str
) -> None:
    """A record written before schema 4 verifies by the columns its hash always covered; it
    carries no seal, and verify says so."""
    store = await open_store(databases.restore(fixture, tmp_path, pg_database))
    sealed = version_of(fixture) >= 4
    report = await offline.verify(store, AuditKey.load(FIXTURES / "audit_v4.key"))
    await store.close()
    assert report.broken is None, offline.report_text(report)
    assert (report.records, report.legacy) == (2 if sealed else 1, 1)
    assert "1 record(s) written before schema 4: chained, not sealed" in offline.report_text(report)


@pytest.mark.parametrize("fixture", ALL, ids=lambda f: f.stem)
def test_fixture_run_resumes_through_the_gateway(
    fixture: Path,
    tmp_path: Path,
    pg_database: str,
    travel: TravelService,
    tools_dir: Path,
    effects_db: Path,
) -> None:
    """The sidecar finds the approval past its expiry when it starts, and settles it: the
    write was never approved, so it never runs, and the loop may continue."""
    db = databases.restore(fixture, tmp_path, pg_database)
    with (
        own_sidecar(tmp_path, travel, tools_dir, effects_db, db=db) as proc,
        GatewayClient(proc.target, "tina-demo-token") as c,
    ):
        out = c.resume_run("run-v1")
        assert (out.next, out.run_state) == (pb.NEXT_ACTION_CONTINUE, pb.RUN_STATE_ACTIVE)
        assert {r.call_id: (r.status, r.error.code, r.execution_count) for r in out.results} == {
            "r1": (pb.CALL_STATUS_SUCCEEDED, "", 1),
            "w1": (pb.CALL_STATUS_REJECTED, "approval_expired", 0),
        }
        (approval,) = c.list_approvals(run_id="run-v1", status=[]).approvals
        assert approval.status == pb.APPROVAL_STATUS_EXPIRED
        assert c.cancel_run("run-v1").state == pb.RUN_STATE_CANCELLED


def indexes_of_calls(db: str) -> set[str]:
    if db.startswith("postgresql://"):
        with psycopg.connect(db) as conn:
            found = conn.execute(
                "SELECT indexname FROM pg_indexes WHERE tablename = 'calls' "
                "AND schemaname = current_schema()"
            ).fetchall()
    else:
        conn = sqlite3.connect(db)
        found = conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'calls'"
        ).fetchall()
        conn.close()
    return {str(r[0]) for r in found}


@pytest.mark.parametrize("fixture", ALL, ids=lambda f: f.stem)
async def test_fixture_gets_the_unknown_calls_index(
    fixture: Path, tmp_path: Path, pg_database: str
) -> None:
    """Schema 7 indexes the calls of unknown outcome (the gauge counts them at every scrape):
    a store of any earlier version gains the index when it migrates."""
    db = databases.restore(fixture, tmp_path, pg_database)
    assert ("calls_unknown" in indexes_of_calls(db)) == (version_of(fixture) >= 7)
    store = await open_store(db)
    assert await store.unsettled() == (1, 0)  # the fixture's one pending approval
    await store.close()
    assert "calls_unknown" in indexes_of_calls(db)
    if not db.startswith("postgresql://"):
        conn = sqlite3.connect(db)
        plan = " ".join(str(r) for r in conn.execute(f"EXPLAIN QUERY PLAN {UNSETTLED}"))
        conn.close()
        assert "calls_unknown" in plan and "SCAN calls" not in plan


@pytest.mark.parametrize("fixture", ALL, ids=lambda f: f.stem)
async def test_fixture_gets_the_quota_tables_and_keeps_their_reservations(
    fixture: Path, tmp_path: Path, pg_database: str
) -> None:
    """Schema 8 adds the quota tables: an older store gains them empty; a store at 8 keeps
    its reservations (counted by its keys' running totals from schema 10 on), and gives back
    the one of its call that never ran once the call's approval is found expired."""
    db = databases.restore(fixture, tmp_path, pg_database)
    store = await open_store(db)
    now = datetime(2026, 11, 29, 22, 0, tzinfo=UTC)
    found = await store.list_quotas("", after="", limit=10, now=now)
    quota = Quota("bookings/tina", 2, 86400, 1)
    if version_of(fixture) < 8:
        assert found == [] and await store.quota_usage([quota], now) == {"bookings/tina": 0}
        await store.close()
        return
    assert [(q.key, q.used, q.limit, q.window_s, q.reservations) for q in found] == [
        ("bookings/tina", 1, 2, 86400, 1)
    ]
    # the key's running total counts the stored reservation (schema 10 fills it in): one more
    # fits under the limit of 2, the next does not
    await store.reserve_quotas([Reservation("", "a1", quota, now)], [])
    with pytest.raises(QuotaExceeded) as refused:
        await store.reserve_quotas([Reservation("", "a2", quota, now)], [])
    assert refused.value.used == 2
    (call,) = [c for c in await store.turn_calls("run-v1", "resp_1") if c.call_id == "w1"]
    assert call.decision is not None and call.decision.quotas == (quota,)
    await store.save(
        calls=[call.moved(CallStatus.REJECTED, error_code="approval_expired")], expect=[call]
    )
    assert await store.quota_usage([quota], now) == {"bookings/tina": 1}
    await store.reserve_quotas([Reservation("", "a3", quota, now)], [])  # w1's seat, given back
    await store.close()
