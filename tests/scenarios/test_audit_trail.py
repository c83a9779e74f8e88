"""The audit trail over real gRPC: each guide case leaves the records an investigator needs,
read back with QueryAudit; who may read which records; filters, paging and following."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

import grpc
import pytest

from examples.travel.service import TravelService
from gateway import pb
from gateway.arguments import canonical_sha256
from gateway.client import GatewayClient, RequestError, error_code, tool_call
from tests.support.audit import records
from tests.support.paths import Connect
from tests.support.scenarios import TRAIN, WEATHER

SUCCEEDED, REJECTED, FAILED = (
    pb.CALL_STATUS_SUCCEEDED,
    pb.CALL_STATUS_REJECTED,
    pb.CALL_STATUS_FAILED,
)


def story(c: GatewayClient, run_id: str) -> list[tuple[str, str, int, str]]:
    """(kind, call, status, error code) of each of a run's records, in order."""
    return [(r.kind, r.call_id, r.status, r.error_code) for r in records(c, run_id=run_id)]


def refused(call: Callable[[], Any], status: grpc.StatusCode, code: str) -> None:
    with pytest.raises(RequestError) as err:
        call()
    assert err.value.grpc_status == status.name and error_code(err.value) == code, err.value.message


def test_a_call_that_runs_leaves_its_decision_and_its_result(
    connect: Connect, run_id: str, fresh_travel: TravelService
) -> None:
    alice, auditor = connect("alice-demo-token"), connect("audrey-demo-token")
    alice.start_run(run_id=run_id, provider="openai.responses")
    alice.submit_calls(
        run_id,
        "t1",
        tool_call("c1", "get_train_status", TRAIN),
        tool_call("c2", "get_weather", WEATHER),
    )
    found = records(auditor, run_id=run_id)
    assert [(r.kind, r.call_id, r.status) for r in found] == [
        ("decision", "c1", 0),
        ("decision", "c2", 0),  # decided, not yet run
        ("execution", "c1", SUCCEEDED),
        ("execution", "c2", SUCCEEDED),
    ] or [(r.kind, r.call_id, r.status) for r in found] == [
        ("decision", "c1", 0),
        ("decision", "c2", 0),
        ("execution", "c2", SUCCEEDED),
        ("execution", "c1", SUCCEEDED),
    ]
    decided = found[0]
    assert (
        decided.subject,
        decided.tenant,
        decided.actor,
        decided.run_id,
        decided.turn_id,
        decided.provider,
    ) == ("alice", "acme", "alice", run_id, "t1", "openai.responses")
    assert (decided.tool, decided.tool_version) == ("get_train_status", "1.0.0")
    assert json.loads(decided.arguments_summary_json) == TRAIN
    assert decided.arguments_sha256 == canonical_sha256(TRAIN)
    assert decided.decision.verdict == pb.VERDICT_ALLOW and decided.decision.reasons
    assert decided.policy_revision.startswith("sha256:")
    assert decided.decision.policy_revision == decided.policy_revision
    assert len(decided.input_sha256) == 64  # the replay key of the exact policy input
    ran = next(r for r in found if r.kind == "execution" and r.call_id == "c1")
    assert (ran.execution_count, json.loads(ran.detail_json)) == (1, {"attempts": 1})
    assert ran.actor == "" and ran.time >= decided.time
    assert [r.seq for r in found] == sorted(r.seq for r in found)
    assert all(len(r.hash) == 64 and r.seal and r.key_id for r in found)


@pytest.mark.parametrize(
    "call,code,verdict,message",
    [
        (
            tool_call("c1", "launch_rocket", {}),
            "unknown_tool",
            pb.VERDICT_UNSPECIFIED,
            "launch_rocket",
        ),
        (
            tool_call("c1", "get_train_status", {"train_number": "12-XYZ!", "date": "2026-12-01"}),
            "invalid_arguments",
            pb.VERDICT_UNSPECIFIED,
            "train_number",
        ),
        (
            tool_call("c1", "get_train_status", '{"train_number": "ICE1'),
            "incomplete_arguments",
            pb.VERDICT_UNSPECIFIED,
            "",
        ),
        (
            tool_call("c1", "get_train_status", {"train_number": "TGV9", "date": "2026-12-01"}),
            "policy_denied",
            pb.VERDICT_DENY,
            "outside tenant acme",
        ),
    ],
)
def test_a_rejected_call_says_why(
    connect: Connect, run_id: str, call: pb.ToolCall, code: str, verdict: int, message: str
) -> None:
    alice = connect("alice-demo-token")
    alice.start_run(run_id=run_id)
    alice.submit_calls(run_id, "t1", call)
    (rec,) = records(alice, run_id=run_id)
    assert (rec.kind, rec.status, rec.error_code, rec.decision.verdict) == (
        "decision",
        REJECTED,
        code,
        verdict,
    )
    assert message in rec.message + " ".join(rec.decision.reasons)
    assert rec.execution_count == 0


def test_a_failing_tool_is_recorded_with_its_attempts(
    connect: Connect, run_id: str, fresh_travel: TravelService
) -> None:
    fresh_travel.control({"train_status": {"status": 500}})
    alice = connect("alice-demo-token")
    alice.start_run(run_id=run_id)
    alice.submit_calls(run_id, "t1", tool_call("c1", "get_train_status", TRAIN))
    ran = [r for r in records(alice, run_id=run_id) if r.kind == "execution"]
    assert [(r.status, r.error_code) for r in ran] == [(FAILED, "tool_error")]
    assert ran[0].execution_count == json.loads(ran[0].detail_json)["attempts"] >= 1
    assert ran[0].message


def test_turns_without_calls_leave_no_call_records(connect: Connect, run_id: str) -> None:
    alice = connect("alice-demo-token")
    alice.start_run(run_id=run_id)
    alice.submit_turn(run_id=run_id, turn_id="t1", incomplete=pb.Incomplete(reason="max_tokens"))
    alice.submit_turn(run_id=run_id, turn_id="t2", refusal=pb.Refusal(text="no"))
    assert records(alice, run_id=run_id) == []


def test_an_approval_is_requested_decided_checked_again_and_run(
    connect: Connect, run_id: str
) -> None:
    tina, olga = connect("tina-demo-token"), connect("olga-demo-token")
    auditor = connect("audrey-demo-token")
    tina.start_run(run_id=run_id)
    booking = {"train_number": "ICE123", "seat": "12A"}
    out = tina.submit_calls(run_id, "t1", tool_call("w1", "book_ticket", booking))
    approval_id = out.results[0].approval_id
    olga.decide_approval(approval_id, approve=True, reason="trip approved by finance")
    found = records(auditor, run_id=run_id)
    # each record carries its own verdict, status, code and message: what it tells of
    assert [
        (r.kind, r.decision.verdict, r.status, r.approval_status, r.error_code, r.actor)
        for r in found
    ] == [
        (
            "decision",
            pb.VERDICT_APPROVAL_REQUIRED,
            pb.CALL_STATUS_PENDING_APPROVAL,
            0,
            "approval_required",
            "tina",
        ),
        (
            "approval",
            pb.VERDICT_APPROVAL_REQUIRED,
            pb.CALL_STATUS_PENDING_APPROVAL,
            pb.APPROVAL_STATUS_PENDING,
            "approval_required",
            "tina",
        ),
        ("approval", pb.VERDICT_ALLOW, 0, pb.APPROVAL_STATUS_APPROVED, "", "olga"),
        # checked again by callgate with the approval, just before it runs: no status yet
        ("decision", pb.VERDICT_ALLOW, 0, 0, "", ""),
        ("execution", pb.VERDICT_ALLOW, SUCCEEDED, 0, "", ""),
    ]
    assert {r.approval_id for r in found} == {approval_id}
    assert all((r.subject, r.tenant) == ("tina", "acme") for r in found)
    asked, decided, rechecked = found[1], found[2], found[3]
    assert asked.message == "; ".join(asked.decision.reasons) and asked.message
    assert decided.actor_tenant == "acme"
    assert "trip approved by finance" in decided.decision.reasons[0]
    assert decided.message == decided.decision.reasons[0]
    assert json.loads(decided.detail_json)["approval_status"] == "APPROVED"
    assert rechecked.message == (
        f"approved by olga ({approval_id}) and checked again with the approval: it runs now"
    )
    assert json.loads(rechecked.detail_json) == {"recheck_of": approval_id}
    assert "waiting" not in rechecked.message
    # the seat is masked by the manifest, so every digest of these arguments is keyed
    assert json.loads(found[0].arguments_summary_json)["seat"].startswith("redacted:")
    assert all(r.arguments_sha256.startswith("hmac-sha256:") for r in found)
    assert len({r.arguments_sha256 for r in found}) == 1


def test_a_cancelled_run_records_who_cancelled_and_what_stopped(
    connect: Connect, run_id: str
) -> None:
    tina, auditor = connect("tina-demo-token"), connect("audrey-demo-token")
    tina.start_run(run_id=run_id)
    tina.submit_calls(run_id, "t1", tool_call("w1", "book_ticket", {"train_number": "ICE123"}))
    tina.cancel_run(run_id)
    found = records(auditor, run_id=run_id)
    cancel = [
        (r.kind, r.call_id, r.status, r.error_code, r.actor) for r in found if r.kind == "cancel"
    ]
    assert cancel == [
        ("cancel", "", 0, "", "tina"),
        ("cancel", "w1", REJECTED, "approval_cancelled", "tina"),
    ]
    (ended,) = [r for r in found if r.error_code == "approval_cancelled" and r.kind == "approval"]
    assert (ended.error_code, ended.actor) == ("approval_cancelled", "tina")


def test_rejections_by_budget_and_duplicate_ids_are_recorded(connect: Connect, run_id: str) -> None:
    alice = connect("alice-demo-token")
    alice.start_run(run_id=run_id, budget=pb.Budget(max_tool_calls=1))
    alice.submit_calls(
        run_id,
        "t1",
        tool_call("c1", "get_weather", WEATHER),
        tool_call("c2", "get_weather", WEATHER),
    )
    codes = {(r.call_id, r.error_code) for r in records(alice, run_id=run_id, status=[REJECTED])}
    assert codes == {("c2", "budget_exhausted")}


def test_authorize_is_the_callers_own_record(connect: Connect) -> None:
    alice = connect("alice-demo-token")
    probe = f"probe-{threading.get_ident()}-{id(alice)}"
    alice.authorize(tool_call(probe, "get_weather", WEATHER))
    (rec,) = records(alice, call_id=probe)
    assert (rec.kind, rec.run_id, rec.subject, rec.actor, rec.decision.verdict) == (
        "authorize",
        "",
        "alice",
        "alice",
        pb.VERDICT_ALLOW,
    )


def test_reading_is_authorized_per_set_of_records(connect: Connect, run_id: str) -> None:
    alice = connect("alice-demo-token")
    alice.start_run(run_id=run_id)
    alice.submit_calls(run_id, "t1", tool_call("c1", "get_weather", WEATHER))
    assert records(alice, run_id=run_id)  # its owner
    assert records(connect("audrey-demo-token"), run_id=run_id)  # an auditor of the tenant
    for token in ("mallory-demo-token", "gina-demo-token", "gus-demo-token", "olga-demo-token"):
        refused(
            lambda t=token: records(connect(t), run_id=run_id),  # type: ignore[misc]
            grpc.StatusCode.PERMISSION_DENIED,
            "permission_denied",
        )
    refused(
        lambda: records(connect("gus-demo-token"), tenant="acme"),
        grpc.StatusCode.PERMISSION_DENIED,
        "permission_denied",
    )
    refused(
        lambda: records(connect("mallory-demo-token"), subject="alice"),
        grpc.StatusCode.PERMISSION_DENIED,
        "permission_denied",
    )
    refused(
        lambda: records(alice, tenant=""), grpc.StatusCode.PERMISSION_DENIED, "permission_denied"
    )
    refused(
        lambda: records(alice, run_id="no-such-run"), grpc.StatusCode.NOT_FOUND, "run_not_found"
    )


def test_a_caller_without_a_grant_reads_only_its_own_records(connect: Connect, run_id: str) -> None:
    mallory, alice = connect("mallory-demo-token"), connect("alice-demo-token")
    alice.start_run(run_id=run_id)
    alice.submit_calls(run_id, "t1", tool_call("c1", "get_weather", WEATHER))
    mallory.start_run(run_id=f"{run_id}-m")
    mallory.submit_calls(f"{run_id}-m", "t1", tool_call("c1", "get_weather", WEATHER))
    mine = records(mallory)
    assert mine and {(r.subject, r.tenant) for r in mine} == {("mallory", "acme")}
    tenant = records(connect("audrey-demo-token"), tail=200)
    assert {r.tenant for r in tenant} == {"acme"} and "alice" in {r.subject for r in tenant}
    assert all(r.tenant == "globex" for r in records(connect("gus-demo-token"), tail=200))


@pytest.mark.parametrize(
    "fields,message",
    [
        ({"since": "yesterday"}, "not an RFC 3339 time"),
        ({"until": "2026-11-29T21:00:00"}, "has no time zone"),
        ({"limit": -1}, "limit must be 0 or more"),
        ({"status": [0]}, "not a call status"),
        ({"verdict": [42]}, "not a verdict"),
        ({"run_id": "x" * 300}, "at most 256"),
    ],
)
def test_a_malformed_query_is_refused(
    connect: Connect, fields: dict[str, Any], message: str
) -> None:
    with pytest.raises(RequestError) as err:
        records(connect("alice-demo-token"), **fields)
    assert err.value.grpc_status == "INVALID_ARGUMENT"
    assert message in (err.value.message or "")


def test_filters_pages_and_the_newest(connect: Connect, run_id: str) -> None:
    alice = connect("alice-demo-token")
    alice.start_run(run_id=run_id)
    for i in range(3):
        alice.submit_calls(
            run_id,
            f"t{i}",
            tool_call(f"r{i}", "get_weather", WEATHER),
            tool_call(f"d{i}", "get_train_status", {"train_number": "TGV9", "date": "2026-12-01"}),
        )
    every = records(alice, run_id=run_id)
    assert len(every) == 9  # per turn: two decisions and one execution
    assert {r.call_id for r in records(alice, run_id=run_id, tool="get_train_status")} == {
        "d0",
        "d1",
        "d2",
    }
    assert [r.call_id for r in records(alice, run_id=run_id, verdict=[pb.VERDICT_DENY])] == [
        "d0",
        "d1",
        "d2",
    ]
    assert {r.kind for r in records(alice, run_id=run_id, status=[SUCCEEDED])} == {"execution"}
    assert [r.seq for r in records(alice, run_id=run_id, call_id="r1")] == [
        r.seq for r in every if r.call_id == "r1"
    ]
    first = records(alice, run_id=run_id, limit=4)
    rest = records(alice, run_id=run_id, after_seq=first[-1].seq)
    assert [r.seq for r in first + rest] == [r.seq for r in every]
    assert records(alice, run_id=run_id, tail=2) == every[-2:]
    middle = every[4].time
    assert records(alice, run_id=run_id, since=middle) == [r for r in every if r.time >= middle]
    assert records(alice, run_id=run_id, until=middle) == [r for r in every if r.time < middle]


def test_follow_sends_new_records_as_they_are_written(connect: Connect, run_id: str) -> None:
    alice, auditor = connect("alice-demo-token"), connect("audrey-demo-token")
    alice.start_run(run_id=run_id)
    alice.submit_calls(run_id, "t1", tool_call("c1", "get_weather", WEATHER))
    stream = auditor.query_audit(run_id=run_id, follow=True)
    seen: list[pb.AuditRecord] = []
    arrived = threading.Condition()

    def read() -> None:
        try:
            for r in stream:
                with arrived:
                    seen.append(r)
                    arrived.notify_all()
        except RequestError:
            pass  # cancelled below

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    with arrived:
        assert arrived.wait_for(lambda: len(seen) >= 2, 30)  # what was there already
    alice.submit_calls(run_id, "t2", tool_call("c2", "get_weather", WEATHER))
    with arrived:
        assert arrived.wait_for(lambda: len(seen) >= 4, 30)  # woken by the commit
    stream.cancel()
    reader.join(30)
    assert [(r.kind, r.call_id) for r in seen] == [
        ("decision", "c1"),
        ("execution", "c1"),
        ("decision", "c2"),
        ("execution", "c2"),
    ]
