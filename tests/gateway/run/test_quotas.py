"""Quotas through the runner, on each store: a real Rego policy charges every booking against
the booker's key; reservations commit with the decisions, are given back when a call ends
without executing, slide with the (injected) clock and survive a restart."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from gateway.approvals.records import DecideRequest
from gateway.audit.records import AuditFilter
from gateway.errors import PermissionDenied, RequestCode, RequestError
from gateway.model import ApprovalStatus, CallStatus, Identity, Quota, RunState, Verdict
from gateway.policy import load_engine
from gateway.policy.reload import ReloadingEngine
from gateway.run.authorize import Authorizer
from gateway.run.quota_desk import QuotaDesk
from gateway.run.resolution import ResolveRequest
from gateway.run.runner import Runner
from gateway.store import RunStore, open_store
from gateway.tools import Registry
from tests.gateway.run import tools
from tests.support.harness import ALICE, FakeClock, manifests
from tests.support.paths import NewDb
from tests.support.runs import TRAIN, by_id, call, calls_turn, start

BOB = Identity("bob", "acme", ("approver",))

POLICY = """package callgate

import rego.v1

booking if input.call.tool in {"book", "book_unreconciled"}

quota := {"key": sprintf("bookings/%s", [input.identity.subject]), "limit": data.limit,
          "window_s": 3600, "cost": object.get(input.call.args, "cost", 1)}

needs_approval if input.call.args.ask == "yes"

# over half the limit used (input.quotas: the usage of the keys this decision charges)
needs_approval if {
    used := input.quotas[quota.key]
    used.used + used.cost > data.half
}

decision := {"allow": true, "reasons": ["read"]} if not booking

decision := {"allow": true, "reasons": ["booking"], "quotas": [quota]} if {
    booking
    not needs_approval
}

decision := {"allow": false, "approval_required": true, "reasons": ["a person decides"],
             "quotas": [quota]} if {
    booking
    needs_approval
    input.approval == null
}

decision := {"allow": true, "reasons": ["approved"], "quotas": [quota]} if {
    booking
    needs_approval
    input.approval != null
}

may_approve := true

may_resolve := true

may_read_quotas if input.identity.subject == "bob"

may_reset_quotas if input.identity.subject == "bob"
"""


@dataclass
class Setup:
    runner: Runner
    store: RunStore
    clock: FakeClock
    reopen: Callable[[], object]


def bundle(tmp_path: Path, limit: float, half: float = 1e9) -> Path:
    root = tmp_path / "policy"
    root.mkdir(exist_ok=True)
    (root / "p.rego").write_text(POLICY)
    (root / "data.json").write_text(json.dumps({"limit": limit, "half": half}))
    return root


@pytest.fixture
def limit() -> float:
    return 2


@pytest.fixture
def half() -> float:
    return 1e9


@pytest.fixture
async def setup(tmp_path: Path, new_db: NewDb, limit: float, half: float) -> AsyncIterator[Setup]:
    tools.SENT.clear()
    db = new_db()
    registry = Registry.from_manifests(manifests(), env={})
    policy = ReloadingEngine(load_engine(bundle(tmp_path, limit, half), checked=True))
    clock = FakeClock()
    box: dict[str, RunStore] = {"store": await open_store(db)}

    def make() -> Runner:
        return Runner(store=box["store"], registry=registry, policy=policy, clock=clock)

    s = Setup(make(), box["store"], clock, lambda: None)

    async def reopen() -> None:
        await box["store"].close()
        box["store"] = await open_store(db)
        s.store, s.runner = box["store"], make()

    s.reopen = reopen
    yield s
    await registry.aclose()
    await box["store"].close()


def booked() -> int:
    return sum(1 for tool, _ in tools.SENT if tool == "book")


async def book(s: Setup, run_id: str, call_id: str, **args: object) -> tuple[CallStatus, str]:
    out = await s.runner.submit_turn(
        ALICE,
        calls_turn(
            run_id, f"t-{call_id}", call(call_id, "book", json.dumps({"seat": "1A", **args}))
        ),
    )
    (result,) = out.results
    return result.status, result.error_message if result.error_code else ""


async def test_the_limit_holds_and_the_rejection_says_why(setup: Setup) -> None:
    await start(setup, "r1")  # type: ignore[arg-type]
    assert (await book(setup, "r1", "b1"))[0] == CallStatus.SUCCEEDED
    assert (await book(setup, "r1", "b2"))[0] == CallStatus.SUCCEEDED
    status, why = await book(setup, "r1", "b3")
    assert status == CallStatus.REJECTED
    assert "quota 'bookings/alice' is exhausted: 2 of 2 used in the last 3600 s" in why
    assert "frees at 2026-" in why and "not executed" in why
    assert booked() == 2
    (found,) = await setup.store.list_quotas("bookings/", after="", limit=10, now=setup.clock())
    assert (found.key, found.used, found.limit, found.window_s) == ("bookings/alice", 2, 2, 3600)


async def test_the_window_slides_with_the_clock(setup: Setup) -> None:
    await start(setup, "r1")  # type: ignore[arg-type]
    assert (await book(setup, "r1", "b1"))[0] == CallStatus.SUCCEEDED
    setup.clock.advance(1800)
    assert (await book(setup, "r1", "b2"))[0] == CallStatus.SUCCEEDED
    setup.clock.advance(1799)
    assert (await book(setup, "r1", "b3"))[0] == CallStatus.REJECTED
    setup.clock.advance(2)  # the first booking's hour has passed: one unit is free
    assert (await book(setup, "r1", "b4"))[0] == CallStatus.SUCCEEDED
    assert (await book(setup, "r1", "b5"))[0] == CallStatus.REJECTED
    assert booked() == 3


async def test_usage_survives_a_restart(setup: Setup) -> None:
    await start(setup, "r1")  # type: ignore[arg-type]
    assert (await book(setup, "r1", "b1", cost=2))[0] == CallStatus.SUCCEEDED
    await setup.reopen()  # type: ignore[misc]
    assert (await book(setup, "r1", "b2"))[0] == CallStatus.REJECTED
    assert booked() == 1


async def test_a_cost_over_the_limit_never_fits(setup: Setup) -> None:
    await start(setup, "r1")  # type: ignore[arg-type]
    status, why = await book(setup, "r1", "b1", cost=3)
    assert status == CallStatus.REJECTED and "it never will" in why
    assert booked() == 0


async def test_two_writes_of_one_turn_follow_the_batch_rules(setup: Setup) -> None:
    """The second booking does not fit: it is rejected, and the first, a write of the same
    turn, does not run alone (NOT_RUN); neither keeps a reservation."""
    await start(setup, "r1")  # type: ignore[arg-type]
    assert (await book(setup, "r1", "b0"))[0] == CallStatus.SUCCEEDED
    out = await setup.runner.submit_turn(
        ALICE,
        calls_turn(
            "r1",
            "t2",
            call("w1", "book", {"seat": "2A"}),
            call("w2", "book", {"seat": "2B"}),
            call("r", "lookup_train", TRAIN),
        ),
    )
    assert {k: v[:2] for k, v in by_id(out).items()} == {
        "w1": (CallStatus.NOT_RUN, "held_by_batch"),
        "w2": (CallStatus.REJECTED, "quota_exceeded"),
        "r": (CallStatus.SUCCEEDED, ""),
    }
    assert await setup.store.quota_usage(_quota(), setup.clock()) == {"bookings/alice": 1}


def _quota() -> list[Quota]:
    return [Quota("bookings/alice", 2, 3600, 1)]


async def test_an_approval_denied_or_expired_gives_the_reservation_back(setup: Setup) -> None:
    await start(setup, "r1")  # type: ignore[arg-type]
    out = await setup.runner.submit_turn(
        ALICE, calls_turn("r1", "t1", call("a1", "book", {"seat": "1A", "ask": "yes"}))
    )
    assert by_id(out)["a1"][0] == CallStatus.PENDING_APPROVAL
    assert await setup.store.quota_usage(_quota(), setup.clock()) == {"bookings/alice": 1}
    (approval,) = await setup.store.approvals_for_run("r1")
    await setup.runner.decide_approval(
        BOB, DecideRequest(approval.approval_id, approve=False, reason="no")
    )
    assert await setup.store.quota_usage(_quota(), setup.clock()) == {"bookings/alice": 0}
    out = await setup.runner.submit_turn(
        ALICE, calls_turn("r1", "t2", call("a2", "book", {"seat": "1A", "ask": "yes"}))
    )
    assert await setup.store.quota_usage(_quota(), setup.clock()) == {"bookings/alice": 1}
    setup.clock.advance(3 * 24 * 3600)
    await setup.runner.expire_approvals("r1")
    (_, second) = await setup.store.approvals_for_run("r1")
    assert second.status == ApprovalStatus.EXPIRED
    assert await setup.store.quota_usage(_quota(), setup.clock()) == {"bookings/alice": 0}
    assert booked() == 0


async def test_a_reservation_given_back_makes_room_under_the_limit(setup: Setup) -> None:
    """The key's running total drops with the reservation given back: the limit counts it."""
    await start(setup, "r1")  # type: ignore[arg-type]
    await start(setup, "r2")  # type: ignore[arg-type]
    assert (await book(setup, "r1", "b1", ask="yes"))[0] == CallStatus.PENDING_APPROVAL
    assert (await book(setup, "r2", "b2"))[0] == CallStatus.SUCCEEDED
    assert (await book(setup, "r2", "b3"))[0] == CallStatus.REJECTED
    (approval,) = await setup.store.approvals_for_run("r1")
    await setup.runner.decide_approval(
        BOB, DecideRequest(approval.approval_id, approve=False, reason="no")
    )
    assert (await book(setup, "r2", "b4"))[0] == CallStatus.SUCCEEDED
    assert (await book(setup, "r2", "b5"))[0] == CallStatus.REJECTED
    assert booked() == 2


async def test_an_approved_call_keeps_its_reservation_and_runs(setup: Setup) -> None:
    await start(setup, "r1")  # type: ignore[arg-type]
    await setup.runner.submit_turn(
        ALICE, calls_turn("r1", "t1", call("a1", "book", {"seat": "1A", "ask": "yes"}))
    )
    (approval,) = await setup.store.approvals_for_run("r1")
    _, result = await setup.runner.decide_approval(
        BOB, DecideRequest(approval.approval_id, approve=True, reason="ok")
    )
    assert result.status == CallStatus.SUCCEEDED
    assert await setup.store.quota_usage(_quota(), setup.clock()) == {"bookings/alice": 1}
    assert booked() == 1


@pytest.mark.parametrize(("limit", "half"), [(4, 2)])
async def test_the_policy_sees_the_usage_of_the_keys_it_charges(setup: Setup) -> None:
    """`half` is 2: the third booking would pass it, so the policy asks a person."""
    await start(setup, "r1")  # type: ignore[arg-type]
    assert (await book(setup, "r1", "b1"))[0] == CallStatus.SUCCEEDED
    assert (await book(setup, "r1", "b2"))[0] == CallStatus.SUCCEEDED
    assert (await book(setup, "r1", "b3"))[0] == CallStatus.PENDING_APPROVAL


async def test_authorize_reserves_what_it_allows(setup: Setup) -> None:
    authorizer = Authorizer(setup.runner)
    calls = [call(f"c{i}", "book", {"seat": "1A"}) for i in range(3)]
    first = await authorizer.authorize(ALICE, "", calls[:2])
    assert [d.decision.verdict for d in first] == [Verdict.ALLOW, Verdict.ALLOW]
    (third,) = await authorizer.authorize(ALICE, "", calls[2:])
    assert third.error_code == "quota_exceeded" and "2 of 2 used" in third.error_message
    await setup.reopen()  # type: ignore[misc]
    (again,) = await Authorizer(setup.runner).authorize(ALICE, "", calls[2:])
    assert again.error_code == "quota_exceeded"


async def _in_flight(s: Setup, tool: str) -> None:
    """A booking committed EXECUTING when the gateway stopped (accepted waiting for approval,
    its reservation made, then rewritten as a crash would have left it)."""
    await s.runner.submit_turn(
        ALICE, calls_turn("r1", "t1", call("w1", tool, {"seat": "1A", "ask": "yes"}))
    )
    (rec,) = await s.store.turn_calls("r1", "t1")
    run, turn = await s.store.get_run("r1"), await s.store.last_turn("r1")
    assert run is not None and turn is not None
    await s.store.save(
        run=replace(run, state=RunState.ACTIVE, pause_reason=""),
        turn=replace(turn, next=None, reason=""),
        calls=[rec.moved(CallStatus.EXECUTING, idempotency_key="r1:w1", started_at=s.clock())],
    )


async def test_an_unknown_call_keeps_its_reservation_until_settled_failed(setup: Setup) -> None:
    await start(setup, "r1")  # type: ignore[arg-type]
    await _in_flight(setup, "book_unreconciled")
    out = await setup.runner.resume_run(ALICE, "r1")
    assert by_id(out)["w1"][0] == CallStatus.UNKNOWN
    assert await setup.store.quota_usage(_quota(), setup.clock()) == {"bookings/alice": 1}
    await setup.runner.resolve_call(
        BOB, ResolveRequest("r1", "w1", CallStatus.FAILED, "", "the target never booked it")
    )
    assert await setup.store.quota_usage(_quota(), setup.clock()) == {"bookings/alice": 0}


async def test_a_write_found_never_applied_gives_its_reservation_back(setup: Setup) -> None:
    await start(setup, "r1")  # type: ignore[arg-type]
    await _in_flight(setup, "book")
    out = await setup.runner.resume_run(ALICE, "r1")
    assert by_id(out)["w1"][:2] == (CallStatus.FAILED, "tool_not_applied")
    assert await setup.store.quota_usage(_quota(), setup.clock()) == {"bookings/alice": 0}


async def test_a_write_found_applied_keeps_its_reservation(setup: Setup) -> None:
    await start(setup, "r1")  # type: ignore[arg-type]
    await _in_flight(setup, "book")
    tools.APPLIED["r1:w1"] = {"booked": "1A"}
    out = await setup.runner.resume_run(ALICE, "r1")
    assert by_id(out)["w1"][0] == CallStatus.SUCCEEDED
    assert await setup.store.quota_usage(_quota(), setup.clock()) == {"bookings/alice": 1}
    tools.APPLIED.clear()


async def test_authorizes_arriving_together_share_a_commit_and_the_limit(setup: Setup) -> None:
    """Twenty Authorize requests at once are committed in groups; within a group each one's
    reservation fits or is refused alone: exactly the limit is allowed."""
    authorizer = Authorizer(setup.runner)
    answers = await asyncio.gather(
        *(
            authorizer.authorize(ALICE, "", [call(f"c{i}", "book", {"seat": "1A"})])
            for i in range(20)
        )
    )
    codes = sorted(d.error_code for (d,) in answers)
    assert codes == [""] * 2 + ["quota_exceeded"] * 18
    assert await setup.store.quota_usage(_quota(), setup.clock()) == {"bookings/alice": 2}
    authorize_records = [
        r
        for r in await setup.store.query_audit(AuditFilter(), after=0, limit=100)
        if r.kind == "authorize"
    ]
    assert len(authorize_records) == 20


async def test_operators_page_through_keys_and_reset_one(setup: Setup) -> None:
    authorizer = Authorizer(setup.runner)
    for who in ("alice", "carl", "dora"):
        await authorizer.authorize(
            Identity(who, "acme", ("traveler",)), "", [call("c", "book", {"seat": "1A"})]
        )
    desk = QuotaDesk(setup.store, setup.runner.policy, setup.clock)
    first = await desk.list_page(BOB, "bookings/", page_size=2)
    assert [q.key for q in first.quotas] == ["bookings/alice", "bookings/carl"]
    rest = await desk.list_page(BOB, "bookings/", page_size=2, page_token=first.next_page_token)
    assert [q.key for q in rest.quotas] == ["bookings/dora"] and rest.next_page_token == ""
    with pytest.raises(RequestError) as bad:
        await desk.list_page(BOB, "", page_token="!!not-a-token!!")
    assert bad.value.code == RequestCode.INVALID_PAGE_TOKEN
    with pytest.raises(PermissionDenied, match="may_read_quotas refused"):
        await desk.list_page(ALICE, "bookings/")
    for key, reason, code in [
        ("bookings/zed", "x", RequestCode.QUOTA_NOT_FOUND),
        ("bookings/alice", " ", RequestCode.INVALID_ARGUMENT),
        ("k" * 300, "x", RequestCode.INVALID_ARGUMENT),
    ]:
        with pytest.raises(RequestError) as refused:
            await desk.reset(BOB, key, reason)
        assert refused.value.code == code
    with pytest.raises(PermissionDenied, match="may_reset_quotas refused"):
        await desk.reset(ALICE, "bookings/alice", "mine")
    assert await desk.reset(BOB, "bookings/alice", "support ticket 7") == 1
    assert await setup.store.quota_usage(_quota(), setup.clock()) == {"bookings/alice": 0}
    (record,) = [
        r
        for r in await setup.store.query_audit(AuditFilter(), after=0, limit=100)
        if r.kind == "quota"
    ]
    assert record.actor == "bob" and "support ticket 7" in record.message
