"""The flattened 2020-12 metaschema means what the published one means: for any value, both
accept it or both refuse it, naming the same first problem at the same place (Hypothesis,
with the keywords of the vocabularies and values of every JSON type). The quick yes for plain
schemas (`gateway.tools.plain_schema`) is never given to a value the metaschema refuses."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

from gateway.tools import schema as schema_module
from gateway.tools.formats import CHECKED_FORMATS
from gateway.tools.metaschema import flattened
from gateway.tools.plain_schema import PlainCheck
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


PLAIN = PlainCheck(lambda pattern: FORMATS.conforms(pattern, "regex"))
ASSERTED = PlainCheck(lambda pattern: FORMATS.conforms(pattern, "regex"), CHECKED_FORMATS)
PLAIN_KEYWORDS = sorted(PLAIN._values)
TYPES = ["string", "integer", "object", "array", "number", "null", "boolean"]


def mostly(good: st.SearchStrategy[Any], bad: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """good nine times in ten (one_of would pick each branch alike)."""
    return st.integers(0, 9).flatmap(lambda n: good if n else bad)


def _near_plain(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """A schema of the keywords the quick check knows, each value mostly of its form."""
    counts = mostly(st.integers(0, 5), st.one_of(st.integers(-2, -1), st.floats(0, 2), leaves))
    numbers = mostly(st.one_of(st.integers(-2, 3), st.floats(-1, 2)), leaves)
    flags = mostly(st.booleans(), leaves)
    texts = mostly(st.text(max_size=3), leaves)
    forms: dict[str, st.SearchStrategy[Any]] = {
        "type": mostly(
            st.one_of(st.sampled_from(TYPES), st.lists(st.sampled_from(TYPES), max_size=3)),
            st.sampled_from(["strin", "", 1]),
        ),
        "pattern": st.sampled_from(["^a+$", "(", "\\d", "(?<=a)", "", "[a-z]{2,}"]),
        "required": mostly(st.lists(st.sampled_from(["a", "b", "c"]), max_size=3), leaves),
        "properties": mostly(st.dictionaries(st.text(max_size=2), inner, max_size=3), leaves),
        "enum": mostly(st.lists(leaves, max_size=2), leaves),
        "examples": mostly(st.lists(leaves, max_size=2), leaves),
        "multipleOf": mostly(st.one_of(st.integers(0, 3), st.floats(0, 2)), leaves),
        "const": leaves,
        "default": leaves,
    }
    for name in ("additionalProperties", "items", "not"):
        forms[name] = mostly(inner, leaves)
    for name in ("anyOf", "oneOf", "allOf"):
        forms[name] = mostly(st.lists(inner, max_size=2), inner)
    for name in ("maximum", "minimum", "exclusiveMaximum", "exclusiveMinimum"):
        forms[name] = numbers
    for name in ("uniqueItems", "deprecated", "readOnly", "writeOnly"):
        forms[name] = flags
    for name in ("title", "description", "$comment"):
        forms[name] = texts
    forms["format"] = mostly(
        st.sampled_from(["date", "email", "uuid", "time"]), st.sampled_from(["made-up", "", 3])
    )
    for name in PLAIN_KEYWORDS:
        forms.setdefault(name, counts)  # the max*/min* counts
    return st.lists(
        st.sampled_from(PLAIN_KEYWORDS).flatmap(lambda k: st.tuples(st.just(k), forms[k])),
        max_size=4,
    ).map(dict)


near_plain = st.recursive(st.one_of(st.booleans(), st.just({})), _near_plain, max_leaves=10)


def first_problem(validator: Draft202012Validator, value: Any) -> tuple[Any, ...] | None:
    error = best_match(validator.iter_errors(value))
    return None if error is None else (list(error.absolute_path), error.message)


@given(values)
def test_both_metaschemas_judge_every_value_alike(value: Any) -> None:
    assert first_problem(FLAT, value) == first_problem(PUBLISHED, value)


@settings(max_examples=1000)
@given(st.one_of(values, near_plain))
def test_the_quick_yes_is_given_only_to_what_the_metaschema_accepts(value: Any) -> None:
    """...and to what the checks it stands in for pass: references, patterns, loops."""
    if PLAIN.valid(value):
        assert first_problem(FLAT, value) is None
        if isinstance(value, dict):
            full_checks(value)
    if ASSERTED.valid(value):
        assert PLAIN.valid(value)
        if isinstance(value, dict):
            schema_module._check_formats(value, ())  # formats callgate checks, all of them


def full_checks(schema: dict[str, Any]) -> None:
    """What check_schema runs on a schema that is not plain (ManifestProblem if it fails)."""
    resource = schema_module.DRAFT202012.create_resource(schema)
    root = schema_module.SPECIFICATIONS.combine(schema_module._NO_REMOTE).resolver_with_root(
        resource
    )
    schema_module._check_refs(resource, root, ())
    schema_module._check_patterns(schema, ())
    schema_module._check_ends(schema, root, ())


def test_the_quick_yes_covers_a_typical_tool_schema_and_nothing_odd() -> None:
    typical = {
        "type": "object",
        "description": "A city and a date.",
        "properties": {
            "city": {"type": "string", "minLength": 1, "maxLength": 80},
            "date": {"type": "string", "pattern": "^\\d{4}-\\d{2}-\\d{2}$", "format": "date"},
            "seats": {"type": ["integer", "null"], "minimum": 1, "default": 1},
            "mode": {"enum": ["rail", "air"]},
            "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
            "either": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
        },
        "required": ["city", "date"],
        "additionalProperties": False,
    }
    assert PLAIN.valid(typical) and first_problem(FLAT, typical) is None
    for odd in (
        {"type": "strin"},
        {"type": ["string", "string"]},
        {"type": []},
        {"minLength": True},
        {"minLength": -1},
        {"minLength": 1.0},  # the metaschema accepts it; the quick check leaves it to it
        {"pattern": "(?<=a"},
        {"required": ["a", "a"]},
        {"anyOf": []},
        {"multipleOf": 0},
        {"properties": {"a": {"maxLength": "3"}}},
        {"$ref": "#/$defs/x"},
        {"x-vendor": 1},
    ):
        assert not PLAIN.valid(odd), odd


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
