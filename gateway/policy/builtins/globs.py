"""`regex.globs_match(glob1, glob2)`: do two glob-style patterns share a non-empty string?

The pattern language is OPA's for this builtin: `.` (any character), `[...]` (a set, with
ranges `a-z`), `\\x` (x taken literally), each optionally followed by `*` (zero or more) or
`+` (one or more); every other character stands for itself. The answer is exact: both
patterns become automata and their product is searched for an accepting state.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from gateway.policy.builtins.base import BuiltinError, Extension, string_operand

ANY: tuple[tuple[int, int], ...] = ((0, 0x10FFFF),)


@dataclass(frozen=True)
class Token:
    chars: tuple[tuple[int, int], ...]  # inclusive code point ranges
    repeat: bool = False  # * or +: may consume again
    optional: bool = False  # *: may be skipped


def tokenize(pattern: str) -> list[Token]:
    tokens: list[Token] = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch in "*+":
            if not tokens or tokens[-1].repeat:
                raise BuiltinError(f"pos:{i}:flag '{ch}' must be preceded by a non-flag")
            last = tokens.pop()
            if ch == "+":  # one, then zero or more
                tokens.append(last)
            tokens.append(Token(last.chars, repeat=True, optional=True))
            i += 1
            continue
        if ch == "]":
            raise BuiltinError(f"pos:{i}:set-close ']' with no preceding '['")
        if ch == ".":
            tokens.append(Token(ANY))
            i += 1
        elif ch == "[":
            chars, i = _set(pattern, i + 1)
            tokens.append(Token(chars))
        else:
            literal, i = _rune(pattern, i)
            tokens.append(Token(((ord(literal), ord(literal)),)))
    return tokens


def _rune(pattern: str, i: int) -> tuple[str, int]:
    if pattern[i] == "\\":
        if i + 1 >= len(pattern):
            raise BuiltinError(f"pos:{i}:input ends with a \\ (escape) character")
        return pattern[i + 1], i + 2
    return pattern[i], i + 1


def _set(pattern: str, i: int) -> tuple[tuple[tuple[int, int], ...], int]:
    ranges: list[tuple[int, int]] = []
    previous: str | None = None
    while i < len(pattern):
        if pattern[i] == "]":
            return tuple(ranges), i + 1
        if pattern[i] == "-":
            if previous is None:
                raise BuiltinError(
                    f"pos:{i}:range character '-' must be preceded by a Unicode character"
                )
            if i + 1 >= len(pattern) or pattern[i + 1] in "]-":
                raise BuiltinError(
                    f"pos:{i}:range character '-' must be followed by a Unicode character"
                )
            end, i = _rune(pattern, i + 1)
            if end < previous:
                raise BuiltinError(
                    f"pos:{i}:range is out of order: '{end}' comes before '{previous}' in Unicode"
                )
            ranges[-1] = (ord(previous), ord(end))
            previous = None
            continue
        ch, i = _rune(pattern, i)
        ranges.append((ord(ch), ord(ch)))
        previous = ch
    raise BuiltinError(f"pos:{i}:found [ without matching ]")


def _overlap(a: tuple[tuple[int, int], ...], b: tuple[tuple[int, int], ...]) -> bool:
    return any(lo1 <= hi2 and lo2 <= hi1 for lo1, hi1 in a for lo2, hi2 in b)


def _closure(tokens: list[Token], position: int) -> set[int]:
    """Positions reachable from position by skipping optional tokens."""
    reach = {position}
    while position < len(tokens) and tokens[position].optional:
        position += 1
        reach.add(position)
    return reach


def _steps(tokens: list[Token], position: int) -> list[tuple[Token, int]]:
    """(token consumed, position after it) for each way to consume one character."""
    token = tokens[position]
    return [(token, position if token.repeat else position + 1)]


def intersect(first: str, second: str) -> bool:
    """True when some non-empty string matches both patterns."""
    a, b = tokenize(first), tokenize(second)
    start = {(i, j, False) for i in _closure(a, 0) for j in _closure(b, 0)}
    seen = set(start)
    queue = deque(start)
    while queue:
        i, j, consumed = queue.popleft()
        if consumed and i == len(a) and j == len(b):
            return True
        if i == len(a) or j == len(b):
            continue
        for token_a, next_i in _steps(a, i):
            for token_b, next_j in _steps(b, j):
                if not _overlap(token_a.chars, token_b.chars):
                    continue
                for ci in _closure(a, next_i):
                    for cj in _closure(b, next_j):
                        state = (ci, cj, True)
                        if state not in seen:
                            seen.add(state)
                            queue.append(state)
    return False


def globs_match(glob1: object, glob2: object) -> bool:
    return intersect(string_operand(glob1, 1), string_operand(glob2, 2))


EXTENSIONS = (Extension("regex.globs_match", 2, globs_match),)
