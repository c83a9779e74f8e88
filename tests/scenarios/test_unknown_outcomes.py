"""A write whose outcome is unknown is looked up, never replayed; the run pauses while the
look-up is inconclusive and ResumeRun settles it once the target answers."""

from __future__ import annotations

from pathlib import Path

import grpc
import pytest

from examples.travel.service import TravelService
from gateway import pb
from gateway.client import GatewayClient, error_code, tool_call
from tests.gateway.executors.target import Reply, running_target
from tests.scenarios.test_process import own_sidecar


def test_lost_response_is_reconciled_not_replayed(tmp_path: Path, travel: TravelService,
                                                  tools_dir: Path, effects_db: Path) -> None:
    with running_target() as target:
        key = "r1:w1"
        target.script("/reserve", Reply(503, {"error": "gateway timeout upstream"}))
        target.script("/by-key/r1%3Aw1", Reply(500, {"error": "index lagging"}),
                      Reply(200, {"reservation": "R-17", "slot": "9am"}))
        env_dir = tmp_path / "env"
        env_dir.mkdir()
        with own_sidecar(env_dir, travel, tools_dir, effects_db,
                         env={"CALLGATE_TEST_TARGET_URL": target.url}) as proc, \
                GatewayClient(proc.target, "writer-token") as c:
            c.start_run(run_id="r1")
            out = c.submit_calls("r1", "t1", tool_call("w1", "reserve_slot", {"slot": "9am"}))
            (res,) = out.results
            assert res.status == pb.CALL_STATUS_UNKNOWN and res.execution_count == 1
            assert out.next == pb.NEXT_ACTION_PAUSED_UNKNOWN_OUTCOME
            assert out.run_state == pb.RUN_STATE_PAUSED_UNKNOWN_OUTCOME
            with pytest.raises(grpc.RpcError) as err:
                c.submit_turn(run_id="r1", turn_id="t2", final=pb.FinalAnswer(text="x"))
            assert error_code(err.value) == "run_paused"
            settled = c.resume_run("r1")
            (res,) = settled.results
            assert res.status == pb.CALL_STATUS_SUCCEEDED and res.execution_count == 1
            assert '"R-17"' in res.output_json
            assert settled.next == pb.NEXT_ACTION_CONTINUE
            assert settled.run_state == pb.RUN_STATE_ACTIVE
        posts = [s for s in target.seen if s.method == "POST"]
        assert len(posts) == 1  # the write was sent once, whatever happened after
        assert posts[0].headers.get("Idempotency-Key") == key
