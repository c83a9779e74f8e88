"""Where OPA is and how to reach it, and the error of an OPA that cannot be asked: what a
sidecar's configuration and the shadow engine need without the OPA client (aiohttp and
opa-python-client, imported only with --engine opa or shadow)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from gateway.errors import ConfigError
from gateway.policy.decision import PolicyEvalError


@dataclass(frozen=True)
class OpaSettings:
    """Where OPA is and how to reach it (serve --opa-url, --opa-token, --opa-ca, ...)."""

    url: str
    token: str = ""
    timeout_s: float = 1.0
    ca: Path | None = None
    client_cert: Path | None = None
    client_key: Path | None = None

    def check(self) -> None:
        parts = urlsplit(self.url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConfigError(
                f"--opa-url {self.url!r}: expected http://HOST:PORT or "
                "https://HOST:PORT (with an optional path prefix)"
            )
        if parts.query or parts.fragment:
            raise ConfigError(f"--opa-url {self.url!r}: no query or fragment, please")
        try:
            parts.port  # noqa: B018  (raises ValueError on a bad port)
        except ValueError:
            raise ConfigError(
                f"--opa-url {self.url!r}: the port is not a number from 0 to 65535"
            ) from None
        if (self.client_cert is None) != (self.client_key is None):
            raise ConfigError("--opa-client-cert and --opa-client-key go together")
        if parts.scheme == "http" and (self.ca or self.client_cert):
            raise ConfigError(f"--opa-url {self.url}: TLS options need an https:// URL")
        if not 0 < self.timeout_s <= 60:
            raise ConfigError(
                f"--opa-timeout {self.timeout_s}: expected seconds above 0 and at most 60"
            )


class OpaUnavailable(PolicyEvalError):
    """OPA could not be asked: unreachable or slower than the timeout."""
