"""The key set's cache: refreshed when old or on an unknown kid, rate-limited, kept on failure.

A hand-driven clock stands in for time; the fetch is a function the test controls.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gateway.errors import Unauthenticated
from gateway.identity.config import JwtConfig
from gateway.identity.jwks import KeySet, KeySetError, parse_key_set
from tests.support.idp import IdentityProvider


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Source:
    """What the provider publishes now; `fail` makes the next fetches fail."""

    def __init__(self, idp: IdentityProvider) -> None:
        self.idp = idp
        self.fetches = 0
        self.fail = False

    async def __call__(self) -> bytes:
        self.fetches += 1
        if self.fail:
            raise OSError("connection refused")
        return json.dumps(self.idp.jwks()).encode()


def config(**overrides: object) -> JwtConfig:
    return JwtConfig.model_validate(
        {
            "issuer": "https://idp.test/",
            "audiences": ["callgate"],
            "jwks_url": "https://idp.test/jwks",
            **overrides,
        }
    )


@pytest.fixture
def idp() -> IdentityProvider:
    return IdentityProvider()


async def test_an_old_key_set_is_fetched_again_on_the_next_token(idp: IdentityProvider) -> None:
    clock, source = Clock(), Source(idp)
    keys = KeySet(source, "jwt.jwks_url", config(jwks_cache_s=60), clock=clock)
    await keys.start()
    await keys.key_for("rsa-1", "RS256")
    assert source.fetches == 1
    clock.now += 61
    await keys.key_for("rsa-1", "RS256")
    assert source.fetches == 2


async def test_a_failed_refresh_keeps_the_keys_held(idp: IdentityProvider) -> None:
    clock, source = Clock(), Source(idp)
    keys = KeySet(
        source, "jwt.jwks_url", config(jwks_cache_s=60, jwks_min_refresh_s=10), clock=clock
    )
    await keys.start()
    source.fail = True
    clock.now += 61
    assert (await keys.key_for("rsa-1", "RS256")).algorithm_name == "RS256"
    assert source.fetches == 2
    with pytest.raises(Unauthenticated, match="retry after 10 s"):
        await keys.key_for("rotated", "RS256")
    assert source.fetches == 2  # within the interval: no new fetch
    clock.now += 10
    source.fail = False
    idp.keys["rotated"] = idp.keys["rsa-1"]
    idp.publish("rotated")
    await keys.key_for("rotated", "RS256")
    assert source.fetches == 3


async def test_a_key_file_is_read_again_for_an_unknown_kid(
    tmp_path: Path, idp: IdentityProvider
) -> None:
    path = idp.write_jwks(tmp_path / "jwks.json")
    keys = KeySet.from_config(config(jwks_url=None, jwks_file=path, jwks_min_refresh_s=0))
    idp.add_key("rsa-2", publish=True)
    idp.write_jwks(path)
    assert (await keys.key_for("rsa-2", "RS256")).algorithm_name == "RS256"


def test_only_public_signature_keys_are_kept(idp: IdentityProvider) -> None:
    jwks = idp.jwks()
    private = dict(jwks["keys"][0], d="c2VjcmV0")
    encryption = dict(jwks["keys"][1], use="enc")
    keys = parse_key_set(json.dumps({"keys": [private, encryption, jwks["keys"][1], 7]}).encode())
    assert list(keys.by_kid) == ["ec-1"]


@pytest.mark.parametrize(
    "text, problem",
    [
        ('{"keys": [], "keys": [{"kty": "RSA"}]}', "duplicate object key 'keys'"),
        ('{"keys": [{"kid": "a", "kid": "b", "kty": "EC"}]}', "duplicate object key 'kid'"),
        ('{"keys": [{"kty": "RSA", "n": NaN}]}', "NaN is not a JSON number"),
    ],
)
def test_a_key_set_is_read_as_strict_json(text: str, problem: str) -> None:
    with pytest.raises(KeySetError) as err:
        parse_key_set(text.encode())
    assert str(err.value).startswith("not JSON: ") and problem in str(err.value)
