"""Bearer JWTs: what is accepted, every way a token is refused, and where the keys come from.

Keys are made at test time; the key set is a real file or a real loopback HTTP server.
"""

from __future__ import annotations

import asyncio
import base64
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from gateway.errors import Unauthenticated
from gateway.identity import Authenticator, Credentials
from gateway.model import Identity
from tests.support.idp import (
    AUDIENCE,
    IdentityProvider,
    hs256_signed_with_public_key,
    unsigned_token,
)

Auth = Callable[..., Awaitable[Authenticator]]


@pytest.fixture(scope="module")
def idp() -> IdentityProvider:
    return IdentityProvider()


def jwt_section(idp: IdentityProvider, **overrides: Any) -> dict[str, Any]:
    return {
        "issuer": idp.issuer,
        "audiences": [AUDIENCE],
        "algorithms": ["RS256", "ES256"],
        "leeway_s": 30,
        "claims": {"subject": "sub", "tenant": "tenant_id", "roles": "roles"},
        **overrides,
    }


@pytest.fixture
async def make_auth(tmp_path: Path, idp: IdentityProvider) -> AsyncIterator[Auth]:
    """make_auth(**jwt overrides) → a started Authenticator over a JWKS file (or a URL)."""
    made: list[Authenticator] = []

    async def make(tokens: dict[str, Any] | None = None, **overrides: Any) -> Authenticator:
        section = jwt_section(idp, **overrides)
        if "jwks_url" not in section:
            section["jwks_file"] = str(idp.write_jwks(tmp_path / "jwks.json"))
        doc: dict[str, Any] = {"jwt": section, **({"tokens": tokens} if tokens else {})}
        path = tmp_path / "auth.yaml"
        path.write_text(yaml.safe_dump(doc))
        auth = Authenticator.from_file(path)
        await auth.start()
        made.append(auth)
        return auth

    yield make
    for auth in made:
        await auth.aclose()


async def identify(auth: Authenticator, token: str) -> Identity:
    return await auth.authenticate(Credentials(authorization=f"Bearer {token}"))


async def refused(auth: Authenticator, token: str) -> str:
    with pytest.raises(Unauthenticated) as err:
        await identify(auth, token)
    message = err.value.message
    for secret in (token, token.split(".")[-1], "alice", "acme"):  # no value of the token
        assert not secret or secret not in message, message
    return message


async def test_a_verified_token_maps_claims_to_the_identity(
    make_auth: Auth, idp: IdentityProvider
) -> None:
    auth = await make_auth()
    who = await identify(auth, idp.token(email="alice@example.test"))
    assert (who.subject, who.tenant, who.roles) == ("alice", "acme", ("traveler",))
    assert who.claims["email"] == "alice@example.test" and who.claims["iss"] == idp.issuer
    ec_who = await identify(auth, idp.token(kid="ec-1", sub="bob", roles="reader writer"))
    assert (ec_who.subject, ec_who.roles) == ("bob", ("reader", "writer"))


async def test_dotted_claims_reach_into_objects(make_auth: Auth, idp: IdentityProvider) -> None:
    auth = await make_auth(claims={"subject": "sub", "roles": "realm_access.roles"})
    who = await identify(auth, idp.token(realm_access={"roles": ["operator"]}))
    assert who.roles == ("operator",) and who.tenant == ""


async def test_static_tokens_and_jwts_together(make_auth: Auth, idp: IdentityProvider) -> None:
    auth = await make_auth(tokens={"static-1": {"subject": "svc", "tenant": "acme"}})
    assert (await identify(auth, "static-1")).subject == "svc"
    assert (await identify(auth, idp.token())).subject == "alice"
    assert "neither a token this gateway knows nor a JWT" in await refused(auth, "static-2")


def exp_past() -> dict[str, Any]:
    return {"exp": int(time.time()) - 120}


@pytest.mark.parametrize(
    "name,make_token,reason",
    [
        ("expired", lambda i: i.token(**exp_past()), "has expired"),
        ("not yet valid", lambda i: i.token(nbf=int(time.time()) + 600), "not valid yet"),
        ("wrong issuer", lambda i: i.token(iss="https://evil.test/"), "issuer (iss) is not"),
        ("wrong audience", lambda i: i.token(aud="someone-else"), "audience (aud) names none"),
        ("no expiry", lambda i: i.token(exp=None), "no exp claim"),
        ("alg none", lambda i: unsigned_token(i.claims()), "unsigned (alg none)"),
        ("bad signature", lambda i: i.token()[:-8] + ("A" * 8), "signature does not verify"),
        (
            "signed by another key",
            lambda i: i.token(kid="rsa-1", key=IdentityProvider().keys["rsa-1"]),
            "signature does not verify",
        ),
        (
            "unknown key",
            lambda i: i.token(kid="rsa-unknown", key=i.keys["rsa-1"]),
            "signing key (kid) is not in the key set",
        ),
        (
            "HS256 with the RSA public key",
            hs256_signed_with_public_key,
            "signed with HS256, which the auth file does not allow",
        ),
        (
            "ES256 header on an RSA key",
            lambda i: i.token(kid="rsa-1", alg="ES256", key=i.keys["ec-1"]),
            "does not fit the key it names",
        ),
        (
            "algorithm outside the allow-list",
            lambda i: i.token(alg="RS512"),
            "signed with RS512, which the auth file does not allow",
        ),
        (
            "missing mapped claim",
            lambda i: i.token(tenant_id=None),
            "no tenant_id claim, which the auth file's jwt.claims.tenant needs",
        ),
        ("no subject", lambda i: i.token(sub=None), "no sub claim"),
        ("subject not a string", lambda i: i.token(sub=12345), "sub claim is not a string"),
        ("roles of the wrong type", lambda i: i.token(roles={"a": 1}), "neither a list of strings"),
        ("not a JWT", lambda i: "a.b.c", "not a well-formed JWT"),
        (
            "a header nested 3000 deep",
            lambda i: _segment(b'{"a":' + b"[" * 3000 + b"]" * 3000 + b"}") + ".e30.c2ln",
            "not a well-formed JWT",
        ),
        (
            "a header that is a list",
            lambda i: _segment(b"[1]") + ".e30.c2ln",
            "not a well-formed JWT",
        ),
        (
            "a kid that is a number",
            lambda i: _segment(b'{"alg": "RS256", "kid": 7}') + ".e30.c2ln",
            "not a well-formed JWT",
        ),
    ],
)
async def test_bad_tokens_are_refused_with_a_reason(
    make_auth: Auth,
    idp: IdentityProvider,
    name: str,
    make_token: Callable[[IdentityProvider], str],
    reason: str,
) -> None:
    auth = await make_auth()
    assert reason in await refused(auth, make_token(idp)), name


def _repeated(claims: str, name: str, value: str) -> str:
    return claims[:-1] + f', "{name}": {value}}}'


@pytest.mark.parametrize(
    "name,make_token,reason",
    [
        (
            "a repeated subject",
            lambda i: i.signed_text(_repeated(i.claims_text(), "sub", '"root"')),
            "the token's claims are not strict JSON: a claim name appears twice",
        ),
        (
            "a repeated roles claim",
            lambda i: i.signed_text(_repeated(i.claims_text(), "roles", '["admin"]')),
            "a claim name appears twice",
        ),
        (
            "a repeated name inside a claim",
            lambda i: i.signed_text(i.claims_text(realm_access={"r": 1})[:-2] + ', "r": 2}}'),
            "a claim name appears twice",
        ),
        (
            "NaN",
            lambda i: i.signed_text(_repeated(i.claims_text(), "score", "NaN")),
            "the token's claims are not strict JSON: a number is NaN, Infinity or beyond",
        ),
        (
            "Infinity",
            lambda i: i.signed_text(_repeated(i.claims_text(), "score", "-Infinity")),
            "a number is NaN, Infinity or beyond",
        ),
        (
            "a number beyond a double",
            lambda i: i.signed_text(_repeated(i.claims_text(), "n", "1e400")),
            "a number is NaN, Infinity or beyond the range of a double",
        ),
        (
            "an integer beyond 2^53",
            lambda i: i.signed_text(_repeated(i.claims_text(), "n", str(2**63))),
            "an integer is beyond ±(2^53 − 1)",
        ),
        (
            "a lone surrogate",
            lambda i: i.signed_text(_repeated(i.claims_text(), "s", '"\\ud800"')),
            "a lone UTF-16 surrogate",
        ),
        (
            "claims nested 100 deep",
            lambda i: i.signed_text(_repeated(i.claims_text(), "deep", "[" * 100 + "]" * 100)),
            "the claims nest too deeply",
        ),
        (
            "a repeated alg in the header",
            lambda i: i.signed_text(
                i.claims_text(), header='{"alg": "none", "kid": "rsa-1", "alg": "RS256"}'
            ),
            "the token's header is not strict JSON: a header name appears twice",
        ),
        (
            "NaN in the header",
            lambda i: i.signed_text(
                i.claims_text(), header='{"alg": "RS256", "kid": "rsa-1", "x": NaN}'
            ),
            "the token's header is not strict JSON",
        ),
    ],
)
async def test_claims_that_are_not_strict_json_are_refused(
    make_auth: Auth,
    idp: IdentityProvider,
    name: str,
    make_token: Callable[[IdentityProvider], str],
    reason: str,
) -> None:
    """A verified token is still outside text: a reader could take either of two values for a
    repeated name, so such claims never reach the policy."""
    auth = await make_auth()
    assert reason in await refused(auth, make_token(idp)), name


async def test_strict_claims_text_as_written_is_accepted(
    make_auth: Auth, idp: IdentityProvider
) -> None:
    auth = await make_auth()
    who = await identify(auth, idp.signed_text(_repeated(idp.claims_text(), "n", "2.5")))
    assert who.subject == "alice" and who.claims["n"] == 2.5


def _segment(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


async def test_the_leeway_forgives_small_clock_differences(
    make_auth: Auth, idp: IdentityProvider
) -> None:
    auth = await make_auth(leeway_s=120)
    assert (await identify(auth, idp.token(exp=int(time.time()) - 60))).subject == "alice"
    strict = await make_auth(leeway_s=0)
    assert "0 s leeway" in await refused(strict, idp.token(exp=int(time.time()) - 60))


async def test_a_token_without_kid_needs_a_single_fitting_key(tmp_path: Path) -> None:
    idp = IdentityProvider()
    idp.add_key("rsa-2", publish=True)
    path = tmp_path / "own.yaml"
    path.write_text(
        yaml.safe_dump(
            {"jwt": {**jwt_section(idp), "jwks_file": str(idp.write_jwks(tmp_path / "own.json"))}}
        )
    )
    own = Authenticator.from_file(path)
    # one EC key in the set: a kid-less ES256 token finds it; two RSA keys: RS256 cannot
    assert (await identify(own, idp.token(kid=None, key=idp.keys["ec-1"]))).subject == "alice"
    assert "names no signing key" in await refused(own, idp.token(kid=None, key=idp.keys["rsa-1"]))


async def test_a_rotated_key_is_fetched_once_on_an_unknown_kid(
    make_auth: Auth, idp: IdentityProvider
) -> None:
    rotating = IdentityProvider()
    with rotating.serve() as url:
        auth = await make_auth(jwks_url=url, jwks_min_refresh_s=0)
        assert rotating.fetches == 1  # at start
        rotating.add_key("rsa-2", publish=True)
        who = await identify(auth, rotating.token(kid="rsa-2", iss=idp.issuer))
        assert who.subject == "alice" and rotating.fetches == 2
        await identify(auth, rotating.token(kid="rsa-2", iss=idp.issuer))
        assert rotating.fetches == 2  # known now: no fetch


async def test_unknown_kids_refresh_at_most_once_per_interval(
    make_auth: Auth, idp: IdentityProvider
) -> None:
    rotating = IdentityProvider()
    with rotating.serve() as url:
        auth = await make_auth(jwks_url=url, jwks_min_refresh_s=3600)
        rotating.add_key("rsa-3", publish=False)
        forged = rotating.token(kid="rsa-3", iss=idp.issuer)
        # a burst of unknown kids (an attacker, or a rotation not yet published)
        results = await asyncio.gather(
            *(identify(auth, forged) for _ in range(20)), return_exceptions=True
        )
        assert all(isinstance(r, Unauthenticated) for r in results)
        assert "retry after 3600 s" in str(results[0])
        assert rotating.fetches == 1  # the start-up fetch only: refreshes are rate-limited


async def test_concurrent_unknown_kids_share_one_refresh(
    make_auth: Auth, idp: IdentityProvider
) -> None:
    rotating = IdentityProvider()
    with rotating.serve() as url:
        auth = await make_auth(jwks_url=url, jwks_min_refresh_s=0)
        rotating.add_key("rsa-4", publish=True)
        token = rotating.token(kid="rsa-4", iss=idp.issuer)
        who = await asyncio.gather(*(identify(auth, token) for _ in range(10)))
        assert {w.subject for w in who} == {"alice"}
        assert rotating.fetches == 2


async def test_an_unreachable_key_url_refuses_with_a_reason(
    make_auth: Auth, idp: IdentityProvider
) -> None:
    with idp.serve() as url:
        pass  # the server is gone: nothing listens on url any more
    auth = await make_auth(jwks_url=url, jwks_timeout_s=2)
    assert "holds no signing keys yet" in await refused(auth, idp.token())
