"""Regular expressions of JSON Schema (`pattern`, `patternProperties`): ECMA-262 semantics,
run by RE2, whose matching time is linear in the input (no catastrophic backtracking).

An ECMA-262 pattern is translated to RE2 syntax where the two differ: `$` matches only at the
end (RE2 agrees; Python's `re` would also match before a final newline), `.` matches anything
but line terminators (\\n \\r U+2028 U+2029), `\\s` is ECMA's set of white space, `\\uXXXX`
(and surrogate pairs written that way) is a code point, `(?<name>` is a named group, `[]` never
matches and `[^]` matches anything. `\\d`, `\\w` and `\\b` are ASCII in both. What RE2 cannot
run (look-around, backreferences) or what is not a regular expression at all is a
`PatternError` at load, so a manifest names the problem before any call arrives.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import re2

# ECMA-262 WhiteSpace and LineTerminator code points, as the members of an RE2 class
_SPACE = (r"\t\n\x{0B}\f\r \x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}"
          r"\x{205F}\x{3000}\x{FEFF}")
_DOT = r"[^\n\r\x{2028}\x{2029}]"
_ANY = r"[\x{0}-\x{10FFFF}]"
_NOTHING = r"[^\x{0}-\x{10FFFF}]"
_HEX = frozenset("0123456789abcdefABCDEF")

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False


class PatternError(ValueError):
    """A pattern callgate cannot run with JSON Schema's meaning; the message says why."""


def search(pattern: str, text: str) -> bool:
    """Whether the (ECMA-262) pattern matches anywhere in text, as JSON Schema asks."""
    return compiled(pattern).search(text) is not None


@lru_cache(maxsize=4096)
def compiled(pattern: str) -> Any:
    """The RE2 program for an ECMA-262 pattern; PatternError when it cannot be run."""
    try:
        return re2.compile(_translate(pattern), _OPTIONS)
    except re2.error as exc:
        detail = exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else exc
        raise PatternError(f"{pattern!r} is not a regular expression callgate can run: "
                           f"{detail}") from exc


class _Reader:
    def __init__(self, pattern: str) -> None:
        self.text = pattern
        self.i = 0
        self.out: list[str] = []
        self.in_class = False

    def take(self, n: int = 1) -> str:
        piece = self.text[self.i:self.i + n]
        self.i += n
        return piece

    def ahead(self, prefix: str) -> bool:
        return self.text.startswith(prefix, self.i)


def _translate(pattern: str) -> str:
    r = _Reader(pattern)
    while r.i < len(r.text):
        if r.ahead("\\"):
            r.out.append(_escape(r))
        elif r.in_class:
            r.in_class = r.take() != "]"
            r.out.append(r.text[r.i - 1])
        else:
            r.out.append(_outside_class(r))
    return "".join(r.out)


def _outside_class(r: _Reader) -> str:
    for literal, meaning in (("[]", _NOTHING), ("[^]", _ANY), ("(?<=", None), ("(?<!", None),
                             ("(?=", None), ("(?!", None)):
        if r.ahead(literal):
            if meaning is None:
                raise PatternError(f"{r.text!r}: look-around ({literal}…) is not supported; "
                                   "write the pattern without it")
            r.take(len(literal))
            return meaning
    if r.ahead("(?<"):
        r.take(3)
        return "(?P<"
    char = r.take()
    if char == "[":
        r.in_class = True
        if r.ahead("^"):
            return "[" + r.take()
        return char
    return _DOT if char == "." else char


def _escape(r: _Reader) -> str:
    r.take()
    char = r.take()
    if char == "":
        raise PatternError(f"{r.text!r} ends with a lone backslash")
    if char == "u":
        return _code_point(r)
    if char == "s":
        return _SPACE if r.in_class else f"[{_SPACE}]"
    if char == "S":
        if r.in_class:
            raise PatternError(f"{r.text!r}: \\S inside a character class is not supported")
        return f"[^{_SPACE}]"
    if char.isdigit() and char != "0" or char == "k":
        raise PatternError(f"{r.text!r}: backreferences (\\{char}) are not supported")
    if char == "0":
        return r"\x{0}"
    if char == "c" and r.i < len(r.text) and r.text[r.i].isalpha():
        return f"\\x{{{ord(r.take().upper()) - 64:X}}}"
    if char == "/":
        return "/"
    return "\\" + char


def _code_point(r: _Reader) -> str:
    if r.ahead("{"):
        end = r.text.find("}", r.i)
        digits = r.text[r.i + 1:end] if end > 0 else ""
        if not digits or not set(digits) <= _HEX:
            raise PatternError(f"{r.text!r}: a \\u{{…}} escape needs hexadecimal digits")
        r.take(len(digits) + 2)
        return f"\\x{{{digits}}}"
    digits = r.take(4)
    if len(digits) != 4 or not set(digits) <= _HEX:
        raise PatternError(f"{r.text!r}: \\u needs four hexadecimal digits")
    unit = int(digits, 16)
    if 0xD800 <= unit <= 0xDBFF and r.ahead("\\u"):
        low = r.text[r.i + 2:r.i + 6]
        if len(low) == 4 and set(low) <= _HEX and 0xDC00 <= int(low, 16) <= 0xDFFF:
            r.take(6)
            unit = 0x10000 + ((unit - 0xD800) << 10) + (int(low, 16) - 0xDC00)
    if 0xD800 <= unit <= 0xDFFF:
        raise PatternError(f"{r.text!r}: \\u{digits} is a lone surrogate, not a character")
    return f"\\x{{{unit:X}}}"
