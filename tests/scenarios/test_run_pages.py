"""GetRun through a real sidecar: the summary with one bounded page of turns, paging back to
the first turn, and the codes a caller gets for a page_token that is not its own."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import grpc
import pytest

from examples.travel.service import TravelService
from examples.workshop.service import WorkshopService
from gateway import pb
from gateway.client import GatewayClient, RequestError, error_code, tool_call
from tests.support.paths import Connect, NewDb
from tests.support.provider_turns import USER, submit_raw
from tests.support.scenarios import WEATHER
from tests.support.sidecars import replicas


def paused(c: GatewayClient, run_id: str, n: int) -> None:
    out = c.submit_turn(
        run_id=run_id,
        turn_id=f"t{n}",
        paused=pb.Paused(reason="long task"),
        usage=pb.Usage(input_tokens=1, output_tokens=1),
    )
    assert out.next == pb.NEXT_ACTION_CONTINUE


def weather(c: GatewayClient, run_id: str, n: int) -> None:
    out = c.submit_calls(run_id, f"t{n}", tool_call(f"c{n}", "get_weather", WEATHER))
    assert out.results[0].status == pb.CALL_STATUS_SUCCEEDED


def turns(c: GatewayClient, run_id: str, first: int, last: int) -> None:
    """Turns first..last: every 10th asks for the weather, the others pause (no calls)."""
    for n in range(first, last + 1):
        (weather if n % 10 == 0 else paused)(c, run_id, n)


def old_request(c: GatewayClient, run_id: str) -> pb.Run:
    """GetRun as a client built before paging sends it: the run ID and nothing else."""
    with grpc.insecure_channel(c.target) as channel:
        call = channel.unary_unary(
            "/callgate.v1.ToolGateway/GetRun", response_deserializer=pb.Run.FromString
        )
        answer: pb.Run = call(
            pb.GetRunRequest(run_id=run_id).SerializeToString(),
            metadata=[("authorization", "Bearer alice-demo-token")],
            timeout=30,
        )
    return answer


def refused(fn: Any) -> RequestError:
    with pytest.raises(RequestError) as err:
        fn()
    return err.value


def test_an_old_client_gets_the_latest_turns_and_pages_back_to_the_first(
    connect: Connect, run_id: str, fresh_travel: TravelService
) -> None:
    c = connect("alice-demo-token")
    c.start_run(
        run_id=run_id, labels={"team": "travel"}, budget=pb.Budget(max_turns=100, max_tool_calls=10)
    )
    turns(c, run_id, 1, 57)
    latest = old_request(c, run_id)
    assert [t.turn_id for t in latest.turns] == [f"t{n}" for n in range(8, 58)]
    assert [c.call_id for c in latest.calls] == ["c10", "c20", "c30", "c40", "c50"]
    assert latest.turn_count == 57 and latest.next_page_token
    assert (latest.state, latest.turns_used, latest.tool_calls_used) == (pb.RUN_STATE_ACTIVE, 57, 5)
    assert latest.usage_total.input_tokens == 52 and latest.budget.max_turns == 100
    assert dict(latest.labels) == {"team": "travel"}
    older = c.get_run(run_id, page_token=latest.next_page_token)
    assert [t.turn_id for t in older.turns] == [f"t{n}" for n in range(1, 8)]
    assert not older.calls and not older.next_page_token
    assert (older.turn_count, older.turns_used) == (57, 57)  # the summary on every page
    whole = c.whole_run(run_id, page_size=9)
    assert [t.turn_id for t in whole.turns] == [f"t{n}" for n in range(1, 58)]
    assert [c.call_id for c in whole.calls] == [f"c{n}" for n in range(10, 58, 10)]


def test_turns_added_between_pages_leave_the_cursor_where_it_was(
    connect: Connect, run_id: str, fresh_travel: TravelService
) -> None:
    c = connect("alice-demo-token")
    c.start_run(run_id=run_id)
    turns(c, run_id, 1, 12)
    first = c.get_run(run_id, page_size=5)
    assert [t.turn_id for t in first.turns] == ["t8", "t9", "t10", "t11", "t12"]
    turns(c, run_id, 13, 20)
    second = c.get_run(run_id, page_size=5, page_token=first.next_page_token)
    assert [t.turn_id for t in second.turns] == ["t3", "t4", "t5", "t6", "t7"]
    assert second.turn_count == 20 and second.turns_used == 20
    third = c.get_run(run_id, page_size=5, page_token=second.next_page_token)
    assert [t.turn_id for t in third.turns] == ["t1", "t2"] and not third.next_page_token
    seen = [t.turn_id for p in (third, second, first) for t in p.turns]
    assert len(seen) == len(set(seen)) == 12


def test_a_run_without_turns(connect: Connect, run_id: str) -> None:
    c = connect("alice-demo-token")
    c.start_run(run_id=run_id)
    run = old_request(c, run_id)
    assert (list(run.turns), list(run.calls), run.turn_count, run.next_page_token) == (
        [],
        [],
        0,
        "",
    )
    assert run.state == pb.RUN_STATE_ACTIVE and run.subject == "alice"


def test_page_tokens_that_are_not_the_callers_own(
    connect: Connect, run_id: str, fresh_travel: TravelService
) -> None:
    alice = connect("alice-demo-token")
    alice.start_run(run_id=run_id)
    turns(alice, run_id, 1, 4)
    token = alice.get_run(run_id, page_size=2).next_page_token
    other = f"{run_id}-other"
    alice.start_run(run_id=other)
    turns(alice, other, 1, 4)
    for bad in (
        "garbage",
        token[:-2],
        token + "A",
        alice.get_run(other, page_size=2).next_page_token,
    ):
        err = refused(lambda bad=bad: alice.get_run(run_id, page_token=bad))
        assert err.grpc_status == "INVALID_ARGUMENT"
        assert error_code(err) == "invalid_page_token", err.message
        assert "next_page_token" in (err.message or "")
    err = refused(lambda: connect("mallory-demo-token").get_run(run_id, page_token=token))
    assert (err.grpc_status, error_code(err)) == ("PERMISSION_DENIED", "permission_denied")
    err = refused(lambda: alice.get_run(run_id, page_size=-1))
    assert error_code(err) == "invalid_argument" and "page_size" in (err.message or "")
    assert [t.turn_id for t in alice.get_run(run_id, page_token=token).turns] == ["t1", "t2"]


def pause_turn(msg_id: str) -> dict[str, Any]:
    return {
        "id": msg_id,
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-6",
        "content": [{"type": "text", "text": f"still working ({msg_id})"}],
        "stop_reason": "pause_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }


def test_the_conversation_comes_with_a_page_that_holds_the_whole_run(
    connect: Connect, run_id: str
) -> None:
    """Rebuilding the conversation reads every turn: a page holding them all carries it, a
    page of a longer run does not."""
    c = connect("alice-demo-token")
    c.start_run(run_id=run_id, provider="anthropic.messages", conversation_json=json.dumps(USER))
    for n in range(1, 4):
        assert submit_raw(c, run_id, pause_turn(f"msg_{n}")).next == pb.NEXT_ACTION_CONTINUE
    whole = json.loads(c.get_run(run_id).conversation_json)
    assert whole[0] == USER[0] and len(whole) == 4
    assert json.loads(c.get_run(run_id, page_size=3).conversation_json) == whole
    part = c.get_run(run_id, page_size=2)
    assert part.conversation_json == "" and len(part.turns) == 2
    assert c.get_run(run_id, page_size=2, page_token=part.next_page_token).conversation_json == ""


def test_a_token_from_one_replica_continues_on_another(
    db_kind: str,
    new_db: NewDb,
    travel: TravelService,
    tools_dir: Path,
    effects_db: Path,
    workshop: WorkshopService,
) -> None:
    """Replicas sharing a store answer the same pages, and a token one gave out is taken by
    the other (it depends on the run and its place only), on either store."""
    run_id = f"pages-{uuid.uuid4().hex[:10]}"
    with (
        replicas(2, new_db(), travel, tools_dir, effects_db, workshop) as procs,
        GatewayClient(procs[0].target, "alice-demo-token") as a,
        GatewayClient(procs[1].target, "alice-demo-token") as b,
    ):
        a.start_run(run_id=run_id)
        turns(a, run_id, 1, 11)
        first = a.get_run(run_id, page_size=4)
        assert b.get_run(run_id, page_size=4) == first
        second = b.get_run(run_id, page_size=4, page_token=first.next_page_token)
        third = a.get_run(run_id, page_size=4, page_token=second.next_page_token)
        assert [[t.turn_id for t in p.turns] for p in (first, second, third)] == [
            ["t8", "t9", "t10", "t11"],
            ["t4", "t5", "t6", "t7"],
            ["t1", "t2", "t3"],
        ]
        assert [c.call_id for c in first.calls] == ["c10"] and not third.next_page_token
