"""`io.jwt.*`: decode, verify and decode_verify JSON Web Tokens as OPA does.

Keys come as a PEM certificate, a PEM public key, a JWK or a JWK set (JSON); signatures are
checked with `cryptography` through PyJWT's algorithm classes and JWK parsing. A token or key
that cannot be read is an error (the call fails); a signature or claim that does not check out
is `false` (verify_*) or `[false, {}, {}]` (decode_verify), as in OPA.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives.serialization import load_pem_public_key
from jwt import PyJWK
from jwt.algorithms import (
    ECAlgorithm,
    HMACAlgorithm,
    OKPAlgorithm,
    RSAAlgorithm,
    RSAPSSAlgorithm,
)
from jwt.exceptions import PyJWKError

from gateway.policy.builtins.base import (
    BuiltinError,
    Extension,
    object_operand,
    string_operand,
)

_SHA = {"256": RSAAlgorithm.SHA256, "384": RSAAlgorithm.SHA384, "512": RSAAlgorithm.SHA512}
_HMAC_SHA = {"256": HMACAlgorithm.SHA256, "384": HMACAlgorithm.SHA384, "512": HMACAlgorithm.SHA512}
ALGORITHMS: dict[str, Any] = {
    **{f"RS{n}": RSAAlgorithm(h) for n, h in _SHA.items()},
    **{f"PS{n}": RSAPSSAlgorithm(h) for n, h in _SHA.items()},
    **{f"ES{n}": ECAlgorithm(h) for n, h in _SHA.items()},
    **{f"HS{n}": HMACAlgorithm(h) for n, h in _HMAC_SHA.items()},
    "EdDSA": OKPAlgorithm(),
}
UNVERIFIED: list[Any] = [False, {}, {}]


@dataclass(frozen=True)
class Token:
    header: str  # the three base64url sections as given
    payload: str
    signature: str

    @property
    def signed(self) -> bytes:
        return f"{self.header}.{self.payload}".encode()


@dataclass(frozen=True)
class Key:
    key: Any  # a cryptography public key, or bytes for a symmetric JWK
    alg: str = ""
    kid: str = ""


# ---------------------------------------------------------------------------------------------
# reading tokens


def b64url_decode(text: str) -> bytes:
    """OPA's base64url decoding: padding optional, anything outside the alphabet an error."""
    if not text.endswith("="):
        remainder = len(text) % 4
        if remainder == 1:
            raise BuiltinError(f"illegal base64url string: {text}")
        text += "=" * ((4 - remainder) % 4)
    try:
        return base64.b64decode(text, altchars=b"-_", validate=True)
    except (binascii.Error, ValueError) as exc:
        raise BuiltinError(f"illegal base64url string: {exc}") from None


def split_token(value: Any) -> Token:
    text = string_operand(value, 1)
    if "." not in text:
        raise BuiltinError("encoded JWT had no period separators")
    parts = text.split(".")
    if len(parts) != 3:
        raise BuiltinError(f"encoded JWT must have 3 sections, found {len(parts)}")
    return Token(*parts)


def json_object(data: bytes, what: str) -> dict[str, Any]:
    try:
        value = json.loads(data.decode("utf-8", errors="replace"), parse_constant=_no_constant)
    except ValueError as exc:
        raise BuiltinError(f"{what}invalid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise BuiltinError(f"{what}decoded JSON type was not an Object")
    return value


def _no_constant(token: str) -> Any:
    raise ValueError(f"{token} is not JSON")


def decode_header(token: Token) -> dict[str, Any]:
    try:
        raw = b64url_decode(token.header)
    except BuiltinError as exc:
        raise BuiltinError(f"JWT header had invalid encoding: {exc}") from None
    header = json_object(raw, "bad JWT header: ")
    if "enc" in header:
        raise BuiltinError("JWT is a JWE object, which is not supported")
    return header


def decode_payload(token: Token) -> bytes:
    try:
        return b64url_decode(token.payload)
    except BuiltinError as exc:
        raise BuiltinError(f"JWT payload had invalid encoding: {exc}") from None


def decode_signature(token: Token) -> bytes:
    return b64url_decode(token.signature)


def jwt_decode(value: Any) -> list[Any]:
    """`io.jwt.decode(jwt)` → [header, payload, signature as hex]; nested (cty JWT) unwrapped."""
    token = split_token(value)
    header = decode_header(token)
    payload = decode_payload(token)
    if header.get("cty") == "JWT":
        return jwt_decode(payload.decode("utf-8", errors="replace").strip("\"'"))
    claims = json_object(payload, "")
    try:
        signature = b64url_decode(token.signature)
    except BuiltinError as exc:
        raise BuiltinError(f"JWT signature had invalid encoding: {exc}") from None
    return [header, claims, signature.hex()]


@dataclass(frozen=True)
class Header:
    alg: str = ""
    kid: str = ""
    cty: str = ""
    valid: bool = False


def parse_header(header: dict[str, Any]) -> Header:
    """The JOSE fields OPA checks: strings where required; `crit` names known fields only."""
    fields: dict[str, str] = {}
    for name in ("alg", "kid", "typ", "cty"):
        if name in header:
            if not isinstance(header[name], str):
                raise BuiltinError(f"{name}: must be a string")
            fields[name] = header[name]
    crit = header.get("crit")
    critical: set[str] = set()
    if crit is not None:
        if not isinstance(crit, list) or not all(isinstance(c, str) for c in crit):
            raise BuiltinError("crit: must be a list of strings")
        if not crit:
            raise BuiltinError("crit: must be a nonempty list")
        critical = set(crit)
    unknown = set(header) - {"alg", "kid", "typ", "cty", "crit"}
    valid = bool(fields.get("alg")) and not (unknown & critical)
    return Header(
        alg=fields.get("alg", ""), kid=fields.get("kid", ""), cty=fields.get("cty", ""), valid=valid
    )


# ---------------------------------------------------------------------------------------------
# keys


def keys_from_text(text: str) -> list[Key]:
    """Keys from a PEM certificate or public key, or from a JWK or JWK set."""
    if "-----BEGIN " in text:
        return [Key(_pem_key(text))]
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise BuiltinError(f"failed to parse a JWK key (set): {exc}") from None
    entries = doc.get("keys") if isinstance(doc, dict) and "keys" in doc else [doc]
    if not isinstance(entries, list):
        raise BuiltinError("failed to parse a JWK key (set): keys is not an array")
    return [key for key in (_jwk(entry) for entry in entries) if key is not None]


def _pem_key(text: str) -> Any:
    start = text.index("-----BEGIN ")
    kind = text[start + len("-----BEGIN ") :].split("-----", 1)[0]
    end_marker = f"-----END {kind}-----"
    end = text.find(end_marker, start)
    if end < 0:
        raise BuiltinError("failed to parse a PEM block")
    if text[end + len(end_marker) :].strip():
        raise BuiltinError("extra data after a PEM certificate block")
    block = text[start : end + len(end_marker)].encode()
    try:
        if kind == "CERTIFICATE":
            return x509.load_pem_x509_certificate(block).public_key()
        if kind == "PUBLIC KEY":
            return load_pem_public_key(block)
    except ValueError as exc:
        what = "certificate" if kind == "CERTIFICATE" else "public key"
        raise BuiltinError(f"failed to parse a PEM {what}: {exc}") from None
    raise BuiltinError("failed to extract a Key from the PEM certificate")


def _jwk(entry: Any) -> Key | None:
    if not isinstance(entry, dict):
        raise BuiltinError("failed to parse a JWK key (set): a key is not an object")
    alg = entry.get("alg", "")
    if alg and alg not in ALGORITHMS:
        return None  # keys for algorithms OPA does not know are skipped
    try:
        jwk = PyJWK(entry)
    except (PyJWKError, ValueError, TypeError, KeyError) as exc:
        raise BuiltinError(f"failed to parse a JWK key (set): {exc}") from None
    kid = entry.get("kid", "")
    return Key(
        jwk.key, alg=alg if isinstance(alg, str) else "", kid=kid if isinstance(kid, str) else ""
    )


def verify_with(alg: str, key: Any, message: bytes, signature: bytes) -> bool:
    """True when signature is alg's signature of message under key; a wrong key type is False."""
    algorithm = ALGORITHMS.get(alg)
    if algorithm is None:
        return False
    try:
        return bool(algorithm.verify(message, key, signature))
    except Exception:  # noqa: BLE001  (a key of the wrong type does not verify)
        return False


def verify_with_keys(
    alg: str, header: Header, keys: list[Key], token: Token, signature: bytes
) -> bool:
    """OPA's key choice: the key whose kid matches, else any key whose alg fits."""
    if header.kid:
        for key in keys:
            if key.kid == header.kid:
                return verify_with(alg, key.key, token.signed, signature)
    return any(
        verify_with(alg, key.key, token.signed, signature)
        for key in keys
        if not key.alg or key.alg == header.alg
    )


# ---------------------------------------------------------------------------------------------
# io.jwt.verify_*


def _verify_asymmetric(alg: str) -> Callable[[Any, Any], bool]:
    def verify(jwt: Any, certificate: Any) -> bool:
        token = split_token(jwt)
        keys = keys_from_text(string_operand(certificate, 2))
        signature = decode_signature(token)
        header = parse_header(decode_header(token))
        return verify_with_keys(alg, header, keys, token, signature)

    return verify


def _verify_hmac(alg: str) -> Callable[[Any, Any], bool]:
    def verify(jwt: Any, secret: Any) -> bool:
        string_operand(jwt, 1)
        key = string_operand(secret, 2).encode()
        token = split_token(jwt)
        expected = ALGORITHMS[alg].sign(token.signed, key)
        return hmac.compare_digest(decode_signature(token), expected)

    return verify


# ---------------------------------------------------------------------------------------------
# io.jwt.decode_verify


@dataclass
class Constraints:
    keys: list[Key] | None = None
    secret: str = ""
    alg: str = ""
    iss: str = ""
    aud: str = ""
    time_ns: float = -1.0


def parse_constraints(value: Any) -> Constraints:
    c = Constraints()
    for name, item in object_operand(value, 2).items():
        if name == "cert":
            if not isinstance(item, str):
                raise BuiltinError("cert constraint: must be a string")
            c.keys = keys_from_text(item)
        elif name in ("secret", "alg", "iss", "aud"):
            if not isinstance(item, str):
                raise BuiltinError(f"{name} constraint: must be a string")
            setattr(c, name, item)
        elif name == "time":
            c.time_ns = _time_constraint(item)
        else:
            raise BuiltinError(f"unknown token validation constraint: {name}")
    if c.time_ns < 0:
        c.time_ns = float(time.time_ns())
    if (c.keys is not None) + bool(c.secret) > 1:
        raise BuiltinError("duplicate key constraints")
    if c.keys is None and not c.secret:
        raise BuiltinError("no key constraint")
    return c


def _time_constraint(item: Any) -> float:
    if isinstance(item, bool) or not isinstance(item, int | float):
        raise BuiltinError("token time constraint: must be a number")
    if item < 0:
        raise BuiltinError("token time constraint: must not be negative")
    return float(item)


def _signature_ok(c: Constraints, header: Header, token: Token, signature: bytes) -> bool:
    if c.keys is not None:
        return verify_with_keys(header.alg, header, c.keys, token, signature)
    return verify_with(header.alg, c.secret.encode(), token.signed, signature)


def jwt_decode_verify(jwt: Any, constraints: Any) -> list[Any]:
    """`io.jwt.decode_verify(jwt, constraints)` → [valid, header, payload]."""
    c = parse_constraints(constraints)
    current: Any = jwt
    while True:
        token = split_token(current)
        decoded = decode_header(token)
        header = parse_header(decoded)
        if not header.valid or (c.alg and c.alg != header.alg):
            return UNVERIFIED
        if not _signature_ok(c, header, token, decode_signature(token)):
            return UNVERIFIED
        payload = decode_payload(token)
        if header.cty.lower() != "jwt":
            break
        current = payload.decode("utf-8", errors="replace")
    claims = json_object(payload, "")
    return [True, decoded, claims] if _claims_ok(c, claims) else UNVERIFIED


def _claims_ok(c: Constraints, claims: dict[str, Any]) -> bool:
    if c.iss and claims.get("iss") != c.iss:
        return False
    if "aud" in claims:
        aud = claims["aud"]
        if not (
            aud == c.aud
            if isinstance(aud, str)
            else isinstance(aud, list) and c.aud in [a for a in aud if isinstance(a, str)]
        ):
            return False
    elif c.aud:
        return False
    now_s = c.time_ns / 1_000_000_000
    return _before(claims, "exp", now_s) and _not_before(claims, "nbf", now_s)


def _number_claim(claims: dict[str, Any], name: str) -> float | None:
    if name not in claims:
        return None
    value = claims[name]
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise BuiltinError(f"{name} value must be a number")
    return float(value)


def _before(claims: dict[str, Any], name: str, now_s: float) -> bool:
    exp = _number_claim(claims, name)
    return exp is None or now_s < exp


def _not_before(claims: dict[str, Any], name: str, now_s: float) -> bool:
    nbf = _number_claim(claims, name)
    return nbf is None or now_s >= nbf


EXTENSIONS = (
    Extension("io.jwt.decode", 1, jwt_decode),
    Extension("io.jwt.decode_verify", 2, jwt_decode_verify),
    *(
        Extension(f"io.jwt.verify_{alg.lower()}", 2, _verify_asymmetric(alg))
        for alg in ALGORITHMS
        if not alg.startswith("HS")
    ),
    *(
        Extension(f"io.jwt.verify_{alg.lower()}", 2, _verify_hmac(alg))
        for alg in ALGORITHMS
        if alg.startswith("HS")
    ),
)
