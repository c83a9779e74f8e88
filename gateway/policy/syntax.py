"""Reading the engine's syntax tree (`get_ast_as_json`): names, nodes and spans.

Nodes are one-key objects (`{"Call": {...}}`, `{"Var": {...}}`); spans carry `line`, `col`
and byte offsets `start`/`end` into the source.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any


def dotted(ref: Any) -> str:
    """`a.b.c` for a Var/RefDot chain; "" for anything else."""
    if not isinstance(ref, dict) or len(ref) != 1:
        return ""
    kind, node = next(iter(ref.items()))
    if kind == "Var":
        value = node.get("value")
        return value if isinstance(value, str) else ""
    if kind == "RefDot":
        base = dotted(node.get("refr"))
        field_ = node.get("field")
        key = field_[1] if isinstance(field_, list) and len(field_) == 2 else None
        return f"{base}.{key}" if base and isinstance(key, str) else ""
    return ""


def walk(node: Any) -> Iterator[dict[str, Any]]:
    """Every object below node (node included), depth first."""
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            stack.extend(reversed(item))
        elif isinstance(item, dict):
            yield item
            stack.extend(reversed(list(item.values())))


def inner(node: Any) -> tuple[str, dict[str, Any]]:
    """("Call", {...}) for {"Call": {...}}; ("", {}) for anything else."""
    if isinstance(node, dict) and len(node) == 1:
        kind, value = next(iter(node.items()))
        if isinstance(value, dict):
            return kind, value
    return "", {}


def span(node: Any) -> dict[str, Any]:
    """The span of a one-key node (or of an inner node itself)."""
    kind, value = inner(node)
    source = value if kind else node
    found = source.get("span") if isinstance(source, dict) else None
    return found if isinstance(found, dict) else {}


def extent(source: bytes, node: Any) -> tuple[int, int] | None:
    """The byte range a node covers in its source.

    The engine's spans leave out the quotes of a string literal, and the span of an object
    written as a rule's default value starts at its last key: the range is widened over every
    span below the node, string quotes and an object's opening brace included.
    """
    found: list[tuple[int, int]] = []
    for item in walk(node):
        start, end = item.get("start"), item.get("end")
        if isinstance(start, int) and isinstance(end, int) and "line" in item:
            found.append((start, end))
        for kind in ("String", "RawString"):
            where = item.get(kind, {}).get("span", {}) if isinstance(item.get(kind), dict) else {}
            if isinstance(where.get("start"), int) and isinstance(where.get("end"), int):
                found.append(_quoted(source, where["start"], where["end"]))
    if not found:
        return None
    lo, hi = min(s for s, _ in found), max(e for _, e in found)
    if inner(node)[0] == "Object":
        brace = source.rfind(b"{", 0, lo)
        if brace >= 0 and not source[brace + 1 : lo].strip():
            lo = brace
    return lo, hi


def _quoted(source: bytes, start: int, end: int) -> tuple[int, int]:
    if start > 0 and source[start - 1 : start] in (b'"', b"`"):
        quote = source[start - 1 : start]
        if source[end : end + 1] == quote:
            return start - 1, end + 1
    return start, end


def text_of(source: bytes, node: Any) -> str:
    """The source text of a node (string literals with their quotes)."""
    found = extent(source, node)
    return source[found[0] : found[1]].decode(errors="replace") if found else ""


def statements(query: Any) -> list[dict[str, Any]]:
    """The statements of a query node (a rule body, a comprehension's query)."""
    if not isinstance(query, dict):
        return []
    stmts = query.get("stmts")
    return [s for s in stmts if isinstance(s, dict)] if isinstance(stmts, list) else []


def statement_text(source: bytes, stmt: dict[str, Any]) -> str:
    """The text of a statement, `with` modifiers included."""
    return text_of(source, stmt)


def position(source: bytes, offset: int) -> tuple[int, int]:
    """(line, column) of a byte offset, both from 1; the column counts characters."""
    line_start = source.rfind(b"\n", 0, offset) + 1
    line = source.count(b"\n", 0, offset) + 1
    return line, len(source[line_start:offset].decode(errors="replace")) + 1
