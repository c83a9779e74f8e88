"""RFC 8785 canonical JSON (what callgate hashes: arguments, definitions, audit seals), quickly.

`rfc8785.dumps` is the canonical form's reference, written in Python: tens of microseconds for
a small object. For a value made only of strings, integers within the safe range (±(2^53-1)),
booleans, nulls, lists and objects whose keys are below U+D800, orjson with sorted keys writes
the same bytes: its strings are escaped as RFC 8785's, and below U+D800 the UTF-16 order RFC 8785
sorts keys in is code point order. Any other value (a float, a larger integer, a key a UTF-16
order could sort differently, a lone surrogate) is written by rfc8785, which also raises its
errors (`rfc8785.CanonicalizationError`, for a lone surrogate in a key too).
tests/gateway/test_canonical.py checks that both agree on every value.
"""

from __future__ import annotations

from typing import Any

import orjson
import rfc8785

SAFE_INT = 2**53 - 1
_LAST_PLAIN_KEY_CHAR = "\ud7ff"


def canonical(value: Any) -> bytes:
    """The RFC 8785 text of value, as UTF-8 bytes."""
    if _plain(value):
        try:
            return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
        except orjson.JSONEncodeError:  # a lone surrogate, or nested past orjson's limit
            pass
    try:
        return rfc8785.dumps(value)
    except UnicodeError as exc:  # rfc8785 lets a lone surrogate in a key through as this
        raise rfc8785.CanonicalizationError("input contains non-UTF-8 codepoints") from exc


def _plain(value: Any) -> bool:
    kind = type(value)
    if kind is str or kind is bool or value is None:
        return True
    if kind is int:
        return -SAFE_INT <= value <= SAFE_INT
    if kind is dict:
        for key, item in value.items():
            if type(key) is not str or not (key.isascii() or max(key) <= _LAST_PLAIN_KEY_CHAR):
                return False
            if not _plain(item):
                return False
        return True
    if kind is list:
        return all(_plain(item) for item in value)
    return False
