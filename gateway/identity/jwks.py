"""The identity provider's signing keys (a JWKS), from a file or a URL, cached.

The set is read at start-up and again when it is older than `jwks_cache_s`, or when a token
names a key the set does not hold (the provider rotated its keys) — at most once per
`jwks_min_refresh_s`, and one fetch at a time however many callers wait for it. Fetching a URL
uses an async HTTP client and a file is read in a thread, so neither stalls the event loop. A
failed refresh keeps the keys already held.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jwt import PyJWK
from jwt.exceptions import PyJWTError

from gateway.errors import ConfigError, Unauthenticated
from gateway.identity.config import ALGORITHM_FAMILIES, JwtConfig
from gateway.jsontext import JsonTextError, read_json

if TYPE_CHECKING:
    import httpx

log = logging.getLogger("callgate.identity")

MAX_JWKS_BYTES = 1 << 20


class KeySetError(ValueError):
    """The key set document is unusable; the message says why (never key material)."""


@dataclass
class _Keys:
    """One loaded key set: signature keys by kid, and those without a kid."""

    by_kid: dict[str, dict[str, Any]] = field(default_factory=dict)
    unnamed: list[dict[str, Any]] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.by_kid) + len(self.unnamed)


def parse_key_set(data: bytes) -> _Keys:
    """The signature keys of a JWKS document; keys PyJWT cannot use are left out, logged."""
    try:
        doc = read_json(data)  # strict: a kid or key given twice would be either value
    except JsonTextError as exc:
        raise KeySetError(f"not JSON: {exc.message}") from exc
    if not isinstance(doc, dict) or not isinstance(doc.get("keys"), list):
        raise KeySetError('not a JWKS: expected an object {"keys": [...]}')
    keys = _Keys()
    for index, jwk in enumerate(doc["keys"]):
        problem = _unusable(jwk)
        if problem:
            log.warning("key set: key %d left out: %s", index, problem)
        elif isinstance(jwk.get("kid"), str):
            keys.by_kid[jwk["kid"]] = jwk
        else:
            keys.unnamed.append(jwk)
    if not keys:
        raise KeySetError("holds no usable signature key (RSA, EC or OKP)")
    return keys


def _unusable(jwk: Any) -> str:
    if not isinstance(jwk, dict):
        return "not an object"
    if jwk.get("kty") not in set(ALGORITHM_FAMILIES.values()):
        return "not a public key (kty must be RSA, EC or OKP)"
    if jwk.get("use", "sig") != "sig":
        return "not a signature key (use is not sig)"
    if any(name in jwk for name in ("d", "p", "q", "k")):
        return "it holds private key material; publish public keys only"
    try:
        PyJWK(jwk)
    except PyJWTError:
        return "PyJWT cannot read it"
    return ""


Fetch = Callable[[], Awaitable[bytes]]


class KeySet:
    """Signing keys for JWT verification: `await key_for(kid, alg)`."""

    def __init__(
        self,
        fetch: Fetch,
        source: str,
        config: JwtConfig,
        keys: _Keys | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
        client: httpx.AsyncClient | None = None,
    ) -> None:
        self._fetch = fetch
        self.source = source
        self._config = config
        self._keys = keys or _Keys()
        self._clock = clock
        self._client = client
        self._loaded_at = clock() if keys else float("-inf")
        self._tried_at = self._loaded_at
        self._inflight: asyncio.Future[None] | None = None
        self._built: dict[tuple[int, str], PyJWK] = {}

    @classmethod
    def from_config(cls, config: JwtConfig) -> KeySet:
        if config.jwks_file is not None:
            return cls._from_file(config.jwks_file, config)
        assert config.jwks_url is not None
        import httpx  # only for keys fetched from a URL

        client = httpx.AsyncClient(timeout=config.jwks_timeout_s, follow_redirects=False)
        return cls(_url_fetcher(client, config.jwks_url), "jwt.jwks_url", config, client=client)

    @classmethod
    def _from_file(cls, path: Path, config: JwtConfig) -> KeySet:
        try:
            keys = parse_key_set(path.read_bytes())
        except (OSError, KeySetError) as exc:
            raise ConfigError(f"jwt.jwks_file {path}: {exc}") from exc
        return cls(lambda: asyncio.to_thread(path.read_bytes), "jwt.jwks_file", config, keys)

    async def start(self) -> None:
        """Load a URL's key set before serving (a failure is logged; callers are refused
        with a reason until a later fetch succeeds)."""
        if not self._keys:
            await self._refresh()

    async def aclose(self) -> None:
        if self._inflight is not None:
            await asyncio.gather(self._inflight, return_exceptions=True)
        if self._client is not None:
            await self._client.aclose()

    async def key_for(self, kid: str | None, alg: str) -> PyJWK:
        if self._clock() - self._loaded_at > self._config.jwks_cache_s and self._may_refresh():
            await self._refresh()
        jwk = self._find(kid, alg)
        if jwk is None and self._may_refresh():
            await self._refresh()
            jwk = self._find(kid, alg)
        if jwk is None:
            raise Unauthenticated(self._missing(kid))
        return self._build(jwk, alg)

    def _find(self, kid: str | None, alg: str) -> dict[str, Any] | None:
        if kid is not None:
            return self._keys.by_kid.get(kid)
        family = ALGORITHM_FAMILIES[alg]
        fitting = [
            k for k in [*self._keys.by_kid.values(), *self._keys.unnamed] if k.get("kty") == family
        ]
        return fitting[0] if len(fitting) == 1 else None

    def _missing(self, kid: str | None) -> str:
        if not self._keys:
            return (
                f"callgate holds no signing keys yet: fetching {self.source} failed (see "
                "the sidecar's log); tokens are verified once it succeeds"
            )
        if kid is None:
            return (
                "the token names no signing key (kid header) and the key set does not have "
                "exactly one key for its algorithm: issue tokens with a kid"
            )
        wait = self._config.jwks_min_refresh_s
        return (
            f"the token's signing key (kid) is not in the key set from {self.source}; if the "
            f"identity provider has just rotated its keys, retry after {wait:g} s"
        )

    def _build(self, jwk: dict[str, Any], alg: str) -> PyJWK:
        family = ALGORITHM_FAMILIES[alg]
        if jwk.get("kty") != family:
            raise Unauthenticated(
                f"the token's algorithm {alg} does not fit the key it names "
                f"(a {jwk.get('kty')} key)"
            )
        if jwk.get("alg", alg) != alg:
            raise Unauthenticated(
                f"the key the token names is for {jwk.get('alg')} only, not {alg}"
            )
        cache_key = (id(jwk), alg)
        if cache_key not in self._built:
            self._built[cache_key] = PyJWK(jwk, algorithm=alg)
        return self._built[cache_key]

    def _may_refresh(self) -> bool:
        """A refresh in flight is joined; a new one waits out the minimum interval."""
        return (
            self._inflight is not None
            or self._clock() - self._tried_at >= self._config.jwks_min_refresh_s
        )

    async def _refresh(self) -> None:
        if self._inflight is None:
            self._inflight = asyncio.ensure_future(self._fetch_keys())
            self._inflight.add_done_callback(self._done)
        # shielded: a caller that gives up does not cancel the fetch the others wait for
        await asyncio.shield(self._inflight)

    def _done(self, _: asyncio.Future[None]) -> None:
        self._inflight = None

    async def _fetch_keys(self) -> None:
        self._tried_at = self._clock()
        try:
            keys = parse_key_set(await self._fetch())
        except Exception as exc:  # any failure keeps the keys held: tokens fail closed, never open
            log.warning(
                "cannot refresh the signing keys from %s: %s; keeping %d key(s)",
                self.source,
                _describe(exc),
                len(self._keys),
            )
            return
        self._keys, self._built = keys, {}
        self._loaded_at = self._tried_at
        log.info("signing keys loaded from %s: %d key(s)", self.source, len(keys))


def _url_fetcher(client: httpx.AsyncClient, url: str) -> Fetch:
    async def fetch() -> bytes:
        async with client.stream("GET", url, headers={"Accept": "application/json"}) as reply:
            if reply.status_code != 200:
                raise KeySetError(f"HTTP {reply.status_code}")
            body = bytearray()
            async for chunk in reply.aiter_bytes():
                body += chunk
                if len(body) > MAX_JWKS_BYTES:
                    raise KeySetError(f"larger than {MAX_JWKS_BYTES} bytes")
            return bytes(body)

    return fetch


def _describe(exc: Exception) -> str:
    if isinstance(exc, KeySetError | OSError):
        return str(exc)
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
