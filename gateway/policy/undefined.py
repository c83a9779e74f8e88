"""`--builtin-errors undefined`: a builtin that fails leaves its expression undefined, as OPA
does without `strict-builtin-errors`, and the evaluation goes on.

The engine raises on every builtin error, and its Python binding cannot be told otherwise
(regorus's `set_strict_builtin_errors` is not exposed). So in this mode each builtin call and
each arithmetic or set operator of the bundle is rewritten to go through a guard
(`gateway.policy.guards`) that answers `[value]`, or `[]` when the builtin fails; the call
site takes element 0, which of `[]` is undefined, so the expression is undefined exactly where
OPA makes it so (a `not` over it succeeds, a rule whose body it is in does not apply, a
`default` answers):

    to_number(x)               →  __callgate_guard.to_number(x)[0]
    a / b                      →  __callgate_guard.div(a, b)[0]
    split(s, ",", parts)       →  parts = __callgate_guard.split(s, ",")[0]
    count(violations)          →  data.__callgate_undefined.g_count(violations)[0]

(the last form for builtins whose arguments may hold what cannot be handed to Python).
Every line stays where it was (a line's columns move). Left as they are (their errors stay
errors): `print`, `trace`, `walk` (a relation),
builtins without arguments, `rand.intn` and `uuid.rfc4122` (OPA answers them once per query;
a guard would answer afresh), calls in `with` clauses and `default` values, and a builtin
that a `with` replaces anywhere in the bundle (the replacement applies to the name as written).
Evaluation errors that are not builtin errors (conflicting values, ...) are errors in both
modes, as on OPA.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from gateway.policy.compat import Module
from gateway.policy.guards import ARITIES, GUARD, SUPPORT, SYMBOLS, builtin_name, callee
from gateway.policy.syntax import dotted, extent, inner, span

# operator (as the syntax tree names it) → (its builtin name, the symbol written)
OPERATORS: dict[str, tuple[str, str]] = {
    "Add": ("plus", "+"),
    "Sub": ("minus", "-"),
    "Mul": ("mul", "*"),
    "Div": ("div", "/"),
    "Mod": ("rem", "%"),
    "Or": ("or", "|"),
    "Union": ("or", "|"),
    "And": ("and", "&"),
    "Intersection": ("and", "&"),
}
_GUARDED = (f"{GUARD}.", f"data.{SUPPORT}.")


# ---------------------------------------------------------------------------------------------
# rewriting a module


@dataclass(frozen=True)
class _Guard:
    start: int
    end: int
    name: str
    split: int = -1  # operators: the offset of the symbol; calls: where the arguments start
    output: tuple[int, int, int] | None = None  # output form: (last input end, out start, end)


class Rewrite:
    """The guarded text of one module, and the guards it needs."""

    def __init__(self, module: Module, locals_: set[tuple[str, str]], mocked: set[str]) -> None:
        self._source = module.source
        self._module = module
        self._locals = locals_
        self._mocked = mocked
        self.names: set[str] = set()
        self._guards: list[_Guard] = sorted(self._find(), key=lambda g: (g.start, -g.end))

    @property
    def changed(self) -> bool:
        return bool(self._guards)

    def text(self) -> str:
        return self._render(0, len(self._source)).decode()

    # -- finding what to guard ----------------------------------------------------------------

    def _find(self) -> Iterator[_Guard]:
        aliases = self._module.aliases()
        for rule in self._module.ast.get("rules") or []:
            if inner(rule)[0] == "Default":
                continue
            for node, statement in _nodes(rule):
                kind, value = inner(node)
                if kind == "Call":
                    found = self._call(value, aliases, statement)
                elif kind in ("ArithExpr", "BinExpr"):
                    found = self._operator(value)
                else:
                    continue
                if found is not None:
                    self.names.add(found.name)
                    yield found

    def _call(self, call: dict[str, Any], aliases: set[str], statement: bool) -> _Guard | None:
        name = dotted(call.get("fcn"))
        if name.startswith(_GUARDED):  # a guarded text read back (a probe's copy of it)
            self.names.add(builtin_name(name))
            return None
        head = name.split(".")[0]
        if (
            name not in ARITIES
            or name in self._mocked
            or head in aliases
            or (self._module.package, head) in self._locals
        ):
            return None
        params = call.get("params") or []
        where = _range(self._source, call)
        args = span(call.get("fcn")).get("end")
        if where is None or not isinstance(args, int):
            return None
        if len(params) == ARITIES[name]:
            return _Guard(where[0], where[1], name, split=args)
        if len(params) == ARITIES[name] + 1 and statement and ARITIES[name] > 0:
            last_in, out = extent(self._source, params[-2]), extent(self._source, params[-1])
            if last_in is not None and out is not None:
                return _Guard(
                    where[0], where[1], name, split=args, output=(last_in[1], out[0], out[1])
                )
        return None

    def _operator(self, node: dict[str, Any]) -> _Guard | None:
        known = OPERATORS.get(str(node.get("op")))
        where = _range(self._source, node)
        lhs = extent(self._source, node.get("lhs"))
        rhs = extent(self._source, node.get("rhs"))
        if known is None or where is None or lhs is None or rhs is None:
            return None
        symbol = _symbol_at(self._source, lhs[1], rhs[0], known[1])
        return None if symbol is None else _Guard(where[0], where[1], known[0], split=symbol)

    # -- writing it ---------------------------------------------------------------------------

    def _render(self, lo: int, hi: int) -> bytes:
        out, pos = bytearray(), lo
        for guard in self._within(lo, hi):
            out += self._source[pos : guard.start] + self._replacement(guard)
            pos = guard.end
        return bytes(out + self._source[pos:hi])

    def _within(self, lo: int, hi: int) -> Iterator[_Guard]:
        """The outermost guards inside [lo, hi)."""
        reached = lo
        for guard in self._guards:
            if guard.start >= reached and guard.end <= hi and (guard.start, guard.end) != (lo, hi):
                yield guard
                reached = guard.end

    def _replacement(self, g: _Guard) -> bytes:
        fcn = callee(g.name).encode()
        if g.name in SYMBOLS:  # an operator: `a / b` → `__callgate_guard.div(a , b)[0]`
            lhs, rhs = self._render(g.start, g.split), self._render(g.split + 1, g.end)
            return fcn + b"(" + lhs + b"," + rhs + b")[0]"
        if g.output is None:
            return fcn + self._render(g.split, g.end) + b"[0]"
        last_in, out_start, out_end = g.output
        newlines = b"\n" * self._source[last_in : g.end].count(b"\n")
        out = self._render(out_start, out_end)
        return out + b" = " + fcn + self._render(g.split, last_in) + b")[0]" + newlines


def _nodes(rule: Any) -> Iterator[tuple[dict[str, Any], bool]]:
    """Every object below a rule, outside `with` clauses, and whether it is a statement's
    whole expression."""
    wholes: set[int] = set()
    stack: list[Any] = [rule]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            stack.extend(reversed(item))
        elif isinstance(item, dict):
            yield item, id(item) in wholes
            whole = _statement_expr(item)
            if whole is not None:
                wholes.add(id(whole))
            stack.extend(v for k, v in reversed(list(item.items())) if k != "with_mods")


def _statement_expr(node: dict[str, Any]) -> Any:
    literal = node.get("literal")
    expr = literal.get("Expr") if isinstance(literal, dict) else None
    return expr.get("expr") if isinstance(expr, dict) else None


def _range(source: bytes, node: dict[str, Any]) -> tuple[int, int] | None:
    """The bytes a call or operator covers: its span, widened over what lies below it."""
    where = node.get("span", {})
    below = extent(source, {"X": node})
    start, end = where.get("start"), where.get("end")
    if below is None or not isinstance(start, int) or not isinstance(end, int):
        return None
    return min(start, below[0]), max(end, below[1])


def _symbol_at(source: bytes, lo: int, hi: int, symbol: str) -> int | None:
    """The offset of an operator's symbol between its operands (comments skipped)."""
    i = lo
    while i < hi:
        ch = source[i : i + 1]
        if ch == b"#":
            newline = source.find(b"\n", i, hi)
            i = hi if newline < 0 else newline
        elif ch == symbol.encode():
            return i
        i += 1
    return None
