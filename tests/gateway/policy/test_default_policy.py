"""The default bundle in policies/ with full call inputs, on each engine: the embedded one,
OPA (pushed the same directory; a live OPA when there is one, SKIPPED otherwise) and the
stand-in OPA (tests/support/opa.py) that checks the wire handling in every run."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from gateway.model import Verdict
from gateway.policy import EmbeddedEngine
from tests.gateway.policy.inputs import DEFAULT_POLICIES, approval_by, call_input, identity
from tests.support.opa import FakeOpa, SyncOpaEngine, live_opa_url


@pytest.fixture(scope="module", params=["embedded", "opa-stand-in", "opa-live"])
def default_engine(
    request: pytest.FixtureRequest, embedded_default: EmbeddedEngine
) -> Iterator[Any]:
    if request.param == "embedded":
        yield embedded_default
        return
    if request.param == "opa-live":
        url = live_opa_url()
        if url is None:
            pytest.skip("no OPA: put `opa` on PATH or set CALLGATE_TEST_OPA_URL")
        engine = SyncOpaEngine(url, DEFAULT_POLICIES)
        yield engine
        engine.close()
        return
    with FakeOpa() as opa:
        engine = SyncOpaEngine(opa.url, DEFAULT_POLICIES)
        yield engine
        engine.close()


ALICE = identity("alice", "acme", "traveler")
OLGA = identity("olga", "acme", "organizer")
GINA = identity("gina", "globex", "organizer")
TESS = identity("tess", "acme", "tester")
TRUDY = identity("trudy", "acme", "organizer", "trusted_writer")
OWEN = identity("owen", "acme", "owner")
GUS = identity("gus", "globex", "owner")
OSCAR = identity("oscar", "acme", "operator")
AUDREY = identity("audrey", "acme", "auditor")

ALL_ORGANIZER_TOOLS = {
    "get_train_status",
    "get_weather",
    "check_availability",
    "reserve_seat",
    "cancel_seat",
}


def test_traveler_reads_own_tenant_train(default_engine: EmbeddedEngine) -> None:
    d = default_engine.decide(
        call_input("get_train_status", "read", {"train_number": "ICE123"}, ALICE)
    )
    assert d.verdict is Verdict.ALLOW
    assert d.reasons == ("tool get_train_status allowed for roles [traveler]",)
    assert d.policy_revision == default_engine.revision
    assert d.policy_revision.startswith("sha256:")
    assert not d.is_policy_error


def test_tool_not_allowed_for_role(default_engine: EmbeddedEngine) -> None:
    d = default_engine.decide(call_input("reserve_seat", "write", {"event_id": "ws-acme-1"}, ALICE))
    assert d.verdict is Verdict.DENY
    assert d.reasons == ("tool reserve_seat not allowed for roles [traveler]",)
    assert d.error == ""


@pytest.mark.parametrize(
    ("who", "args", "reason"),
    [
        (ALICE, {"train_number": "TGV9"}, "train TGV9 is outside tenant acme"),
        (ALICE, {"train_number": "ICE999"}, "train ICE999 is outside tenant acme"),
        (GINA, {"train_number": "ICE123"}, "train ICE123 is outside tenant globex"),
    ],
)
def test_train_outside_tenant_denied(
    default_engine: EmbeddedEngine, who: dict[str, Any], args: dict[str, Any], reason: str
) -> None:
    d = default_engine.decide(call_input("get_train_status", "read", args, who))
    assert d.verdict is Verdict.DENY
    assert d.reasons == (reason,)


def test_event_scope(default_engine: EmbeddedEngine) -> None:
    own = default_engine.decide(
        call_input("check_availability", "read", {"event_id": "ws-globex-1"}, GINA)
    )
    other = default_engine.decide(
        call_input("check_availability", "read", {"event_id": "ws-globex-1"}, OLGA)
    )
    assert own.verdict is Verdict.ALLOW
    assert other.verdict is Verdict.DENY
    assert other.reasons == ("event ws-globex-1 is outside tenant acme",)


def test_write_needs_approval_with_ttl(default_engine: EmbeddedEngine) -> None:
    d = default_engine.decide(call_input("reserve_seat", "write", {"event_id": "ws-acme-1"}, OLGA))
    assert d.verdict is Verdict.APPROVAL_REQUIRED
    assert d.approval_ttl_s == 3600
    assert d.reasons == ("tool reserve_seat writes and needs approval by an owner of tenant acme",)


def test_approved_recheck_allows_write(default_engine: EmbeddedEngine) -> None:
    d = default_engine.decide(
        call_input(
            "reserve_seat", "write", {"event_id": "ws-acme-1"}, OLGA, approval=approval_by(OWEN)
        )
    )
    assert d.verdict is Verdict.ALLOW
    assert d.reasons == ("write approved by owen",)


def test_approved_recheck_still_checks_scope(default_engine: EmbeddedEngine) -> None:
    d = default_engine.decide(
        call_input(
            "reserve_seat", "write", {"event_id": "ws-globex-1"}, OLGA, approval=approval_by(OWEN)
        )
    )
    assert d.verdict is Verdict.DENY


def test_the_approval_hash_is_callgates_to_compare(default_engine: EmbeddedEngine) -> None:
    """callgate rejects an approval for other arguments itself (`approval_mismatch`, before
    it asks again: tests/gateway/run/test_approvals.py); the default bundle does not read
    `args_sha256`, so the same arguments decide the same way whatever their hash says."""
    approved = [
        default_engine.decide(
            call_input(
                "reserve_seat",
                "write",
                {"event_id": "ws-acme-1"},
                OLGA,
                approval=approval_by(OWEN, sha),
            )
        )
        for sha in ("the-args", "other")
    ]
    assert [d.verdict for d in approved] == [Verdict.ALLOW, Verdict.ALLOW]


def test_trusted_writer_needs_no_approval(default_engine: EmbeddedEngine) -> None:
    d = default_engine.decide(call_input("cancel_seat", "write", {"event_id": "ws-acme-2"}, TRUDY))
    assert d.verdict is Verdict.ALLOW


def test_tester_may_call_any_tool_but_writes_need_approval(default_engine: EmbeddedEngine) -> None:
    read = default_engine.decide(call_input("some_new_tool", "read", {}, TESS))
    write = default_engine.decide(call_input("some_new_tool", "write", {}, TESS))
    assert read.verdict is Verdict.ALLOW
    assert write.verdict is Verdict.APPROVAL_REQUIRED


@pytest.mark.parametrize("who", [OWEN, OSCAR, AUDREY, identity("nobody", "acme")])
def test_roles_without_tools_denied(default_engine: EmbeddedEngine, who: dict[str, Any]) -> None:
    d = default_engine.decide(call_input("get_weather", "read", {}, who))
    assert d.verdict is Verdict.DENY
    assert not d.is_policy_error


def test_input_without_identity_is_a_plain_deny(default_engine: EmbeddedEngine) -> None:
    inp = call_input("get_weather", "read", {}, ALICE)
    del inp["identity"]
    d = default_engine.decide(inp)
    assert d.verdict is Verdict.DENY


def _approve(approver: dict[str, Any], requester: dict[str, Any]) -> dict[str, Any]:
    return {
        "action": "approve",
        "approver": approver,
        "requester": requester,
        "call": {"id": "call-1", "tool": "reserve_seat"},
        "tool": {"name": "reserve_seat", "version": "1.0.0", "effect": "write", "labels": {}},
    }


@pytest.mark.parametrize(
    ("approver", "requester", "expected"),
    [
        (OWEN, OLGA, True),
        (OWEN, OWEN, False),  # own request
        (GUS, OLGA, False),  # other tenant
        (OSCAR, OLGA, False),  # not an owner
    ],
)
def test_may_approve(
    default_engine: EmbeddedEngine,
    approver: dict[str, Any],
    requester: dict[str, Any],
    expected: bool,
) -> None:
    assert default_engine.allows("may_approve", _approve(approver, requester)) is expected


@pytest.mark.parametrize(
    ("operator", "requester", "expected"),
    [
        (OSCAR, OLGA, True),
        (identity("op", "globex", "operator"), OLGA, False),
        (OWEN, OLGA, False),
        (identity("olga", "acme", "organizer", "operator"), OLGA, False),  # never in one's own run
    ],
)
def test_may_resolve(
    default_engine: EmbeddedEngine,
    operator: dict[str, Any],
    requester: dict[str, Any],
    expected: bool,
) -> None:
    inp = {"action": "resolve", "operator": operator, "requester": requester, "call": {"id": "c"}}
    assert default_engine.allows("may_resolve", inp) is expected


@pytest.mark.parametrize(
    ("who", "tenant", "subject", "expected"),
    [
        (AUDREY, "acme", "", True),
        (AUDREY, "globex", "", False),
        (OLGA, "acme", "", False),
        (OLGA, "acme", "olga", True),  # own runs
        (OLGA, "acme", "alice", False),
    ],
)
def test_may_read_audit(
    default_engine: EmbeddedEngine, who: dict[str, Any], tenant: str, subject: str, expected: bool
) -> None:
    inp = {"action": "audit", "identity": who, "tenant": tenant, "subject": subject}
    assert default_engine.allows("may_read_audit", inp) is expected


def test_offer(default_engine: EmbeddedEngine) -> None:
    def offer(who: dict[str, Any]) -> set[str] | None:
        return default_engine.offer({"action": "offer", "identity": who})

    assert offer(ALICE) == {"get_train_status", "get_weather"}
    assert offer(OLGA) == ALL_ORGANIZER_TOOLS
    assert offer(identity("bea", "acme", "traveler", "organizer")) == ALL_ORGANIZER_TOOLS
    assert offer(OWEN) == set()
    assert offer(TESS) is None  # "*": every registered tool


def test_no_batch_policy_means_no_partial_writes(default_engine: EmbeddedEngine) -> None:
    assert (
        default_engine.partial_writes({"action": "batch", "identity": OLGA, "calls": []}) is False
    )
