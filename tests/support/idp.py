"""A test identity provider: signing keys, their JWKS (as a file or on a loopback URL), tokens.

    idp = IdentityProvider()
    token = idp.token(sub="alice", tenant_id="acme", roles=["traveler"])
    with idp.serve() as url:          # GET url → the JWKS; idp.fetches counts the requests
        ...

Tokens are signed with PyJWT from keys made at test time (RSA and EC); `token()` takes claim
overrides, and `alg`/`kid`/`key` to sign them some other way; `signed_text()` signs a header and
claims given as JSON texts exactly as written.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt.algorithms import ECAlgorithm, RSAAlgorithm

ISSUER = "https://idp.test/"
AUDIENCE = "callgate"
PrivateKey = rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey


class IdentityProvider:
    def __init__(self, issuer: str = ISSUER) -> None:
        self.issuer = issuer
        self.keys: dict[str, PrivateKey] = {
            "rsa-1": rsa.generate_private_key(public_exponent=65537, key_size=2048),
            "ec-1": ec.generate_private_key(ec.SECP256R1()),
        }
        self.published = ["rsa-1", "ec-1"]
        self.fetches = 0
        self._lock = threading.Lock()

    def add_key(self, kid: str, *, publish: bool) -> None:
        self.keys[kid] = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        if publish:
            self.published.append(kid)

    def publish(self, kid: str) -> None:
        self.published.append(kid)

    def jwks(self) -> dict[str, Any]:
        return {"keys": [self.public_jwk(kid) for kid in self.published]}

    def public_jwk(self, kid: str) -> dict[str, Any]:
        key = self.keys[kid]
        if isinstance(key, rsa.RSAPrivateKey):
            jwk = RSAAlgorithm.to_jwk(key.public_key(), as_dict=True)
        else:
            jwk = ECAlgorithm.to_jwk(key.public_key(), as_dict=True)
        return {**jwk, "kid": kid, "use": "sig"}

    def write_jwks(self, path: Path) -> Path:
        path.write_text(json.dumps(self.jwks()))
        return path

    def claims(self, **overrides: Any) -> dict[str, Any]:
        now = int(time.time())
        base: dict[str, Any] = {
            "iss": self.issuer,
            "aud": AUDIENCE,
            "sub": "alice",
            "tenant_id": "acme",
            "roles": ["traveler"],
            "iat": now,
            "nbf": now,
            "exp": now + 600,
        }
        base.update(overrides)
        return {k: v for k, v in base.items() if v is not None}

    def token(
        self,
        *,
        kid: str | None = "rsa-1",
        alg: str | None = None,
        key: Any = None,
        headers: dict[str, Any] | None = None,
        **claims: Any,
    ) -> str:
        """A token over claims(**claims); None for a claim leaves it out."""
        signing_key = key if key is not None else self.keys[kid or "rsa-1"]
        if alg is None:
            alg = "ES256" if isinstance(signing_key, ec.EllipticCurvePrivateKey) else "RS256"
        head = {**({"kid": kid} if kid else {}), **(headers or {})}
        return jwt.encode(self.claims(**claims), signing_key, algorithm=alg, headers=head)

    def signed_text(self, payload: str, *, header: str | None = None, kid: str = "rsa-1") -> str:
        """A token signed (RS256 with kid's key) over exactly these JSON texts, for texts that
        `token()` cannot write: repeated names, NaN."""
        key = self.keys[kid]
        if not isinstance(key, rsa.RSAPrivateKey):
            raise ValueError(f"{kid} is not an RSA key")
        head = header if header is not None else json.dumps({"alg": "RS256", "kid": kid})
        signing_input = f"{_b64(head.encode())}.{_b64(payload.encode())}".encode()
        signature = RSAAlgorithm(RSAAlgorithm.SHA256).sign(signing_input, key)
        return f"{signing_input.decode()}.{_b64(signature)}"

    def claims_text(self, **overrides: Any) -> str:
        """claims(**overrides) as a JSON text, to be edited into one `token()` cannot write."""
        return json.dumps(self.claims(**overrides))

    @contextmanager
    def serve(self) -> Iterator[str]:
        """Serve the current JWKS on a loopback URL while the block runs."""
        idp = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
                with idp._lock:
                    idp.fetches += 1
                body = json.dumps(idp.jwks()).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield f"http://127.0.0.1:{server.server_address[1]}/jwks.json"
        finally:
            server.shutdown()
            server.server_close()
            thread.join()


def unsigned_token(claims: dict[str, Any]) -> str:
    """`alg: none`: a header and claims with an empty signature."""
    return jwt.encode(claims, None, algorithm="none")


def hs256_signed_with_public_key(idp: IdentityProvider, kid: str = "rsa-1", **claims: Any) -> str:
    """Algorithm confusion: HS256 with the RSA public key (as published) as the HMAC secret."""
    from cryptography.hazmat.primitives import serialization

    public = (
        idp.keys[kid]
        .public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    )
    header = _b64(json.dumps({"alg": "HS256", "typ": "JWT", "kid": kid}).encode())
    payload = _b64(json.dumps(idp.claims(**claims)).encode())
    signing_input = f"{header}.{payload}".encode()
    signature = hmac.new(public, signing_input, hashlib.sha256).digest()
    return f"{header}.{payload}.{_b64(signature)}"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()
