"""Builtins the embedded engine has but answers differently from OPA, replaced here.

- `strings.count(search, substring)`: Go's `strings.Count` (non-overlapping matches; an empty
  substring counts the characters plus one). The engine's own panics on an empty substring and
  counts overlapping matches.
- `json.is_valid(x)`: false for anything that is not a string holding strict JSON (the engine
  raises a type error for a non-string).
"""

from __future__ import annotations

import json
from typing import Any

from gateway.policy.builtins.base import Extension, string_operand


def strings_count(search: Any, substring: Any) -> int:
    text, sub = string_operand(search, 1), string_operand(substring, 2)
    if not sub:
        return len(text) + 1
    return text.count(sub)


def json_is_valid(value: Any) -> bool:
    if not isinstance(value, str):
        return False
    try:
        json.loads(value, parse_constant=_reject)
    except ValueError:
        return False
    return True


def _reject(token: str) -> Any:
    raise ValueError(token)


EXTENSIONS = (
    Extension("strings.count", 2, strings_count),
    Extension("json.is_valid", 1, json_is_valid),
)
