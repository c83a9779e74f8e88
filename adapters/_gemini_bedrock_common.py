"""Small helpers shared by the Gemini and Bedrock Converse adapters.

Both APIs carry tool arguments as JSON objects (not strings), answer calls by ID, and need the
same defensive reading of untrusted response JSON; these helpers keep that in one place.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from adapters.events import AdapterError, ToolResult


def compact_json(value: Any) -> str:
    """The JSON text of an object-typed argument value (no spaces, non-ASCII kept)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def require_dict(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise AdapterError(f"{where} is missing or not an object", code="malformed_response")
    return value


def require_list(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise AdapterError(f"{where} is missing or not an array", code="malformed_response")
    return value


def require_text(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise AdapterError(
            f"{where} is missing or not a non-empty string", code="malformed_response"
        )
    return value


def optional_text(value: Any, where: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise AdapterError(f"{where} is not a string", code="malformed_response")
    return value


def count(mapping: Mapping[str, Any], *keys: str) -> int:
    """The sum of the integer token counts under `keys` (missing or non-integer count as 0)."""
    total = 0
    for key in keys:
        value = mapping.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            total += value
    return total


def pick_result(
    results: Sequence[ToolResult], matches: Callable[[ToolResult], bool], label: str
) -> ToolResult:
    """The one result `matches` selects: none is `missing_result`, several `duplicate_call_id`."""
    found = [result for result in results if matches(result)]
    if not found:
        raise AdapterError(f"no result for {label}", code="missing_result")
    if len(found) > 1:
        raise AdapterError(f"{len(found)} results for {label}", code="duplicate_call_id")
    return found[0]


def qualifies_for_strict(schema: Any) -> bool:
    """True when every object schema inside `schema` forbids additional properties and
    requires all of its properties (what strict tool modes demand)."""
    if isinstance(schema, list):
        return all(qualifies_for_strict(item) for item in schema)
    if not isinstance(schema, dict):
        return True
    if _is_object_schema(schema) and not _object_is_closed(schema):
        return False
    return all(
        qualifies_for_strict(value) for key, value in schema.items() if key not in _NON_SCHEMA_KEYS
    )


# Keywords whose values are data, not subschemas: never walk into them.
_NON_SCHEMA_KEYS = frozenset(
    {
        "enum",
        "const",
        "default",
        "examples",
        "required",
        "type",
        "description",
        "title",
        "format",
        "pattern",
        "$comment",
    }
)


def _is_object_schema(schema: dict[str, Any]) -> bool:
    kind = schema.get("type")
    is_object = kind == "object" or (isinstance(kind, list) and "object" in kind)
    return is_object or "properties" in schema


def _object_is_closed(schema: dict[str, Any]) -> bool:
    properties = schema.get("properties") or {}
    required = schema.get("required") or []
    if not isinstance(properties, dict) or not isinstance(required, list):
        return False
    return schema.get("additionalProperties") is False and set(required) == set(properties)
