"""The quick yes for plain schemas (`gateway.tools.quick_check`) against jsonschema, the validator
of record: on every schema it compiles, its verdict is jsonschema's for every JSON value, over
the official suite's cases and over generated schemas and values; a value of a type JSON does
not have is always left to jsonschema; and validation through a tool uses it."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gateway.audit.keys import AuditKey
from gateway.tools import Registry
from gateway.tools.formats import FORMAT_CHECKER
from gateway.tools.quick_check import quick_check
from gateway.tools.schema import check_schema, schema_validator
from tests.gateway.tools.test_schema_suite import ASSERTED, OPTIONAL, REQUIRED, SUITE

EXAMPLE_TOOLS = Path(__file__).parents[3] / "examples" / "travel" / "tools"


def _both(schema: dict[str, Any], assertion: bool = True) -> tuple[Any, Any]:
    check_schema(schema, (), format_assertion=assertion)
    validator = schema_validator(schema, format_assertion=assertion)
    return quick_check(schema, validator.format_checker), validator


def test_the_suite_cases_a_quick_check_takes_get_the_suites_verdicts() -> None:
    checked = 0
    wrong: list[str] = []
    for name in REQUIRED + OPTIONAL:
        for case in json.loads((SUITE / name).read_text(encoding="utf-8")):
            schema = case["schema"]
            if not isinstance(schema, dict):
                continue
            try:
                quick, _ = _both(schema)
            except Exception:  # refused at load: test_schema_suite.py says which and why
                continue
            if quick is None:
                continue
            for test in case["tests"]:
                expected = (
                    test["valid"]
                    and (name, case["description"], test["description"]) not in ASSERTED
                )
                checked += 1
                if quick(test["data"]) != expected:
                    wrong.append(f"{name} / {case['description']} / {test['description']}")
    assert not wrong, "\n".join(wrong)
    assert checked >= 300, checked  # the suite's plain cases are most of it: none were skipped


# ---------------------------------------------------------------------- generated schemas

NAMES = ["a", "b", "c"]
PATTERNS = ["^[A-Z]{1,4}[0-9]{1,5}$", r"^\d{4}-\d{2}-\d{2}$", "é", "^$", "x|y", r"\p{Lu}"]
FORMATS = ["date", "email", "uuid", "date-time", "ipv4", "time"]
TEXTS = [
    "", "a", "x", "ICE123", "ice123", "2026-12-01", "2026-13-01", "2026-12-01T10:00:00Z",
    "a@example.com", "not an email", "0b6b0d56-1f5e-4a8f-9a59-3f0c5a2e6b11", "10.0.0.1",
    "10:00:00Z", "é", "Éa", "ÄÖÜ", "\u2028", "y", "abcdef",
]  # fmt: skip
NUMBERS = [0, 1, -1, 2, 5, 1.0, 2.5, -0.5, 10**20, 3.0]

texts = st.sampled_from(TEXTS) | st.text(max_size=6)
scalars = st.none() | st.booleans() | st.sampled_from(NUMBERS) | st.integers(-10, 10) | texts
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.sampled_from([*NAMES, "d"]), inner, max_size=4)
    ),
    max_leaves=12,
)
types = st.sampled_from(["string", "integer", "number", "boolean", "null", "object", "array"])
counts = st.integers(0, 4)


def _leaf_keywords() -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {},
        optional={
            "type": types | st.lists(types, min_size=1, max_size=3, unique=True),
            "minLength": counts,
            "maxLength": counts,
            "pattern": st.sampled_from(PATTERNS),
            "format": st.sampled_from(FORMATS),
            "enum": st.lists(st.sampled_from(TEXTS), min_size=1, max_size=3),
            "const": st.sampled_from(TEXTS),
            "minimum": st.sampled_from(NUMBERS),
            "maximum": st.sampled_from(NUMBERS),
            "exclusiveMinimum": st.sampled_from(NUMBERS),
            "exclusiveMaximum": st.sampled_from(NUMBERS),
            "minItems": counts,
            "maxItems": counts,
            "minProperties": counts,
            "maxProperties": counts,
            "description": st.just("an annotation"),
        },
    )


def _with_children(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.builds(
        lambda base, extra: {**base, **extra},
        _leaf_keywords(),
        st.fixed_dictionaries(
            {},
            optional={
                "properties": st.dictionaries(st.sampled_from(NAMES), inner, max_size=3),
                "required": st.lists(st.sampled_from([*NAMES, "d"]), max_size=3, unique=True),
                "additionalProperties": inner,
                "items": inner,
            },
        ),
    )


schemas = st.recursive(st.booleans() | _leaf_keywords(), _with_children, max_leaves=6)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schema=schemas.filter(lambda s: isinstance(s, dict)), instances=st.lists(values, max_size=8))
def test_a_quick_check_agrees_with_jsonschema_on_every_json_value(
    schema: dict[str, Any], instances: list[Any]
) -> None:
    for assertion in (True, False):
        quick, validator = _both(schema, assertion)
        assert quick is not None, schema  # every generated keyword is one it takes
        for instance in instances:
            assert quick(instance) == validator.is_valid(instance), (schema, instance, assertion)


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "string", "uniqueItems": True},
        {"multipleOf": 2},
        {"properties": {"a": {"$ref": "#/$defs/x"}}, "$defs": {"x": {"type": "string"}}},
        {"patternProperties": {"^a": {"type": "string"}}, "additionalProperties": False},
        {"enum": [1, "a"]},
        {"const": 1},
        {"prefixItems": [{"type": "string"}], "items": False},
        {"anyOf": [{"type": "string"}]},
        {"format": "no-such-format"},
        {"x-custom": 1},
    ],
)
def test_a_schema_with_anything_else_is_left_to_jsonschema(schema: dict[str, Any]) -> None:
    assert quick_check(schema, FORMAT_CHECKER) is None


class Text(str):
    pass


@pytest.mark.parametrize(
    "instance",
    [
        {"a": Text("x")},
        {"a": Decimal("1")},
        {"a": ("x",)},
        {"a": float("nan")},
        {"a": float("inf")},
        {1: "x"},
    ],
)
def test_a_value_of_a_type_json_does_not_have_is_left_to_jsonschema(instance: Any) -> None:
    quick = quick_check({"type": "object", "properties": {"a": {"minimum": 0}}}, FORMAT_CHECKER)
    assert quick is not None and quick(instance) is False


def test_a_tool_answers_with_the_quick_check_and_asks_jsonschema_what_is_wrong() -> None:
    registry = Registry.load(
        EXAMPLE_TOOLS,
        env={"CALLGATE_TRAVEL_URL": "http://127.0.0.1:1"},
        audit_key=AuditKey.ephemeral(),
    )
    tool = registry.get("get_train_status")
    assert tool is not None
    schemas = tool._schemas
    assert schemas.input_quick is not None and schemas.output_quick is not None
    assert tool.validate_arguments({"train_number": "ICE123", "date": "2026-12-01"}) is None
    assert tool.validate_arguments({"train_number": "ICE123", "date": "2026-13-01"}) == (
        "/date: '2026-13-01' is not a 'date'"
    )
    assert tool.validate_arguments({"train_number": "ice", "date": "2026-12-01", "x": 1}) == (
        "(root): Additional properties are not allowed ('x' was unexpected); "
        "/train_number: 'ice' does not match '^[A-Z]{1,4}[0-9]{1,5}$'"
    )
    output = {"train_number": "ICE123", "date": "2026-12-01", "status": "late", "delay_min": 0}
    assert tool.validate_output(output) == "/status: 'late' is not one of ['on_time', 'delayed']"
