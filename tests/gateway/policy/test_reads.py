"""Each revision is given the parts of its input it can observe; a pure one decides an input
it has seen before without evaluating it again."""

from __future__ import annotations

import hashlib
import json
import logging

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gateway.model import Verdict
from gateway.policy import EmbeddedEngine, load_engine
from gateway.policy.embedded import decision_memo, input_json
from gateway.policy.reads import InputView, _tree
from gateway.policy.rego import add_policy, new_engine
from gateway.policy.reload import ReloadingEngine
from tests.gateway.policy.inputs import WriteBundle, call_input, identity

READ = call_input(
    "get_train_status", "read", {"train_number": "ICE123"}, identity("olga", "acme", "organizer")
)
ALLOW = 'decision := {"allow": true, "reasons": ["ok"]}'
# Denies while the run has any recent call: an engine handed no history would allow.
NEEDS_EMPTY_HISTORY = """
decision := {"allow": true, "reasons": ["no history"]} if count(%s) == 0
else := {"allow": false, "reasons": ["history seen"]}
"""


def view(body: str) -> InputView:
    engine = new_engine()
    add_policy(engine, "p.rego", f"package callgate\n\n{body}\n")
    return InputView.of(engine)


def reads(body: str) -> bool:
    return view(body).reads("run", "calls")


@pytest.mark.parametrize(
    "body",
    [
        'x if input.run.calls[_].status == "SUCCEEDED"',
        "x if count(input.run.calls) > 2",
        'x if input["run"]["calls"]',
        "x if input.run[`calls`]",
        "x if { r := input.run; r.calls }",
        'x if { k := "calls"; input.run[k] }',
        "x if { some k; input[k] }",
        "x if walk(input, _)",
        "x := json.marshal(input)",
        'x := object.get(input.run, "calls", [])',
        "f(doc) := doc.calls\nx := f(input.run)",
        'x if { some c in input.run.calls; c.tool == "a" }',
        'x if every c in input.run.calls { c.status == "SUCCEEDED" }',
        "x := [c | some c in input.run.calls]",
        "import input.run as r\nx if r.calls",
        "import input.run\nx if run.turn > 1",
    ],
)
def test_what_can_reach_the_history_counts_as_reading_it(body: str) -> None:
    assert reads(body)


@pytest.mark.parametrize(
    "body",
    [
        ALLOW,
        "x if input.call.args.seats > input.run.turn",
        'x if input["call"].tool == "a"',
        'x := input.run.labels[k] if k := "team"',
        "x if { some k; input.call.args[k] }",
        'import input.call as c\nx if c.tool == "a"',
        "x if data.callgate.config.tenants[input.identity.tenant]",
    ],
)
def test_references_elsewhere_do_not(body: str) -> None:
    assert not reads(body)


def test_the_default_bundle_sees_the_call_the_caller_and_the_approval(
    default_engine: EmbeddedEngine,
) -> None:
    seen = default_engine.visible(READ)
    assert set(seen) == {"call", "tool", "identity", "approval"}
    assert seen["call"] == {k: READ["call"][k] for k in ("tool", "effect", "args")}
    assert seen["identity"] == {k: READ["identity"][k] for k in ("subject", "roles", "tenant")}
    assert READ["run"]["calls"] and READ["now"], "the caller's input itself is left alone"


def test_paths_end_where_a_reference_stops_being_static() -> None:
    seen = view('x if input.run.labels[k] == "a"\ny := input.call.tool\nz := input.call').paths
    assert seen == {("run", "labels"), ("call", "tool"), ("call",)}
    projected = view("x if input.call.args[k]\ny := input.now").project(READ)
    assert projected == {"call": {"args": READ["call"]["args"]}, "now": READ["now"]}
    assert view("x := object.keys(input)").project(READ) is READ


def test_object_get_with_a_literal_key_reads_that_key_alone() -> None:
    body = 'x := object.get(input.call.args, "seats", 1)\ny := object.get(input.call, "tool", "")'
    assert view(body).paths == {("call", "args", "seats"), ("call", "tool")}
    args = {"seats": 2, "note": "window seat"}
    assert view(body).project({"call": {"args": args, "id": "c1"}}) == {
        "call": {"args": {"seats": 2}}
    }
    # a computed key, a path key or a default that reads the input keep what they would
    assert view("x := object.get(input.call.args, input.k, 1)").paths == {
        ("call", "args"),
        ("k",),
    }
    assert view('x := object.get(input.call.args, ["a", "b"], 1)').paths == {("call", "args")}
    assert view('x := object.get(input.a, "b", input.c)').paths == {("a", "b"), ("c",)}


def test_the_default_bundle_reuses_a_decision_across_arguments_it_does_not_read(
    default_engine: EmbeddedEngine,
) -> None:
    first = default_engine.decide(READ)
    dated = {**READ["call"]["args"], "date": "2026-12-24"}
    again = default_engine.decide(
        {**READ, "call": {**READ["call"], "args": dated, "args_sha256": "another"}}
    )
    assert again is first


def test_only_what_looks_at_the_clock_or_the_world_is_impure() -> None:
    assert view('x := sprintf("%v", [input.call.tool])').pure
    assert view("f(v) := v + 1\nx := f(2)").pure
    for body in (
        "x := time.now_ns()",
        'x := http.send({"method": "get", "url": "http://127.0.0.1:1"})',
        'x := uuid.rfc4122("a")',
        'x := rand.intn("a", 3)',
    ):
        assert not view(body).pure, body


@pytest.mark.parametrize(
    "ref",
    [
        "input.run.calls",
        'object.get(input.run, "calls", [])',
        '[c | some c in input["run"]["calls"]]',
    ],
)
def test_a_policy_that_reads_the_history_is_given_it(write_bundle: WriteBundle, ref: str) -> None:
    engine = load_engine(write_bundle({"p.rego": "package callgate\n" + NEEDS_EMPTY_HISTORY % ref}))
    assert engine.visible(READ)["run"]["calls"] == READ["run"]["calls"]
    decision = engine.decide(READ)
    assert decision.verdict is Verdict.DENY and decision.reasons == ("history seen",)
    empty = {**READ, "run": {**READ["run"], "calls": []}}
    assert engine.decide(empty).verdict is Verdict.ALLOW


async def test_the_digest_and_log_name_the_input_as_evaluated(
    write_bundle: WriteBundle, caplog: pytest.LogCaptureFixture
) -> None:
    engine = load_engine(write_bundle({"p.rego": f"package callgate\n{ALLOW}\n"}))
    serving = ReloadingEngine(engine, log_inputs=True)
    with caplog.at_level(logging.INFO, logger="callgate.decision_input"):
        decision = await serving.decide(READ)
    evaluated = input_json(engine.visible(READ))
    assert decision.input_sha256 == hashlib.sha256(evaluated.encode()).hexdigest()
    logged = json.loads(caplog.records[-1].getMessage())
    assert logged["input"] == engine.visible(READ) == {}, "the rule reads no input"


async def test_a_reload_to_a_reading_revision_gets_the_history_at_once(
    write_bundle: WriteBundle,
) -> None:
    blind = load_engine(write_bundle({"p.rego": f"package callgate\n{ALLOW}\n"}))
    serving = ReloadingEngine(blind)
    assert (await serving.decide(READ)).verdict is Verdict.ALLOW
    serving.install(
        load_engine(
            write_bundle(
                {"p.rego": "package callgate\n" + NEEDS_EMPTY_HISTORY % "input.run.calls"},
                name="second",
            )
        )
    )
    assert (await serving.decide(READ)).reasons == ("history seen",)


def test_a_pure_revision_decides_an_input_seen_before_from_its_memo(
    default_engine: EmbeddedEngine,
) -> None:
    first = default_engine.decide(READ)
    again = default_engine.decide(
        {**READ, "now": "2026-12-01T00:00:00Z", "call": {**READ["call"], "id": "call-2"}}
    )
    assert again is first, "what the policy cannot observe did not make a new input"
    other = default_engine.decide(
        {**READ, "call": {**READ["call"], "args": {"train_number": "TGV9"}}}
    )
    assert other is not first and other.verdict is Verdict.DENY


def test_a_revision_that_reads_the_clock_is_evaluated_every_time(write_bundle: WriteBundle) -> None:
    engine = load_engine(
        write_bundle(
            {
                "p.rego": "package callgate\n"
                'decision := {"allow": true, "reasons": '
                '[sprintf("%d", [time.now_ns()])]}\n'
            }
        )
    )
    decisions = {engine.decide(READ).reasons for _ in range(3)}
    assert len(decisions) == 3


def test_errors_are_not_remembered(write_bundle: WriteBundle) -> None:
    engine = load_engine(
        write_bundle(
            {
                "p.rego": "package callgate\n"
                'decision := {"allow": true, "reasons": '
                '[sprintf("%d", [1 / input.call.args.n])]}\n'
            }
        )
    )
    zero = call_input("t", "read", {"n": 0}, READ["identity"])
    first = engine.decide(zero)
    assert first.is_policy_error
    assert engine.decide(zero) is not first


def test_the_memo_is_bounded() -> None:
    memo = decision_memo()
    for i in range(memo.size + 10):
        memo.put(f"input {i}", f"decision {i}")  # type: ignore[arg-type]
    assert memo.get("input 0") is None and memo.get(f"input {memo.size + 9}")
    memo.put("x" * (memo.max_key_chars + 1), "long")  # type: ignore[arg-type]
    assert memo.get("x" * (memo.max_key_chars + 1)) is None


def _reference_projection(value: object, tree: object) -> object:
    """What a view keeps, by its definition: the tree's keys of an object, each by its subtree;
    anything else (and a whole subtree) as it is."""
    if tree is True or not isinstance(value, dict) or not isinstance(tree, dict):
        return value
    return {k: _reference_projection(value[k], below) for k, below in tree.items() if k in value}


_KEYS = st.sampled_from(["call", "args", "tool", "run", "calls", "now", "x"])
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_KEYS, inner, max_size=4),
    max_leaves=12,
)


@given(
    paths=st.frozensets(st.lists(_KEYS, min_size=1, max_size=3).map(tuple), max_size=5),
    value=st.dictionaries(_KEYS, _JSON, max_size=5),
)
def test_a_view_keeps_what_its_paths_name_and_nothing_else(
    paths: frozenset[tuple[str, ...]], value: dict[str, object]
) -> None:
    kept = InputView(paths, True).project(value)
    assert kept == _reference_projection(value, _tree(paths))
    assert json.dumps(kept) == json.dumps(_reference_projection(value, _tree(paths))), "order"
