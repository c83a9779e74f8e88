"""Start-up refusals, engine panics, an unwritable store, and recovery after a crash.

Each test runs its own sidecar process (its own store) against the real travel service; the
store tests run on SQLite and on PostgreSQL.
"""

from __future__ import annotations

import asyncio
import shutil
import sqlite3
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
import pytest

from examples.travel.service import TravelService
from gateway import pb
from gateway.client import GatewayClient, RequestError, error_code, tool_call
from gateway.testing import run_serve_expecting_failure
from tests.support.effects import effects
from tests.support.paths import AUTH, POLICIES, NewDb
from tests.support.resolution import audit_of
from tests.support.scenarios import TRAIN, WEATHER
from tests.support.sidecars import own_sidecar


def test_bad_manifest_stops_start_up_naming_file_and_field(tmp_path: Path, tools_dir: Path) -> None:
    tools = tmp_path / "tools"
    shutil.copytree(tools_dir, tools)
    (tools / "broken.yaml").write_text(
        "name: broken\nversion: '1'\neffect: maybe\ninput_schema: {type: object}\n"
        "executor: {type: http, url: 'http://127.0.0.1:9/x'}\n"
    )
    code, out = run_serve_expecting_failure(
        [
            "--listen",
            "127.0.0.1:0",
            "--tools",
            str(tools),
            "--policies",
            str(POLICIES),
            "--db",
            str(tmp_path / "x.db"),
            "--auth",
            str(AUTH),
        ]
    )
    assert code != 0
    assert "broken.yaml: effect:" in out and "read" in out


def test_bad_policy_stops_start_up_naming_file_and_line(tmp_path: Path, tools_dir: Path) -> None:
    policies = tmp_path / "policies"
    shutil.copytree(POLICIES, policies)
    (policies / "extra.rego").write_text("package callgate\n\nbroken if {\n  input.x ==\n}\n")
    code, out = run_serve_expecting_failure(
        [
            "--listen",
            "127.0.0.1:0",
            "--tools",
            str(tools_dir),
            "--policies",
            str(policies),
            "--db",
            str(tmp_path / "x.db"),
            "--auth",
            str(AUTH),
        ]
    )
    assert code != 0
    assert "extra.rego:5" in out and "expecting expression" in out
    assert "Stack backtrace" not in out


def test_serve_without_auth_refuses(tmp_path: Path, tools_dir: Path) -> None:
    code, out = run_serve_expecting_failure(
        [
            "--listen",
            "127.0.0.1:0",
            "--tools",
            str(tools_dir),
            "--policies",
            str(POLICIES),
            "--db",
            str(tmp_path / "x.db"),
        ]
    )
    assert code != 0 and "--auth" in out


@pytest.mark.parametrize(
    ("db", "expected"),
    [
        (
            "mysql://root:secret@127.0.0.1/x",
            "--db mysql://...: expected PATH, sqlite:///PATH or postgresql://...",
        ),
        (
            "postgresql://callgate:secret@127.0.0.1:1/none",
            "cannot connect to PostgreSQL at 127.0.0.1:1/none",
        ),
        (
            "{database}?options=-csearch_path%3Dno_such_schema",
            "no schema of the search_path exists; create it",
        ),
    ],
)
def test_a_store_that_cannot_be_used_stops_start_up(
    tmp_path: Path, tools_dir: Path, pg_database: str, db: str, expected: str
) -> None:
    code, out = run_serve_expecting_failure(
        [
            "--listen",
            "127.0.0.1:0",
            "--tools",
            str(tools_dir),
            "--policies",
            str(POLICIES),
            "--db",
            db.format(database=pg_database),
            "--auth",
            str(AUTH),
            "--audit-key-file",
            str(tmp_path / "audit.key"),
        ]
    )
    assert code != 0 and expected in out, out
    assert "secret" not in out and "Traceback" not in out


PANIC_POLICY = """package callgate

# bits.and of an infinite number panics this engine build (writing its error message)
decision := {"allow": bits.and(1e308 / 0.1, count(input.call.args.city)) == 0} if {
  input.call.tool == "get_weather"
}

decision := {"allow": true} if {
  input.call.tool != "get_weather"
}
"""


def test_policy_that_panics_the_engine_denies_and_the_sidecar_keeps_serving(
    tmp_path: Path, travel: TravelService, tools_dir: Path, effects_db: Path
) -> None:
    policies = tmp_path / "policies"
    policies.mkdir()
    (policies / "panic.rego").write_text(PANIC_POLICY)
    travel.reset()
    with (
        own_sidecar(tmp_path, travel, tools_dir, effects_db, policies=policies) as proc,
        GatewayClient(proc.target, "alice-demo-token") as c,
    ):
        c.start_run(run_id="r1")
        for turn in ("t1", "t2"):
            out = c.submit_calls(
                "r1",
                turn,
                tool_call(f"w-{turn}", "get_weather", WEATHER),
                tool_call(f"t-{turn}", "get_train_status", TRAIN),
            )
            res = {r.call_id: r for r in out.results}
            assert res[f"w-{turn}"].status == pb.CALL_STATUS_REJECTED
            assert res[f"w-{turn}"].error.code == "policy_error"
            assert res[f"w-{turn}"].decision.verdict == pb.VERDICT_DENY
            assert res[f"t-{turn}"].status == pb.CALL_STATUS_SUCCEEDED
        assert travel.stats()["weather"] == 0
    assert "stack backtrace" not in proc.output.lower()  # a panic is one line, not a flood


@contextmanager
def another_writer_holds(db: str) -> Iterator[None]:
    """Another writer holds the store (SQLite: the whole file; PostgreSQL: the calls table)."""
    if db.startswith("postgresql://"):
        with psycopg.connect(db) as conn:
            conn.execute("LOCK TABLE calls IN EXCLUSIVE MODE")
            yield
            conn.rollback()
        return
    lock = sqlite3.connect(db, isolation_level=None)
    lock.execute("BEGIN EXCLUSIVE")
    try:
        yield
    finally:
        lock.execute("ROLLBACK")
        lock.close()


def test_store_that_cannot_be_written_executes_nothing(
    tmp_path: Path, travel: TravelService, tools_dir: Path, effects_db: Path, new_db: NewDb
) -> None:
    db = new_db()
    run_id = f"locked-{uuid.uuid4().hex[:8]}"
    travel.reset()
    with (
        own_sidecar(
            tmp_path, travel, tools_dir, effects_db, db=db, extra=("--db-busy-timeout", "0.2")
        ) as proc,
        GatewayClient(proc.target, "walt-demo-token") as c,
    ):
        c.start_run(run_id=run_id)
        with another_writer_holds(db):
            with pytest.raises(RequestError) as err:
                c.submit_calls(
                    run_id,
                    "t1",
                    tool_call("c1", "get_weather", WEATHER),
                    tool_call("w1", "book_ticket", {"train_number": "ICE123"}),
                )
            assert err.value.grpc_status == "UNAVAILABLE"
            assert error_code(err.value) == "store_unavailable"
        assert travel.stats()["weather"] == 0
        assert effects(effects_db, f"{run_id}:w1") == []
        # nothing was lost: the same turn goes through once the store is writable again
        out = c.submit_calls(
            run_id,
            "t1",
            tool_call("c1", "get_weather", WEATHER),
            tool_call("w1", "book_ticket", {"train_number": "ICE123"}),
        )
        assert [r.status for r in out.results] == [pb.CALL_STATUS_SUCCEEDED] * 2
        assert len(effects(effects_db, f"{run_id}:w1")) == 1


def test_crash_after_a_write_never_replays_it(
    tmp_path: Path, travel: TravelService, tools_dir: Path, effects_db: Path, new_db: NewDb
) -> None:
    db = new_db()
    run_id = f"crash-{uuid.uuid4().hex[:8]}"
    key = f"{run_id}:w1"
    with own_sidecar(tmp_path, travel, tools_dir, effects_db, db=db) as proc:
        with GatewayClient(proc.target, "walt-demo-token") as c:
            c.start_run(run_id=run_id)
            with pytest.raises(RequestError) as err:
                c.submit_calls(
                    run_id, "t1", tool_call("w1", "crash_booking", {"train_number": "ICE123"})
                )
            assert err.value.grpc_status == "UNAVAILABLE"
        assert proc.stop() == 17  # the process died inside the write
    assert len(effects(effects_db, key)) == 1
    with (
        own_sidecar(tmp_path, travel, tools_dir, effects_db, db=db) as proc,
        GatewayClient(proc.target, "walt-demo-token") as c,
    ):
        run = c.get_run(run_id)
        (rec,) = run.calls
        assert rec.status == pb.CALL_STATUS_EXECUTING  # the intent was committed first
        with pytest.raises(RequestError) as err:
            c.submit_turn(run_id=run_id, turn_id="t2", final=pb.FinalAnswer(text="x"))
        assert error_code(err.value) == "run_paused"
        out = c.resume_run(run_id)
        assert out.next == pb.NEXT_ACTION_PAUSED_UNKNOWN_OUTCOME
        assert out.results[0].status == pb.CALL_STATUS_UNKNOWN
        assert out.results[0].execution_count == 1  # the attempt in flight counts as sent
        again = c.submit_calls(
            run_id, "t1", tool_call("w1", "crash_booking", {"train_number": "ICE123"})
        )
        assert again.results[0].status == pb.CALL_STATUS_UNKNOWN
        assert c.get_run(run_id).state == pb.RUN_STATE_PAUSED_UNKNOWN_OUTCOME
    assert len(effects(effects_db, key)) == 1  # never replayed
    # the trail tells it: decided, then found in flight after the restart, counted as sent
    trail = [
        (r["kind"], r["status"], r["error_code"], r["execution_count"])
        for r in asyncio.run(audit_of(db, run_id))
    ]
    assert trail == [("decision", None, "", 0), ("execution", "UNKNOWN", "outcome_unknown", 1)]
    (lost,) = [r for r in asyncio.run(audit_of(db, run_id)) if r["kind"] == "execution"]
    assert "in flight when the gateway stopped" in str(lost["message"])


def test_listen_on_a_unix_socket(
    tmp_path: Path, travel: TravelService, tools_dir: Path, effects_db: Path
) -> None:
    sock = tmp_path / "callgate.sock"
    with own_sidecar(tmp_path, travel, tools_dir, effects_db, listen=f"unix:{sock}") as proc:
        assert proc.target == f"unix:{sock}"
        with GatewayClient(proc.target, "alice-demo-token") as c:
            assert c.start_run(run_id="r1").run_id == "r1"


def test_read_in_flight_at_a_crash_is_repeated_on_resume(
    tmp_path: Path, travel: TravelService, tools_dir: Path, effects_db: Path, new_db: NewDb
) -> None:
    from concurrent.futures import ThreadPoolExecutor

    db = new_db()
    travel.reset()
    travel.control({"train_status": {"delay_s": 30.0, "times": 1}})
    with (
        own_sidecar(tmp_path, travel, tools_dir, effects_db, db=db) as proc,
        GatewayClient(proc.target, "alice-demo-token") as c,
        ThreadPoolExecutor(1) as pool,
    ):
        c.start_run(run_id="r1")
        pending = pool.submit(
            c.submit_calls, "r1", "t1", tool_call("c1", "get_train_status", TRAIN)
        )
        assert travel.wait_for("train_status", 1, timeout_s=30)  # the read is on the wire
        proc.stop(kill=True)
        with pytest.raises(RequestError):
            pending.result(timeout=30)
    with (
        own_sidecar(tmp_path, travel, tools_dir, effects_db, db=db) as proc,
        GatewayClient(proc.target, "alice-demo-token") as c,
    ):
        assert c.get_run("r1").calls[0].status == pb.CALL_STATUS_EXECUTING
        out = c.resume_run("r1")
        (res,) = out.results
        assert res.status == pb.CALL_STATUS_SUCCEEDED and res.execution_count == 2
        assert out.next == pb.NEXT_ACTION_CONTINUE
        assert travel.stats()["train_status"] == 2
        assert c.get_run("r1").tool_calls_used == 1  # the repeat is not a new tool call
