"""Static bearer tokens from the auth file, looked up by digest."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping

from gateway.model import Identity


class StaticTokens:
    def __init__(self, tokens: Mapping[str, Identity]) -> None:
        # keyed by the token's digest: a lookup compares digests, never the secret's prefix
        self._by_digest = {_digest(t): identity for t, identity in tokens.items()}

    def __bool__(self) -> bool:
        return bool(self._by_digest)

    def lookup(self, token: str) -> Identity | None:
        return self._by_digest.get(_digest(token))


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()
