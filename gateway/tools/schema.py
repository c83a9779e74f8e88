"""JSON Schema for tool arguments and outputs: 2020-12 only, references resolved within the
schema (a remote `$ref` is never fetched), problems reported best first with their JSON path.

Patterns (`pattern`, `patternProperties`, and `additionalProperties` and
`unevaluatedProperties` beside them) run with ECMA-262 meaning on a linear-time engine
(`gateway.tools.patterns`). Formats are asserted, each checked completely
(`gateway.tools.formats`), unless the manifest says `format_assertion: false`: then they are
the annotations the specification makes them by default. A schema is refused at load when a
pattern cannot be run that way, when it names a format callgate cannot check (while formats
are asserted), or when it refers to itself without descending into the value
(`{"$ref": "#"}`: validating would never end).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Iterator
from typing import Any

from jsonschema import Draft202012Validator, FormatChecker, validators
from jsonschema.exceptions import FormatError, SchemaError, ValidationError, best_match
from jsonschema.protocols import Validator
from jsonschema_specifications import REGISTRY as SPECIFICATIONS
from referencing import Registry as RefRegistry
from referencing import Resource
from referencing.exceptions import Unresolvable, Unretrievable
from referencing.jsonschema import DRAFT202012

from gateway.executors.results import excerpt
from gateway.tools.formats import CHECKED_FORMATS, FORMAT_CHECKER
from gateway.tools.metaschema import flattened
from gateway.tools.patterns import PatternError, compiled, search
from gateway.tools.plain_schema import PlainCheck
from gateway.tools.problems import FieldPath, ManifestProblem
from gateway.tools.unevaluated import unevaluated_properties

MAX_REPORTED_ERRORS = 5
_SCHEMA_URIS = (
    "https://json-schema.org/draft/2020-12/schema",
    "https://json-schema.org/draft/2020-12/schema#",
)
_WEAK_KEYWORDS = frozenset({"anyOf", "oneOf"})


class RemoteReferenceRefused(Exception):
    """A schema referred to something outside itself; callgate never fetches it."""


def _refuse_remote(uri: str) -> Resource[Any]:
    raise RemoteReferenceRefused(uri)


# Every validator resolves references only within its own schema (and the bundled
# metaschemas); retrieving anything else raises instead of fetching.
_NO_REMOTE: RefRegistry[Any] = RefRegistry(retrieve=_refuse_remote)  # type: ignore[call-arg]


def _is_remote(exc: BaseException | None) -> bool:
    while exc is not None:
        if isinstance(exc, RemoteReferenceRefused | Unretrievable):
            return True
        exc = exc.__cause__
    return False


def _unresolvable(keyword: str, ref: str, exc: Unresolvable) -> str:
    if _is_remote(exc):
        return (
            f"{keyword} {ref!r} points outside this schema; remote references are never "
            "fetched (copy the definition under $defs)"
        )
    return f"{keyword} {ref!r} cannot be resolved: {excerpt(str(exc))}"


def _check_refs(resource: Resource[Any], resolver: Any, field: FieldPath) -> None:
    resolver = resolver.in_subresource(resource)
    contents = resource.contents
    if isinstance(contents, dict):
        for keyword in ("$ref", "$dynamicRef"):
            ref = contents.get(keyword)
            if isinstance(ref, str):
                try:
                    resolver.lookup(ref)
                except Unresolvable as exc:
                    raise ManifestProblem(field, _unresolvable(keyword, ref, exc)) from exc
    for sub in resource.subresources():
        _check_refs(sub, resolver, field)


# ---------------------------------------------------------------------- ECMA-262 patterns


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[Any]:
    if validator.is_type(instance, "string") and not search(pattern, instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(
    validator: Any, patterns: dict[str, Any], instance: Any, schema: Any
) -> Iterator[Any]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for key, value in instance.items():
            if search(pattern, key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _additional_properties(
    validator: Any, extra_schema: Any, instance: Any, schema: dict[str, Any]
) -> Iterator[Any]:
    if not validator.is_type(instance, "object"):
        return
    named = schema.get("properties", {})
    patterns = list(schema.get("patternProperties", {}))
    extras = sorted(
        (key for key in instance if key not in named and not any(search(p, key) for p in patterns)),
        key=str,
    )
    if validator.is_type(extra_schema, "object"):
        for extra in extras:
            yield from validator.descend(instance[extra], extra_schema, path=extra)
    elif not extra_schema and extras:
        joined = ", ".join(repr(each) for each in extras)
        if patterns:
            yield ValidationError(
                f"{joined} {'does' if len(extras) == 1 else 'do'} not match "
                f"any of the regexes: {', '.join(map(repr, sorted(patterns)))}"
            )
        else:
            yield ValidationError(
                f"Additional properties are not allowed ({joined} "
                f"{'was' if len(extras) == 1 else 'were'} unexpected)"
            )


def _format(validator: Any, fmt: Any, instance: Any, schema: Any) -> Iterator[Any]:
    checker = validator.format_checker
    if checker is None:
        return  # format_assertion: false
    if fmt not in checker.checkers:  # refused at load; a reference can still reach one
        yield ValidationError(f"{fmt!r} is not a format callgate can check")
        return
    try:
        checker.check(instance, fmt)
    except FormatError as error:
        yield ValidationError(error.message, cause=error.cause)


def _is_pattern(value: object) -> bool:
    if isinstance(value, str):
        compiled(value)  # PatternError says why not
    return True


# the formats a schema's own keywords are checked with against the metaschema: a `pattern`
# (and a patternProperties name) must be an ECMA-262 pattern callgate can run
META_FORMATS = FormatChecker(formats=())
META_FORMATS.checks("regex", raises=PatternError)(_is_pattern)

_Validator = validators.extend(
    Draft202012Validator,
    {
        "pattern": _pattern,
        "patternProperties": _pattern_properties,
        "additionalProperties": _additional_properties,
        "unevaluatedProperties": unevaluated_properties,
        "format": _format,
    },
)

# ---------------------------------------------------------------------- walking a schema

_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_SCHEMA_ONE = (
    "items",
    "additionalProperties",
    "unevaluatedProperties",
    "unevaluatedItems",
    "contains",
    "propertyNames",
    "not",
    "if",
    "then",
    "else",
)
_SCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems")
# keywords applying their subschemas to the same value (no descent into it)
_IN_PLACE_ONE = ("not", "if", "then", "else")
_IN_PLACE_LISTS = ("allOf", "anyOf", "oneOf")


def _children(
    node: dict[str, Any],
    path: FieldPath,
    ones: Iterable[str] = _SCHEMA_ONE,
    lists: Iterable[str] = _SCHEMA_LISTS,
    maps: Iterable[str] = _SCHEMA_MAPS,
) -> Iterator[tuple[Any, FieldPath]]:
    for key in maps:
        if isinstance(node.get(key), dict):
            yield from ((child, (*path, key, name)) for name, child in node[key].items())
    for key in ones:
        if key in node:
            yield node[key], (*path, key)
    for key in lists:
        if isinstance(node.get(key), list):
            yield from ((child, (*path, key, i)) for i, child in enumerate(node[key]))


def _schemas(node: Any, path: FieldPath) -> Iterator[tuple[dict[str, Any], FieldPath]]:
    """Every (sub)schema object with its field path, root first."""
    stack = [(node, path)]
    while stack:
        item, where = stack.pop()
        if isinstance(item, dict):
            yield item, where
            stack.extend(_children(item, where))


def _check_patterns(schema: dict[str, Any], field: FieldPath) -> None:
    for node, where in _schemas(schema, field):
        found = (
            [(node["pattern"], (*where, "pattern"))] if isinstance(node.get("pattern"), str) else []
        )
        if isinstance(node.get("patternProperties"), dict):
            found += [
                (key, (*where, "patternProperties", key)) for key in node["patternProperties"]
            ]
        for pattern, at in found:
            try:
                compiled(pattern)
            except PatternError as exc:
                raise ManifestProblem(at, str(exc)) from exc


def _check_formats(schema: dict[str, Any], field: FieldPath) -> None:
    """While formats are asserted, each must be one callgate checks completely."""
    for node, where in _schemas(schema, field):
        fmt = node.get("format")
        if isinstance(fmt, str) and fmt not in CHECKED_FORMATS:
            raise ManifestProblem(
                (*where, "format"),
                f"{fmt!r} is not a format callgate can "
                f"check (it checks {', '.join(sorted(CHECKED_FORMATS))}); "
                "to keep formats as annotations only, set "
                "format_assertion: false in the manifest",
            )


class _Endless(Exception):
    pass


def _check_ends(schema: dict[str, Any], root: Any, field: FieldPath) -> None:
    """Refuse a schema whose validation could loop on one value: a cycle of `$ref`s and
    in-place keywords (allOf, not, if, ...) that never descends into the value."""
    done: set[int] = set()
    for node, where in _schemas(schema, field):
        try:
            _visit(node, root, set(), done)
        except _Endless:
            raise ManifestProblem(
                where,
                "the schema refers to itself without end (a $ref "
                "cycle that never descends into the value)",
            ) from None
        except Unresolvable:
            continue  # reported by _check_refs


def _visit(node: Any, resolver: Any, path: set[int], done: set[int]) -> None:
    if not isinstance(node, dict) or id(node) in done:
        return
    if id(node) in path:
        raise _Endless
    path.add(id(node))
    resolver = resolver.in_subresource(DRAFT202012.create_resource(node))
    for child, _ in _children(node, (), _IN_PLACE_ONE, _IN_PLACE_LISTS, ("dependentSchemas",)):
        _visit(child, resolver, path, done)
    for keyword in ("$ref", "$dynamicRef"):
        ref = node.get(keyword)
        if isinstance(ref, str):
            resolved = resolver.lookup(ref)
            _visit(resolved.contents, resolved.resolver, path, done)
    path.discard(id(node))
    done.add(id(node))


def compile_schema(
    schema: dict[str, Any], field: FieldPath, *, format_assertion: bool = True
) -> Validator:
    """Check a 2020-12 schema (`check_schema`) and build its validator."""
    check_schema(schema, field, format_assertion=format_assertion)
    return schema_validator(schema, format_assertion=format_assertion)


def check_schema(
    schema: dict[str, Any], field: FieldPath, *, format_assertion: bool = True
) -> None:
    """Check a 2020-12 schema: every $ref, every pattern, every format while they are asserted,
    no endless self-reference; ManifestProblem naming the first problem. A plain schema
    (`gateway.tools.plain_schema`) passes the metaschema, has no reference to check or loop
    through, had its patterns compiled and, while formats are asserted, names only formats
    callgate checks: it needs nothing more."""
    declared = schema.get("$schema")
    if declared is not None and declared not in _SCHEMA_URIS:
        raise ManifestProblem(
            (*field, "$schema"),
            f"{declared!r}: only JSON Schema 2020-12 ({_SCHEMA_URIS[0]}) is supported",
        )
    try:
        if (_PLAIN_ASSERTED if format_assertion else _PLAIN).valid(schema):
            return  # refers to nothing; its patterns compiled, its formats ones callgate checks
        _check_against_metaschema(schema)
        resource = DRAFT202012.create_resource(schema)
        root = SPECIFICATIONS.combine(_NO_REMOTE).resolver_with_root(resource)
        _check_refs(resource, root, field)
        _check_patterns(schema, field)
        if format_assertion:
            _check_formats(schema, field)
        _check_ends(schema, root, field)
    except SchemaError as exc:
        why = f": {exc.cause}" if exc.cause is not None else ""
        raise ManifestProblem((*field, *exc.absolute_path), exc.message + why) from exc
    except RecursionError as exc:
        raise ManifestProblem(field, "the schema nests too deeply") from exc


def schema_validator(schema: dict[str, Any], *, format_assertion: bool = True) -> Validator:
    """The validator of a schema `check_schema` passed."""
    validator: Validator = _Validator(
        schema, registry=_NO_REMOTE, format_checker=FORMAT_CHECKER if format_assertion else None
    )
    return validator


def _check_against_metaschema(schema: dict[str, Any]) -> None:
    """Draft202012Validator.check_schema, with patterns checked as ECMA-262 (`META_FORMATS`).
    A fraction of a millisecond a schema; a schema met before (manifests often share their
    schemas) is known to pass."""
    try:
        text = json.dumps(schema, sort_keys=True)
    except (TypeError, ValueError):
        text = None
    if text is not None and text in _PASSED:
        return
    error = best_match(_meta_validator().iter_errors(schema))
    if error is not None:
        raise SchemaError.create_from(error)
    if text is not None and len(_PASSED) < _PASSED_MAX:
        _PASSED.add(text)


def _is_meta_pattern(pattern: str) -> bool:
    return META_FORMATS.conforms(pattern, "regex")


_PLAIN = PlainCheck(_is_meta_pattern)
_PLAIN_ASSERTED = PlainCheck(_is_meta_pattern, CHECKED_FORMATS)
_PASSED: set[str] = set()  # schemas (JSON, keys sorted) that passed the metaschema
_PASSED_MAX = 100_000


@functools.cache
def _meta_validator() -> Validator:
    """The 2020-12 metaschema's validator, on its flattened form (`metaschema.flattened`:
    the same verdicts, five times faster)."""
    return Draft202012Validator(flattened(), format_checker=META_FORMATS)


def _pointer(path: Iterable[Any]) -> str:
    tokens = [str(p).replace("~", "~0").replace("/", "~1") for p in path]
    return "/" + "/".join(tokens) if tokens else "(root)"


def _relevance(error: ValidationError) -> tuple[int, bool]:
    """Sort key, best first: shallower errors (more is wrong), then strong keywords; the sort
    is stable, so siblings keep the schema's order."""
    return (len(error.path), error.validator in _WEAK_KEYWORDS)


def schema_problems(validator: Validator, instance: Any) -> str | None:
    """None when instance is valid; else its problems, best first, each with its JSON path."""
    try:
        if validator.is_valid(instance):  # the common case: no error objects to build
            return None
        errors = sorted(validator.iter_errors(instance), key=_relevance)
    except Unresolvable as exc:
        what = "refers outside the schema (never fetched)" if _is_remote(exc) else "is broken"
        return f"(schema): a $ref {what}: {excerpt(str(exc))}"
    except RecursionError:
        return "(schema): the schema refers to itself without end"
    if not errors:
        return None
    lines: list[str] = []
    for error in errors:
        best = best_match([error]) or error
        line = f"{_pointer(best.absolute_path)}: {excerpt(best.message)}"
        if line not in lines:
            lines.append(line)
    more = len(lines) - MAX_REPORTED_ERRORS
    text = "; ".join(lines[:MAX_REPORTED_ERRORS])
    return f"{text}; and {more} more" if more > 0 else text
