"""The formats of JSON Schema 2020-12, each checked completely, as callgate asserts them.

`FORMAT_CHECKER` knows exactly the nineteen formats the specification defines (section 7.3 of
its validation vocabulary) and checks each against its RFC's grammar and rules: nothing here
depends on which optional packages happen to be installed (jsonschema's own checkers change
with them, and `jsonschema.FormatChecker()` mixes in draft 3's `time`, which refuses every
RFC 3339 time). A schema naming any other format is refused at load (`gateway.tools.schema`)
unless its manifest says `format_assertion: false`.

- date-time, date, time: RFC 3339 section 5.6 (a day that exists; a leap second only at
  23:59:60 UTC; a time needs its offset);
- duration: RFC 3339 appendix A (no fractions or signs; weeks only alone);
- email, idn-email, hostname, idn-hostname, ipv4, ipv6: `gateway.tools.hostnames`;
- uri, uri-reference, iri, iri-reference, uri-template: `gateway.tools.uris`;
- uuid: RFC 4122's hexadecimal text form;
- json-pointer, relative-json-pointer: RFC 6901, and the relative form JSON Schema names;
- regex: an ECMA-262 regular expression (`gateway.tools.patterns.is_ecma_regex`).

Every checker passes values that are not strings, as `format` only ever applies to strings.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable
from typing import Final

from jsonschema import FormatChecker

from gateway.tools.hostnames import (
    is_email,
    is_hostname,
    is_idn_email,
    is_idn_hostname,
    is_ipv4,
    is_ipv6,
)
from gateway.tools.patterns import is_ecma_regex
from gateway.tools.uris import is_iri, is_iri_reference, is_uri, is_uri_reference, is_uri_template

_DATE: Final = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})")
_TIME: Final = re.compile(
    r"([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.[0-9]+)?"
    r"(?:[Zz]|([+-])([0-9]{2}):([0-9]{2}))"
)
_MONTH_DAYS = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
_LAST_MINUTE = 23 * 60 + 59
_DURATION: Final = re.compile(
    r"P(?:(?:[0-9]+D|[0-9]+M(?:[0-9]+D)?|[0-9]+Y(?:[0-9]+M(?:[0-9]+D)?)?)(?:T(?:{t}))?"
    r"|T(?:{t})|[0-9]+W)".format(
        t=r"[0-9]+H(?:[0-9]+M(?:[0-9]+S)?)?|[0-9]+M(?:[0-9]+S)?"
        r"|[0-9]+S"
    )
)
_UUID: Final = re.compile(r"[0-9A-Fa-f]{8}-(?:[0-9A-Fa-f]{4}-){3}[0-9A-Fa-f]{12}")
_POINTER = r"(?:/(?:[^/~]|~[01])*)*"
_JSON_POINTER: Final = re.compile(_POINTER, re.DOTALL)
_RELATIVE_POINTER: Final = re.compile(rf"(?:0|[1-9][0-9]*)(?:#|{_POINTER})", re.DOTALL)


def is_date(text: str) -> bool:
    """RFC 3339 full-date: four-digit year, a month and a day that exists in it."""
    found = _DATE.fullmatch(text)
    if found is None:
        return False
    year, month, day = (int(part) for part in found.groups())
    if not 1 <= month <= 12:
        return False
    last = 29 if month == 2 and calendar.isleap(year) else _MONTH_DAYS[month - 1]
    return 1 <= day <= last


def is_time(text: str) -> bool:
    """RFC 3339 full-time: hh:mm:ss[.frac] and Z or ±hh:mm; second 60 only at 23:59 UTC."""
    found = _TIME.fullmatch(text)
    if found is None:
        return False
    hour, minute, second = (int(part) for part in found.groups()[:3])
    sign, offset_hour, offset_minute = found.groups()[3:]
    offset = 0
    if sign is not None:
        if int(offset_hour) > 23 or int(offset_minute) > 59:
            return False
        offset = (int(offset_hour) * 60 + int(offset_minute)) * (1 if sign == "+" else -1)
    if hour > 23 or minute > 59 or second > 60:
        return False
    return second < 60 or (hour * 60 + minute - offset) % 1440 == _LAST_MINUTE


def is_date_time(text: str) -> bool:
    """RFC 3339 date-time: full-date, T (or t), full-time."""
    date, separator, time = text[:10], text[10:11], text[11:]
    return separator in ("T", "t") and is_date(date) and is_time(time)


def _fullmatch(expression: re.Pattern[str]) -> Callable[[str], bool]:
    return lambda text: expression.fullmatch(text) is not None


def _checked(check: Callable[[str], bool]) -> Callable[[object], bool]:
    return lambda value: not isinstance(value, str) or check(value)


CHECKS: Final[dict[str, Callable[[str], bool]]] = {
    "date-time": is_date_time,
    "date": is_date,
    "time": is_time,
    "duration": _fullmatch(_DURATION),
    "email": is_email,
    "idn-email": is_idn_email,
    "hostname": is_hostname,
    "idn-hostname": is_idn_hostname,
    "ipv4": is_ipv4,
    "ipv6": is_ipv6,
    "uri": is_uri,
    "uri-reference": is_uri_reference,
    "iri": is_iri,
    "iri-reference": is_iri_reference,
    "uri-template": is_uri_template,
    "uuid": _fullmatch(_UUID),
    "json-pointer": _fullmatch(_JSON_POINTER),
    "relative-json-pointer": _fullmatch(_RELATIVE_POINTER),
    "regex": is_ecma_regex,
}
CHECKED_FORMATS: Final = frozenset(CHECKS)


def _checker() -> FormatChecker:
    checker = FormatChecker(formats=())
    for name, check in CHECKS.items():
        checker.checks(name)(_checked(check))
    return checker


FORMAT_CHECKER: Final = _checker()
