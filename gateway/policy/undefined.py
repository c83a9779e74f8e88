"""`--builtin-errors undefined`: a builtin that fails leaves its expression undefined, as OPA
does without `strict-builtin-errors`, and the evaluation goes on.

The engine raises on every builtin error, and its Python binding cannot be told otherwise
(regorus's `set_strict_builtin_errors` is not exposed). So in this mode each builtin call and
each arithmetic or set operator of the bundle is rewritten to go through a guard, an extension
that answers `[value]`, or `[]` when the builtin fails; the call site takes element 0, which
of `[]` is undefined, so the expression is undefined exactly where OPA makes it so (a `not`
over it succeeds, a rule whose body it is in does not apply, a `default` answers):

    to_number(x)               →  __callgate_undefined.to_number(x)[0]
    a / b                      →  __callgate_undefined.div(a, b)[0]
    split(s, ",", parts)       →  parts = __callgate_undefined.split(s, ",")[0]

Every line stays where it was (a line's columns move). The engine's own builtins run in the
guard on a plain engine of the calling thread; callgate's supplied builtins are called
directly. Left as they are (their errors stay errors): `print`, `trace`, `walk` (a relation),
builtins without arguments, `rand.intn` and `uuid.rfc4122` (OPA answers them once per query;
a guard would answer afresh), calls in `with` clauses and `default` values, and a builtin
that a `with` replaces anywhere in the bundle (the replacement applies to the name as written).
Evaluation errors that are not builtin errors (conflicting values, ...) are errors in both
modes, as on OPA.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Final

from gateway.policy.builtins import EXTENSIONS, BuiltinError
from gateway.policy.compat import Module
from gateway.policy.signatures import SIGNATURES
from gateway.policy.syntax import dotted, extent, inner, span

PREFIX: Final = "__callgate_undefined"
_KEEP = frozenset({"print", "trace", "walk", "rand.intn", "uuid.rfc4122"})
_SUPPLIED = {e.name: e for e in EXTENSIONS}
ARITIES: dict[str, int] = {
    **{name: len(s.args) for name, s in SIGNATURES.items() if s.args and name not in _KEEP},
    **{name: e.nargs for name, e in _SUPPLIED.items() if e.nargs and name not in _KEEP},
}
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
_SYMBOLS = {name: symbol for name, symbol in OPERATORS.values()}


def builtin_name(name: str) -> str:
    """The builtin a (possibly guarded) call names: `__callgate_undefined.x.y` → `x.y`."""
    return name.removeprefix(PREFIX + ".")


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
        if name.startswith(PREFIX + "."):  # a guarded text read back (a probe's copy of it)
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
        prefix = f"{PREFIX}.".encode()
        if g.name in _SYMBOLS:  # an operator: `a / b` → `PREFIX.div(a , b)[0]`
            return (
                prefix
                + g.name.encode()
                + b"("
                + self._render(g.start, g.split)
                + b","
                + self._render(g.split + 1, g.end)
                + b")[0]"
            )
        fcn = self._source[g.start : g.split]
        if g.output is None:
            return prefix + fcn + self._render(g.split, g.end) + b"[0]"
        last_in, out_start, out_end = g.output
        tail = self._source[last_in : g.end]
        return (
            self._render(out_start, out_end)
            + b" = "
            + prefix
            + fcn
            + self._render(g.split, last_in)
            + b")[0]"
            + b"\n" * tail.count(b"\n")
        )


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


# ---------------------------------------------------------------------------------------------
# the guards


def guards(names: set[str] | frozenset[str]) -> list[tuple[str, int, Callable[..., Any]]]:
    """(extension name, argument count, function) of the guard of each builtin named."""
    return [_guard(name) for name in sorted(names)]


@functools.cache
def _guard(name: str) -> tuple[str, int, Callable[..., Any]]:
    if name in _SYMBOLS:
        return f"{PREFIX}.{name}", 2, _native(f"input[0] {_SYMBOLS[name]} input[1]")
    nargs = ARITIES[name]
    supplied = _SUPPLIED.get(name)
    if supplied is not None:
        return f"{PREFIX}.{name}", nargs, _supplied(supplied.contained())
    call = f"{name}({', '.join(f'input[{i}]' for i in range(nargs))})"
    return f"{PREFIX}.{name}", nargs, _native(call)


def _supplied(fn: Callable[..., Any]) -> Callable[..., list[Any]]:
    def guard(*args: Any) -> list[Any]:
        try:
            return [fn(*args)]
        except BuiltinError:
            return []

    return guard


_local = threading.local()


def _native(expression: str) -> Callable[..., list[Any]]:
    """A guard evaluating `expression` (over `input[i]`, the arguments) on a plain engine of
    the calling thread."""
    module = f"package __callgate_guard\n\nr := [{expression}]\n"

    def guard(*args: Any) -> list[Any]:
        engines: dict[str, Any] = _local.__dict__.setdefault("engines", {})
        engine = engines.get(expression)
        if engine is None:
            from gateway.policy.engine import bare_engine  # the one place engines are made

            engine = engines[expression] = bare_engine()
            engine.add_policy("guard.rego", module)
        try:
            engine.set_input(list(args))
            value = engine.eval_rule("data.__callgate_guard.r")
        except RuntimeError:
            return []
        except BaseException:
            engines.pop(expression, None)  # a panic: the engine is not used again
            raise
        return value if isinstance(value, list) else []

    return guard
