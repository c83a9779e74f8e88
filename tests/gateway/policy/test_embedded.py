"""EmbeddedEngine is fail-closed: undefined, malformed, failing or panicking → DENY policy_error."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from gateway.errors import ConfigError
from gateway.model import Decision, Verdict
from gateway.policy import EmbeddedEngine, PolicyEvalError, PolicyUndefined, load_engine
from gateway.policy.base import PolicyEngine
from gateway.policy.embedded import decision_from_value
from gateway.policy.reload import ReloadingEngine
from tests.gateway.policy.inputs import DEFAULT_POLICIES, WriteBundle, call_input, identity

OLGA = identity("olga", "acme", "organizer")
READ = call_input("get_train_status", "read", {"train_number": "ICE123"}, OLGA)


def engine_for(write_bundle: WriteBundle, body: str) -> EmbeddedEngine:
    """An engine over one policy file `package callgate` + body."""
    return load_engine(write_bundle({"p.rego": f"package callgate\n\n{body}\n"}))


def assert_policy_error(decision: Decision, engine: EmbeddedEngine, text: str) -> None:
    assert decision.verdict is Verdict.DENY
    assert decision.is_policy_error
    assert text in decision.error
    assert decision.policy_revision == engine.revision
    assert decision.reasons and decision.reasons[0].startswith("policy_error: ")


async def test_is_a_policy_engine(default_engine: EmbeddedEngine) -> None:
    engine: PolicyEngine = ReloadingEngine(default_engine)
    assert engine.name == "embedded"
    assert await engine.healthy()
    assert engine.loaded_at.tzinfo is not None


def test_undefined_decision(write_bundle: WriteBundle) -> None:
    engine = engine_for(write_bundle, "default may_approve := false")
    assert_policy_error(engine.decide(READ), engine, "decision is undefined")


def test_decision_undefined_for_this_input(write_bundle: WriteBundle) -> None:
    engine = engine_for(write_bundle, 'decision := {"allow": true} if input.call.tool == "x"')
    assert_policy_error(engine.decide(READ), engine, "decision is undefined")


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ('{"allow": true, "approval_required": true}', "both allow and approval_required"),
        ('{"allow": "true"}', "decision.allow is not a boolean (string)"),
        ("{}", "decision.allow is not a boolean (undefined)"),
        ('{"allow": false, "reasons": "nope"}', "decision.reasons is not a list of strings"),
        ('{"allow": false, "reasons": [1]}', "decision.reasons is not a list of strings"),
        ('{"allow": false, "approval_required": "yes"}', "approval_required is not a boolean"),
        (
            '{"allow": false, "approval_required": true, "approval_ttl_s": "1h"}',
            "approval_ttl_s is not a positive integer",
        ),
        ("true", "decision is not an object (boolean)"),
        ('["allow"]', "decision is not an object (array)"),
    ],
)
def test_malformed_decision(write_bundle: WriteBundle, value: str, message: str) -> None:
    engine = engine_for(write_bundle, f"decision := {value}")
    assert_policy_error(engine.decide(READ), engine, message)


@pytest.mark.parametrize(
    ("body", "builtin", "where", "message"),
    [
        ('decision := {"allow": 1 / 0 == 1}', "div", "p.rego:3:25", "divide by zero"),
        ('decision := {"allow": to_number("x") == 1}', "to_number", "p.rego:3:", "invalid syntax"),
        (
            'decision := {"allow": true} if time.parse_rfc3339_ns("tomorrow") > 0',
            "time.parse_rfc3339_ns",
            "p.rego:3:",
            "Failed to parse datetime",
        ),
        (
            'decision := {"allow": crypto.sha256(1) == ""}',
            "crypto.sha256",
            "p.rego:3:",
            "operand 1 must be string but got number",
        ),
    ],
)
def test_builtin_error_denies_naming_the_builtin_and_place(
    write_bundle: WriteBundle, body: str, builtin: str, where: str, message: str
) -> None:
    engine = load_engine(write_bundle({"p.rego": f"package callgate\n\n{body}\n"}), checked=True)
    decision = engine.decide(READ)
    assert_policy_error(decision, engine, message)
    assert decision.error.startswith(f"{builtin} failed at ")
    assert where in decision.error.split(": ", 1)[0]
    assert "Stack backtrace" not in decision.error


def test_panic_is_contained_and_engine_keeps_serving(write_bundle: WriteBundle) -> None:
    engine = engine_for(
        write_bundle,
        "\n".join(
            [
                'decision := {"allow": true} if input.call.tool == "get_train_status"',
                'decision := {"allow": bits.and(1e308 / 0.1, 1) == 0} if input.call.tool == "boom"',
                "may_approve if bits.and(1e308 / 0.1, 1) == 0",
            ]
        ),
    )
    boom = call_input("boom", "read", {}, OLGA)
    assert_policy_error(engine.decide(boom), engine, "engine panic")
    assert engine.decide(READ).verdict is Verdict.ALLOW
    assert engine.allows("may_approve", {}) is False
    assert engine.decide(READ).verdict is Verdict.ALLOW
    assert engine.healthy()


def test_valid_decisions_map_to_verdicts() -> None:
    rev = "sha256:x"
    assert decision_from_value({"allow": True, "reasons": ["ok"]}, rev) == Decision(
        Verdict.ALLOW, ("ok",), rev
    )
    assert decision_from_value({"allow": False}, rev) == Decision(Verdict.DENY, (), rev)
    assert decision_from_value(
        {"allow": False, "approval_required": True, "approval_ttl_s": 60.0}, rev
    ) == Decision(Verdict.APPROVAL_REQUIRED, (), rev, approval_ttl_s=60)
    assert (
        decision_from_value({"allow": False, "approval_required": False, "extra": 1}, rev).verdict
        is Verdict.DENY
    )


def test_undefined_rules_are_undefined_not_errors(write_bundle: WriteBundle) -> None:
    engine = engine_for(write_bundle, 'decision := {"allow": true}')
    assert engine.allows("may_approve", {}) is False
    assert engine.allows("no.such.rule", {}) is False
    assert engine.offer({"identity": OLGA}) is None
    assert engine.partial_writes({}) is False
    with pytest.raises(PolicyUndefined):
        engine.eval_raw("may_approve", {})


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("may_approve := true", True),
        ("may_approve := 1", False),
        ('may_approve := "true"', False),
        ("may_approve := false", False),
        ("may_approve := 1 / 0", False),
    ],
)
def test_allows_only_exact_true(write_bundle: WriteBundle, body: str, expected: bool) -> None:
    assert engine_for(write_bundle, body).allows("may_approve", {}) is expected


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ('offer := {"a", "b"}', {"a", "b"}),
        ('offer := ["a"]', {"a"}),
        ("offer := set()", set()),
        ("offer := {1}", set()),
        ('offer := "a"', set()),
        ('offer := {"a"} if 1 / 0', set()),
    ],
)
def test_offer(write_bundle: WriteBundle, body: str, expected: set[str]) -> None:
    assert engine_for(write_bundle, body).offer({}) == expected


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ('batch_policy := {"partial_writes": true}', True),
        ('batch_policy := {"partial_writes": 1}', False),
        ("batch_policy := true", False),
        ('batch_policy := {"partial_writes": 1 / 0}', False),
    ],
)
def test_partial_writes(write_bundle: WriteBundle, body: str, expected: bool) -> None:
    assert engine_for(write_bundle, body).partial_writes({}) is expected


def test_eval_raw(default_engine: EmbeddedEngine, write_bundle: WriteBundle) -> None:
    assert default_engine.eval_raw("offer", {"identity": OLGA}) >= {"reserve_seat"}
    assert default_engine.eval_raw("decision", READ)["allow"] is True
    failing = engine_for(write_bundle, "x := 1 / 0")
    with pytest.raises(PolicyEvalError, match="divide by zero") as info:
        failing.eval_raw("x", {})
    assert not isinstance(info.value, PolicyUndefined)
    with pytest.raises(PolicyEvalError, match="not a valid rule name"):
        failing.eval_raw("x; true", {})


def test_input_that_is_not_json_denies(default_engine: EmbeddedEngine) -> None:
    bad: dict[str, Any] = {**READ, "now": object()}
    decision = default_engine.decide(bad)
    assert decision.verdict is Verdict.DENY and decision.is_policy_error


def test_second_thread_gets_its_own_engine(default_engine: EmbeddedEngine) -> None:
    results: dict[str, Any] = {}

    def work(name: str) -> None:
        try:
            results[name] = (
                default_engine.decide(READ).verdict,
                default_engine.allows("may_resolve", {}),
                default_engine.healthy(),
            )
        except BaseException as exc:  # noqa: BLE001  (report anything, even a panic)
            results[name] = exc

    threads = [threading.Thread(target=work, args=(f"t{i}",)) for i in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == {f"t{i}": (Verdict.ALLOW, False, True) for i in range(3)}
    assert default_engine.decide(READ).verdict is Verdict.ALLOW  # the first thread's engine


def test_compile_error_fails_at_start_up(write_bundle: WriteBundle) -> None:
    root = write_bundle({"p.rego": "package callgate\n\nallow if {\n  x == 1\n}\n"})
    with pytest.raises(ConfigError, match=r"p\.rego:4:3: use of undefined variable `x`"):
        load_engine(root)


def test_missing_builtin_fails_at_start_up(write_bundle: WriteBundle) -> None:
    root = write_bundle(
        {
            "p.rego": "package callgate\n\nimport data.lib\n\n"
            "f(x) := x\n\nallow if {\n  f(1) == lib.g(1)\n"
            '  crypto.x509.parse_certificates("a") == []\n}\n',
            "lib.rego": "package lib\n\ng(x) := x\n",
        }
    )
    with pytest.raises(
        ConfigError,
        match=r"p\.rego:9:3: function "
        r"crypto\.x509\.parse_certificates is not available",
    ):
        load_engine(root)


def test_bad_prefix_rejected() -> None:
    with pytest.raises(ConfigError, match="prefix"):
        load_engine(DEFAULT_POLICIES, prefix="callgate")


def test_other_prefix(write_bundle: WriteBundle) -> None:
    root = write_bundle({"p.rego": 'package team.gate\n\ndecision := {"allow": true}\n'})
    assert load_engine(root, prefix="data.team.gate").decide(READ).verdict is Verdict.ALLOW
    assert load_engine(root).decide(READ).is_policy_error
