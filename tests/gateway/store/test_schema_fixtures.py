"""Stores written by each released schema version still load and resume.

`fixtures/schema_v<N>.sql` is a frozen dump of a store at version N (a run paused for
approval with a settled read). Never edit a released fixture: add one per new version.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from examples.travel.service import TravelService
from gateway import pb
from gateway.client import GatewayClient
from gateway.store import rows
from gateway.store.sqlite import SQLiteStore
from tests.scenarios.test_process import own_sidecar

FIXTURES = sorted((Path(__file__).parent / "fixtures").glob("schema_v*.sql"))


def restore(fixture: Path, to: Path) -> Path:
    conn = sqlite3.connect(to)
    conn.executescript(fixture.read_text())
    conn.close()
    return to


def test_there_is_a_fixture_for_the_current_version() -> None:
    assert any(f.stem == f"schema_v{rows.SCHEMA_VERSION}" for f in FIXTURES)


@pytest.mark.parametrize("fixture", FIXTURES, ids=lambda f: f.stem)
async def test_fixture_loads_with_its_records(fixture: Path, tmp_path: Path) -> None:
    store = await SQLiteStore.open(restore(fixture, tmp_path / "old.db"))
    view = await store.get_view("run-v1")
    assert view is not None and view.run.subject == "tina"
    assert [(c.call_id, c.status.value) for c in view.calls] == [
        ("r1", "SUCCEEDED"), ("w1", "PENDING_APPROVAL")]
    (approval,) = await store.approvals_for_run("run-v1")
    assert approval.status == "PENDING" and approval.call_id == "w1"
    await store.close()


@pytest.mark.parametrize("fixture", FIXTURES, ids=lambda f: f.stem)
def test_fixture_run_resumes_through_the_gateway(fixture: Path, tmp_path: Path,
                                                 travel: TravelService, tools_dir: Path,
                                                 effects_db: Path) -> None:
    db = restore(fixture, tmp_path / "old.db")
    with own_sidecar(tmp_path, travel, tools_dir, effects_db, db=db) as proc, \
            GatewayClient(proc.target, "tester-token") as c:
        out = c.resume_run("run-v1")
        assert out.next == pb.NEXT_ACTION_PAUSED_FOR_APPROVAL
        assert {r.call_id: r.status for r in out.results} == {
            "r1": pb.CALL_STATUS_SUCCEEDED, "w1": pb.CALL_STATUS_PENDING_APPROVAL}
        assert c.cancel_run("run-v1").state == pb.RUN_STATE_CANCELLED
