"""`sprintf` over sets of arrays, objects or sets: what the engine cannot hand to Python, made
so that it can.

The engine hands a builtin's arguments to callgate as Python values, and a Python set cannot
hold a dict or a list: `sprintf("%v", [violations])` over a partial set of violation objects
failed before callgate's `sprintf` saw it, where OPA writes the set. So the second argument
of every `sprintf` call is wrapped, `sprintf(f, a)` → `sprintf(f,
data.__callgate_fmt.crossable(a))`, by a function of a support module (`SUPPORT_TEXT`, added
to the engine as `SUPPORT_FILE`): it answers `a` itself unless an element holds such a set,
and otherwise a copy in which each such set, four levels deep, is an object `{SET_KEY:
[elements]}` (a key starting with a NUL), which `gateway.policy.builtins.base.rego_text`
writes as the set it stands for. The call stays where it was (an error names the author's
line); only columns after it move. A module that replaces `sprintf` with `with` is left as
written. Still refused, with the error that says why: an object keyed by arrays or objects,
and such a set nested deeper.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Final

from gateway.policy.builtins.base import SET_KEY
from gateway.policy.compat import Module
from gateway.policy.syntax import dotted, extent, inner, walk

SUPPORT_FILE: Final = "__callgate_fmt.rego"
_WRAP: Final = b"data.__callgate_fmt.crossable("
_KEY: Final = json.dumps(SET_KEY)  # as a Rego string: "\u0000callgate-set"


def _level(n: int, last: bool) -> str:
    inner_ = "x" if last else f"c{n + 1}"
    if last:
        return f"c{n}(x) := x\n"
    return (
        f"c{n}(x) := {{{_KEY}: [{inner_}(e) | some e in x]}} if {{\n"
        "\tis_set(x)\n\tsome b in x\n\tcompound(b)\n"
        f"}} else := [{inner_}(e) | some e in x] if is_array(x)\n"
        f"else := {{k: {inner_}(v) | some k, v in x}} if is_object(x)\n"
        "else := x\n"
    )


SUPPORT_TEXT: Final = "\n".join(
    [
        "package __callgate_fmt\n\nimport rego.v1\n",
        "crossable(a) := [c1(x) | some x in a] if {\n\tis_array(a)\n\tsome y in a\n"
        "\tholds_compound_set(y)\n} else := a\n",
        "holds_compound_set(x) if {\n\twalk(x, [_, v])\n\tis_set(v)\n\tsome e in v\n"
        "\tcompound(e)\n}\n",
        "compound(e) if is_array(e)\n\ncompound(e) if is_object(e)\n\ncompound(e) if is_set(e)\n",
        *(_level(n, n == 5) for n in range(1, 6)),
    ]
)


def wrap_sprintf_arguments(module: Module) -> str | None:
    """The module's text with the second argument of each `sprintf` call wrapped; None when
    there is nothing to wrap."""
    source = module.source
    if b"sprintf" not in source or _replaces_sprintf(module):
        return None
    edits: list[tuple[int, bytes]] = []
    for node in walk(module.ast.get("rules") or []):
        kind, call = inner(node)
        params = call.get("params") or [] if kind == "Call" else []
        if kind != "Call" or dotted(call.get("fcn")) != "sprintf" or len(params) != 2:
            continue
        where = extent(source, params[1])
        if where is None:
            return None  # a tree this module does not follow: leave the text as written
        edits += [(where[0], _WRAP), (where[1], b")")]
    if not edits:
        return None
    out = source
    for offset, text in sorted(edits, key=lambda e: e[0], reverse=True):
        out = out[:offset] + text + out[offset:]
    return out.decode()


def _replaces_sprintf(module: Module) -> bool:
    return any(
        dotted(w.get("refr")) == "sprintf"
        for node in walk(module.ast)
        for w in node.get("with_mods") or []
        if isinstance(w, dict)
    )


def needs_support(texts: Iterable[tuple[str, str]]) -> bool:
    return any(_WRAP.decode() in text for _, text in texts)
