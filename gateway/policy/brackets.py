"""Where an unclosed bracket of a Rego source opens, for a syntax error that names only the
place the parser gave up (often the end of the file, far from the mistake).

Strings (`"..."` with escapes, raw `` `...` ``) and comments (`#` to the end of the line) are
skipped; a closing bracket closes the innermost open one of its kind. Lines and columns count
from 1, columns in characters.
"""

from __future__ import annotations

OPENING = {"{": "}", "[": "]", "(": ")"}
CLOSING = {close: open_ for open_, close in OPENING.items()}

Opened = tuple[str, int, int]  # the bracket, its line and column


def still_open(text: str, stop: int | None = None) -> list[Opened]:
    """The brackets open at offset `stop` (the end by default), outermost first."""
    stack: list[Opened] = []
    line = col = 1
    quote = ""  # '"' or '`' inside a string, "#" inside a comment
    escaped = False
    for ch in text[:stop]:
        if quote == "#":
            quote = "" if ch == "\n" else quote
        elif quote:
            if escaped:
                escaped = False
            elif ch == "\\" and quote == '"':
                escaped = True
            elif ch == quote or (ch == "\n" and quote == '"'):
                quote = ""
        elif ch in ('"', "`", "#"):
            quote = ch
        elif ch in OPENING:
            stack.append((ch, line, col))
        elif ch in CLOSING and stack and stack[-1][0] == CLOSING[ch]:
            stack.pop()
        line, col = (line + 1, 1) if ch == "\n" else (line, col + 1)
    return stack


def offset_of(text: str, line: int, col: int) -> int:
    """The character offset of a line and column (past the end: the text's length)."""
    lines = text.splitlines(keepends=True)
    if line > len(lines):
        return len(text)
    return min(sum(len(x) for x in lines[: line - 1]) + col - 1, len(text))


def opener_of(text: str, line: int, col: int, closing: str) -> Opened | None:
    """The innermost bracket of `closing`'s kind that opens before the place the parser
    stopped expecting `closing` and is never closed in the whole text (None: the error is
    not an unclosed bracket, and its own place stands)."""
    wanted, stop = CLOSING.get(closing), offset_of(text, line, col)
    for found in reversed(still_open(text)):
        if found[0] == wanted and offset_of(text, found[1], found[2]) < stop:
            return found
    return None


def at_end(text: str, line: int, col: int) -> bool:
    """Whether a position is past the last character that is not white space."""
    return offset_of(text, line, col) >= len(text.rstrip())
