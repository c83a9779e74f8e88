"""A tool call's arguments: read with the one strict JSON reader and hashed one way, everywhere.

`read_arguments` is where the judge turns arguments text into a value, under the sidecar's
`--max-json-depth`; `parse_arguments` is the same reader for everyone reading arguments the
judge already saw (the executors, the audit summary, the policy input of later calls): it
answers None instead of raising. Both refuse NaN, Infinity, duplicate keys, lone surrogates,
integers beyond ±(2^53 − 1) and runaway nesting (`gateway.jsontext`), so every reader sees the
same value or none. `canonical_sha256` is SHA-256 over the RFC 8785 (JCS) canonical form.
"""

from __future__ import annotations

import hashlib
from typing import Any

import rfc8785

from gateway.canonical import canonical
from gateway.jsontext import JsonTextError, read_object
from gateway.limits import MAX_JSON_DEPTH_CAP

# Reader rules whose breach means "not a complete JSON object" (incomplete_arguments); any
# other rule means the object breaks a rule of JSON itself (invalid_arguments).
INCOMPLETE_RULES = frozenset({"syntax", "not_object"})


class ArgumentsError(ValueError):
    """The arguments are a JSON object that cannot be canonicalized; the message says why."""


def read_arguments(text: str, max_depth: int = MAX_JSON_DEPTH_CAP) -> dict[str, Any]:
    """The arguments as a JSON object; JsonTextError naming the rule the text breaks."""
    return read_object(text, max_depth=max_depth)


def parse_arguments(text: str, max_depth: int = MAX_JSON_DEPTH_CAP) -> dict[str, Any] | None:
    """The arguments as a JSON object, or None when the text is not one the reader accepts."""
    try:
        return read_object(text, max_depth=max_depth)
    except JsonTextError:
        return None


def canonical_sha256(value: Any) -> str:
    """SHA-256 hex over the RFC 8785 (JCS) canonical JSON form of value; ArgumentsError when
    JCS cannot represent it."""
    try:
        return hashlib.sha256(canonical(value)).hexdigest()
    except (rfc8785.CanonicalizationError, RecursionError) as exc:
        raise ArgumentsError(f"the arguments have no canonical JSON form: {exc}") from exc
