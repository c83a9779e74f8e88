"""The static checks run when policies load: OPA's type errors for builtin calls, unknown and
unavailable builtins; every problem with file, line and column."""

from __future__ import annotations

import json

import pytest

from gateway.policy import PolicyConfigError, load_engine
from gateway.policy.bundle import rules_of_engine
from gateway.policy.checker import check
from gateway.policy.engine import add_policy, new_engine
from tests.gateway.policy.conformance import all_cases
from tests.gateway.policy.inputs import DEFAULT_POLICIES, WriteBundle

UNSAFE = ("rego_unsafe_var_error: var {} is unsafe (a variable inside `not` must be bound "
          "outside it: bind it before the negation, or count with a comprehension)")


def problems(write_bundle: WriteBundle, body: str) -> list[str]:
    root = write_bundle({"p.rego": f"package callgate\n\nimport data.lib\n\n{body}\n",
                         "lib.rego": "package lib\n\ng(x) := x\n"})
    with pytest.raises(PolicyConfigError) as info:
        load_engine(root)
    return [p.message.split("/bundle/", 1)[1] for p in info.value.problems]


@pytest.mark.parametrize(("body", "message"), [
    ('x := concat(", ", 42)', "p.rego:5:19: rego_type_error: concat: invalid argument 2: have "
                             "number, want array[string] or set[string]"),
    ("x := upper(1)", "p.rego:5:12: rego_type_error: upper: invalid argument 1: have number, "
                      "want string"),
    ('x := upper("a", "b", "c")', "p.rego:5:6: rego_type_error: upper: arity mismatch: have "
                                  "3 arguments, want 1"),
    ("x := count()", "p.rego:5:6: rego_type_error: count: arity mismatch: have 0 arguments, "
                     "want 1"),
    ('x := nosuch("a")', "p.rego:5:6: rego_type_error: undefined function nosuch"),
    ('x := "a" + 1', "p.rego:5:6: rego_type_error: plus: invalid argument 1: have string, want "
                     "number"),
    ("x := {1} | [2]", "p.rego:5:12: rego_type_error: or: invalid argument 2: have "
                       "array[number], want set"),
    ('x if {\n  y := count(input.xs)\n  startswith(y, "1")\n}',
     "p.rego:7:14: rego_type_error: startswith: invalid argument 1: have number, want string"),
    ('x := crypto.x509.parse_certificates("pem")',
     "p.rego:5:6: function crypto.x509.parse_certificates is not available in the embedded "
     "engine (regorus); use the OPA engine for this policy"),
    # OPA 1.9 `opa check`: var ... is unsafe
    ('x if not startswith(input.names[_], "a")', f"p.rego:5:33: {UNSAFE.format('_')}"),
    ("x if { some i; not input.names[i] }", f"p.rego:5:32: {UNSAFE.format('i')}"),
])
def test_problem_reported_with_place(write_bundle: WriteBundle, body: str,
                                     message: str) -> None:
    assert problems(write_bundle, body) == [message]


def test_a_guarded_term_is_reported_once(write_bundle: WriteBundle) -> None:
    """The term OPA evaluates before a negation is copied into a guard: its type error is still
    one problem, at the place written."""
    assert problems(write_bundle, 'x if not concat(", ", 42) == ""') == [
        "p.rego:5:23: rego_type_error: concat: invalid argument 2: have number, want "
        "array[string] or set[string]"]


def test_every_problem_is_reported_not_just_the_first(write_bundle: WriteBundle) -> None:
    found = problems(write_bundle, 'a := concat(", ", 42)\n\nb := upper(1)\n\nc := nosuch()')
    assert [m.split(":")[1] for m in found] == ["5", "7", "9"]


@pytest.mark.parametrize("body", [
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
])
def test_well_typed_or_unknown_types_pass(write_bundle: WriteBundle, body: str) -> None:
    root = write_bundle({"p.rego": f"package callgate\n\nimport data.lib\n\n{body}\n",
                         "lib.rego": "package lib\n\ng(x) := x\n"})
    load_engine(root)


def test_default_policies_pass() -> None:
    load_engine(DEFAULT_POLICIES)


def test_no_opa_conformance_module_is_refused() -> None:
    """Modules OPA accepts (cases that expect a result) pass the checker: no false alarms."""
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
            continue  # the engine itself refuses it: counted by the conformance test
        found = check(engine, rules_of_engine(engine))
        if found:
            refused.append(f"{case.note}: {found[0].message}")
    assert refused == []
