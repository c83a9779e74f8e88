"""`format` in tool schemas: every format of JSON Schema 2020-12 is checked completely, a format
callgate cannot check is refused at load, and `format_assertion: false` keeps formats the
annotations the specification makes them by default.

The official test suite's format cases run in test_schema_suite.py; these are the cases a
manifest author meets first.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gateway.tools import Registry, Tool
from tests.support.manifests import base, load_error, write


def tool(schema: dict[str, Any], **manifest: Any) -> Tool:
    registry = Registry.from_manifests(
        [base(effect="read", input_schema=schema, **manifest)], env={}
    )
    found = registry.get("reserve")
    assert found is not None
    return found


def field(fmt: str) -> dict[str, Any]:
    return {"type": "object", "properties": {"v": {"type": "string", "format": fmt}}}


def test_a_tool_with_a_time_field_can_be_called() -> None:
    """RFC 3339 full-time: an offset is required, fractions and leap seconds allowed."""
    t = tool(field("time"))
    for good in (
        "08:30:06Z",
        "08:30:06-08:00",
        "23:20:50.52Z",
        "23:59:60Z",
        "15:59:60-08:00",
        "08:30:06z",
    ):
        assert t.validate_arguments({"v": good}) is None, good
    for bad in (
        "12:00:00",
        "12:00:00.52",
        "24:00:00Z",
        "22:59:60Z",
        "8:30:06Z",
        "2020-11-28T23:55:45Z",
        "08:30:06Z\n",
    ):
        problems = t.validate_arguments({"v": bad})
        assert problems is not None and "is not a 'time'" in problems, bad


@pytest.mark.parametrize(
    "fmt, good, bad",
    [
        (
            "date-time",
            ["1963-06-19T08:30:06.283185Z", "1998-12-31T15:59:60.123-08:00"],
            ["1990-02-31T15:59:59.123-08:00", "1985-04-12T23:20:50+01", "1985-04-12T23:20:50Z\n"],
        ),
        ("date", ["2020-02-29"], ["2021-02-29", "2020-1-01", "২020-01-01"]),
        ("duration", ["P4DT12H30M5S", "P2W", "PT36H"], ["PT", "P1Y2D", "PT0.5S", "P1WT1H", "-P1D"]),
        (
            "hostname",
            ["www.example.com", "xn--9n2bp8q.xn--9t4b11yi5a"],
            ["", ".", "example.", "host_name", "xn--X", "example.com\n"],
        ),
        ("idn-hostname", ["실례.테스트", "a。b"], ["example.", "0a.א", "xn--7a"]),
        (
            "email",
            ["joe.bloggs@example.com", '"joe bloggs"@example.com', "a@[IPv6:::1]"],
            ["2962", "te..st@example.com", "joe.bloggs@", "a@b.com, c@d.com", "a@[127.0.0.300]"],
        ),
        ("idn-email", ["실례@실례.테스트", "δοκιμή@example.com"], ["2962", "user＠example.com"]),
        ("ipv4", ["192.168.0.1"], ["087.10.0.1", "1.2.3", "২7.0.0.1"]),
        ("ipv6", ["::1", "::ffff:192.168.0.1"], ["12345::", "fe80::a%eth1", "[::1]"]),
        (
            "uri",
            ["http://example.com/a?b#c", "urn:isbn:0451450523", "http://[2001:db8::7]/c"],
            [
                "//example.com",
                "http://exa mple.com",
                "\\\\WINDOWS\\fileshare",
                "http://[::01.2.3.4]",
            ],
        ),
        ("uri-reference", ["/abc", "#frag", ""], ["\\\\WINDOWS\\fileshare", "#frag\\ment"]),
        (
            "iri",
            ["http://ƒøø.ßår/?∂éœ=πîx#πîüx", "http://[2001:db8::1]/", "http://a/𐀀"],
            ["/abc", "http://exa mple.org"],
        ),
        ("iri-reference", ["//ƒøø.ßår/?∂éœ=πîx#πîüx"], ["\\\\WINDOWS\\filëßåré"]),
        (
            "uuid",
            ["2eb8aa08-AA98-11ea-B4Aa-73B441D16380"],
            ["2eb8aa08-aa98-11ea-b4aa-73b441d16380-", "2eb8aa08-aa98-11ea-b4aa-73b441d1_380"],
        ),
        (
            "uri-template",
            ["http://example.com/dictionary/{term:1}/{term}", "{%41}", ""],
            ["{a..b}", "{v:01}", "a b", "{var=def}", "foo}bar"],
        ),
        ("json-pointer", ["/foo/0", "", "/a~1b"], ["foo", "/~2"]),
        ("relative-json-pointer", ["1", "0#", "100"], ["/foo", "01/a", "١/foo", "1\n"]),
        (
            "regex",
            ["([abc])+\\s+$", "(?<=a+)b", "(?<n>a)\\k<n>", "\\p{Letter}"],
            ["^(abc]", "\\a", "(?P<name>a)", "(?i)a", "\\p{Letterr}"],
        ),
    ],
)
def test_every_asserted_format_is_checked(fmt: str, good: list[str], bad: list[str]) -> None:
    t = tool(field(fmt))
    for value in good:
        assert t.validate_arguments({"v": value}) is None, (fmt, value)
    for value in bad:
        assert t.validate_arguments({"v": value}) is not None, (fmt, value)
    assert t.validate_arguments({"v": 12}) is not None  # `type` still applies
    assert tool({"format": fmt}).validate_arguments({"a": 1}) is None  # only strings are checked


@pytest.mark.parametrize(
    "fmt",
    sorted(
        {
            "hostname",
            "idn-hostname",
            "email",
            "idn-email",
            "uri",
            "iri-reference",
            "uri-template",
            "json-pointer",
            "duration",
            "regex",
        }
    ),
)
def test_a_long_hostile_value_is_checked_in_linear_time(fmt: str) -> None:
    """Values as long as arguments may be (128 KiB), shaped to make a backtracking matcher
    take exponential time: each is answered at once."""
    t = tool(field(fmt))
    for value in (
        "a" * 120_000 + "!",
        "{" * 60_000 + "}",
        "/~" * 60_000,
        "a." * 60_000,
        "(" * 10_000 + "a" + ")" * 9_999,
        "a@" + "a." * 60_000,
    ):
        t.validate_arguments({"v": value})


def test_a_format_callgate_cannot_check_is_refused_at_load(tmp_path: Path) -> None:
    write(
        tmp_path,
        "t.yaml",
        base(
            input_schema={
                "type": "object",
                "properties": {"c": {"type": "string", "format": "colour"}},
            }
        ),
    )
    message = load_error(tmp_path)
    assert "t.yaml" in message and "input_schema.properties.c.format" in message
    assert "'colour' is not a format callgate can check" in message
    assert "format_assertion: false" in message


def test_an_unknown_format_in_a_definition_is_refused_too(tmp_path: Path) -> None:
    write(
        tmp_path,
        "t.json",
        base(output_schema={"$defs": {"d": {"format": "phone"}}, "$ref": "#/$defs/d"}),
    )
    message = load_error(tmp_path)
    assert "t.json" in message and "output_schema.$defs.d.format" in message


def test_format_assertion_false_keeps_formats_as_annotations() -> None:
    t = tool(
        {
            "type": "object",
            "properties": {
                "at": {"type": "string", "format": "time"},
                "mail": {"type": "string", "format": "email"},
                "colour": {"type": "string", "format": "colour"},
            },
        },
        format_assertion=False,
    )
    assert t.validate_arguments({"at": "not a time", "mail": "2962", "colour": "?"}) is None
    assert t.validate_arguments({"at": 1}) is not None  # every other keyword still asserts


def test_format_assertion_is_a_boolean(tmp_path: Path) -> None:
    write(tmp_path, "t.yaml", base(format_assertion="sometimes"))
    assert "format_assertion" in load_error(tmp_path)


def test_a_bad_regex_value_is_refused_but_a_pattern_must_also_run() -> None:
    """`format: regex` asks whether a string is an ECMA-262 regular expression; a `pattern`
    in a schema must also be one callgate's linear-time engine can run."""
    t = tool(field("regex"))
    assert t.validate_arguments({"v": "(?<=a)b"}) is None
    with pytest.raises(Exception, match="look-around"):
        tool({"type": "string", "pattern": "(?<=a)b"})
