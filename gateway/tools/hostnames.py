"""Host names and mail addresses, as JSON Schema's formats name them: `hostname` (RFC 1123,
with A-labels that are valid IDNA2008), `idn-hostname` (RFC 5890: U-labels and A-labels, with
the contextual and right-to-left rules of RFC 5892 and RFC 5893), `email` (an RFC 5321
Mailbox) and `idn-email` (RFC 6531's).

IDNA2008's code point tables and rules come from the `idna` package; the rest is the RFCs'
grammar, matched by RE2 (linear time, whatever the input).
"""

from __future__ import annotations

import ipaddress
import re
import unicodedata
from collections.abc import Callable
from typing import Any, Final

import idna
import re2

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False
_LDH: Final = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?", re.ASCII)
# label separators of RFC 3490: full stop, ideographic, fullwidth and halfwidth full stops
_SEPARATORS: Final = re.compile("[.\u3002\uff0e\uff61]")
_RIGHT_TO_LEFT: Final = frozenset(("R", "AL", "AN"))
_IDNA_ERRORS = (idna.IDNAError, UnicodeError, ValueError)

_ATEXT = r"A-Za-z0-9!#$%&'*+\-/=?^_`{|}~"
_QTEXT = r"\x{20}\x{21}\x{23}-\x{5B}\x{5D}-\x{7E}"
_NON_ASCII = r"\x{80}-\x{10FFFF}"


def _mailbox(extra: str) -> Any:
    atom = f"[{_ATEXT}{extra}]+"
    quoted = rf'"(?:[{_QTEXT}{extra}]|\\[\x{{20}}-\x{{7E}}])*"'
    return re2.compile(rf"((?:{atom}(?:\.{atom})*)|{quoted})@(.+)", _OPTIONS)


_MAILBOX: Final = _mailbox("")
_IDN_MAILBOX: Final = _mailbox(_NON_ASCII)
_IPV4: Final = re.compile(
    r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
    r"(?:\.(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])){3}"
)


def is_ipv4(text: str) -> bool:
    """RFC 2673's dotted-quad: four decimal octets, no leading zeros."""
    return _IPV4.fullmatch(text) is not None


def is_ipv6(text: str) -> bool:
    """RFC 4291's text form (no zone, no brackets)."""
    if not text.isascii() or "%" in text:
        return False
    try:
        ipaddress.IPv6Address(text)
    except ValueError:
        return False
    return True


def _a_label(label: str) -> str | None:
    """The U-label an A-label (`xn--…`) stands for, when it is a valid IDNA2008 one."""
    try:
        unicode = idna.ulabel(label)
        idna.check_label(unicode)
        if unicode.isascii() or idna.alabel(unicode).decode() != label.lower():
            return None  # punycode that decodes to ASCII only, or does not re-encode to itself
    except _IDNA_ERRORS:
        return None
    return unicode


def _ascii_label(label: str) -> str | None:
    if _LDH.fullmatch(label) is None:
        return None
    if label[2:4] == "--":  # reserved for A-labels
        return _a_label(label) if label[:4].lower() == "xn--" else None
    return label


def is_hostname(text: str) -> bool:
    """RFC 1123 labels (letters, digits, inner hyphens; 1 to 63 characters), at most 253
    characters, no trailing dot; an `xn--` label must be a valid A-label."""
    if not text or len(text) > 253 or not text.isascii():
        return False
    return all(_ascii_label(label) is not None for label in text.split("."))


def _unicode_label(label: str) -> tuple[str, int] | None:
    """(U-label, length of its A-label) of one label of an internationalized name."""
    if label.isascii():
        found = _ascii_label(label)
        return None if found is None else (found, len(label))
    try:
        idna.check_label(label)
        return label, len(idna.alabel(label))
    except _IDNA_ERRORS:
        return None


def is_idn_hostname(text: str) -> bool:
    """RFC 5890 labels (each valid IDNA2008, its A-label at most 63 octets), split at any
    RFC 3490 full stop, the whole at most 253 octets as A-labels; a name with a right-to-left
    label keeps RFC 5893's rule in every label."""
    if len(text) > 253:  # each character takes at least one octet of the A-labels
        return False
    labels: list[str] = []
    size = -1
    for label in _SEPARATORS.split(text):
        found = _unicode_label(label) if label else None
        if found is None:
            return False
        labels.append(found[0])
        size += found[1] + 1
    if size > 253:
        return False
    if any(unicodedata.bidirectional(c) in _RIGHT_TO_LEFT for label in labels for c in label):
        try:
            for label in labels:
                idna.check_bidi(label, check_ltr=True)
        except idna.IDNAError:
            return False
    return True


def _address_literal(domain: str) -> bool:
    inner = domain[1:-1]
    if inner.startswith("IPv6:"):
        return is_ipv6(inner[5:])
    return is_ipv4(inner)


def is_email(text: str) -> bool:
    """RFC 5321 Mailbox: a dot-string or quoted local part (at most 64 octets) at a host name
    or an address literal ([192.0.2.1], [IPv6:2001:db8::1])."""
    return _is_mailbox(text, _MAILBOX, is_hostname)


def is_idn_email(text: str) -> bool:
    """RFC 6531 Mailbox: as `email`, with any non-ASCII character in the local part and an
    internationalized host name (compared in NFC, as RFC 6532 lets a mailbox arrive)."""
    return _is_mailbox(
        text, _IDN_MAILBOX, lambda domain: is_idn_hostname(unicodedata.normalize("NFC", domain))
    )


def _is_mailbox(text: str, grammar: Any, host: Callable[[str], bool]) -> bool:
    try:
        found = grammar.fullmatch(text)
    except UnicodeEncodeError:  # a lone surrogate
        return False
    if found is None or len(found.group(1).encode()) > 64:
        return False
    domain: str = found.group(2)
    if domain.startswith("[") and domain.endswith("]"):
        return _address_literal(domain)
    return host(domain)
