"""sprintf, to_number, object.subset, yaml.is_valid, regex.replace and walk as OPA 1.9 answers
them (every expected value here is what `opa eval` 1.9.0 gave, except where OPA keeps a
number the engine refuses: those refusals are callgate's own)."""

from __future__ import annotations

import pytest

from gateway.policy import load_engine
from gateway.policy.builtins.gostrconv import format_float
from gateway.policy.embedded import PolicyEvalError
from tests.gateway.policy.builtins.support import rego, rego_error
from tests.gateway.policy.inputs import WriteBundle

SPRINTF = [
    # arity: Go writes what is missing or left over instead of failing
    ('"%v %v", [1]', "1 %!v(MISSING)"),
    ('"%v", [1, 2]', "1%!(EXTRA int=2)"),
    ('"", ["a", [1], {"b": 1}]', '%!(EXTRA string=a, string=[1], string={"b": 1})'),
    ('"%d %s", ["a", 1]', "%!d(string=a) %!s(int=1)"),
    ('"abc%", []', "abc%!(NOVERB)"),
    # flags, width, precision, indexes, as Go's fmt
    ('"%5s|%-5s|%05d|%+d|% d", ["ab", "cd", -42, 5, 5]', "   ab|cd   |-0042|+5| 5"),
    ('"%x %X %o %b %#x %c %U", [255, 255, 8, 5, 255, 65, 9731]', "ff FF 10 101 0xff A U+2603"),
    (
        '"%.2f %e %g %v %v", [3.14159, 1234.5, 0.0001234, 0.1, 123456789.5]',
        "3.14 1.234500e+03 0.0001234 0.1 1.234567895e+08",
    ),
    ('"%q %x % x", ["a\\"b", "hi", "hi"]', '"a\\"b" 6869 68 69'),
    ('"%[2]s %[1]s %*d|%[3]*[4]d", ["a", "b", 3, 7]', "b a %!(BADWIDTH)3|  7"),
    ('"%5s|%05d", [65, 2.5]', "%!s(int=   65)|%!d(float64=002.5)"),
    # values that are not strings or numbers are their Rego text, as a Go string
    (
        '"%v %v %v %v %v", [true, null, [1, "a"], {"b": 1, "a": [true]}, {3, 1}]',
        'true null [1, "a"] {"a": [true], "b": 1} {1, 3}',
    ),
    ('"%v %s %t", [set(), {}, true]', "set() {} %!t(string=true)"),
    # integers beyond 64 bits, as big.Int
    (
        '"%d %x %v", [9223372036854775808, 9223372036854775808, 18446744073709551615]',
        "9223372036854775808 8000000000000000 18446744073709551615",
    ),
]


@pytest.mark.parametrize(("args", "want"), SPRINTF)
def test_sprintf_is_gos_fmt(args: str, want: str) -> None:
    assert rego(f"sprintf({args})") == want


# sets of arrays, objects or sets, which the engine cannot hand to Python as they are: a
# policy's calls are given a copy that it can (gateway.policy.crossing)
SPRINTF_OF_SETS = [
    ('"%v", [{[1]}]', "{[1]}"),
    (
        '"%v|%s", [{{"b": 1}, {"a": [true]}}, [{{2}, {1}}]]',
        '{{"a": [true]}, {"b": 1}}|[{{1}, {2}}]',
    ),
    (
        '"%d %v", [{{"a": 1}}, {"k": {{"x": {{1}}}}}]',
        '%!d(string={{"a": 1}}) {"k": {{"x": {{1}}}}}',
    ),
    ('"%v %s", [{{"msg": "x", "details": {}}}, "plain"]', '{{"details": {}, "msg": "x"}} plain'),
]


@pytest.mark.parametrize(("args", "want"), SPRINTF_OF_SETS)
def test_sprintf_formats_sets_of_compound_values(
    args: str, want: str, write_bundle: WriteBundle
) -> None:
    root = write_bundle({"p.rego": f"package callgate\n\nx := sprintf({args})\n"})
    assert load_engine(root).eval_raw("x", {}) == want


def test_sprintf_that_cannot_have_its_arguments_says_why(write_bundle: WriteBundle) -> None:
    assert "a number of 2^64 or more" in rego_error('sprintf("%v", [18446744073709551616])')
    assert "operand 2 must be array but got object" in rego_error('sprintf("%v", {})')
    for args in ('"%v", [{[1]: 2}]', '"%v", [{{{{{{[1]}}}}}}]'):  # keyed by one; too deep
        root = write_bundle({"p.rego": f"package callgate\n\nx := sprintf({args})\n"})
        with pytest.raises(PolicyEvalError, match="a set of arrays or objects"):
            load_engine(root).eval_raw("x", {})
    # the wrapped call keeps the author's line in its error
    root = write_bundle({"p.rego": 'package callgate\n\nx := sprintf("%v", input.v)\n'}, "line")
    with pytest.raises(PolicyEvalError) as failed:
        load_engine(root).eval_raw("x", {"v": {}})
    assert "p.rego:3:" in failed.value.message and "must be array" in failed.value.message


@pytest.mark.parametrize(
    ("value", "fmt", "prec", "want"),
    [
        (1e6, "g", -1, "1e+06"),
        (123456.0, "g", -1, "123456"),
        (0.00001, "g", -1, "1e-05"),
        (1.0, "g", 3, "1"),
        (0.009, "f", 2, "0.01"),
        (2.5, "f", 0, "2"),
        (3.5, "f", 0, "4"),
        (9.999, "e", 2, "1.00e+01"),
        (1.5, "x", -1, "0x1.8p+00"),
        (1.5, "x", 0, "0x1p+01"),
        (1.0, "b", -1, "4503599627370496p-52"),
        (0.0, "e", 6, "0.000000e+00"),
    ],
)
def test_floats_are_written_as_go_writes_them(value: float, fmt: str, prec: int, want: str) -> None:
    assert format_float(value, fmt, prec) == want


@pytest.mark.parametrize(
    ("expr", "want"),
    [
        # OPA keeps these as the text given, which it cannot write as JSON: add 0 to see them
        ('to_number("+1") + 0', 1),
        ('to_number(".5") + 0', 0.5),
        ('to_number("1.") + 0', 1),
        ('to_number("01") + 0', 1),
        ('to_number("1_000") + 0', 1000),
        ('to_number("0x1p4") + 0', 16),
        ('to_number("1e3")', 1000),
        ('to_number("-0")', 0),
        ('to_number("9223372036854775808")', 9223372036854775808),
        ('to_number("0.1")', 0.1),
        ('to_number("1.5e-7")', 1.5e-7),
        ("to_number(null)", 0),
        ("to_number(true)", 1),
        ("to_number(2.5)", 2.5),
    ],
)
def test_to_number_reads_what_go_parses(expr: str, want: float) -> None:
    assert rego(expr) == want


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('" 1"', 'strconv.ParseFloat: parsing " 1": invalid syntax'),
        ('"0x10"', "invalid syntax"),
        ('"1__0"', "invalid syntax"),
        ('""', "invalid syntax"),
        ('"inf"', "operand 1 must be valid number string but got string"),
        ('"1e400"', 'parsing "1e400": value out of range'),
        # beyond what the engine holds exactly: refused, never another number (OPA keeps them)
        ('"123456789012345678901234567890"', "is an integer beyond 64 bits"),
        ('"18446744073709551616"', "is an integer beyond 64 bits"),
        ('"1e308"', "beyond 64 bits"),
        ('"0.1000000000000000000001"', "is a decimal with more digits than a 64-bit float holds"),
        ('"1e-400"', "is too small for a 64-bit float"),
        ("data.t.array", "operand 1 must be one of {null, boolean, number, string} but got array"),
    ],
)
def test_to_number_refuses_as_opa_does_and_never_rounds_quietly(text: str, message: str) -> None:
    error = rego_error(f"to_number({text})", array=[1])
    assert error.startswith("to_number failed at t.rego:3:")
    assert message in error
    assert "not an i64" not in error


@pytest.mark.parametrize(
    ("args", "want"),
    [
        ('{"a": {"b": 1, "c": 2}}, {"a": {"b": 1}}', True),
        ('{"a": [1, 2, 3]}, {"a": [2, 3]}', True),
        ("[1, 1, 2], [1, 2]", True),
        ("[1, 2, 3], [1, 3]", False),
        ("[], []", True),
        ("{1, 2}, {1}", True),
        ("[1, 2], {2}", True),
        ("[1], set()", True),
        ("[], set()", False),
    ],
)
def test_object_subset(args: str, want: bool) -> None:
    assert rego(f"object.subset({args})") is want


@pytest.mark.parametrize(("sup", "sub"), [(None, {}), ("a", "a"), ([], {"a": 1}), ({}, [])])
def test_object_subset_of_different_kinds_is_a_type_error(sup: object, sub: object) -> None:
    assert "both arguments object.subset must be of the same type or array and set" in rego_error(
        "object.subset(data.t.sup, data.t.sub)", sup=sup, sub=sub
    )


def test_yaml_is_valid_reads_the_first_document_as_opa_19() -> None:
    docs = [
        '"a: 1\\n---\\n\\tb: 2\\n"',
        '"a: {"',
        "1",
        '"a: b: c"',
        '"%YAML 1.2\\n---\\na: 1"',
        '"{\\"json\\": \\"ok\\"}"',
    ]
    assert rego(f"[yaml.is_valid(d) | some d in [{', '.join(docs)}]]") == [
        True,
        False,
        False,
        False,
        False,
        True,
    ]


def test_regex_replace_with_a_bad_pattern_is_an_error() -> None:
    assert rego('regex.replace("a.b", "(\\\\w)\\\\.(\\\\w)", "$2.$1")') == "b.a"
    assert "error parsing regexp" in rego_error('regex.replace("foo", "[", "x")')


def test_walks_value_form_iterates_as_its_output_form() -> None:
    pairs = rego('[[p, v] | [p, v] := walk({"a": [1]})]')
    assert pairs == [[[], {"a": [1]}], [["a"], [1]], [["a", 0], 1]]
    assert rego("[w | w := walk([1])]") == [[[], [1]], [[0], 1]]


def test_a_rule_value_the_engine_cannot_hand_back_says_why(write_bundle: WriteBundle) -> None:
    policy = "package callgate\n\nbig := 2 * 18446744073709551616\n"
    engine = load_engine(write_bundle({"p.rego": policy}))
    with pytest.raises(PolicyEvalError) as info:
        engine.eval_raw("big", {})
    assert "a number of 2^64 or more" in info.value.message
    assert "not an i64" not in info.value.message


def test_yaml_is_valid_where_python_would_raise_answers_as_opa_19() -> None:
    """What PyYAML cannot make of a text raised out of the builtin (a policy error) where OPA
    answers false; an integer too long for Python OPA reads (as a string): true. The answers
    are OPA 1.9's, asked of it."""
    docs = {
        'x: !!float "x"': False,
        "x: !!bool maybe": False,
        'x: !!int "x"': False,
        'x: "\\UFFFFFFFF"': False,
        'x: "\\ud800"': False,
        "x: " + "7" * 5000: True,
        "x: 0x" + "f" * 5000: True,
        "x: 1": True,
    }
    listed = ", ".join(f"`{d}`" for d in docs)
    assert rego(f"[yaml.is_valid(d) | some d in [{listed}]]") == list(docs.values())


def _laughs(levels: int) -> str:
    """Each level an alias list of ten of the one before: 10^(levels + 1) values expanded."""
    lines = ['a0: &a0 ["x", "x", "x", "x", "x", "x", "x", "x", "x", "x"]']
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, levels + 1)]
    return "\n".join(lines) + "\n"


def test_yaml_is_valid_refuses_the_aliasing_opa_19_refuses() -> None:
    """OPA's YAML reader decodes an alias again where PyYAML shares it, and refuses a
    document that is nearly all alias expansions past a small size, or an alias inside what it
    names: answers asked of a real OPA 1.9 (go-yaml's rule is checked on the value PyYAML
    makes, so a billion laughs is refused after a few thousand values, not expanded)."""
    docs = {
        _laughs(2): True,  # 1,110 values: small enough
        _laughs(3): False,
        _laughs(8): False,
        "b: &b [1, 2]\nc: [*b, *b]\n": True,
        "a: &a [*a]\n": False,
        "a: &a {k: *a}\n": False,
        "x: [" + ", ".join(["1"] * 5_000) + "]\n": True,  # past 1,000 values, no alias
    }
    assert rego("[yaml.is_valid(d) | some d in data.t.docs]", docs=list(docs)) == list(
        docs.values()
    )


def test_yaml_is_valid_on_infinities_answers_as_opa_19() -> None:
    """OPA's reader turns the text into JSON: an infinity or NaN value has none (false), but
    an untagged number too large for a double is a string to it, and a key is written as text
    whatever it holds (true). Answers asked of a real OPA 1.9."""
    docs = {
        "x: .inf": False,
        "x: -.INF": False,
        "x: .nan": False,
        "x: !!float 1e400": False,
        "[.inf]": False,
        "x: 1e400": True,
        "x: !!str 1e400": True,
        "x: 1e308": True,
        "{.inf: 1}": True,
        "x: '.inf'": True,
    }
    assert rego("[yaml.is_valid(d) | some d in data.t.docs]", docs=list(docs)) == list(
        docs.values()
    )
