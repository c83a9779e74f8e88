"""`sprintf` as OPA computes it: Go's `fmt.Sprintf` over the arguments as OPA hands them over.

OPA (topdown/strings.go) passes each element of the argument array to Go as: a number that
is an integer of 64 bits as a Go `int`, a larger integer as a `*big.Int`, any other number as a
`float64`, a string as a Go `string`, and every other value (booleans, null, arrays, objects,
sets) as the *string* of its Rego text (`[1, "a"]`, `{"k": true}`, `{1, 2}`, `set()`). Go's
formatting rules then apply to those, so a verb with no argument left writes `%!d(MISSING)`,
arguments left over are listed as `%!(EXTRA int=2, string=a)`, and a verb that does not fit
its argument writes `%!d(string=x)`; flags, width, precision, `*` and explicit argument
indexes (`%[2]s`) behave as in Go. The engine's own `sprintf` raised for the first two and
wrote nothing for the third.

What the embedded engine cannot hand over: an integer of 2^64 or more (also a float as large
that is a whole number) and a set whose elements are arrays or objects fail before callgate
sees them, and the evaluation fails (gateway.policy.failures words it). A whole-number float
(`2.0`) arrives as the integer it equals, so `%d` prints it where OPA writes `%!d(float64=2)`.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import Any

from gateway.policy.builtins.base import (
    BuiltinError,
    Extension,
    rego_text,
    string_operand,
    type_name,
)
from gateway.policy.builtins.gostrconv import (
    LOWER_DIGITS,
    UPPER_DIGITS,
    can_backquote,
    format_float,
    go_quote,
    printable,
    quote_rune,
)

_INT64 = 1 << 63
_MAX_NUM = 1_000_000  # Go's tooLarge: a width or precision beyond this is not a number


# ---------------------------------------------------------------------------------------------
# the arguments as Go sees them


@dataclass(frozen=True)
class _Arg:
    kind: str  # int | big | float64 | string (Go's type names, as `%T` and `%!` write them)
    value: Any

    @property
    def go_type(self) -> str:
        return "*big.Int" if self.kind == "big" else self.kind


def go_argument(value: Any) -> _Arg:
    """One element of sprintf's array, as OPA passes it to Go."""
    if (
        isinstance(value, bool)
        or value is None
        or isinstance(value, list | tuple | dict | set | frozenset)
    ):
        return _Arg("string", rego_text(value))
    if isinstance(value, int):
        return _Arg("int" if -_INT64 <= value < _INT64 else "big", value)
    if isinstance(value, float):
        return _Arg("float64", value)
    if isinstance(value, str):
        return _Arg("string", value)
    raise BuiltinError(f"cannot format a {type_name(value)}")


# ---------------------------------------------------------------------------------------------
# Go's fmt: the printer


@dataclass
class _Flags:
    minus: bool = False
    plus: bool = False
    sharp: bool = False
    space: bool = False
    zero: bool = False
    plus_v: bool = False
    sharp_v: bool = False
    wid: int | None = None  # None: no width
    prec: int | None = None  # None: no precision


@dataclass
class _Printer:
    out: list[str] = field(default_factory=list)
    f: _Flags = field(default_factory=_Flags)

    # -- padding ------------------------------------------------------------------------------

    def padding(self, n: int) -> None:
        if n > 0:
            self.out.append(("0" if self.f.zero and not self.f.minus else " ") * n)

    def pad(self, text: str) -> None:
        width = (self.f.wid or 0) - len(text)
        if self.f.minus:
            self.out.append(text)
            self.padding(width)
        else:
            self.padding(width)
            self.out.append(text)

    def pad_no_zero(self, text: str) -> None:
        zero, self.f.zero = self.f.zero, False
        self.pad(text)
        self.f.zero = zero

    # -- one argument -------------------------------------------------------------------------

    def print_arg(self, arg: _Arg, verb: str) -> None:
        if verb == "T":
            self.format_string(arg.go_type)
        elif verb == "p":
            self.bad_verb(arg, verb)
        elif arg.kind == "int":
            self.format_int(arg, verb)
        elif arg.kind == "big":
            self.format_big(arg, verb)
        elif arg.kind == "float64":
            self.format_float(arg, verb)
        else:
            self.format_str(arg, verb)

    def bad_verb(self, arg: _Arg, verb: str) -> None:
        """`%!d(string=x)`: the argument printed with %v and the flags as they are."""
        self.out.append(f"%!{verb}({arg.go_type}=")
        self.print_arg(arg, "v")
        self.out.append(")")

    def format_string(self, text: str) -> None:
        if self.f.prec is not None:
            text = text[: self.f.prec]
        self.pad(text)

    def format_str(self, arg: _Arg, verb: str) -> None:
        text: str = arg.value
        if verb == "v" and self.f.sharp_v or verb == "q":
            self.format_quoted(text)
        elif verb in "vs":
            self.format_string(text)
        elif verb in "xX":
            self.format_hex_bytes(text.encode(), LOWER_DIGITS if verb == "x" else UPPER_DIGITS)
        else:
            self.bad_verb(arg, verb)

    def format_quoted(self, text: str) -> None:
        if self.f.prec is not None:
            text = text[: self.f.prec]
        if self.f.sharp and can_backquote(text):
            self.pad("`" + text + "`")
        else:
            self.pad(go_quote(text, ascii_only=self.f.plus))

    def format_hex_bytes(self, data: bytes, digits: str) -> None:
        if self.f.prec is not None:
            data = data[: self.f.prec]
        if not data:
            if self.f.wid is not None:
                self.padding(self.f.wid)
            return
        prefix = "0" + digits[16] if self.f.sharp else ""
        parts = [digits[b >> 4] + digits[b & 15] for b in data]
        text = " ".join(prefix + p for p in parts) if self.f.space else prefix + "".join(parts)
        self.pad(text)

    # -- numbers ------------------------------------------------------------------------------

    def format_int(self, arg: _Arg, verb: str) -> None:
        value: int = arg.value
        bases = {"v": 10, "d": 10, "b": 2, "o": 8, "O": 8, "x": 16, "X": 16}
        if verb in bases:
            self.format_integer(
                value, bases[verb], verb, UPPER_DIGITS if verb == "X" else LOWER_DIGITS
            )
        elif verb == "c":
            self.pad(_rune(value))
        elif verb == "q":
            self.pad(quote_rune(value, self.f.plus))
        elif verb == "U":
            self.format_unicode(value)
        else:
            self.bad_verb(arg, verb)

    def format_integer(self, value: int, base: int, verb: str, digits: str) -> None:
        """fmt.fmtInteger: precision or zero padding as leading zeros, then prefix, sign."""
        f = self.f
        negative, magnitude = value < 0, abs(value)
        prec = 0
        if f.prec is not None:
            prec = f.prec
            if prec == 0 and magnitude == 0:
                zero, f.zero = f.zero, False
                self.padding(f.wid or 0)
                f.zero = zero
                return
        elif f.zero and not f.minus and f.wid is not None:
            prec = f.wid - (1 if negative or f.plus or f.space else 0)
        text = _to_base(magnitude, base, digits).rjust(prec, "0")
        if f.sharp:
            if base == 2:
                text = "0b" + text
            elif base == 8 and text[0] != "0":
                text = "0" + text
            elif base == 16:
                text = "0" + digits[16] + text
        if verb == "O":
            text = "0o" + text
        sign = "-" if negative else "+" if f.plus else " " if f.space else ""
        self.pad_no_zero(sign + text)

    def format_unicode(self, value: int) -> None:
        text = "U+" + _to_base(value & ((1 << 64) - 1), 16, UPPER_DIGITS).rjust(
            max(4, self.f.prec or 0), "0"
        )
        if self.f.sharp and 0 <= value <= 0x10FFFF and _printable_code(value):
            text += f" '{chr(value)}'"
        self.pad_no_zero(text)

    def format_big(self, arg: _Arg, verb: str) -> None:
        """math/big's Int.Format."""
        bases = {"b": 2, "o": 8, "O": 8, "d": 10, "s": 10, "v": 10, "x": 16, "X": 16}
        value: int = arg.value
        if verb not in bases:
            self.out.append(f"%!{verb}(big.Int={value})")
            return
        f = self.f
        sign = "-" if value < 0 else "+" if f.plus or f.plus_v else " " if f.space else ""
        prefix = ""
        if f.sharp or f.sharp_v:
            prefix = {"b": "0b", "o": "0", "x": "0x", "X": "0X"}.get(verb, "")
        if verb == "O":
            prefix = "0o"
        digits = _to_base(abs(value), bases[verb], UPPER_DIGITS if verb == "X" else LOWER_DIGITS)
        zeros = max((f.prec or 0) - len(digits), 0) if f.prec is not None else 0
        if f.prec == 0 and digits == "0":
            return
        length = len(sign) + len(prefix) + zeros + len(digits)
        left = right = 0
        if f.wid is not None and length < f.wid:
            if f.minus:
                right = f.wid - length
            elif f.zero and f.prec is None:
                zeros = f.wid - length
            else:
                left = f.wid - length
        self.out.append(" " * left + sign + prefix + "0" * zeros + digits + " " * right)

    def format_float(self, arg: _Arg, verb: str) -> None:
        defaults = {
            "v": ("g", -1),
            "b": ("b", -1),
            "g": ("g", -1),
            "G": ("G", -1),
            "x": ("x", -1),
            "X": ("X", -1),
            "f": ("f", 6),
            "e": ("e", 6),
            "E": ("E", 6),
            "F": ("f", 6),
        }
        if verb not in defaults:
            self.bad_verb(arg, verb)
            return
        fmt, prec = defaults[verb]
        if self.f.prec is not None:
            prec = self.f.prec
        self.write_float(arg.value, fmt, prec)

    def write_float(self, value: float, fmt: str, prec: int) -> None:
        f = self.f
        num = format_float(value, fmt, prec)
        num = num if num[0] in "+-" else "+" + num
        if f.space and num[0] == "+" and not f.plus:
            num = " " + num[1:]
        if f.sharp and fmt != "b":
            num = _sharp_float(num, fmt, prec)
        if f.plus or num[0] != "+":
            if f.zero and not f.minus and f.wid is not None and f.wid > len(num):
                self.out.append(num[0])
                self.padding(f.wid - len(num))
                self.out.append(num[1:])
                return
            self.pad(num)
            return
        self.pad(num[1:])


def _to_base(value: int, base: int, digits: str) -> str:
    if value == 0:
        return "0"
    out = []
    while value:
        value, rest = divmod(value, base)
        out.append(digits[rest])
    return "".join(reversed(out))


def _printable_code(code: int) -> bool:
    return not 0xD800 <= code <= 0xDFFF and printable(chr(code))


def _rune(code: int) -> str:
    """fmt's %c: the character, or U+FFFD for what is not one."""
    valid = 0 <= code <= 0x10FFFF and not 0xD800 <= code <= 0xDFFF
    return chr(code) if valid else "\ufffd"


def _sharp_float(num: str, fmt: str, prec: int) -> str:
    """The # flag on a float: a decimal point always, and %g's trailing zeros kept."""
    digits = (6 if prec == -1 else prec) if fmt in "gGx" else 0
    tail, has_point, nonzero = "", False, False
    for i in range(1, len(num)):
        ch = num[i]
        if ch == ".":
            has_point = True
        elif ch in "pP" or (ch in "eE" and fmt not in "xX"):
            num, tail = num[:i], num[i:]
            break
        else:
            nonzero = nonzero or ch != "0"
            digits -= 1 if nonzero else 0
    if not has_point:
        if len(num) == 2 and num[1] == "0":
            digits -= 1
        num += "."
    return num + "0" * max(digits, 0) + tail


def _parse_number(text: str, start: int, end: int) -> tuple[int, bool, int]:
    """fmt's parsenum: (number, whether there was one, where it ends)."""
    if start >= end:
        return 0, False, end
    number, found, i = 0, False, start
    while i < end and "0" <= text[i] <= "9":
        if number > _MAX_NUM:
            return 0, False, end
        number, found, i = number * 10 + int(text[i]), True, i + 1
    return number, found, i


def _parse_index(text: str) -> tuple[int, int, bool]:
    """fmt's parseArgNumber over text starting at '[': (index, length, ok)."""
    if len(text) < 3:
        return 0, 1, False
    close = text.find("]", 1)
    if close < 0:
        return 0, 1, False
    number, found, end = _parse_number(text, 1, close)
    if not found or end != close:
        return 0, close + 1, False
    return number - 1, close + 1, True


@dataclass
class _Format:
    """One run of fmt.Sprintf: the format, the arguments and where it has got to."""

    text: str
    args: list[_Arg]
    printer: _Printer = field(default_factory=_Printer)
    i: int = 0
    arg_num: int = 0
    reordered: bool = False
    good: bool = True

    def run(self) -> str:
        end, out = len(self.text), self.printer.out
        while self.i < end:
            self.good = True
            start, self.i = self.i, self.text.find("%", self.i)
            if self.i < 0:
                self.i = end
            out.append(self.text[start : self.i])
            if self.i >= end:
                break
            self.i += 1
            self.printer.f = _Flags()
            if not self.simple_verb() and not self.verb():
                break
        if not self.reordered and self.arg_num < len(self.args):
            self.printer.f = _Flags()
            out.append("%!(EXTRA ")
            for k, arg in enumerate(self.args[self.arg_num :]):
                out.append(f"{', ' if k else ''}{arg.go_type}=")
                self.printer.print_arg(arg, "v")
            out.append(")")
        return "".join(out)

    def simple_verb(self) -> bool:
        """Flags, then a lower-case verb with an argument left: printed at once (True)."""
        f = self.printer.f
        while self.i < len(self.text):
            ch = self.text[self.i]
            if ch in "#0+- ":
                setattr(
                    f,
                    {"#": "sharp", "0": "zero", "+": "plus", "-": "minus", " ": "space"}[ch],
                    True,
                )
                self.i += 1
                continue
            if "a" <= ch <= "z" and self.arg_num < len(self.args):
                self.print_verb(ch)
                self.i += 1
                return True
            return False
        return False

    def print_verb(self, verb: str) -> None:
        f = self.printer.f
        if verb == "v":
            f.sharp_v, f.sharp, f.plus_v, f.plus = f.sharp, False, f.plus, False
        self.printer.print_arg(self.args[self.arg_num], verb)
        self.arg_num += 1

    def verb(self) -> bool:
        """Index, width, precision and the verb; False when the format ended without one."""
        text, end, f, out = self.text, len(self.text), self.printer.f, self.printer.out
        after_index = self.index()
        if self.i < end and text[self.i] == "*":
            self.i += 1
            f.wid = self.star("%!(BADWIDTH)")
            if f.wid is not None and f.wid < 0:
                f.wid, f.minus, f.zero = -f.wid, True, False
            after_index = False
        else:
            wid, found, self.i = _parse_number(text, self.i, end)
            f.wid = wid if found else None
            self.good = self.good and not (after_index and found)
        if self.i + 1 < end and text[self.i] == ".":
            self.i += 1
            self.good = self.good and not after_index
            after_index = self.index()
            if self.i < end and text[self.i] == "*":
                self.i += 1
                f.prec = self.star("%!(BADPREC)", negative_ok=False)
                after_index = False
            else:
                prec, _, self.i = _parse_number(text, self.i, end)
                f.prec = prec
        if not after_index:
            self.index()
        if self.i >= end:
            out.append("%!(NOVERB)")
            return False
        verb, self.i = text[self.i], self.i + 1
        if verb == "%":
            out.append("%")
        elif not self.good:
            out.append(f"%!{verb}(BADINDEX)")
        elif self.arg_num >= len(self.args):
            out.append(f"%!{verb}(MISSING)")
        else:
            self.print_verb(verb)
        return True

    def index(self) -> bool:
        """An explicit argument index `[n]` at the current place (fmt's argNumber)."""
        if self.i >= len(self.text) or self.text[self.i] != "[":
            return False
        self.reordered = True
        index, length, ok = _parse_index(self.text[self.i :])
        self.i += length
        if ok and 0 <= index < len(self.args):
            self.arg_num = index
            return True
        self.good = False
        return ok

    def star(self, bad: str, *, negative_ok: bool = True) -> int | None:
        """A width or precision taken from the arguments (fmt's intFromArg)."""
        value: int | None = None
        if self.arg_num < len(self.args):
            arg = self.args[self.arg_num]
            if arg.kind == "int" and abs(arg.value) <= _MAX_NUM:
                value = arg.value
            self.arg_num += 1
        if value is not None and value < 0 and not negative_ok:
            value = None
        if value is None:
            self.printer.out.append(bad)
        return value


def go_sprintf(text: str, args: list[_Arg]) -> str:
    """fmt.Sprintf(text, args...)."""
    return _Format(text, args).run()


def sprintf(format: Any, values: Any) -> str:
    text = string_operand(format, 1)
    if not isinstance(values, list | tuple):
        raise BuiltinError(f"operand 2 must be array but got {type_name(values)}")
    plan = _plain_plan(text)
    if plan is not None and len(plan) - 1 == len(values):
        return _plain_sprintf(plan, values)
    return go_sprintf(text, [go_argument(v) for v in values])


# The common case, several times faster than the printer: only %s, %v and %d (and %%), as
# many arguments as verbs. It gives what the printer gives for these.
_PLAIN_VERB = re.compile(r"%(.)", re.DOTALL)


@functools.lru_cache(maxsize=1024)
def _plain_plan(text: str) -> tuple[str, ...] | None:
    """The literal pieces around the verbs, each piece after the first starting with its verb
    letter; None when the format holds anything but %s, %v, %d and %%."""
    pieces, start = [""], 0
    for match in _PLAIN_VERB.finditer(text):
        verb = match.group(1)
        if verb == "%":
            pieces[-1] += text[start : match.start()] + "%"
        elif verb in "svd":
            pieces[-1] += text[start : match.start()]
            pieces.append(verb)
        else:
            return None
        start = match.end()
    if "%" in text[start:]:  # a % with no verb after it
        return None
    pieces[-1] += text[start:]
    return tuple(pieces)


def _plain_sprintf(plan: tuple[str, ...], values: list[Any] | tuple[Any, ...]) -> str:
    out = [plan[0]]
    for piece, value in zip(plan[1:], values, strict=True):
        out.append(_plain_verb(piece[0], value))
        out.append(piece[1:])
    return "".join(out)


def _plain_verb(verb: str, value: Any) -> str:
    if isinstance(value, str):
        return value if verb != "d" else f"%!d(string={value})"
    if isinstance(value, int) and not isinstance(value, bool):
        if verb != "s" or not -_INT64 <= value < _INT64:
            return str(value)
        return f"%!s(int={value})"
    if isinstance(value, float):
        text = format_float(value, "g", -1)
        return text if verb == "v" else f"%!{verb}(float64={text})"
    text = rego_text(value)
    return text if verb != "d" else f"%!d(string={text})"


EXTENSIONS = (Extension("sprintf", 2, sprintf),)
