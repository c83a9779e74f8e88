"""io.jwt.*: tokens made with PyJWT and keys, a certificate and a JWK set made here."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from typing import Any

import jwt
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import NameOID
from jwt.algorithms import ECAlgorithm, RSAAlgorithm

from gateway.policy.rego import add_policy, new_engine
from tests.gateway.policy.builtins.support import rego, rego_error

RSA_KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
OTHER_RSA_KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
EC_KEY = ec.generate_private_key(ec.SECP256R1())
SECRET = "a-shared-secret-long-enough-for-hs512-0123456789abcdef0123456789abcdef"
NOW = 1_700_000_000  # seconds


def pem_public(key: Any) -> str:
    return (
        key.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )


def pem_certificate(key: Any) -> str:
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "callgate test")])
    start = dt.datetime(2020, 1, 1, tzinfo=dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(1)
        .not_valid_before(start)
        .not_valid_after(start + dt.timedelta(days=3650))
        .sign(key, hashes.SHA256())
    )
    return cert.public_bytes(serialization.Encoding.PEM).decode()


def jwks(*entries: tuple[str, Any, str]) -> str:
    keys = []
    for kid, key, alg in entries:
        make: Callable[[Any], Any] = RSAAlgorithm.to_jwk if alg[0] in "RP" else ECAlgorithm.to_jwk
        jwk = json.loads(make(key.public_key()))
        keys.append({**jwk, "kid": kid, "alg": alg})
    return json.dumps({"keys": keys})


def token(
    key: Any = RSA_KEY, alg: str = "RS256", headers: dict[str, Any] | None = None, **claims: Any
) -> str:
    return jwt.encode({"sub": "alice", **claims}, key, algorithm=alg, headers=headers)


def call(expr: str, **refs: Any) -> Any:
    return rego(expr, **refs)


# -- io.jwt.decode ----------------------------------------------------------------------------


def test_decode_gives_header_payload_and_signature_hex() -> None:
    t = token(iss="opa")
    header, payload, signature = call("io.jwt.decode(data.t.jwt)", jwt=t)
    assert header == {"alg": "RS256", "typ": "JWT"}
    assert payload == {"sub": "alice", "iss": "opa"}
    assert bytes.fromhex(signature) == jwt.utils.base64url_decode(t.split(".")[2])


def test_decode_output_argument_form() -> None:
    engine = new_engine()
    add_policy(
        engine,
        "t.rego",
        "package t\n\nparts := [h, c] if {\n  io.jwt.decode(data.t.jwt, [h, c, _])\n}\n",
    )
    engine.add_data_json(json.dumps({"t": {"jwt": token()}}))
    assert engine.eval_rule("data.t.parts")[1] == {"sub": "alice"}


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("abc", "encoded JWT had no period separators"),
        ("a.b", "encoded JWT must have 3 sections, found 2"),
        ("!!.e30.", "JWT header had invalid encoding"),
        ("WzFd.e30.", "bad JWT header: decoded JSON type was not an Object"),
    ],
)
def test_decode_rejects_malformed_tokens(value: str, message: str) -> None:
    assert message in rego_error("io.jwt.decode(data.t.jwt)", jwt=value)


def test_decode_unwraps_a_nested_token() -> None:
    inner = token(SECRET, "HS256", aud="x")
    outer = jwt.encode({}, SECRET, algorithm="HS256", headers={"cty": "JWT"})
    head, _, sig = outer.split(".")
    nested = f"{head}.{jwt.utils.base64url_encode(inner.encode()).decode()}.{sig}"
    assert call("io.jwt.decode(data.t.jwt)", jwt=nested)[1] == {"sub": "alice", "aud": "x"}


# -- io.jwt.verify_* ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "key_text",
    [
        pem_certificate(RSA_KEY),
        pem_public(RSA_KEY),
        jwks(("k1", RSA_KEY, "RS256")),
        json.dumps(json.loads(jwks(("k1", RSA_KEY, "RS256")))["keys"][0]),  # a single JWK
    ],
    ids=["certificate", "public-key", "jwks", "jwk"],
)
def test_verify_rs256_with_each_kind_of_key(key_text: str) -> None:
    assert call("io.jwt.verify_rs256(data.t.jwt, data.t.key)", jwt=token(), key=key_text)
    assert (
        call("io.jwt.verify_rs256(data.t.jwt, data.t.key)", jwt=token(OTHER_RSA_KEY), key=key_text)
        is False
    )


def test_verify_rejects_a_tampered_payload_and_a_key_of_another_type() -> None:
    head, _, sig = token().split(".")
    claims = jwt.utils.base64url_encode(json.dumps({"sub": "root"}).encode()).decode()
    forged = f"{head}.{claims}.{sig}"
    assert (
        call("io.jwt.verify_rs256(data.t.jwt, data.t.key)", jwt=forged, key=pem_public(RSA_KEY))
        is False
    )
    assert (
        call("io.jwt.verify_rs256(data.t.jwt, data.t.key)", jwt=token(), key=pem_public(EC_KEY))
        is False
    )


def test_verify_es256_ps256_hs256() -> None:
    assert (
        call(
            "io.jwt.verify_es256(data.t.jwt, data.t.key)",
            jwt=token(EC_KEY, "ES256"),
            key=pem_public(EC_KEY),
        )
        is True
    )
    assert (
        call(
            "io.jwt.verify_ps256(data.t.jwt, data.t.key)",
            jwt=token(alg="PS256"),
            key=pem_certificate(RSA_KEY),
        )
        is True
    )
    assert (
        call("io.jwt.verify_hs256(data.t.jwt, data.t.key)", jwt=token(SECRET, "HS256"), key=SECRET)
        is True
    )
    assert (
        call("io.jwt.verify_hs256(data.t.jwt, data.t.key)", jwt=token(SECRET, "HS256"), key="other")
        is False
    )
    assert (
        call("io.jwt.verify_hs512(data.t.jwt, data.t.key)", jwt=token(SECRET, "HS512"), key=SECRET)
        is True
    )


def test_verify_picks_the_key_named_by_kid() -> None:
    keys = jwks(("a", OTHER_RSA_KEY, "RS256"), ("b", RSA_KEY, "RS256"))
    assert (
        call(
            "io.jwt.verify_rs256(data.t.jwt, data.t.key)", jwt=token(headers={"kid": "b"}), key=keys
        )
        is True
    )
    assert (
        call(
            "io.jwt.verify_rs256(data.t.jwt, data.t.key)", jwt=token(headers={"kid": "a"}), key=keys
        )
        is False
    )


def test_verify_with_an_unreadable_key_fails() -> None:
    assert "failed to parse a JWK key (set)" in rego_error(
        "io.jwt.verify_rs256(data.t.jwt, data.t.key)", jwt=token(), key="not a key"
    )


# -- io.jwt.decode_verify ----------------------------------------------------------------------


def decode_verify(t: str, **constraints: Any) -> list[Any]:
    return call(
        "io.jwt.decode_verify(data.t.jwt, data.t.c)",
        jwt=t,  # type: ignore[no-any-return]
        c={"time": NOW * 1_000_000_000, **constraints},
    )


def test_decode_verify_valid_token() -> None:
    valid, header, payload = decode_verify(
        token(iss="idp", exp=NOW + 60), cert=pem_certificate(RSA_KEY)
    )
    assert valid is True
    assert header == {"alg": "RS256", "typ": "JWT"}
    assert payload == {"sub": "alice", "iss": "idp", "exp": NOW + 60}


@pytest.mark.parametrize(
    ("claims", "constraints"),
    [
        ({"exp": NOW}, {}),  # expired at `time`
        ({"nbf": NOW + 1}, {}),  # not yet valid
        ({"iss": "evil"}, {"iss": "idp"}),
        ({}, {"iss": "idp"}),
        ({"aud": "api"}, {}),  # a token with an audience needs the aud constraint
        ({}, {"aud": "api"}),
        ({"aud": ["a", "b"]}, {"aud": "c"}),
        ({}, {"alg": "RS512"}),
    ],
)
def test_decode_verify_unverified(claims: dict[str, Any], constraints: dict[str, Any]) -> None:
    assert decode_verify(token(**claims), cert=pem_public(RSA_KEY), **constraints) == [
        False,
        {},
        {},
    ]


@pytest.mark.parametrize(
    ("claims", "constraints"),
    [
        ({"exp": NOW + 1, "nbf": NOW}, {}),
        ({"iss": "idp"}, {"iss": "idp"}),
        ({"aud": "api"}, {"aud": "api"}),
        ({"aud": ["a", "api"]}, {"aud": "api"}),
        ({}, {"alg": "RS256"}),
    ],
)
def test_decode_verify_verified(claims: dict[str, Any], constraints: dict[str, Any]) -> None:
    assert decode_verify(token(**claims), cert=pem_public(RSA_KEY), **constraints)[0] is True


def test_decode_verify_with_secret_and_jwks() -> None:
    assert decode_verify(token(SECRET, "HS256"), secret=SECRET)[0] is True
    assert decode_verify(token(SECRET, "HS256"), secret="wrong")[0] is False
    keys = jwks(("k", EC_KEY, "ES256"))
    assert decode_verify(token(EC_KEY, "ES256", headers={"kid": "k"}), cert=keys)[0] is True
    assert decode_verify(token(), cert=keys)[0] is False  # RS256 token, only an ES256 key


@pytest.mark.parametrize(
    ("constraints", "message"),
    [
        ({}, "no key constraint"),
        ({"cert": pem_public(RSA_KEY), "secret": "x"}, "duplicate key constraints"),
        ({"secret": "x", "nope": 1}, "unknown token validation constraint: nope"),
        ({"secret": 1}, "secret constraint: must be a string"),
        ({"secret": "x", "time": "now"}, "token time constraint: must be a number"),
    ],
)
def test_decode_verify_bad_constraints_fail(constraints: dict[str, Any], message: str) -> None:
    assert message in rego_error(
        "io.jwt.decode_verify(data.t.jwt, data.t.c)", jwt=token(), c=constraints
    )


def test_decode_verify_non_numeric_exp_fails() -> None:
    t = jwt.encode({"exp": "soon"}, SECRET, algorithm="HS256")
    assert "exp value must be a number" in rego_error(
        "io.jwt.decode_verify(data.t.jwt, data.t.c)", jwt=t, c={"secret": SECRET}
    )
