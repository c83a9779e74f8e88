"""What every supplied builtin shares: its registration record, operand checks, the error type.

A supplied builtin is a plain Python function over Rego values as regorus hands them over
(str, int, float, bool, None, list, dict, set). It raises `BuiltinError` for a bad operand,
with OPA's wording (`operand 1 must be string but got number`); the engine reports the call's
file and line, and callgate denies with `policy_error` naming the builtin.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson

from gateway.jsontext import LONE_SURROGATE, has_lone_surrogate
from gateway.policy.builtins.gostrconv import go_quote


class BuiltinError(Exception):
    """A supplied builtin could not produce a value for its operands."""


@dataclass(frozen=True)
class Extension:
    """A builtin supplied to the engine: its Rego name, argument count and implementation."""

    name: str
    nargs: int
    fn: Callable[..., Any]

    def contained(self) -> Callable[..., Any]:
        """fn, with every failure turned into a BuiltinError that names the builtin."""
        name, fn = self.name, self.fn

        def call(*args: Any) -> Any:
            try:
                return valid_text(fn(*args))
            except BuiltinError as exc:
                raise BuiltinError(f"{name}: {exc}") from None
            except Exception as exc:  # a bug or a library error: still a named builtin error
                raise BuiltinError(f"{name}: {type(exc).__name__}: {exc}") from None

        call.__name__ = name.replace(".", "_")
        return call


def valid_text(value: Any) -> Any:
    """value with every lone UTF-16 surrogate in its strings (keys too) written as U+FFFD, as
    Go writes text that is not Unicode: Python strings can hold one (JSON's `"\\ud800"`
    decodes to it), and one handed to the engine crashed the process. The value itself when
    there is none (most answers: no copy)."""
    if isinstance(value, str):
        if not has_lone_surrogate(value):
            return value
        return LONE_SURROGATE.sub("\ufffd", value)
    if isinstance(value, dict | list):
        try:  # (in C, 25 times faster than the walk: it refuses a lone surrogate too)
            orjson.dumps(value)
            return value
        except orjson.JSONEncodeError:  # one, or what JSON cannot hold (a set, a big integer)
            pass
    if isinstance(value, dict):
        pairs = [(valid_text(k), valid_text(v)) for k, v in value.items()]
        if all(k is k0 and v is v0 for (k, v), (k0, v0) in zip(pairs, value.items(), strict=True)):
            return value
        return dict(pairs)
    if isinstance(value, list | tuple | set | frozenset):
        items = [valid_text(v) for v in value]
        if all(a is b for a, b in zip(items, value, strict=True)):
            return value
        return type(value)(items)
    return value


def type_name(value: Any) -> str:
    """The Rego type name of a value, as OPA's error messages spell it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list | tuple):
        return "array"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, set | frozenset):
        return "set"
    return type(value).__name__


def string_operand(value: Any, position: int) -> str:
    if not isinstance(value, str):
        raise BuiltinError(f"operand {position} must be string but got {type_name(value)}")
    return value


def object_operand(value: Any, position: int) -> dict[Any, Any]:
    if not isinstance(value, dict):
        raise BuiltinError(f"operand {position} must be object but got {type_name(value)}")
    return value


# An object standing for a set the engine could not hand over (gateway.policy.crossing):
# {SET_KEY: [elements]}, a key no policy writes by chance (it starts with a NUL).
SET_KEY = "\x00callgate-set"


def _crossed_set(value: Any) -> list[Any] | None:
    if isinstance(value, dict) and len(value) == 1 and isinstance(value.get(SET_KEY), list):
        return value[SET_KEY]
    return None


def rego_text(value: Any) -> str:
    """A value as OPA writes it (ast.Term.String): strings Go-quoted, object keys and set
    elements in OPA's order of values, `set()` for the empty set."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return orjson.dumps(value).decode()
    if isinstance(value, str):
        return go_quote(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(rego_text(v) for v in value) + "]"
    if (elements := _crossed_set(value)) is not None:
        return "{" + ", ".join(rego_text(v) for v in sorted(elements, key=order_key)) + "}"
    if isinstance(value, dict):
        items = sorted(value.items(), key=lambda kv: order_key(kv[0]))
        return "{" + ", ".join(f"{rego_text(k)}: {rego_text(v)}" for k, v in items) + "}"
    if isinstance(value, set | frozenset):
        if not value:
            return "set()"
        return "{" + ", ".join(rego_text(v) for v in sorted(value, key=order_key)) + "}"
    raise BuiltinError(f"cannot write a {type_name(value)}")


def order_key(value: Any) -> tuple[Any, ...]:
    """OPA's order of values: null < booleans < numbers < strings < arrays < objects < sets."""
    if value is None:
        return (0,)
    if isinstance(value, bool):
        return (1, value)
    if isinstance(value, int | float):
        return (2, value)
    if isinstance(value, str):
        return (3, value)
    if isinstance(value, list | tuple):
        return (4, tuple(order_key(v) for v in value))
    if (elements := _crossed_set(value)) is not None:
        return (6, tuple(sorted(order_key(v) for v in elements)))
    if isinstance(value, dict):
        return (5, tuple(sorted((order_key(k), order_key(v)) for k, v in value.items())))
    return (6, tuple(sorted(order_key(v) for v in value)))
