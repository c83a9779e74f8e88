"""JSON Schema for tool arguments and outputs: 2020-12 only, references resolved within the
schema (a remote `$ref` is never fetched), problems reported best first with their JSON path."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError, ValidationError, best_match
from jsonschema.protocols import Validator
from jsonschema_specifications import REGISTRY as SPECIFICATIONS
from referencing import Registry as RefRegistry
from referencing import Resource
from referencing.exceptions import Unresolvable, Unretrievable
from referencing.jsonschema import DRAFT202012

from gateway.executors.outcome import excerpt
from gateway.tools.problems import FieldPath, ManifestProblem

MAX_REPORTED_ERRORS = 5
_SCHEMA_URIS = ("https://json-schema.org/draft/2020-12/schema",
                "https://json-schema.org/draft/2020-12/schema#")
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
        return (f"{keyword} {ref!r} points outside this schema; remote references are never "
                "fetched (copy the definition under $defs)")
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


def compile_schema(schema: dict[str, Any], field: FieldPath) -> Validator:
    """Check a 2020-12 schema (and every $ref in it) and build its validator."""
    declared = schema.get("$schema")
    if declared is not None and declared not in _SCHEMA_URIS:
        raise ManifestProblem((*field, "$schema"), f"{declared!r}: only JSON Schema 2020-12 "
                                            f"({_SCHEMA_URIS[0]}) is supported")
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        raise ManifestProblem((*field, *exc.absolute_path), exc.message) from exc
    resource = DRAFT202012.create_resource(schema)
    root = SPECIFICATIONS.combine(_NO_REMOTE).resolver_with_root(resource)
    _check_refs(resource, root, field)
    validator: Validator = Draft202012Validator(
        schema, registry=_NO_REMOTE, format_checker=Draft202012Validator.FORMAT_CHECKER)
    return validator


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
