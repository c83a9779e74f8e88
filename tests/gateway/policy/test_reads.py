"""The run's recent calls reach every policy that can read them, and only those."""

from __future__ import annotations

import hashlib
import json
import logging

import pytest

from gateway.model import Verdict
from gateway.policy import EmbeddedEngine, load_engine
from gateway.policy.embedded import input_json
from gateway.policy.engine import add_policy, new_engine
from gateway.policy.reads import HISTORY, reads_path
from gateway.policy.reload import ReloadingEngine
from tests.gateway.policy.inputs import WriteBundle, call_input, identity

READ = call_input("get_train_status", "read", {"train_number": "ICE123"},
                  identity("olga", "acme", "organizer"))
ALLOW = 'decision := {"allow": true, "reasons": ["ok"]}'
# Denies while the run has any recent call: an engine handed no history would allow.
NEEDS_EMPTY_HISTORY = """
decision := {"allow": true, "reasons": ["no history"]} if count(%s) == 0
else := {"allow": false, "reasons": ["history seen"]}
"""


def reads(body: str) -> bool:
    engine = new_engine()
    add_policy(engine, "p.rego", f"package callgate\n\n{body}\n")
    return reads_path(json.loads(engine.get_ast_as_json()), HISTORY)


@pytest.mark.parametrize("body", [
    "x if input.run.calls[_].status == \"SUCCEEDED\"",
    "x if count(input.run.calls) > 2",
    "x if input[\"run\"][\"calls\"]",
    "x if input.run[`calls`]",
    "x if { r := input.run; r.calls }",
    "x if { k := \"calls\"; input.run[k] }",
    "x if { some k; input[k] }",
    "x if walk(input, _)",
    "x := json.marshal(input)",
    "x := object.get(input.run, \"calls\", [])",
    "f(doc) := doc.calls\nx := f(input.run)",
    "x if { some c in input.run.calls; c.tool == \"a\" }",
    "x if every c in input.run.calls { c.status == \"SUCCEEDED\" }",
    "x := [c | some c in input.run.calls]",
    "import input.run as r\nx if r.calls",
    "import input.run\nx if run.turn > 1",
])
def test_what_can_reach_the_history_counts_as_reading_it(body: str) -> None:
    assert reads(body)


@pytest.mark.parametrize("body", [
    ALLOW,
    "x if input.call.args.seats > input.run.turn",
    "x if input[\"call\"].tool == \"a\"",
    "x := input.run.labels[k] if k := \"team\"",
    "x if { some k; input.call.args[k] }",
    "import input.call as c\nx if c.tool == \"a\"",
    "x if data.callgate.config.tenants[input.identity.tenant]",
])
def test_references_elsewhere_do_not(body: str) -> None:
    assert not reads(body)


def test_the_default_bundle_does_not_read_the_history(default_engine: EmbeddedEngine) -> None:
    assert "calls" not in default_engine.visible(READ)["run"]
    assert default_engine.visible(READ)["run"]["turn"] == READ["run"]["turn"]
    assert READ["run"]["calls"], "the caller's input itself is left alone"


@pytest.mark.parametrize("ref", ["input.run.calls", "object.get(input.run, \"calls\", [])",
                                 "[c | some c in input[\"run\"][\"calls\"]]"])
def test_a_policy_that_reads_the_history_is_given_it(write_bundle: WriteBundle,
                                                     ref: str) -> None:
    engine = load_engine(write_bundle({"p.rego": "package callgate\n"
                                       + NEEDS_EMPTY_HISTORY % ref}))
    assert engine.visible(READ) is READ
    decision = engine.decide(READ)
    assert decision.verdict is Verdict.DENY and decision.reasons == ("history seen",)
    empty = {**READ, "run": {**READ["run"], "calls": []}}
    assert engine.decide(empty).verdict is Verdict.ALLOW


async def test_the_digest_and_log_name_the_input_as_evaluated(
        write_bundle: WriteBundle, caplog: pytest.LogCaptureFixture) -> None:
    engine = load_engine(write_bundle({"p.rego": f"package callgate\n{ALLOW}\n"}))
    serving = ReloadingEngine(engine, log_inputs=True)
    with caplog.at_level(logging.INFO, logger="callgate.decision_input"):
        decision = await serving.decide(READ)
    evaluated = input_json(engine.visible(READ))
    assert decision.input_sha256 == hashlib.sha256(evaluated.encode()).hexdigest()
    logged = json.loads(caplog.records[-1].getMessage())
    assert logged["input"] == engine.visible(READ)
    assert "calls" not in logged["input"]["run"]


async def test_a_reload_to_a_reading_revision_gets_the_history_at_once(
        write_bundle: WriteBundle) -> None:
    blind = load_engine(write_bundle({"p.rego": f"package callgate\n{ALLOW}\n"}))
    serving = ReloadingEngine(blind)
    assert (await serving.decide(READ)).verdict is Verdict.ALLOW
    serving.install(load_engine(write_bundle(
        {"p.rego": "package callgate\n" + NEEDS_EMPTY_HISTORY % "input.run.calls"},
        name="second")))
    assert (await serving.decide(READ)).reasons == ("history seen",)
