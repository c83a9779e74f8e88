"""The `result` rule in the runner: redaction and withholding before a result is stored and
handed on; the call's status never changes; an evaluation error withholds."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from gateway.errors import CallCode
from gateway.executors.base import ExecutionResult
from gateway.model import CallStatus, NextAction, RunRecord, RunState, ToolCall
from gateway.run.deliver import Deliverer
from gateway.run.judge import Judge
from gateway.tools import Registry
from tests.gateway.run import tools
from tests.support.harness import ALICE, Harness, ScriptedPolicy
from tests.support.runs import TRAIN, call, calls_turn, start


async def _audit_text(h: Harness) -> str:
    return json.dumps(await h.store.audit_rows("r1"), default=str)


async def test_no_result_rule_delivers_as_is_and_is_not_asked(harness: Harness) -> None:
    h = harness
    await start(h)
    out = await h.runner.submit_turn(
        ALICE, calls_turn("r1", "t1", call("a", "lookup_train", TRAIN))
    )
    assert json.loads(out.results[0].output_json) == {"train": "ICE 100", "on_time": True}
    assert not [i for i in h.policy.inputs if i.get("action") == "result"]


async def test_a_redacted_read_is_stored_and_answered_redacted(harness: Harness) -> None:
    h = harness
    h.policy.result_value = {"deliver": True, "redact": ["/train"], "reasons": ["looks secret"]}
    await start(h)
    out = await h.runner.submit_turn(
        ALICE, calls_turn("r1", "t1", call("a", "lookup_train", TRAIN))
    )
    (res,) = out.results
    assert res.status == CallStatus.SUCCEEDED and res.error_code == ""
    assert json.loads(res.output_json) == {"train": "[redacted]", "on_time": True}
    asked = [i for i in h.policy.inputs if i.get("action") == "result"]
    assert asked[0]["result"] == {
        "status": "SUCCEEDED",
        "schema_problems": [],
        "output": {"train": "ICE 100", "on_time": True},
    }
    assert asked[0]["tool"]["effect"] == "read" and asked[0]["call"]["args"] == TRAIN
    view = await h.store.get_view("r1")
    assert view is not None and "ICE 100" not in view.calls[0].output_json
    audit = await h.store.audit_rows("r1")
    detail = json.loads(next(r for r in audit if r["kind"] == "execution")["detail_json"])
    mask = h.runner.registry.audit_key.mask("ICE 100")
    assert detail["delivery"] == {
        "withheld": False,
        "reasons": ["looks secret"],
        "redacted": [{"pointer": "/train", "mask": mask}],
    }


async def test_a_withheld_write_keeps_its_status_and_says_why(harness: Harness) -> None:
    h = harness
    h.policy.result_value = {"deliver": False, "reasons": ["booking refs stay private"]}
    await start(h)
    out = await h.runner.submit_turn(
        ALICE, calls_turn("r1", "t1", call("w", "book", {"seat": "12A"}))
    )
    (res,) = out.results
    assert res.status == CallStatus.SUCCEEDED  # the write ran: durability first
    assert res.error_code == CallCode.RESULT_WITHHELD.value
    assert "booking refs stay private" in res.error_message
    assert "booked" not in res.output_json and "booked" not in await _audit_text(h)
    view = await h.store.get_view("r1")
    assert view is not None and "booked" not in view.calls[0].output_json
    assert tools.APPLIED == {"r1:w": {"booked": "12A"}}
    assert out.next == NextAction.CONTINUE


async def test_a_result_error_withholds(harness: Harness) -> None:
    h = harness
    h.policy.result_fails = True
    await start(h)
    out = await h.runner.submit_turn(
        ALICE, calls_turn("r1", "t1", call("a", "lookup_train", TRAIN))
    )
    (res,) = out.results
    assert res.status == CallStatus.SUCCEEDED and res.error_code == "result_withheld"
    assert "policy_error: boom" in res.error_message and "ICE 100" not in res.output_json


async def test_a_pointer_to_nowhere_withholds(harness: Harness) -> None:
    h = harness
    h.policy.result_value = {"deliver": True, "redact": ["/train", "/no/such"]}
    await start(h)
    out = await h.runner.submit_turn(
        ALICE, calls_turn("r1", "t1", call("a", "lookup_train", TRAIN))
    )
    (res,) = out.results
    assert res.error_code == "result_withheld" and "points to nowhere" in res.error_message
    assert "ICE 100" not in res.output_json
    view = await h.store.get_view("r1")
    assert view is not None and "ICE 100" not in view.calls[0].output_json


async def test_a_result_whose_tool_is_no_longer_served_is_withheld() -> None:
    """The rule cannot be asked without the tool (a reload removed it): fail closed."""
    served = Registry.from_manifests([])
    rec = Judge(served, policy=None).propose(  # type: ignore[arg-type]  # propose asks none
        "r1", "t1", 0, ToolCall("a", "removed_tool", "{}"), datetime(2026, 12, 2, tzinfo=UTC)
    )
    policy = ScriptedPolicy(result_value={"deliver": True, "redact": [], "reasons": []})
    res = ExecutionResult(CallStatus.SUCCEEDED, output_json='{"secret": "s3"}', attempts=1)
    run = RunRecord("r1", RunState.ACTIVE, "alice", "acme")
    kept, delivery = await Deliverer(policy, served).deliver(rec, res, run=run, identity=ALICE)
    assert kept.error_code == CallCode.RESULT_WITHHELD.value and "s3" not in kept.output_json
    assert "no longer served" in kept.error_message
    assert delivery is not None and delivery.withheld and kept.attempts == 1
