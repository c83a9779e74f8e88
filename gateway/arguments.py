"""A tool call's arguments: parsed with one reader and hashed one way, everywhere.

`parse_arguments` is the only place arguments text becomes a value (the judge, the executors,
the audit summary and the policy input all use it), so every reader sees the same value under
the same limits. `arguments_sha256` is SHA-256 over the RFC 8785 (JCS) canonical form; text
that is not a JSON object has no hash (""), and a value JCS cannot represent (an integer beyond
±2^53, NaN, a lone surrogate) is refused rather than hashed some other way.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import rfc8785


class ArgumentsError(ValueError):
    """The arguments are a JSON object that cannot be canonicalized; the message says why."""


def parse_arguments(text: str) -> dict[str, Any] | None:
    """The arguments as a JSON object, or None when the text is not one."""
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def canonical_sha256(value: Any) -> str:
    """SHA-256 hex over the RFC 8785 (JCS) canonical JSON form of value; ArgumentsError when
    JCS cannot represent it."""
    try:
        return hashlib.sha256(rfc8785.dumps(value)).hexdigest()
    except (rfc8785.CanonicalizationError, RecursionError) as exc:
        raise ArgumentsError(f"the arguments have no canonical JSON form: {exc}") from exc

