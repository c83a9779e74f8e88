"""A quick yes for the arguments (and outputs) most calls carry, before jsonschema is asked.

jsonschema stays the validator of record: it says what is wrong, and it decides every case this
module does not. Validating a call's arguments with it costs about 25 µs for the example's
two-field schema (a generator per keyword and value), a tenth of an Authorize's own work, and
a model's calls rarely repeat their arguments, so that cost is paid on almost every call.

`quick_check(schema, format_checker)` compiles a schema made only of common keywords in their
plain forms (`type`, `properties`, `required`, `additionalProperties`, `items`, string, number
and size bounds, `pattern`, `format`, `enum`/`const` of strings, and annotations) into a
function of an instance that answers True only when jsonschema would find no error: each
keyword is applied exactly as callgate's validator applies it (`gateway.tools.schema`: the
same ECMA-262 pattern search, the same format checker), and only to the JSON types it applies
to. Anything else answers False, and the caller asks jsonschema, which may still find the
instance valid: a value of a type JSON does not have, a failed check (jsonschema then says
what failed). A schema with any other keyword (or a keyword in another form) compiles to None:
every instance goes to jsonschema. tests/gateway/tools/test_quick_check.py holds the two to
the same verdicts over generated schemas and instances.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sized
from typing import Any, Final, cast

from gateway.tools.patterns import PatternError, searcher

Check = Callable[[Any], bool]

_ANNOTATIONS: Final = frozenset(
    {"title", "description", "$comment", "default", "examples", "deprecated", "readOnly",
     "writeOnly"}
)  # fmt: skip
_JSON_SCALARS: Final = frozenset({str, int, float, bool, type(None)})
_INFINITY: Final = float("inf")


class _NotPlain(Exception):
    """A keyword, or a form of one, this module leaves to jsonschema."""


def quick_check(schema: Any, format_checker: Any = None) -> Check | None:
    """The quick check of a schema `check_schema` passed, or None when it is not plain.
    `format_checker`: the validator's (None when formats are annotations)."""
    try:
        root = dict(schema) if isinstance(schema, dict) else schema
        if isinstance(root, dict):
            root.pop("$schema", None)  # check_schema allowed only 2020-12's URI
        check = _compile(root, format_checker)
    except (_NotPlain, PatternError, RecursionError):
        return None
    # every check below reads JSON's types exactly (`type(x) is str`) where jsonschema asks
    # isinstance: on a value of another type (a str subclass, a Decimal) the two could differ,
    # so such an instance is left to jsonschema whole
    return lambda instance: _plain_value(instance) and check(instance)


def _always(instance: Any) -> bool:
    return True


def _never(instance: Any) -> bool:
    return False


def _compile(schema: Any, formats: Any) -> Check:
    if schema is True:
        return _always
    if schema is False:
        return _never
    if type(schema) is not dict:
        raise _NotPlain
    checks: list[Check] = []
    for keyword, value in schema.items():
        if keyword in _ANNOTATIONS:
            continue
        make = _KEYWORDS.get(keyword)
        if make is None:
            raise _NotPlain
        checks.append(make(value, schema, formats))
    if not checks:
        return _always
    if len(checks) == 1:
        return checks[0]
    return _all(tuple(checks))


def _all(checks: tuple[Check, ...]) -> Check:
    def check(instance: Any) -> bool:
        for each in checks:
            if not each(instance):
                return False
        return True

    return check


# ---------------------------------------------------------------------- types


def _is_integer(instance: Any) -> bool:
    kind = type(instance)
    return kind is int or (kind is float and instance.is_integer())


def _is_number(instance: Any) -> bool:
    kind = type(instance)
    return kind is int or kind is float


_TYPES: Final[Mapping[str, Check]] = {
    "string": lambda i: type(i) is str,
    "integer": _is_integer,
    "number": _is_number,
    "boolean": lambda i: type(i) is bool,
    "null": lambda i: i is None,
    "object": lambda i: type(i) is dict,
    "array": lambda i: type(i) is list,
}


def _type(value: Any, schema: dict[str, Any], formats: Any) -> Check:
    if type(value) is str and value in _TYPES:
        return _TYPES[value]
    if type(value) is list and value and all(type(v) is str and v in _TYPES for v in value):
        tests = [_TYPES[v] for v in value]
        return lambda instance: any(test(instance) for test in tests)
    raise _NotPlain


# ---------------------------------------------------------------------- objects


def _properties(value: Any, schema: dict[str, Any], formats: Any) -> Check:
    if type(value) is not dict or not all(type(k) is str for k in value):
        raise _NotPlain
    named = [(name, _compile(sub, formats)) for name, sub in value.items()]

    def check(instance: Any) -> bool:
        if type(instance) is not dict:
            return True
        for name, sub in named:
            if name in instance and not sub(instance[name]):
                return False
        return True

    return check


def _additional(value: Any, schema: dict[str, Any], formats: Any) -> Check:
    if "patternProperties" in schema:
        raise _NotPlain
    named = frozenset(schema.get("properties") or ())
    extra = _compile(value, formats)
    if extra is _always:
        return _always
    if extra is _never:
        return lambda instance: type(instance) is not dict or instance.keys() <= named

    def check(instance: Any) -> bool:
        if type(instance) is not dict:
            return True
        return all(extra(v) for k, v in instance.items() if k not in named)

    return check


def _required(value: Any, schema: dict[str, Any], formats: Any) -> Check:
    if type(value) is not list or not all(type(v) is str for v in value):
        raise _NotPlain
    names = tuple(value)
    return lambda instance: type(instance) is not dict or all(n in instance for n in names)


def _size(kind: type[Sized], at_least: bool) -> Callable[[Any, dict[str, Any], Any], Check]:
    """minLength/maxLength (strings), minItems/maxItems (arrays), min/maxProperties."""

    def make(value: Any, schema: dict[str, Any], formats: Any) -> Check:
        if type(value) is not int or value < 0:
            raise _NotPlain
        if at_least:
            return lambda instance: (
                type(instance) is not kind or len(cast(Sized, instance)) >= value
            )
        return lambda instance: type(instance) is not kind or len(cast(Sized, instance)) <= value

    return make


# ---------------------------------------------------------------------- arrays


def _items(value: Any, schema: dict[str, Any], formats: Any) -> Check:
    if "prefixItems" in schema:
        raise _NotPlain
    each = _compile(value, formats)
    return lambda instance: type(instance) is not list or all(each(item) for item in instance)


# ---------------------------------------------------------------------- numbers


def _bound(compare: Callable[[Any, Any], bool]) -> Callable[[Any, dict[str, Any], Any], Check]:
    def make(value: Any, schema: dict[str, Any], formats: Any) -> Check:
        if type(value) is not int and type(value) is not float:
            raise _NotPlain
        return lambda instance: not _is_number(instance) or compare(instance, value)

    return make


# ---------------------------------------------------------------------- strings


def _pattern(value: Any, schema: dict[str, Any], formats: Any) -> Check:
    if type(value) is not str:
        raise _NotPlain
    found = searcher(value)  # the search `gateway.tools.schema` runs (PatternError: not plain)
    return lambda instance: type(instance) is not str or found(instance)


def _format(value: Any, schema: dict[str, Any], formats: Any) -> Check:
    if type(value) is not str:
        raise _NotPlain
    if formats is None:
        return _always  # an annotation only
    if value not in formats.checkers:
        raise _NotPlain  # jsonschema says it cannot be checked
    return lambda instance: formats.conforms(instance, value)


def _enum(value: Any, schema: dict[str, Any], formats: Any) -> Check:
    if type(value) is not list or not value or not all(type(v) is str for v in value):
        raise _NotPlain
    members = frozenset(value)
    return lambda instance: type(instance) is str and instance in members


def _const(value: Any, schema: dict[str, Any], formats: Any) -> Check:
    if type(value) is not str:
        raise _NotPlain
    return lambda instance: type(instance) is str and instance == value


# ---------------------------------------------------------------------- any value


def _plain_value(instance: Any) -> bool:
    """Whether instance holds only JSON's types (what callgate reads from JSON text)."""
    kind = type(instance)
    if kind in _JSON_SCALARS:
        return kind is not float or instance == instance and abs(instance) != _INFINITY
    if kind is list:
        return all(_plain_value(v) for v in instance)
    if kind is dict:
        return all(type(k) is str and _plain_value(v) for k, v in instance.items())
    return False


_KEYWORDS: Final[Mapping[str, Callable[[Any, dict[str, Any], Any], Check]]] = {
    "type": _type,
    "properties": _properties,
    "additionalProperties": _additional,
    "required": _required,
    "items": _items,
    "minLength": _size(str, True),
    "maxLength": _size(str, False),
    "minItems": _size(list, True),
    "maxItems": _size(list, False),
    "minProperties": _size(dict, True),
    "maxProperties": _size(dict, False),
    "minimum": _bound(lambda i, b: i >= b),
    "maximum": _bound(lambda i, b: i <= b),
    "exclusiveMinimum": _bound(lambda i, b: i > b),
    "exclusiveMaximum": _bound(lambda i, b: i < b),
    "pattern": _pattern,
    "format": _format,
    "enum": _enum,
    "const": _const,
}
