"""Masking argument values before they are stored (docs/tools.md, "Redaction").

What is masked:

- the values at the manifest's `redact` JSON pointers (a `*` token matches every member of an
  object or array);
- values that look like credentials, by member name (`password`, `secret`, `token`,
  `api_key`, `authorization`, ...: `credential_name`) and by shape (bearer tokens, common
  API-key prefixes such as `sk-`, `ghp_`, `xox*-`, `AKIA`, JWTs, private keys, URLs with a
  password: `credential_shaped`).

Each masked value is replaced by its mask (a keyed digest, `gateway.audit.keys.AuditKey.mask`),
never by a plain hash. `scrub` applies the same masks to free text (an error message, a
policy's reasons) that may quote a masked value.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import Any

Mask = Callable[[Any], str]

# values shorter than this are not searched for in free text (they would match anywhere)
MIN_SCRUB_CHARS = 4

_WORDS = frozenset(
    {
        "password",
        "passwd",
        "pwd",
        "passphrase",
        "passcode",
        "secret",
        "token",
        "apikey",
        "authorization",
        "credential",
        "credentials",
        "cookie",
        "otp",
        "cvv",
        "cvc",
        "pin",
        "ssn",
        "bearer",
    }
)
_PAIRS = frozenset(
    {
        "apikey",
        "accesskey",
        "secretkey",
        "privatekey",
        "signingkey",
        "encryptionkey",
        "sessionid",
        "sessionkey",
        "clientsecret",
        "authtoken",
    }
)
_SHAPES = re.compile(
    "|".join(
        (
            r"(?i:\bbearer\s+[A-Za-z0-9\-._~+/]{8,}=*)",
            r"(?i:\bbasic\s+[A-Za-z0-9+/]{12,}=*)",
            r"\bsk-[A-Za-z0-9_\-]{16,}",
            r"\b[rsp]k_(?:live|test)_[A-Za-z0-9]{16,}",
            r"\bgh[pousr]_[A-Za-z0-9]{30,}",
            r"\bgithub_pat_[A-Za-z0-9_]{30,}",
            r"\bglpat-[A-Za-z0-9_\-]{20,}",
            r"\bxox[abposr]-[A-Za-z0-9\-]{10,}",
            r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b",
            r"\bAIza[0-9A-Za-z_\-]{35}",
            r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]*",
            r"-----BEGIN [A-Z ]*PRIVATE KEY-----",
            r"\b[a-z][a-z0-9+.\-]*://[^/\s:@]+:[^/\s@]+@",
        )
    )
)


def pointer_tokens(pointer: str) -> list[str]:
    return [t.replace("~1", "/").replace("~0", "~") for t in pointer[1:].split("/")]


def _escape(token: str | int) -> str:
    return str(token).replace("~", "~0").replace("/", "~1")


def _words(name: str) -> list[str]:
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    return [w for w in re.split(r"[^A-Za-z0-9]+", spaced.lower()) if w]


@lru_cache(maxsize=4096)  # member names repeat across calls; this is on every audit record
def credential_name(name: str) -> bool:
    """A member whose value is a credential by its name: `password`, `client_secret`,
    `accessToken`, `X-Api-Key`, `authorization`, ... (not `max_tokens`)."""
    words = _words(name)
    pairs = {a + b for a, b in zip(words, words[1:], strict=False)}
    return bool(
        _WORDS.intersection(words) or _PAIRS.intersection(pairs) or "".join(words) in _PAIRS
    )


def credential_shaped(text: str) -> bool:
    """Text holding something shaped like a credential (bearer token, API key, JWT, ...)."""
    return _SHAPES.search(text) is not None


@dataclass(frozen=True)
class Masked:
    """Arguments with their masked values replaced."""

    value: dict[str, Any]
    pointers: tuple[str, ...] = ()  # where values were masked (JSON pointers, in order)
    found: tuple[tuple[str, str], ...] = ()  # (a masked value's text, its mask), for scrub

    @property
    def changed(self) -> bool:
        return bool(self.pointers)

    @cached_property
    def value_json(self) -> str:
        """`value` as JSON text (the audit trail's arguments summary)."""
        return json.dumps(self.value)

    def scrub(self, text: str, mask: Mask) -> str:
        """text with every masked value it quotes, and every credential-shaped part, masked."""
        if not self.found:  # reasons and messages repeat call after call
            return _shapes_masked(text, mask) if len(text) <= 1024 else _shapes(text, mask)
        for secret, replacement in sorted(self.found, key=lambda f: -len(f[0])):
            text = text.replace(secret, replacement)
        return _shapes(text, mask)


def _shapes(text: str, mask: Mask) -> str:
    return _SHAPES.sub(lambda m: mask(m.group(0)), text)


_shapes_masked = lru_cache(maxsize=4096)(_shapes)


class _Masking:
    def __init__(self, mask: Mask, skip: Callable[[Any], bool]) -> None:
        self.mask = mask
        self.skip = skip  # a value already masked
        self.pointers: list[str] = []
        self.found: list[tuple[str, str]] = []

    def replace(self, node: Any, key: str | int, path: str) -> None:
        value = node[key]
        if value is None or self.skip(value):
            return
        node[key] = self.mask(value)
        self.pointers.append(path)
        for text in _texts(value):
            if len(text) >= MIN_SCRUB_CHARS:
                self.found.append((text, node[key]))

    def by_pointer(self, node: Any, tokens: list[str], path: str) -> None:
        for key in _members(node, tokens[0]):
            here = f"{path}/{_escape(key)}"
            if len(tokens) == 1:
                self.replace(node, key, here)
            else:
                self.by_pointer(node[key], tokens[1:], here)

    def credentials(self, node: Any, path: str) -> None:
        for key, value in _items(node):
            here = f"{path}/{_escape(key)}"
            if isinstance(key, str) and credential_name(key) and not isinstance(value, bool):
                self.replace(node, key, here)
            elif isinstance(value, str) and credential_shaped(value):
                self.replace(node, key, here)
            else:
                self.credentials(value, here)


def _items(node: Any) -> Iterator[tuple[str | int, Any]]:
    if isinstance(node, dict):
        yield from list(node.items())
    elif isinstance(node, list):
        yield from list(enumerate(node))


def _members(node: Any, token: str) -> list[Any]:
    if isinstance(node, dict):
        return list(node) if token == "*" else [token] if token in node else []
    if isinstance(node, list):
        if token == "*":
            return list(range(len(node)))
        if token.isdigit() and int(token) < len(node):
            return [int(token)]
    return []


def _texts(value: Any) -> list[str]:
    """How a masked value may appear in a message: itself (a string), or its JSON."""
    if isinstance(value, str):
        return [value]
    return [json.dumps(value), json.dumps(value, ensure_ascii=False)]


def masked(
    args: dict[str, Any],
    pointers: Sequence[list[str]],
    mask: Mask,
    *,
    skip: Callable[[Any], bool] = lambda _: False,
    own: bool = False,
) -> Masked:
    """A copy of args with the value at every pointer (as tokens) and every credential-looking
    value replaced by its mask; `skip` tells a value that is already a mask. `own`: args are
    the caller's to give (just parsed, say): masked in place, not copied first."""
    out: dict[str, Any] = args if own else copy.deepcopy(args)
    masking = _Masking(mask, skip)
    for tokens in pointers:
        masking.by_pointer(out, tokens, "")
    masking.credentials(out, "")
    return Masked(out, tuple(masking.pointers), tuple(dict.fromkeys(masking.found)))
