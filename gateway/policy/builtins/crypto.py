"""`crypto.*` hashes and HMACs, as OPA computes them: lowercase hex of the UTF-8 bytes."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable
from typing import Any

from gateway.policy.builtins.base import Extension, string_operand

_HASHES: dict[str, Callable[..., Any]] = {
    "md5": hashlib.md5,
    "sha1": hashlib.sha1,
    "sha256": hashlib.sha256,
    "sha512": hashlib.sha512,
}


def _digest(algorithm: str) -> Callable[[Any], str]:
    def digest(x: Any) -> str:
        data = string_operand(x, 1).encode()
        return str(_HASHES[algorithm](data).hexdigest())

    return digest


def _hmac(algorithm: str) -> Callable[[Any, Any], str]:
    def mac(x: Any, key: Any) -> str:
        message, secret = string_operand(x, 1).encode(), string_operand(key, 2).encode()
        return hmac.new(secret, message, _HASHES[algorithm]).hexdigest()

    return mac


def hmac_equal(mac1: Any, mac2: Any) -> bool:
    """Constant-time comparison of two MACs (as strings)."""
    return hmac.compare_digest(string_operand(mac1, 1).encode(), string_operand(mac2, 2).encode())


EXTENSIONS = (
    *(Extension(f"crypto.{name}", 1, _digest(name)) for name in ("md5", "sha1", "sha256")),
    *(Extension(f"crypto.hmac.{name}", 2, _hmac(name)) for name in _HASHES),
    Extension("crypto.hmac.equal", 2, hmac_equal),
)
