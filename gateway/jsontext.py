"""The one reader for every JSON text that enters callgate, and the one writer for what it
stores.

`read_json` is strict RFC 8259: `NaN`, `Infinity`, duplicate object keys and lone surrogates
(escaped or raw) are refused; so are numbers that do not fit a double (`1e400`), integers
beyond ±(2^53 − 1) unless the caller keeps them exactly (`big_integers=True`, for tool
outputs, which are stored as text), and nesting deeper than `max_depth`. Every refusal is a
`JsonTextError` whose `rule` is stable and whose message names it, so callers answer
`invalid_arguments` or `malformed_response` with a reason a person can act on.

`write_json` is the bounded writer: compact, strict, refusing what a reader would refuse.
`storable_text` keeps free text (reasons, messages) storable.
"""

from __future__ import annotations

import json
import math
import re
from itertools import accumulate
from typing import Any

DEFAULT_MAX_DEPTH = 64
MAX_SAFE_INTEGER = 2**53 - 1
MAX_INTEGER_DIGITS = 4300  # Python's own limit for int(str) and str(int)

_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def has_lone_surrogate(text: str) -> bool:
    """Whether text holds a lone UTF-16 surrogate, which no UTF-8 text can: a Python string
    can (JSON's and YAML's `\\ud800` escapes, os.environ's stand-ins for bytes not UTF-8)."""
    return not text.isascii() and LONE_SURROGATE.search(text) is not None


class JsonTextError(ValueError):
    """A JSON text broke a rule. `rule` is one of: syntax, not_object, depth, duplicate_key,
    non_finite, integer_range, lone_surrogate, size (and not_json: a value the writer was given
    is not JSON at all)."""

    def __init__(self, rule: str, message: str) -> None:
        super().__init__(message)
        self.rule = rule
        self.message = message


def _reject_constant(name: str) -> Any:
    raise JsonTextError("non_finite", f"{name} is not a JSON number")


def _float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise JsonTextError("non_finite", f"the number {text[:40]} is out of range for a double")
    return value


def _safe_int(text: str) -> int:
    value = int(text) if len(text) <= 17 else MAX_SAFE_INTEGER + 1
    if abs(value) > MAX_SAFE_INTEGER:
        raise JsonTextError(
            "integer_range",
            f"the integer {text[:40]}"
            f"{'…' if len(text) > 40 else ''} is outside ±(2^53 − 1), the "
            "range every JSON reader keeps exactly",
        )
    return value


def _exact_int(text: str) -> int:
    if len(text) > MAX_INTEGER_DIGITS:
        raise JsonTextError("integer_range", f"an integer of {len(text)} digits is too long")
    return int(text)


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    value = dict(pairs)
    if len(value) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise JsonTextError(
                    "duplicate_key",
                    f"duplicate object key {key!r}: a reader could take either value",
                )
            seen.add(key)
    return value


# one decoder per integer rule, made once (json.loads with hooks builds one, with its scanner,
# on every call); decoding keeps no state between texts
_DECODERS = {
    big: json.JSONDecoder(
        object_pairs_hook=_object,
        parse_constant=_reject_constant,
        parse_float=_float,
        parse_int=_exact_int if big else _safe_int,
    )
    for big in (False, True)
}


def read_json(
    text: str | bytes, *, max_depth: int = DEFAULT_MAX_DEPTH, big_integers: bool = False
) -> Any:
    """The value of one strict JSON text; JsonTextError naming the rule it breaks."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise JsonTextError("syntax", f"not UTF-8 text: {exc}") from exc
    if has_lone_surrogate(text):
        raise JsonTextError("lone_surrogate", "the text contains a lone UTF-16 surrogate")
    if text.startswith("\ufeff"):  # (json.loads refuses it too; decode() alone does not)
        raise JsonTextError("syntax", "not valid JSON: the text starts with a byte order mark")
    try:
        value = _DECODERS[big_integers].decode(text)
    except JsonTextError:
        raise
    except RecursionError as exc:
        raise JsonTextError("depth", f"nesting deeper than {max_depth} levels") from exc
    except json.JSONDecodeError as exc:
        raise JsonTextError(
            "syntax", f"not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"
        ) from exc
    except ValueError as exc:  # e.g. an integer beyond Python's digit limit
        raise JsonTextError("integer_range", f"a number cannot be read exactly: {exc}") from exc
    _check_depth(text, max_depth)
    if _SURROGATE_ESCAPE.search(text):
        _check_strings(value)
    return value


def read_object(text: str | bytes, **rules: Any) -> dict[str, Any]:
    """`read_json` for a text that must be a JSON object."""
    value = read_json(text, **rules)
    if not isinstance(value, dict):
        raise JsonTextError("not_object", "the text is JSON but not an object")
    return value


def _check_depth(text: str, max_depth: int) -> None:
    if text.count("[") + text.count("{") > max_depth and depth(text) > max_depth:
        raise JsonTextError("depth", f"nesting deeper than {max_depth} levels")


def depth(text: str) -> int:
    """How deeply a valid JSON text nests arrays and objects (strings are skipped)."""
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text))
    return max(accumulate(map(_STEP.__getitem__, brackets)), default=0)


def _check_strings(value: Any) -> None:
    """Refuse a lone surrogate anywhere (keys included); pairs were joined by the parser."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            _check_text(item)
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def _check_text(text: str) -> None:
    if has_lone_surrogate(text):
        raise JsonTextError(
            "lone_surrogate",
            f"a string holds a lone UTF-16 surrogate ({ascii(text[:40])}); it is not Unicode text",
        )


# ---------------------------------------------------------------------- writing


def write_json(value: Any, *, limit: int | None = None, max_depth: int = DEFAULT_MAX_DEPTH) -> str:
    """Compact JSON text of value (non-ASCII kept); JsonTextError for what `read_json` would
    not take back (NaN, lone surrogates, non-JSON types, nesting deeper than max_depth) or a
    text longer than `limit` UTF-8 bytes."""
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except RecursionError as exc:
        raise JsonTextError("depth", "the value nests too deeply to write") from exc
    except TypeError as exc:
        raise JsonTextError("not_json", f"the value is not JSON: {exc}") from exc
    except ValueError as exc:
        raise JsonTextError("non_finite", f"the value is not JSON: {exc}") from exc
    if not text.isascii():
        _check_text(text)
    _check_depth(text, max_depth)
    if limit is not None and len(text) > limit // 4 and len(text.encode()) > limit:
        raise JsonTextError("size", f"{len(text.encode())} bytes, over the limit of {limit}")
    return text


def storable_text(text: str) -> str:
    """text with any lone surrogate and any NUL (which PostgreSQL text cannot hold) replaced
    by U+FFFD (surrogate pairs are joined), so every store can encode it."""
    if "\x00" in text:
        text = text.replace("\x00", "\ufffd")
    if not has_lone_surrogate(text):
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
