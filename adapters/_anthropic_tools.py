"""Anthropic Messages tool declarations (SDK `anthropic.types.ToolParam`).

`{name, description, input_schema}`, plus `strict: true` when the schema qualifies for strict
tool use: every object schema has `additionalProperties: false` and lists all its properties in
`required`, and the schema uses only the keywords strict mode compiles. That subset is the one the
SDK's own strict-schema transform keeps (`anthropic/lib/_parse/_transform.py`: type, enum and
const of primitives, anyOf, allOf, properties, required, additionalProperties, items, minItems of
0 or 1, the listed string formats, local `$ref` into `$defs`, description, title); a recursive
`$ref` does not qualify. Any other schema is declared non-strict (no `strict` key).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

from adapters.events import ToolSpec

_KEYWORDS = frozenset(
    {
        "type",
        "description",
        "title",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "minItems",
        "enum",
        "const",
        "anyOf",
        "allOf",
        "format",
        "$ref",
        "$defs",
    }
)
_TYPES = frozenset({"object", "array", "string", "integer", "number", "boolean", "null"})
_FORMATS = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "uri", "ipv4", "ipv6", "uuid"}
)
_DEFS_PREFIX = "#/$defs/"


def tool_declarations(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    return [_declaration(tool) for tool in tools]


def strict_qualifies(schema: dict[str, Any]) -> bool:
    """Whether `schema` may be declared with `strict: true` (see the module docstring)."""
    if not isinstance(schema, dict) or schema.get("type") != "object":
        return False
    defs = schema.get("$defs", {})
    if not isinstance(defs, dict):
        return False
    return _qualifies(schema, defs, frozenset())


def _declaration(tool: ToolSpec) -> dict[str, Any]:
    declaration: dict[str, Any] = {
        "name": tool.name,
        "description": tool.description,
        "input_schema": copy.deepcopy(tool.input_schema),
    }
    if strict_qualifies(tool.input_schema):
        declaration["strict"] = True
    return declaration


def _qualifies(schema: object, defs: dict[str, Any], expanding: frozenset[str]) -> bool:
    if not isinstance(schema, dict) or not schema.keys() <= _KEYWORDS:
        return False
    if "$ref" in schema:
        return _ref_qualifies(schema["$ref"], defs, expanding)
    return (
        _type_ok(schema)
        and _object_ok(schema, defs, expanding)
        and _array_ok(schema, defs, expanding)
        and _literals_ok(schema)
        and _format_ok(schema)
        and all(_all_qualify(schema.get(key, []), defs, expanding) for key in ("anyOf", "allOf"))
        and _defs_ok(schema.get("$defs", {}), defs, expanding)
    )


def _ref_qualifies(ref: object, defs: dict[str, Any], expanding: frozenset[str]) -> bool:
    if not isinstance(ref, str) or not ref.startswith(_DEFS_PREFIX):
        return False
    name = ref.removeprefix(_DEFS_PREFIX)
    if name in expanding or name not in defs:
        return False
    return _qualifies(defs[name], defs, expanding | {name})


def _all_qualify(schemas: object, defs: dict[str, Any], expanding: frozenset[str]) -> bool:
    return isinstance(schemas, list) and all(_qualifies(s, defs, expanding) for s in schemas)


def _defs_ok(local_defs: object, defs: dict[str, Any], expanding: frozenset[str]) -> bool:
    return isinstance(local_defs, dict) and _all_qualify(list(local_defs.values()), defs, expanding)


def _type_ok(schema: dict[str, Any]) -> bool:
    return "type" not in schema or _one_of(schema["type"], _TYPES)


def _object_ok(schema: dict[str, Any], defs: dict[str, Any], expanding: frozenset[str]) -> bool:
    if schema.get("type") != "object" and "properties" not in schema:
        return "required" not in schema and "additionalProperties" not in schema
    properties = schema.get("properties", {})
    required = schema.get("required", [])
    return (
        schema.get("additionalProperties") is False
        and isinstance(properties, dict)
        and isinstance(required, list)
        and all(isinstance(name, str) for name in required)
        and sorted(required) == sorted(properties)
        and _all_qualify(list(properties.values()), defs, expanding)
    )


def _array_ok(schema: dict[str, Any], defs: dict[str, Any], expanding: frozenset[str]) -> bool:
    if "items" in schema and not _qualifies(schema["items"], defs, expanding):
        return False
    return schema.get("minItems", 0) in (0, 1) and not isinstance(schema.get("minItems"), bool)


def _literals_ok(schema: dict[str, Any]) -> bool:
    enum = schema.get("enum", [None])
    return (
        isinstance(enum, list)
        and bool(enum)
        and all(map(_primitive, enum))
        and _primitive(schema.get("const"))
    )


def _format_ok(schema: dict[str, Any]) -> bool:
    return "format" not in schema or (
        schema.get("type") == "string" and _one_of(schema["format"], _FORMATS)
    )


def _one_of(value: object, allowed: frozenset[str]) -> bool:
    return isinstance(value, str) and value in allowed


def _primitive(value: object) -> bool:
    return value is None or isinstance(value, str | int | float | bool)
