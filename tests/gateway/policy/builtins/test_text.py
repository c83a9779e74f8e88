"""regex.globs_match, strings.render_template, and the builtins replaced for OPA's answers."""

from __future__ import annotations

import pytest

from tests.gateway.policy.builtins.support import rego, rego_error

# The glob-intersection library's own vectors (OPA's implementation uses it).
INTERSECTING = {
    "abcd": ["abcd", "....", "[a-d]*"],
    "pqrs": [".qrs", "p.rs", "pq.s", "pqr."],
    ".*": ["asdklfj", "jasdfh", "asdhfajfh", "asdflkasdfjl"],
    "d*": ["[abcd][abcd]", "d[a-z]+", ".....", "[d]*"],
    "[a-p]+": ["[p-z]+", "apapapaapapapap", ".*", "abcdefgh*"],
    "abcd[a-c]z+": ["abcd[b-d][yz]*", "abcdazzzz", "abcdbzzz", "abcdcz"],
    ".*\\\\": [".*"],
    ".a.a": ["b.b.", "c.c.", "d.d.", "e.e."],
}
DISJOINT = {
    "abcd": ["lsdfhda", "abcdla", "asdlfk", "ksdfj"],
    "[a-d]+": ["xyz", "p+", "[e-f]+"],
    "[0-9]*": ["[a-z]", "\\*"],
    "mamama.*": ["dadada.*", "nanana.*"],
    ".*mamama": [".*dadada", ".*nanana"],
    ".xyz.": ["paaap", ".*pqr.*"],
}


def _quoted(glob: str) -> str:
    return glob.replace("\\", "\\\\")


@pytest.mark.parametrize(("a", "b"), [(a, b) for a, bs in INTERSECTING.items() for b in bs])
def test_globs_that_share_a_string(a: str, b: str) -> None:
    assert rego(f'regex.globs_match("{_quoted(a)}", "{_quoted(b)}")') is True
    assert rego(f'regex.globs_match("{_quoted(b)}", "{_quoted(a)}")') is True


@pytest.mark.parametrize(("a", "b"), [(a, b) for a, bs in DISJOINT.items() for b in bs])
def test_globs_that_share_none(a: str, b: str) -> None:
    assert rego(f'regex.globs_match("{_quoted(a)}", "{_quoted(b)}")') is False


def test_globs_match_documented_example() -> None:
    assert rego('regex.globs_match("a.a.[0-9]+z", ".b.b2359825792*594823z")') is True
    assert rego('regex.globs_match("[a-z]*", "[0-9]+")') is False


@pytest.mark.parametrize(
    ("glob", "message"),
    [
        ("]", "set-close ']' with no preceding '['"),
        ("[a-", "range character '-' must be followed by a Unicode character"),
        ("*a", "flag '*' must be preceded by a non-flag"),
        ("[ab", "found [ without matching ]"),
    ],
)
def test_bad_globs_fail(glob: str, message: str) -> None:
    assert message in rego_error(f'regex.globs_match("{glob}", "a")')


@pytest.mark.parametrize(
    ("template", "variables", "rendered"),
    [
        ("{{.test}}", {"test": "hello world"}, "hello world"),  # OPA's documented example
        (
            "{{.a.b}}-{{.n}}-{{.f}}-{{.t}}",
            {"a": {"b": "x"}, "n": 3, "f": 1.5, "t": True},
            "x-3-1.5-true",
        ),
        (
            "{{range $i, $p := .people}}{{$i}}:{{$p}} {{end}}",
            {"people": ["ann", "bo"]},
            "0:ann 1:bo ",
        ),
        ("{{range .xs}}[{{.}}]{{else}}none{{end}}", {"xs": []}, "none"),
        (
            "{{if .admin}}admin{{else if .user}}user{{else}}guest{{end}}",
            {"admin": False, "user": True},
            "user",
        ),
        ("{{with .who}}hi {{.name}}{{end}}", {"who": {"name": "ann"}}, "hi ann"),
        ("{{.xs}} {{.m}}", {"xs": [1, "a"], "m": {"b": 2, "a": 1}}, "[1 a] map[a:1 b:2]"),
        ("{{len .xs}} {{index .xs 1}} {{.xs | len}}", {"xs": ["a", "b"]}, "2 b 2"),
        ("a  {{- .x -}}  b", {"x": "X"}, "aXb"),
        ("{{/* note */}}{{$v := .x}}{{$v}}", {"x": "y"}, "y"),
        ('{{if eq .role "admin"}}yes{{end}}', {"role": "admin"}, "yes"),
        ('{{printf "%s=%d" .k .v}}', {"k": "n", "v": 7}, "n=7"),
    ],
)
def test_render_template(template: str, variables: dict[str, object], rendered: str) -> None:
    assert (
        rego(
            "strings.render_template(data.t.template, data.t.vars)",
            template=template,
            vars=variables,
        )
        == rendered
    )


@pytest.mark.parametrize(
    ("template", "message"),
    [
        ("{{.missing}}", 'map has no entry for key "missing"'),
        ("{{.a.b}}", "can't evaluate field b in type string"),
        ("{{nosuch .a}}", 'function "nosuch" not defined'),
        ("{{if .a}}", "unexpected EOF in if"),
        ("{{.a", "unclosed action"),
    ],
)
def test_render_template_errors(template: str, message: str) -> None:
    assert message in rego_error(
        'strings.render_template(data.t.template, {"a": "s"})', template=template
    )


@pytest.mark.parametrize(
    ("expr", "value"),
    [
        ('strings.count("cheese", "e")', 3),
        ('strings.count("five", "")', 5),  # Go: characters plus one (the engine panicked)
        ('strings.count("aaaa", "aa")', 2),  # non-overlapping (the engine counted 3)
        ('json.is_valid("{\\"a\\": 1}")', True),
        ('json.is_valid("{")', False),
        ('json.is_valid("NaN")', False),
        ("json.is_valid(1)", False),  # not a string: false, as in OPA (the engine raised)
        ("array.flatten([[1, 2], 3, [[4]]])", [1, 2, 3, [4]]),
        ('strings.split_n("a.b.c.d", ".", 2)', ["a", "b"]),
        ('strings.split_n("a.b.c.d", ".", -1)', ["d"]),
    ],
)
def test_replaced_and_newer_builtins(expr: str, value: object) -> None:
    assert rego(expr) == value
