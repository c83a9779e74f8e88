"""The `run` part of a decision's input: bounded, and never poisoned by what was stored."""

from __future__ import annotations

import json

from gateway.model import CallRecord, CallStatus, RunRecord, RunState
from gateway.policy.inputs import RunContext

RUN = RunRecord(run_id="r1", state=RunState.ACTIVE, subject="alice", tenant="acme")


def call(i: int, arguments_json: str, status: CallStatus = CallStatus.SUCCEEDED) -> CallRecord:
    return CallRecord(
        run_id="r1",
        turn_id=f"t{i}",
        call_id=f"c{i}",
        index=0,
        tool="get_weather",
        status=status,
        arguments_json=arguments_json,
        effect="read",
    )


def test_earlier_arguments_are_bounded_most_recent_first() -> None:
    big = json.dumps({"city": "x" * 50_000})
    recent = [call(i, big) for i in range(10)] + [call(10, '{"city": "Berlin"}')]
    ctx = RunContext(run=RUN, turn_seq=12, turn_id="t12", recent=recent, history_bytes=120_000)
    calls = ctx.as_input()["calls"]
    assert len(json.dumps(ctx.as_input())) < 130_000
    assert calls[-1]["args"] == {"city": "Berlin"}
    assert calls[-2]["args"] == {"city": "x" * 50_000}
    assert calls[-3]["args"] == {"city": "x" * 50_000}
    assert calls[0]["args"] is None and calls[0]["args_omitted"] is True
    assert "policy_input_degraded" not in ctx.as_input()


def test_unreadable_stored_arguments_are_skipped_and_flagged() -> None:
    recent = [
        call(0, '{"city": NaN}'),  # an older writer's record
        call(1, "[" * 5000 + "]" * 5000, CallStatus.REJECTED),
        call(2, '{"city": "Berlin"}'),
    ]
    ctx = RunContext(run=RUN, turn_seq=4, turn_id="t4", recent=recent)
    out = ctx.as_input()
    assert [c["args"] for c in out["calls"]] == [None, None, {"city": "Berlin"}]
    assert out["policy_input_degraded"] is True
    json.dumps(out, allow_nan=False)


def test_rejected_calls_with_bad_arguments_do_not_degrade_the_input() -> None:
    recent = [call(0, '{"city": 1e400}', CallStatus.REJECTED), call(1, '{"city": "B"}')]
    out = RunContext(run=RUN, turn_seq=2, turn_id="t2", recent=recent).as_input()
    assert out["calls"][0]["args"] is None
    assert "policy_input_degraded" not in out
