"""Reloading a policy directory in-process: the change detector (time passed in, no sleeping),
the reloader's outcomes, and the serving engine that records each decision's revision."""

from __future__ import annotations

import hashlib
import json
import logging
import os
from pathlib import Path

import pytest

from gateway.model import Verdict
from gateway.policy import EmbeddedEngine, load_bundle
from gateway.policy.reload import ReloadingEngine, prepare
from gateway.policy.watch import ChangeDetector, DirectoryState, PolicyReloader, directory_state
from tests.gateway.policy.inputs import WriteBundle, call_input, identity

CALL = call_input("get_weather", "read", {"city": "Berlin"}, identity("ann", "acme", "x"))


def policy(reason: str, allow: bool = True) -> str:
    return (
        f'package callgate\n\ndecision := {{"allow": {str(allow).lower()}, '
        f'"reasons": ["{reason}"]}}\n'
    )


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def serving(root: Path, **options: object) -> tuple[ReloadingEngine, PolicyReloader, Clock]:
    engine = ReloadingEngine(EmbeddedEngine(prepare(root, "data.callgate"), checked=True))
    clock = Clock()
    reloader = PolicyReloader(engine, root, "data.callgate", quiet_s=0.25, clock=clock, **options)  # type: ignore[arg-type]
    return engine, reloader, clock


async def settle(reloader: PolicyReloader, clock: Clock) -> object:
    """Scan, let the settle time pass, scan again: what a quiet directory leads to."""
    first = await reloader.check()
    if first is not None:
        return first
    clock.advance(0.3)
    return await reloader.check()


# -- the change detector ----------------------------------------------------------------------


def state(*files: tuple[str, int]) -> DirectoryState:
    return DirectoryState(tuple((name, size, 1, 1, 1) for name, size in files))


def test_detector_waits_for_the_settle_time() -> None:
    detector = ChangeDetector(state(("p.rego", 10)), quiet_s=0.25)
    assert not detector.ready(state(("p.rego", 10)), 0.0)  # unchanged
    changed = state(("p.rego", 12))
    assert not detector.ready(changed, 1.0)  # first seen
    assert not detector.ready(changed, 1.2)  # not settled yet
    assert detector.ready(changed, 1.25)
    detector.done(changed)
    assert not detector.ready(changed, 9.0)


def test_detector_restarts_when_a_save_is_still_going_on() -> None:
    detector = ChangeDetector(state(("p.rego", 10)), quiet_s=0.25)
    truncated, written = state(("p.rego", 0)), state(("p.rego", 30))
    assert not detector.ready(truncated, 1.0)
    assert not detector.ready(written, 1.2)  # the write landed: wait again
    assert not detector.ready(written, 1.4)
    assert detector.ready(written, 1.45)


def test_the_directory_state_sees_policy_and_data_files_only(write_bundle: WriteBundle) -> None:
    root = write_bundle(
        {
            "p.rego": policy("a"),
            "sub/data.json": {"x": 1},
            "notes.txt": "x",
            ".p.rego.swp": "x",
            "p.rego~": "x",
        }
    )
    names = [Path(f[0]).relative_to(root).as_posix() for f in directory_state(root).files]
    assert names == ["p.rego", "sub/data.json"]
    assert directory_state(root / "missing") == DirectoryState((), exists=False)


# -- the reloader -----------------------------------------------------------------------------


async def test_an_edit_is_installed_and_decisions_move_to_it(write_bundle: WriteBundle) -> None:
    root = write_bundle({"p.rego": policy("rev-a")})
    engine, reloader, clock = serving(root)
    first = await engine.decide(CALL)
    (root / "p.rego").write_text(policy("rev-b", allow=False))
    result = await settle(reloader, clock)
    second = await engine.decide(CALL)
    assert result.outcome == "installed"  # type: ignore[attr-defined]
    assert (first.verdict, first.reasons) == (Verdict.ALLOW, ("rev-a",))
    assert (second.verdict, second.reasons) == (Verdict.DENY, ("rev-b",))
    assert second.policy_revision == load_bundle(root).revision != first.policy_revision
    assert engine.revision == second.policy_revision


async def test_a_broken_file_is_rejected_and_the_old_revision_serves(
    write_bundle: WriteBundle, caplog: pytest.LogCaptureFixture
) -> None:
    root = write_bundle({"p.rego": policy("rev-a")})
    engine, reloader, clock = serving(root)
    old = engine.revision
    (root / "extra.rego").write_text("package callgate\n\nbroken if {\n  input.x ==\n}\n")
    with caplog.at_level(logging.ERROR, logger="callgate.policy"):
        result = await settle(reloader, clock)
        assert await reloader.check(forced=True) is not None  # SIGHUP on the same files
    assert result.outcome == "rejected"  # type: ignore[attr-defined]
    rejected = engine.last_rejected
    assert rejected is not None and rejected.file.endswith("extra.rego") and rejected.line == 5
    assert "expecting expression" in rejected.message
    assert (await engine.decide(CALL)).policy_revision == old
    assert len([r for r in caplog.records if "reload rejected" in r.message]) == 1  # once

    (root / "extra.rego").unlink()
    result = await settle(reloader, clock)
    assert result.outcome == "unchanged"  # type: ignore[attr-defined]
    assert engine.last_rejected is None and engine.revision == old


async def test_removing_decision_is_rejected(write_bundle: WriteBundle) -> None:
    root = write_bundle({"p.rego": policy("rev-a")})
    engine, reloader, clock = serving(root)
    (root / "p.rego").write_text("package callgate\n\nmay_approve := true\n")
    result = await settle(reloader, clock)
    assert result.outcome == "rejected"  # type: ignore[attr-defined]
    assert engine.last_rejected is not None
    assert "data.callgate.decision is not defined" in engine.last_rejected.message
    assert (await engine.decide(CALL)).reasons == ("rev-a",)


async def test_a_type_error_is_rejected_too(write_bundle: WriteBundle) -> None:
    root = write_bundle({"p.rego": policy("rev-a")})
    engine, reloader, clock = serving(root)
    (root / "p.rego").write_text(
        'package callgate\n\ndecision := {"allow": true, "reasons": [concat(", ", 42)]}\n'
    )
    await settle(reloader, clock)
    assert engine.last_rejected is not None
    assert "rego_type_error: concat" in engine.last_rejected.message
    assert (await engine.decide(CALL)).verdict is Verdict.ALLOW


async def test_deleting_a_data_file_reloads(write_bundle: WriteBundle) -> None:
    root = write_bundle(
        {
            "p.rego": 'package callgate\n\ndefault decision := {"allow": true}\n\n'
            'decision := {"allow": false, "reasons": ["blocked"]} if '
            "input.call.tool in data.blocklist.tools\n",
            "blocklist/data.json": {"tools": ["get_weather"]},
        }
    )
    engine, reloader, clock = serving(root)
    assert (await engine.decide(CALL)).verdict is Verdict.DENY
    (root / "blocklist" / "data.json").unlink()
    result = await settle(reloader, clock)
    assert result.outcome == "installed"  # type: ignore[attr-defined]
    assert (await engine.decide(CALL)).verdict is Verdict.ALLOW


async def test_a_new_file_is_picked_up(write_bundle: WriteBundle) -> None:
    root = write_bundle(
        {
            "p.rego": 'package callgate\n\ndefault decision := {"allow": true}\n\n'
            'decision := {"allow": false} if count(deny) > 0\n\n'
            'deny contains "never" if false\n'
        }
    )
    engine, reloader, clock = serving(root)
    (root / "more.rego").write_text('package callgate\n\ndeny contains "no" if true\n')
    await settle(reloader, clock)
    assert (await engine.decide(CALL)).verdict is Verdict.DENY


async def test_temp_file_and_rename_is_read_whole(write_bundle: WriteBundle) -> None:
    root = write_bundle({"p.rego": policy("rev-a")})
    engine, reloader, clock = serving(root)
    temp = root / "p.rego.tmp"  # not a policy file name: never scanned
    temp.write_text(policy("rev-b"))
    assert await reloader.check() is None
    clock.advance(1)
    assert await reloader.check() is None
    os.replace(temp, root / "p.rego")
    result = await settle(reloader, clock)
    assert result.outcome == "installed"  # type: ignore[attr-defined]
    assert engine.last_rejected is None and (await engine.decide(CALL)).reasons == ("rev-b",)


async def test_truncate_then_write_never_serves_the_half_file(write_bundle: WriteBundle) -> None:
    full = policy("rev-b") + '\nextra := "complete"\n'
    root = write_bundle({"p.rego": policy("rev-a")})
    engine, reloader, clock = serving(root)
    path = root / "p.rego"
    with path.open("w") as handle:  # truncate, then write in two parts with scans between
        assert await reloader.check() is None
        handle.write(full[: len(full) // 2])
        handle.flush()
        assert await reloader.check() is None  # changed since the last scan: not settled
        clock.advance(0.1)
        handle.write(full[len(full) // 2 :])
    assert await reloader.check() is None
    clock.advance(0.3)
    result = await reloader.check()
    assert result is not None and result.outcome == "installed"
    assert engine.revision == load_bundle(root).revision
    assert engine.last_rejected is None


async def test_a_rejection_from_a_stalled_writer_does_not_stick(write_bundle: WriteBundle) -> None:
    root = write_bundle({"p.rego": policy("rev-a")})
    engine, reloader, clock = serving(root)
    path = root / "p.rego"
    path.write_text("package callgate\n\ndecision := {")  # the writer stalls mid-file
    await settle(reloader, clock)
    assert engine.last_rejected is not None
    path.write_text(policy("rev-b"))  # the rest arrives
    await settle(reloader, clock)
    assert engine.last_rejected is None and (await engine.decide(CALL)).reasons == ("rev-b",)


async def test_files_changed_while_read_are_read_again(write_bundle: WriteBundle) -> None:
    root = write_bundle({"p.rego": policy("rev-a")})
    engine, reloader, _ = serving(root)
    before = directory_state(root)
    (root / "p.rego").write_text(policy("rev-b"))  # lands after the scan, before the read ends
    result = await reloader.reload(before)
    assert result.outcome == "retry"
    assert engine.last_rejected is None and (await engine.decide(CALL)).reasons == ("rev-a",)


async def test_reload_requires_tests(write_bundle: WriteBundle) -> None:
    tests = (
        "package callgate_test\n\nimport data.callgate\n\n"
        "test_allows if callgate.decision.allow with input as {}\n"
    )
    root = write_bundle({"p.rego": policy("rev-a"), "p_test.rego": tests})
    engine, reloader, clock = serving(root, require_tests=True)
    (root / "p.rego").write_text(policy("rev-b", allow=False))
    await settle(reloader, clock)
    rejected = engine.last_rejected
    assert rejected is not None and rejected.file.endswith("p_test.rego") and rejected.line == 5
    assert "test data.callgate_test.test_allows failed" in rejected.message
    (root / "p.rego").write_text(policy("rev-c"))
    await settle(reloader, clock)
    assert engine.last_rejected is None and (await engine.decide(CALL)).reasons == ("rev-c",)


# -- the serving engine -----------------------------------------------------------------------


async def test_decision_inputs_are_logged_for_replay(
    write_bundle: WriteBundle, caplog: pytest.LogCaptureFixture
) -> None:
    root = write_bundle({"p.rego": policy("rev-a") + "tool := input.call.tool\n"})
    engine = ReloadingEngine(
        EmbeddedEngine(prepare(root, "data.callgate"), checked=True), log_inputs=True
    )
    with caplog.at_level(logging.INFO, logger="callgate.decision_input"):
        decision = await engine.decide(CALL)
    line = json.loads(caplog.records[-1].getMessage())
    # as evaluated: only what the revision's rules can observe (here input.call.tool)
    evaluated = {"call": {"tool": CALL["call"]["tool"]}}
    assert line["input"] == evaluated
    assert line["policy_revision"] == decision.policy_revision and line["verdict"] == "ALLOW"
    assert line["reasons"] == list(decision.reasons) and "approval_ttl_s" not in line
    text = json.dumps(evaluated, sort_keys=True, separators=(",", ":"))
    assert (
        line["input_sha256"] == decision.input_sha256 == hashlib.sha256(text.encode()).hexdigest()
    )


async def test_inputs_are_not_logged_by_default(
    write_bundle: WriteBundle, caplog: pytest.LogCaptureFixture
) -> None:
    root = write_bundle({"p.rego": policy("rev-a")})
    engine = ReloadingEngine(EmbeddedEngine(prepare(root, "data.callgate"), checked=True))
    with caplog.at_level(logging.INFO, logger="callgate.decision_input"):
        assert (await engine.decide(CALL)).input_sha256
    assert not [r for r in caplog.records if r.name == "callgate.decision_input"]
