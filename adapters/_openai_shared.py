"""Pieces both OpenAI adapters (Responses and Chat Completions) share.

Field access that fails closed (`require_*` raise AdapterError "malformed_response" naming the
missing field), argument parsing, the error-kind table for OpenAI error codes, results matched to
call IDs, and the strict-mode test for a tool's JSON Schema.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from adapters._common import parse_object
from adapters.events import (
    AdapterError,
    ErrorKind,
    NormalizedCall,
    ProviderErrorEvent,
    ResponseMeta,
)

DONE_SENTINEL = "[DONE]"

# OpenAI error codes (Responses `error.code`, stream `error` events, HTTP error bodies' `code`
# or `type`) → (kind, retryable). Anything else is OTHER and not retryable: a person looks.
_ERROR_KINDS: dict[str, tuple[ErrorKind, bool]] = {
    "server_error": (ErrorKind.SERVER, True),
    "rate_limit_exceeded": (ErrorKind.RATE_LIMIT, True),
    "vector_store_timeout": (ErrorKind.TIMEOUT, True),
    "timeout": (ErrorKind.TIMEOUT, True),
}

# JSON Schema keywords OpenAI's strict mode does not accept; a schema using one stays non-strict.
_STRICT_UNSUPPORTED = frozenset(
    {
        "allOf",
        "oneOf",
        "not",
        "if",
        "then",
        "else",
        "dependentRequired",
        "dependentSchemas",
        "patternProperties",
    }
)


def require_mapping(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise AdapterError(f"{where} must be a JSON object, got {type(value).__name__}")
    return value


def require_list(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise AdapterError(f"{where} must be a JSON array, got {type(value).__name__}")
    return value


def require_str(body: Mapping[str, Any], key: str, where: str) -> str:
    value = body.get(key)
    if not isinstance(value, str):
        raise AdapterError(f"{where}.{key} is missing or not a string")
    return value


def require_int(body: Mapping[str, Any], key: str, where: str) -> int:
    value = body.get(key)
    if not isinstance(value, int) or isinstance(value, bool):
        raise AdapterError(f"{where}.{key} is missing or not an integer")
    return value


def optional_str(body: Mapping[str, Any], key: str) -> str:
    value = body.get(key)
    return value if isinstance(value, str) else ""


def token_count(usage: Any, key: str) -> int:
    if not isinstance(usage, dict):
        return 0
    value = usage.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def join_fragments(fragments: Sequence[str]) -> str:
    """Concatenate streamed text, rejoining a UTF-16 surrogate pair split across fragments
    (a JSON `\\ud83d` escape in one event and `\\ude00` in the next decode to two halves)."""
    text = "".join(fragments)
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


def make_call(
    call_id: str, name: str, arguments_json: str, original: dict[str, Any], complete: bool = True
) -> NormalizedCall:
    arguments = parse_object(arguments_json) if complete else None
    return NormalizedCall(
        call_id=call_id,
        name=name,
        arguments_json=arguments_json,
        arguments=arguments,
        original=original,
    )


def is_error_body(body: Mapping[str, Any], payload_key: str) -> bool:
    """An HTTP error body (`{"error": {...}}`) rather than a response carrying `payload_key`."""
    return isinstance(body.get("error"), dict) and payload_key not in body


def error_event(
    meta: ResponseMeta, error: Mapping[str, Any], original: dict[str, Any]
) -> ProviderErrorEvent:
    code = optional_str(error, "code")
    kind, retryable = _ERROR_KINDS.get(code) or _ERROR_KINDS.get(
        optional_str(error, "type"), (ErrorKind.OTHER, False)
    )
    message = optional_str(error, "message") or code or "provider error"
    return ProviderErrorEvent(
        meta=meta, kind=kind, message=message, retryable=retryable, original=original
    )


def strict_compatible(schema: Mapping[str, Any]) -> bool:
    """True when OpenAI strict mode can take `schema` as is: an object at the root, and every
    object has `additionalProperties: false` with all of its properties required."""
    return _is_object(schema) and "anyOf" not in schema and _strict_ok(schema)


def _is_object(node: Mapping[str, Any]) -> bool:
    kind = node.get("type")
    return (
        kind == "object" or (isinstance(kind, list) and "object" in kind) or ("properties" in node)
    )


def _strict_ok(node: Any) -> bool:
    if not isinstance(node, dict) or _STRICT_UNSUPPORTED & node.keys():
        return False
    if isinstance(node.get("items"), list):
        return False
    if _is_object(node) and not _object_strict_ok(node):
        return False
    return all(_strict_ok(child) for child in _subschemas(node))


def _object_strict_ok(node: Mapping[str, Any]) -> bool:
    properties = node.get("properties", {})
    required = node.get("required", [])
    if not isinstance(properties, dict) or not isinstance(required, list):
        return False
    return node.get("additionalProperties") is False and set(required) == set(properties)


def _subschemas(node: Mapping[str, Any]) -> Iterator[Any]:
    for key in ("properties", "$defs", "definitions"):
        children = node.get(key)
        if isinstance(children, dict):
            yield from children.values()
    for key in ("anyOf", "prefixItems"):
        children = node.get(key)
        if isinstance(children, list):
            yield from children
    for key in ("items", "contains"):
        if isinstance(node.get(key), dict):
            yield node[key]
