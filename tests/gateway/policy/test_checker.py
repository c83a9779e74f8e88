"""The static checks run when policies load: OPA's type errors for builtin calls, unknown and
unavailable builtins; every problem with file, line and column."""

from __future__ import annotations

import json

import pytest

from gateway.policy import PolicyConfigError, load_engine
from gateway.policy.bundle import rules_of_engine
from gateway.policy.checker import check, refusals
from gateway.policy.rego import add_policy, new_engine
from tests.gateway.policy.conformance import all_cases
from tests.gateway.policy.inputs import DEFAULT_POLICIES, WriteBundle

UNSAFE = (
    "rego_unsafe_var_error: var {} is unsafe (a variable inside `not` must be bound "
    "outside it: bind it before the negation, or count with a comprehension)"
)


def problems(write_bundle: WriteBundle, body: str) -> list[str]:
    root = write_bundle(
        {
            "p.rego": f"package callgate\n\nimport data.lib\n\n{body}\n",
            "lib.rego": "package lib\n\ng(x) := x\n",
        }
    )
    with pytest.raises(PolicyConfigError) as info:
        load_engine(root)
    return [p.message.split("/bundle/", 1)[1] for p in info.value.problems]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            'x := concat(", ", 42)',
            "p.rego:5:19: rego_type_error: concat: invalid argument 2: have "
            "number, want array[string] or set[string]",
        ),
        (
            "x := upper(1)",
            "p.rego:5:12: rego_type_error: upper: invalid argument 1: have number, want string",
        ),
        (
            'x := upper("a", "b", "c")',
            "p.rego:5:6: rego_type_error: upper: arity mismatch: have 3 arguments, want 1",
        ),
        (
            "x := count()",
            "p.rego:5:6: rego_type_error: count: arity mismatch: have 0 arguments, want 1",
        ),
        ('x := nosuch("a")', "p.rego:5:6: rego_type_error: undefined function nosuch"),
        (
            'x := "a" + 1',
            "p.rego:5:6: rego_type_error: plus: invalid argument 1: have string, want number",
        ),
        (
            "x := {1} | [2]",
            "p.rego:5:12: rego_type_error: or: invalid argument 2: have array[number], want set",
        ),
        (
            'x if {\n  y := count(input.xs)\n  startswith(y, "1")\n}',
            "p.rego:7:14: rego_type_error: startswith: invalid argument 1: have number, "
            "want string",
        ),
        (
            'x := crypto.x509.parse_certificates("pem")',
            "p.rego:5:6: function crypto.x509.parse_certificates is not available in the embedded "
            "engine (regorus); use the OPA engine for this policy",
        ),
        # OPA 1.9 refuses these at compile time too (arity mismatch, invalid argument(s), ...)
        (
            "x := count([1], 1)",
            "p.rego:5:6: rego_type_error: count: arity mismatch: have 2 arguments, want 1",
        ),
        (
            'x if upper("a", 1)',
            "p.rego:5:17: rego_type_error: upper: invalid argument 2: have number, want string",
        ),
        (
            'x if sprintf("%v", [1], 1)',
            "p.rego:5:6: rego_type_error: match error: left is number, "
            "right string: the two sides can never be equal",
        ),
        (
            "x if [input.a] == 1",
            "p.rego:5:6: rego_type_error: match error: left is array, right "
            "number: the two sides can never be equal",
        ),
        (
            'x if {"a": input.a} = {"b": 1}',
            "p.rego:5:6: rego_type_error: match error: left is "
            "object, right object: the two sides can never be equal",
        ),
        (
            "f(v) := v\n\nx := f(1, 2)",
            "p.rego:7:6: rego_type_error: function data.callgate.f has arity 1, got 2 arguments",
        ),
        (
            "f(v) := v\n\nx := f()",
            "p.rego:7:6: rego_type_error: function data.callgate.f has arity 1, got 0 arguments",
        ),
        (
            "x := lib.g()",
            "p.rego:5:6: rego_type_error: function data.lib.g has arity 1, got 0 arguments",
        ),
        # what the engine would evaluate otherwise: refused, naming the way around it
        (
            "f(v) := v\n\nx := y if { y := f(1) with f as count }",
            "p.rego:7:33: `with f as count`: the embedded engine cannot take a builtin as the "
            "replacement; write a function that calls it (`mock_count(x) := count(x)`, with the "
            "builtin's arguments) and use `with f as mock_count`",
        ),
        (
            'm(t) := [true, {}, {}]\n\nx := y if { y := io.jwt.decode("t") '
            "with io.jwt.decode as m }",
            "p.rego:7:42: `with io.jwt.decode as m`: io.jwt.decode is a builtin callgate "
            "supplies to the embedded engine, which can replace it with a value but not with a "
            "function; run this test on the OPA engine (`policy test --engine opa`)",
        ),
        (
            "x := 1e-400 > 0",
            "p.rego:5:6: number 1e-400: too small for a 64-bit float: the embedded "
            "engine would make it 0, where OPA keeps it; use the OPA engine",
        ),
        (
            "x := 0.1000000000000000000001",
            "p.rego:5:6: number 0.1000000000000000000001: more "
            "digits than a 64-bit float holds: the embedded engine would round it, where OPA keeps "
            "it exact; use the OPA engine, or fewer digits",
        ),
        (
            "x := 1e400",
            "p.rego:5:6: a number beyond the range of a 64-bit float: the embedded "
            "engine's numbers are 64-bit floats, OPA's are not; use the OPA engine for it",
        ),
        # OPA 1.9 `opa check`: var ... is unsafe
        ('x if not startswith(input.names[_], "a")', f"p.rego:5:33: {UNSAFE.format('_')}"),
        ("x if { some i; not input.names[i] }", f"p.rego:5:32: {UNSAFE.format('i')}"),
    ],
)
def test_problem_reported_with_place(write_bundle: WriteBundle, body: str, message: str) -> None:
    assert problems(write_bundle, body) == [message]


def test_a_guarded_term_is_reported_once(write_bundle: WriteBundle) -> None:
    """The term OPA evaluates before a negation is copied into a guard: its type error is still
    one problem, at the place written."""
    assert problems(write_bundle, 'x if not concat(", ", 42) == ""') == [
        "p.rego:5:23: rego_type_error: concat: invalid argument 2: have number, want "
        "array[string] or set[string]"
    ]


def test_every_problem_is_reported_not_just_the_first(write_bundle: WriteBundle) -> None:
    found = problems(write_bundle, 'a := concat(", ", 42)\n\nb := upper(1)\n\nc := nosuch()')
    assert [m.split(":")[1] for m in found] == ["5", "7", "9"]


@pytest.mark.parametrize(
    "body",
    [
        'x := concat(", ", input.names)',  # input is any
        'x := concat(", ", ["a", "b"])',
        'x := concat(", ", {"a"})',
        "x := upper(lib.g(1))",  # a function's result is any
        "x := count([1]) + 1",
        'x if upper("a", "A")',  # the output argument form
        'f(v) := upper(v)\n\nx := f("a")',
        "x := {1} - {2}",
        'x := sprintf("%d", [count(input.xs)])',
        'x := io.jwt.decode("a.b.c")',  # supplied builtins are available
        # bound outside the negation, or evaluated before it (a nested call), or local to a
        # comprehension: OPA accepts these
        "x if { some name in input.names; not startswith(name, lib.g(name)) }",
        "x if not count(input.names[_]) == 2",
        "x if not count([n | n := input.names[_]]) == 2",
        "f(v) if not v\n\nx if f(input.a)",
        "x if every v in input.names { not v == 1 }",
        'x if not concat(", ", ["a"]) == "b"',
        # an output argument where the call is a statement; functions in either form
        "x if count([1], 1)",
        'x if upper("a", "A")',
        "f(v) := v\n\nx if f(1, 1)",
        "x := lib.g(1)",
        "x := data.lib.g(1)",
        # a value may replace a supplied builtin; a function may replace an engine builtin
        'x := y if { y := io.jwt.decode("t") with io.jwt.decode as [{}, {}, ""] }',
        "m(v) := 1\n\nx := y if { y := count([1]) with count as m }",
        "x := 0.1",
        "x := 123456789012345678901234567890",
        "x := 1.5e300",
        # a comparison that is a value, not a statement, is not a unification to OPA
        "x := [1] == 1",
        "x := a if { [a, b] = [1, input.b] }",
        'x if { {"a": y} = input; y }',
        "x if { y := [input.a]; y == [1] }",
    ],
)
def test_well_typed_or_unknown_types_pass(write_bundle: WriteBundle, body: str) -> None:
    root = write_bundle(
        {
            "p.rego": f"package callgate\n\nimport data.lib\n\n{body}\n",
            "lib.rego": "package lib\n\ng(x) := x\n",
        }
    )
    load_engine(root)


def test_default_policies_pass() -> None:
    load_engine(DEFAULT_POLICIES)


# Modules OPA accepts that callgate refuses on purpose, each with a message naming the construct
# (gateway/policy/fidelity.py).
REFUSED_ON_PURPOSE = {
    "withkeyword/builtin: nested, multiple mocks",  # with a supplied builtin replaced
    "withkeyword/builtin-builtin: arity 0",  # with a builtin as the replacement
    "withkeyword/builtin-builtin: arity 1, replacement is compound",
    "withkeyword/builtin-builtin: arity 1, replacement is simple",
    "withkeyword/function: direct call, built-in replacement, arity 1",
    "withkeyword/function: direct call, built-in replacement, arity 1, result captured",
}


def test_no_opa_conformance_module_is_refused() -> None:
    """Modules OPA accepts (cases that expect a result) pass the checker: no false alarms,
    beyond the constructs refused on purpose."""
    refused = []
    for case in all_cases():
        if case.want is None:
            continue
        engine = new_engine(rego_v0=case.rego_v0)
        try:
            for index, module in enumerate(case.modules):
                add_policy(engine, f"m{index}.rego", module)
            if case.data is not None:
                engine.add_data_json(json.dumps(case.data))
            engine.eval_query("true")
        except RuntimeError:
            if refusals(engine):
                refused.append(case.note)
            continue  # otherwise the engine itself refuses it: see the conformance test
        if check(engine, rules_of_engine(engine)):
            refused.append(case.note)
    assert sorted(refused) == sorted(REFUSED_ON_PURPOSE)
