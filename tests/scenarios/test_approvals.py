"""Human approval end to end: a member books more workshop seats than policy lets them book
alone; an owner of their tenant decides. Over real gRPC against real sidecar processes, on
both stores; on PostgreSQL the loop and the approvers talk to two different replicas.

Whether a seat was booked is read from the workshop service's own database, never from
callgate's records. The sidecars of one store kind are shared by the tests of this module
(each test has its own run).
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import threading
import uuid
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import pytest

from examples.travel.service import TravelService
from examples.workshop.service import WorkshopService
from gateway import pb
from gateway.client import GatewayClient, RequestError, tool_call
from gateway.store import open_store, sqlite_path
from gateway.testing import SidecarProcess
from tests.support import databases
from tests.support.approval_policies import short_ttl_policies
from tests.support.paths import AUTH, POLICIES, sidecar_env
from tests.support.provider_turns import USER, submit_raw
from tests.support.resolution import attempt, refused
from tests.support.sidecars import Watcher, by_id, key_for

AVAILABILITY = {"event_id": "ws-acme-1"}

PENDING, SUCCEEDED = pb.CALL_STATUS_PENDING_APPROVAL, pb.CALL_STATUS_SUCCEEDED


def seats(participant: str, n: int = 3, event: str = "ws-acme-1") -> dict[str, Any]:
    """A booking the default policy sends to an owner: more than two seats."""
    return {"event_id": event, "participant": participant, "seats": n}


@dataclass
class Gateways:
    """The sidecars of one store kind: one on SQLite, two replicas on PostgreSQL."""

    kind: str
    db: str
    start: Any  # () -> list[SidecarProcess]
    procs: list[SidecarProcess] = field(default_factory=list)
    stack: ExitStack = field(default_factory=ExitStack)
    clients: list[GatewayClient] = field(default_factory=list)

    def open(self) -> None:
        self.procs = [self.stack.enter_context(p) for p in self.start()]

    def restart(self) -> None:
        self.close_clients()
        self.stack.close()
        self.stack = ExitStack()
        self.open()

    def client(self, token: str, replica: int = 0) -> GatewayClient:
        """A client of one replica (0: the loop's; -1: the approvers')."""
        c = GatewayClient(self.procs[replica].target, token, timeout_s=60)
        self.clients.append(c)
        return c

    def close_clients(self) -> None:
        for c in self.clients:
            c.close()
        self.clients.clear()

    def audit(self, run_id: str) -> list[dict[str, Any]]:
        async def read() -> list[dict[str, Any]]:
            store = await open_store(self.db)
            try:
                return await store.audit_rows(run_id)
            finally:
                await store.close()

        return asyncio.run(read())

    def tamper(self, run_id: str, call_id: str, arguments: dict[str, Any]) -> None:
        """Change a call's stored arguments behind callgate's back."""
        statement = "UPDATE calls SET arguments_json = {} WHERE run_id = {} AND call_id = {}"
        values = (json.dumps(arguments), run_id, call_id)
        path = sqlite_path(self.db)
        if path is None:
            quoted = ["'" + v.replace("'", "''") + "'" for v in values]
            databases.run_sql(self.db, statement.format(*quoted))
            return
        conn = sqlite3.connect(path)
        with conn:
            conn.execute(statement.format("?", "?", "?"), values)
        conn.close()


def gateways(
    kind: str,
    db: str,
    policies: Path,
    travel: TravelService,
    tools_dir: Path,
    effects_db: Path,
    workshop: WorkshopService,
) -> Gateways:
    count = 2 if kind == "postgresql" else 1

    def start() -> list[SidecarProcess]:
        return [
            SidecarProcess(
                tools=tools_dir,
                policies=policies,
                db=db,
                auth=AUTH,
                env=sidecar_env(travel, effects_db, workshop),
                audit_key=key_for(db),
            )
            for _ in range(count)
        ]

    gw = Gateways(kind, db, start)
    gw.open()
    return gw


def fresh_store(kind: str, tmp: Path, request: pytest.FixtureRequest) -> str:
    if kind == "sqlite":
        return str(tmp / "store.db")
    return databases.new_schema(request.getfixturevalue("pg_database"))


@pytest.fixture(scope="module", params=databases.KINDS)
def gw(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    travel: TravelService,
    tools_dir: Path,
    effects_db: Path,
    workshop: WorkshopService,
) -> Iterator[Gateways]:
    kind = str(request.param)
    db = fresh_store(kind, tmp_path_factory.mktemp("approvals"), request)
    g = gateways(kind, db, POLICIES, travel, tools_dir, effects_db, workshop)
    yield g
    g.close_clients()
    g.stack.close()


@pytest.fixture
def run_id(gw: Gateways) -> Iterator[str]:
    yield f"apr-{uuid.uuid4().hex[:10]}"
    gw.close_clients()


def ask(
    gw: Gateways, run_id: str, requester: str = "mia", *calls: pb.ToolCall
) -> tuple[GatewayClient, pb.TurnOutcome]:
    """The requester's loop starts the run and proposes a check and a booking (or calls)."""
    loop = gw.client(f"{requester}-demo-token")
    loop.start_run(run_id=run_id)
    calls = calls or (
        tool_call("c1", "check_availability", AVAILABILITY),
        tool_call("w1", "reserve_seat", seats(requester)),
    )
    return loop, loop.submit_calls(run_id, "t1", *calls)


def approval_of(outcome: pb.TurnOutcome, call_id: str) -> str:
    return by_id(outcome)[call_id].approval_id


def decide(
    c: GatewayClient, approval_id: str, approve: bool, reason: str = "checked the budget"
) -> pb.DecideApprovalResponse:
    return c.decide_approval(approval_id, approve=approve, reason=reason)


def test_an_owner_of_the_tenant_approves_and_exactly_one_seat_is_booked(
    gw: Gateways, run_id: str, fresh_workshop: WorkshopService
) -> None:
    loop, paused = ask(gw, run_id)
    res = by_id(paused)
    assert res["c1"].status == SUCCEEDED and res["w1"].status == PENDING
    assert res["w1"].decision.verdict == pb.VERDICT_APPROVAL_REQUIRED
    assert (paused.next, paused.run_state) == (
        pb.NEXT_ACTION_PAUSED_FOR_APPROVAL,
        pb.RUN_STATE_PAUSED_FOR_APPROVAL,
    )
    refused(
        attempt(loop.submit_turn, run_id=run_id, turn_id="t2", final=pb.FinalAnswer(text="x")),
        grpc.StatusCode.FAILED_PRECONDITION,
        "run_paused",
    )
    watcher = Watcher(loop, run_id)
    assert watcher.wait_for(1) == [paused]

    owner = gw.client("olga-demo-token", replica=-1)
    (mine,) = loop.list_approvals(run_id=run_id).approvals  # the requester sees its own
    (seen,) = owner.list_approvals(run_id=run_id, status=[pb.APPROVAL_STATUS_PENDING]).approvals
    assert seen.approval_id == mine.approval_id == res["w1"].approval_id
    assert (seen.caller_may_decide, mine.caller_may_decide) == (True, False)  # olga's to decide
    mine.caller_may_decide = True
    assert seen == mine  # the same record
    assert json.loads(seen.arguments_json) == seats("mia")
    assert (seen.requested_by, seen.tenant, list(seen.requester_roles)) == (
        "mia",
        "acme",
        ["member"],
    )
    assert "needs approval by an owner of tenant acme" in seen.policy_reasons[0]
    assert seen.expires_at > seen.created_at and seen.status == pb.APPROVAL_STATUS_PENDING
    assert gw.client("mallory-demo-token").list_approvals(run_id=run_id).approvals == []

    answer = decide(owner, seen.approval_id, approve=True)
    assert (answer.approval.status, answer.approval.decided_by) == (
        pb.APPROVAL_STATUS_APPROVED,
        "olga",
    )
    assert (answer.result.call_id, answer.result.status, answer.result.execution_count) == (
        "w1",
        SUCCEEDED,
        1,
    )
    assert "write approved by olga" in answer.result.decision.reasons
    (booked,) = fresh_workshop.reservations(f"{run_id}:w1")
    assert (booked["participant"], booked["seats"]) == ("mia", 3)

    settled = watcher.wait_for(2)[1]
    assert (settled.next, settled.run_state) == (pb.NEXT_ACTION_CONTINUE, pb.RUN_STATE_ACTIVE)
    assert [r.call_id for r in settled.results] == ["c1", "w1"]
    assert (
        json.loads(by_id(settled)["w1"].output_json)["reservation_id"] == booked["reservation_id"]
    )
    assert loop.resume_run(run_id) == settled
    refused(
        attempt(decide, owner, seen.approval_id, False),
        grpc.StatusCode.FAILED_PRECONDITION,
        "already_decided",
    )
    loop.submit_turn(run_id=run_id, turn_id="t2", final=pb.FinalAnswer(text="booked"))
    assert watcher.wait_ended() and watcher.error is None
    approvals = [
        (r["subject"], r["actor"], r["error_code"])
        for r in gw.audit(run_id)
        if r["kind"] == "approval"
    ]
    assert approvals == [("mia", "mia", "approval_required"), ("mia", "olga", "")]
    assert len(fresh_workshop.reservations(f"{run_id}:w1")) == 1


def test_the_same_approval_decided_twice_at_once_books_once(
    gw: Gateways, run_id: str, fresh_workshop: WorkshopService
) -> None:
    _, paused = ask(gw, run_id)
    approval_id = approval_of(paused, "w1")
    deciders = [gw.client("olga-demo-token"), gw.client("owen-demo-token", replica=-1)]
    start = threading.Barrier(2)
    answers: list[object] = [None, None]

    def go(i: int) -> None:
        start.wait(10)
        answers[i] = attempt(decide, deciders[i], approval_id, True)

    threads = [threading.Thread(target=go, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    won = [a for a in answers if isinstance(a, pb.DecideApprovalResponse)]
    lost = [a for a in answers if isinstance(a, RequestError)]
    assert len(won) == 1 and len(lost) == 1, answers
    refused(lost[0], grpc.StatusCode.FAILED_PRECONDITION, "already_decided")
    assert won[0].result.status == SUCCEEDED
    assert len(fresh_workshop.reservations(f"{run_id}:w1")) == 1
    sent = [r for r in fresh_workshop.stats()["requests"] if r["idempotency_key"] == f"{run_id}:w1"]
    assert len(sent) == 1


def test_an_approval_decided_after_a_restart_books_once(
    gw: Gateways, run_id: str, fresh_workshop: WorkshopService
) -> None:
    _, paused = ask(gw, run_id)
    gw.restart()  # every sidecar of this store stops and starts again
    loop = gw.client("mia-demo-token")
    watcher = Watcher(loop, run_id)
    assert watcher.wait_for(1)[0] == paused
    answer = decide(gw.client("olga-demo-token", replica=-1), approval_of(paused, "w1"), True)
    assert answer.result.status == SUCCEEDED
    assert watcher.wait_for(2)[1].next == pb.NEXT_ACTION_CONTINUE
    watcher.cancel()
    assert len(fresh_workshop.reservations(f"{run_id}:w1")) == 1


def test_a_denied_booking_is_never_made_and_the_model_is_told(
    gw: Gateways, run_id: str, fresh_workshop: WorkshopService
) -> None:
    """A provider-shaped run: the settled turn the loop receives carries the items to send
    the model, with the denial as the booking's tool result."""
    loop = gw.client("mia-demo-token")
    loop.start_run(run_id=run_id, provider="anthropic.messages", conversation_json=json.dumps(USER))
    paused = submit_raw(loop, run_id, anthropic_booking("msg_seat"))
    assert by_id(paused)["toolu_seat"].status == PENDING
    assert paused.provider_input_json == ""  # nothing to send the model yet
    watcher = Watcher(loop, run_id)
    watcher.wait_for(1)
    answer = decide(
        gw.client("olga-demo-token", replica=-1),
        approval_of(paused, "toolu_seat"),
        False,
        reason="the team budget is spent",
    )
    assert answer.approval.status == pb.APPROVAL_STATUS_DENIED
    assert (answer.result.status, answer.result.error.code) == (
        pb.CALL_STATUS_REJECTED,
        "approval_denied",
    )
    settled = watcher.wait_for(2)[1]
    assert settled.next == pb.NEXT_ACTION_CONTINUE
    assistant, user = json.loads(settled.provider_input_json)
    assert assistant["role"] == "assistant" and user["role"] == "user"
    blocks = {b["tool_use_id"]: b for b in user["content"]}
    assert not blocks["toolu_check"].get("is_error")
    assert blocks["toolu_seat"]["is_error"] is True
    told = json.dumps(blocks["toolu_seat"]["content"])
    assert "approval_denied" in told and "the team budget is spent" in told
    assert loop.resume_run(run_id) == settled
    watcher.cancel()
    assert fresh_workshop.reservations(f"{run_id}:toolu_seat") == []


def anthropic_booking(msg_id: str) -> dict[str, Any]:
    return {
        "id": msg_id,
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-6",
        "content": [
            {"type": "text", "text": "Checking, then booking."},
            {
                "type": "tool_use",
                "id": "toolu_check",
                "name": "check_availability",
                "input": AVAILABILITY,
            },
            {"type": "tool_use", "id": "toolu_seat", "name": "reserve_seat", "input": seats("mia")},
        ],
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": {"input_tokens": 90, "output_tokens": 30},
    }


@pytest.mark.parametrize(
    ("requester", "approver"),
    [
        ("mona", "mona"),  # an owner approving their own request
        ("mia", "otis"),  # an owner of another tenant
    ],
)
def test_an_approver_the_policy_refuses_changes_nothing(
    gw: Gateways, run_id: str, fresh_workshop: WorkshopService, requester: str, approver: str
) -> None:
    loop, paused = ask(gw, run_id, requester)
    approval_id = approval_of(paused, "w1")
    them = gw.client(f"{approver}-demo-token", replica=-1)
    refused(
        attempt(decide, them, approval_id, True),
        grpc.StatusCode.PERMISSION_DENIED,
        "permission_denied",
    )
    if approver != requester:  # they do not even see it
        assert them.list_approvals(run_id=run_id).approvals == []
    (still,) = loop.list_approvals(run_id=run_id).approvals
    assert still.status == pb.APPROVAL_STATUS_PENDING
    assert loop.resume_run(run_id) == paused
    assert fresh_workshop.reservations(f"{run_id}:w1") == []


def test_arguments_changed_after_approval_are_refused(
    gw: Gateways, run_id: str, fresh_workshop: WorkshopService
) -> None:
    """Two bookings in one turn: the first is approved, then its stored arguments change
    (nine seats instead of three); when the second is approved, nothing runs."""
    _, paused = ask(
        gw,
        run_id,
        "mia",
        tool_call("w1", "reserve_seat", seats("mia")),
        tool_call("w2", "reserve_seat", seats("mia", event="ws-acme-2")),
    )
    owner = gw.client("olga-demo-token", replica=-1)
    first = decide(owner, approval_of(paused, "w1"), True)
    assert first.result.status == PENDING and "approved by olga" in first.result.error.message
    gw.tamper(run_id, "w1", seats("mia", 9))
    second = decide(owner, approval_of(paused, "w2"), True)
    assert (second.result.status, second.result.error.code) == (
        pb.CALL_STATUS_NOT_RUN,
        "held_by_batch",
    )
    settled = by_id(gw.client("mia-demo-token").resume_run(run_id))
    assert (settled["w1"].status, settled["w1"].error.code) == (
        pb.CALL_STATUS_REJECTED,
        "approval_mismatch",
    )
    assert "not the ones approved" in settled["w1"].error.message
    assert fresh_workshop.reservations() == []
    assert fresh_workshop.stats()["reserve_seat"] == 0


def test_one_booking_denied_leaves_the_other_not_run(
    gw: Gateways, run_id: str, fresh_workshop: WorkshopService
) -> None:
    loop, paused = ask(
        gw,
        run_id,
        "mia",
        tool_call("w1", "reserve_seat", seats("mia")),
        tool_call("w2", "reserve_seat", seats("mia", event="ws-acme-2")),
    )
    owner = gw.client("olga-demo-token", replica=-1)
    answer = decide(owner, approval_of(paused, "w1"), False, reason="one workshop at a time")
    assert answer.result.error.code == "approval_denied"
    settled = loop.resume_run(run_id)
    assert settled.next == pb.NEXT_ACTION_CONTINUE
    assert {r.call_id: (r.status, r.error.code) for r in settled.results} == {
        "w1": (pb.CALL_STATUS_REJECTED, "approval_denied"),
        "w2": (pb.CALL_STATUS_NOT_RUN, "held_by_batch"),
    }
    other = owner.list_approvals(approval_id=approval_of(paused, "w2")).approvals[0]
    assert other.status == pb.APPROVAL_STATUS_CANCELLED and "w1" in other.reason
    refused(
        attempt(decide, owner, other.approval_id, True),
        grpc.StatusCode.FAILED_PRECONDITION,
        "already_decided",
    )
    assert fresh_workshop.reservations() == []


def test_cancel_while_pending_books_nothing(
    gw: Gateways, run_id: str, fresh_workshop: WorkshopService
) -> None:
    loop, paused = ask(gw, run_id)
    watcher = Watcher(loop, run_id)
    watcher.wait_for(1)
    assert loop.cancel_run(run_id).state == pb.RUN_STATE_CANCELLED
    last = watcher.wait_for(2)[1]
    assert last.run_state == pb.RUN_STATE_CANCELLED
    assert (by_id(last)["w1"].status, by_id(last)["w1"].error.code) == (
        pb.CALL_STATUS_REJECTED,
        "approval_cancelled",
    )
    assert watcher.wait_ended() and watcher.error is None
    owner = gw.client("olga-demo-token", replica=-1)
    refused(
        attempt(decide, owner, approval_of(paused, "w1"), True),
        grpc.StatusCode.FAILED_PRECONDITION,
        "already_decided",
    )
    (cancelled,) = owner.list_approvals(run_id=run_id, status=[]).approvals
    assert cancelled.status == pb.APPROVAL_STATUS_CANCELLED
    assert fresh_workshop.reservations() == []


def test_an_approval_nobody_decides_expires_on_its_own_across_a_restart(
    db_kind: str,
    new_db: Any,
    tmp_path: Path,
    travel: TravelService,
    tools_dir: Path,
    effects_db: Path,
    fresh_workshop: WorkshopService,
) -> None:
    """The sidecar that was asked stops; the one that starts on the same store expires the
    approval at its time, and the watching loop hears of it without asking."""
    policies = short_ttl_policies(tmp_path / "policies", 10)
    first = gateways(db_kind, new_db(), policies, travel, tools_dir, effects_db, fresh_workshop)
    try:
        _, paused = ask(first, "exp")
        approval_id = approval_of(paused, "w1")
        first.restart()
        loop = first.client("mia-demo-token", replica=-1)
        watcher = Watcher(loop, "exp")
        first_seen = watcher.wait_for(1)[0]
        if first_seen == paused:  # still waiting: the watcher hears the expiry as it happens
            expired = watcher.wait_for(2, timeout_s=60)[1]
        else:  # a loaded machine took longer than the TTL to start again: expired already
            expired = first_seen
        assert (expired.next, expired.run_state) == (pb.NEXT_ACTION_CONTINUE, pb.RUN_STATE_ACTIVE)
        w1 = by_id(expired)["w1"]
        assert (w1.status, w1.error.code, w1.execution_count) == (
            pb.CALL_STATUS_REJECTED,
            "approval_expired",
            0,
        )
        watcher.cancel()
        refused(
            attempt(decide, first.client("olga-demo-token"), approval_id, True),
            grpc.StatusCode.FAILED_PRECONDITION,
            "approval_expired",
        )
        ends = [r for r in first.audit("exp") if r["kind"] == "approval"]
        assert [r["error_code"] for r in ends] == ["approval_required", "approval_expired"]
    finally:
        first.close_clients()
        first.stack.close()
    assert fresh_workshop.reservations() == []


def callgate(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """`callgate ARGS` in this process; answers (exit status, stdout, stderr)."""
    from gateway.cli.main import main

    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_the_approvals_command_lists_shows_and_decides(
    sidecar: SidecarProcess, capsys: pytest.CaptureFixture[str], fresh_workshop: WorkshopService
) -> None:
    run_id = f"cli-{uuid.uuid4().hex[:8]}"
    with GatewayClient(sidecar.target, "mia-demo-token") as loop:
        loop.start_run(run_id=run_id)
        approval_id = approval_of(
            loop.submit_calls(run_id, "t1", tool_call("w1", "reserve_seat", seats("mia"))), "w1"
        )
    olga = ("--target", sidecar.target, "--token", "olga-demo-token")

    code, out, _ = callgate(capsys, "approvals", "list", "--run-id", run_id, *olga)
    header, row, legend = out.splitlines()
    assert code == 0 and header.split()[:4] == ["APPROVAL", "STATUS", "YOU", "RUN"]
    assert row.split()[:6] == [approval_id, "PENDING", "decide", run_id, "w1", "reserve_seat"]
    assert legend.startswith("YOU: decide: you may approve or deny it")
    code, out, _ = callgate(capsys, "approvals", "show", approval_id, *olga)
    assert code == 0 and "requested by:" in out and "mia (tenant acme, roles member)" in out
    assert '"seats": 3' in out and "needs approval by an owner" in out
    code, out, _ = callgate(capsys, "approvals", "list", "--run-id", run_id, "--json", *olga)
    (listed,) = json.loads(out)["approvals"]
    assert listed["approval_id"] == approval_id and listed["status"] == "APPROVAL_STATUS_PENDING"

    code, out, _ = callgate(capsys, "approvals", "approve", approval_id, "--reason", "ok", *olga)
    assert code == 0
    assert out.strip() == (
        f"approved {approval_id}: call w1 of run {run_id} is SUCCEEDED (sent 1 time(s))"
    )
    assert len(fresh_workshop.reservations(f"{run_id}:w1")) == 1
    code, _, err = callgate(capsys, "approvals", "deny", approval_id, "--reason", "no", *olga)
    assert code == 1
    assert err.strip() == (
        f"callgate approvals: FAILED_PRECONDITION already_decided: approval "
        f"{approval_id} was already decided: APPROVED by olga"
    )
    code, out, _ = callgate(capsys, "approvals", "list", "--run-id", run_id, *olga)
    assert code == 0 and out.strip() == "no approvals"  # pending only, by default
    code, _, err = callgate(capsys, "approvals", "show", "apr_nope", *olga)
    assert code == 1 and "no approval apr_nope that you may see" in err


@pytest.mark.parametrize(
    ("rpc", "fields", "status", "code"),
    [
        ("ListApprovals", {"status": [99]}, grpc.StatusCode.INVALID_ARGUMENT, "invalid_argument"),
        ("ListApprovals", {"status": [0]}, grpc.StatusCode.INVALID_ARGUMENT, "invalid_argument"),
        (
            "ListApprovals",
            {"page_token": "page-2"},
            grpc.StatusCode.INVALID_ARGUMENT,
            "invalid_argument",
        ),
        (
            "ListApprovals",
            {"page_token": "after:" + "9" * 40},
            grpc.StatusCode.INVALID_ARGUMENT,
            "invalid_argument",
        ),
        ("ListApprovals", {"page_size": -1}, grpc.StatusCode.INVALID_ARGUMENT, "invalid_argument"),
        (
            "ListApprovals",
            {"run_id": "r" * 300},
            grpc.StatusCode.INVALID_ARGUMENT,
            "invalid_argument",
        ),
        ("DecideApproval", {"reason": "x"}, grpc.StatusCode.INVALID_ARGUMENT, "invalid_argument"),
        (
            "DecideApproval",
            {"approval_id": "apr_1"},
            grpc.StatusCode.INVALID_ARGUMENT,
            "invalid_argument",
        ),
        (
            "DecideApproval",
            {"approval_id": "apr\x00", "reason": "x"},
            grpc.StatusCode.INVALID_ARGUMENT,
            "invalid_argument",
        ),
        (
            "DecideApproval",
            {"approval_id": "apr_1", "reason": "x" * 2001},
            grpc.StatusCode.INVALID_ARGUMENT,
            "invalid_argument",
        ),
        (
            "DecideApproval",
            {"approval_id": "apr_nope", "reason": "x"},
            grpc.StatusCode.NOT_FOUND,
            "approval_not_found",
        ),
    ],
)
def test_bad_approval_requests_are_refused_with_their_code(
    sidecar: SidecarProcess, rpc: str, fields: dict[str, Any], status: grpc.StatusCode, code: str
) -> None:
    with GatewayClient(sidecar.target, "olga-demo-token") as c:
        if rpc == "ListApprovals":
            refused(attempt(c.list_approvals, **fields), status, code)
        else:
            refused(
                attempt(
                    c.decide_approval,
                    fields.get("approval_id", ""),
                    approve=False,
                    reason=fields.get("reason", ""),
                ),
                status,
                code,
            )


def test_listing_pages_cap_and_need_a_token(sidecar: SidecarProcess) -> None:
    with GatewayClient(sidecar.target, "olga-demo-token") as c:
        assert c.list_approvals(page_size=2**31 - 1, run_id="none").next_page_token == ""
    with GatewayClient(sidecar.target, "") as anonymous:
        refused(
            attempt(anonymous.list_approvals), grpc.StatusCode.UNAUTHENTICATED, "unauthenticated"
        )
