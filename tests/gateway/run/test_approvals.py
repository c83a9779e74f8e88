"""Human approval in-process: deciding, the re-check before an approved call runs, expiry,
the batch rules across decisions, listing. A scripted policy decides; the clock is the test's.

Each test asserts the results the runner answers, what the store holds and which tools were
actually executed (tools.SENT).
"""

from __future__ import annotations

import asyncio
import sqlite3
from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest

from gateway.approvals.desk import ApprovalDesk, ListRequest
from gateway.approvals.records import DecideRequest
from gateway.errors import PermissionDenied, RequestCode, RequestError, StoreUnavailable
from gateway.model import (
    ApprovalFilter,
    ApprovalRecord,
    ApprovalStatus,
    CallStatus,
    Decision,
    Identity,
    NextAction,
    RunState,
    Verdict,
)
from gateway.run.runner import Runner, StartRunParams
from gateway.tools import Registry
from tests.gateway.run import tools
from tests.support.harness import ALICE, START, Harness, manifests
from tests.support.runs import by_id, call, calls_turn, start

OLGA = Identity("olga", "acme", ("owner",))
SEAT = {"train": "ICE 100", "seat": "12A"}
OTHER = {"train": "ICE 100", "seat": "12B"}


def approve(approval_id: str, reason: str = "fine") -> DecideRequest:
    return DecideRequest(approval_id, approve=True, reason=reason)


def deny(approval_id: str, reason: str = "no") -> DecideRequest:
    return DecideRequest(approval_id, approve=False, reason=reason)


async def pending(
    h: Harness, *calls: tuple[str, str, dict[str, str]], needing: tuple[str, ...] = ("book",)
) -> dict[str, ApprovalRecord]:
    """A run r1 whose turn t1 carries these calls, the tools in `needing` requiring approval;
    answers the approvals by call ID."""
    h.policy.verdicts.update({tool: Verdict.APPROVAL_REQUIRED for tool in needing})
    h.policy.grants["may_approve"] = True
    await start(h)
    out = await h.runner.submit_turn(
        ALICE, calls_turn("r1", "t1", *(call(cid, tool, args) for cid, tool, args in calls))
    )
    assert out.next == NextAction.PAUSED_FOR_APPROVAL
    return {a.call_id: a for a in await h.store.approvals_for_run("r1")}


async def settled(
    h: Harness,
) -> tuple[NextAction | None, RunState, dict[str, tuple[CallStatus, str, int]]]:
    snap = await h.store.snapshot("r1")
    assert snap is not None and snap.turn is not None
    return (
        snap.turn.next,
        snap.run.state,
        {c.call_id: (c.status, c.error_code, c.execution_count) for c in snap.calls},
    )


# ---------------------------------------------------------------------- one approval


async def test_an_approved_write_is_checked_again_and_runs_once(harness: Harness) -> None:
    h = harness
    approvals = await pending(h, ("c1", "lookup_train", SEAT), ("w1", "book", SEAT))
    a = approvals["w1"]
    assert (a.requested_by, a.tenant, a.requester_roles) == ("alice", "acme", ("traveler",))
    assert a.policy_reasons == ("approval_required by script",)
    h.clock.advance(30)
    h.policy.inputs.clear()
    done, result = await h.runner.decide_approval(OLGA, approve(a.approval_id, "looks right"))
    assert (done.status, done.decided_by, done.decided_by_roles) == (
        ApprovalStatus.APPROVED,
        "olga",
        ("owner",),
    )
    assert (result.call_id, result.status, result.execution_count) == (
        "w1",
        CallStatus.SUCCEEDED,
        1,
    )
    assert result.decision is not None and result.decision.verdict == Verdict.ALLOW
    assert tools.SENT == [("lookup_train", "r1:c1"), ("book", "r1:w1")]
    assert await settled(h) == (
        NextAction.CONTINUE,
        RunState.ACTIVE,
        {"c1": (CallStatus.SUCCEEDED, "", 1), "w1": (CallStatus.SUCCEEDED, "", 1)},
    )
    grant, recheck = h.policy.inputs[0], h.policy.inputs[-1]
    assert grant["action"] == "approve" and grant["approver"]["subject"] == "olga"
    assert grant["requester"] == {
        "subject": "alice",
        "tenant": "acme",
        "roles": ["traveler"],
        "claims": {},
    }
    assert grant["call"]["args"] == SEAT and grant["call"]["approval_id"] == a.approval_id
    assert recheck["identity"]["subject"] == "alice"  # decided as the requester's call
    assert recheck["approval"] == {
        "id": a.approval_id,
        "args_sha256": a.arguments_sha256,
        "approved_by": {"subject": "olga", "tenant": "acme", "roles": ["owner"], "claims": {}},
        "decided_at": "2026-12-01T09:00:30Z",
        "expires_at": "2026-12-01T09:10:00Z",
    }
    kinds = [(r["kind"], r["call_id"], r["error_code"]) for r in await h.store.audit_rows("r1")]
    assert ("approval", "w1", "approval_required") in kinds and ("approval", "w1", "") in kinds


async def test_a_denied_write_never_runs_and_the_model_is_told(harness: Harness) -> None:
    h = harness
    a = (await pending(h, ("w1", "book", SEAT)))["w1"]
    done, result = await h.runner.decide_approval(OLGA, deny(a.approval_id, "too expensive"))
    assert done.status == ApprovalStatus.DENIED
    assert (result.status, result.error_code) == (CallStatus.REJECTED, "approval_denied")
    assert "denied by olga: too expensive" in result.error_message
    assert tools.SENT == []
    assert await settled(h) == (
        NextAction.CONTINUE,
        RunState.ACTIVE,
        {"w1": (CallStatus.REJECTED, "approval_denied", 0)},
    )


async def test_deciding_needs_the_grant_and_a_reason(harness: Harness) -> None:
    h = harness
    a = (await pending(h, ("w1", "book", SEAT)))["w1"]
    h.policy.grants["may_approve"] = False
    with pytest.raises(PermissionDenied, match="may_approve"):
        await h.runner.decide_approval(OLGA, approve(a.approval_id))
    for bad in (approve(a.approval_id, "  "), approve("", "x"), approve(a.approval_id, "x" * 2001)):
        with pytest.raises(RequestError) as err:
            await h.runner.decide_approval(OLGA, bad)
        assert err.value.code == RequestCode.INVALID_ARGUMENT
    with pytest.raises(RequestError) as missing:
        await h.runner.decide_approval(OLGA, approve("apr_nope"))
    assert missing.value.code == RequestCode.APPROVAL_NOT_FOUND
    assert (await h.store.get_approval(a.approval_id)) == a and tools.SENT == []


async def test_a_second_decision_is_refused(harness: Harness) -> None:
    h = harness
    a = (await pending(h, ("w1", "book", SEAT)))["w1"]
    await h.runner.decide_approval(OLGA, approve(a.approval_id))
    for again in (approve(a.approval_id), deny(a.approval_id)):
        with pytest.raises(RequestError) as err:
            await h.runner.decide_approval(OLGA, again)
        assert err.value.code == RequestCode.ALREADY_DECIDED
    assert tools.SENT == [("book", "r1:w1")]


async def test_the_same_approval_decided_twice_at_once_runs_once(harness: Harness) -> None:
    h = harness
    a = (await pending(h, ("w1", "book", SEAT)))["w1"]
    owen = Identity("owen", "acme", ("owner",))
    outcomes = await asyncio.gather(
        h.runner.decide_approval(OLGA, approve(a.approval_id)),
        h.runner.decide_approval(owen, deny(a.approval_id)),
        return_exceptions=True,
    )
    won = [o for o in outcomes if not isinstance(o, BaseException)]
    lost = [o for o in outcomes if isinstance(o, RequestError)]
    assert len(won) == 1 and [e.code for e in lost] == [RequestCode.ALREADY_DECIDED]
    assert tools.SENT == [("book", "r1:w1")]  # approved first: it ran, once


# ---------------------------------------------------------------------- expiry


async def test_an_approval_expires_and_its_turn_settles(harness: Harness) -> None:
    h = harness
    a = (await pending(h, ("w1", "book", SEAT)))["w1"]
    assert a.expires_at == START + timedelta(seconds=600)  # the decision's approval_ttl_s
    h.clock.advance(599)
    await h.runner.expire_approvals("r1")
    assert (await h.store.get_approval(a.approval_id)).status == ApprovalStatus.PENDING  # type: ignore[union-attr]
    h.clock.advance(1)
    await h.runner.expire_approvals("r1")
    stored = await h.store.get_approval(a.approval_id)
    assert stored is not None and stored.status == ApprovalStatus.EXPIRED
    assert await settled(h) == (
        NextAction.CONTINUE,
        RunState.ACTIVE,
        {"w1": (CallStatus.REJECTED, "approval_expired", 0)},
    )
    with pytest.raises(RequestError) as err:
        await h.runner.decide_approval(OLGA, approve(a.approval_id))
    assert err.value.code == RequestCode.APPROVAL_EXPIRED
    assert tools.SENT == []


async def test_deciding_an_approval_past_its_expiry_settles_it_as_expired(harness: Harness) -> None:
    h = harness
    a = (await pending(h, ("w1", "book", SEAT)))["w1"]
    h.clock.advance(601)  # nobody expired it yet
    with pytest.raises(RequestError) as err:
        await h.runner.decide_approval(OLGA, approve(a.approval_id))
    assert err.value.code == RequestCode.APPROVAL_EXPIRED
    assert (await settled(h))[2] == {"w1": (CallStatus.REJECTED, "approval_expired", 0)}
    assert tools.SENT == []


async def test_resume_settles_an_expired_approval(harness: Harness) -> None:
    h = harness
    await pending(h, ("w1", "book", SEAT))
    h.clock.advance(600)
    out = await h.runner.resume_run(ALICE, "r1")
    assert out.next == NextAction.CONTINUE
    assert by_id(out) == {"w1": (CallStatus.REJECTED, "approval_expired", 0)}


async def test_the_default_ttl_applies_when_the_policy_names_none(harness: Harness) -> None:
    h = harness
    runner = Runner(
        store=h.store, registry=h.runner.registry, policy=h.policy, clock=h.clock, approval_ttl_s=45
    )
    h.policy.verdicts["book"] = Verdict.APPROVAL_REQUIRED
    original = h.policy.decide

    async def without_ttl(input: dict[str, Any]) -> Decision:
        return replace(await original(input), approval_ttl_s=None)

    h.policy.decide = without_ttl  # type: ignore[method-assign]
    await runner.start_run(ALICE, StartRunParams(run_id="r9"))
    await runner.submit_turn(ALICE, calls_turn("r9", "t1", call("w1", "book", SEAT)))
    (a,) = await h.store.approvals_for_run("r9")
    assert a.expires_at == START + timedelta(seconds=45)


# ---------------------------------------------------------------------- batches


async def test_writes_of_one_turn_run_together_once_all_are_approved(harness: Harness) -> None:
    h = harness
    approvals = await pending(h, ("w1", "book", SEAT), ("w2", "book", OTHER))
    _, first = await h.runner.decide_approval(OLGA, approve(approvals["w1"].approval_id))
    assert first.status == CallStatus.PENDING_APPROVAL and "approved by olga" in first.error_message
    assert tools.SENT == []
    assert (await settled(h))[:2] == (NextAction.PAUSED_FOR_APPROVAL, RunState.PAUSED_FOR_APPROVAL)
    _, second = await h.runner.decide_approval(OLGA, approve(approvals["w2"].approval_id))
    assert second.status == CallStatus.SUCCEEDED
    assert tools.SENT == [("book", "r1:w1"), ("book", "r1:w2")]  # in the model's order
    assert (await settled(h))[2] == {
        "w1": (CallStatus.SUCCEEDED, "", 1),
        "w2": (CallStatus.SUCCEEDED, "", 1),
    }


async def test_one_write_denied_leaves_the_other_not_run(harness: Harness) -> None:
    h = harness
    approvals = await pending(h, ("w1", "book", SEAT), ("w2", "book", OTHER))
    await h.runner.decide_approval(OLGA, deny(approvals["w2"].approval_id))
    assert await settled(h) == (
        NextAction.CONTINUE,
        RunState.ACTIVE,
        {
            "w1": (CallStatus.NOT_RUN, "held_by_batch", 0),
            "w2": (CallStatus.REJECTED, "approval_denied", 0),
        },
    )
    other = await h.store.get_approval(approvals["w1"].approval_id)
    assert other is not None and other.status == ApprovalStatus.CANCELLED
    assert "w2" in other.reason
    assert tools.SENT == []


async def test_a_held_write_runs_after_its_sibling_is_approved(harness: Harness) -> None:
    h = harness
    approvals = await pending(h, ("w1", "book_unreconciled", SEAT), ("w2", "book", OTHER))
    assert (await settled(h))[2]["w1"][0] == CallStatus.HELD
    await h.runner.decide_approval(OLGA, approve(approvals["w2"].approval_id))
    assert tools.SENT == [("book", "r1:w1"), ("book", "r1:w2")]
    assert (await settled(h))[0] == NextAction.CONTINUE


async def test_an_approved_read_runs_while_a_write_still_waits(harness: Harness) -> None:
    h = harness
    approvals = await pending(
        h, ("c1", "lookup_train", SEAT), ("w1", "book", SEAT), needing=("book", "lookup_train")
    )
    _, read = await h.runner.decide_approval(OLGA, approve(approvals["c1"].approval_id))
    assert read.status == CallStatus.SUCCEEDED and tools.SENT == [("lookup_train", "r1:c1")]
    assert (await settled(h))[0] == NextAction.PAUSED_FOR_APPROVAL


# ---------------------------------------------------------------------- the re-check


def tamper(h: Harness, call_id: str, arguments_json: str) -> None:
    """Change a call's stored arguments behind callgate's back."""
    conn = sqlite3.connect(h.store.path)
    with conn:
        conn.execute(
            "UPDATE calls SET arguments_json = ? WHERE call_id = ?", (arguments_json, call_id)
        )
    conn.close()


async def test_arguments_changed_after_approval_are_refused(harness: Harness) -> None:
    h = harness
    approvals = await pending(h, ("w1", "book", SEAT), ("w2", "book", OTHER))
    await h.runner.decide_approval(OLGA, approve(approvals["w1"].approval_id))
    tamper(h, "w1", '{"train": "ICE 100", "seat": "1A"}')
    await h.runner.decide_approval(OLGA, approve(approvals["w2"].approval_id))
    assert await settled(h) == (
        NextAction.CONTINUE,
        RunState.ACTIVE,
        {
            "w1": (CallStatus.REJECTED, "approval_mismatch", 0),
            "w2": (CallStatus.NOT_RUN, "held_by_batch", 0),
        },
    )
    assert tools.SENT == []


async def test_the_policy_refusing_the_approved_call_rejects_it(harness: Harness) -> None:
    h = harness
    a = (await pending(h, ("w1", "book", SEAT)))["w1"]
    h.policy.approved["book"] = Verdict.DENY
    _, result = await h.runner.decide_approval(OLGA, approve(a.approval_id))
    assert (result.status, result.error_code) == (CallStatus.REJECTED, "policy_denied")
    assert tools.SENT == [] and h.policy.inputs[-1]["approval"]["id"] == a.approval_id


async def test_an_approval_that_lapses_while_siblings_wait_runs_nothing(harness: Harness) -> None:
    h = harness
    approvals = await pending(h, ("w1", "book", SEAT), ("w2", "book", OTHER))
    await h.runner.decide_approval(OLGA, approve(approvals["w1"].approval_id))
    h.clock.advance(600)  # w1's approval runs out; w2's too, at the same moment
    with pytest.raises(RequestError) as err:
        await h.runner.decide_approval(OLGA, approve(approvals["w2"].approval_id))
    assert err.value.code == RequestCode.APPROVAL_EXPIRED
    assert (await settled(h))[2] == {
        "w1": (CallStatus.NOT_RUN, "held_by_batch", 0),
        "w2": (CallStatus.REJECTED, "approval_expired", 0),
    }
    assert tools.SENT == []


async def test_another_tool_version_is_not_what_was_approved(harness: Harness) -> None:
    h = harness
    a = (await pending(h, ("w1", "book", SEAT)))["w1"]
    bumped = [dict(m, version="3") if m["name"] == "book" else m for m in manifests()]
    registry = Registry.from_manifests(bumped, env={})
    later = Runner(store=h.store, registry=registry, policy=h.policy, clock=h.clock)
    _, result = await later.decide_approval(OLGA, approve(a.approval_id))
    assert (result.status, result.error_code) == (CallStatus.REJECTED, "approval_mismatch")
    assert "version 2" in result.error_message and tools.SENT == []
    await registry.aclose()


# ---------------------------------------------------------------------- listing


async def test_listing_shows_own_and_decidable_approvals_a_page_at_a_time(harness: Harness) -> None:
    h = harness
    approvals = await pending(h, ("w1", "book", SEAT), ("w2", "book", OTHER))
    desk = ApprovalDesk(h.runner)
    stranger = Identity("mallory", "acme", ("traveler",))
    h.policy.grants["may_approve"] = False
    assert (await desk.list_page(stranger, ListRequest())).approvals == ()
    mine = await desk.list_page(ALICE, ListRequest())  # the requester sees its own
    assert [a.call_id for a in mine.approvals] == ["w1", "w2"]
    h.policy.grants["may_approve"] = True
    first = await desk.list_page(OLGA, ListRequest(page_size=1))
    assert [a.call_id for a in first.approvals] == ["w1"] and first.next_page_token
    second = await desk.list_page(OLGA, ListRequest(page_size=1, page_token=first.next_page_token))
    assert [a.call_id for a in second.approvals] == ["w2"]
    rest = await desk.list_page(OLGA, ListRequest(page_size=1, page_token=second.next_page_token))
    assert rest == type(rest)((), "")
    one = ApprovalFilter(approval_id=approvals["w2"].approval_id)
    assert [a.call_id for a in (await desk.list_page(OLGA, ListRequest(one))).approvals] == ["w2"]
    with pytest.raises(RequestError) as err:
        await desk.list_page(OLGA, ListRequest(page_token="nonsense"))
    assert err.value.code == RequestCode.INVALID_ARGUMENT


async def test_listing_settles_what_has_expired(harness: Harness) -> None:
    h = harness
    await pending(h, ("w1", "book", SEAT))
    desk = ApprovalDesk(h.runner)
    h.clock.advance(600)
    pending_only = ListRequest(ApprovalFilter(statuses=(ApprovalStatus.PENDING,)))
    assert (await desk.list_page(OLGA, pending_only)).approvals == ()
    (shown,) = (await desk.list_page(OLGA, ListRequest())).approvals
    assert shown.status == ApprovalStatus.EXPIRED
    assert (await settled(h))[2] == {"w1": (CallStatus.REJECTED, "approval_expired", 0)}


async def test_the_desk_expires_what_is_due_and_names_the_next_expiry(harness: Harness) -> None:
    h = harness
    await pending(h, ("w1", "book", SEAT))
    desk = ApprovalDesk(h.runner)
    assert await desk.expire_due() == START + timedelta(seconds=600)
    h.clock.advance(600)
    assert await desk.expire_due() is None
    assert (await settled(h))[2] == {"w1": (CallStatus.REJECTED, "approval_expired", 0)}


async def test_cancel_cancels_pending_approvals_with_an_audit_record(harness: Harness) -> None:
    h = harness
    a = (await pending(h, ("w1", "book", SEAT)))["w1"]
    await h.runner.cancel_run(ALICE, "r1")
    stored = await h.store.get_approval(a.approval_id)
    assert stored is not None and stored.status == ApprovalStatus.CANCELLED
    rows = [r for r in await h.store.audit_rows("r1") if r["kind"] == "approval"]
    assert [r["error_code"] for r in rows] == ["approval_required", "approval_cancelled"]
    with pytest.raises(RequestError) as err:
        await h.runner.decide_approval(OLGA, approve(a.approval_id))
    assert err.value.code == RequestCode.ALREADY_DECIDED


async def test_a_store_failure_while_expiring_is_tried_again_soon(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    h = harness
    await pending(h, ("w1", "book", SEAT))
    desk = ApprovalDesk(h.runner)

    async def unavailable(*args: object, **kwargs: object) -> None:
        raise StoreUnavailable("the disk is full")

    h.clock.advance(600)
    monkeypatch.setattr(h.store, "list_approvals", unavailable)
    assert await desk.expire_due() == START + timedelta(seconds=605)  # RETRY_S later
    monkeypatch.undo()
    monkeypatch.setattr(h.runner, "expire_approvals", unavailable)
    assert await desk.expire_due() == START + timedelta(seconds=605)
    assert (await settled(h))[2]["w1"][0] == CallStatus.PENDING_APPROVAL  # nothing changed
