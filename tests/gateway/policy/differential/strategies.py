"""Hypothesis strategies for small Rego modules around the constructs where the embedded
engine and OPA 1.9 used to differ, and the inputs to evaluate them with.

Each case is a module of package `t` defining `r` (and whatever `r` uses), and an input. The
topics: `not` over operands that may be undefined, `sprintf` with any number of arguments and
verbs, numbers beyond 64 bits and `to_number`, the object builtins on values that are not
objects, and builtins called with too few or too many arguments. `record_opa_answers.py`
draws a fixed corpus from them and records what OPA answers.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

Case = dict[str, Any]

# -- values -----------------------------------------------------------------------------------

SCALARS: list[Any] = [None, True, False, 0, 1, -7, 2.5, "", "a", "abc", "1"]
JSON = st.recursive(
    st.sampled_from(SCALARS),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(["a", "b", "k"]), inner, max_size=2)
    ),
    max_leaves=4,
)

MISSING = object()  # a key left out of the input


def rego(value: Any) -> str:
    """A JSON value written as a Rego term."""
    return json.dumps(value)


@st.composite
def inputs(draw: st.DrawFn) -> dict[str, Any]:
    """An input over the keys the modules read, any of them missing."""
    out: dict[str, Any] = {}
    for key in ("a", "l", "o", "k"):
        value = draw(st.one_of(st.just(MISSING), JSON))
        if value is not MISSING:
            out[key] = value
    if draw(st.booleans()):
        out["call"] = draw(st.sampled_from([{}, {"tool": "x"}, {"tool": 3}, {"tool": None}]))
    return out


# -- negation ---------------------------------------------------------------------------------

OPERANDS = [
    "input.a",
    "input.call.tool",
    "input.l",
    "input.l[0]",
    "input.o.a",
    "[input.a]",
    '{"k": input.a}',
    "input.o[input.k]",
    "x",
    "v",
    "u",
    'object.get(input, "a", 0)',
    "count(input.l)",
    "input",
]
NEGATIONS = [
    "not is_string({0})",
    "not is_number({0})",
    'not startswith({0}, "a")',
    "not count({0}) > 0",
    "not 1 in {0}",
    "not {0} == 1",
    "not {0} != 1",
    "not {0}",
    "not {0} = 1",
    "not data.t.s[{0}]",
    "not f({0})",
    'not is_string({0}) with input.a as "w"',
    "not count({0}) == 2",
]
HELPERS = (
    'v := input.a\n\ns contains 1\n\ns contains "a"\n\nf(y) if y == 1\n\nu := input.nothing.there\n'
)


@st.composite
def negations(draw: st.DrawFn) -> Case:
    negation = draw(st.sampled_from(NEGATIONS)).format(draw(st.sampled_from(OPERANDS)))
    shape = draw(st.sampled_from(["body", "comprehension", "function", "else"]))
    if shape == "body":
        rule = f'r if {{\n\tx := object.get(input, "a", "d")\n\t{negation}\n}}\n'
    elif shape == "comprehension":
        rule = f'r := [1 | x := object.get(input, "a", "d"); {negation}]\n'
    elif shape == "function":
        rule = f"g(x) if {negation}\n\nr if g(input.a)\n"
    else:
        rule = f'r := 1 if {{\n\tx := object.get(input, "a", "d")\n\t{negation}\n}} else := 2\n'
    return {
        "topic": "negation",
        "module": f"package t\n\n{rule}\n{HELPERS}",
        "input": draw(inputs()),
    }


# -- sprintf ----------------------------------------------------------------------------------

VERBS = [
    "%v",
    "%s",
    "%d",
    "%q",
    "%x",
    "%X",
    "%5s",
    "%-5s|",
    "%05d",
    "%.2f",
    "%e",
    "%g",
    "%t",
    "%c",
    "%U",
    "%+d",
    "%#x",
    "%[1]v",
    "%[2]s",
    "%*d",
    "%.1s",
    "%8.3f",
    "%o",
    "%b",
    "%#v",
    "%T",
    "%%",
    "%!",
    "% d",
    "%G",
    "%E",
    "%.0f",
    "%x",
]
ARGS = st.one_of(
    st.sampled_from(
        SCALARS + [65, 255, -1.5, 1e21, 0.1, 1e-7, 123456.0, 1234567.0, "ü", 'q"t', "a\nb"]
    ),
    st.lists(st.sampled_from(SCALARS), max_size=2),
    st.dictionaries(st.sampled_from(["b", "a"]), st.sampled_from(SCALARS), max_size=2),
)
LITERALS = ["", "x", " ", "tool ", "=", "%%", "é"]
SETS = ['{1, "a"}', "set()", '{"b", "a", null}', "{[1], [2]}", '{{"a": 1}}']


@st.composite
def sprintfs(draw: st.DrawFn) -> Case:
    pieces = draw(
        st.lists(
            st.tuples(st.sampled_from(LITERALS), st.sampled_from(VERBS)), min_size=0, max_size=3
        )
    )
    trailer = draw(st.sampled_from(["", "!", "%"]))
    fmt = "".join(a + b for a, b in pieces) + trailer
    args = draw(st.lists(ARGS, max_size=4))
    terms = [rego(a) for a in args]
    if terms and draw(st.booleans()):  # a set among the arguments
        terms[0] = draw(st.sampled_from(SETS))
    module = f"package t\n\nr := sprintf({rego(fmt)}, [{', '.join(terms)}])\n"
    return {"topic": "sprintf", "module": module, "input": {}}


# -- numbers ----------------------------------------------------------------------------------

NUMBER_TEXTS = [
    "1",
    "-1",
    "+1",
    "01",
    "1.5",
    ".5",
    "1.",
    "1e3",
    "1E3",
    "0x10",
    "1_000",
    " 1",
    "inf",
    "NaN",
    "-Infinity",
    "9223372036854775807",
    "9223372036854775808",
    "18446744073709551615",
    "18446744073709551616",
    "123456789012345678901234567890",
    "-123456789012345678901234567890",
    "1e400",
    "1e-400",
    "0.1000000000000000000001",
    "-0",
    "",
    "abc",
    "1e308",
    "2.5e-3",
    "100000000000000000000",
]
NUMBER_USES = [
    "to_number({0})",
    "to_number({0}) == 123456789012345678901234567890",
    "to_number({0}) > 0",
    "format_int(to_number({0}), 10)",
    "is_number(to_number({0}))",
    "to_number({0}) + 1",
]
BIG_LITERALS = [
    "123456789012345678901234567890 + 1 == 123456789012345678901234567891",
    "18446744073709551616 > 18446744073709551615",
    "9223372036854775807 + 1",
    "format_int(18446744073709551616, 10)",
    "1e400 > 1e399",
    "0.1 + 0.2 == 0.3",
    "12345678901234567890123 * 10",
    "count([18446744073709551616]) == 1",
]


@st.composite
def numbers(draw: st.DrawFn) -> Case:
    if draw(st.booleans()):
        expr = draw(st.sampled_from(BIG_LITERALS))
        return {"topic": "numbers", "module": f"package t\n\nr := {expr}\n", "input": {}}
    text = draw(st.sampled_from(NUMBER_TEXTS))
    use = draw(st.sampled_from(NUMBER_USES))
    how = draw(st.sampled_from(["literal", "input"]))
    operand = rego(text) if how == "literal" else "input.a"
    value = draw(st.sampled_from([text, None, True, 3, 2.5])) if how == "input" else text
    return {
        "topic": "numbers",
        "module": f"package t\n\nr := {use.format(operand)}\n",
        "input": {"a": value} if how == "input" else {},
    }


# -- object builtins --------------------------------------------------------------------------

OBJECT_CALLS = [
    'object.get({0}, "a", 0)',
    'object.get({0}, ["a", "b"], 0)',
    "object.get({0}, [], 0)",
    "object.keys({0})",
    'object.remove({0}, ["a"])',
    "object.remove({1}, {0})",
    "object.union({0}, {1})",
    "object.union({1}, {0})",
    "object.union_n([{0}, {1}])",
    'object.filter({0}, ["a"])',
    "object.filter({1}, {0})",
    "object.subset({0}, {1})",
    "object.subset({1}, {0})",
    'json.filter({0}, ["a"])',
    'json.remove({0}, ["a"])',
]
OBJECT_VALUES = [
    "null",
    "1",
    '"a"',
    "[1, 2]",
    '["a"]',
    '{"a": 1}',
    '{"a": {"b": 2}}',
    "{1}",
    "set()",
    "{}",
    '{"a": 1, "b": 2}',
]


@st.composite
def objects(draw: st.DrawFn) -> Case:
    call = draw(st.sampled_from(OBJECT_CALLS))
    first, second = draw(st.sampled_from(OBJECT_VALUES)), draw(st.sampled_from(OBJECT_VALUES))
    if draw(st.booleans()):  # the values at run time, where no type is known before
        rule = f"r := {call.format('input.a', 'input.o')}\n"
        payload = {"a": json.loads(_json_of(first)), "o": json.loads(_json_of(second))}
        return {"topic": "objects", "module": f"package t\n\n{rule}", "input": payload}
    return {
        "topic": "objects",
        "module": f"package t\n\nr := {call.format(first, second)}\n",
        "input": {},
    }


def _json_of(term: str) -> str:
    return {"{1}": "[1]", "set()": "[]"}.get(term, term)


# -- arity ------------------------------------------------------------------------------------

ARITY_CALLS = {
    "count": ["[1]"],
    "is_string": ['"a"'],
    "startswith": ['"ab"', '"a"'],
    "object.get": ['{"a": 1}', '"a"', "0"],
    "concat": ['","', '["a"]'],
    "sprintf": ['"%v"', "[1]"],
    "upper": ['"a"'],
    "abs": ["-1"],
    "regex.match": ['"a"', '"a"'],
    "trim_space": ['" a "'],
    "json.is_valid": ['"{}"'],
    "array.flatten": ["[[1]]"],
    "f": ["1"],
    "strings.count": ['"aa"', '"a"'],
}


@st.composite
def arities(draw: st.DrawFn) -> Case:
    name = draw(st.sampled_from(sorted(ARITY_CALLS)))
    args = list(ARITY_CALLS[name])
    delta = draw(st.sampled_from([-1, 0, 1, 2]))
    args = args[: len(args) + delta] if delta < 0 else args + ["1"] * delta
    call = f"{name}({', '.join(args)})"
    where = draw(st.sampled_from(["value", "statement"]))
    rule = f"r := {call}\n" if where == "value" else f"r if {call}\n"
    return {"topic": "arity", "module": f"package t\n\n{rule}\nf(x) := x\n", "input": {}}


CASES = st.one_of(negations(), sprintfs(), numbers(), objects(), arities())
