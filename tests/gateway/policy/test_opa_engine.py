"""The OPA engine against the stand-in OPA: every failure denies, health follows OPA, pushes
keep the previous revision when OPA refuses one, and shadow mode counts and records."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from gateway.model import Verdict
from gateway.policy.bundle import PolicyConfigError, load_bundle
from gateway.policy.embedded import EmbeddedEngine
from gateway.policy.opa.client import STATUS, OpaConnection, OpaError, OpaSettings
from gateway.policy.opa.engine import OpaEngine
from gateway.policy.opa.push import until_no_progress
from gateway.policy.reload import ReloadingEngine
from gateway.policy.shadow import Disagreement, ShadowEngine, audit_event
from tests.gateway.policy.inputs import WriteBundle, call_input, identity
from tests.support.opa import FakeOpa

ALICE = identity("alice", "acme", "traveler")
READ = call_input("get_weather", "read", {"city": "Oslo"}, ALICE)

POLICY = """package callgate

default decision := {"allow": false, "reasons": ["no"]}

decision := {"allow": true, "reasons": [data.callgate.note]} if input.call.effect == "read"

default may_approve := false

ratio := input.a / input.b
"""


@pytest.fixture
def opa() -> Iterator[FakeOpa]:
    with FakeOpa() as server:
        yield server


@pytest.fixture
async def make(opa: FakeOpa) -> AsyncIterator[Any]:
    engines: list[OpaEngine] = []

    def build(
        mode: str = "push",
        timeout_s: float = 2.0,
        prefix: str = "data.callgate",
        on_change: Any = None,
    ) -> OpaEngine:
        engine = OpaEngine(
            OpaConnection(OpaSettings(opa.url, timeout_s=timeout_s)),
            prefix,
            mode=mode,
            on_change=on_change,
        )  # type: ignore[arg-type]
        engines.append(engine)
        return engine

    yield build
    for engine in engines:
        await engine.close()


def policies(
    write_bundle: WriteBundle,
    body: str = POLICY,
    note: str = "rev-a",
    name: str = "bundle",
    **more: str,
) -> Path:
    return write_bundle(
        {"callgate.rego": body, "callgate/data.json": {"note": note}, **more}, name=name
    )


async def pushed(make: Any, root: Path, **kw: Any) -> OpaEngine:
    engine: OpaEngine = make(**kw)
    await engine.install_bundle(engine.prepare(root, "data.callgate", require_tests=False))
    return engine


def assert_policy_error(decision: Any, *words: str) -> None:
    assert decision.verdict is Verdict.DENY and decision.is_policy_error, decision
    for word in words:
        assert word in decision.error, decision.error


# ---------------------------------------------------------------------------------------------
# fail closed


async def test_a_pushed_policy_decides_with_its_revision(
    make: Any, write_bundle: WriteBundle
) -> None:
    root = policies(write_bundle)
    engine = await pushed(make, root)
    decision = await engine.decide(READ)
    assert (decision.verdict, decision.reasons) == (Verdict.ALLOW, ("rev-a",))
    assert decision.policy_revision == load_bundle(root).revision == engine.revision
    assert await engine.allows("may_approve", {}) is False
    assert await engine.offer({}) is None  # undefined: every tool


async def test_unreachable_opa_denies_and_recovers_without_restart(
    make: Any, opa: FakeOpa, write_bundle: WriteBundle
) -> None:
    changes: list[bool] = []
    engine = await pushed(
        make, policies(write_bundle), on_change=lambda: changes.append(engine.reachable)
    )
    opa.stop()
    assert_policy_error(await engine.decide(READ), "unreachable", opa.url)
    assert await engine.allows("may_approve", {}) is False
    assert not await engine.healthy() and changes == [False]
    opa.start()
    assert await engine.healthy() and changes == [False, True]
    assert (await engine.decide(READ)).verdict is Verdict.ALLOW


async def test_a_restarted_opa_gets_the_policies_again(
    make: Any, opa: FakeOpa, write_bundle: WriteBundle
) -> None:
    engine = await pushed(make, policies(write_bundle))
    opa.forget_everything()  # what a restarted OPA holds: nothing
    assert_policy_error(await engine.decide(READ), "decision is undefined")
    assert await engine.healthy()  # notices, and pushes again
    assert (await engine.decide(READ)).verdict is Verdict.ALLOW


async def test_slower_than_the_timeout_denies(
    make: Any, opa: FakeOpa, write_bundle: WriteBundle
) -> None:
    engine = await pushed(make, policies(write_bundle), timeout_s=0.2)
    opa.stall()
    assert_policy_error(await engine.decide(READ), "did not answer within 0.2 s")
    opa.release()


@pytest.mark.parametrize(
    ("status", "body", "words"),
    [
        (500, {"code": "internal_error", "message": "boom"}, ("500 (internal_error): boom",)),
        (503, {"code": "unavailable", "message": "starting"}, ("503",)),
        (401, {"code": "unauthorized", "message": "missing token"}, ("401", "missing token")),
        (404, {"code": "resource_not_found", "message": "x"}, ("404",)),
    ],
)
async def test_an_error_status_denies_naming_it(
    make: Any,
    opa: FakeOpa,
    write_bundle: WriteBundle,
    status: int,
    body: dict[str, Any],
    words: tuple[str],
) -> None:
    engine = await pushed(make, policies(write_bundle))
    opa.fail_next(status, body, count=2)
    assert_policy_error(await engine.decide(READ), *words)
    assert await engine.allows("may_approve", {}) is False


@pytest.mark.parametrize(
    ("status", "body", "words"),
    [
        (502, "<html>bad gateway</html>", ("502 with a body that is not JSON",)),
        (200, "[1, 2]", ("JSON that is not an object",)),
        (200, '{"result": ' + "1" * (5 << 20) + "}", ("more than 4194304 bytes",)),
        # what a lax reader would take: the last of two values, or a number that is none
        (
            200,
            '{"result": {"allow": false, "allow": true}}',
            ("200 with a body that is not strict JSON", "duplicate object key 'allow'"),
        ),
        (
            200,
            '{"result": {"allow": true, "reasons": [], "score": NaN}}',
            ("not strict JSON", "NaN is not a JSON number"),
        ),
        (200, '{"result": {"allow": true, "reasons": [Infinity]}}', ("Infinity",)),
        (200, '{"result": {"allow": true, "reasons": ["\\udc00"]}}', ("lone UTF-16 surrogate",)),
        (200, '{"result": true, "result": false}', ("duplicate object key 'result'",)),
        (
            500,
            '{"code": "internal_error", "code": "x", "message": "boom"}',
            ("500 with a body that is not strict JSON",),
        ),
    ],
)
async def test_an_answer_that_is_not_opas_denies(
    make: Any, opa: FakeOpa, write_bundle: WriteBundle, status: int, body: str, words: tuple[str]
) -> None:
    engine = await pushed(make, policies(write_bundle))
    opa.fail_next(status, body)
    assert_policy_error(await engine.decide(READ), *words)
    assert (await engine.decide(READ)).verdict is Verdict.ALLOW  # the next one is fine


async def test_an_undefined_document_denies(make: Any, write_bundle: WriteBundle) -> None:
    await pushed(make, policies(write_bundle))
    other = make(prefix="data.elsewhere")  # nothing defined there
    assert_policy_error(await other.decide(READ), "decision is undefined")


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ('package callgate\n\ndecision := "yes"\n', ("decision is not an object",)),
        (
            'package callgate\n\ndecision := {"allow": "true"}\n',
            ("decision.allow is not a boolean",),
        ),
        (
            'package callgate\n\ndecision := {"allow": true, "approval_required": true}\n',
            ("both allow and approval_required",),
        ),
        (
            'package callgate\n\ndecision := {"allow": input.call.args.n / 0 > 1}\n',
            ("eval_builtin_error",),
        ),
    ],
)
async def test_a_malformed_or_failing_decision_denies(
    make: Any, write_bundle: WriteBundle, body: str, words: tuple[str]
) -> None:
    engine = await pushed(make, write_bundle({"callgate.rego": body}))
    inp = call_input("get_weather", "read", {"n": 1}, ALICE)
    assert_policy_error(await engine.decide(inp), *words)


async def test_external_mode_records_opas_bundle_revision(
    make: Any, opa: FakeOpa, write_bundle: WriteBundle
) -> None:
    await pushed(make, policies(write_bundle))  # stands for the team's own bundle
    opa.bundles = {"authz": "v42"}
    engine = make(mode="external")
    decision = await engine.decide(READ)
    assert decision.verdict is Verdict.ALLOW and decision.policy_revision == "v42"
    assert engine.revision == "v42"
    assert (
        "provenance=true" in opa.requests[-1][1]
        and "strict-builtin-errors=true" in opa.requests[-1][1]
    )


# ---------------------------------------------------------------------------------------------
# pushing and reloading


async def test_opa_refusing_a_revision_keeps_the_previous_one(
    make: Any, opa: FakeOpa, write_bundle: WriteBundle
) -> None:
    root = policies(write_bundle)
    engine = await pushed(make, root)
    before = dict(opa.policies)
    bundle = load_bundle(root)
    # a revision the embedded engine would refuse too: built by hand to reach OPA
    bad = replace(
        bundle,
        sources={**bundle.sources, "extra.rego": "package callgate\n\nx := {\n"},
        data={"callgate": {"note": "rev-b"}},
        revision="sha256:bad",
    )
    with pytest.raises(PolicyConfigError) as caught:
        await engine.install_bundle(bad)
    problem = caught.value.problems[0]
    assert problem.file == (root / "extra.rego").as_posix() and problem.line
    assert opa.policies == before and opa.data["callgate"]["note"] == "rev-a"
    decision = await engine.decide(READ)
    assert decision.reasons == ("rev-a",) and decision.policy_revision == bundle.revision


async def test_a_change_spread_over_files_is_pushed_in_an_order_opa_accepts(
    make: Any, write_bundle: WriteBundle
) -> None:
    first = write_bundle({"a.rego": 'package callgate\n\ndecision := {"allow": true}\n'})
    engine = await pushed(make, first)
    second = write_bundle(
        {
            "a.rego": 'package callgate\n\ndecision := {"allow": data.helper.ok(1)}\n',
            "b.rego": "package helper\n\nok(x) if x == 1\n",
        },
        name="second",
    )
    await engine.load(engine.prepare(second, "data.callgate", require_tests=False), "data.callgate")
    assert (await engine.decide(READ)).verdict is Verdict.ALLOW
    assert engine.revision == load_bundle(second).revision


async def test_uploads_refused_for_a_missing_dependency_are_retried() -> None:
    """OPA compiles every module on each upload: a file using a function another file of the
    same change defines is refused until that file is there (the stand-in compiles lazily, so
    this order is checked here)."""
    done: list[str] = []

    async def upload_a() -> None:
        if "b" not in done:
            raise OpaError(
                STATUS, "undefined function", status=400, errors=({"code": "rego_type_error"},)
            )
        done.append("a")

    async def upload_b() -> None:
        done.append("b")

    async def nothing() -> None:
        return None

    undo: list[Any] = []
    await until_no_progress({"a": (upload_a, nothing), "b": (upload_b, nothing)}, undo)
    assert done == ["b", "a"] and len(undo) == 2

    async def never() -> None:
        raise OpaError(STATUS, "bad", status=400, errors=({"code": "rego_parse_error"},))

    with pytest.raises(OpaError):
        await until_no_progress({"c": (never, nothing)}, [])


# ---------------------------------------------------------------------------------------------
# shadow mode


async def shadow_pair(
    make: Any, root: Path, opa_root: Path | None = None, queue_size: int = 100
) -> tuple[ShadowEngine, list[Disagreement]]:
    embedded = ReloadingEngine(EmbeddedEngine(load_bundle(root)))
    opa_engine = await pushed(make, opa_root or root)
    shadow = ShadowEngine(embedded, opa_engine, queue_size=queue_size, push=False)
    found: list[Disagreement] = []

    async def record(d: Disagreement) -> None:
        found.append(d)

    shadow.record = record
    return shadow, found


async def test_shadow_agreeing_engines_are_counted(make: Any, write_bundle: WriteBundle) -> None:
    shadow, found = await shadow_pair(make, policies(write_bundle))
    assert (await shadow.decide(READ)).reasons == ("rev-a",)
    assert await shadow.allows("may_approve", {}) is False
    await shadow.drain()
    stats = shadow.stats()
    assert (stats.compared, stats.disagreed, stats.dropped, stats.failed) == (2, 0, 0, 0)
    assert not found
    await shadow.close()


async def test_shadow_records_every_disagreement(make: Any, write_bundle: WriteBundle) -> None:
    root = policies(write_bundle)
    shadow, found = await shadow_pair(make, root, policies(write_bundle, note="rev-b", name="opa"))
    decision = await shadow.decide(READ)
    await shadow.drain()
    assert decision.reasons == ("rev-a",)  # the embedded engine decided
    assert shadow.stats().disagreed == 1 and len(found) == 1
    d = found[0]
    assert d.rule == "decision" and d.input_sha256 == decision.input_sha256
    assert d.embedded["reasons"] == ["rev-a"] and d.opa["reasons"] == ["rev-b"]
    assert d.embedded_revision == load_bundle(root).revision != d.opa_revision
    event = audit_event(d)
    assert (event.kind, event.error_code, event.subject, event.call_id, event.run_id) == (
        "shadow",
        "shadow_disagreement",
        "alice",
        "call-1",
        "run-1",
    )
    assert '"rev-b"' in event.arguments_summary_json and "Oslo" not in event.arguments_summary_json
    await shadow.close()


async def test_shadow_never_waits_for_opa(
    make: Any, opa: FakeOpa, write_bundle: WriteBundle
) -> None:
    shadow, _ = await shadow_pair(make, policies(write_bundle), queue_size=2)
    opa.stall()
    for _ in range(10):  # answered while OPA holds every request
        assert (await shadow.decide(READ)).verdict is Verdict.ALLOW
    opa.release()
    await shadow.drain()
    stats = shadow.stats()
    assert stats.dropped > 0 and stats.compared + stats.dropped + stats.failed == 10
    await shadow.close()


async def test_shadow_counts_opa_down_as_failed_not_disagreed(
    make: Any, opa: FakeOpa, write_bundle: WriteBundle
) -> None:
    shadow, found = await shadow_pair(make, policies(write_bundle))
    opa.stop()
    assert (await shadow.decide(READ)).verdict is Verdict.ALLOW
    await shadow.drain()
    assert (shadow.stats().failed, shadow.stats().disagreed, found) == (1, 0, [])
    assert not shadow.stats().opa_reachable
    await shadow.close()
