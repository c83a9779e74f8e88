"""A refused grant says which rule refused and, under the default policy, who may act; the
approvals list marks what the caller may decide itself."""

from __future__ import annotations

import json

import pytest

from examples.workshop.service import WorkshopService
from gateway import pb
from gateway.client import GatewayClient, tool_call
from gateway.errors import PermissionDenied
from tests.support.commands import callgate
from tests.support.paths import Connect

SEATS = {"event_id": "ws-acme-1", "participant": "mia", "seats": 3}  # needs an owner


def refusal(call: object) -> str:
    with pytest.raises(PermissionDenied) as err:
        call()  # type: ignore[operator]
    assert err.value.grpc_status == "PERMISSION_DENIED"
    return err.value.message


@pytest.fixture
def pending(connect: Connect, run_id: str, fresh_workshop: WorkshopService) -> str:
    mia = connect("mia-demo-token")
    mia.start_run(run_id=run_id)
    out = mia.submit_calls(run_id, "t1", tool_call("w1", "reserve_seat", SEATS))
    (result,) = out.results
    assert result.status == pb.CALL_STATUS_PENDING_APPROVAL
    return result.approval_id


def decide(client: GatewayClient, approval_id: str) -> object:
    return lambda: client.decide_approval(approval_id, approve=True, reason="ok")


def test_an_approval_refusal_names_the_rule_the_requester_and_who_may(
    connect: Connect, pending: str
) -> None:
    said = refusal(decide(connect("mallory-demo-token"), pending))
    assert "the policy's may_approve refused" in said
    assert "requested by mia of tenant acme" in said
    assert "an owner of tenant acme" in said and "never the requester" in said


def test_the_requester_is_told_someone_else_decides(
    connect: Connect, run_id: str, fresh_workshop: WorkshopService
) -> None:
    mona = connect("mona-demo-token")  # a member and an owner: still not of her own request
    mona.start_run(run_id=run_id)
    (result,) = mona.submit_calls(
        run_id, "t1", tool_call("w1", "reserve_seat", {**SEATS, "participant": "mona"})
    ).results
    said = refusal(decide(mona, result.approval_id))
    assert "you requested it" in said and "may_approve" in said


def test_a_resolve_refusal_names_the_rule_and_the_operator_role(
    connect: Connect, run_id: str, fresh_workshop: WorkshopService
) -> None:
    fresh_workshop.control(
        reserve_seat={"apply_then_drop": True, "times": 1}, lookup={"status": 500}
    )
    mia = connect("mia-demo-token")
    mia.start_run(run_id=run_id)
    mia.submit_calls(run_id, "t1", tool_call("w1", "reserve_seat", {**SEATS, "seats": 1}))
    said = refusal(
        lambda: connect("olga-demo-token").resolve_call(
            run_id, "w1", pb.CALL_STATUS_SUCCEEDED, reason="seen it"
        )
    )
    assert "the policy's may_resolve refused" in said
    assert "an operator of tenant acme" in said and "does not own the run" in said


def test_an_audit_refusal_names_the_rule_and_the_auditor_role(
    connect: Connect, run_id: str
) -> None:
    connect("alice-demo-token").start_run(run_id=run_id)
    olga = connect("olga-demo-token")
    said = refusal(lambda: list(olga.query_audit(run_id=run_id, timeout_s=30)))
    assert "the policy's may_read_audit refused" in said and "an auditor of tenant acme" in said
    said = refusal(lambda: list(olga.query_audit(tenant="", timeout_s=30)))
    assert "may_read_audit" in said and "auditor" in said


def test_approvals_list_marks_what_the_caller_may_decide(
    sidecar: object, connect: Connect, pending: str
) -> None:
    target = sidecar.target  # type: ignore[attr-defined]

    def listed(token: str) -> list[str]:
        done = callgate("approvals", "list", "--target", target, "--token", token)
        assert done.returncode == 0, done.stderr
        return done.stdout.splitlines()

    olga, mia = listed("olga-demo-token"), listed("mia-demo-token")
    assert olga[0].split()[:3] == ["APPROVAL", "STATUS", "YOU"]
    (row,) = [line for line in olga if line.startswith(pending)]
    assert row.split()[1:3] == ["PENDING", "decide"]
    (own,) = [line for line in mia if line.startswith(pending)]
    assert own.split()[1:3] == ["PENDING", "asked"]  # her own request: someone else decides
    assert any("decide: you may approve or deny it" in line for line in olga)
    answer = json.loads(
        callgate(
            "approvals", "list", "--target", target, "--token", "olga-demo-token", "--json"
        ).stdout
    )
    mine = next(a for a in answer["approvals"] if a["approval_id"] == pending)
    assert mine["caller_may_decide"] is True
    theirs = connect("mia-demo-token").list_approvals(approval_id=pending).approvals[0]
    assert theirs.caller_may_decide is False
