"""URIs, IRIs and URI templates, as JSON Schema's formats name them: `uri` and
`uri-reference` (RFC 3986), `iri` and `iri-reference` (RFC 3987) and `uri-template`
(RFC 6570, level 4).

Each is the RFC's ABNF written as one RE2 expression (linear time, whatever the input); an
IP-literal host is then read as an IPv6 address (`gateway.tools.hostnames.is_ipv6`) or
checked as IPvFuture.
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any, Final

import re2

from gateway.tools.hostnames import is_ipv6

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False

_UNRESERVED = r"A-Za-z0-9\-._~"
_SUB_DELIMS = r"!$&'()*+,;="
_PCT = "%[0-9A-Fa-f]{2}"
# RFC 3987: the characters an IRI may hold beyond a URI's, and those its query may also hold
UCSCHAR: Final = (
    r"\x{A0}-\x{D7FF}\x{F900}-\x{FDCF}\x{FDF0}-\x{FFEF}"
    + "".join(rf"\x{{{plane:X}0000}}-\x{{{plane:X}FFFD}}" for plane in range(1, 14))
    + r"\x{E1000}-\x{EFFFD}"
)
IPRIVATE: Final = r"\x{E000}-\x{F8FF}\x{F0000}-\x{FFFFD}\x{100000}-\x{10FFFD}"
_IPV_FUTURE: Final = re.compile(rf"[vV][0-9A-Fa-f]+\.[{_UNRESERVED}{_SUB_DELIMS}:]+")


def _grammar(*, iri: bool) -> dict[str, str]:
    u = _UNRESERVED + (UCSCHAR if iri else "")
    pchar = f"(?:[{u}{_SUB_DELIMS}:@]|{_PCT})"
    segment = f"{pchar}*"
    return {
        "scheme": r"[A-Za-z][A-Za-z0-9+\-.]*",
        "userinfo": f"(?:[{u}{_SUB_DELIMS}:]|{_PCT})*",
        "reg_name": f"(?:[{u}{_SUB_DELIMS}]|{_PCT})*",
        "port": "[0-9]*",
        "abempty": f"(?:/{segment})*",
        "absolute": f"/(?:{pchar}+(?:/{segment})*)?",
        "rootless": f"{pchar}+(?:/{segment})*",
        "noscheme": f"(?:[{u}{_SUB_DELIMS}@]|{_PCT})+(?:/{segment})*",
        "query": f"(?:{pchar}|[/?{IPRIVATE if iri else ''}])*",
        "fragment": f"(?:{pchar}|[/?])*",
    }


def _authority(g: dict[str, str], name: str) -> str:
    return f"(?:{g['userinfo']}@)?(?:\\[(?P<{name}>[^\\]]*)\\]|{g['reg_name']})(?::{g['port']})?"


@cache
def _expression(*, iri: bool, reference: bool) -> Any:
    g = _grammar(iri=iri)
    tail = f"(?:\\?{g['query']})?(?:#{g['fragment']})?"
    absolute = (
        f"{g['scheme']}:(?://{_authority(g, 'ip')}{g['abempty']}|{g['absolute']}|"
        f"{g['rootless']}|){tail}"
    )
    relative = (
        f"(?://{_authority(g, 'ip_relative')}{g['abempty']}|{g['absolute']}|{g['noscheme']}|){tail}"
    )
    return re2.compile(f"{absolute}|{relative}" if reference else absolute, _OPTIONS)


def _matches(text: str, *, iri: bool, reference: bool) -> bool:
    try:
        found = _expression(iri=iri, reference=reference).fullmatch(text)
    except UnicodeEncodeError:  # a lone surrogate
        return False
    if found is None:
        return False
    literal = (
        found.group("ip") if not reference else (found.group("ip") or found.group("ip_relative"))
    )
    return literal is None or is_ipv6(literal) or _IPV_FUTURE.fullmatch(literal) is not None


def is_uri(text: str) -> bool:
    return _matches(text, iri=False, reference=False)


def is_uri_reference(text: str) -> bool:
    return _matches(text, iri=False, reference=True)


def is_iri(text: str) -> bool:
    return _matches(text, iri=True, reference=False)


def is_iri_reference(text: str) -> bool:
    return _matches(text, iri=True, reference=True)


# RFC 6570: literals are any character but controls, space, '"', '%' outside a
# pct-encoding, '<', '>', '\\', '^', '`', '{', '|' and '}' (the apostrophe is a literal:
# erratum 6937); an expression is an optional operator and comma-separated varspecs
_LITERAL = (
    rf"(?:[\x{{21}}\x{{23}}\x{{24}}\x{{26}}-\x{{3B}}\x{{3D}}\x{{3F}}-\x{{5B}}"
    rf"\x{{5D}}\x{{5F}}\x{{61}}-\x{{7A}}\x{{7E}}{UCSCHAR}{IPRIVATE}]|{_PCT})"
)
_VARCHAR = f"(?:[A-Za-z0-9_]|{_PCT})"
_VARSPEC = rf"{_VARCHAR}(?:\.?{_VARCHAR})*(?::[1-9][0-9]{{0,3}}|\*)?"
_TEMPLATE: Final = re2.compile(
    rf"(?:{_LITERAL}|\{{[+#./;?&=,!@|]?{_VARSPEC}(?:,{_VARSPEC})*\}})*", _OPTIONS
)


def is_uri_template(text: str) -> bool:
    try:
        return _TEMPLATE.fullmatch(text) is not None
    except UnicodeEncodeError:
        return False
