"""What the calls rewritten for `--builtin-errors undefined` call (`gateway.policy.undefined`).

- `__callgate_guard.<builtin>(args)`: an extension answering `[value]`, or `[]` when the
  builtin fails. The engine's own builtins are evaluated on a plain engine of the calling
  thread, callgate's supplied ones called directly.
- `data.__callgate_undefined.g_<builtin>(args)`: for a builtin whose arguments may hold what
  the engine cannot hand to Python (a set of arrays, objects or sets, such as a partial set of
  violation objects being counted; an object keyed by them; a whole number beyond 64 bits,
  such as a memory limit in exabytes): a function of a support module
  (`support_module`, added to every engine of such a bundle) that calls the guard when the
  arguments can be handed over, and the builtin itself when not (there an error stays an
  error: the evaluation fails, as in strict mode).
"""

from __future__ import annotations

import functools
import json
import threading
from collections.abc import Callable
from typing import Any, Final

from gateway.policy.builtins import EXTENSIONS, BuiltinError
from gateway.policy.signatures import SIGNATURES

GUARD: Final = "__callgate_guard"
SUPPORT: Final = "__callgate_undefined"
SUPPORT_FILE: Final = "__callgate_undefined.rego"
_ROUTED = "g_"
KEPT: Final = frozenset({"print", "trace", "walk", "rand.intn", "uuid.rfc4122"})
_SUPPLIED = {e.name: e for e in EXTENSIONS}
ARITIES: dict[str, int] = {
    **{name: len(s.args) for name, s in SIGNATURES.items() if s.args and name not in KEPT},
    **{name: e.nargs for name, e in _SUPPLIED.items() if e.nargs and name not in KEPT},
}
# the operators' builtin names → the symbol written; which may take sets (of anything)
SYMBOLS: dict[str, str] = {
    "plus": "+",
    "minus": "-",
    "mul": "*",
    "div": "/",
    "rem": "%",
    "or": "|",
    "and": "&",
}
_SAFE_KINDS = frozenset({"string", "boolean", "null"})  # numbers may be too large


def builtin_name(name: str) -> str:
    """The builtin a (possibly guarded) call names: `__callgate_guard.x.y` → `x.y`,
    `data.__callgate_undefined.g_x__y` → `x.y`."""
    if name.startswith(f"data.{SUPPORT}.{_ROUTED}"):
        return name.removeprefix(f"data.{SUPPORT}.{_ROUTED}").replace("__", ".")
    return name.removeprefix(GUARD + ".")


def callee(name: str) -> str:
    """What a guarded call of the builtin `name` calls."""
    if routed(name):
        return f"data.{SUPPORT}.{_ROUTED}{name.replace('.', '__')}"
    return f"{GUARD}.{name}"


@functools.cache
def routed(name: str) -> bool:
    """Whether an argument of the builtin may hold what cannot be handed to Python."""
    signature = SIGNATURES.get(name)
    if name in SYMBOLS or signature is None:
        return True
    return any(
        kind.name not in _SAFE_KINDS
        and (kind.name not in ("array", "set") or kind.element not in _SAFE_KINDS)
        for arg in signature.args
        for kind in arg
    )


def _nargs(name: str) -> int:
    return 2 if name in SYMBOLS else ARITIES[name]


# ---------------------------------------------------------------------------------------------
# the support module


_HELPERS = """package __callgate_undefined

import rego.v1

unconvertible(x) if {
\twalk(x, [_, v])
\tis_set(v)
\tsome e in v
\tcompound(e)
}

unconvertible(x) if {
\twalk(x, [_, v])
\tis_object(v)
\tsome k, _ in v
\tcompound(k)
}

unconvertible(x) if {
	walk(x, [_, v])
	is_number(v)
	v == floor(v)
	not v < 18446744073709551615
}

unconvertible(x) if {
	walk(x, [_, v])
	is_number(v)
	v == floor(v)
	v < -9223372036854775808
}

compound(e) if is_array(e)

compound(e) if is_object(e)

compound(e) if is_set(e)
"""


def support_module(names: set[str] | frozenset[str]) -> str:
    """The support module for the guarded builtins named ("" when none is routed)."""
    functions = [_routing(name) for name in sorted(names) if routed(name)]
    return "\n".join([_HELPERS, *functions]) if functions else ""


def _routing(name: str) -> str:
    args = ", ".join(f"a{i}" for i in range(_nargs(name)))
    direct = f"(a0 {SYMBOLS[name]} a1)" if name in SYMBOLS else f"{name}({args})"  # not [a | b]
    return (
        f"{callee(name).removeprefix(f'data.{SUPPORT}.')}({args}) := {GUARD}.{name}({args}) "
        f"if {{\n\tnot unconvertible([{args}])\n}} else := [{direct}]\n"
    )


# ---------------------------------------------------------------------------------------------
# the extensions


def extensions(names: set[str] | frozenset[str]) -> list[tuple[str, int, Callable[..., Any]]]:
    """(extension name, argument count, function) of the guard of each builtin named."""
    return [_guard(name) for name in sorted(names)]


@functools.cache
def _guard(name: str) -> tuple[str, int, Callable[..., Any]]:
    nargs = _nargs(name)
    supplied = _SUPPLIED.get(name)
    if supplied is not None:
        return f"{GUARD}.{name}", nargs, _supplied(supplied.contained())
    if name in SYMBOLS:
        return f"{GUARD}.{name}", nargs, _native(f"input[0] {SYMBOLS[name]} input[1]")
    call = f"{name}({', '.join(f'input[{i}]' for i in range(nargs))})"
    return f"{GUARD}.{name}", nargs, _native(call)


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
    # in parentheses: `[a | b]` would be an array comprehension
    module = f"package __callgate_guard\n\nr := [({expression})]\n"

    def guard(*args: Any) -> list[Any]:
        engines: dict[str, Any] = _local.__dict__.setdefault("engines", {})
        engine = engines.get(expression)
        if engine is None:
            from gateway.policy.interpreter import bare_engine  # the one place engines are made

            engine = engines[expression] = bare_engine()
            engine.add_policy("guard.rego", module)
        try:
            engine.set_input(list(args))
            value = engine.eval_rule("data.__callgate_guard.r")
        except RuntimeError:
            return _as_json(engine)
        except BaseException:
            engines.pop(expression, None)  # a panic: the engine is not used again
            raise
        return value if isinstance(value, list) else []

    return guard


def _as_json(engine: Any) -> list[Any]:
    """The answer read as JSON, when the builtin succeeded but its value (a whole number beyond
    64 bits) cannot be handed to Python; [] when the builtin failed. Only a number or another
    scalar is taken this way (JSON would turn a set into an array)."""
    try:
        out = json.loads(engine.eval_query_as_json("data.__callgate_guard.r"))
    except RuntimeError:
        return []
    results = out.get("result") or []
    value = results[0]["expressions"][0]["value"] if results else []
    if isinstance(value, list) and len(value) == 1 and not isinstance(value[0], list | dict):
        return value
    raise BuiltinError("the builtin's value cannot be handed over")
