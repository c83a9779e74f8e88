"""Bearer JWTs verified with PyJWT: signature, algorithm allow-list, issuer, audience, expiry.

The header and, once the signature is verified, the claims are read by callgate's strict JSON
reader (`gateway.jsontext`), not the standard library's: a name given twice (which a lax reader
answers with either value), NaN or Infinity, a lone surrogate or an integer beyond what every
reader keeps exactly refuses the token, so such claims never reach the policy.

Every refusal is `Unauthenticated` with a reason a person can act on. Reasons name claims and
the auth file's settings, never a value from the token: the token, its signature and its
claims stay out of messages and logs.
"""

from __future__ import annotations

from typing import Any

import jwt
from jwt import exceptions as jwt_errors
from jwt.utils import base64url_decode

from gateway.errors import Unauthenticated
from gateway.identity.config import ALGORITHM_FAMILIES, JwtConfig
from gateway.identity.jwks import KeySet
from gateway.jsontext import JsonTextError, read_object
from gateway.model import Identity

# Well-known algorithm names a refusal may quote; anything else is "an unsupported algorithm"
_KNOWN_ALGORITHMS = {*ALGORITHM_FAMILIES, "HS256", "HS384", "HS512", "none", "ES256K"}


# What each rule of the strict reader means in a token: words only, never a value from it
_BROKEN_RULES = {
    "duplicate_key": "a {what} name appears twice (a reader could take either value)",
    "non_finite": "a number is NaN, Infinity or beyond the range of a double",
    "integer_range": "an integer is beyond ±(2^53 − 1), the range every JSON reader keeps exactly",
    "lone_surrogate": "a string holds a lone UTF-16 surrogate",
    "depth": "the {what}s nest too deeply",
}


def looks_like_jwt(token: str) -> bool:
    return token.count(".") == 2


def _not_strict(part: str, what: str, rule: str) -> str:
    verb = "are" if part.endswith("s") else "is"
    return f"the token's {part} {verb} not strict JSON: {_BROKEN_RULES[rule].format(what=what)}"


class _StrictClaims(jwt_errors.DecodeError):
    """The verified payload breaks a rule of the strict JSON reader (`rule`)."""

    def __init__(self, rule: str) -> None:
        super().__init__(rule)
        self.rule = rule


class _StrictJwt(jwt.PyJWT):
    """PyJWT whose claims are read by the strict JSON reader; PyJWT calls this once the
    signature has verified, before it checks exp, iss and aud."""

    def _decode_payload(self, decoded: dict[str, Any]) -> dict[str, Any]:
        try:
            return read_object(decoded["payload"])
        except JsonTextError as exc:
            raise _StrictClaims(exc.rule) from exc


_DECODER = _StrictJwt()


def _check_header_text(token: str) -> None:
    """Refuse a header that is JSON but not strict JSON (`{"alg": "none", "alg": "RS256"}`);
    a header that is not JSON at all is left for PyJWT to report as malformed."""
    try:
        read_object(base64url_decode(token.split(".", 1)[0]))
    except JsonTextError as exc:
        if exc.rule in _BROKEN_RULES and exc.rule != "depth":
            raise Unauthenticated(_not_strict("header", "header", exc.rule)) from None
    except ValueError:  # not base64url: PyJWT says so
        pass


class JwtVerifier:
    def __init__(self, config: JwtConfig, keys: KeySet) -> None:
        self.config = config
        self.keys = keys

    @classmethod
    def from_config(cls, config: JwtConfig) -> JwtVerifier:
        return cls(config, KeySet.from_config(config))

    def for_audience(self, audience: str) -> JwtVerifier:
        """The same verifier (issuer, keys, claims) accepting only tokens whose audience is
        `audience`, e.g. a listener's own URL (RFC 8707); it shares this one's key set."""
        return JwtVerifier(self.config.model_copy(update={"audiences": [audience]}), self.keys)

    async def verify(self, token: str) -> Identity:
        alg, kid = self._header(token)
        key = await self.keys.key_for(kid, alg)
        claims = self._decode(token, key)
        return self._identity(claims)

    def _header(self, token: str) -> tuple[str, str | None]:
        _check_header_text(token)
        try:
            header = jwt.get_unverified_header(token)
        except jwt_errors.PyJWTError as exc:
            raise Unauthenticated(
                "the bearer token is not a well-formed JWT (base64url header.payload.signature)"
            ) from exc
        alg, kid = header.get("alg"), header.get("kid")
        allowed = ", ".join(self.config.algorithms)
        if not isinstance(alg, str) or alg.lower() == "none":
            raise Unauthenticated(
                f"the token is unsigned (alg none); send a token signed with one of: {allowed}"
            )
        if alg not in self.config.algorithms:
            named = alg if alg in _KNOWN_ALGORITHMS else "an unsupported algorithm"
            raise Unauthenticated(
                f"the token is signed with {named}, which the auth file does "
                f"not allow (jwt.algorithms: {allowed})"
            )
        if kid is not None and not isinstance(kid, str):
            raise Unauthenticated("the token's kid header is not a string")
        return alg, kid

    def _decode(self, token: str, key: jwt.PyJWK) -> dict[str, Any]:
        cfg = self.config
        try:
            claims: dict[str, Any] = _DECODER.decode(
                token,
                key,
                algorithms=[key.algorithm_name],
                audience=cfg.audiences,
                issuer=cfg.issuer,
                leeway=cfg.leeway_s,
                options={"require": ["exp", "iss", "aud"], "verify_signature": True},
            )
        except jwt_errors.PyJWTError as exc:
            raise Unauthenticated(self._reason(exc)) from None
        return claims

    def _reason(self, exc: jwt_errors.PyJWTError) -> str:
        cfg, leeway = self.config, f"{self.config.leeway_s:g} s"
        if isinstance(exc, _StrictClaims) and exc.rule in _BROKEN_RULES:
            return _not_strict("claims", "claim", exc.rule)
        if isinstance(exc, jwt_errors.ExpiredSignatureError):
            return f"the token has expired (exp is past, beyond the {leeway} leeway): get a new one"
        if isinstance(exc, jwt_errors.ImmatureSignatureError):
            return (
                f"the token is not valid yet (nbf or iat is in the future, beyond the "
                f"{leeway} leeway): check the clocks of the issuer and this host"
            )
        if isinstance(exc, jwt_errors.InvalidIssuerError):
            return f"the token's issuer (iss) is not {cfg.issuer}, the issuer the auth file trusts"
        if isinstance(exc, jwt_errors.InvalidAudienceError):
            return (
                f"the token's audience (aud) names none of {', '.join(cfg.audiences)} "
                "(jwt.audiences): request a token for this gateway"
            )
        if isinstance(exc, jwt_errors.MissingRequiredClaimError):
            return f"the token has no {exc.claim} claim, which callgate requires"
        if isinstance(exc, jwt_errors.InvalidSubjectError):
            return "the token's sub claim is not a string"
        if isinstance(exc, jwt_errors.InvalidSignatureError):
            return "the token's signature does not verify with the key it names"
        if isinstance(exc, jwt_errors.InvalidAlgorithmError):
            return "the token's algorithm does not fit the key it names"
        if isinstance(exc, jwt_errors.DecodeError):
            return "the bearer token is not a well-formed JWT (its payload is not a JSON object)"
        return f"the token is not valid ({type(exc).__name__})"

    def _identity(self, claims: dict[str, Any]) -> Identity:
        mapping = self.config.claims
        subject = _claim(claims, mapping.subject, "subject")
        if not isinstance(subject, str) or not subject:
            raise Unauthenticated(
                f"the token's {mapping.subject} claim (jwt.claims.subject) "
                "is not a non-empty string"
            )
        tenant = ""
        if mapping.tenant:
            tenant = _claim(claims, mapping.tenant, "tenant")
            if not isinstance(tenant, str):
                raise Unauthenticated(
                    f"the token's {mapping.tenant} claim (jwt.claims.tenant) is not a string"
                )
        roles: tuple[str, ...] = ()
        if mapping.roles:
            roles = _roles(_claim(claims, mapping.roles, "roles"), mapping.roles)
        return Identity(subject, tenant, roles, claims)


def _claim(claims: dict[str, Any], path: str, field: str) -> Any:
    value: Any = claims
    for part in path.split("."):
        if not isinstance(value, dict) or part not in value:
            raise Unauthenticated(
                f"the token has no {path} claim, which the auth file's jwt.claims.{field} needs"
            )
        value = value[part]
    return value


def _roles(value: Any, path: str) -> tuple[str, ...]:
    if isinstance(value, str):  # a space-separated list, the way `scope` is written
        return tuple(value.split())
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise Unauthenticated(
        f"the token's {path} claim (jwt.claims.roles) is neither a list of "
        "strings nor a space-separated string"
    )
