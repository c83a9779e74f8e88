"""Every size limit of `callgate serve`, enforced before work is done, with a clear code.

One sidecar with small limits; each case checks the code a caller gets, that nothing ran, and
that nothing oversized was stored.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from examples.travel.service import TravelService
from gateway import pb
from gateway.client import GatewayClient, tool_call
from gateway.testing import SidecarProcess
from tests.support.effects import effects
from tests.support.paths import AUTH, POLICIES, sidecar_env
from tests.support.refusals import assert_refused, assert_run_usable, rpc_error, submit_stream
from tests.support.scenarios import TRAIN, WEATHER

LIMITS = {
    "--max-calls-per-turn": 3,
    "--max-arguments-bytes": 500,
    "--max-labels": 2,
    "--max-label-bytes": 16,
    "--max-conversation-bytes": 1000,
    "--max-stream-events": 10,
    "--max-stream-bytes": 4096,
    "--max-output-bytes": 150,
    "--max-message-bytes": 200_000,
    "--max-run-page-turns": 4,
    "--max-run-page-bytes": 5000,
}


@pytest.fixture(scope="module")
def small(
    tmp_path_factory: pytest.TempPathFactory,
    travel: TravelService,
    tools_dir: Path,
    effects_db: Path,
) -> Iterator[SidecarProcess]:
    db = tmp_path_factory.mktemp("limits") / "callgate.db"
    args = [str(x) for pair in LIMITS.items() for x in pair]
    with SidecarProcess(
        tools=tools_dir,
        policies=POLICIES,
        db=db,
        auth=AUTH,
        extra_args=args,
        env=sidecar_env(travel, effects_db),
    ) as proc:
        yield proc


@pytest.fixture
def client(small: SidecarProcess) -> Iterator[GatewayClient]:
    with GatewayClient(small.target, "alice-demo-token", timeout_s=30) as c:
        yield c


def test_calls_per_turn(client: GatewayClient, run_id: str, fresh_travel: TravelService) -> None:
    client.start_run(run_id=run_id)
    calls = [tool_call(f"c{i}", "get_weather", WEATHER) for i in range(4)]
    err = rpc_error(client.submit_calls, run_id, "t1", *calls)
    assert "4 tool calls" in (err.message or "")
    assert_refused(err, grpc.StatusCode.INVALID_ARGUMENT, "limit_exceeded")
    assert "--max-calls-per-turn" in (err.message or "")
    err = rpc_error(client.authorize, *calls)
    assert_refused(err, grpc.StatusCode.INVALID_ARGUMENT, "limit_exceeded")
    assert fresh_travel.stats()["weather"] == 0
    assert not client.get_run(run_id).turns
    assert_run_usable(client, run_id)


def test_arguments_bytes_per_call(
    client: GatewayClient, run_id: str, fresh_travel: TravelService
) -> None:
    client.start_run(run_id=run_id)
    big = json.dumps({**WEATHER, "city": "B" * 600})
    out = client.submit_calls(
        run_id, "t1", tool_call("big", "get_weather", big), tool_call("ok", "get_weather", WEATHER)
    )
    big_res, ok_res = out.results
    assert (big_res.status, big_res.error.code) == (pb.CALL_STATUS_REJECTED, "invalid_arguments")
    assert "--max-arguments-bytes" in big_res.error.message
    assert ok_res.status == pb.CALL_STATUS_SUCCEEDED
    stored = {c.call_id: c for c in client.get_run(run_id).calls}
    assert stored["big"].arguments_json == ""  # not kept
    assert fresh_travel.stats()["weather"] == 1


def test_labels(client: GatewayClient, run_id: str) -> None:
    err = rpc_error(client.start_run, run_id=run_id, labels={"a": "1", "b": "2", "c": "3"})
    assert_refused(err, grpc.StatusCode.INVALID_ARGUMENT, "limit_exceeded")
    err = rpc_error(client.start_run, run_id=run_id, labels={"a": "x" * 17})
    assert_refused(err, grpc.StatusCode.INVALID_ARGUMENT, "limit_exceeded")
    assert "--max-label-bytes" in (err.message or "")
    client.start_run(run_id=run_id, labels={"a": "x" * 15})


def test_conversation_bytes(client: GatewayClient, run_id: str) -> None:
    conv = json.dumps([{"role": "user", "content": "x" * 1000}])
    err = rpc_error(
        client.start_run, run_id=run_id, provider="anthropic.messages", conversation_json=conv
    )
    assert_refused(err, grpc.StatusCode.INVALID_ARGUMENT, "limit_exceeded")
    assert "--max-conversation-bytes" in (err.message or "")


def _chat_chunks(n: int, pad: int = 0) -> list[str]:
    head = {
        "id": "chat-1",
        "model": "gpt",
        "choices": [{"index": 0, "delta": {"content": "x" + "y" * pad}}],
    }
    done = {
        "id": "chat-1",
        "model": "gpt",
        "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
    }
    return [json.dumps(head)] * (n - 1) + [json.dumps(done)]


def test_stream_events_and_bytes(client: GatewayClient, run_id: str) -> None:
    client.start_run(run_id=run_id, provider="openai.chat_completions")
    err = rpc_error(submit_stream, client, run_id, _chat_chunks(11))
    assert_refused(err, grpc.StatusCode.INVALID_ARGUMENT, "limit_exceeded")
    assert "--max-stream-events" in (err.message or "")
    err = rpc_error(submit_stream, client, run_id, _chat_chunks(3, pad=3000))
    assert_refused(err, grpc.StatusCode.INVALID_ARGUMENT, "limit_exceeded")
    assert "--max-stream-bytes" in (err.message or "")
    assert not client.get_run(run_id).turns
    out = submit_stream(client, run_id, _chat_chunks(5))
    assert out.next == pb.NEXT_ACTION_DONE


def test_message_size(client: GatewayClient, run_id: str) -> None:
    client.start_run(run_id=run_id)
    huge = json.dumps({**WEATHER, "pad": "x" * 300_000})
    err = rpc_error(client.submit_calls, run_id, "t1", tool_call("c", "get_weather", huge))
    assert err.grpc_status == "RESOURCE_EXHAUSTED"


def test_tool_output_bytes(
    client: GatewayClient,
    small: SidecarProcess,
    run_id: str,
    fresh_travel: TravelService,
    effects_db: Path,
) -> None:
    client.start_run(run_id=run_id)
    fresh_travel.control(train_status={"body": json.dumps({"pad": "x" * 200}), "times": 1})
    out = client.submit_calls(
        run_id,
        "t1",
        tool_call("r", "get_train_status", TRAIN),
        tool_call("ok", "get_weather", WEATHER),
    )
    res, ok = out.results
    assert (res.status, res.error.code) == (pb.CALL_STATUS_FAILED, "output_too_large")
    assert res.output_json == "" and "--max-output-bytes" in res.error.message
    assert ok.status == pb.CALL_STATUS_SUCCEEDED
    with GatewayClient(small.target, "walt-demo-token", timeout_s=30) as writer:
        writer.start_run(run_id=run_id + "-w")
        (w,) = writer.submit_calls(
            run_id + "-w", "t1", tool_call("w", "log_note", {"note": "n" * 300})
        ).results
    assert (w.status, w.error.code) == (pb.CALL_STATUS_SUCCEEDED, "output_too_large")
    marker = json.loads(w.output_json)["output_too_large"]
    assert marker["bytes"] > 300 and len(marker["sha256"]) == 64
    assert len(effects(effects_db, f"{run_id}-w:w")) == 1  # the write happened once


def test_run_page_turns(client: GatewayClient, run_id: str) -> None:
    """A page_size over the limit, and the default page where the limit is below it, are
    served as many turns as the limit allows; the token leads on to the rest."""
    client.start_run(run_id=run_id)
    for n in range(1, 8):
        client.submit_turn(run_id=run_id, turn_id=f"t{n}", paused=pb.Paused(reason="working"))
    for size in (0, 5, 1000):
        page = client.get_run(run_id, page_size=size)
        assert [t.turn_id for t in page.turns] == ["t4", "t5", "t6", "t7"]
        rest = client.get_run(run_id, page_size=size, page_token=page.next_page_token)
        assert [t.turn_id for t in rest.turns] == ["t1", "t2", "t3"]
        assert not rest.next_page_token
    assert len(client.whole_run(run_id, page_size=1000).turns) == 7


def test_run_page_bytes(client: GatewayClient, run_id: str) -> None:
    """Turns with large records make a page of fewer turns (at least one); the token leads
    on, and every turn is read once."""
    client.start_run(run_id=run_id)
    for n in range(1, 6):
        raw = json.dumps({"id": f"t{n}", "pad": "x" * (1000 if n != 4 else 9000)})
        client.submit_turn(
            run_id=run_id,
            turn_id=f"t{n}",
            paused=pb.Paused(reason="working"),
            raw_response_json=raw,
        )
    pages = [client.get_run(run_id)]
    while pages[-1].next_page_token:
        pages.append(client.get_run(run_id, page_token=pages[-1].next_page_token))
    assert [[t.turn_id for t in p.turns] for p in pages] == [["t5"], ["t4"], ["t1", "t2", "t3"]]
    assert {p.turn_count for p in pages} == {5}
