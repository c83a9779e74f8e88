"""The flattened 2020-12 metaschema means what the published one means: for any value, both
accept it or both refuse it, naming the same first problem at the same place (Hypothesis,
with the keywords of the vocabularies and values of every JSON type)."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

from gateway.tools.metaschema import flattened
from gateway.tools.schema import META_FORMATS as FORMATS

PUBLISHED = Draft202012Validator(Draft202012Validator.META_SCHEMA, format_checker=FORMATS)
FLAT = Draft202012Validator(flattened(), format_checker=FORMATS)
KEYWORDS = sorted(flattened()["properties"])

leaves = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.floats(-2, 2),
    st.sampled_from(
        [
            "string",
            "integer",
            "object",
            "array",
            "number",
            "null",
            "^a+$",
            "(",
            "#",
            "#/$defs/x",
            "a b",
            "",
            "x",
        ]
    ),
)
values = st.recursive(
    leaves,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(
            st.one_of(st.sampled_from(KEYWORDS), st.text(max_size=3)), inner, max_size=4
        ),
    ),
    max_leaves=12,
)


def first_problem(validator: Draft202012Validator, value: Any) -> tuple[Any, ...] | None:
    error = best_match(validator.iter_errors(value))
    return None if error is None else (list(error.absolute_path), error.message)


@given(values)
def test_both_metaschemas_judge_every_value_alike(value: Any) -> None:
    assert first_problem(FLAT, value) == first_problem(PUBLISHED, value)


def test_a_schema_of_every_keyword_passes_both() -> None:
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "urn:x",
        "$defs": {"n": {"type": "integer", "minimum": 0}},
        "type": "object",
        "properties": {
            "a": {"$ref": "#/$defs/n"},
            "b": {
                "type": "array",
                "prefixItems": [{"const": 1}],
                "items": {"enum": [1, 2]},
                "contains": {"type": "integer"},
                "minContains": 1,
                "uniqueItems": True,
            },
        },
        "patternProperties": {"^x-": {"type": "string", "format": "date"}},
        "propertyNames": {"pattern": "^[a-z-]+$"},
        "dependentRequired": {"a": ["b"]},
        "dependentSchemas": {"b": {"required": ["a"]}},
        "unevaluatedProperties": False,
        "if": {"required": ["a"]},
        "then": {"minProperties": 1},
        "else": {"not": {}},
        "allOf": [True],
        "anyOf": [{}],
        "oneOf": [{"title": "t", "deprecated": False}],
        "contentMediaType": "application/json",
        "contentSchema": {"type": "object"},
        "dependencies": {"a": ["b"], "b": {"type": "object"}},
        "definitions": {"d": {}},
    }
    assert first_problem(FLAT, schema) is None and first_problem(PUBLISHED, schema) is None
    for bad in (
        {"type": "strin"},
        {"minimum": "0"},
        {"pattern": "(?<=a"},
        {"properties": {"a": {"maxLength": -1}}},
        {"dependencies": {"a": [1]}},
        {"$ref": 3},
        {"items": [{}]},
    ):
        assert first_problem(FLAT, bad) == first_problem(PUBLISHED, bad) is not None, bad
