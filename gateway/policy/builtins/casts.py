"""`to_number` as OPA 1.9 has it (topdown/casts.go), within what the engine's numbers hold.

OPA accepts for a string whatever Go's `strconv.ParseFloat` parses (`+1`, `.5`, `1.`, `01`,
`1_000`, `0x1p4`), refuses `inf` and `nan`, and errors for a number beyond a 64-bit float
(`1e400`); the number keeps the string's exact decimal value. The engine's own `to_number`
reads strings as JSON (refusing `+1`, `.5`, `1_000`, accepting ` 1`) and rounds quietly.

Here the value is the string's number when the engine can hold it: an integer of 64 bits
exactly, a fraction as the nearest 64-bit float when that float is the number or the number is
the float's shortest decimal form (`0.1`: what the literal becomes in a policy, too). An
integer beyond 64 bits (`123456789012345678901234567890`, `1e20`), a fraction with more digits
than a float holds (`0.1000000000000000000001`) and a non-zero one too small for a float
(`1e-400`, which would become 0) are refused with an error naming them, never turned into
another number.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal, InvalidOperation
from typing import Any

from gateway.policy.builtins.base import BuiltinError, Extension, type_name

_INT64, _UINT64 = 1 << 63, 1 << 64
_DIGITS = r"[0-9](?:_?[0-9])*"
_HEX = r"[0-9a-fA-F](?:_?[0-9a-fA-F])*"
_DECIMAL = re.compile(
    rf"[+-]?(?:{_DIGITS}(?:\.(?:{_DIGITS})?)?|\.{_DIGITS})"
    rf"(?:[eE][+-]?{_DIGITS})?"
)
_HEX_FLOAT = re.compile(rf"[+-]?0[xX]_?(?:{_HEX}(?:\.(?:{_HEX})?)?|\.{_HEX})[pP][+-]?{_DIGITS}")


def to_number(value: Any) -> int | float:
    if value is None:
        return 0
    if isinstance(value, bool):
        return 1 if value else 0
    if isinstance(value, int | float):
        return value
    if isinstance(value, str):
        return _parse(value)
    raise BuiltinError(
        f"operand 1 must be one of {{null, boolean, number, string}} but got {type_name(value)}"
    )


def _parse(text: str) -> int | float:
    if text.lstrip("+-").lower() in ("inf", "infinity", "nan"):
        raise BuiltinError("operand 1 must be valid number string but got string")
    if _DECIMAL.fullmatch(text):
        exact = Decimal(text.replace("_", ""))
    elif _HEX_FLOAT.fullmatch(text):
        try:
            exact = Decimal(float.fromhex(text.replace("_", "")))
        except OverflowError:
            raise BuiltinError(
                f'strconv.ParseFloat: parsing "{text}": value out of range'
            ) from None
    else:
        raise BuiltinError(f'strconv.ParseFloat: parsing "{text}": invalid syntax')
    return _held(text, exact)


def _held(text: str, exact: Decimal) -> int | float:
    """The number the engine holds for exact, or BuiltinError when it would be another one."""
    try:
        nearest = float(exact)
    except (OverflowError, InvalidOperation):
        nearest = math.inf
    if math.isinf(nearest):
        raise BuiltinError(f'strconv.ParseFloat: parsing "{text}": value out of range')
    if exact == exact.to_integral_value():
        if -_INT64 <= int(exact) < _UINT64:
            return int(exact)
        # a float would do for some (1e20), but a whole float of 2^64 or more cannot be handed
        # back from the engine intact (2^64 comes back as 2^64 - 1): refused as the others
        raise BuiltinError(
            f'"{text}" is an integer beyond 64 bits: the embedded engine would '
            "not keep it, where OPA keeps it exact; use the OPA engine, or keep "
            "such numbers as strings"
        )
    if nearest == 0:
        raise BuiltinError(
            f'"{text}" is too small for a 64-bit float: the embedded engine would '
            "make it 0, where OPA keeps it; use the OPA engine"
        )
    if Decimal(nearest) == exact or Decimal(repr(nearest)) == exact:
        return nearest  # the float is that number, or that number is the float's shortest form
    raise BuiltinError(
        f'"{text}" is a decimal with more digits than a 64-bit float holds: the '
        "embedded engine would round it, where OPA keeps it exact; use the OPA "
        "engine, or keep such numbers as strings"
    )


EXTENSIONS = (Extension("to_number", 1, to_number),)
