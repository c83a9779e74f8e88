"""One line for a failed evaluation: which builtin failed, where, and why.

The engine's error text gives `--> file:line:col` and `error: message`; the call at that place
is found in the policy's syntax tree, so the message names it:
`to_number failed at p.rego:5:14: could not parse string as number`. An error from a supplied
builtin loses the engine's wrapping (`extension 'x' raises Python error: ...`). Without a
location the message is the engine's own first line.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from gateway.policy.bundle import config_error_from_regorus
from gateway.policy.syntax import dotted, span, walk

_EXTENSION = re.compile(r"^extension '(?P<name>[^']+)' raises Python error: "
                        r"(?:BuiltinError: (?:(?P=name): )?)?")
_OPERATORS = {"Add": "plus", "Sub": "minus", "Mul": "mul", "Div": "div", "Mod": "rem",
              "Or": "or", "And": "and", "Union": "or", "Intersection": "and"}


@dataclass(frozen=True)
class Failure:
    message: str  # the whole line
    builtin: str = ""
    file: str = ""
    line: int | None = None


@dataclass(frozen=True)
class _Span:
    start: int
    end: int
    name: str


class CallIndex:
    """The builtin calls and operators of a set of policy sources, by file and byte span."""

    def __init__(self, engine: Any, sources: Mapping[str, str]) -> None:
        self._sources = dict(sources)
        self._spans: dict[str, list[_Span]] = {}
        for module in json.loads(engine.get_ast_as_json()):
            file = module.get("source", {}).get("file", "")
            # the text the engine was given (gateway.policy.engine rewrites some statements on
            # their own line): the positions in its messages are positions in that text
            self._sources[file] = module.get("source", {}).get("contents", "") or \
                self._sources.get(file, "")
            self._spans[file] = sorted(_spans_of(module.get("ast", {})),
                                       key=lambda s: s.end - s.start)

    def name_at(self, file: str, line: int, column: int) -> str:
        offset = _offset(self._sources.get(file, ""), line, column)
        if offset is None:
            return ""
        for found in self._spans.get(file, []):  # innermost (shortest) first
            if found.start <= offset < found.end:
                return found.name
        return ""


# What the engine says when a value cannot cross to Python (a supplied builtin's arguments,
# a rule's value), and what that means to the policy's author.
_CROSSING = (
    (re.compile(r"^(?:error: )?not an? [iu]64$"),
     "a number of 2^64 or more (an integer, or a float that large and whole) cannot be handed "
     "from the embedded engine to callgate's builtins or back; the OPA engine takes it"),
    (re.compile(r"^(?:error: )?TypeError: unhashable type: '(?:list|dict)'$"),
     "a set of arrays or objects (or an object keyed by them) cannot be handed from the "
     "embedded engine to callgate's builtins; the OPA engine takes it"),
)


def plain(detail: str) -> str:
    """The engine's message, or what it means when it is one of the crossing failures."""
    for pattern, meaning in _CROSSING:
        if pattern.match(detail):
            return meaning
    return detail


def describe(exc: BaseException, index: CallIndex | None = None, *, query: str = "") -> Failure:
    """The failure of an evaluation as one line naming the builtin and its place."""
    located = config_error_from_regorus(exc)
    detail = located.detail
    extension = _EXTENSION.match(detail)
    builtin = ""
    if extension:
        builtin = extension.group("name")
        detail = detail[extension.end():]
    detail = plain(detail)
    if located.line is None:
        prefix = f"{query}: " if query else ""
        return Failure(f"{prefix}{detail}", builtin=builtin)
    if not builtin and index is not None:
        builtin = index.name_at(located.file, located.line, located.column or 1)
    where = f"{located.file}:{located.line}:{located.column}"
    message = f"{builtin} failed at {where}: {detail}" if builtin else f"{where}: {detail}"
    return Failure(message, builtin=builtin, file=located.file, line=located.line)


def _offset(text: str, line: int, column: int) -> int | None:
    lines = text.split("\n")
    if not 1 <= line <= len(lines):
        return None
    before = sum(len(ln.encode()) + 1 for ln in lines[:line - 1])
    return before + len(lines[line - 1][:max(column - 1, 0)].encode())


def _spans_of(node: Any) -> Iterator[_Span]:
    for item in walk(node):
        for kind in ("Call", "ArithExpr", "BinExpr"):
            inner = item.get(kind)
            if not isinstance(inner, dict):
                continue
            where = inner.get("span", {})
            name = (dotted(inner.get("fcn")) if kind == "Call"
                    else _OPERATORS.get(str(inner.get("op")), ""))
            start, end = where.get("start"), where.get("end")
            if name and isinstance(start, int) and isinstance(end, int):
                lhs_start = span(inner.get("lhs")).get("start")
                left = min(start, lhs_start) if isinstance(lhs_start, int) else start
                yield _Span(left, end, name)
