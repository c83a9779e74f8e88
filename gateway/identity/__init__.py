"""Caller authentication: who is calling, from verified credentials only.

    Credentials        what a request presents (authorization metadata, TLS client cert)
    Authenticator      Credentials -> Identity, or Unauthenticated with the reason
      ├── tokens           static bearer tokens from the auth file (by digest)
      ├── jwt_bearer       bearer JWTs verified against the provider's keys (jwks)
      └── certificates     client certificates the TLS listener verified (mutual TLS)
    config             the `--auth FILE` YAML: tokens, jwt, mtls

Identity never comes from a request field, and no token, signature or claim value is logged.
"""

from gateway.identity.authenticator import Authenticator, Credentials

__all__ = ["Authenticator", "Credentials"]
