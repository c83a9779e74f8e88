"""A quick yes for the schemas most manifests hold, before the metaschema is asked.

Checking a schema against the 2020-12 metaschema with jsonschema costs a fraction of a
millisecond a schema, most of a start-up with thousands of manifests. Most tool schemas use a
few keywords in their simplest forms (`type`, `properties`, `required`, `minLength`,
`pattern`, ...), and what the metaschema asks of those is a type check. `PlainCheck.valid`
answers True only for a schema made of such keywords, every value of the form the metaschema
accepts, so that the metaschema would accept it too; anything else (another keyword, a value of
a form it does not know, a value the metaschema refuses) answers False, and the schema is
checked against the metaschema in full, which also says what is wrong. A plain schema has no
`$ref`, `$id` or `$defs`, so it has no reference to resolve or loop through either, and its
patterns were compiled by the check. It never answers for the
metaschema: tests/gateway/tools/test_metaschema.py checks that whatever it accepts, the
metaschema accepts.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

SIMPLE_TYPES = frozenset({"array", "boolean", "integer", "null", "number", "object", "string"})


def _number(value: Any) -> bool:
    return type(value) is int or type(value) is float  # bool is not a number here


def _count(value: Any) -> bool:  # nonNegativeInteger, in its plain form
    return type(value) is int and value >= 0


def _string(value: Any) -> bool:
    return type(value) is str


def _flag(value: Any) -> bool:
    return type(value) is bool


def _type(value: Any) -> bool:
    if type(value) is str:
        return value in SIMPLE_TYPES
    return (
        type(value) is list
        and len(value) > 0
        and all(type(v) is str and v in SIMPLE_TYPES for v in value)
        and len(set(value)) == len(value)
    )


def _names(value: Any) -> bool:  # stringArray: unique strings
    return (
        type(value) is list and all(type(v) is str for v in value) and len(set(value)) == len(value)
    )


def _anything(value: Any) -> bool:
    return True


class PlainCheck:
    """`valid(schema)`, with the metaschema's regex format check (`is_pattern`: True when a
    string is a pattern the metaschema's format checker accepts, False otherwise). With
    `formats`, a `format` must also be one of them (while formats are asserted, callgate
    refuses one it cannot check: such a schema is left to the full check, which says so)."""

    def __init__(
        self, is_pattern: Callable[[str], bool], formats: frozenset[str] | None = None
    ) -> None:
        self._is_pattern = is_pattern
        self._values: dict[str, Callable[[Any], bool]] = {
            "type": _type,
            "enum": lambda v: type(v) is list,
            "const": _anything,
            "multipleOf": lambda v: _number(v) and v > 0,
            "maximum": _number,
            "minimum": _number,
            "exclusiveMaximum": _number,
            "exclusiveMinimum": _number,
            "maxLength": _count,
            "minLength": _count,
            "maxItems": _count,
            "minItems": _count,
            "maxProperties": _count,
            "minProperties": _count,
            "uniqueItems": _flag,
            "pattern": lambda v: type(v) is str and self._is_pattern(v),
            "required": _names,
            "format": _string if formats is None else lambda v: type(v) is str and v in formats,
            "title": _string,
            "description": _string,
            "$comment": _string,
            "default": _anything,
            "examples": lambda v: type(v) is list,
            "deprecated": _flag,
            "readOnly": _flag,
            "writeOnly": _flag,
            "properties": self._schema_map,
            "additionalProperties": self.valid,
            "items": self.valid,
            "not": self.valid,
            "anyOf": self._schema_list,
            "oneOf": self._schema_list,
            "allOf": self._schema_list,
        }

    def valid(self, schema: Any) -> bool:
        """True: the metaschema accepts schema. False: ask the metaschema."""
        if type(schema) is bool:
            return True
        if type(schema) is not dict:
            return False
        values = self._values
        for keyword, value in schema.items():
            check = values.get(keyword)
            if check is None or not check(value):
                return False
        return True

    def _schema_map(self, value: Any) -> bool:
        return type(value) is dict and all(self.valid(v) for v in value.values())

    def _schema_list(self, value: Any) -> bool:
        return type(value) is list and len(value) > 0 and all(self.valid(v) for v in value)
