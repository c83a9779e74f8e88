"""What a `ToolCall` says about its own arguments, sent with the raw generated stub (no helper
of callgate's fills anything in): a client that never heard of `complete` or `partial` gets its
complete arguments judged on their content; a client of the first proto that sets
`complete: true` keeps working; `partial: true` marks a fragment, never executed. Every refusal
says what was actually sent."""

from __future__ import annotations

import json
from collections.abc import Iterator

import grpc
import pytest

from examples.travel.service import TravelService
from gateway import pb
from gateway.testing import SidecarProcess
from tests.support.scenarios import WEATHER

ARGS = json.dumps(WEATHER)


@pytest.fixture
def stub(sidecar: SidecarProcess) -> Iterator[pb.ToolGatewayStub]:
    with grpc.insecure_channel(sidecar.target) as channel:
        yield pb.ToolGatewayStub(channel)


MD = [("authorization", "Bearer alice-demo-token")]


def submit(stub: pb.ToolGatewayStub, run_id: str, *calls: pb.ToolCall) -> pb.TurnOutcome:
    stub.StartRun(pb.StartRunRequest(run_id=run_id), metadata=MD, timeout=30)
    outcome: pb.TurnOutcome = stub.SubmitTurn(
        pb.SubmitTurnRequest(
            run_id=run_id, turn_id="t1", tool_request=pb.ToolRequest(calls=list(calls))
        ),
        metadata=MD,
        timeout=30,
    )
    return outcome


def test_a_call_that_never_sets_a_mark_is_judged_on_its_arguments(
    stub: pb.ToolGatewayStub, run_id: str, fresh_travel: TravelService
) -> None:
    (res,) = submit(
        stub, run_id, pb.ToolCall(call_id="c1", name="get_weather", arguments_json=ARGS)
    ).results
    assert (res.status, res.error.code, res.execution_count) == (pb.CALL_STATUS_SUCCEEDED, "", 1)
    assert json.loads(res.output_json)["city"] == "Berlin"
    assert fresh_travel.stats()["weather"] == 1


def test_an_older_client_that_sets_complete_keeps_working(
    stub: pb.ToolGatewayStub, run_id: str, fresh_travel: TravelService
) -> None:
    (res,) = submit(
        stub,
        run_id,
        pb.ToolCall(call_id="c1", name="get_weather", arguments_json=ARGS, complete=True),
    ).results
    assert res.status == pb.CALL_STATUS_SUCCEEDED and res.execution_count == 1


def test_a_call_marked_partial_never_runs_and_says_it_was_marked(
    stub: pb.ToolGatewayStub, run_id: str, fresh_travel: TravelService
) -> None:
    # complete=true beside it does not outweigh the mark: a fragment is never executed
    (res,) = submit(
        stub,
        run_id,
        pb.ToolCall(
            call_id="c1", name="get_weather", arguments_json=ARGS, partial=True, complete=True
        ),
    ).results
    assert (res.status, res.error.code, res.execution_count) == (
        pb.CALL_STATUS_REJECTED,
        "incomplete_arguments",
        0,
    )
    assert "marked partial" in res.error.message
    assert "not a complete JSON object" not in res.error.message
    assert fresh_travel.stats()["weather"] == 0


@pytest.mark.parametrize(
    "text,said",
    [
        ('{"city": "Ber', "the arguments are not a complete JSON object (not valid JSON: "),
        ("", "no arguments were sent"),
        ('["Berlin"]', "the text is JSON but not an object"),
    ],
)
def test_arguments_that_are_not_a_whole_object_say_what_was_sent(
    stub: pb.ToolGatewayStub, run_id: str, fresh_travel: TravelService, text: str, said: str
) -> None:
    (res,) = submit(
        stub, run_id, pb.ToolCall(call_id="c1", name="get_weather", arguments_json=text)
    ).results
    assert (res.status, res.error.code, res.execution_count) == (
        pb.CALL_STATUS_REJECTED,
        "incomplete_arguments",
        0,
    )
    assert said in res.error.message and "marked partial" not in res.error.message
    assert fresh_travel.stats()["weather"] == 0


def test_authorize_reads_the_marks_the_same_way(stub: pb.ToolGatewayStub) -> None:
    answer = stub.Authorize(
        pb.AuthorizeRequest(
            calls=[
                pb.ToolCall(call_id="plain", name="get_weather", arguments_json=ARGS),
                pb.ToolCall(call_id="cut", name="get_weather", arguments_json=ARGS, partial=True),
            ]
        ),
        metadata=MD,
        timeout=30,
    )
    found = {d.call_id: d for d in answer.decisions}
    assert found["plain"].decision.verdict == pb.VERDICT_ALLOW and not found["plain"].error.code
    assert found["cut"].error.code == "incomplete_arguments"
