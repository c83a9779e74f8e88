"""Schemas mean what they mean in JSON Schema, and cannot stall or wedge the sidecar.

Patterns are ECMA-262 regular expressions run by a linear-time engine; a pattern that engine
cannot run, a schema that refers to itself without end, or a YAML alias bomb is refused at
start-up, naming the file and the field.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gateway.tools import Registry
from tests.support.manifests import base, load_error, write


def tool(schema: dict[str, Any]) -> Any:
    registry = Registry.from_manifests([base(effect="read", input_schema=schema)], env={})
    found = registry.get("reserve")
    assert found is not None
    return found


def prop(**keywords: Any) -> dict[str, Any]:
    return {"type": "object", "properties": {"s": {"type": "string", **keywords}}}


@pytest.mark.parametrize(
    "pattern, good, bad",
    [
        ("^[a-z]+$", ["abc"], ["abc\n", "ABC", "ab1"]),
        (r"^\d+$", ["123"], ["١٢٣", "12\n"]),  # \d is ASCII only in ECMA-262
        (r"^\w+$", ["a_1"], ["é"]),
        (r"^a.c$", ["abc", "a c"], ["a\nc", "a\rc", "a\u2028c"]),
        (r"^\s$", [" ", "\t", "\u00a0", "\ufeff", "\u2003"], ["x"]),
        (r"^[\s,]+$", [" ,\u00a0"], ["x"]),
        (r"^\u00e9$", ["é"], ["e"]),
        (r"^\ud83d\ude00$", ["😀"], ["x"]),
        ("^(a+)+$", ["a" * 50], ["a" * 5000 + "!"]),  # linear time: no catastrophic backtracking
        ("(?<year>[0-9]{4})", ["in 2026"], ["26"]),
        # Unicode property escapes, with the names and aliases ECMA-262 takes
        (r"^\p{Letter}+$", ["élan", "Ωmega", "漢字"], ["a1", "a b"]),
        (r"^\p{L}+$", ["élan"], ["1"]),
        (r"^\p{digit}+$", ["١٢٣", "123"], ["a", "½"]),
        (r"^\p{Lu}\p{Ll}$", ["Éa"], ["éa"]),
        (r"^\p{General_Category=Decimal_Number}$", ["٣"], ["a"]),
        (r"^\p{gc=Nd}$", ["٣"], ["a"]),
        (r"^\P{L}$", ["1", "-"], ["a", "é"]),
        (r"^[\p{L}\d_]+$", ["a1é_"], ["-"]),
        (r"^[^\p{L}]$", ["1"], ["a"]),
        (r"^\p{LC}$", ["a", "A"], ["ʰ", "1"]),  # Cased_Letter: Lu, Ll, Lt (ʰ is Lm)
        (r"^\p{Script=Greek}+$", ["αβγ"], ["abc"]),
        (r"^\p{sc=Latin}$", ["a"], ["α"]),
        (r"^\p{Script=Grek}\P{sc=Grek}$", ["αa"], ["ab", "αβ"]),  # a script's code
        (r"^\p{ASCII}+$", ["abc~"], ["é"]),
        (r"^\p{ASCII_Hex_Digit}+$", ["0fA"], ["g", "٣"]),
        (r"^\p{Any}$", ["😀", "a"], ["ab"]),
        (r"^\p{White_Space}$", ["\u2003", "\x85"], ["x", "\u200b"]),
        (r"^\p{Cn}$", ["\u0378"], ["a"]),  # unassigned
        (r"^\p{C}$", ["\u0378", "\x00", "\u200b"], ["a"]),  # Other includes unassigned
        (r"^\p{Assigned}$", ["a", "\x00"], ["\u0378"]),
        (r"^\x41\u{1F600}$", ["A😀"], ["x41"]),
        (r"^[\b]$", ["\b"], ["b"]),
        (r"^a\-b$", ["a-b"], ["ab"]),
    ],
)
def test_patterns_follow_ecma_262(pattern: str, good: list[str], bad: list[str]) -> None:
    t = tool(prop(pattern=pattern))
    for value in good:
        assert t.validate_arguments({"s": value}) is None, value
    for value in bad:
        assert t.validate_arguments({"s": value}) is not None, value


def test_pattern_properties_and_additional_properties_use_the_same_engine() -> None:
    schema = {
        "type": "object",
        "patternProperties": {"^x-[a-z]+$": {"type": "integer"}},
        "additionalProperties": False,
    }
    t = tool(schema)
    assert t.validate_arguments({"x-ab": 1}) is None
    assert t.validate_arguments({"x-ab\n": 1}) is not None
    assert t.validate_arguments({"x-ab": "1"}) is not None
    slow = "x-" + "a" * 5000 + "!"
    t2 = tool(
        {"type": "object", "patternProperties": {"^x-(a+)+$": {}}, "additionalProperties": False}
    )
    assert t2.validate_arguments({slow: 1}) is not None


def test_unevaluated_properties_beside_pattern_properties_use_the_same_engine() -> None:
    t = tool(
        {
            "type": "object",
            "properties": {"id": {"type": "string"}},
            "allOf": [{"patternProperties": {"^x-[a-z]+$": {"type": "integer"}}}],
            "unevaluatedProperties": False,
        }
    )
    assert t.validate_arguments({"id": "a", "x-ab": 1}) is None
    assert t.validate_arguments({"x-ab": "1"}) is not None  # matched, so checked
    problems = t.validate_arguments({"x-ab\n": 1})  # `$` is the end, as in ECMA-262
    assert problems is not None and "Unevaluated properties are not allowed" in problems
    slow = tool(
        {"type": "object", "patternProperties": {"^(a+)+$": {}}, "unevaluatedProperties": False}
    )
    assert slow.validate_arguments({"a" * 5000 + "!": 1}) is not None  # linear time


@pytest.mark.parametrize(
    "pattern, why",
    [
        ("^(?=a)a$", "look"),
        (r"^(a)\1$", "back"),
        ("^[a-", "missing"),
    ],
)
def test_unsupported_or_broken_patterns_fail_at_load(
    tmp_path: Path, pattern: str, why: str
) -> None:
    write(
        tmp_path,
        "t.yaml",
        base(
            input_schema={
                "type": "object",
                "properties": {"code": {"type": "string", "pattern": pattern}},
            }
        ),
    )
    message = load_error(tmp_path)
    assert "t.yaml" in message and "input_schema.properties.code.pattern" in message
    assert why in message.lower()


@pytest.mark.parametrize(
    "pattern, why",
    [
        (r"^\p{Letterr}$", "\\p{letterr}: letterr is not a unicode property"),
        (r"^\p{letter}$", "is not a unicode property"),  # names are case-sensitive
        (r"^\p{Greek}$", "write \\p{script=greek}"),
        (r"^\p{Script=Garay}$", "script=garay"),  # Unicode 16: RE2 does not know it yet
        (r"^\p{Script=L}$", "is not a script"),
        (r"^\p{Script_Extensions=Greek}$", "script_extensions is not supported"),
        (r"^\p{Alphabetic}$", "alphabetic is not supported"),
        (r"^\pL$", "needs braces"),
        (r"^[\P{LC}]$", "inside a character class"),
        (r"^[\p{Cn}a]$", "inside a character class"),
        (r"^\a$", "\\a is not an escape"),
        (r"^\z$", "\\z is not an escape"),
        (r"^\Aa$", "\\a is not an escape"),
        (r"^\x4$", "\\x needs two hexadecimal digits"),
        (r"^\x{41}$", "\\x needs two hexadecimal digits"),
        ("(?P<name>a)", "(?p<"),
        ("(?i)a", "(?i"),
        ("a{", "lone {"),
        ("a}", "lone }"),
        ("a]", "lone ]"),
        (r"(a)\2", "back"),
    ],
)
def test_patterns_ecma_262_refuses_or_callgate_cannot_run_fail_at_load(
    tmp_path: Path, pattern: str, why: str
) -> None:
    write(
        tmp_path,
        "t.yaml",
        base(
            input_schema={
                "type": "object",
                "properties": {"code": {"type": "string", "pattern": pattern}},
            }
        ),
    )
    message = load_error(tmp_path)
    assert "t.yaml" in message and "input_schema.properties.code.pattern" in message
    assert why in message.lower(), message


def test_unsupported_pattern_property_fails_at_load(tmp_path: Path) -> None:
    write(
        tmp_path,
        "t.yaml",
        base(input_schema={"type": "object", "patternProperties": {"^(?!x)": {}}}),
    )
    message = load_error(tmp_path)
    assert "t.yaml" in message and "input_schema.patternProperties" in message


@pytest.mark.parametrize(
    "schema",
    [
        {"$ref": "#"},
        {"allOf": [{"$ref": "#"}]},
        {
            "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"anyOf": [{"$ref": "#/$defs/a"}]}},
            "$ref": "#/$defs/a",
        },
        {"type": "object", "if": {"required": ["x"]}, "then": {"$ref": "#"}},
        {"type": "object", "properties": {"a": {"not": {"$ref": "#/properties/a"}}}},
    ],
)
def test_schemas_that_refer_to_themselves_without_end_fail_at_load(
    tmp_path: Path, schema: dict[str, Any]
) -> None:
    write(tmp_path, "t.json", base(input_schema=schema))
    message = load_error(tmp_path)
    assert "t.json" in message and "input_schema" in message
    assert "refers to itself" in message


def test_recursive_schemas_that_descend_are_fine() -> None:
    tree = {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "children": {"type": "array", "items": {"$ref": "#"}},
        },
    }
    t = tool(tree)
    assert t.validate_arguments({"name": "a", "children": [{"name": "b", "children": []}]}) is None
    assert t.validate_arguments({"name": "a", "children": [{"name": 1}]}) is not None


def test_a_yaml_alias_bomb_is_refused_at_load(tmp_path: Path) -> None:
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for i in range(1, 8):
        refs = ", ".join([f"*a{i - 1}"] * 9)
        lines.append(f"a{i}: &a{i} [{refs}]")
    text = (
        "name: bomb\nversion: '1'\neffect: read\nexecutor: {type: http, url: "
        "'http://127.0.0.1:9/x'}\ninput_schema:\n  type: object\n  default:\n"
        + "\n".join("    " + line for line in lines)
        + "\n"
    )
    (tmp_path / "bomb.yaml").write_text(text)
    message = load_error(tmp_path)
    assert "bomb.yaml" in message and "alias" in message


def test_a_yaml_alias_that_contains_itself_is_refused(tmp_path: Path) -> None:
    (tmp_path / "loop.yaml").write_text(
        "name: loop\nversion: '1'\neffect: read\nexecutor: {type: http, url: "
        "'http://127.0.0.1:9/x'}\ninput_schema: &s {type: object, default: [*s]}\n"
    )
    message = load_error(tmp_path)
    assert "loop.yaml" in message and "alias" in message


def test_a_few_yaml_aliases_are_fine(tmp_path: Path) -> None:
    (tmp_path / "ok.yaml").write_text(
        "name: ok\nversion: '1'\neffect: read\nexecutor: {type: http, url: "
        "'http://127.0.0.1:9/x'}\ninput_schema:\n  type: object\n  properties:\n"
        "    a: &str {type: string, maxLength: 5}\n    b: *str\n"
    )
    registry = Registry.load(tmp_path, env={})
    assert registry.get("ok") is not None
