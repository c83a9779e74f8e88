"""The one place a regorus Engine is made: every engine gets the same builtins and limits.

Serving engines (one per thread), `policy test`, `policy eval`, `--explain`, coverage and the
checker all call `new_engine()`, so a policy means the same everywhere. `add_policy()` adds a
source the way OPA reads it, including the output-argument form of a call to a supplied
builtin (`io.jwt.decode(token, [header, payload, sig])`), which the engine only understands for
its own builtins: such a call is rewritten to `[header, payload, sig] = io.jwt.decode(token)`;
and OPA's order of evaluation around `not` (gateway.policy.negation).
"""

from __future__ import annotations

import functools
import json
import os
from typing import Any

# The regorus error text carries a ~2.5 KB Rust backtrace when RUST_BACKTRACE is set; this
# switches it off for errors (it must be set before the first engine is used). A contained
# engine panic would also print one to stderr: one policy input could flood the log with them.
os.environ["RUST_LIB_BACKTRACE"] = "0"
os.environ["RUST_BACKTRACE"] = "0"

import regorus  # noqa: E402  (the environment must be set first)

from gateway.policy.builtins import ARITY, EXTENSIONS  # noqa: E402
from gateway.policy.negation import rewrite_negations  # noqa: E402
from gateway.policy.syntax import dotted, extent, inner, span, text_of, walk  # noqa: E402

# regorus refuses a policy line longer than 1,024 columns by default; a JWT, a PEM key or a
# JWKS written into a policy is longer. Lines may be as long as a file may be large.
MAX_FILE_BYTES = 1 << 20
MAX_LINES = 20_000


def new_engine(*, coverage: bool = False, rego_v0: bool = False) -> Any:
    """A fresh regorus Engine with callgate's builtins registered."""
    engine = bare_engine()
    if rego_v0:
        engine.set_rego_v0(True)
    for extension in EXTENSIONS:
        engine.add_extension(extension.name, extension.nargs, extension.contained())
    if coverage:
        engine.set_enable_coverage(True)
    return engine


def bare_engine() -> Any:
    """A regorus Engine with callgate's limits and no extensions (the engine's own builtins)."""
    engine = regorus.Engine()
    engine.set_policy_length_config(max_col=MAX_FILE_BYTES, max_file_bytes=MAX_FILE_BYTES,
                                    max_lines=MAX_LINES)
    return engine


def add_policy(engine: Any, name: str, text: str) -> None:
    """Add a policy source (RuntimeError with the engine's located message if it is bad)."""
    engine.add_policy(name, rewrite_source(name, text))


@functools.lru_cache(maxsize=256)
def rewrite_source(name: str, text: str) -> str:
    """A source as the engine is given it: with the output-argument form of supplied builtins
    rewritten, and OPA's evaluation order around `not` (gateway.policy.negation) made explicit.
    Every line stays where it was."""
    return rewrite_negations(name, rewrite_output_calls(name, text), _syntax_tree)


def _syntax_tree(name: str, text: str) -> Any:
    scratch = bare_engine()
    scratch.add_policy(name, text)
    return json.loads(scratch.get_ast_as_json())


def is_panic(exc: BaseException) -> bool:
    """True for pyo3's PanicException (it derives from BaseException, not Exception)."""
    kind = type(exc)
    return kind.__name__ == "PanicException" and kind.__module__ == "pyo3_runtime"


# ---------------------------------------------------------------------------------------------
# the output-argument form of supplied builtins


def rewrite_output_calls(name: str, text: str) -> str:
    """`f(a, out)` → `out = f(a)` for statement calls to supplied builtins given one argument
    more than they take, and `[path, value] := walk(x)` → `walk(x, [path, value])` (the engine
    gives nothing for walk's value form, only for its output form); any other text is returned
    unchanged."""
    if not any(f"{fn}(" in text for fn in ARITY) and "walk(" not in text:
        return text
    scratch = bare_engine()
    try:
        scratch.add_policy(name, text)
        modules = json.loads(scratch.get_ast_as_json())
    except Exception:  # noqa: BLE001  (a bad source is reported by the real add_policy)
        return text
    source = text.encode()
    edits = sorted((e for m in modules for e in _edits(source, m.get("ast", {}))), reverse=True)
    for start, end, replacement in edits:
        source = source[:start] + replacement + source[end:]
    return source.decode()


def _edits(source: bytes, tree: Any) -> list[tuple[int, int, bytes]]:
    found: list[tuple[int, int, bytes]] = []
    for item in walk(tree):
        literal = item.get("literal")
        if not isinstance(literal, dict):
            continue
        expr = (literal.get("Expr") or literal.get("NotExpr") or {}).get("expr")
        kind, node = inner(expr)
        edit = _output_call_edit(source, node) if kind == "Call" else None
        if kind == "AssignExpr" and "Expr" in literal:
            edit = _walk_edit(source, node)
        if edit is not None:
            found.append(edit)
    return found


def _walk_edit(source: bytes, assign: dict[str, Any]) -> tuple[int, int, bytes] | None:
    """`T := walk(x)` or `T = walk(x)` (either way round) as `walk(x, T)`."""
    sides = [assign.get("lhs"), assign.get("rhs")]
    for call_side, other in ((sides[1], sides[0]), (sides[0], sides[1])):
        kind, call = inner(call_side)
        if kind == "Call" and dotted(call.get("fcn")) == "walk" and \
                len(call.get("params") or []) == 1 and inner(other)[0] != "Call":
            where = extent(source, {"AssignExpr": assign})
            if where is None or (call_side is sides[0] and assign.get("op") != "Eq"):
                return None
            argument = text_of(source, call["params"][0]).encode()
            target = text_of(source, other).encode()
            return where[0], where[1], b"walk(" + argument + b", " + target + b")"
    return None


def _output_call_edit(source: bytes, call: dict[str, Any]) -> tuple[int, int, bytes] | None:
    fn, params, where = dotted(call.get("fcn")), call.get("params") or [], call.get("span", {})
    if fn not in ARITY or len(params) != ARITY[fn] + 1:
        return None
    start, end = where.get("start"), where.get("end")
    last_start = span(params[-1]).get("start")
    if not (isinstance(start, int) and isinstance(end, int) and isinstance(last_start, int)):
        return None
    if source[end - 1:end] != b")":
        return None
    comma = source.rfind(b",", start, last_start)
    if comma < 0:
        return None
    output = source[comma + 1:end - 1].strip()
    call_text = source[start:comma].rstrip() + b")"
    return start, end, output + b" = " + call_text
