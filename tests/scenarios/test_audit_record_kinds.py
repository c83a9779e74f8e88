"""Each kind of audit record tells its own story: its verdict, status, code and message are
those of the event it records, never left over from an earlier one. (A decision allowed, then
approved and run: test_audit_trail.py; a cancel: the same; a policy reload:
test_policy_reload.py.)"""

from __future__ import annotations

from typing import Any

from examples.workshop.service import WorkshopService
from gateway import pb
from gateway.client import GatewayClient, tool_call
from tests.support.paths import Connect

ONE_SEAT = {"event_id": "ws-acme-1", "participant": "mia", "seats": 1}  # no approval needed


def story(auditor: GatewayClient, run_id: str) -> list[tuple[Any, ...]]:
    return [
        (r.kind, r.decision.verdict, r.status, r.approval_status, r.error_code, r.actor)
        for r in auditor.query_audit(run_id=run_id, timeout_s=30)
    ]


def trail(auditor: GatewayClient, run_id: str) -> list[pb.AuditRecord]:
    return list(auditor.query_audit(run_id=run_id, timeout_s=30))


def test_a_denied_approval_and_the_rejection_it_causes(
    connect: Connect, run_id: str, fresh_workshop: WorkshopService
) -> None:
    mia, olga = connect("mia-demo-token"), connect("olga-demo-token")
    audrey = connect("audrey-demo-token")
    mia.start_run(run_id=run_id)
    (asked,) = mia.submit_calls(
        run_id, "t1", tool_call("w1", "reserve_seat", {**ONE_SEAT, "seats": 3})
    ).results
    olga.decide_approval(asked.approval_id, approve=False, reason="one workshop at a time")
    assert story(audrey, run_id) == [
        (
            "decision",
            pb.VERDICT_APPROVAL_REQUIRED,
            pb.CALL_STATUS_PENDING_APPROVAL,
            0,
            "approval_required",
            "mia",
        ),
        (
            "approval",
            pb.VERDICT_APPROVAL_REQUIRED,
            pb.CALL_STATUS_PENDING_APPROVAL,
            pb.APPROVAL_STATUS_PENDING,
            "approval_required",
            "mia",
        ),
        ("approval", pb.VERDICT_DENY, 0, pb.APPROVAL_STATUS_DENIED, "approval_denied", "olga"),
        # the call, rejected by the denial: the policy's verdict stays what it decided
        (
            "decision",
            pb.VERDICT_APPROVAL_REQUIRED,
            pb.CALL_STATUS_REJECTED,
            0,
            "approval_denied",
            "",
        ),
    ]
    records = trail(audrey, run_id)
    assert "needs approval by an owner of tenant acme" in records[1].message
    assert records[2].message == (
        f"approval {asked.approval_id} denied by olga: one workshop at a time"
    )
    assert records[3].message == "denied by olga: one workshop at a time; the call was not run"
    assert fresh_workshop.reservations() == []


def test_a_lost_answer_looked_up_and_found(
    connect: Connect, run_id: str, fresh_workshop: WorkshopService
) -> None:
    fresh_workshop.control(reserve_seat={"apply_then_drop": True, "times": 1})
    mia, audrey = connect("mia-demo-token"), connect("audrey-demo-token")
    mia.start_run(run_id=run_id)
    (booked,) = mia.submit_calls(run_id, "t1", tool_call("w1", "reserve_seat", ONE_SEAT)).results
    assert booked.status == pb.CALL_STATUS_SUCCEEDED and booked.execution_count == 1
    assert story(audrey, run_id) == [
        ("decision", pb.VERDICT_ALLOW, 0, 0, "", "mia"),
        ("execution", pb.VERDICT_ALLOW, pb.CALL_STATUS_UNKNOWN, 0, "outcome_unknown", ""),
        ("reconcile", pb.VERDICT_ALLOW, pb.CALL_STATUS_SUCCEEDED, 0, "", ""),
    ]
    lost, found = trail(audrey, run_id)[1:]
    assert lost.message and "outcome" not in found.message  # the look-up's record says none
    assert len(fresh_workshop.reservations(f"{run_id}:w1")) == 1


def test_an_operators_settlement(
    connect: Connect, run_id: str, fresh_workshop: WorkshopService
) -> None:
    fresh_workshop.control(
        reserve_seat={"apply_then_drop": True, "times": 1}, lookup={"status": 500}
    )
    mia, oscar = connect("mia-demo-token"), connect("oscar-demo-token")
    audrey = connect("audrey-demo-token")
    mia.start_run(run_id=run_id)
    mia.submit_calls(run_id, "t1", tool_call("w1", "reserve_seat", ONE_SEAT))
    (booked,) = fresh_workshop.reservations(f"{run_id}:w1")
    oscar.resolve_call(run_id, "w1", pb.CALL_STATUS_FAILED, reason="the venue never saw it")
    *_, resolved = trail(audrey, run_id)
    assert (
        resolved.kind,
        resolved.decision.verdict,
        resolved.status,
        resolved.error_code,
        resolved.actor,
    ) == ("resolve", pb.VERDICT_ALLOW, pb.CALL_STATUS_FAILED, "resolved_by_operator", "oscar")
    assert "the venue never saw it" in resolved.message
    assert booked  # what the operator said is recorded as said; the service is not asked
