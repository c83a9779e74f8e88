"""The `--auth FILE` (YAML): which ways of identifying callers are on, validated once.

    tokens:  {<token>: {subject, tenant, roles, claims}}          static bearer tokens
    jwt:     {issuer, audiences, jwks_file | jwks_url, algorithms, leeway_s, claims: {...}}
    mtls:    {subject_from: san_uri | san_dns | cn, identities: {<subject>: {tenant, roles}}}

The file is read strictly (`gateway.yamltext.read_yaml`): a key given twice, `.nan`, a key that
is not a string is refused, naming the line. Every problem is a ConfigError naming the file
and the field.
"""

from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from gateway.errors import ConfigError
from gateway.yamltext import YamlTextError, read_yaml

# Public-key signature algorithms only: a shared secret (HS256...) would let anyone who can read
# the key set mint tokens, and it is the door to algorithm-confusion attacks.
ALGORITHM_FAMILIES: dict[str, str] = {
    **{a: "RSA" for a in ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512")},
    **{a: "EC" for a in ("ES256", "ES384", "ES512")},
    "EdDSA": "OKP",
}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TokenEntry(_Strict):
    subject: str = Field(min_length=1)
    tenant: str = ""
    roles: list[str] = []
    claims: dict[str, Any] = {}


class ClaimsMapping(_Strict):
    """Which claim each identity field comes from; a dotted name reaches into an object
    (`realm_access.roles`). A field mapped here is required in every token."""

    subject: str = Field(default="sub", min_length=1)
    tenant: str | None = None
    roles: str | None = None


class JwtConfig(_Strict):
    issuer: str = Field(min_length=1)
    audiences: list[str] = Field(min_length=1)
    jwks_file: Path | None = None
    jwks_url: str | None = None
    algorithms: list[str] = Field(default=["RS256", "ES256"], min_length=1)
    leeway_s: float = Field(default=30.0, ge=0, le=300)
    claims: ClaimsMapping = ClaimsMapping()
    jwks_cache_s: float = Field(default=3600.0, gt=0)
    jwks_min_refresh_s: float = Field(default=30.0, ge=0)
    jwks_timeout_s: float = Field(default=5.0, gt=0, le=60)

    @field_validator("algorithms")
    @classmethod
    def _public_key_algorithms(cls, algorithms: list[str]) -> list[str]:
        for alg in algorithms:
            if alg not in ALGORITHM_FAMILIES:
                raise ValueError(
                    f"{alg!r} is not allowed: use public-key algorithms only "
                    f"({', '.join(ALGORITHM_FAMILIES)})"
                )
        return algorithms

    @field_validator("jwks_url")
    @classmethod
    def _https_url(cls, url: str | None) -> str | None:
        if url is None:
            return None
        parts = urlsplit(url)
        if parts.scheme == "https" and parts.hostname:
            return url
        if parts.scheme == "http" and _is_loopback(parts.hostname or ""):
            return url
        raise ValueError("must be an https:// URL (http:// only on loopback)")

    @model_validator(mode="after")
    def _one_key_source(self) -> JwtConfig:
        if (self.jwks_file is None) == (self.jwks_url is None):
            raise ValueError("give exactly one of jwks_file and jwks_url")
        return self


class MtlsIdentity(_Strict):
    tenant: str = ""
    roles: list[str] = []
    claims: dict[str, Any] = {}


class MtlsConfig(_Strict):
    subject_from: Literal["san_uri", "san_dns", "cn"] = "san_uri"
    identities: dict[str, MtlsIdentity] = Field(min_length=1)


class AuthFile(_Strict):
    tokens: dict[str, TokenEntry] = {}
    jwt: JwtConfig | None = None
    mtls: MtlsConfig | None = None

    @model_validator(mode="after")
    def _some_way(self) -> AuthFile:
        if not self.tokens and self.jwt is None and self.mtls is None:
            raise ValueError("configures no way to identify callers: give tokens, jwt or mtls")
        return self


def load_auth_file(path: Path) -> AuthFile:
    """Read and validate the auth file; a relative jwks_file is relative to the file."""
    try:
        raw = read_yaml(path.read_text(encoding="utf-8"))
    except (OSError, YamlTextError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read the auth file: {exc}") from exc
    try:
        parsed = AuthFile.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(top level)"
        raise ConfigError(f"{path}: {where}: {_message(first)}") from exc
    jwt = parsed.jwt
    if jwt is not None and jwt.jwks_file is not None and not jwt.jwks_file.is_absolute():
        jwt = jwt.model_copy(update={"jwks_file": path.parent / jwt.jwks_file})
        parsed = parsed.model_copy(update={"jwt": jwt})
    return parsed


def _message(error: Any) -> str:
    # "Value error, ..." is pydantic's wording for our own checks; the rest is enough
    return str(error["msg"]).removeprefix("Value error, ")


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
