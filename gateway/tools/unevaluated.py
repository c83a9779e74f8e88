"""`unevaluatedProperties` with `patternProperties` matched as everywhere else in callgate: by
the ECMA-262 engine of `gateway.tools.patterns`.

jsonschema's own keyword finds the properties a schema evaluated with Python's `re`, whose
meaning differs from ECMA-262's and whose time is not bounded; this is the same walk (the
keywords that evaluate properties, into `$ref`, the applicators and `if`/`then`/`else`, keeping
the annotations of subschemas that pass) with `search` in its place.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from jsonschema.exceptions import ValidationError

from gateway.tools.patterns import search


def _passes(validator: Any, instance: Any, schema: Any) -> bool:
    return next(validator.descend(instance, schema), None) is None


def _referenced(validator: Any, instance: Any, schema: dict[str, Any]) -> set[str]:
    found: set[str] = set()
    for keyword in ("$ref", "$dynamicRef"):  # (a dynamic one resolved as jsonschema does)
        ref = schema.get(keyword)
        if isinstance(ref, str):
            resolved = validator._resolver.lookup(ref)
            inner = validator.evolve(schema=resolved.contents, _resolver=resolved.resolver)
            found |= evaluated_keys(inner, instance, resolved.contents)
    return found


def _applied(validator: Any, instance: Any, schema: dict[str, Any]) -> set[str]:
    found: set[str] = set()
    for key, subschema in (schema.get("dependentSchemas") or {}).items():
        if key in instance:
            found |= evaluated_keys(validator, instance, subschema)
    for keyword in ("allOf", "oneOf", "anyOf"):
        for subschema in schema.get(keyword, ()):
            if _passes(validator, instance, subschema):
                found |= evaluated_keys(validator, instance, subschema)
    if "if" in schema:
        if _passes(validator, instance, schema["if"]):
            found |= evaluated_keys(validator, instance, schema["if"])
            if "then" in schema:
                found |= evaluated_keys(validator, instance, schema["then"])
        elif "else" in schema:
            found |= evaluated_keys(validator, instance, schema["else"])
    return found


def evaluated_keys(validator: Any, instance: dict[str, Any], schema: Any) -> set[str]:
    """The keys of instance that schema (and the subschemas it applies) evaluated."""
    if not isinstance(schema, dict):
        return set()
    found = _referenced(validator, instance, schema)
    properties = schema.get("properties")
    if isinstance(properties, dict):
        found |= properties.keys() & instance.keys()
    for keyword in ("additionalProperties", "unevaluatedProperties"):
        if keyword in schema:
            found |= {
                key for key, value in instance.items() if _passes(validator, value, schema[keyword])
            }
    patterns = schema.get("patternProperties")
    if isinstance(patterns, dict):
        found |= {key for key in instance if any(search(p, key) for p in patterns)}
    return found | _applied(validator, instance, schema)


def unevaluated_properties(
    validator: Any, unevaluated: Any, instance: Any, schema: dict[str, Any]
) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    evaluated = evaluated_keys(validator, instance, schema)
    failing = [
        key
        for key in instance
        if key not in evaluated and not _passes(validator, instance[key], unevaluated)
    ]
    if not failing:
        return
    joined = ", ".join(repr(key) for key in sorted(failing, key=str))
    verb = "was" if len(failing) == 1 else "were"
    if unevaluated is False:
        yield ValidationError(
            f"Unevaluated properties are not allowed ({joined} {verb} unexpected)"
        )
    else:
        yield ValidationError(
            f"Unevaluated properties are not valid under the given schema "
            f"({joined} {verb} unevaluated and invalid)"
        )
