"""A tool-calling loop's regression cases (a final answer, a single call, calls answered out
of order, an unknown tool, invalid arguments, a truncated stream, a tool error, an approval
pause, an executor rejection, an interruption after a write, process recovery, a refusal), over
real gRPC against a real sidecar process.

Each case checks the call's status and code, its execution count, result correlation by call
ID, and whether the external effect happened (read from the target, not from callgate).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from examples.travel.service import TravelService
from gateway import pb
from gateway.client import DeadlineExceeded, RequestError, error_code, tool_call
from tests.support.effects import effects
from tests.support.paths import Connect
from tests.support.scenarios import TRAIN, WEATHER, by_id


def test_final_answer_with_no_tool(connect: Connect, run_id: str) -> None:
    c = connect("alice-demo-token")
    c.start_run(run_id=run_id)
    out = c.submit_turn(run_id=run_id, turn_id="t1", final=pb.FinalAnswer(text="hello"))
    assert out.next == pb.NEXT_ACTION_DONE
    assert out.run_state == pb.RUN_STATE_COMPLETED
    assert list(out.results) == []
    run = c.get_run(run_id)
    assert run.state == pb.RUN_STATE_COMPLETED and run.turns_used == 1


def test_single_call(connect: Connect, run_id: str, fresh_travel: TravelService) -> None:
    c = connect("alice-demo-token")
    c.start_run(run_id=run_id)
    out = c.submit_calls(
        run_id,
        "t1",
        tool_call("call_1", "get_train_status", TRAIN),
        usage=pb.Usage(input_tokens=10, output_tokens=5),
    )
    (res,) = out.results
    assert res.call_id == "call_1" and res.status == pb.CALL_STATUS_SUCCEEDED
    assert json.loads(res.output_json)["train_number"] == "ICE123"
    assert res.execution_count == 1
    assert res.decision.verdict == pb.VERDICT_ALLOW and res.decision.policy_revision
    assert out.next == pb.NEXT_ACTION_CONTINUE and out.run_state == pb.RUN_STATE_ACTIVE
    assert fresh_travel.stats()["train_status"] == 1
    run = c.get_run(run_id)
    assert run.tool_calls_used == 1
    assert run.usage_total.input_tokens == 10 and run.usage_total.output_tokens == 5
    (rec,) = run.calls
    assert rec.status == pb.CALL_STATUS_SUCCEEDED and rec.started_at and rec.finished_at
    assert len(rec.arguments_sha256) == 64


def test_two_reads_finishing_in_reverse_order(
    connect: Connect, run_id: str, fresh_travel: TravelService
) -> None:
    fresh_travel.control({"train_status": {"delay_s": 0.4, "times": 1}})
    c = connect("alice-demo-token")
    c.start_run(run_id=run_id)
    out = c.submit_calls(
        run_id,
        "t1",
        tool_call("call_train", "get_train_status", TRAIN),
        tool_call("call_weather", "get_weather", WEATHER),
    )
    assert [r.call_id for r in out.results] == ["call_train", "call_weather"]
    res = by_id(out)
    assert json.loads(res["call_train"].output_json)["train_number"] == "ICE123"
    assert json.loads(res["call_weather"].output_json)["city"] == "Berlin"
    calls = {r.call_id: r for r in c.get_run(run_id).calls}
    assert calls["call_weather"].finished_at < calls["call_train"].finished_at
    # both ran concurrently: weather started before train finished
    assert calls["call_weather"].started_at < calls["call_train"].finished_at


def test_unknown_tool(connect: Connect, run_id: str) -> None:
    c = connect("alice-demo-token")
    c.start_run(run_id=run_id)
    (res,) = c.submit_calls(run_id, "t1", tool_call("c1", "launch_rocket", {})).results
    assert res.status == pb.CALL_STATUS_REJECTED and res.error.code == "unknown_tool"
    assert res.decision.verdict == pb.VERDICT_UNSPECIFIED and res.execution_count == 0
    assert "launch_rocket" in res.error.message


def test_arguments_failing_the_schema(
    connect: Connect, run_id: str, fresh_travel: TravelService
) -> None:
    c = connect("alice-demo-token")
    c.start_run(run_id=run_id)
    out = c.submit_calls(
        run_id,
        "t1",
        tool_call("c1", "get_train_status", {"train_number": "12-XYZ!", "date": "2026-12-01"}),
    )
    (res,) = out.results
    assert res.status == pb.CALL_STATUS_REJECTED and res.error.code == "invalid_arguments"
    assert "train_number" in res.error.message
    assert fresh_travel.stats()["train_status"] == 0
    assert out.next == pb.NEXT_ACTION_CONTINUE


@pytest.mark.parametrize(
    "text,partial",
    [('{"train_number": "ICE1', False), (json.dumps(TRAIN), True), ('["ICE123"]', False)],
)
def test_arguments_that_are_not_complete_json(
    connect: Connect, run_id: str, text: str, partial: bool, fresh_travel: TravelService
) -> None:
    c = connect("alice-demo-token")
    c.start_run(run_id=run_id)
    (res,) = c.submit_calls(
        run_id, "t1", tool_call("c1", "get_train_status", text, partial=partial)
    ).results
    assert res.status == pb.CALL_STATUS_REJECTED and res.error.code == "incomplete_arguments"
    assert fresh_travel.stats()["train_status"] == 0


def test_policy_deny_for_another_tenants_train(
    connect: Connect, run_id: str, fresh_travel: TravelService
) -> None:
    c = connect("alice-demo-token")
    c.start_run(run_id=run_id)
    (res,) = c.submit_calls(
        run_id,
        "t1",
        tool_call("c1", "get_train_status", {"train_number": "TGV9", "date": "2026-12-01"}),
    ).results
    assert res.status == pb.CALL_STATUS_REJECTED and res.error.code == "policy_denied"
    assert res.decision.verdict == pb.VERDICT_DENY and res.decision.reasons
    assert fresh_travel.stats()["train_status"] == 0


def test_policy_deny_for_a_tool_outside_the_role(
    connect: Connect, run_id: str, effects_db: Path
) -> None:
    c = connect("alice-demo-token")
    c.start_run(run_id=run_id)
    (res,) = c.submit_calls(
        run_id, "t1", tool_call("c1", "book_ticket", {"train_number": "ICE123"})
    ).results
    assert res.error.code == "policy_denied" and res.execution_count == 0
    assert effects(effects_db, f"{run_id}:c1") == []


def test_tool_error(connect: Connect, run_id: str, fresh_travel: TravelService) -> None:
    fresh_travel.control({"weather": {"status": 500}})
    c = connect("alice-demo-token")
    c.start_run(run_id=run_id)
    out = c.submit_calls(
        run_id,
        "t1",
        tool_call("c_train", "get_train_status", TRAIN),
        tool_call("c_weather", "get_weather", WEATHER),
    )
    res = by_id(out)
    assert res["c_weather"].status == pb.CALL_STATUS_FAILED
    assert res["c_weather"].error.code == "tool_error"
    assert res["c_train"].status == pb.CALL_STATUS_SUCCEEDED
    assert out.next == pb.NEXT_ACTION_CONTINUE


def test_read_timeout_keeps_the_other_result(
    connect: Connect, run_id: str, fresh_travel: TravelService
) -> None:
    fresh_travel.control({"weather": {"delay_s": 3.0, "times": 1}})
    c = connect("alice-demo-token")
    c.start_run(run_id=run_id)
    res = by_id(
        c.submit_calls(
            run_id,
            "t1",
            tool_call("c_train", "get_train_status", TRAIN),
            tool_call("c_weather", "get_weather", WEATHER),
        )
    )
    assert res["c_weather"].status == pb.CALL_STATUS_FAILED
    assert res["c_weather"].error.code == "tool_timeout"
    assert res["c_train"].status == pb.CALL_STATUS_SUCCEEDED
    assert json.loads(res["c_train"].output_json)["train_number"] == "ICE123"


def test_tool_call_budget_exhausted(
    connect: Connect, run_id: str, fresh_travel: TravelService
) -> None:
    c = connect("alice-demo-token")
    c.start_run(run_id=run_id, budget=pb.Budget(max_tool_calls=1))
    out = c.submit_calls(
        run_id,
        "t1",
        tool_call("c1", "get_train_status", TRAIN),
        tool_call("c2", "get_weather", WEATHER),
    )
    res = by_id(out)
    assert res["c1"].status == pb.CALL_STATUS_SUCCEEDED
    assert res["c2"].status == pb.CALL_STATUS_REJECTED
    assert res["c2"].error.code == "budget_exhausted"
    assert out.next == pb.NEXT_ACTION_BUDGET_EXHAUSTED
    assert out.run_state == pb.RUN_STATE_BUDGET_EXHAUSTED
    assert fresh_travel.stats()["weather"] == 0


def test_turn_budget_exhausted(connect: Connect, run_id: str) -> None:
    c = connect("alice-demo-token")
    c.start_run(run_id=run_id, budget=pb.Budget(max_turns=1))
    out = c.submit_calls(run_id, "t1", tool_call("c1", "get_weather", WEATHER))
    assert out.results[0].status == pb.CALL_STATUS_SUCCEEDED
    assert out.next == pb.NEXT_ACTION_BUDGET_EXHAUSTED
    with pytest.raises(RequestError) as err:
        c.submit_turn(run_id=run_id, turn_id="t2", final=pb.FinalAnswer(text="x"))
    assert err.value.grpc_status == "FAILED_PRECONDITION"
    assert error_code(err.value) == "run_finished"


def test_token_budget_exhausted(connect: Connect, run_id: str, fresh_travel: TravelService) -> None:
    c = connect("alice-demo-token")
    c.start_run(run_id=run_id, budget=pb.Budget(max_total_tokens=100))
    out = c.submit_calls(
        run_id,
        "t1",
        tool_call("c1", "get_weather", WEATHER),
        usage=pb.Usage(input_tokens=90, output_tokens=20),
    )
    assert out.results[0].error.code == "budget_exhausted"
    assert out.next == pb.NEXT_ACTION_BUDGET_EXHAUSTED
    assert fresh_travel.stats()["weather"] == 0


def test_same_turn_submitted_twice_executes_once(
    connect: Connect, run_id: str, fresh_travel: TravelService
) -> None:
    c = connect("alice-demo-token")
    c.start_run(run_id=run_id)
    first = c.submit_calls(run_id, "t1", tool_call("c1", "get_train_status", TRAIN))
    again = c.submit_calls(run_id, "t1", tool_call("c1", "get_train_status", TRAIN))
    assert again == first
    assert again.results[0].execution_count == 1
    assert fresh_travel.stats()["train_status"] == 1
    assert c.get_run(run_id).turns_used == 1


def test_same_turn_id_with_other_content_conflicts(connect: Connect, run_id: str) -> None:
    c = connect("alice-demo-token")
    c.start_run(run_id=run_id)
    c.submit_calls(run_id, "t1", tool_call("c1", "get_weather", WEATHER))
    with pytest.raises(RequestError) as err:
        c.submit_calls(
            run_id, "t1", tool_call("c1", "get_weather", {"city": "Paris", "date": "2026-12-01"})
        )
    assert err.value.grpc_status == "ALREADY_EXISTS"
    assert error_code(err.value) == "turn_conflict"


def test_call_id_reused_in_a_later_turn(
    connect: Connect, run_id: str, fresh_travel: TravelService
) -> None:
    c = connect("alice-demo-token")
    c.start_run(run_id=run_id)
    c.submit_calls(run_id, "t1", tool_call("c1", "get_weather", WEATHER))
    out = c.submit_calls(
        run_id,
        "t2",
        tool_call("c1", "get_weather", WEATHER),
        tool_call("c2", "get_weather", WEATHER),
    )
    res = by_id(out)
    assert res["c1"].status == pb.CALL_STATUS_REJECTED
    assert res["c1"].error.code == "duplicate_call_id"
    assert res["c2"].status == pb.CALL_STATUS_SUCCEEDED
    assert fresh_travel.stats()["weather"] == 2
    turns = [r.turn_id for r in c.get_run(run_id).calls if r.call_id == "c1"]
    assert turns == ["t1", "t2"]  # the duplicate is recorded under its own turn


def test_same_call_id_twice_in_one_turn_is_invalid(connect: Connect, run_id: str) -> None:
    c = connect("alice-demo-token")
    c.start_run(run_id=run_id)
    with pytest.raises(RequestError) as err:
        c.submit_calls(
            run_id,
            "t1",
            tool_call("c1", "get_weather", WEATHER),
            tool_call("c1", "get_train_status", TRAIN),
        )
    assert err.value.grpc_status == "INVALID_ARGUMENT"
    assert error_code(err.value) == "duplicate_call_id"
    assert c.get_run(run_id).turns_used == 0


@pytest.mark.parametrize("token", ["", "not-a-known-token"])
def test_caller_without_a_valid_token(connect: Connect, token: str) -> None:
    c = connect(token)
    with pytest.raises(RequestError) as err:
        c.start_run()
    assert err.value.grpc_status == "UNAUTHENTICATED"
    assert error_code(err.value) == "unauthenticated"


def test_another_subject_cannot_read_or_continue_the_run(connect: Connect, run_id: str) -> None:
    connect("alice-demo-token").start_run(run_id=run_id)
    other = connect("mallory-demo-token")
    for call in (
        lambda: other.get_run(run_id),
        lambda: other.submit_turn(run_id=run_id, turn_id="t1", final=pb.FinalAnswer(text="x")),
        lambda: other.resume_run(run_id),
        lambda: other.cancel_run(run_id),
    ):
        with pytest.raises(RequestError) as err:
            call()
        assert err.value.grpc_status == "PERMISSION_DENIED"
        assert error_code(err.value) == "permission_denied"


def test_unknown_run(connect: Connect) -> None:
    with pytest.raises(RequestError) as err:
        connect("alice-demo-token").get_run("no-such-run")
    assert err.value.grpc_status == "NOT_FOUND"
    assert error_code(err.value) == "run_not_found"


def test_write_needing_approval_pauses_and_refuses_a_new_turn(
    connect: Connect, run_id: str, effects_db: Path, fresh_travel: TravelService
) -> None:
    c = connect("tina-demo-token")
    c.start_run(run_id=run_id)
    out = c.submit_calls(
        run_id,
        "t1",
        tool_call("w1", "book_ticket", {"train_number": "ICE123"}),
        tool_call("r1", "get_weather", WEATHER),
    )
    res = by_id(out)
    assert res["w1"].status == pb.CALL_STATUS_PENDING_APPROVAL and res["w1"].approval_id
    assert res["w1"].decision.verdict == pb.VERDICT_APPROVAL_REQUIRED
    assert res["r1"].status == pb.CALL_STATUS_SUCCEEDED  # reads run in every case
    assert out.next == pb.NEXT_ACTION_PAUSED_FOR_APPROVAL
    assert out.run_state == pb.RUN_STATE_PAUSED_FOR_APPROVAL
    assert effects(effects_db, f"{run_id}:w1") == []
    with pytest.raises(RequestError) as err:
        c.submit_turn(run_id=run_id, turn_id="t2", final=pb.FinalAnswer(text="x"))
    assert err.value.grpc_status == "FAILED_PRECONDITION"
    assert error_code(err.value) == "run_paused"
    assert "w1" in err.value.message
    assert c.resume_run(run_id) == out  # the latest outcome, nothing executed
    assert effects(effects_db, f"{run_id}:w1") == []


def test_refusal_hands_off(connect: Connect, run_id: str) -> None:
    c = connect("alice-demo-token")
    c.start_run(run_id=run_id)
    out = c.submit_turn(run_id=run_id, turn_id="t1", refusal=pb.Refusal(text="I can't"))
    assert out.next == pb.NEXT_ACTION_HANDOFF and out.run_state == pb.RUN_STATE_HANDED_OFF


def test_truncated_response_retries_then_hands_off(connect: Connect, run_id: str) -> None:
    c = connect("alice-demo-token")
    c.start_run(run_id=run_id, budget=pb.Budget(max_retries=2))
    nexts = [
        c.submit_turn(
            run_id=run_id, turn_id=f"t{i}", incomplete=pb.Incomplete(reason="max_output_tokens")
        ).next
        for i in range(3)
    ]
    assert nexts == [pb.NEXT_ACTION_RETRY_TURN, pb.NEXT_ACTION_RETRY_TURN, pb.NEXT_ACTION_HANDOFF]
    assert c.get_run(run_id).state == pb.RUN_STATE_HANDED_OFF


def test_retry_counter_resets_after_a_complete_turn(connect: Connect, run_id: str) -> None:
    c = connect("alice-demo-token")
    c.start_run(run_id=run_id, budget=pb.Budget(max_retries=1))
    inc = pb.Incomplete(reason="length")
    assert (
        c.submit_turn(run_id=run_id, turn_id="a", incomplete=inc).next == pb.NEXT_ACTION_RETRY_TURN
    )
    c.submit_calls(run_id, "b", tool_call("c1", "get_weather", WEATHER))
    assert (
        c.submit_turn(run_id=run_id, turn_id="c", incomplete=inc).next == pb.NEXT_ACTION_RETRY_TURN
    )


@pytest.mark.parametrize(
    "retryable,expected", [(True, pb.NEXT_ACTION_RETRY_TURN), (False, pb.NEXT_ACTION_HANDOFF)]
)
def test_provider_errors(connect: Connect, run_id: str, retryable: bool, expected: int) -> None:
    c = connect("alice-demo-token")
    c.start_run(run_id=run_id)
    out = c.submit_turn(
        run_id=run_id,
        turn_id="t1",
        provider_error=pb.ProviderError(
            kind="rate_limit", message="slow down", retryable=retryable
        ),
    )
    assert out.next == expected


def test_paused_turn_continues(connect: Connect, run_id: str) -> None:
    c = connect("alice-demo-token")
    c.start_run(run_id=run_id)
    out = c.submit_turn(run_id=run_id, turn_id="t1", paused=pb.Paused(reason="pause_turn"))
    assert out.next == pb.NEXT_ACTION_CONTINUE and list(out.results) == []


def test_a_client_that_gives_up_does_not_cut_a_turn_short(
    connect: Connect, run_id: str, fresh_travel: TravelService
) -> None:
    fresh_travel.control({"train_status": {"delay_s": 1.0, "times": 1}})
    c = connect("alice-demo-token")
    c.start_run(run_id=run_id)
    with pytest.raises(DeadlineExceeded) as err:
        c.submit_calls(run_id, "t1", tool_call("c1", "get_train_status", TRAIN), timeout_s=0.3)
    assert err.value.grpc_status == "DEADLINE_EXCEEDED"
    out = c.resume_run(run_id)  # waits for the turn, which went on without the client
    (res,) = out.results
    assert res.status == pb.CALL_STATUS_SUCCEEDED and res.execution_count == 1
    assert out.next == pb.NEXT_ACTION_CONTINUE
    assert fresh_travel.stats()["train_status"] == 1


def test_resume_before_any_turn_answers_the_run_state(connect: Connect, run_id: str) -> None:
    c = connect("alice-demo-token")
    c.start_run(run_id=run_id)
    out = c.resume_run(run_id)
    assert out.next == pb.NEXT_ACTION_CONTINUE and out.run_state == pb.RUN_STATE_ACTIVE
    assert list(out.results) == [] and out.turn_id == ""
