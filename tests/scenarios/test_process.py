"""Start-up refusals, engine panics, an unwritable store, and recovery after a crash.

Each test runs its own sidecar process (its own store) against the real travel service.
"""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import grpc
import pytest

from examples.travel.service import TravelService
from gateway import pb
from gateway.client import GatewayClient, error_code, tool_call
from gateway.testing import SidecarProcess, run_serve_expecting_failure
from tests.conftest import AUTH, POLICIES, sidecar_env
from tests.scenarios.test_guide_cases import TRAIN, WEATHER
from tests.support.effects import effects


@contextmanager
def own_sidecar(tmp_path: Path, travel: TravelService, tools_dir: Path, effects_db: Path,
                policies: Path = POLICIES, db: Path | None = None,
                extra: tuple[str, ...] = (), listen: str = "127.0.0.1:0",
                env: dict[str, str] | None = None) -> Iterator[SidecarProcess]:
    with SidecarProcess(tools=tools_dir, policies=policies, db=db or tmp_path / "cg.db",
                        auth=AUTH, env={**sidecar_env(travel, effects_db), **(env or {})},
                        extra_args=extra,
                        listen=listen) as proc:
        yield proc


def test_bad_manifest_stops_start_up_naming_file_and_field(tmp_path: Path,
                                                           tools_dir: Path) -> None:
    tools = tmp_path / "tools"
    shutil.copytree(tools_dir, tools)
    (tools / "broken.yaml").write_text(
        "name: broken\nversion: '1'\neffect: maybe\ninput_schema: {type: object}\n"
        "executor: {type: http, url: 'http://127.0.0.1:9/x'}\n")
    code, out = run_serve_expecting_failure(
        ["--listen", "127.0.0.1:0", "--tools", str(tools), "--policies", str(POLICIES),
         "--db", str(tmp_path / "x.db"), "--auth", str(AUTH)])
    assert code != 0
    assert "broken.yaml: effect:" in out and "read" in out


def test_bad_policy_stops_start_up_naming_file_and_line(tmp_path: Path,
                                                        tools_dir: Path) -> None:
    policies = tmp_path / "policies"
    shutil.copytree(POLICIES, policies)
    (policies / "extra.rego").write_text("package callgate\n\nbroken if {\n  input.x ==\n}\n")
    code, out = run_serve_expecting_failure(
        ["--listen", "127.0.0.1:0", "--tools", str(tools_dir), "--policies", str(policies),
         "--db", str(tmp_path / "x.db"), "--auth", str(AUTH)])
    assert code != 0
    assert "extra.rego:5" in out and "expecting expression" in out
    assert "Stack backtrace" not in out


def test_serve_without_auth_refuses(tmp_path: Path, tools_dir: Path) -> None:
    code, out = run_serve_expecting_failure(
        ["--listen", "127.0.0.1:0", "--tools", str(tools_dir), "--policies", str(POLICIES),
         "--db", str(tmp_path / "x.db")])
    assert code != 0 and "--auth" in out


PANIC_POLICY = """package callgate

# object.subset with an empty array as the subset panics this engine build
decision := {"allow": object.subset([input.call.args.city], []) == true} if {
  input.call.tool == "get_weather"
}

decision := {"allow": true} if {
  input.call.tool != "get_weather"
}
"""


def test_policy_that_panics_the_engine_denies_and_the_sidecar_keeps_serving(
        tmp_path: Path, travel: TravelService, tools_dir: Path, effects_db: Path) -> None:
    policies = tmp_path / "policies"
    policies.mkdir()
    (policies / "panic.rego").write_text(PANIC_POLICY)
    travel.reset()
    with own_sidecar(tmp_path, travel, tools_dir, effects_db, policies=policies) as proc, \
            GatewayClient(proc.target, "alice-token") as c:
        c.start_run(run_id="r1")
        for turn in ("t1", "t2"):
            out = c.submit_calls("r1", turn, tool_call(f"w-{turn}", "get_weather", WEATHER),
                                 tool_call(f"t-{turn}", "get_train_status", TRAIN))
            res = {r.call_id: r for r in out.results}
            assert res[f"w-{turn}"].status == pb.CALL_STATUS_REJECTED
            assert res[f"w-{turn}"].error.code == "policy_error"
            assert res[f"w-{turn}"].decision.verdict == pb.VERDICT_DENY
            assert res[f"t-{turn}"].status == pb.CALL_STATUS_SUCCEEDED
        assert travel.stats()["weather"] == 0
    assert "stack backtrace" not in proc.output.lower()  # a panic is one line, not a flood


def test_store_that_cannot_be_written_executes_nothing(
        tmp_path: Path, travel: TravelService, tools_dir: Path, effects_db: Path) -> None:
    db = tmp_path / "locked.db"
    travel.reset()
    with own_sidecar(tmp_path, travel, tools_dir, effects_db, db=db,
                     extra=("--db-busy-timeout", "0.2")) as proc, \
            GatewayClient(proc.target, "writer-token") as c:
        c.start_run(run_id="r1")
        lock = sqlite3.connect(db, isolation_level=None)
        lock.execute("BEGIN EXCLUSIVE")  # another writer holds the store
        try:
            with pytest.raises(grpc.RpcError) as err:
                c.submit_calls("r1", "t1", tool_call("c1", "get_weather", WEATHER),
                               tool_call("w1", "book_ticket", {"train_number": "ICE123"}))
            assert err.value.code() == grpc.StatusCode.UNAVAILABLE
            assert error_code(err.value) == "store_unavailable"
        finally:
            lock.execute("ROLLBACK")
            lock.close()
        assert travel.stats()["weather"] == 0
        assert effects(effects_db, "r1:w1") == []
        # nothing was lost: the same turn goes through once the store is writable again
        out = c.submit_calls("r1", "t1", tool_call("c1", "get_weather", WEATHER),
                             tool_call("w1", "book_ticket", {"train_number": "ICE123"}))
        assert [r.status for r in out.results] == [pb.CALL_STATUS_SUCCEEDED] * 2
        assert len(effects(effects_db, "r1:w1")) == 1


def test_crash_after_a_write_never_replays_it(tmp_path: Path, travel: TravelService,
                                              tools_dir: Path, effects_db: Path) -> None:
    db = tmp_path / "crash.db"
    run_id = "crash-run"
    key = f"{run_id}:w1"
    with own_sidecar(tmp_path, travel, tools_dir, effects_db, db=db) as proc:
        with GatewayClient(proc.target, "writer-token") as c:
            c.start_run(run_id=run_id)
            with pytest.raises(grpc.RpcError) as err:
                c.submit_calls(run_id, "t1",
                               tool_call("w1", "crash_booking", {"train_number": "ICE123"}))
            assert err.value.code() == grpc.StatusCode.UNAVAILABLE
        assert proc.stop() == 17  # the process died inside the write
    assert len(effects(effects_db, key)) == 1
    with own_sidecar(tmp_path, travel, tools_dir, effects_db, db=db) as proc, \
            GatewayClient(proc.target, "writer-token") as c:
        run = c.get_run(run_id)
        (rec,) = run.calls
        assert rec.status == pb.CALL_STATUS_EXECUTING  # the intent was committed first
        with pytest.raises(grpc.RpcError) as err:
            c.submit_turn(run_id=run_id, turn_id="t2", final=pb.FinalAnswer(text="x"))
        assert error_code(err.value) == "run_paused"
        out = c.resume_run(run_id)
        assert out.next == pb.NEXT_ACTION_PAUSED_UNKNOWN_OUTCOME
        assert out.results[0].status == pb.CALL_STATUS_UNKNOWN
        assert out.results[0].execution_count == 1  # the attempt in flight counts as sent
        again = c.submit_calls(run_id, "t1",
                               tool_call("w1", "crash_booking", {"train_number": "ICE123"}))
        assert again.results[0].status == pb.CALL_STATUS_UNKNOWN
        assert c.get_run(run_id).state == pb.RUN_STATE_PAUSED_UNKNOWN_OUTCOME
    assert len(effects(effects_db, key)) == 1  # never replayed


def test_listen_on_a_unix_socket(tmp_path: Path, travel: TravelService, tools_dir: Path,
                                 effects_db: Path) -> None:
    sock = tmp_path / "callgate.sock"
    with own_sidecar(tmp_path, travel, tools_dir, effects_db,
                     listen=f"unix:{sock}") as proc:
        assert proc.target == f"unix:{sock}"
        with GatewayClient(proc.target, "alice-token") as c:
            assert c.start_run(run_id="r1").run_id == "r1"


def test_read_in_flight_at_a_crash_is_repeated_on_resume(
        tmp_path: Path, travel: TravelService, tools_dir: Path, effects_db: Path) -> None:
    from concurrent.futures import ThreadPoolExecutor

    db = tmp_path / "crash-read.db"
    travel.reset()
    travel.control({"train_status": {"delay_s": 30.0, "times": 1}})
    with own_sidecar(tmp_path, travel, tools_dir, effects_db, db=db) as proc, \
            GatewayClient(proc.target, "alice-token") as c, ThreadPoolExecutor(1) as pool:
        c.start_run(run_id="r1")
        pending = pool.submit(c.submit_calls, "r1", "t1",
                              tool_call("c1", "get_train_status", TRAIN))
        assert travel.wait_for("train_status", 1, timeout_s=30)  # the read is on the wire
        proc.stop(kill=True)
        with pytest.raises(grpc.RpcError):
            pending.result(timeout=30)
    with own_sidecar(tmp_path, travel, tools_dir, effects_db, db=db) as proc, \
            GatewayClient(proc.target, "alice-token") as c:
        assert c.get_run("r1").calls[0].status == pb.CALL_STATUS_EXECUTING
        out = c.resume_run("r1")
        (res,) = out.results
        assert res.status == pb.CALL_STATUS_SUCCEEDED and res.execution_count == 2
        assert out.next == pb.NEXT_ACTION_CONTINUE
        assert travel.stats()["train_status"] == 2
        assert c.get_run("r1").tool_calls_used == 1  # the repeat is not a new tool call
