"""Regular expressions of JSON Schema (`pattern`, `patternProperties`, `format: regex`):
ECMA-262 syntax and meaning in Unicode mode, run by RE2, whose matching time is linear in the
input (no catastrophic backtracking).

An ECMA-262 pattern is translated to RE2 syntax where the two differ: `$` matches only at the
end (RE2 agrees; Python's `re` would also match before a final newline), `.` matches anything
but line terminators (\\n \\r U+2028 U+2029), `\\s` is ECMA's set of white space, `\\uXXXX`
(and surrogate pairs written that way), `\\u{…}` and `\\xHH` are code points, `(?<name>` is a
named group, `[]` never matches and `[^]` matches anything, `[\\b]` is a backspace and `[` in
a class is itself. `\\d`, `\\w` and `\\b` are ASCII in both. `\\p{…}` and `\\P{…}` take
ECMA-262's property names and aliases (`\\p{Letter}`, `\\p{digit}`, `\\p{gc=Nd}`,
`\\p{Script=Greek}`, `\\p{ASCII}`: `gateway.tools.unicode_names`).

What ECMA-262 does not allow in Unicode mode (an escape it does not define such as `\\a` or
`\\z`, `(?P<…>`, `(?i)`, a lone `{`, `}` or `]`) is not a regular expression; what RE2 cannot
run (look-around, backreferences, Script_Extensions and most binary properties) is refused
too: either is a `PatternError` at load, naming the construct, before any call arrives. One
leniency for patterns in schemas: an escaped ASCII punctuation character (`\\-`, `\\#`) stands
for itself, as in ECMA-262's other modes (Unicode mode alone refuses it, and no engine reads it
another way).

`is_ecma_regex` answers the other question, the one `format: regex` asks of a string: is it
an ECMA-262 regular expression at all, whether or not callgate could run it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache
from typing import Any

import re2

from gateway.tools.unicode_names import (
    SCRIPT_CODES,
    UNSUPPORTED_BINARY,
    CodeSet,
    binary,
    category,
    is_binary,
)

# ECMA-262 WhiteSpace and LineTerminator code points, as the members of an RE2 class
_SPACE = (
    r"\t\n\x{0B}\f\r \x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}"
    r"\x{205F}\x{3000}\x{FEFF}"
)
_DOT = r"[^\n\r\x{2028}\x{2029}]"
_ANY = r"[\x{0}-\x{10FFFF}]"
_NOTHING = r"[^\x{0}-\x{10FFFF}]"
_HEX = frozenset("0123456789abcdefABCDEF")
_SYNTAX_CHARACTERS = frozenset("^$\\.*+?()[]{}|/")
_PLAIN_ESCAPES = frozenset("dDwWfnrt")
_PLAIN = re.compile(r"[^\\\[\](){}.]+")
_PLAIN_IN_CLASS = re.compile(r"[^\\\[\]]+")
_PLAIN_SYNTAX = re.compile(r"[^\\\[\](){}]+")
_QUANTIFIER = re.compile(r"\{([0-9]+)(,([0-9]*))?\}")
_PROPERTY_TEXT = re.compile(r"[A-Za-z0-9_]+(=[A-Za-z0-9_]+)?")
_SINGLE_PROPERTY = re.compile(r"\\p\{\w+\}")
_SCRIPTS = frozenset(SCRIPT_CODES.values())
_LOOK_AROUND = ("(?<=", "(?<!", "(?=", "(?!")

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False


class PatternError(ValueError):
    """A pattern callgate cannot run with JSON Schema's meaning; the message says why."""


def search(pattern: str, text: str) -> bool:
    """Whether the (ECMA-262) pattern matches anywhere in text, as JSON Schema asks."""
    return searcher(pattern)(text)


@lru_cache(maxsize=4096)
def searcher(pattern: str) -> Callable[[str], bool]:
    """`search` of one pattern: text -> whether it matches anywhere. PatternError as `compiled`.

    The `re2` module's own `search` answers a match object, which it builds in Python: its
    spans decoded from UTF-8 offsets to characters through a generator, about 3.5 µs a search
    where RE2's answer takes under one. Whether there is a match needs none of that, so this
    asks the compiled program itself, on the text encoded as the module encodes it, when the
    module has the binding it wraps (`_regexp.Match`); otherwise it asks the module's `search`.
    tests/gateway/tools/test_patterns.py holds the two to the same answers."""
    program = compiled(pattern)
    raw = getattr(program, "_regexp", None)
    anchor = getattr(getattr(re2, "_Anchor", None), "UNANCHORED", None)
    nothing = getattr(re2, "_NULL_SPAN", None)
    if raw is None or not callable(getattr(raw, "Match", None)) or None in (anchor, nothing):
        return lambda text: program.search(text) is not None
    match = raw.Match

    def found(text: str) -> bool:
        data = text.encode("utf-8")
        return bool(match(anchor, data, 0, len(data))[0] != nothing)

    return found


@lru_cache(maxsize=4096)
def compiled(pattern: str) -> Any:
    """The RE2 program for an ECMA-262 pattern; PatternError when it cannot be run."""
    return _compile(pattern, _translate(pattern, run=True))


@lru_cache(maxsize=4096)
def is_ecma_regex(pattern: str) -> bool:
    """Whether pattern is an ECMA-262 regular expression (Unicode mode), runnable or not."""
    try:
        _compile(pattern, _translate(pattern, run=False))
    except PatternError:
        return False
    return True


def _compile(pattern: str, translated: str) -> Any:
    try:
        return re2.compile(translated, _OPTIONS)
    except re2.error as exc:
        detail = exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else exc
        raise PatternError(
            f"{pattern!r} is not a regular expression callgate can run: {detail}"
        ) from exc
    except UnicodeEncodeError as exc:
        raise PatternError(f"{pattern!r} holds a lone surrogate") from exc


class _Reader:
    def __init__(self, pattern: str, run: bool) -> None:
        self.text = pattern
        self.run = run  # False: only the syntax matters (look-around, backreferences pass)
        self.i = 0
        self.out: list[str] = []
        self.in_class = False
        self.groups = 0
        self.names: set[str] = set()
        self.references: list[int | str] = []

    def take(self, n: int = 1) -> str:
        piece = self.text[self.i : self.i + n]
        self.i += n
        return piece

    def ahead(self, prefix: str) -> bool:
        return self.text.startswith(prefix, self.i)

    def refuse(self, why: str) -> PatternError:
        return PatternError(f"{self.text!r}: {why}")


def _translate(pattern: str, *, run: bool) -> str:
    r = _Reader(pattern, run)
    while r.i < len(r.text):
        plain = (_PLAIN_IN_CLASS if r.in_class else _PLAIN if r.run else _PLAIN_SYNTAX).match(
            r.text, r.i
        )
        if plain is not None:  # a run of characters that mean the same to RE2
            r.out.append(plain.group(0) if r.run or r.in_class else _as_literals(plain.group(0)))
            r.i = plain.end()
        elif r.ahead("\\"):
            r.out.append(_escape(r))
        elif r.in_class:
            r.out.append(_in_class(r))
        else:
            r.out.append(_outside_class(r))
    for reference in r.references:
        if isinstance(reference, int) and reference > r.groups:
            raise r.refuse(f"\\{reference} refers to a group the pattern does not have")
        if isinstance(reference, str) and reference not in r.names:
            raise r.refuse(f"\\k<{reference}> refers to a group the pattern does not name")
    return "".join(r.out)


def _as_literals(text: str) -> str:
    """text with each `.` a literal: the same syntax, and a far smaller RE2 program for a
    value that is only checked (sixty thousand dots are an automaton beyond RE2's budget)."""
    return text.replace(".", "a")


def _in_class(r: _Reader) -> str:
    char = r.take()
    if char == "]":
        r.in_class = False
        return char
    return "\\[" if char == "[" else char  # (RE2 would read `[:alpha:]` as a POSIX class)


def _outside_class(r: _Reader) -> str:
    if r.ahead("[]"):
        r.take(2)
        return _NOTHING
    if r.ahead("[^]"):
        r.take(3)
        return _ANY
    if r.ahead("("):
        return _group(r)
    char = r.take()
    if char == "[":
        r.in_class = True
        return "[^" if r.ahead("^") and r.take() else "["
    if char == "{":
        return _quantifier(r)
    if char in "}]":
        raise r.refuse(f"a lone {char} is not allowed (write \\{char} for the character)")
    return _DOT if char == "." else char


def _group(r: _Reader) -> str:
    if not r.ahead("(?"):
        r.take()
        r.groups += 1
        return "("
    if r.ahead("(?:"):
        return r.take(3)
    for opening in _LOOK_AROUND:
        if r.ahead(opening):
            if r.run:
                raise r.refuse(
                    f"look-around ({opening}…) is not supported; write the pattern without it"
                )
            r.take(len(opening))
            return "(?:"
    if r.ahead("(?<"):
        return _named_group(r)
    shown = r.text[r.i : r.i + (4 if r.ahead("(?P<") else 3)]
    raise r.refuse(
        f"{shown}… is not ECMA-262 syntax (its groups are (…), (?:…), (?<name>…) and look-around)"
    )


def _named_group(r: _Reader) -> str:
    end = r.text.find(">", r.i)
    name = r.text[r.i + 3 : end] if end > 0 else ""
    if not name.replace("$", "_").isidentifier():
        raise r.refuse(f"(?<{name}…: a group name is an identifier closed by >")
    if name in r.names:
        raise r.refuse(f"the group name {name!r} is used twice")
    r.take(len(name) + 4)
    r.groups += 1
    r.names.add(name)
    return f"(?P<{name}>" if r.run else "("


def _quantifier(r: _Reader) -> str:
    found = _QUANTIFIER.match(r.text, r.i - 1)
    if found is None:
        raise r.refuse(
            "a lone { is not allowed (write \\{ for the character, or {n}, {n,} or {n,m} to repeat)"
        )
    low, high = int(found.group(1)), found.group(3)
    if high and int(high) < low:
        raise r.refuse(f"{found.group(0)} repeats at most fewer times than at least")
    r.i = found.end()
    return found.group(0) if r.run else "*"  # (RE2 caps counts at 1000: no matter here)


def _escape(r: _Reader) -> str:
    r.take()
    char = r.take()
    if char == "":
        raise r.refuse("it ends with a lone backslash")
    if char in _PLAIN_ESCAPES:
        return "\\" + char
    special = _SPECIAL_ESCAPES.get(char)
    if special is not None:
        return special(r)
    if char in _SYNTAX_CHARACTERS or (char == "-" and r.in_class):
        return "/" if char == "/" else "\\" + char
    if r.run and char.isascii() and not char.isalnum() and char != "_":
        return "\\" + char  # `\-`, `\#`: the character in every other mode of ECMA-262
    raise r.refuse(
        f"\\{char} is not an escape ECMA-262 knows (in Unicode mode, only syntax "
        "characters are escaped to stand for themselves)"
    )


def _space(r: _Reader) -> str:
    return _SPACE if r.in_class else f"[{_SPACE}]"


def _not_space(r: _Reader) -> str:
    if r.in_class:
        raise r.refuse("\\S inside a character class is not supported")
    return f"[^{_SPACE}]"


def _word_boundary(r: _Reader) -> str:
    return r"\x{8}" if r.in_class else r"\b"  # in a class, \b is a backspace


def _not_word_boundary(r: _Reader) -> str:
    if r.in_class:
        raise r.refuse("\\B is not allowed inside a character class")
    return r"\B"


def _control(r: _Reader) -> str:
    if r.i < len(r.text) and r.text[r.i].isascii() and r.text[r.i].isalpha():
        return f"\\x{{{ord(r.take().upper()) - 64:X}}}"
    raise r.refuse("\\c needs an ASCII letter (\\cJ)")


def _nul(r: _Reader) -> str:
    if r.i < len(r.text) and r.text[r.i] in "0123456789":
        raise r.refuse("\\0 followed by a digit is not allowed (no octal escapes)")
    return r"\x{0}"


def _hex(r: _Reader) -> str:
    digits = r.text[r.i : r.i + 2]
    if len(digits) != 2 or not set(digits) <= _HEX:
        raise r.refuse("\\x needs two hexadecimal digits (\\x41)")
    r.take(2)
    return f"\\x{{{digits}}}"


def _backreference(r: _Reader) -> str:
    start = r.i - 1
    while r.i < len(r.text) and r.text[r.i] in "0123456789":
        r.take()
    number = r.text[start : r.i]
    if r.run or r.in_class:
        raise r.refuse(f"backreferences (\\{number}) are not supported")
    r.references.append(int(number))
    return "(?:)"


def _named_reference(r: _Reader) -> str:
    end = r.text.find(">", r.i)
    if not r.ahead("<") or end < 0:
        raise r.refuse("\\k needs a group name: \\k<name>")
    if r.run or r.in_class:
        raise r.refuse(f"backreferences (\\k{r.text[r.i : end + 1]}) are not supported")
    r.references.append(r.text[r.i + 1 : end])
    r.i = end + 1
    return "(?:)"


def _code_point(r: _Reader) -> str:
    if r.ahead("{"):
        end = r.text.find("}", r.i)
        digits = r.text[r.i + 1 : end] if end > 0 else ""
        if not digits or not set(digits) <= _HEX or int(digits, 16) > 0x10FFFF:
            raise r.refuse("a \\u{…} escape needs a code point in hexadecimal digits")
        r.take(len(digits) + 2)
        return f"\\x{{{digits}}}"
    digits = r.take(4)
    if len(digits) != 4 or not set(digits) <= _HEX:
        raise r.refuse("\\u needs four hexadecimal digits")
    unit = int(digits, 16)
    if 0xD800 <= unit <= 0xDBFF and r.ahead("\\u"):
        low = r.text[r.i + 2 : r.i + 6]
        if len(low) == 4 and set(low) <= _HEX and 0xDC00 <= int(low, 16) <= 0xDFFF:
            r.take(6)
            unit = 0x10000 + ((unit - 0xD800) << 10) + (int(low, 16) - 0xDC00)
    if 0xD800 <= unit <= 0xDFFF:
        raise r.refuse(f"\\u{digits} is a lone surrogate, not a character")
    return f"\\x{{{unit:X}}}"


# ---------------------------------------------------------------------- \p{…} and \P{…}


def _property(r: _Reader) -> str:
    negated = r.text[r.i - 1] == "P"
    if not r.ahead("{"):
        raise r.refuse(f"\\{r.text[r.i - 1]} needs braces: \\p{{Letter}}")
    end = r.text.find("}", r.i)
    content = r.text[r.i + 1 : end] if end > 0 else r.text[r.i + 1 :]
    construct = f"\\{r.text[r.i - 1]}{{{content}}}"
    if end < 0 or not _PROPERTY_TEXT.fullmatch(content):
        raise r.refuse(f"{construct}: not a Unicode property (\\p{{Name}} or \\p{{Name=Value}})")
    r.i = end + 1
    return _emit(r, construct, _code_set(r, construct, content), negated)


def _code_set(r: _Reader, construct: str, content: str) -> CodeSet:
    name, _, value = content.partition("=")
    found: CodeSet | None
    if not value:
        found = category(name) or binary(name)
        if found is None and name in UNSUPPORTED_BINARY:
            return _unsupported(
                r, f"{construct}: {name} is not supported by callgate's regex engine"
            )
        if found is None and SCRIPT_CODES.get(name, name) in _SCRIPTS:
            raise r.refuse(
                f"{construct}: a script needs its property name: write \\p{{Script={name}}}"
            )
        if found is None:
            raise r.refuse(f"{construct}: {name} is not a Unicode property")
        return found
    if name in ("General_Category", "gc"):
        found = category(value)
        if found is None:
            raise r.refuse(f"{construct}: {value} is not a General_Category value")
        return found
    if name not in ("Script", "sc", "Script_Extensions", "scx"):
        raise r.refuse(f"{construct}: {name} is not a Unicode property that takes a value")
    script = SCRIPT_CODES.get(value, value)
    if script not in _SCRIPTS or category(value) or is_binary(value):
        raise r.refuse(f"{construct}: {value} is not a script callgate's regex engine knows")
    if name in ("Script_Extensions", "scx"):
        return _unsupported(
            r,
            f"{construct}: Script_Extensions is not supported by "
            f"callgate's regex engine (Script={value} leaves out the "
            "characters its script shares with others)",
        )
    return CodeSet(f"\\p{{{script}}}")


def _unsupported(r: _Reader, why: str) -> CodeSet:
    if r.run:
        raise r.refuse(why)
    return CodeSet(r"\x{0}-\x{10FFFF}")  # only the syntax is asked about


def _emit(r: _Reader, construct: str, found: CodeSet, negated: bool) -> str:
    outside = found.outside != negated
    if not r.in_class and not r.run:
        return "a"  # an atom, as the class is (see _as_literals)
    if not r.in_class:
        return f"[^{found.items}]" if outside else f"[{found.items}]"
    if not outside:
        return found.items
    if _SINGLE_PROPERTY.fullmatch(found.items):
        return "\\P" + found.items[2:]
    raise r.refuse(
        f"{construct} inside a character class is not supported (write it as an "
        "alternative outside the class)"
    )


_SPECIAL_ESCAPES = {
    "s": _space,
    "S": _not_space,
    "b": _word_boundary,
    "B": _not_word_boundary,
    "v": lambda r: r"\x{B}",
    "c": _control,
    "0": _nul,
    "x": _hex,
    "u": _code_point,
    "k": _named_reference,
    "p": _property,
    "P": _property,
    **{digit: _backreference for digit in "123456789"},
}
