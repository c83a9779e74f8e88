"""Pinned tool definitions in-process: the first definition is pinned, the policy sees the
fingerprint and whether it is pinned, a changed definition is recorded and audited (and held
under enforce), and an approval is bound to the definition it was requested under."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gateway.approvals.records import DecideRequest
from gateway.model import CallStatus, Identity, NextAction, Verdict
from gateway.pins import PinMode, PinModes
from gateway.run.pins import OBSERVE_BATCH
from gateway.run.runner import Runner
from gateway.store.sqlite import SQLiteStore
from gateway.tools import Registry, Tool
from tests.gateway.run import tools
from tests.support.harness import ALICE, FakeClock, Harness, ScriptedPolicy, manifests
from tests.support.runs import call, calls_turn, start

OLGA = Identity("olga", "acme", ("owner",))
SEAT = {"train": "ICE 100", "seat": "12A"}
WARN = PinModes(PinMode.WARN, PinMode.WARN)
ENFORCE = PinModes(PinMode.ENFORCE, PinMode.ENFORCE)


def described(text: str) -> list[dict[str, Any]]:
    """The test manifests with the `book` tool's description changed."""
    return [dict(m, description=text) if m["name"] == "book" else m for m in manifests()]


class Side:
    """One runner over a store file, with its own registry (one sidecar)."""

    def __init__(self, runner: Runner, registry: Registry) -> None:
        self.runner = runner
        self.registry = registry


async def side(
    store: SQLiteStore,
    policy: ScriptedPolicy,
    clock: FakeClock,
    modes: PinModes,
    found: list[dict[str, Any]],
) -> Side:
    registry = Registry.from_manifests(found, env={})
    runner = Runner(store=store, registry=registry, policy=policy, clock=clock, pins=modes)
    assert runner.pins is not None
    await runner.pins.observe(registry.tools())
    return Side(runner, registry)


def _tool(side: Side, name: str) -> Tool:
    tool = side.registry.get(name)
    assert tool is not None
    return tool


async def test_the_first_definition_is_pinned_and_the_policy_sees_it(tmp_path: Path) -> None:
    store = await SQLiteStore.open(tmp_path / "runs.db")
    policy, clock = ScriptedPolicy(), FakeClock()
    one = await side(store, policy, clock, WARN, manifests())
    pins = await store.tool_pins()
    assert set(pins) == {t.name for t in one.registry.tools()}
    assert pins["book"].fingerprint == (await _tool(one, "book").definition()).fingerprint
    assert pins["book"].pinned_by == ""
    await start(_h(one, store, policy, clock))
    out = await one.runner.submit_turn(ALICE, calls_turn("r1", "t1", call("c1", "book", SEAT)))
    assert out.results[0].status == CallStatus.SUCCEEDED
    seen = policy.inputs[-1]["tool"]
    assert seen["fingerprint"] == pins["book"].fingerprint and seen["pinned"] is True
    (rec,) = await store.turn_calls("r1", "t1")
    assert rec.decision is not None and rec.decision.tool_fingerprint == seen["fingerprint"]
    kinds = {r["kind"] for r in await _audit(store)}
    assert "pin" in kinds
    await one.registry.aclose()
    await store.close()


async def test_a_changed_definition_goes_on_under_warn_and_is_held_under_enforce(
    tmp_path: Path,
) -> None:
    store = await SQLiteStore.open(tmp_path / "runs.db")
    policy, clock = ScriptedPolicy(), FakeClock()
    first = await side(store, policy, clock, WARN, manifests())
    pinned = (await store.tool_pins(["book"]))["book"]
    warned = await side(store, policy, clock, WARN, described("Book a seat (changed)."))
    await start(_h(warned, store, policy, clock))
    out = await warned.runner.submit_turn(ALICE, calls_turn("r1", "t1", call("c1", "book", SEAT)))
    assert out.results[0].status == CallStatus.SUCCEEDED
    assert policy.inputs[-1]["tool"]["pinned"] is False
    assert (await store.tool_pins(["book"]))["book"] == pinned  # the pin did not move
    found = await store.tool_definitions(["book"])
    assert pinned.fingerprint in {d.fingerprint for d in found} and len(found) == 2
    changed = [r for r in await _audit(store) if r["error_code"] == "tool_changed"]
    assert len(changed) == 1 and "description" in changed[0]["message"]

    held = await side(store, policy, clock, ENFORCE, described("Book a seat (changed)."))
    sent = len(tools.SENT)
    out = await held.runner.submit_turn(ALICE, calls_turn("r1", "t2", call("c2", "book", SEAT)))
    (result,) = out.results
    assert (result.status, result.error_code) == (CallStatus.REJECTED, "tool_changed")
    assert "description" in result.error_message and "callgate tools approve book" in (
        result.error_message
    )
    assert len(tools.SENT) == sent  # nothing ran
    for s in (first, warned, held):
        await s.registry.aclose()
    await store.close()


async def test_an_approval_covers_the_definition_it_was_requested_under(tmp_path: Path) -> None:
    store = await SQLiteStore.open(tmp_path / "runs.db")
    policy, clock = ScriptedPolicy(), FakeClock()
    policy.verdicts["book"] = Verdict.APPROVAL_REQUIRED
    policy.grants["may_approve"] = True
    before = await side(store, policy, clock, WARN, manifests())
    await start(_h(before, store, policy, clock))
    out = await before.runner.submit_turn(ALICE, calls_turn("r1", "t1", call("w1", "book", SEAT)))
    assert out.next == NextAction.PAUSED_FOR_APPROVAL
    (approval,) = await store.approvals_for_run("r1")
    assert approval.tool_fingerprint == (await _tool(before, "book").definition()).fingerprint
    # the same version, another description: approved, but not for this definition
    after = await side(store, policy, clock, WARN, described("Book any seat you like."))
    _, result = await after.runner.decide_approval(
        OLGA, DecideRequest(approval.approval_id, approve=True, reason="fine")
    )
    assert (result.status, result.error_code) == (CallStatus.REJECTED, "approval_mismatch")
    assert "changed after the approval was requested" in result.error_message
    assert tools.SENT == []
    for s in (before, after):
        await s.registry.aclose()
    await store.close()


def _h(s: Side, store: SQLiteStore, policy: ScriptedPolicy, clock: FakeClock) -> Harness:
    return Harness(s.runner, store, policy, clock)


async def _audit(store: SQLiteStore) -> list[dict[str, Any]]:
    rows = store.connections[0].execute("SELECT kind, error_code, message FROM audit").fetchall()
    return [{"kind": k, "error_code": e, "message": m} for k, e, m in rows]


async def test_a_held_write_whose_tool_changed_meanwhile_sends_nothing(tmp_path: Path) -> None:
    """Decided under one definition, released after a change under enforce: FAILED
    tool_changed, nothing sent."""
    store = await SQLiteStore.open(tmp_path / "runs.db")
    policy, clock = ScriptedPolicy(), FakeClock()
    policy.verdicts["book"] = Verdict.APPROVAL_REQUIRED
    policy.grants["may_approve"] = True
    before = await side(store, policy, clock, ENFORCE, manifests())
    await start(_h(before, store, policy, clock))
    other = {"train": "ICE 100"}
    out = await before.runner.submit_turn(
        ALICE,
        calls_turn("r1", "t1", call("w1", "book", SEAT), call("w2", "book_unreconciled", other)),
    )
    assert out.next == NextAction.PAUSED_FOR_APPROVAL
    (approval,) = await store.approvals_for_run("r1")
    changed = [
        dict(m, description="changed") if m["name"] == "book_unreconciled" else m
        for m in manifests()
    ]
    after = await side(store, policy, clock, ENFORCE, changed)
    await after.runner.decide_approval(
        OLGA, DecideRequest(approval.approval_id, approve=True, reason="fine")
    )
    found = {c.call_id: c for c in await store.turn_calls("r1", "t1")}
    assert (found["w1"].status, found["w1"].execution_count) == (CallStatus.SUCCEEDED, 1)
    w2 = found["w2"]
    assert (w2.status, w2.error_code, w2.execution_count) == (CallStatus.FAILED, "tool_changed", 0)
    assert "nothing was sent" in w2.error_message
    assert tools.SENT == [("book", "r1:w1")]  # w1 only
    for s in (before, after):
        await s.registry.aclose()
    await store.close()


async def test_start_up_records_many_tools_a_batch_a_commit(tmp_path: Path) -> None:
    """Start-up pins every manifest tool before any call, OBSERVE_BATCH tools a commit (one
    commit each was seconds of fsyncs with thousands of tools); a changed one among them is
    still audited, and observing the same definitions again records nothing."""
    store = await SQLiteStore.open(tmp_path / "runs.db")
    policy, clock = ScriptedPolicy(), FakeClock()
    many = manifests() + [
        dict(manifests()[0], name=f"lookup_{i:04d}") for i in range(OBSERVE_BATCH * 2 + 1)
    ]
    commits: list[int] = []
    record = store.record_definitions

    async def counted(seen: Any, audit: Any) -> Any:
        commits.append(len(seen))
        return await record(seen, audit)

    store.record_definitions = counted  # type: ignore[method-assign]
    first = await side(store, policy, clock, WARN, many)
    assert len(commits) == 3 and sum(commits) == len(many)
    pins = await store.tool_pins()
    assert set(pins) == {m["name"] for m in many}
    await first.runner.pins.observe(first.registry.tools())  # type: ignore[union-attr]
    assert len(commits) == 3

    changed = [dict(m, description="changed") if m["name"] == "lookup_0007" else m for m in many]
    again = await side(store, policy, clock, WARN, changed)
    assert (await store.tool_pins(["lookup_0007"]))["lookup_0007"] == pins["lookup_0007"]
    audited = [r for r in await _audit(store) if r["error_code"] == "tool_changed"]
    assert len(audited) == 1 and "lookup_0007" in audited[0]["message"]
    for s in (first, again):
        await s.registry.aclose()
    await store.close()


async def test_a_call_before_the_start_up_recording_pins_its_own_tool(tmp_path: Path) -> None:
    """Start-up records the definitions once serving: a call that comes first records its
    tool's definition as it is checked, and the recording after it finds it done (the same
    pin, no change audited, nothing recorded twice)."""
    store = await SQLiteStore.open(tmp_path / "runs.db")
    policy, clock = ScriptedPolicy(), FakeClock()
    registry = Registry.from_manifests(manifests(), env={})
    runner = Runner(store=store, registry=registry, policy=policy, clock=clock, pins=ENFORCE)
    assert runner.pins is not None and await store.tool_pins() == {}
    one = Side(runner, registry)
    await start(_h(one, store, policy, clock))
    out = await runner.submit_turn(ALICE, calls_turn("r1", "t1", call("c1", "book", SEAT)))
    assert out.results[0].status == CallStatus.SUCCEEDED
    assert set(await store.tool_pins()) == {"book"}
    booked = (await store.tool_pins())["book"]

    recorded: list[str] = []
    record = store.record_definitions

    async def counted(seen: Any, audit: Any) -> Any:
        recorded.extend(s.name for s in seen)
        return await record(seen, audit)

    store.record_definitions = counted  # type: ignore[method-assign]
    await runner.pins.observe(registry.tools())
    assert "book" not in recorded and sorted(recorded) == sorted(
        t.name for t in registry.tools() if t.name != "book"
    )
    assert (await store.tool_pins())["book"] == booked
    assert not [r for r in await _audit(store) if r["error_code"] == "tool_changed"]
    await registry.aclose()
    await store.close()
