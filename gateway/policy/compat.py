"""Rego that OPA 1.9 loads and the embedded engine does not, rewritten so that it does.

Every rewrite keeps each line where it was (an error, a test, coverage and `--explain` name
the line the author wrote) and is checked against OPA's answers in the tests.

- A function defined by its arguments alone, with no body (`accept("RunAsAny", _)`): OPA gives
  it the value `true`; the engine refuses it ("rule must have a body or assignment") in Rego v1.
  It becomes `accept("RunAsAny", _) := true` (one line, the head unchanged).
- A rule called with no arguments (`allowed_sysctl_string()`, `lib.default_limits()`): OPA
  evaluates the rule (its type checker lets the call through when the rule's value is not
  known before evaluation); the engine looks for a function and finds none. The parentheses
  become spaces, so every column after them stays where it was.
- A reference that ends a line of a body, followed by a parenthesized expression on the
  next (`input.parameters.limit` then `(a - b) >= input.parameters.limit`): OPA reads two
  statements, the engine one call (`could not find function`). A `;` ends the first.
- Rego v0 only: a rule head that is a bare name (`allow` on a line of its own) is refused as
  OPA refuses it (`var cannot be used for rule name`); the engine would read it as
  `allow = true`. A rule with several bodies (`deny[msg] { ... } { ... }`: each body a
  definition of its own to OPA, where the engine gives the later bodies the value `true` and
  refuses the form for a partial set, calling it `else`) is written as OPA reads it, the head
  repeated before each later body on that body's line (`split_bodies`); where the head cannot
  be found for certain, the rule is refused, naming the way around it.

Known difference: OPA refuses `f()` when it knows the rule's value type before evaluation (a
constant: `f := 3`); callgate evaluates it as OPA evaluates the calls it accepts.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from gateway.policy.syntax import dotted, inner, span, walk

Parse = Callable[[str], None]  # raises RuntimeError with the engine's located message

_NO_BODY = "rule must have a body or assignment"
_LOCATION = re.compile(r"-->\s*.+:(?P<line>\d+):(?P<col>\d+)\s*$", re.MULTILINE)
_HEAD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\s*\.\s*[A-Za-z_][A-Za-z0-9_]*)*\s*\(")
_CLOSE = {"(": ")", "[": "]", "{": "}"}
BODY = " := true"


class BareRuleName(RuntimeError):
    """A Rego v0 rule head that is a bare name; the message is located like the engine's."""


class SeveralBodies(RuntimeError):
    """A Rego v0 rule with several bodies; the message is located like the engine's."""

    def __init__(self, file: str, line: int, col: int, *, offset: int = -1) -> None:
        self.offset = offset
        super().__init__(
            f"--> {file}:{line}:{col}\nerror: a rule with several bodies "
            "(`p { ... } { ... }`, each body a definition of its own) is read "
            "differently by the embedded engine: write each body as a rule of "
            "its own, with the head repeated"
        )


_ELSE_ON_SET = "else cannot be used with set rules"


def several_bodies_refused(message: str, text: str) -> SeveralBodies | None:
    """The engine's refusal of a partial set rule with several bodies, said as what it is;
    None for any other error (or a real `else`)."""
    found = _LOCATION.search(message) if _ELSE_ON_SET in message else None
    if found is None:
        return None
    line, col = int(found.group("line")), int(found.group("col"))
    lines = text.split("\n")
    if not 1 <= line <= len(lines) or not lines[line - 1][col - 1 :].startswith("{"):
        return None
    offset = len("\n".join(lines[: line - 1]).encode()) + (line > 1) + col - 1
    return SeveralBodies(found.group(0).split()[1].rsplit(":", 2)[0], line, col, offset=offset)


# ---------------------------------------------------------------------------------------------
# functions without a body


def complete_bodyless_functions(text: str, parse: Parse) -> str:
    """text with ` := true` after the head of every function defined without a body.

    Driven by the engine's own errors: each one at a function head is completed and the text
    parsed again, until it parses or fails for another reason (left for the caller to report).
    """
    seen: set[tuple[int, int]] = set()
    for _ in range(text.count("\n") + 2):
        try:
            parse(text)
        except RuntimeError as exc:
            where = _bodyless_at(str(exc))
            if where is None or where in seen:
                return text
            seen.add(where)
            completed = _complete(text, *where)
            if completed is None:
                return text
            text = completed
        else:
            return text
    return text


def _bodyless_at(message: str) -> tuple[int, int] | None:
    if _NO_BODY not in message:
        return None
    found = _LOCATION.search(message)
    return (int(found.group("line")), int(found.group("col"))) if found else None


def _complete(text: str, line: int, col: int) -> str | None:
    """The text with BODY after the function head at line:col, or None if there is none."""
    lines = text.split("\n")
    if not 1 <= line <= len(lines):
        return None
    start = sum(len(x) + 1 for x in lines[: line - 1]) + col - 1
    head = _HEAD.match(text, start)
    if head is None:
        return None
    end = _closing(text, head.end() - 1)
    if end is None or not _only_comment(text, end):
        return None
    return text[:end] + BODY + text[end:]


def _closing(text: str, opening: int) -> int | None:
    """The offset just past the bracket that closes the one at `opening` (strings, raw
    strings and comments skipped)."""
    stack: list[str] = []
    i = opening
    while i < len(text):
        ch = text[i]
        if ch in _CLOSE:
            stack.append(_CLOSE[ch])
        elif ch in ")]}":
            if not stack or stack.pop() != ch:
                return None
            if not stack:
                return i + 1
        elif ch == '"':
            i = _string_end(text, i)
        elif ch == "`":
            i = text.find("`", i + 1)
        elif ch == "#":
            i = text.find("\n", i)
        if i < 0:
            return None
        i += 1
    return None


def _string_end(text: str, quote: int) -> int:
    i = quote + 1
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        if text[i] in '"\n':
            return i if text[i] == '"' else -1
        i += 1
    return -1


def _only_comment(text: str, offset: int) -> bool:
    rest = text[offset:].split("\n", 1)[0].strip()
    return not rest or rest.startswith("#")


# ---------------------------------------------------------------------------------------------
# rules called with ()


@dataclass(frozen=True)
class Module:
    """One parsed module: its engine name, package (`data.x`), source and syntax tree."""

    file: str
    package: str
    source: bytes
    ast: dict[str, Any]

    @classmethod
    def of(cls, module: dict[str, Any]) -> Module:
        ast = module.get("ast", {})
        source = module.get("source", {})
        return cls(
            file=source.get("file", ""),
            package="data." + dotted(ast.get("package", {}).get("refr")),
            source=source.get("contents", "").encode(),
            ast=ast,
        )

    def aliases(self) -> set[str]:
        """Names the imports bind: the `as` alias or the last key of the path."""
        return set(self.imports())

    def imports(self) -> dict[str, str]:
        """Each name an import binds (the `as` alias or the last key) → the path imported."""
        found: dict[str, str] = {}
        for imp in self.ast.get("imports") or []:
            path = dotted(imp.get("refr")) if isinstance(imp, dict) else ""
            alias = imp.get("as") if isinstance(imp, dict) else None
            if isinstance(alias, dict) and isinstance(alias.get("start"), int):
                found[self.source[alias["start"] : alias.get("end", 0)].decode()] = path
            elif path:
                found[path.split(".")[-1]] = path
        return found


def rule_arities(modules: Iterable[Module]) -> dict[tuple[str, str], bool]:
    """(package, first name of the head) → whether some definition takes arguments."""
    found: dict[tuple[str, str], bool] = {}
    for module in modules:
        for rule in module.ast.get("rules") or []:
            name, takes_args = _head_of(rule)
            if name:
                key = (module.package, name)
                found[key] = found.get(key, False) or takes_args
    return found


def _head_of(rule: Any) -> tuple[str, bool]:
    kind, body = inner(rule)
    if kind == "Default":
        return dotted(body.get("refr")).split(".")[0], bool(body.get("args"))
    head_kind, head = inner(body.get("head"))
    name = _first_name(head.get("refr"))
    return name, head_kind == "Func" and bool(head.get("args"))


def _first_name(ref: Any) -> str:
    while True:
        kind, node = inner(ref)
        if kind == "Var":
            value = node.get("value")
            return value if isinstance(value, str) else ""
        if kind not in ("RefDot", "RefBrack"):
            return ""
        ref = node.get("refr")


def empty_call_edits(
    module: Module, arities: dict[tuple[str, str], bool], builtins: frozenset[str]
) -> list[tuple[int, int]]:
    """Byte ranges of the `()` of each call to a rule that takes no arguments (of this
    package, or named through `data` or an import)."""
    imports = module.imports()
    edits = []
    for node in walk(module.ast.get("rules") or []):
        kind, call = inner(node)
        if kind != "Call" or call.get("params"):
            continue
        name = dotted(call.get("fcn"))
        parens = _parens(module.source, call)
        if (
            name
            and name not in builtins
            and parens is not None
            and _rule_without_arguments(module.package, name, imports, arities)
        ):
            edits.append(parens)
    return edits


def _rule_without_arguments(
    package: str, name: str, imports: dict[str, str], arities: dict[tuple[str, str], bool]
) -> bool:
    head, _, rest = name.partition(".")
    if head in imports:
        name = imports[head] + ("." + rest if rest else "")
    elif head != "data":
        return arities.get((package, head)) is False
    parts = name.split(".")
    found = [arities.get((".".join(parts[:i]), parts[i])) for i in range(2, len(parts))]
    return False in found and True not in found


def _parens(source: bytes, call: dict[str, Any]) -> tuple[int, int] | None:
    fcn_end = span(call.get("fcn")).get("end")
    end = call.get("span", {}).get("end")
    if not isinstance(fcn_end, int) or not isinstance(end, int):
        return None
    between = source[fcn_end:end]
    if between.replace(b" ", b"").replace(b"\t", b"") != b"()":
        return None
    return fcn_end, end


def blank(source: bytes, ranges: Iterable[tuple[int, int]]) -> bytes:
    """source with each range turned into as many spaces."""
    out = bytearray(source)
    for start, end in ranges:
        out[start:end] = b" " * (end - start)
    return bytes(out)


# ---------------------------------------------------------------------------------------------
# a statement ending at the end of its line


def statement_breaks(module: Module) -> list[int]:
    """Offsets where a `;` ends a statement that is a reference ending its line, followed by a
    parenthesized expression on the next line (the engine reads a call)."""
    starts = {
        node["span"]["start"]
        for node in walk(module.ast.get("rules") or [])
        if "literal" in node and isinstance(node.get("span"), dict)
    }
    found = []
    for node in walk(module.ast.get("rules") or []):
        kind, call = inner(node)
        if kind != "Call":
            continue
        fcn = span(call.get("fcn"))
        start, end = fcn.get("start"), fcn.get("end")
        if not isinstance(start, int) or not isinstance(end, int) or start not in starts:
            continue
        paren = module.source.find(b"(", end)
        if paren > 0 and b"\n" in module.source[end:paren] and not module.source[end:paren].strip():
            found.append(end)
    return found


# ---------------------------------------------------------------------------------------------
# Rego v0 rules OPA reads otherwise


def several_bodies(module: Module, *, constants: bool = False) -> Iterator[SeveralBodies]:
    """A located error for each rule with several bodies (not joined by `else`) that give a
    value of their own: to OPA each is a definition of the rule; the engine gives the second
    and later ones the value `true` (for a rule that is only true, the two agree; `constants`
    includes those too). `offset` is the byte offset of the second body's `{`."""
    for rule in module.ast.get("rules") or []:
        kind, body = inner(rule)
        bodies = body.get("bodies") or [] if kind == "Spec" else []
        assign = inner(body.get("head"))[1].get("assign") if kind == "Spec" else None
        value = inner(assign.get("value"))[0] if isinstance(assign, dict) else "Bool"
        if value in _CONSTANTS and not constants:
            continue
        for before, after in zip(bodies, bodies[1:], strict=False):
            gap = module.source[span(before).get("end", 0) : span(after).get("start", 0)]
            if not after.get("is_else") and not re.search(rb"\belse\b", gap):
                where = span(after)
                yield SeveralBodies(
                    module.file,
                    int(where.get("line", 0)),
                    int(where.get("col", 0)),
                    offset=int(where.get("start", -1)),
                )
                break


def split_bodies(text: str, opening: int) -> str | None:
    """text with the rule whose later body opens at byte offset `opening` written as one rule
    per body, as OPA reads it: `p[x] { a } { b }` → `p[x] { a } p[x] { b }`. The head is
    repeated on the line of each later body, so every line stays where it was. None when the
    head cannot be found for certain (a head over several lines, a comment between bodies):
    the caller then refuses the rule."""
    s = text.encode().decode("latin-1")  # one character per byte: offsets are byte offsets
    pairs = _top_level_pairs(s)
    if pairs is None or s[opening : opening + 1] != "{" or opening not in pairs:
        return None
    closes = {end: start for start, end in pairs.items() if s[start] == "{"}
    first = opening
    while (before := closes.get(len(s[:first].rstrip()))) is not None:
        first = before
    head = _head_before(s, first, pairs)
    if head is None or first == opening:
        return None
    later, end = [], pairs[first]
    while (nxt := len(s) - len(s[end:].lstrip())) in closes.values() and s[nxt] == "{":
        later.append(nxt)
        end = pairs[nxt]
    for at in reversed(later):
        s = s[:at] + head + " " + s[at:]
    return s.encode("latin-1").decode()


def _top_level_pairs(s: str) -> dict[int, int] | None:
    """Offset of each bracket outside any other → offset just past its closing bracket."""
    pairs: dict[int, int] = {}
    i = 0
    while i < len(s):
        ch = s[i]
        if ch in _CLOSE:
            end = _closing(s, i)
            if end is None:
                return None
            pairs[i] = end
            i = end
            continue
        if ch == '"':
            i = _string_end(s, i)
        elif ch == "`":
            i = s.find("`", i + 1)
        elif ch == "#":
            i = s.find("\n", i)
        if i < 0:
            return pairs
        i += 1
    return pairs


def _head_before(s: str, first: int, pairs: dict[int, int]) -> str | None:
    """The rule head before the body at `first`: from the start of its line, all of it on
    that line, with no body of another rule in it."""
    line_start = s.rfind("\n", 0, first) + 1
    head = s[line_start:first].strip()
    if not head or "#" in head:
        return None
    inside = [(a, b) for a, b in pairs.items() if a < first and b > line_start]
    if any(a < line_start or s[a] == "{" for a, b in inside):
        return None
    return head


_CONSTANTS = frozenset({"Bool", "Number", "String", "RawString", "Null"})


def bare_rule_names(module: Module) -> Iterator[BareRuleName]:
    """A located error for each rule whose head is a bare name with no body or value."""
    for rule in module.ast.get("rules") or []:
        kind, body = inner(rule)
        head_kind, head = inner(body.get("head")) if kind == "Spec" else ("", {})
        if head_kind != "Compr" or head.get("assign") or body.get("bodies"):
            continue
        if inner(head.get("refr"))[0] != "Var":
            continue
        where = span(head)
        yield BareRuleName(
            f"--> {module.file}:{where.get('line', 0)}:{where.get('col', 0)}\n"
            "error: rego_parse_error: var cannot be used for rule name "
            "(OPA refuses it too: write `name := true` or give it a body)"
        )
