"""The audit key (`serve --audit-key-file`): keyed digests, never a plain hash of a secret.

A masked value keeps `redacted:hmac-sha256:<key id>:<HMAC-SHA256 of its canonical JSON>`, so
someone holding the key can check a value they know (`callgate audit check-value`) and equal
values can be matched across records, while without the key a guessable value (an email, a
phone number) cannot be confirmed the way a plain SHA-256 would allow. The same key seals each
record of the hash chain (an HMAC over its hash), so a chain recomputed after an edit by
someone without the key no longer verifies.

The key file holds 32 random bytes as hex. It is created (mode 0600) the first time `serve`
starts without it; it is never logged, only its key id (a digest of it) is. Masks and seals
use separate keys derived from it.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
import re
import secrets
from pathlib import Path
from typing import Any

import rfc8785

from gateway.canonical import canonical as jcs
from gateway.errors import ConfigError

log = logging.getLogger("callgate.audit")

KEY_BYTES = 32
MASK_PREFIX = "redacted:hmac-sha256:"
KEYED_PREFIX = "hmac-sha256:"
MASK = re.compile(r"redacted:hmac-sha256:[0-9a-f]{12}:[0-9a-f]{64}")


def canonical(value: Any) -> bytes:
    """The bytes a value's mask covers: RFC 8785 JSON (sorted JSON where JCS cannot)."""
    try:
        return jcs(value)
    except (rfc8785.CanonicalizationError, RecursionError):
        return json.dumps(value, sort_keys=True, ensure_ascii=False).encode()


def is_mask(value: Any) -> bool:
    return isinstance(value, str) and MASK.fullmatch(value) is not None


class AuditKey:
    def __init__(self, secret: bytes) -> None:
        if len(secret) < KEY_BYTES:
            raise ValueError(f"an audit key needs at least {KEY_BYTES} bytes")
        self._mask = hmac.new(secret, b"callgate audit mask", hashlib.sha256).digest()
        self._seal = hmac.new(secret, b"callgate audit seal", hashlib.sha256).digest()
        self.key_id = hmac.new(secret, b"callgate audit key id", hashlib.sha256).hexdigest()[:12]

    def __repr__(self) -> str:
        return f"AuditKey(key_id={self.key_id!r})"

    @classmethod
    def ephemeral(cls) -> AuditKey:
        """A key for this process only (library use without a key file): its masks cannot be
        checked later."""
        return cls(secrets.token_bytes(KEY_BYTES))

    def mask(self, value: Any) -> str:
        """The mask that replaces a redacted value."""
        mac = hmac.new(self._mask, canonical(value), hashlib.sha256).hexdigest()
        return f"{MASK_PREFIX}{self.key_id}:{mac}"

    def keyed(self, digest: str) -> str:
        """A SHA-256 digest of something that held a masked value, keyed: `hmac-sha256:<key
        id>:<hex>` ("" stays "")."""
        if not digest or digest.startswith(KEYED_PREFIX):
            return digest
        mac = hmac.new(self._mask, digest.encode(), hashlib.sha256).hexdigest()
        return f"{KEYED_PREFIX}{self.key_id}:{mac}"

    def seal(self, chain_hash: str) -> str:
        """The seal of an audit record: HMAC-SHA256 over its chain hash."""
        return hmac.new(self._seal, chain_hash.encode(), hashlib.sha256).hexdigest()

    # -------------------------------------------------------------------- the key file

    @classmethod
    def load(cls, path: Path, *, flag: str = "--audit-key-file") -> AuditKey:
        """The key in path; ConfigError naming the flag and the file when it cannot be."""
        try:
            text = path.read_text(encoding="ascii").strip()
        except FileNotFoundError:
            raise ConfigError(f"{flag} {path}: no such file") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{flag} {path}: cannot be read ({type(exc).__name__})") from None
        try:
            secret = bytes.fromhex(text)
        except ValueError:
            secret = b""
        if len(secret) < KEY_BYTES:
            raise ConfigError(
                f"{flag} {path}: expected at least {KEY_BYTES} bytes written as "
                "hex (callgate writes a new key to a file that does not exist)"
            )
        if path.stat().st_mode & 0o077:
            log.warning("%s %s can be read by other users: chmod 600 it", flag, path)
        return cls(secret)

    @classmethod
    def load_or_create(cls, path: Path, *, flag: str = "--audit-key-file") -> AuditKey:
        """The key in path, written first (mode 0600) when the file does not exist."""
        key, secret = cls.load_or_new(path, flag=flag)
        return key if secret is None else cls.write_new(path, secret, flag=flag)

    @classmethod
    def load_or_new(
        cls, path: Path, *, flag: str = "--audit-key-file"
    ) -> tuple[AuditKey, bytes | None]:
        """The key in path; or, when there is no such file, a new key and its secret, which
        `write_new` writes once nothing can stop start-up any more (a refused start then
        leaves no key file behind)."""
        if os.path.lexists(path):
            return cls.load(path, flag=flag), None
        secret = secrets.token_bytes(KEY_BYTES)
        return cls(secret), secret

    @classmethod
    def write_new(cls, path: Path, secret: bytes, *, flag: str = "--audit-key-file") -> AuditKey:
        """Write secret to path (mode 0600) unless the file exists by now; answers the key the
        file holds afterwards (another process's, if it wrote first)."""
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            return cls.load(path, flag=flag)
        except OSError as exc:
            raise ConfigError(f"{flag} {path}: cannot create it: {exc.strerror}") from None
        with os.fdopen(fd, "w", encoding="ascii") as out:
            out.write(secret.hex() + "\n")
        key = cls.load(path, flag=flag)
        log.info(
            "created the audit key %s (key id %s): keep it; masks and seals are checked with it",
            path,
            key.key_id,
        )
        return key
