"""From what a request carries to who is calling: `await Authenticator.authenticate(creds)`.

A bearer token (`authorization: Bearer <token>`) is looked up among the static tokens, then,
when it is a JWT and `jwt` is configured, verified as one. A request without a bearer token is
identified by its TLS client certificate when `mtls` is configured. Anything else is refused
`unauthenticated` with the reason; refusals are logged with that reason alone.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from gateway.errors import Unauthenticated
from gateway.identity.certificates import CertificateIdentities
from gateway.identity.config import AuthFile, load_auth_file
from gateway.identity.jwt_bearer import JwtVerifier, looks_like_jwt
from gateway.identity.tokens import StaticTokens
from gateway.model import Identity

log = logging.getLogger("callgate.identity")

MAX_TOKEN_BYTES = 16 * 1024


@dataclass(frozen=True)
class Credentials:
    """What one request presents: its `authorization` metadata and the PEM of the client
    certificate the TLS listener verified (empty when there is none)."""

    authorization: str = ""
    peer_certificate: bytes = b""


class Authenticator:
    def __init__(
        self,
        *,
        tokens: StaticTokens | None = None,
        jwt: JwtVerifier | None = None,
        certificates: CertificateIdentities | None = None,
        dev_identity: Identity | None = None,
    ) -> None:
        self._tokens = tokens or StaticTokens({})
        self._jwt = jwt
        self._certificates = certificates
        self._dev = dev_identity

    @classmethod
    def from_file(cls, path: Path) -> Authenticator:
        return cls.from_config(load_auth_file(path))

    @classmethod
    def from_config(cls, auth: AuthFile) -> Authenticator:
        tokens = StaticTokens(
            {
                t: Identity(e.subject, e.tenant, tuple(e.roles), dict(e.claims))
                for t, e in auth.tokens.items()
            }
        )
        return cls(
            tokens=tokens,
            jwt=JwtVerifier.from_config(auth.jwt) if auth.jwt else None,
            certificates=CertificateIdentities(auth.mtls) if auth.mtls else None,
        )

    @classmethod
    def insecure(
        cls, subject: str, tenant: str = "dev", roles: Iterable[str] = ("tester",)
    ) -> Authenticator:
        return cls(dev_identity=Identity(subject, tenant, tuple(roles)))

    def for_audience(self, audience: str) -> Authenticator:
        """The same identities, but a JWT is accepted only when its audience (aud) is
        `audience` instead of the auth file's `jwt.audiences` (a listener that is a resource
        server of its own URL). It shares this one's key set: start and close this one."""
        jwt = self._jwt.for_audience(audience) if self._jwt is not None else None
        return Authenticator(
            tokens=self._tokens, jwt=jwt, certificates=self._certificates, dev_identity=self._dev
        )

    @property
    def jwt_issuer(self) -> str:
        """The issuer whose JWTs are accepted (the auth file's `jwt.issuer`), or ""."""
        return self._jwt.config.issuer if self._jwt is not None else ""

    @property
    def insecure_identity(self) -> Identity | None:
        """Who every caller is without --auth (--insecure-dev-identity), else None."""
        return self._dev

    @property
    def wants_client_certificates(self) -> bool:
        return self._certificates is not None

    async def start(self) -> None:
        if self._jwt is not None:
            await self._jwt.keys.start()

    async def aclose(self) -> None:
        if self._jwt is not None:
            await self._jwt.keys.aclose()

    async def authenticate(self, creds: Credentials) -> Identity:
        if self._dev is not None:
            return self._dev
        try:
            return await self._identify(creds)
        except Unauthenticated as err:
            log.info("caller refused: %s", err.message)
            raise

    async def _identify(self, creds: Credentials) -> Identity:
        if creds.authorization:
            return await self._bearer(_bearer_token(creds.authorization))
        if self._certificates is not None and creds.peer_certificate:
            return self._certificates.identify(creds.peer_certificate)
        raise Unauthenticated(self._how_to_authenticate())

    async def _bearer(self, token: str) -> Identity:
        if len(token) > MAX_TOKEN_BYTES:
            raise Unauthenticated(f"the bearer token is longer than {MAX_TOKEN_BYTES} bytes")
        identity = self._tokens.lookup(token)
        if identity is not None:
            return identity
        if self._jwt is not None and looks_like_jwt(token):
            return await self._jwt.verify(token)
        if self._jwt is not None:
            raise Unauthenticated(
                "the bearer token is neither a token this gateway knows "
                "(none of its --auth file's tokens) nor a JWT"
            )
        raise Unauthenticated(
            "the bearer token is not known to this gateway (it is none of the "
            "tokens in its --auth file)"
        )

    def _how_to_authenticate(self) -> str:
        ways = []
        if self._tokens or self._jwt is not None:
            ways.append("gRPC metadata 'authorization: Bearer <token>'")
        if self._certificates is not None:
            ways.append("a client certificate")
        return f"no credentials: send {' or '.join(ways)}"


def _bearer_token(header: str) -> str:
    scheme, _, token = header.strip().partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthenticated("send gRPC metadata 'authorization: Bearer <token>'")
    return token.strip()
