"""Quotas in a `decision`: well-formed ones are read exactly; a malformed one makes the whole
decision a policy_error naming the field (never an allow), through the mapping and through
the real engine."""

from __future__ import annotations

import math
from typing import Any

import pytest

from gateway.model import Quota, Verdict
from gateway.policy import load_engine
from gateway.policy.embedded import decision_from_value
from gateway.quotas import MAX_KEY_BYTES, MAX_QUOTAS_PER_CALL
from tests.gateway.policy.inputs import WriteBundle, call_input, identity

WHO = identity("alice", "acme")
GOOD = {"key": "refunds/alice", "limit": 10, "window_s": 3600, "cost": 2.5}


def allowing(*quotas: Any) -> dict[str, Any]:
    return {"allow": True, "quotas": list(quotas)}


def test_quotas_are_read_from_an_allowing_decision() -> None:
    d = decision_from_value(allowing(GOOD, {**GOOD, "key": "tenant/acme"}), "rev")
    assert d.verdict == Verdict.ALLOW and not d.is_policy_error
    assert d.quotas == (Quota("refunds/alice", 10, 3600, 2.5), Quota("tenant/acme", 10, 3600, 2.5))


def test_an_approval_may_carry_quotas_and_a_deny_carries_none() -> None:
    d = decision_from_value({"allow": False, "approval_required": True, "quotas": [GOOD]}, "r")
    assert d.verdict == Verdict.APPROVAL_REQUIRED and len(d.quotas) == 1
    assert decision_from_value({"allow": False, "quotas": [GOOD]}, "r").quotas == ()


@pytest.mark.parametrize(
    ("quota", "field"),
    [
        ({**GOOD, "cost": -1}, "decision.quotas[0].cost"),
        ({**GOOD, "cost": 1e300}, "decision.quotas[0].cost"),
        ({**GOOD, "cost": math.nan}, "decision.quotas[0].cost"),
        ({**GOOD, "cost": math.inf}, "decision.quotas[0].cost"),
        ({**GOOD, "cost": "1"}, "decision.quotas[0].cost is not a number (string)"),
        ({**GOOD, "cost": True}, "decision.quotas[0].cost is not a number (boolean)"),
        ({**GOOD, "limit": -5}, "decision.quotas[0].limit"),
        ({**GOOD, "window_s": 0}, "decision.quotas[0].window_s"),
        ({**GOOD, "window_s": 1.5}, "decision.quotas[0].window_s"),
        ({**GOOD, "window_s": 10**9}, "decision.quotas[0].window_s"),
        ({**GOOD, "key": 7}, "decision.quotas[0].key is not a non-empty string (number)"),
        ({**GOOD, "key": ""}, "decision.quotas[0].key"),
        ({**GOOD, "key": "k" * (MAX_KEY_BYTES + 1)}, f"over {MAX_KEY_BYTES} bytes"),
        ({**GOOD, "key": "a\nb"}, "control characters"),
        ({"limit": 1, "window_s": 1, "cost": 1}, "decision.quotas[0].key"),
        ({**GOOD, "costs": 1}, "decision.quotas[0] has an unknown field 'costs'"),
        ("refunds", "decision.quotas[0] is not an object (string)"),
    ],
)
def test_a_malformed_quota_is_a_policy_error_naming_the_field(quota: Any, field: str) -> None:
    d = decision_from_value(allowing(quota), "rev")
    assert d.verdict == Verdict.DENY and d.is_policy_error and d.quotas == ()
    assert field in d.error


def test_too_many_quotas_or_a_key_twice_is_a_policy_error() -> None:
    many = [{**GOOD, "key": f"k{i}"} for i in range(MAX_QUOTAS_PER_CALL + 1)]
    assert (
        f"over the limit of {MAX_QUOTAS_PER_CALL}"
        in decision_from_value(allowing(*many), "r").error
    )
    assert "thousands" not in decision_from_value(allowing(*many * 200), "r").error
    assert "named twice" in decision_from_value(allowing(GOOD, GOOD), "r").error
    assert (
        "not an array (object)" in decision_from_value({"allow": True, "quotas": GOOD}, "r").error
    )


def test_the_engine_denies_a_hostile_quota_with_policy_error(write_bundle: WriteBundle) -> None:
    engine = load_engine(
        write_bundle(
            {
                "p.rego": """package callgate

import rego.v1

decision := {"allow": true, "quotas": [{"key": input.call.args.key, "limit": 10,
             "window_s": 60, "cost": input.call.args.cost}]}
"""
            }
        ),
        checked=True,
    )
    good = engine.decide(call_input("t", "write", {"key": "k", "cost": 1}, WHO))
    assert good.verdict == Verdict.ALLOW and good.quotas == (Quota("k", 10, 60, 1),)
    for args, field in [
        ({"key": ["k"], "cost": 1}, "decision.quotas[0].key"),
        ({"key": "k", "cost": -3}, "decision.quotas[0].cost"),
        ({"key": "k", "cost": 10**16}, "decision.quotas[0].cost"),
    ]:
        bad = engine.decide(call_input("t", "write", args, WHO))
        assert bad.verdict == Verdict.DENY and field in bad.error, args
