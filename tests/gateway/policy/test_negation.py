"""`not` evaluates as in OPA 1.9: the operands OPA evaluates before the negation make the
expression undefined when they are (gateway/policy/negation.py). Every expected answer here
is what `opa eval` (1.9.0) gave for the same module and input."""

from __future__ import annotations

import json
from typing import Any

import pytest

from gateway.policy.engine import add_policy, new_engine, rewrite_source

UNDEFINED = "undefined"


def rules(module: str, input: Any) -> dict[str, Any]:
    engine = new_engine()
    add_policy(engine, "t.rego", "package t\n\n" + module)
    engine.set_input_json(json.dumps(input))
    out = json.loads(engine.eval_query_as_json("data.t"))
    value: dict[str, Any] = out["result"][0]["expressions"][0]["value"]
    return value


def rule(module: str, input: Any) -> Any:
    return rules(f"r if {module}\n", input).get("r", UNDEFINED)


@pytest.mark.parametrize(
    ("body", "input", "want"),
    [
        # a reference given to a call is evaluated first: undefined makes the expression undefined
        ("not is_string(input.call.tool)", {"call": {}}, UNDEFINED),
        ("not is_string(input.call.tool)", {"call": {"tool": 1}}, True),
        ("not is_string(input.call.tool)", {"call": {"tool": "x"}}, UNDEFINED),
        ("{ x := input.call; not is_string(x.tool) }", {"call": {}}, UNDEFINED),
        # so is a nested call, and the collection of `in`
        ("not count(input.missing) > 0", {}, UNDEFINED),
        ("not count(input.list) > 0", {"list": []}, True),
        ("not 1 in input.list", {}, UNDEFINED),
        ("not 1 in input.list", {"list": [2]}, True),
        # a key of a reference, a reference in a composite operand, a comparison's operands
        ("not data.roles[input.user]", {}, UNDEFINED),
        ("not [input.x] == [1]", {}, UNDEFINED),
        ("not input.x != 1", {}, UNDEFINED),
        ('not {"a": input.x}.a', {}, UNDEFINED),
        ("not f(input.x)", {}, UNDEFINED),
        # the expression's own reference stays inside, and so do the sides of == and =
        ("not input.x", {}, True),
        ("not input.x == 1", {}, True),
        ("not input.x = 1", {}, True),
        ("not input.obj[input.key]", {"obj": {}}, UNDEFINED),
        # a comprehension is always defined
        ("not count([y | y := input.x]) > 0", {}, True),
        # with modifiers apply to what is evaluated first as well
        ("not is_string(input.x) with input.x as 1", {}, True),
    ],
)
def test_what_opa_evaluates_before_the_negation(body: str, input: Any, want: Any) -> None:
    assert rules(f"r if {body}\n\nf(v) if v == 1\n", input).get("r", UNDEFINED) == want


def test_a_wildcard_in_a_nested_call_iterates_outside_the_negation() -> None:
    module = "package t\n\nr if { not count(input.list[_]) == 2 }\n"
    assert rule("{ not count(input.list[_]) == 2 }", {"list": ["ab", "abc"]}) is True
    assert rule("{ not count(input.list[_]) == 2 }", {"list": ["ab", "cd"]}) == UNDEFINED
    assert rule("{ not count(input.list[_]) == 2 }", {}) == UNDEFINED
    assert "__cgv0__ = count(input.list[_]); not __cgv0__ == 2" in rewrite_source("t", module)


def test_negations_in_comprehension_and_every_bodies() -> None:
    module = (
        "u := [1 | not 1 in input.l]\n\n"
        "w := [1 | not is_string(input.q)]\n\n"
        "e if every v in [1] { v == 1; not is_string(input.q) }\n"
    )
    assert rules(module, {}) == {"u": [], "w": []}
    assert rules(module, {"l": [2], "q": 3}) == {"u": [1], "w": [1], "e": True}


def test_the_future_not_keyword_keeps_everything_inside() -> None:
    """OPA 1.17's `import future.keywords.not` (which OPA 1.9 does not parse) opts out."""
    module = "import future.keywords.not\n\nr if not is_string(input.call.tool)\n"
    assert rewrite_source("t", module) == module
    assert rules(module, {"call": {}}) == {"r": True}


def test_lines_and_the_statement_stay_where_they_were() -> None:
    text = (
        "package t\n\nr if not is_string(input.call.tool)\n\ns if {\n"
        '\tnot count(deny) > 0 with input as {\n\t\t"a": 1,\n\t}\n\tinput.ok\n}\n'
        "\ndeny contains 1 if input.bad\n"
    )
    out = rewrite_source("t.rego", text)
    assert out.count("\n") == text.count("\n")
    for original, rewritten in zip(text.splitlines(), out.splitlines(), strict=True):
        if "not " in original:
            assert rewritten.index("not ") == original.index("not "), rewritten
    assert (
        'not count(deny) > 0 with input as {\n\t\t"a": 1,\n\t}; __cgd1__ = count(deny) with '
        'input as { "a": 1, }' in out
    )
    assert "r if{not is_string(input.call.tool); __cgd0__ = input.call.tool}" in out


def test_an_error_before_the_negation_is_reported_at_its_call() -> None:
    engine = new_engine()
    add_policy(engine, "t.rego", "package t\n\nr if {\n\tnot count(input.n) > 0\n}\n")
    engine.set_input_json('{"n": 5}')
    with pytest.raises(RuntimeError, match=r"t\.rego:4:"):
        engine.eval_query_as_json("data.t.r")


def test_sources_without_negations_or_that_do_not_parse_are_unchanged() -> None:
    for text in ("package t\n\nr if input.x\n", "package t\n\nr if not (\n"):
        assert rewrite_source("t.rego", text) == text
