"""Which parts of `input` a compiled bundle can observe, read off regorus's AST.

Used for one question: can any rule reach `input.run.calls`, the run's recent calls? That list
is the largest part of a decision's input, and handing it to the engine (`set_input_json`)
costs more than evaluating the default policy. A bundle that cannot reach it is given the
input without it.

The answer errs towards "yes". Every reference rooted at `input` is followed outwards through
`.field` and `["literal"]` steps; the reference observes the history unless its static path
leaves `run.calls` for somewhere else (`input.call.args`, `input.run.turn`). `input` or
`input.run` used whole (passed to a function, iterated, imported, compared), a computed index
(`input[k]`, `input.run[k]`) or an AST this module does not recognise all count as observing.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from typing import Any

from gateway.policy.engine import add_policy, new_engine

HISTORY = ("run", "calls")

_STEPS = ("RefDot", "RefBrack")
_LITERAL_INDEX = ("String", "RawString")


def reads_history(engine: Any) -> bool:
    """Whether any rule of the compiled regorus `engine` can observe `input.run.calls`."""
    if not _understood():
        return True
    try:
        modules = json.loads(engine.get_ast_as_json())
    except (RuntimeError, ValueError):
        return True
    return reads_path(modules, HISTORY)


def reads_path(modules: Any, path: tuple[str, ...]) -> bool:
    """Whether any reference in the modules' ASTs (regorus `get_ast_as_json`) can observe
    `input.<path>`."""
    if not isinstance(modules, list) or not modules:
        return True
    for module in modules:
        if not isinstance(module, dict) or not isinstance(module.get("ast"), dict):
            return True
        for steps in _input_refs(module["ast"]):
            if _overlaps(steps, path):
                return True
    return False


def _overlaps(steps: list[str], path: tuple[str, ...]) -> bool:
    """A reference `input.<steps>` (its static part) can observe `input.<path>` unless the
    two part ways."""
    return all(a == b for a, b in zip(steps, path, strict=False))


def _input_refs(node: Any) -> Iterator[list[str]]:
    """The static path of each reference rooted at `input`."""
    if isinstance(node, list):
        for item in node:
            yield from _input_refs(item)
        return
    if not isinstance(node, dict):
        return
    for kind, body in node.items():
        if kind in _STEPS and isinstance(body, dict):
            yield from _chain(body)
        elif kind == "Var" and isinstance(body, dict):
            if body.get("value") == "input":
                yield []
        else:
            yield from _input_refs(body)


def _chain(step: dict[str, Any]) -> Iterator[list[str]]:
    """One chain of `.field` / `[index]` steps: the path if it is rooted at `input`, then
    whatever the indexes themselves refer to."""
    fields: list[str | None] = []
    indexes: list[Any] = []
    node: Any = step
    kind = "RefDot"
    while True:
        if kind == "RefDot":
            field = node.get("field")
            fields.append(field[1] if isinstance(field, list) and len(field) == 2
                          and isinstance(field[1], str) else None)
        else:
            index = node.get("index")
            indexes.append(index)
            literal = [index[k].get("value") for k in _LITERAL_INDEX
                       if isinstance(index, dict) and isinstance(index.get(k), dict)]
            fields.append(literal[0] if literal and isinstance(literal[0], str) else None)
        inner = node.get("refr")
        if isinstance(inner, dict) and len(inner) == 1:
            (kind, body), = inner.items()
            if kind in _STEPS and isinstance(body, dict):
                node = body
                continue
        break
    fields.reverse()
    if isinstance(inner, dict) and isinstance(inner.get("Var"), dict):
        if inner["Var"].get("value") == "input":
            yield _static(fields)
    else:
        yield from _input_refs(inner)
    for index in indexes:
        yield from _input_refs(index)


def _static(fields: list[str | None]) -> list[str]:
    """The path up to the first computed index (which may lead anywhere below it)."""
    static: list[str] = []
    for field in fields:
        if field is None:
            break
        static.append(field)
    return static


@functools.cache
def _understood() -> bool:
    """The AST reads as this module expects (checked once on known policies); otherwise every
    bundle is taken to read the history."""
    probes = {
        "x if input.run.calls[_].tool == \"a\"": True,
        "x if input[\"run\"].calls": True,
        "x if { r := input.run; r.calls }": True,
        "x if walk(input, _)": True,
        "x if { k := \"calls\"; input.run[k] }": True,
        "x if input.call.args.n > input.run.turn": False,
        "x if input[\"call\"].tool == \"a\"": False,
    }
    for rule, expected in probes.items():
        engine = new_engine()
        try:
            add_policy(engine, "probe.rego", f"package probe\n{rule}\n")
            modules = json.loads(engine.get_ast_as_json())
        except (RuntimeError, ValueError):
            return False
        if reads_path(modules, HISTORY) is not expected:
            return False
    return True
