"""Caller authentication: a bearer token in gRPC metadata, verified against the auth file.

`--auth FILE` is YAML: `tokens: {<token>: {subject, tenant, roles: [...], claims: {...}}}`.
Identity never comes from a request field.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from gateway.errors import ConfigError, Unauthenticated
from gateway.model import Identity


class _Entry(BaseModel):
    model_config = ConfigDict(extra="forbid")
    subject: str = Field(min_length=1)
    tenant: str = ""
    roles: list[str] = []
    claims: dict[str, Any] = {}


class _AuthFile(BaseModel):
    model_config = ConfigDict(extra="forbid")
    tokens: dict[str, _Entry]


class Authenticator:
    """Maps `authorization: Bearer <token>` metadata to an Identity."""

    def __init__(self, tokens: dict[str, Identity], *, dev_identity: Identity | None = None):
        # keyed by the token's digest: a lookup compares digests, never the secret's prefix
        self._tokens = {_digest(t): identity for t, identity in tokens.items()}
        self._dev = dev_identity

    @classmethod
    def from_file(cls, path: Path) -> Authenticator:
        try:
            raw = yaml.safe_load(path.read_text())
        except (OSError, yaml.YAMLError) as exc:
            raise ConfigError(f"{path}: cannot read the auth file: {exc}") from exc
        try:
            parsed = _AuthFile.model_validate(raw)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            raise ConfigError(f"{path}: {where}: {first['msg']}") from exc
        return cls({token: Identity(e.subject, e.tenant, tuple(e.roles), dict(e.claims))
                    for token, e in parsed.tokens.items()})

    @classmethod
    def insecure(cls, subject: str, tenant: str = "dev",
                 roles: Iterable[str] = ("tester",)) -> Authenticator:
        return cls({}, dev_identity=Identity(subject, tenant, tuple(roles)))

    def authenticate(self, metadata: Iterable[tuple[str, str | bytes]] | None) -> Identity:
        if self._dev is not None:
            return self._dev
        header = ""
        for key, value in metadata or ():
            if key.lower() == "authorization":
                header = value.decode() if isinstance(value, bytes) else value
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not token:
            raise Unauthenticated("send gRPC metadata 'authorization: Bearer <token>'")
        identity = self._tokens.get(_digest(token.strip()))
        if identity is None:
            raise Unauthenticated("the bearer token is not known to this gateway")
        return identity


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()
