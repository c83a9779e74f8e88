"""Go's strconv as `sprintf` needs it: quoting strings and runes, and writing float64 values
(`strconv.Quote`, `QuoteRune`, `CanBackquote`, `FormatFloat` for e, E, f, g, G, b, x, X).

Floats are written from their exact binary value: the shortest digits that read back when no
precision is given, otherwise rounded half to even, then laid out by Go's rules (the shortest
`%g` takes an exponent below 1e-4 and from the 7th digit before the point on: `123456`,
`1.234567e+06`, `1e+06`).
"""

from __future__ import annotations

import math
from decimal import ROUND_HALF_EVEN, Decimal, localcontext

LOWER_DIGITS, UPPER_DIGITS = "0123456789abcdefx", "0123456789ABCDEFX"


# ---------------------------------------------------------------------------------------------
# Go's strconv: quoting


def printable(ch: str) -> bool:
    """unicode.IsPrint: letters, marks, numbers, punctuation, symbols and the ASCII space."""
    return ch == " " or ch.isprintable()


_ESCAPES = {
    "\a": "\\a",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\v": "\\v",
}


def _escape(ch: str, quote: str, ascii_only: bool) -> str:
    if ch in (quote, "\\"):
        return "\\" + ch
    if printable(ch) and not (ascii_only and ord(ch) >= 0x80):
        return ch
    if ch in _ESCAPES:
        return _ESCAPES[ch]
    code = ord(ch)
    if code < 0x20 or code == 0x7F:
        return f"\\x{code:02x}"
    if 0xD800 <= code <= 0xDFFF:  # not a valid rune: Go writes the replacement character
        return "\\ufffd" if ascii_only else "\ufffd"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def go_quote(text: str, *, ascii_only: bool = False) -> str:
    """strconv.Quote (QuoteToASCII with ascii_only)."""
    return '"' + "".join(_escape(ch, '"', ascii_only) for ch in text) + '"'


def quote_rune(code: int, ascii_only: bool) -> str:
    ch = chr(code) if 0 <= code <= 0x10FFFF and not 0xD800 <= code <= 0xDFFF else "\ufffd"
    return "'" + _escape(ch, "'", ascii_only) + "'"


def can_backquote(text: str) -> bool:
    return all(
        (ch == "\t" or (ord(ch) >= 0x20 and ch != "\x7f")) and ch not in "`\ufeff" for ch in text
    )


# ---------------------------------------------------------------------------------------------
# Go's strconv: floats


def _digits(value: float, fmt: str, prec: int) -> tuple[str, int]:
    """The decimal digits of |value| without trailing zeros, and where the point goes
    (value = 0.digits × 10^point): the shortest that reads back for prec < 0, else rounded
    half to even from the exact binary value, as strconv does for the format."""
    if value == 0:
        return "", 0
    if prec < 0:
        exact = Decimal(repr(abs(value)))
    else:
        exact = Decimal(abs(value))
        if fmt in "fF":
            quantum = Decimal(1).scaleb(-prec)
        else:
            significant = prec + 1 if fmt in "eE" else max(prec, 1)
            quantum = Decimal(1).scaleb(exact.adjusted() + 1 - significant)
        with localcontext() as context:
            context.prec = 800 + prec
            exact = exact.quantize(quantum, rounding=ROUND_HALF_EVEN)
    _, digit_tuple, exponent = exact.as_tuple()
    digits = "".join(map(str, digit_tuple)).lstrip("0")
    if not digits:
        return "", 0
    return digits.rstrip("0"), len(digits) + int(exponent)


def format_float(value: float, fmt: str, prec: int) -> str:
    """strconv.FormatFloat(value, fmt, prec, 64) for fmt in e E f g G b x X."""
    negative = math.copysign(1.0, value) < 0
    if fmt == "b":
        return _format_binary(value)
    if fmt in "xX":
        return _format_hex(value, fmt, prec)
    digits, point = _digits(value, fmt, prec)
    shortest = prec < 0
    if shortest:
        prec = {"e": max(len(digits) - 1, 0), "f": max(len(digits) - point, 0)}.get(
            fmt.lower(), len(digits)
        )
    elif fmt in "gG" and prec == 0:
        prec = 1
    return ("-" if negative else "") + _efg(digits, point, prec, fmt, shortest)


def _efg(s: str, dp: int, prec: int, fmt: str, shortest: bool) -> str:
    nd = len(s)
    if fmt in "gG":
        eprec = nd if prec > nd >= dp else prec
        if shortest:
            eprec = 6
        if dp - 1 < -4 or dp - 1 >= eprec:
            prec = min(prec, nd) - 1
            fmt = "e" if fmt == "g" else "E"
        else:
            prec = max((nd if prec > dp else prec) - dp, 0)
            fmt = "f"
    if fmt in "eE":
        exp = dp - 1 if nd else 0
        mantissa = s[0] if nd else "0"
        if prec > 0:
            mantissa += "." + (s[1 : prec + 1] + "0" * prec)[:prec]
        return f"{mantissa}{fmt}{'-' if exp < 0 else '+'}{abs(exp):02d}"
    whole = (s[:dp] + "0" * max(dp - nd, 0)) if dp > 0 else "0"
    if prec <= 0:
        return whole
    frac = ("0" * max(0, -dp) + s[max(dp, 0) :])[:prec]
    return f"{whole}.{frac}{'0' * (prec - len(frac))}"


def _mantissa(value: float) -> tuple[int, int]:
    """(mant, exp) with |value| = mant × 2^exp, mant of 53 bits (0 for zero)."""
    if value == 0:
        return 0, 0
    fraction, exponent = math.frexp(abs(value))
    return int(fraction * (1 << 53)), exponent - 53


def _format_binary(value: float) -> str:
    mant, exp = _mantissa(value)
    if mant == 0:
        exp = -1074
    elif exp < -1074:
        mant, exp = mant >> (-1074 - exp), -1074
    sign = "-" if math.copysign(1.0, value) < 0 else ""
    return f"{sign}{mant}p{'+' if exp >= 0 else ''}{exp}"


def _format_hex(value: float, fmt: str, prec: int) -> str:
    """strconv's %x of a float: -0x1.yyyyp±dd, rounded to prec hex digits when prec < 15."""
    mask = (1 << 64) - 1
    mant, exp = _mantissa(value)
    exp = exp + 52 if mant else 0
    mant <<= 8  # the leading 1 at bit 60
    if 0 <= prec < 15:
        shift = prec * 4
        extra = (mant << shift) & ((1 << 60) - 1)
        mant >>= 60 - shift
        if extra | (mant & 1) > 1 << 59:
            mant += 1
        mant <<= 60 - shift
        if mant & (1 << 61):
            mant >>= 1
            exp += 1
    digits = LOWER_DIGITS if fmt == "x" else UPPER_DIGITS
    out = ["-" if math.copysign(1.0, value) < 0 else "", "0", fmt, str((mant >> 60) & 1)]
    mant = (mant << 4) & mask
    count = prec if prec > 0 else (-1 if prec < 0 and mant else 0)
    if count:
        out.append(".")
    while count > 0 or (count < 0 and mant):
        out.append(digits[(mant >> 60) & 15])
        mant = (mant << 4) & mask
        count -= 1
    out.append(f"{'p' if fmt == 'x' else 'P'}{'-' if exp < 0 else '+'}{abs(exp):02d}")
    return "".join(out)
