"""Rego as OPA reads it, on regorus: every engine gets the same builtins and limits.

Serving engines (one per thread), `policy test`, `policy eval`, `--explain`, coverage and the
checker all call `new_engine()`, so a policy means the same everywhere. `add_policy()` adds a
source the way OPA reads it (`rewrite_source`): functions defined without a body are completed
and a reference ending a line is ended there (`gateway.policy.compat`), the output-argument
form of a call to a supplied builtin (`io.jwt.decode(token, [header, payload, sig])`), which
the engine only understands for its own builtins, is rewritten to
`[header, payload, sig] = io.jwt.decode(token)`, and OPA's order of evaluation around `not` is
made explicit (gateway.policy.negation). In Rego v0 (`rego_v0=True`) the engine reads pre-1.0
syntax, a rule with several bodies is written as one rule per body, as OPA reads it, and what
OPA reads otherwise (a bare rule name) is refused.
"""

from __future__ import annotations

import functools
import json
from typing import Any

from gateway.policy.builtins import ARITY, EXTENSIONS
from gateway.policy.compat import (
    Module,
    bare_rule_names,
    complete_bodyless_functions,
    several_bodies,
    several_bodies_refused,
    split_bodies,
    statement_breaks,
)
from gateway.policy.interpreter import bare_engine
from gateway.policy.negation import rewrite_negations
from gateway.policy.syntax import dotted, extent, inner, span, text_of, walk


def new_engine(*, coverage: bool = False, rego_v0: bool = False) -> Any:
    """A fresh regorus Engine with callgate's builtins registered."""
    engine = bare_engine(rego_v0=rego_v0)
    for extension in EXTENSIONS:
        engine.add_extension(extension.name, extension.nargs, extension.contained())
    if coverage:
        engine.set_enable_coverage(True)
    return engine


def add_policy(engine: Any, name: str, text: str, *, rego_v0: bool = False) -> None:
    """Add a policy source (RuntimeError with the engine's located message if it is bad);
    `rego_v0` must be what the engine was made with."""
    engine.add_policy(name, rewrite_source(name, text, rego_v0=rego_v0))


@functools.lru_cache(maxsize=1024)
def rewrite_source(name: str, text: str, *, rego_v0: bool = False) -> str:
    """A source as the engine is given it (see the module docstring). Every line stays where it
    was. Each distinct source is prepared once (the engines of every thread, test run and
    probe reuse it)."""

    def parse(candidate: str) -> None:
        bare_engine(rego_v0=rego_v0).add_policy(name, candidate)

    if rego_v0:
        text = _split_several_bodies(name, text)
    else:
        text = complete_bodyless_functions(text, parse)
    modules = _modules(name, text, rego_v0=rego_v0)
    if rego_v0:
        _refuse_v0_readings(modules)
    text = _end_statements(text, modules)
    text = rewrite_output_calls(name, text, rego_v0=rego_v0)
    return rewrite_negations(name, text, functools.partial(_syntax_tree, rego_v0=rego_v0))


def _end_statements(text: str, modules: list[Module]) -> str:
    breaks = sorted((o for m in modules for o in statement_breaks(m)), reverse=True)
    if not breaks:
        return text
    source = text.encode()
    for offset in breaks:
        source = source[:offset] + b";" + source[offset:]
    return source.decode()


def _split_several_bodies(name: str, text: str) -> str:
    """Rego v0 rules with several bodies written as one rule per body (`compat.split_bodies`):
    first those the engine refuses (partial sets, one at a time as it names them), then the
    rest, found in the syntax tree. What cannot be split is left for the refusal."""
    for _ in range(text.count("{") + 1):
        scratch = bare_engine(rego_v0=True)
        try:
            scratch.add_policy(name, text)
        except RuntimeError as exc:
            found = several_bodies_refused(str(exc), text)
            split = split_bodies(text, found.offset) if found is not None else None
            if split is None:
                return text
            text = split
            continue
        modules = [Module.of(m) for m in json.loads(scratch.get_ast_as_json())]
        found_all = (p.offset for m in modules for p in several_bodies(m, constants=True))
        for offset in sorted(found_all, reverse=True):  # later edits leave earlier offsets
            text = split_bodies(text, offset) or text
        return text
    return text


def _refuse_v0_readings(modules: list[Module]) -> None:
    for module in modules:
        for problem in (*bare_rule_names(module), *several_bodies(module)):
            raise problem


def _modules(name: str, text: str, *, rego_v0: bool) -> list[Module]:
    """The modules of a source; none if it does not parse (the engine's own error is then
    reported by the caller's add_policy, or said as what it is)."""
    scratch = bare_engine(rego_v0=rego_v0)
    error: RuntimeError | None = None
    try:
        scratch.add_policy(name, text)
    except RuntimeError as exc:
        error = several_bodies_refused(str(exc), text) if rego_v0 else None
        if error is None:
            return []
    if error is not None:
        raise error
    return [Module.of(m) for m in json.loads(scratch.get_ast_as_json())]


def _syntax_tree(name: str, text: str, *, rego_v0: bool = False) -> Any:
    scratch = bare_engine(rego_v0=rego_v0)
    scratch.add_policy(name, text)
    return json.loads(scratch.get_ast_as_json())


# ---------------------------------------------------------------------------------------------
# the output-argument form of supplied builtins


def rewrite_output_calls(name: str, text: str, *, rego_v0: bool = False) -> str:
    """`f(a, out)` → `out = f(a)` for statement calls to supplied builtins given one argument
    more than they take, and `[path, value] := walk(x)` → `walk(x, [path, value])` (the engine
    gives nothing for walk's value form, only for its output form); any other text is returned
    unchanged."""
    if not any(f"{fn}(" in text for fn in ARITY) and "walk(" not in text:
        return text
    scratch = bare_engine(rego_v0=rego_v0)
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
        if (
            kind == "Call"
            and dotted(call.get("fcn")) == "walk"
            and len(call.get("params") or []) == 1
            and inner(other)[0] != "Call"
        ):
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
    if source[end - 1 : end] != b")":
        return None
    comma = source.rfind(b",", start, last_start)
    if comma < 0:
        return None
    output = source[comma + 1 : end - 1].strip()
    call_text = source[start:comma].rstrip() + b")"
    return start, end, output + b" = " + call_text
