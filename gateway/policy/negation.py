"""OPA's order of evaluation around `not`, given to the embedded engine by rewriting the source.

OPA's compiler evaluates some terms of a negated expression *before* the negation (stages
RewriteExprTerms and RewriteDynamicTerms of `ast/compile.go`): a nested call (`count(x)` in
`not count(x) > 0`), a reference given to a call or an operator (`input.call.tool` in
`not is_string(input.call.tool)`, `input.list` in `not x in input.list`), a reference inside an
array, object or set operand, a reference used as a key (`input.user` in
`not data.roles[input.user]`) and a composite a reference starts from. When one of them is
undefined, the negated expression is undefined and so is the body: in OPA 1.9
`not is_string(input.call.tool)` is undefined, not true, for a call without a tool. The
expression's own reference stays inside the negation (`not input.x` is true when `input.x` is
undefined), and so do the sides of `==` and `=` that are references (`not input.x == 1` is true
then as well).

The engine evaluates the whole expression inside the negation. So each negated statement with
such terms is rewritten, keeping every line where it was:

- a term whose variables are all bound gets a guard after the statement, on the same line and
  with the same `with` modifiers: `not is_string(input.call.tool); __cgd0__ = input.call.tool`.
  The statement's own text does not move, so positions in messages stay right;
- a term with a variable that may be unbound (`_`) is hoisted exactly as OPA does it:
  `__cgv0__ = count(input.list[_]); not __cgv0__ == 2`, iterating outside the negation.

A one-statement body written without braces (`deny contains "x" if not f(input.y)`) is given
braces. A module that imports `future.keywords.not` (OPA 1.17's opt-in to evaluating all of a
negated expression inside the negation, which OPA 1.9 does not parse) is left as it is: the
engine's own evaluation is that. A source the engine cannot parse is returned unchanged (the
real `add_policy` reports it). `is_generated` tells the checker which statements are guards.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from gateway.policy.syntax import extent, inner, walk

_GUARD_ASSIGN = re.compile(r"__cgd\d+__")
_COMPREHENSIONS = ("ArrayCompr", "SetCompr", "ObjectCompr")
_REFS = ("RefDot", "RefBrack")
_CALL_LIKE = ("Call", "ArithExpr", "BinExpr", "BoolExpr", "Membership", "AssignExpr", "OrExpr")
_COMPOSITES = ("Array", "Set", "Object")
_ROOTS = frozenset({"input", "data"})

Render = Callable[[int, int], bytes]


@dataclass(frozen=True)
class _Target:
    """A term OPA evaluates before the negation: its byte range, and whether all its variables
    are bound where the statement stands (then a guard after the statement is exact)."""

    start: int
    end: int
    bound: bool


@dataclass(frozen=True, order=True)
class _Edit:
    start: int
    end: int
    text: Callable[[Render], bytes] = field(compare=False)


@dataclass
class _Module:
    source: bytes
    globals: frozenset[str]
    counter: list[int] = field(default_factory=lambda: [0])

    def fresh(self, kind: str) -> str:
        self.counter[0] += 1
        return f"__cg{kind}{self.counter[0] - 1}__"


def rewrite_negations(name: str, text: str, parse: Callable[[str, str], Any]) -> str:
    """The source with OPA's evaluation order around `not` made explicit; `parse(name, text)`
    gives the engine's syntax tree of the modules (a list), or raises for a bad source."""
    if "not" not in text:
        return text
    try:
        modules = parse(name, text)
    except Exception:  # noqa: BLE001  (a bad source is reported by the real add_policy)
        return text
    source = text.encode()
    edits: list[_Edit] = []
    for module in modules:
        edits.extend(_module_edits(source, module.get("ast", {})))
    if not edits:
        return text
    return render(source, 0, len(source), sorted(edits)).decode()


def is_generated(stmt: dict[str, Any]) -> bool:
    """True for a guard statement this module added (`__cgdN__ = term`)."""
    kind, literal = inner(stmt.get("literal"))
    if kind != "Expr":
        return False
    assign_kind, assign = inner(literal.get("expr"))
    if assign_kind != "AssignExpr":
        return False
    lhs_kind, lhs = inner(assign.get("lhs"))
    return lhs_kind == "Var" and bool(_GUARD_ASSIGN.fullmatch(str(lhs.get("value"))))


def unsafe_variables(source: bytes, rule: Any, known: frozenset[str]) -> Iterator[Any]:
    """The variables of a rule's negated statements that OPA's safety check refuses (`var _ is
    unsafe`): a wildcard, or a name that nothing outside a negation binds and that is not a
    rule, an import, input or data (`known`). The engine accepts them; each is yielded as its
    Var node. Comprehensions inside a negated statement have variables of their own."""
    bound = _bound_names(source, rule) | known | _ROOTS
    for query in _queries(rule):
        for stmt in query.get("stmts") or []:
            kind, literal = inner(stmt.get("literal") if isinstance(stmt, dict) else None)
            if kind == "NotExpr":
                for var in _negated_vars(literal.get("expr")):
                    name = str(inner(var)[1].get("value"))
                    if name == "_" or name not in bound:
                        yield var


def _negated_vars(term: Any) -> Iterator[Any]:
    kind, node = inner(term)
    if kind == "Var":
        yield term
    elif kind == "Call":
        for param in node.get("params") or []:
            yield from _negated_vars(param)
    elif kind and kind not in _COMPREHENSIONS:
        for value in node.values():
            for child in value if isinstance(value, list) else [value]:
                for part in child if isinstance(child, list) else [child]:
                    yield from _negated_vars(part)


def without_generated(node: Any) -> Any:
    """node with the guard statements this module added left out (for checks that would
    otherwise report a problem of a guarded term twice)."""
    if isinstance(node, list):
        return [
            without_generated(item)
            for item in node
            if not (isinstance(item, dict) and is_generated(item))
        ]
    if isinstance(node, dict):
        return {key: without_generated(value) for key, value in node.items()}
    return node


def render(source: bytes, start: int, end: int, edits: list[_Edit], *, copy: bool = False) -> bytes:
    """source[start:end] with the edits inside it applied (an edit inside another is the outer
    edit's business: it renders the ranges it copies with this same function). A copy of a
    range leaves out the edit of that range itself and insertions at its ends."""
    out: list[bytes] = []
    pos = start
    for edit in edits:
        if edit.start < pos or edit.end > end:
            continue
        if copy and (
            (edit.start, edit.end) == (start, end)
            or (edit.start == edit.end and edit.start in (start, end))
        ):
            continue
        out.append(source[pos : edit.start])
        out.append(edit.text(lambda a, b: render(source, a, b, edits, copy=True)))
        pos = edit.end
    out.append(source[pos:end])
    return b"".join(out)


# ---------------------------------------------------------------------------------------------
# finding the negated statements


def _module_edits(source: bytes, tree: dict[str, Any]) -> Iterator[_Edit]:
    if any(
        _ref_names(imp.get("refr")) == ["future", "keywords", "not"]
        for imp in tree.get("imports") or []
        if isinstance(imp, dict)
    ):
        return  # OPA 1.17's opt-in: everything stays inside the negation, as in the engine
    rules = tree.get("rules") or []
    names = {_rule_name(r) for r in rules} - {""}
    module = _Module(source, frozenset(names | _ROOTS | _imports(source, tree)))
    for rule in rules:
        bound = _bound_names(source, rule)
        for query in _queries(rule):
            stmts = [s for s in query.get("stmts") or [] if isinstance(s, dict)]
            for stmt in stmts:
                kind, literal = inner(stmt.get("literal"))
                if kind == "NotExpr":
                    unbraced = len(stmts) == 1 and _unbraced(source, query, stmt)
                    yield from _statement_edits(module, bound, stmt, literal, unbraced)


def _rule_name(rule: Any) -> str:
    _, spec = inner(rule)
    _, head = inner(spec.get("head"))
    ref = head.get("refr")
    while True:
        kind, node = inner(ref)
        if kind == "Var":
            return str(node.get("value"))
        if kind not in _REFS:
            return ""
        ref = node.get("refr")


def _imports(source: bytes, tree: dict[str, Any]) -> set[str]:
    names: set[str] = set()
    for imp in tree.get("imports") or []:
        alias = imp.get("as") if isinstance(imp, dict) else None
        if isinstance(alias, dict) and isinstance(alias.get("start"), int):
            names.add(source[alias["start"] : alias.get("end", alias["start"])].decode())
        path = _ref_names(imp.get("refr") if isinstance(imp, dict) else None)
        if path:
            names.add(path[-1])
    return names


def _ref_names(ref: Any) -> list[str]:
    kind, node = inner(ref)
    if kind == "Var":
        return [str(node.get("value"))]
    if kind == "RefDot":
        base, fld = _ref_names(node.get("refr")), node.get("field")
        return [*base, str(fld[1])] if base and isinstance(fld, list) and len(fld) == 2 else []
    return []


def _queries(node: Any) -> Iterator[dict[str, Any]]:
    for item in walk(node):
        if isinstance(item.get("stmts"), list):
            yield item


def _bound_names(source: bytes, rule: Any) -> frozenset[str]:
    """Names a rule binds: every variable outside its negated statements (in a safe rule a
    variable there is bound, or is a rule), its arguments and the variables of `every`; not
    those only declared with `some`."""
    names: set[str] = set()
    stack: list[Any] = [rule]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            stack.extend(item)
            continue
        if not isinstance(item, dict):
            continue
        literal = item.get("literal")
        if isinstance(literal, dict) and "NotExpr" in literal:
            continue
        kind, node = inner(item)
        if kind == "Var":
            names.add(str(node.get("value")))
        elif kind == "Every":
            spans = [node.get("key"), node.get("value")]
            names.update(_span_text(source, s) for s in spans if isinstance(s, dict))
        elif kind == "SomeVars":
            continue  # declared, not bound: `some i; not input.l[i]` is unsafe to OPA
        stack.extend(item.values())
    names.discard("_")
    return frozenset(names)


def _span_text(source: bytes, where: dict[str, Any]) -> str:
    start, end = where.get("start"), where.get("end")
    if isinstance(start, int) and isinstance(end, int):
        return source[start:end].decode(errors="replace")
    return ""


def _unbraced(source: bytes, query: dict[str, Any], stmt: dict[str, Any]) -> bool:
    """True for the body of `... if <statement>`, written without braces."""
    start = _start(stmt)
    if start is None or _start(query) != start:
        return False
    before = source[:start].rstrip()
    return before.endswith(b"if") and not re.search(rb"[A-Za-z0-9_]if$", before)


def _start(node: Any) -> int | None:
    where = node.get("span") if isinstance(node, dict) else None
    start = where.get("start") if isinstance(where, dict) else None
    return start if isinstance(start, int) else None


def _statement_edits(
    module: _Module,
    bound: frozenset[str],
    stmt: dict[str, Any],
    literal: dict[str, Any],
    unbraced: bool,
) -> Iterator[_Edit]:
    """The edits that make OPA's early evaluation of one negated statement explicit."""
    targets = list(_statement_targets(module, bound, literal.get("expr")))
    stmt_range, expr_range = extent(module.source, stmt), extent(module.source, literal)
    if not targets or stmt_range is None or expr_range is None:
        return
    (start, end), expr_end = stmt_range, expr_range[1]
    source = module.source
    modifiers = (expr_end, end)  # ` with ...`, copied onto every hoisted term
    hoisted = [(t, module.fresh("v")) for t in targets if not t.bound]
    guards = [(t, module.fresh("d")) for t in targets if t.bound]
    for target, var in hoisted:
        yield _Edit(target.start, target.end, _constant(var.encode()))

    def prefix(copy: Render) -> bytes:
        opening = b"{" if unbraced else b""
        return opening + b"".join(
            var.encode()
            + b" = "
            + _one_line(copy(t.start, t.end))
            + _one_line(copy(*modifiers))
            + b"; "
            for t, var in hoisted
        )

    def suffix(copy: Render) -> bytes:
        closing = b"}" if unbraced else b""
        return (
            b"".join(
                b"; "
                + var.encode()
                + b" = "
                + _one_line(copy(t.start, t.end))
                + _one_line(copy(*modifiers))
                for t, var in guards
            )
            + closing
        )

    if hoisted or unbraced:
        space = start - 1 if unbraced and source[start - 1 : start] in (b" ", b"\t") else start
        yield _Edit(space, start, prefix)
    yield _Edit(end, end, suffix)


def _constant(text: bytes) -> Callable[[Render], bytes]:
    return lambda _copy: text


def _one_line(text: bytes) -> bytes:
    """A copied term on one line, so that the lines after it stay where they were (unless a
    comment or a raw string could change meaning: then it keeps its line breaks)."""
    if b"\n" not in text or b"#" in text or b"`" in text:
        return text
    return re.sub(rb"\s*\n\s*", b" ", text)


# ---------------------------------------------------------------------------------------------
# which terms OPA evaluates first


def _statement_targets(module: _Module, bound: frozenset[str], expr: Any) -> Iterator[_Target]:
    """The terms of a negated expression evaluated before it (OPA's `rewriteDynamics` over the
    expression after `rewriteExprTerms` and `rewriteEquals`)."""
    kind, node = inner(expr)
    if kind == "Call":
        for param in node.get("params") or []:
            yield from _operand(module, bound, param)
    elif kind in ("BoolExpr", "AssignExpr") and node.get("op") == "Eq":
        for side in (node.get("lhs"), node.get("rhs")):  # `==` is unification to OPA here
            yield from _side(module, bound, side)
    elif kind in ("BoolExpr", "ArithExpr", "BinExpr", "OrExpr"):
        for side in (node.get("lhs"), node.get("rhs")):
            yield from _operand(module, bound, side)
    elif kind == "Membership":
        for part in (node.get("key"), node.get("value"), node.get("collection")):
            yield from _operand(module, bound, part)
    elif kind == "UnaryExpr":
        yield from _operand(module, bound, node.get("expr"))
    else:
        yield from _side(module, bound, expr)


def _operand(module: _Module, bound: frozenset[str], term: Any) -> Iterator[_Target]:
    """An operand of a call: a reference or a nested call is evaluated first as a whole; the
    elements of an array, object or set operand are looked at one by one."""
    kind, node = inner(term)
    if kind in _REFS:
        yield from _whole(module, bound, term, call=False)
    elif kind in _CALL_LIKE or (kind == "UnaryExpr" and not _is_number(node)):
        yield from _whole(module, bound, term, call=True)
    elif kind == "Var" and _global(module, bound, str(node.get("value"))):
        # a rule, an import, input or data: a reference to OPA. A local never gets here; a
        # name that is neither fails the engine's own safety check in the guard, as in OPA.
        yield from _whole(module, bound, term, call=False)
    elif kind in ("Array", "Set"):
        for item in node.get("items") or []:
            yield from _operand(module, bound, item)
    elif kind == "Object":
        for entry in node.get("fields") or []:
            for part in entry[1:] if isinstance(entry, list) else []:
                yield from _operand(module, bound, part)


def _side(module: _Module, bound: frozenset[str], term: Any) -> Iterator[_Target]:
    """A side of `=`/`==`, or the term a negated statement is: a reference stays, only the
    terms it is built from (keys, and a composite or call it starts from) come first."""
    kind, node = inner(term)
    if kind in _REFS:
        yield from _ref_parts(module, bound, term)
    elif kind in _CALL_LIKE or (kind == "UnaryExpr" and not _is_number(node)):
        yield from _whole(module, bound, term, call=True)
    elif kind in _COMPOSITES:
        yield from _operand(module, bound, term)


def _ref_parts(module: _Module, bound: frozenset[str], ref: Any) -> Iterator[_Target]:
    kind, node = inner(ref)
    if kind == "RefBrack":
        yield from _ref_parts(module, bound, node.get("refr"))
        yield from _operand(module, bound, node.get("index"))
    elif kind == "RefDot":
        yield from _ref_parts(module, bound, node.get("refr"))
    elif kind in _COMPOSITES or kind in _CALL_LIKE:
        yield from _whole(module, bound, ref, call=True)


def _whole(module: _Module, bound: frozenset[str], term: Any, *, call: bool) -> Iterator[_Target]:
    """A term evaluated first. OPA evaluates a nested call (and a composite a reference starts
    from) before its safety check, so a variable it leaves unbound is bound by it; a reference
    with such a variable is an unsafe variable to OPA, and is left for the checker to report."""
    found = extent(module.source, term)
    if found is None:
        return
    free = [v for v in _variables(term, head=True) if not _bound(module, bound, v)]
    if free and not call:
        return
    yield _Target(found[0], found[1], bound=not free)


def _variables(term: Any, *, head: bool = False) -> Iterator[str]:
    """The variables of a term that a guard could leave unbound: not the variable a reference
    starts from (a rule, or a local the statement needs bound anyway), not a function's name,
    nor those local to a comprehension inside the term."""
    kind, node = inner(term)
    if kind == "Var":
        if not head:
            yield str(node.get("value"))
    elif kind == "RefDot":
        yield from _variables(node.get("refr"), head=True)
    elif kind == "RefBrack":
        yield from _variables(node.get("refr"), head=True)
        yield from _variables(node.get("index"))
    elif kind == "Call":
        for param in node.get("params") or []:
            yield from _variables(param)
    elif kind and kind not in _COMPREHENSIONS:
        for value in node.values():
            for child in value if isinstance(value, list) else [value]:
                for part in child if isinstance(child, list) else [child]:
                    yield from _variables(part)


def _global(module: _Module, bound: frozenset[str], name: str) -> bool:
    """A bare name that is a reference to OPA (a rule, an import, input, data), not a local."""
    return name != "_" and (name in module.globals or name not in bound)


def _bound(module: _Module, bound: frozenset[str], name: str) -> bool:
    return name != "_" and (name in module.globals or name in bound)


def _is_number(node: dict[str, Any]) -> bool:
    return inner(node.get("expr"))[0] == "Number"
