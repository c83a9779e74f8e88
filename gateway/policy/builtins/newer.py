"""Builtins of OPA releases newer than the engine knows: `array.flatten`, `strings.split_n`."""

from __future__ import annotations

from typing import Any

from gateway.policy.builtins.base import BuiltinError, Extension, string_operand, type_name


def array_flatten(value: Any) -> list[Any]:
    """One level: arrays among the elements are spliced in, other elements kept."""
    if not isinstance(value, list | tuple):
        raise BuiltinError(f"operand 1 must be array but got {type_name(value)}")
    out: list[Any] = []
    for item in value:
        out.extend(item) if isinstance(item, list | tuple) else out.append(item)
    return out


def strings_split_n(value: Any, delimiter: Any, n: Any) -> list[str]:
    """The first n parts (n > 0), the last -n parts (n < 0), none for 0."""
    text, sep = string_operand(value, 1), string_operand(delimiter, 2)
    if isinstance(n, bool) or not isinstance(n, int | float):
        raise BuiltinError(f"operand 3 must be number but got {type_name(n)}")
    if isinstance(n, float) and not n.is_integer():
        raise BuiltinError("operand 3 must be integer number but got floating-point number")
    count = int(n)
    parts = list(text) if sep == "" else text.split(sep)
    if count >= 0:
        return parts[:count]
    return parts[count:]


EXTENSIONS = (
    Extension("array.flatten", 1, array_flatten),
    Extension("strings.split_n", 3, strings_split_n),
)
